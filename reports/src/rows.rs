//! The facts the summary views (terminal, Markdown) show, formatted once so both show the same.

use crate::model::{LevelTotal, OpReport, Report, StageReport};
use crate::text::{Nums, human_bytes, num, percent, real, share, si, thousands};

/// The plan's name, or `–` for a scenario without plans.
pub(crate) fn plan_name(r: &Report) -> &str {
    r.plan.as_deref().unwrap_or("–")
}

/// The run's duration at the machine clock (`164.61 µs`), `–` without a clock.
pub(crate) fn duration(r: &Report) -> String {
    if !(r.clock_ghz.is_finite() && r.clock_ghz > 0.0) {
        return "–".to_string();
    }
    let us = r.total_cycles as f64 / (r.clock_ghz * 1e3);
    format!("{} µs", real(us, if us < 1.0 { 3 } else { 2 }))
}

/// The clock (`0.75 GHz`), `–` without one.
pub(crate) fn clock(r: &Report) -> String {
    if r.clock_ghz.is_finite() && r.clock_ghz > 0.0 {
        format!("{} GHz", r.clock_ghz)
    } else {
        "–".to_string()
    }
}

/// LM peak against LM size (`12.0 KiB of 32.0 KiB (37.5%)`).
pub(crate) fn lm_use(r: &Report) -> String {
    format!(
        "{} of {} ({})",
        human_bytes(r.lm_peak_bytes),
        human_bytes(r.lm_bytes),
        share(r.lm_peak_bytes, r.lm_bytes)
    )
}

/// Knob overrides as `key=value` items.
pub(crate) fn overrides(r: &Report) -> Vec<String> {
    r.overrides
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

/// Bindings as `name=value` items.
pub(crate) fn bindings(r: &Report) -> Vec<String> {
    r.bind.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// Whether an op's stages are listed under it: ops that move data (a stage other than compute)
/// or that have several stages. A lone compute stage would only repeat the op's row.
pub(crate) fn shows_stages(op: &OpReport) -> bool {
    op.stages.len() > 1 || op.stages.iter().any(|s| s.kind != "compute")
}

/// Titles of the op table; the ready-cycle columns (p50, p90, p99, max) only when
/// [`ready_differs`].
pub(crate) const OP_TITLES: [&str; 11] = [
    "#",
    "op",
    "tensor",
    "cycles",
    "share",
    "bottleneck",
    "useful work",
    "p50",
    "p90",
    "p99",
    "max",
];

/// What `useful work` means, for the notes under op tables.
pub(crate) const USEFUL_NOTE: &str =
    "useful work = share of the op's PE work on real data (neither idle PEs nor padding)";

/// Whether the PEs of some op became ready at different cycles: only then are ready-cycle
/// columns and charts worth showing.
pub(crate) fn ready_differs(r: &Report) -> bool {
    r.ops
        .iter()
        .filter_map(|op| op.ready_cycles.as_ref())
        .any(|p| p.min != p.max)
}

/// The op table's titles for `r` (see [`OP_TITLES`]).
pub(crate) fn op_titles(r: &Report) -> &'static [&'static str] {
    if ready_differs(r) {
        &OP_TITLES
    } else {
        &OP_TITLES[..7]
    }
}

/// The op table's cells for `op`: index, op, tensor, cycles, share of the run, bottleneck,
/// useful work and, when [`ready_differs`], ready-cycle p50/p90/p99/max (`–` when the op
/// has none).
pub(crate) fn op_cells(r: &Report, op: &OpReport, nums: Nums) -> Vec<String> {
    let ready = |f: fn(&crate::model::Percentiles) -> u64| {
        op.ready_cycles
            .as_ref()
            .map_or("–".to_string(), |p| num(f(p), nums))
    };
    let mut cells = vec![
        op.index.to_string(),
        op.label(),
        op.tensor.clone(),
        num(op.cycles, nums),
        share(op.cycles, r.total_cycles),
        if op.bottleneck.is_empty() {
            "–".to_string()
        } else {
            op.bottleneck.clone()
        },
        percent(op.utilisation),
    ];
    if ready_differs(r) {
        cells.extend([
            ready(|p| p.p50),
            ready(|p| p.p90),
            ready(|p| p.p99),
            ready(|p| p.max),
        ]);
    }
    cells
}

/// A stage's cells: level, direction, kind, bytes, cycles, chunks.
pub(crate) fn stage_cells(s: &StageReport, nums: Nums) -> [String; 6] {
    [
        s.level.clone(),
        s.direction.clone(),
        s.kind.clone(),
        human_bytes(s.bytes),
        format!("{} cyc", num(s.cycles, nums)),
        format!(
            "{} chunk{}",
            num(s.chunks, nums),
            if s.chunks == 1 { "" } else { "s" }
        ),
    ]
}

/// Titles of the level table.
pub(crate) const LEVEL_TITLES: [&str; 5] = ["level", "busy cycles", "share", "bytes", "bottleneck"];

/// A level's cells: level, busy cycles, share of the run, bytes, ops it bounded.
pub(crate) fn level_cells(r: &Report, l: &LevelTotal) -> [String; 5] {
    [
        l.level.clone(),
        thousands(l.busy_cycles),
        share(l.busy_cycles, r.total_cycles),
        human_bytes(l.bytes),
        format!(
            "{} op{}",
            l.bottleneck_ops,
            if l.bottleneck_ops == 1 { "" } else { "s" }
        ),
    ]
}

/// A level's busy cycles as a fraction of the run (0 when the run took no cycles).
pub(crate) fn level_fraction(r: &Report, l: &LevelTotal) -> f64 {
    if r.total_cycles == 0 {
        0.0
    } else {
        l.busy_cycles as f64 / r.total_cycles as f64
    }
}

/// The note under the level table.
pub(crate) const LEVEL_NOTE: &str = "share = busy cycles / total cycles; stages of an op overlap, so shares need not add up to 100%";

/// What an op that computes achieved: its FLOP (`536.9 MFLOP`), FLOP per cycle of the op
/// (`493,447 FLOP/cycle`) and the rate at the machine clock (`370.1 TFLOP/s`, `–` without a
/// clock). `None` for ops without `flops`.
pub(crate) fn compute(r: &Report, op: &OpReport) -> Option<[String; 3]> {
    let flops = op.flops?;
    let per_cycle = if op.cycles == 0 {
        f64::NAN
    } else {
        flops as f64 / op.cycles as f64
    };
    let rate = if r.clock_ghz.is_finite() && r.clock_ghz > 0.0 && per_cycle.is_finite() {
        format!("{}FLOP/s", si(per_cycle * r.clock_ghz * 1e9))
    } else {
        "–".to_string()
    };
    let per_cycle = if per_cycle.is_finite() {
        format!("{} FLOP/cycle", real(per_cycle, 0))
    } else {
        "–".into()
    };
    Some([format!("{}FLOP", si(flops as f64)), per_cycle, rate])
}

/// `× bound` as views write it (`2.31×`), `–` without a bound.
pub(crate) fn times_bound(r: &Report) -> String {
    match r.times_bound() {
        Some(x) => format!("{}×", real(x, 2)),
        None => "–".to_string(),
    }
}

/// The bound line: the fewest cycles any layout could give, what sets them, and the
/// run against them. `None` for a report without a bound.
pub(crate) fn bound(r: &Report) -> Option<String> {
    (r.bound_cycles > 0).then(|| {
        format!(
            "bound {} cycles (set by {}) · the run takes {} the bound",
            thousands(r.bound_cycles),
            if r.bound_resource.is_empty() {
                "–"
            } else {
                &r.bound_resource
            },
            times_bound(r)
        )
    })
}

/// What keeps the run from its bound: its busiest resource busy longer than the bound
/// alone, or idle while ops wait, and the op and constraint behind it. `None` within
/// 1.25× of the bound or without one.
pub(crate) fn above_bound(r: &Report) -> Option<String> {
    let a = r.above_bound.as_ref()?;
    let head = match a.cause.as_str() {
        "excess" => format!(
            "{} alone is busy {}× the bound",
            a.resource,
            real(a.excess, 2)
        ),
        _ => format!(
            "{}, the busiest resource, stands idle {} of the run while ops wait",
            a.resource,
            percent(1.0 - 1.0 / a.idle.max(1.0))
        ),
    };
    Some(format!("above the bound: {head}: {}", a.detail))
}

/// The bottleneck line: the resource on the critical path holding the most cycles, its
/// busy cycles and their share of the run. `None` for a report without one.
pub(crate) fn bottleneck(r: &Report) -> Option<String> {
    let b = r.bottleneck.as_ref()?;
    Some(format!(
        "bottleneck {}: busy {} cycles ({} of the run), {} cycles of the critical path",
        b.resource,
        thousands(b.busy_cycles),
        percent(b.share),
        thousands(b.critical_cycles)
    ))
}

/// The schedule line: how many of the ops' cycles were hidden behind other ops, or that
/// ops ran one after another. `None` for a report without ops.
pub(crate) fn overlap(r: &Report) -> Option<String> {
    if r.ops.is_empty() {
        return None;
    }
    let sum = r.work_cycles();
    Some(match r.schedule.as_str() {
        "overlapped" => format!(
            "overlapped schedule: {} cycles hidden behind other ops ({} of the ops' {} cycles)",
            thousands(r.hidden_cycles()),
            share(r.hidden_cycles(), sum),
            thousands(sum)
        ),
        other => format!("{other} schedule: ops run one after another"),
    })
}

/// The streams line: which streams were double-buffered, which held one slice and
/// why, and the slices sent again. `None` for a run without streams.
pub(crate) fn streams(r: &Report) -> Option<String> {
    if r.streams.is_empty() {
        return None;
    }
    // A whole model streams hundreds of tensors: the line names the first few of each
    // kind and counts the rest (every stream is in report.json's `streams`).
    const NAMED: usize = 8;
    // Those with a reason, fewer.
    const EXPLAINED: usize = 3;
    let more = |n: usize| {
        if n > NAMED {
            format!(" and {} more", thousands((n - NAMED) as u64))
        } else {
            String::new()
        }
    };
    let mut parts: Vec<String> = Vec::new();
    let double: Vec<&str> = r
        .streams
        .iter()
        .filter(|s| s.double_buffered)
        .map(|s| s.tensor.as_str())
        .collect();
    if !double.is_empty() {
        let shown: Vec<&str> = double.iter().take(NAMED).copied().collect();
        parts.push(format!(
            "double-buffered {}{}",
            shown.join(", "),
            more(double.len())
        ));
    }
    let single: Vec<_> = r.streams.iter().filter(|s| !s.double_buffered).collect();
    for s in single.iter().take(EXPLAINED) {
        let why = match (&s.fallback, s.requested) {
            (Some(f), _) => f.clone(),
            (None, Some(b)) => format!("buffers: {b}"),
            (None, None) => "one step".to_string(),
        };
        parts.push(format!("{} one slice ({why})", s.tensor));
    }
    if single.len() > EXPLAINED {
        let n = (single.len() - EXPLAINED) as u64;
        parts.push(format!("{} more one slice", thousands(n)));
    }
    let mut resent: Vec<_> = r.streams.iter().filter(|s| s.resent_slices > 0).collect();
    // The costliest re-sends first.
    resent.sort_by_key(|s| std::cmp::Reverse(s.resend_cycles));
    for s in resent.iter().take(EXPLAINED) {
        parts.push(format!(
            "{} re-sent {} of {} slices ({} cycles)",
            s.tensor,
            thousands(s.resent_slices),
            thousands(s.sends),
            thousands(s.resend_cycles)
        ));
    }
    if resent.len() > EXPLAINED {
        let n = (resent.len() - EXPLAINED) as u64;
        parts.push(format!("{} more re-sent", thousands(n)));
    }
    Some(format!("streams: {}", parts.join(" · ")))
}

/// The compute line: the run's FLOP per cycle over its whole length against the machine's
/// peak. `None` when nothing computes.
pub(crate) fn run_compute(r: &Report) -> Option<String> {
    let rate = r.flops_per_cycle()?;
    let mut s = format!(
        "compute {}FLOP · {} FLOP/cycle over the run",
        si(r.flops() as f64),
        thousands(rate.round() as u64)
    );
    if let Some(peak) = r.peak_flops_per_cycle.filter(|p| *p > 0.0) {
        s.push_str(&format!(
            " = {} of the {} peak",
            percent(rate / peak),
            thousands(peak.round() as u64)
        ));
    }
    Some(s)
}
