//! The report model: what a run produced, independent of how it is shown.
//!
//! `report.json` is this model serialised (schema `mnsim.report/1`, documented in
//! `docs/report-schema.md`). Keys are only ever added; existing keys never change meaning.

use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "mnsim.report/1";

/// One run of one plan of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub scenario: String,
    pub plan: Option<String>,
    pub machine: String,
    /// `timing` or `functional`.
    pub mode: String,
    pub total_cycles: u64,
    /// Machine clock, to turn cycles into time.
    pub clock_ghz: f64,
    pub ops: Vec<OpReport>,
    /// Per stage level: cycles summed over ops (where the time went).
    pub levels: Vec<LevelTotal>,
    /// `true`/`false` when verification ran, `null` when it did not.
    pub verified: Option<bool>,
    /// Peak LM use per PE over the run, in bytes, and the PE's LM size.
    pub lm_peak_bytes: u64,
    pub lm_bytes: u64,
    /// Knob overrides and bindings in force.
    pub overrides: Vec<(String, f64)>,
    pub bind: Vec<(String, u64)>,
    /// Things the user should know (unused bindings, ...).
    pub warnings: Vec<String>,
}

/// One op of the program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpReport {
    pub index: usize,
    /// `Load`, `Store`, `Relayout`, `Reduce`, `MatMul`, ...
    pub op: String,
    /// The tensor the op produces or moves.
    pub tensor: String,
    /// Canonical layout of the result in LM, if any.
    pub layout: Option<String>,
    pub start: u64,
    pub end: u64,
    pub cycles: u64,
    /// The stage that set the op's time (`L1B down distribute`, `DRAM`, `compute`).
    pub bottleneck: String,
    pub stages: Vec<StageReport>,
    pub ready_cycles: Option<Percentiles>,
    /// Floating-point operations, where the op computes.
    pub flops: Option<u64>,
    /// Share of the op's PEs doing useful work (used and unpadded), 0..1.
    pub utilisation: f64,
    /// Padding positions moved or computed, and all positions (one replica).
    pub padding_elems: u64,
    pub padded_elems: u64,
}

/// One pipelined stage of an op: a level's ports, or DRAM, or compute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    /// The level on the parent side of the link (`L1B` = L1BM → its PEs), or `DRAM`, `PE`, `MAB`.
    pub level: String,
    /// `down`, `up` or `local`.
    pub direction: String,
    /// `broadcast`, `distribute`, `gather`, `reduce`, `dram`, `copy`, `compute`.
    pub kind: String,
    /// Distinct bytes sent by all ports of the level (multicast counted once).
    pub bytes: u64,
    /// Bytes received (down) or sent (up) by all children together.
    pub child_bytes: u64,
    /// Distinct bytes at the slowest port, and the most bytes one child receives.
    pub max_port_bytes: u64,
    pub max_child_bytes: u64,
    /// Ports of this level that carry data.
    pub ports: u64,
    /// Stage time of the slowest port.
    pub cycles: u64,
    /// Latency this stage adds on the path.
    pub latency: u64,
    /// Chunks the stage is cut into (buffer smaller than the data, or time steps).
    pub chunks: u64,
}

/// Distribution of a per-PE cycle (PE data-ready).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
    pub min: u64,
    pub count: u64,
}

/// Cycles attributed to one stage level over the whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelTotal {
    pub level: String,
    /// Sum over ops of this level's stage cycles (time the level was busy).
    pub busy_cycles: u64,
    pub bytes: u64,
    /// Ops in which this level was the bottleneck.
    pub bottleneck_ops: u64,
}
