//! What keeps a run from its bound (docs/model.md): the report's `above_bound`.
//!
//! The run's busiest resource `R` splits `× bound` into two factors: `excess =
//! busy(R) ÷ bound` (it alone worked longer than the whole run's bound: it moved or
//! computed more than every layout must make it, or carried more than an even share —
//! unpacked words, replicas, padding, idle PEs, slices sent again) and `idle = total ÷
//! busy(R)` (it stood idle while ops waited on each other: results that are not
//! streams, kernels that cannot walk `Time` steps, latencies). The larger names the
//! cause, with the op that contributes most to it. Invariant: reads the finished report and the
//! bound only; it never changes a figure.

use crate::bound::{Bound, OpBound};
use crate::timeline::{Resource, describe};
use mnsim_arch::Machine;
use mnsim_reports::{AboveBound, OpReport, Report};

/// A run within this factor of its bound gets no `above_bound`.
const NEAR: f64 = 1.25;

/// Writes `report.above_bound`. `bounds` are the run's ops' bounds (as annotated);
/// `whole[k]` says op `k` is a kernel that reads and writes whole tensors (no per-axis
/// index map: it cannot walk `Time` steps).
pub fn annotate(
    m: &Machine,
    bound: &Bound,
    bounds: &[OpBound],
    whole: &[bool],
    report: &mut Report,
) {
    report.above_bound = above_bound(m, bound, bounds, whole, report);
}

fn above_bound(
    m: &Machine,
    bound: &Bound,
    bounds: &[OpBound],
    whole: &[bool],
    report: &Report,
) -> Option<AboveBound> {
    let total = report.total_cycles;
    if report.bound_cycles == 0 || (total as f64) <= NEAR * report.bound_cycles as f64 {
        return None;
    }
    // The busiest resource; of several equally busy, the run's bottleneck (the one the
    // critical path waited on: a Load's `Group down` rather than the Store's `Group up`).
    let top = report.resources.iter().map(|r| r.busy_cycles).max()?;
    let bottleneck = report.bottleneck.as_ref().map(|b| b.resource.as_str());
    let busiest = (report.resources.iter())
        .filter(|r| r.busy_cycles == top)
        .max_by_key(|r| Some(r.name.as_str()) == bottleneck)?;
    if busiest.busy_cycles == 0 {
        return None;
    }
    // The bound's compulsory work on it: every op's least hold, summed (or the run's
    // own lower bound on it, where larger).
    let summed = (bound.ops.iter())
        .map(|o| held_on(m, &o.holds, &busiest.name))
        .fold(0, u64::saturating_add);
    let compulsory = summed.max(held_on(m, &bound.extra, &busiest.name));
    let excess = busiest.busy_cycles as f64 / report.bound_cycles as f64;
    let idle = total as f64 / busiest.busy_cycles as f64;
    let (cause, op, detail) = if excess >= idle {
        let (op, detail) = excess_detail(&busiest.name, bounds, &report.ops, m);
        ("excess", op, detail)
    } else {
        let (op, detail) = serial_detail(report, whole);
        ("serial", op, detail)
    };
    Some(AboveBound {
        cause: cause.to_string(),
        resource: busiest.name.clone(),
        busy_cycles: busiest.busy_cycles,
        compulsory_cycles: compulsory,
        excess,
        idle,
        op,
        detail,
    })
}

/// The op whose cycles on `resource` exceed its bound's hold there the most, and why.
fn excess_detail(
    resource: &str,
    bounds: &[OpBound],
    ops: &[OpReport],
    m: &Machine,
) -> (Option<usize>, String) {
    let on = |o: &OpReport| {
        (o.stages.iter())
            .filter(|s| s.resource() == resource)
            .max_by_key(|s| s.cycles)
            .cloned()
    };
    let least = |k: usize| bounds.get(k).map_or(0, |b| held_on(m, &b.holds, resource));
    let worst = (ops.iter().enumerate())
        .filter_map(|(k, o)| on(o).map(|s| (k, s.cycles.saturating_sub(least(k)), s)))
        .max_by_key(|&(k, extra, _)| (extra, std::cmp::Reverse(k)));
    let Some((k, _, stage)) = worst else {
        return (
            None,
            format!("{resource} did more than every layout must make it do"),
        );
    };
    let o = &ops[k];
    let useful = o.utilisation * 100.0;
    let dram = (o.stages.iter())
        .find(|s| s.level == "DRAM")
        .map(|s| s.bytes);
    let times = dram
        .filter(|&b| b > 0 && stage.bytes > b)
        .map(|b| stage.bytes as f64 / b as f64);
    let moved = match (times, dram) {
        (Some(x), Some(b)) => format!(" moves {x:.1}× its {b} bytes over {resource}"),
        _ => format!(" holds {resource} {} cycles", stage.cycles),
    };
    let packed = o.layout.as_deref().is_none_or(|l| l.contains("_W"));
    let why = if stage.kind == "compute" {
        format!(
            "{useful:.1}% of its work is useful (padded shards, or PEs its layout leaves \
             idle), so the PEs it uses carry more than an even share"
        )
    } else if stage.kind == "broadcast" {
        let idle = if o.utilisation < 0.5 {
            format!("; {useful:.1}% of its PEs' words hold real data")
        } else {
            String::new()
        };
        format!(
            "its layout sends the same bytes to several nodes ({} {}: each node below gets \
             all of it){idle}",
            stage.level, stage.kind
        )
    } else if times.is_some() && !packed {
        format!(
            "its elements are not packed with `W`: each takes a whole {}-byte word (its last \
             memory part does not split into the word's slots)",
            m.word_bytes
        )
    } else if o.utilisation < 0.75 {
        format!(
            "{useful:.1}% of its PEs' words hold real data (PEs its layout leaves idle, or \
             padding), so the nodes it uses carry more than an even share"
        )
    } else {
        format!(
            "its layout moves more than the tensor's bytes ({} {}: replicas, or slices sent \
             again)",
            stage.level, stage.kind
        )
    };
    (
        Some(k),
        format!("op {} `{}` of `{}`{moved}: {why}", o.index, o.op, o.tensor),
    )
}

/// The cycles `holds` hold the resource named `resource` (as `resources` names it).
fn held_on(m: &Machine, holds: &[(Resource, u64)], resource: &str) -> u64 {
    (holds.iter())
        .filter(|(r, _)| describe(*r, m).0 == resource)
        .map(|(_, c)| *c)
        .fold(0, u64::saturating_add)
}

/// The longest wait of an op for another's end, and why the two did not overlap.
fn serial_detail(report: &Report, whole: &[bool]) -> (Option<usize>, String) {
    let ops = &report.ops;
    let waits = (ops.iter().enumerate())
        .filter_map(|(k, o)| o.waited_on.as_ref().map(|w| (k, w)))
        .filter(|(_, w)| w.cycles > 0);
    let Some((k, w)) = waits.max_by_key(|&(k, w)| (w.cycles, std::cmp::Reverse(k))) else {
        return (
            None,
            "its ops ran one after another: each waited for the one before to end".to_string(),
        );
    };
    let o = &ops[k];
    let Some(j) = w.op.filter(|&j| j < ops.len()) else {
        return (
            Some(k),
            format!(
                "op {} `{}` waited {} cycles ({})",
                o.index, o.op, w.cycles, w.reason
            ),
        );
    };
    let p = &ops[j];
    let what = match w.reason.as_str() {
        "stream" => "for the slices of",
        "resource" => "for a resource held by",
        "memory" => "for LM space that",
        _ => "for the end of",
    };
    let mut detail = format!(
        "op {} `{}` waited {} cycles {what} op {} `{}`",
        o.index, o.op, w.cycles, p.index, p.op
    );
    if w.reason == "memory" {
        detail.push_str(" still used");
    }
    let latency: u64 = (p.stages.iter())
        .map(|s| s.latency.saturating_mul(s.chunks.max(1)))
        .sum();
    if w.reason == "data" && latency.saturating_mul(2) >= p.cycles && p.cycles > 0 {
        detail.push_str(&format!(
            ": `{}` is latency-bound ({latency} of its {} cycles are the path's latency, \
             paid by each op of the chain in turn; `Time` steps would pay it once per step)",
            p.op, p.cycles
        ));
    } else if whole.get(j).copied().unwrap_or(false) {
        detail.push_str(&format!(
            ": `{}` reads and writes whole tensors (an output element does not read its \
             input along fixed axes), so it cannot walk `Time` steps and ops before and \
             after it cannot overlap with it",
            p.op
        ));
    } else if whole.get(k).copied().unwrap_or(false) {
        detail.push_str(&format!(
            ": `{}` reads and writes whole tensors (an output element does not read its \
             input along fixed axes), so it cannot start on a first slice",
            o.op
        ));
    } else if w.reason == "data" && !report.streams.iter().any(|s| s.producer == j) {
        detail.push_str(&format!(
            ": the result of `{}` is not a stream (with `Time` steps the two would overlap \
             slice by slice)",
            p.op
        ));
    }
    (Some(k), detail)
}
