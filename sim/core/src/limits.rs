//! Counts a report may hold: a cycle count past 2^53 is no longer exact (reports and
//! charts go through `f64`), and one near 2^64 is a saturated sum, not a result. A run
//! that reaches one is refused with the knobs behind the stage that produced it, rather
//! than printed as a number.

use mnsim_reports::{OpReport, Report, StageReport};

/// The largest cycle count a report may carry: 2^53, the last integer `f64` holds exactly.
pub const MAX_CYCLES: u64 = 1 << 53;

/// The knobs that set a stage's time, as `--set` paths.
pub fn stage_knobs(s: &StageReport, leaf: &str) -> Vec<String> {
    match s.kind.as_str() {
        "broadcast" | "distribute" | "gather" | "reduce" => vec![
            format!("links.{}.{}.parent", s.level, s.kind),
            format!("links.{}.{}.child", s.level, s.kind),
        ],
        "dram" => vec!["dram.bytes_per_cycle".to_string()],
        "copy" => vec![format!("levels.{leaf}.memory.bytes_per_cycle")],
        "compute" => vec![
            "compute.vector.<DTYPE>".to_string(),
            "compute.matrix.flops.<DTYPE>".to_string(),
        ],
        _ => Vec::new(),
    }
}

fn op_name(op: &OpReport) -> String {
    format!("op {} ({} `{}`)", op.index, op.op, op.tensor)
}

/// A report whose counts mnsim cannot hold exactly.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// An op's slowest stage.
    #[error(
        "{op}: stage `{stage}` needs more than 2^53 cycles for {bytes} bytes{}, beyond what mnsim counts exactly; raise those rates",
        rates(.knobs)
    )]
    Stage {
        /// The op, as messages name it: `op 3 (Load `x`)`.
        op: String,
        stage: String,
        bytes: u64,
        /// The knobs that set the stage's time.
        knobs: Vec<String>,
    },
    /// An op with no stage to blame.
    #[error(
        "{0}: it needs more than 2^53 cycles, beyond what mnsim counts exactly; raise those rates"
    )]
    Op(String),
    /// The run as a whole.
    #[error(
        "the run takes more than 2^53 cycles ({0} ops), beyond what mnsim counts exactly; \
         raise the rates of the slowest stages"
    )]
    Run(usize),
}

fn rates(knobs: &[String]) -> String {
    if knobs.is_empty() {
        String::new()
    } else {
        format!(" at the rates {}", knobs.join(" and "))
    }
}

/// `Ok` when every cycle count of `r` is below [`MAX_CYCLES`]; else an error naming the
/// op, its slowest stage and the knobs that set that stage's time. `leaf` is the name of
/// the machine's PE level (for the local-copy knob).
pub fn check_report(r: &Report, leaf: &str) -> Result<(), LimitError> {
    for op in &r.ops {
        let worst = op.stages.iter().max_by_key(|s| s.cycles);
        let over = op.cycles >= MAX_CYCLES || worst.is_some_and(|s| s.cycles >= MAX_CYCLES);
        if !over {
            continue;
        }
        return Err(match worst {
            Some(s) => LimitError::Stage {
                op: op_name(op),
                stage: s.label(),
                bytes: s.bytes.max(s.max_port_bytes),
                knobs: stage_knobs(s, leaf),
            },
            None => LimitError::Op(op_name(op)),
        });
    }
    if r.total_cycles >= MAX_CYCLES {
        return Err(LimitError::Run(r.ops.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(level: &str, kind: &str, cycles: u64) -> StageReport {
        StageReport {
            level: level.into(),
            direction: "down".into(),
            kind: kind.into(),
            bytes: 64,
            child_bytes: 64,
            max_port_bytes: 64,
            max_child_bytes: 64,
            ports: 1,
            cycles,
            latency: 0,
            chunks: 1,
        }
    }

    #[test]
    fn knobs_per_stage_kind() {
        assert_eq!(
            stage_knobs(&stage("L1B", "distribute", 1), "PE"),
            ["links.L1B.distribute.parent", "links.L1B.distribute.child"]
        );
        assert_eq!(
            stage_knobs(&stage("DRAM", "dram", 1), "PE"),
            ["dram.bytes_per_cycle"]
        );
        assert_eq!(
            stage_knobs(&stage("PE", "copy", 1), "PE"),
            ["levels.PE.memory.bytes_per_cycle"]
        );
    }
}
