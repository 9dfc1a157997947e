//! What held a run back, as the summary views say it: the ops most exposed on the
//! critical path with what each waited on, why an op outlasts its bottleneck stage, and
//! the program's op count as `mnsim check` gives it.

use crate::model::{OpReport, Report, WaitedOn};
use crate::text::{real, thousands};

/// How many of the most exposed ops the first screen lists.
pub(crate) const MOST_EXPOSED: usize = 10;

/// The ops of a program as `mnsim check` counts them: every op as written (`Free`s
/// included, and said), then the Reduces a run inserts. `30 ops (14 Free)`,
/// `8 ops + 2 inserted Reduces`.
pub fn op_count(program: u64, frees: u64, inserted: u64) -> String {
    let mut s = format!("{} op{}", thousands(program), plural(program));
    if frees > 0 {
        s.push_str(&format!(" ({} Free)", thousands(frees)));
    }
    if inserted > 0 {
        s.push_str(&format!(
            " + {} inserted Reduce{}",
            thousands(inserted),
            plural(inserted)
        ));
    }
    s
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The report's op count as [`op_count`] writes it; a report that predates
/// `program_ops` counts its listed ops.
pub(crate) fn report_op_count(r: &Report) -> String {
    let inserted = r.ops.iter().filter(|o| o.inserted_after.is_some()).count() as u64;
    if r.program_ops == 0 {
        let n = r.ops.len() as u64;
        return format!("{} op{}", thousands(n), plural(n));
    }
    op_count(r.program_ops, r.free_ops, inserted)
}

/// Positions in `r.ops` of the ops on the critical path (`exposed_cycles` > 0), most
/// exposed first (ties in program order), at most `n`.
pub(crate) fn most_exposed(r: &Report, n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..r.ops.len())
        .filter(|&i| r.ops[i].exposed_cycles > 0)
        .collect();
    v.sort_by_key(|&i| (std::cmp::Reverse(r.ops[i].exposed_cycles), i));
    v.truncate(n);
    v
}

/// The title of the most-exposed list: `the 10 most exposed ops (their cycles on the
/// critical path, which no other op hides)`.
pub(crate) fn exposed_title(r: &Report, shown: usize) -> String {
    let on_path = r.ops.iter().filter(|o| o.exposed_cycles > 0).count();
    let which = if shown == on_path {
        format!(
            "the {} op{} on the critical path",
            shown,
            plural(shown as u64)
        )
    } else {
        format!("the {shown} most exposed of the {on_path} ops on the critical path")
    };
    format!("{which}, most exposed first (cycles no other op hides)")
}

/// The op at position `pos` as the views name it: `#5 Load t3` (its number in the
/// program as written), or `op pos` when there is no such op.
pub(crate) fn op_label(r: &Report, pos: usize) -> String {
    match r.ops.get(pos) {
        Some(o) => format!("#{} {} {}", o.index, o.op, o.tensor),
        None => format!("op {pos}"),
    }
}

/// What an op waited for longest, in words: `4,572 cyc for the slices of #1 Load t5
/// (Group down)`; `–` when it waited for nothing.
pub(crate) fn waited(r: &Report, op: &OpReport) -> String {
    match &op.waited_on {
        Some(w) => waited_text(r, w),
        None => "–".to_string(),
    }
}

fn waited_text(r: &Report, w: &WaitedOn) -> String {
    let c = format!("{} cyc", thousands(w.cycles));
    let other = w.op.map(|k| op_label(r, k));
    let on = w
        .resource
        .as_deref()
        .map(|res| format!(" ({res})"))
        .unwrap_or_default();
    match (w.reason.as_str(), other) {
        ("stream", Some(o)) => format!("{c} for the slices of {o}{on}"),
        ("data", Some(o)) => format!("{c} for its input from {o}{on}"),
        ("resource", Some(o)) => format!(
            "{c} for {}, busy with {o}",
            w.resource.as_deref().unwrap_or("a resource")
        ),
        ("resource", None) => format!("{c} for {}", w.resource.as_deref().unwrap_or("a resource")),
        ("memory", Some(o)) => format!("{c} for LM space {o} still used"),
        ("memory", None) => format!("{c} for LM space"),
        ("previous", Some(o)) => format!("{c} for {o} to end (sequential schedule)"),
        (reason, Some(o)) => format!("{c} for {o} ({reason})"),
        (reason, None) => format!("{c} ({reason})"),
    }
}

/// An op takes "much longer" than its bottleneck stage from this factor on...
const OUTLASTS: f64 = 1.5;
/// ... and by at least this many cycles.
const OUTLASTS_BY: u64 = 16;

/// Why the op at `pos` takes much longer than the stage marked as its bottleneck (at
/// least 1.5× and 16 cycles more): the cycles it waited inside for a stream's slices,
/// the reader it sent its own slices to, or what its own work adds to the stage
/// (latencies, slices sent again). `None` when the stage accounts for the op.
pub(crate) fn outlasts(r: &Report, pos: usize) -> Option<String> {
    let op = r.ops.get(pos)?;
    let stage = op.stages.get(op.bottleneck_stage()?)?.cycles;
    if stage == 0 || (op.cycles as f64) < OUTLASTS * stage as f64 || op.cycles - stage < OUTLASTS_BY
    {
        return None;
    }
    let mut why: Vec<String> = Vec::new();
    let work = if op.work_cycles > 0 {
        op.work_cycles
    } else {
        op.cycles
    };
    let stretch = op.cycles.saturating_sub(work);
    if stretch > 0 {
        let read = op.waited_on.as_ref().filter(|w| w.reason == "stream");
        let fed = r
            .streams
            .iter()
            .filter(|s| s.producer == pos)
            .find_map(|s| s.consumer.map(|c| (s, c)));
        why.push(match (read, fed) {
            (Some(w), _) => format!(
                "it waited {} cycles for the slices of {}{}",
                thousands(stretch),
                w.op.map_or_else(|| "a stream".to_string(), |k| op_label(r, k)),
                w.resource
                    .as_deref()
                    .map(|res| format!(" ({res})"))
                    .unwrap_or_default()
            ),
            (None, Some((s, c))) => format!(
                "it sends its {} slices of `{}` as {} reads them, so it ends with that op's \
                 walk, {} cycles after its own work",
                thousands(s.slices),
                s.tensor,
                op_label(r, c),
                thousands(stretch)
            ),
            (None, None) => format!(
                "it waited {} cycles inside, past its own work",
                thousands(stretch)
            ),
        });
    }
    let extra = work.saturating_sub(stage);
    if extra >= OUTLASTS_BY && (extra as f64) >= (OUTLASTS - 1.0) * stage as f64 {
        let latency: u64 = (op.stages.iter())
            .map(|s| s.latency.saturating_mul(s.chunks.max(1)))
            .fold(0, u64::saturating_add);
        let resent: u64 = (r.streams.iter())
            .filter(|s| s.consumer == Some(pos))
            .map(|s| s.resend_cycles)
            .fold(0, u64::saturating_add);
        let mut parts: Vec<String> = Vec::new();
        if resent > 0 {
            parts.push(format!("{} cycles of slices sent again", thousands(resent)));
        }
        if latency > 0 {
            parts.push(format!(
                "the path's latency, {} cycles over its chunks",
                thousands(latency)
            ));
        }
        if parts.is_empty() {
            parts.push("its other stages and steps, which do not all overlap".to_string());
        }
        why.push(format!(
            "its own work takes {} cycles: {}",
            thousands(work),
            parts.join(" and ")
        ));
    }
    if why.is_empty() {
        return None;
    }
    Some(format!(
        "{} cycles, {}× its bottleneck stage's {}: {}",
        thousands(op.cycles),
        real(op.cycles as f64 / stage as f64, 1),
        thousands(stage),
        why.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_counts_read_as_check_prints_them() {
        assert_eq!(op_count(30, 14, 0), "30 ops (14 Free)");
        assert_eq!(op_count(8, 0, 2), "8 ops + 2 inserted Reduces");
        assert_eq!(op_count(1, 1, 1), "1 op (1 Free) + 1 inserted Reduce");
        assert_eq!(op_count(3, 0, 0), "3 ops");
    }
}
