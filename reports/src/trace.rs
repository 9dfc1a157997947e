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
/// - metadata events (`"ph": "M"`) name the process `mnsim <scenario>` and its threads: the op
///   tracks first (`ops`, then `ops #2`, ... when ops run at the same time under the overlapped
///   schedule: an op goes on the first track free at its start), then one track per resource
///   (a level's ports per direction, `DRAM`, `PE LM`, a level's compute units) in the order of
///   the report's `resources` (resources that appear only in stages follow, in order of first
///   appearance);
/// - a complete event (`"ph": "X"`) per op on its op track, from its `start` to its `end`;
/// - a complete event per stage on its resource's track, starting with its op (stages are
///   pipelined) and lasting the stage's cycles. The timeline never gives one resource to two
///   ops at once, so Perfetto shows side by side exactly what ran together — but for the ops
///   of a stream (`Time` steps), which hold their resources slice by slice over their span:
///   their stage events, drawn from the op's start, stand for the sum of those holds.
///
/// `ts` and `dur` are microseconds at the report's `clock_ghz` (1 GHz when the report has no
/// valid clock), rounded to whole nanoseconds, the resolution trace viewers keep; every event's
/// `args` hold the exact cycles and the clock used.
pub fn trace(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(&trace_json(r)).expect("a trace always serialises");
    s.push('\n');
    s
}

/// The clock the trace uses, in GHz.
fn clock(r: &Report) -> f64 {
    if r.clock_ghz.is_finite() && r.clock_ghz > 0.0 {
        r.clock_ghz
    } else {
        FALLBACK_GHZ
    }
}

/// Per op, its op track: the first whose last op has ended by the op's start.
fn op_lanes(r: &Report) -> Vec<usize> {
    let mut ends: Vec<u64> = Vec::new();
    r.ops
        .iter()
        .map(|op| match ends.iter().position(|&e| e <= op.start) {
            Some(i) => {
                ends[i] = op.end.max(op.start);
                i
            }
            None => {
                ends.push(op.end.max(op.start));
                ends.len() - 1
            }
        })
        .collect()
}

/// The names of the tracks in display order: op tracks, then resources.
fn threads(r: &Report, op_tracks: usize) -> Vec<String> {
    let mut names: Vec<String> = (0..op_tracks.max(1))
        .map(|i| {
            if i == 0 {
                "ops".to_string()
            } else {
                format!("ops #{}", i + 1)
            }
        })
        .collect();
    let resources = r.resources.iter().map(|u| u.name.clone()).chain(
        r.ops
            .iter()
            .flat_map(|op| op.stages.iter().map(|s| s.resource())),
    );
    for name in resources {
        if !names[op_tracks.max(1)..].contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The trace as a JSON value (see [`trace`]).
fn trace_json(r: &Report) -> Value {
    let ghz = clock(r);
    // Whole nanoseconds since the run began, then microseconds: events that meet in cycles meet
    // exactly in the trace too.
    let ns = |cycles: u64| (cycles as f64 / ghz).round() as u64;
    let us = |ns: u64| ns as f64 / 1000.0;
    let lanes = op_lanes(r);
    let op_tracks = lanes.iter().max().map_or(1, |m| m + 1);
    let threads = threads(r, op_tracks);
    let tid = |name: &str| {
        let i = threads[op_tracks..]
            .iter()
            .position(|t| t == name)
            .expect("every stage has a track");
        OPS_TID + (op_tracks + i) as u64
    };

    let mut events = vec![
        json!({"name": "process_name", "ph": "M", "ts": 0, "pid": PID, "tid": OPS_TID,
               "args": {"name": format!("mnsim {}", r.scenario)}}),
        json!({"name": "process_labels", "ph": "M", "ts": 0, "pid": PID, "tid": OPS_TID,
               "args": {"labels": labels(r)}}),
    ];
    for (i, t) in threads.iter().enumerate() {
        let tid = OPS_TID + i as u64;
        events.push(
            json!({"name": "thread_name", "ph": "M", "ts": 0, "pid": PID, "tid": tid,
                           "args": {"name": t}}),
        );
        events.push(
            json!({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": PID,
                           "tid": tid, "args": {"sort_index": i}}),
        );
    }

    for (op, lane) in r.ops.iter().zip(&lanes) {
        let (start, end) = (ns(op.start), ns(op.end.max(op.start)));
        events.push(json!({
            "name": format!("{} {}", op.op, op.tensor),
            "cat": "op",
            "ph": "X",
            "ts": us(start),
            "dur": us(end - start),
            "pid": PID,
            "tid": OPS_TID + *lane as u64,
            "args": op_args(op, ghz),
        }));
        let bottleneck = op.bottleneck_stage();
        for (i, s) in op.stages.iter().enumerate() {
            let end = ns(op.start + s.cycles);
            events.push(json!({
                "name": s.label(),
                "cat": "stage",
                "ph": "X",
                "ts": us(start),
                "dur": us(end - start),
                "pid": PID,
                "tid": tid(&s.resource()),
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
            "schedule": r.schedule,
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
        "exposed_cycles": op.exposed_cycles,
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
        "resource": s.resource(),
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
