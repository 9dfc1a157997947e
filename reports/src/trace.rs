//! `trace.json`: a run in the Chrome Trace Event Format, for Perfetto and `chrome://tracing`.

use crate::model::{OpReport, Report, StageReport};
use serde_json::{Value, json};

/// The process every event belongs to.
const PID: u64 = 1;
/// The thread of the ops.
const OPS_TID: u64 = 1;

/// The clock the trace assumes when the report has none (1 GHz: a cycle is a nanosecond).
const FALLBACK_GHZ: f64 = 1.0;

/// The run as a Chrome Trace Event Format document (JSON object format):
///
/// ```json
/// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
/// ```
///
/// - metadata events (`"ph": "M"`) name the process `mnsim <scenario>` and its threads: `ops`
///   first, then one thread per stage level in the order of the report's `levels` (levels that
///   appear only in stages follow, in order of first appearance);
/// - a complete event (`"ph": "X"`) per op on `ops`, from its `start` to its `end`;
/// - a complete event per stage on its level's thread, starting with its op (stages are
///   pipelined) and lasting the stage's cycles. When one op has several stages of the same level
///   (a reduce up and the result back down), the second goes on a thread `LEVEL #2` right below
///   the level's, and so on, so that events of one thread never overlap within an op.
///
/// `ts` and `dur` are microseconds at the report's `clock_ghz` (1 GHz when the report has no
/// valid clock), rounded to whole nanoseconds, the resolution trace viewers keep; every event's
/// `args` hold the exact cycles and the clock used.
pub fn trace(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(&trace_json(r)).expect("a trace always serialises");
    s.push('\n');
    s
}

/// A stage thread: a level's own (`lane` 0) or an extra lane for stages of the same level
/// within one op.
struct Thread {
    level: String,
    lane: usize,
}

impl Thread {
    fn name(&self) -> String {
        if self.lane == 0 {
            self.level.clone()
        } else {
            format!("{} #{}", self.level, self.lane + 1)
        }
    }
}

/// The clock the trace uses, in GHz.
fn clock(r: &Report) -> f64 {
    if r.clock_ghz.is_finite() && r.clock_ghz > 0.0 {
        r.clock_ghz
    } else {
        FALLBACK_GHZ
    }
}

/// For each op, the lane of each of its stages: the number of earlier stages of the same level
/// in that op.
fn lanes(op: &OpReport) -> Vec<usize> {
    op.stages
        .iter()
        .enumerate()
        .map(|(i, s)| op.stages[..i].iter().filter(|t| t.level == s.level).count())
        .collect()
}

/// The stage threads in display order: levels in report order (then unlisted levels in order of
/// appearance), each followed by its extra lanes.
fn threads(r: &Report) -> Vec<Thread> {
    let mut levels: Vec<(String, usize)> = r.levels.iter().map(|l| (l.level.clone(), 1)).collect();
    for op in &r.ops {
        for (s, lane) in op.stages.iter().zip(lanes(op)) {
            match levels.iter_mut().find(|(l, _)| *l == s.level) {
                Some((_, n)) => *n = (*n).max(lane + 1),
                None => levels.push((s.level.clone(), lane + 1)),
            }
        }
    }
    levels
        .into_iter()
        .flat_map(|(level, n)| {
            (0..n).map(move |lane| Thread {
                level: level.clone(),
                lane,
            })
        })
        .collect()
}

/// The trace as a JSON value (see [`trace`]).
fn trace_json(r: &Report) -> Value {
    let ghz = clock(r);
    // Whole nanoseconds since the run began, then microseconds: events that meet in cycles meet
    // exactly in the trace too.
    let ns = |cycles: u64| (cycles as f64 / ghz).round() as u64;
    let us = |ns: u64| ns as f64 / 1000.0;
    let threads = threads(r);
    let tid = |level: &str, lane: usize| {
        let i = threads
            .iter()
            .position(|t| t.level == level && t.lane == lane)
            .expect("every stage has a thread");
        OPS_TID + 1 + i as u64
    };

    let mut events = vec![
        json!({"name": "process_name", "ph": "M", "ts": 0, "pid": PID, "tid": OPS_TID,
               "args": {"name": format!("mnsim {}", r.scenario)}}),
        json!({"name": "process_labels", "ph": "M", "ts": 0, "pid": PID, "tid": OPS_TID,
               "args": {"labels": labels(r)}}),
        json!({"name": "thread_name", "ph": "M", "ts": 0, "pid": PID, "tid": OPS_TID,
               "args": {"name": "ops"}}),
        json!({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": PID, "tid": OPS_TID,
               "args": {"sort_index": 0}}),
    ];
    for (i, t) in threads.iter().enumerate() {
        let tid = OPS_TID + 1 + i as u64;
        events.push(
            json!({"name": "thread_name", "ph": "M", "ts": 0, "pid": PID, "tid": tid,
                           "args": {"name": t.name()}}),
        );
        events.push(
            json!({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": PID,
                           "tid": tid, "args": {"sort_index": i + 1}}),
        );
    }

    for op in &r.ops {
        let (start, end) = (ns(op.start), ns(op.end.max(op.start)));
        events.push(json!({
            "name": format!("{} {}", op.op, op.tensor),
            "cat": "op",
            "ph": "X",
            "ts": us(start),
            "dur": us(end - start),
            "pid": PID,
            "tid": OPS_TID,
            "args": op_args(op, ghz),
        }));
        let bottleneck = op.bottleneck_stage();
        for (i, (s, lane)) in op.stages.iter().zip(lanes(op)).enumerate() {
            let end = ns(op.start + s.cycles);
            events.push(json!({
                "name": s.label(),
                "cat": "stage",
                "ph": "X",
                "ts": us(start),
                "dur": us(end - start),
                "pid": PID,
                "tid": tid(&s.level, lane),
                "args": stage_args(op, s, bottleneck == Some(i), ghz),
            }));
        }
    }

    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "schema": r.schema,
            "scenario": r.scenario,
            "plan": r.plan,
            "machine": r.machine,
            "mode": r.mode,
            "total_cycles": r.total_cycles,
            "clock_ghz": ghz,
            "verified": r.verified,
        },
    })
}

/// `plan P, machine M, mode` for the process.
fn labels(r: &Report) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &r.plan {
        parts.push(format!("plan {p}"));
    }
    parts.push(format!("machine {}", r.machine));
    parts.push(format!("{} mode", r.mode));
    parts.join(", ")
}

fn op_args(op: &OpReport, ghz: f64) -> Value {
    json!({
        "index": op.index,
        "op": op.op,
        "tensor": op.tensor,
        "layout": op.layout,
        "cycles": op.cycles,
        "start_cycle": op.start,
        "end_cycle": op.end,
        "bottleneck": op.bottleneck,
        "stages": op.stages.len(),
        "flops": op.flops,
        "utilisation": op.utilisation,
        "ready_cycles": op.ready_cycles,
        "clock_ghz": ghz,
    })
}

fn stage_args(op: &OpReport, s: &StageReport, bottleneck: bool, ghz: f64) -> Value {
    json!({
        "op_index": op.index,
        "op": format!("{} {}", op.op, op.tensor),
        "level": s.level,
        "direction": s.direction,
        "kind": s.kind,
        "cycles": s.cycles,
        "start_cycle": op.start,
        "bytes": s.bytes,
        "child_bytes": s.child_bytes,
        "ports": s.ports,
        "chunks": s.chunks,
        "latency": s.latency,
        "bottleneck": bottleneck,
        "clock_ghz": ghz,
    })
}
