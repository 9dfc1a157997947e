//! What a run waited on (docs/model.md, what a run waited on): per op, the op or
//! resource whose end it waited for longest; for the run, the resource on the critical
//! path that holds the most cycles (the report's `bottleneck`).
//!
//! It reads the timeline's placements (what set each op's start, `timeline::Cause`) and
//! the report's ops and streams; it changes nothing.

use crate::timeline::{Cause, Placement, describe};
use mnsim_arch::Machine;
use mnsim_reports::{Bottleneck, OpReport, Report, ResourceTotal, StreamReport, WaitedOn};

/// The resource that set op `i`'s own time (its bottleneck stage's resource).
fn own(ops: &[OpReport], i: usize) -> Option<String> {
    let op = ops.get(i)?;
    op.bottleneck_stage().map(|s| op.stages[s].resource())
}

/// Cycles op `i` stretched past its own work waiting for the slices of a stream it
/// reads, and the stream's producer (the slowest, when it reads several).
fn stretch(ops: &[OpReport], streams: &[StreamReport], i: usize) -> Option<(u64, usize)> {
    let op = &ops[i];
    let waited = op.cycles.saturating_sub(op.work_cycles);
    if waited == 0 {
        return None;
    }
    let producer = streams
        .iter()
        .filter(|s| s.consumer == Some(i))
        .map(|s| s.producer)
        .filter(|&p| p < ops.len())
        .max_by_key(|&p| (ops[p].work_cycles, std::cmp::Reverse(p)))?;
    Some((waited, producer))
}

/// Fills a run's report: every op's `waited_on` and the run's `bottleneck`.
pub fn annotate(m: &Machine, placed: &[Placement], report: &mut Report) {
    fill(m, placed, &mut report.ops, &report.streams);
    report.bottleneck = bottleneck(
        &report.ops,
        &report.streams,
        &report.resources,
        report.total_cycles,
    );
}

/// Fills every op's `waited_on`: the longer of the wait before its start (what the
/// timeline says set it, for the cycles since the previous op started) and the wait
/// inside it for a stream's slices (its cycles past its own work).
pub fn fill(m: &Machine, placed: &[Placement], ops: &mut [OpReport], streams: &[StreamReport]) {
    let mut out: Vec<Option<WaitedOn>> = Vec::with_capacity(ops.len());
    for (i, p) in placed.iter().enumerate().take(ops.len()) {
        let since = if i == 0 {
            p.start
        } else {
            p.start.saturating_sub(ops[i - 1].start)
        };
        let before = match p.cause {
            Cause::Origin | Cause::Issue => None,
            Cause::Previous => Some(("previous", p.after, p.after.and_then(|a| own(ops, a)))),
            Cause::Data => Some(("data", p.after, p.after.and_then(|a| own(ops, a)))),
            Cause::Resource(r) => Some(("resource", p.after, Some(describe(r, m).0))),
            Cause::Memory => Some(("memory", p.after, None)),
        }
        .filter(|_| since > 0)
        .map(|(reason, op, resource)| WaitedOn {
            reason: reason.to_string(),
            op,
            resource,
            cycles: since,
        });
        let inside = stretch(ops, streams, i).map(|(cycles, p)| WaitedOn {
            reason: "stream".to_string(),
            op: Some(p),
            resource: own(ops, p),
            cycles,
        });
        out.push(match (before, inside) {
            (Some(b), Some(s)) if s.cycles > b.cycles => Some(s),
            (Some(b), _) => Some(b),
            (None, s) => s,
        });
    }
    for (op, w) in ops.iter_mut().zip(out) {
        op.waited_on = w;
    }
}

/// The run's bottleneck: over the ops on the critical path (`exposed_cycles` > 0),
/// each op's exposed cycles go to the resource that set its time, except the cycles
/// it waited inside for a stream's slices, which go to the stream producer's resource.
/// The resource with the most cycles (the first met on a tie).
pub fn bottleneck(
    ops: &[OpReport],
    streams: &[StreamReport],
    resources: &[ResourceTotal],
    total: u64,
) -> Option<Bottleneck> {
    let mut sums: Vec<(String, u64)> = Vec::new();
    let mut add = |name: Option<String>, c: u64| {
        let Some(name) = name.filter(|_| c > 0) else {
            return;
        };
        match sums.iter_mut().find(|s| s.0 == name) {
            Some(s) => s.1 = s.1.saturating_add(c),
            None => sums.push((name, c)),
        }
    };
    for (i, op) in ops.iter().enumerate() {
        let e = op.exposed_cycles;
        let waited = match stretch(ops, streams, i) {
            Some((c, p)) => {
                let w = c.min(e);
                add(own(ops, p), w);
                w
            }
            None => 0,
        };
        add(own(ops, i), e - waited);
    }
    let (resource, critical) = sums
        .iter()
        .enumerate()
        .max_by_key(|&(i, s)| (s.1, std::cmp::Reverse(i)))
        .map(|(_, s)| s.clone())?;
    let busy = resources
        .iter()
        .find(|r| r.name == resource)
        .map_or(0, |r| r.busy_cycles);
    Some(Bottleneck {
        resource,
        critical_cycles: critical,
        busy_cycles: busy,
        share: if total > 0 {
            busy as f64 / total as f64
        } else {
            0.0
        },
    })
}
