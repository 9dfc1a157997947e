//! The report model: what a run produced, independent of how it is shown.
//!
//! `report.json` is this model serialised (schema `mnsim.report/2`, documented in
//! `docs/report-schema.md`). Keys are only ever added; existing keys never change meaning.
//! Version 2 added the schedule (`schedule`, per-op `exposed_cycles`, `resources`,
//! `peak_flops_per_cycle`); a version-1 report still reads (the new keys take defaults).

use serde::{Deserialize, Serialize};

/// The value of [`Report::schema`] for this version of the model.
pub const SCHEMA: &str = "mnsim.report/2";

/// One run of one plan of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA`] (`mnsim.report/2`).
    pub schema: String,
    /// The scenario's name.
    pub scenario: String,
    /// The plan that ran, `null` for a scenario without plans.
    pub plan: Option<String>,
    /// The machine's name (`mncore2`, a file name, ...).
    pub machine: String,
    /// `timing` or `functional`.
    pub mode: String,
    /// How ops were placed in time: `overlapped` (transfers overlap compute) or
    /// `sequential` (each op starts when the previous one ends).
    #[serde(default = "sequential")]
    pub schedule: String,
    /// Cycles of the whole run.
    pub total_cycles: u64,
    /// Machine clock, to turn cycles into time.
    pub clock_ghz: f64,
    /// The program's ops, in program order: every op of the program but its `Free`s (which
    /// take no cycles), and the Reduces the run inserted.
    pub ops: Vec<OpReport>,
    /// Ops of the program as written, `Free`s included (what `mnsim check` counts), and
    /// how many of them are `Free`s; 0 in a report that predates them.
    #[serde(default)]
    pub program_ops: u64,
    #[serde(default)]
    pub free_ops: u64,
    /// Per stage level: cycles summed over ops (where the time went).
    pub levels: Vec<LevelTotal>,
    /// Per resource of the timeline (a level's ports per direction, the DRAMs, the LM
    /// bandwidth, the compute units): busy cycles and share of the run.
    #[serde(default)]
    pub resources: Vec<ResourceTotal>,
    /// Every `Time`-stepped tensor placed in LM (a stream): how many slices LM held of
    /// it, why, and the slices its consumer needed again.
    #[serde(default)]
    pub streams: Vec<StreamReport>,
    /// The machine's peak FLOP per cycle for the dtype the run computes in (the
    /// largest over its kernels), `null` when nothing computes.
    #[serde(default)]
    pub peak_flops_per_cycle: Option<f64>,
    /// `true`/`false` when verification ran, `null` when it did not.
    pub verified: Option<bool>,
    /// Peak LM use per PE over the run, in bytes, and the PE's LM size.
    pub lm_peak_bytes: u64,
    /// The LM size of one PE, in bytes.
    pub lm_bytes: u64,
    /// Knob overrides and bindings in force.
    pub overrides: Vec<(String, f64)>,
    /// Values bound to dynamic dimensions.
    pub bind: Vec<(String, u64)>,
    /// Things the user should know (unused bindings, ...).
    pub warnings: Vec<String>,
    /// The fewest cycles any layout could give this program on this machine under the
    /// model (docs/model.md, the bound); 0 in a report that predates it.
    #[serde(default)]
    pub bound_cycles: u64,
    /// What sets `bound_cycles`: a resource named as in `resources`, or `latency`.
    #[serde(default)]
    pub bound_resource: String,
    /// The resource on the critical path that holds the most of the run's cycles.
    #[serde(default)]
    pub bottleneck: Option<Bottleneck>,
    /// What keeps the run from its bound, where it takes more than 1.25× it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above_bound: Option<AboveBound>,
    /// The run's energy (docs/model.md, energy); `null` in a report that predates it.
    #[serde(default)]
    pub energy: Option<crate::energy::EnergyReport>,
    /// A whole model's ops by part (embedding, norm, attention, mlp, head), then by
    /// layer ([`crate::places`]); empty when no op has a place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub places: Vec<crate::places::PlaceTotal>,
    /// A machine of many boards: the run by board and by link ([`crate::boards`]);
    /// absent for one board.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boards: Option<crate::boards::BoardsReport>,
}

/// Why a run takes more than its bound (docs/model.md, what keeps a run from its
/// bound): its busiest resource either worked longer than the bound alone (`excess`:
/// more than every layout must make it do, or more than an even share), or was idle
/// while ops waited on each other (`serial`), whichever factor is larger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AboveBound {
    /// `excess` or `serial`.
    pub cause: String,
    /// The run's busiest resource, named as in `resources`.
    pub resource: String,
    /// Its busy cycles, and the fewest every layout must hold it (the bound's
    /// compulsory work on it).
    pub busy_cycles: u64,
    pub compulsory_cycles: u64,
    /// `busy ÷ bound` and `total ÷ busy`: their product is `× bound`.
    pub excess: f64,
    pub idle: f64,
    /// The op that contributes most to the cause (position in `ops`).
    pub op: Option<usize>,
    /// The constraint in words: what the op did, and why.
    pub detail: String,
}

/// The run's bottleneck: the resource on the critical path holding the most cycles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    /// Named as in [`Report::resources`] (`L1B down`, `DRAM`, `MAB compute`).
    pub resource: String,
    /// Cycles of the critical path it holds (its ops' exposed cycles, or the waits for it).
    pub critical_cycles: u64,
    /// Its busy cycles over the run (as in `resources`), and their share of the run.
    pub busy_cycles: u64,
    pub share: f64,
}

/// What an op waited for before it could start or go on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaitedOn {
    /// `data` (an input being written), `resource` (a resource it holds being busy),
    /// `memory` (LM space being released), `stream` (slices of a stream it reads),
    /// `previous` (the sequential schedule: the previous op's end).
    pub reason: String,
    /// The op whose end (or hold, or slices) it waited for.
    pub op: Option<usize>,
    /// The resource it waited for: the one named busy, or the one that set the time of
    /// the op it waited for.
    pub resource: Option<String>,
    /// Cycles waited.
    pub cycles: u64,
}

/// One op of the program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpReport {
    /// Position in the program as written, from 0 (`Free` ops count; an op the run
    /// inserted has the position of the op it follows).
    pub index: usize,
    /// For a Reduce the run inserted (partial sums after a kernel), the position of the
    /// program op it follows; absent for the program's own ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inserted_after: Option<usize>,
    /// `Load`, `Store`, `Relayout`, `Reduce`, `MatMul`, ...
    pub op: String,
    /// The tensor the op produces or moves.
    pub tensor: String,
    /// Canonical layout of the result in LM, if any.
    pub layout: Option<String>,
    /// First and one-past-last cycle of the op on the run's clock.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Cycles the op takes.
    pub cycles: u64,
    /// The op's cycles on the run's critical path (not hidden behind another op). Under
    /// the sequential schedule, equal to `cycles`; the sum over ops is the run's length.
    #[serde(default)]
    pub exposed_cycles: u64,
    /// The op's own cost, as it would take alone (its stages and latencies, plus the
    /// slices of streams it needs again): `cycles` under the sequential schedule. Under
    /// the overlapped one a stream's ops may stretch (`cycles` > `work_cycles`, waiting
    /// for slices or for the consumer to free a buffer).
    #[serde(default)]
    pub work_cycles: u64,
    /// The stage that set the op's time (`L1B down distribute`, `DRAM`, `compute`).
    pub bottleneck: String,
    /// The algorithm of the collective the op ran over a network between boards
    /// (`ring`, `tree`, `direct`; docs/model.md, many boards), or, over networks that
    /// ran different ones, each with its level (`ring (Node), direct (Zone)`); absent
    /// when it crossed no network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// The op's pipelined stages.
    pub stages: Vec<StageReport>,
    /// When the PEs' data became ready, over the PEs (`null` when the op readies no data).
    pub ready_cycles: Option<Percentiles>,
    /// Floating-point operations, where the op computes.
    pub flops: Option<u64>,
    /// Share of the op's PEs doing useful work (used and unpadded), 0..1.
    pub utilisation: f64,
    /// Padding positions moved or computed, and all positions (one replica).
    pub padding_elems: u64,
    /// See `padding_elems`.
    pub padded_elems: u64,
    /// The fewest cycles any layout could give this op (docs/model.md, the bound).
    #[serde(default)]
    pub bound_cycles: u64,
    /// What sets `bound_cycles`: a resource named as in `resources`, or `latency`.
    #[serde(default)]
    pub bound_resource: String,
    /// What the op waited for longest, `null` when it waited for nothing.
    #[serde(default)]
    pub waited_on: Option<WaitedOn>,
    /// The op's joules: its accesses, transfers and FLOP, and its share of the static
    /// energy (static power × its `exposed_cycles`). Summed over ops: `energy.total_j`.
    #[serde(default)]
    pub energy_j: f64,
    /// A view (a transpose or reshape whose output keeps every element in its cell):
    /// it computes nothing and moves no byte (docs/layout.md, views).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub view: bool,
    /// The layer of a whole model the op is in (from 0), where the import tells it
    /// (docs/import.md, places).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<u32>,
    /// The part of a whole model the op is in: `embedding`, `norm`, `attention`, `mlp`
    /// or `head`, where the import tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
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
    /// See `max_port_bytes`.
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
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest value.
    pub max: u64,
    /// Smallest value.
    pub min: u64,
    /// Number of values (PEs).
    pub count: u64,
}

fn sequential() -> String {
    "sequential".to_string()
}

/// One resource of the timeline over the whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceTotal {
    /// `L1B down`, `Group up` (a level's ports, one direction), `DRAM`, `PE LM`,
    /// `MAB compute` (matrix units), `PE compute` (vector units): as stages name theirs
    /// ([`StageReport::resource`]).
    pub name: String,
    /// `port`, `dram`, `lm`, `matrix` or `vector`.
    pub kind: String,
    /// Cycles the resource was held, summed over ops.
    pub busy_cycles: u64,
    /// `busy_cycles` / the run's total cycles, 0..1.
    pub utilisation: f64,
}

/// A `Time`-stepped tensor placed in LM (docs/model.md, streams).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    /// The tensor.
    pub tensor: String,
    /// The op that produced it and the op that read it slice by slice (`null`: none did).
    pub producer: usize,
    pub consumer: Option<usize>,
    /// Its `Time` steps, and the LM bytes of one step's slice per PE.
    pub slices: u64,
    pub slice_bytes: u64,
    /// Slices LM held (charged), and `buffers:` as the op gave it (`null`: the default).
    pub buffers: u64,
    pub requested: Option<u64>,
    /// Two or more slices held: the next slice's transfer runs during the consumer's step.
    pub double_buffered: bool,
    /// Why one slice only although `buffers:` was not given (`LM full: ...`), else `null`.
    pub fallback: Option<String>,
    /// Slices sent to the consumer, and of those the re-sends (a slice needed again after
    /// it left LM) with their cycles, charged to the consumer.
    pub sends: u64,
    pub resent_slices: u64,
    pub resend_cycles: u64,
}

/// Cycles attributed to one stage level over the whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelTotal {
    /// The stage level (as in [`StageReport::level`]).
    pub level: String,
    /// Sum over ops of this level's stage cycles (time the level was busy).
    pub busy_cycles: u64,
    /// Sum over ops of this level's stage bytes.
    pub bytes: u64,
    /// Ops in which this level was the bottleneck.
    pub bottleneck_ops: u64,
}

impl StageReport {
    /// The timeline resource the stage holds, named as in [`Report::resources`]: `DRAM`,
    /// `L1B down` (a level's ports, one direction), `PE LM` (a copy inside LM), `MAB compute`
    /// (the compute units of a level).
    pub fn resource(&self) -> String {
        match self.kind.as_str() {
            "dram" => "DRAM".to_string(),
            "copy" => format!("{} LM", self.level),
            "compute" => format!("{} compute", self.level),
            _ => format!("{} {}", self.level, self.direction),
        }
    }

    /// The stage's name as ops refer to it in `bottleneck`: `level direction kind`
    /// (`L1B down distribute`).
    pub fn label(&self) -> String {
        format!("{} {} {}", self.level, self.direction, self.kind)
    }

    /// Whether `name` (an op's `bottleneck`) names this stage: every word of `name` is the
    /// stage's level, direction or kind (ASCII case ignored). `L1B down distribute`, `L1B`,
    /// `DRAM` and `compute` all name stages this way.
    pub fn is_named_by(&self, name: &str) -> bool {
        let parts = [&self.level, &self.direction, &self.kind];
        let mut words = name.split_whitespace().peekable();
        words.peek().is_some() && words.all(|w| parts.iter().any(|p| p.eq_ignore_ascii_case(w)))
    }
}

impl OpReport {
    /// The op's name as reports show it: `Transpose (view)` for a view.
    /// An op that ran a collective over a network says its algorithm: `Reduce (tree)`.
    pub fn label(&self) -> String {
        match (&self.algorithm, self.view) {
            (_, true) => format!("{} (view)", self.op),
            (Some(a), false) => format!("{} ({a})", self.op),
            (None, false) => self.op.clone(),
        }
    }

    /// Index in `stages` of the stage that set the op's time: among the stages named by
    /// `bottleneck` (see [`StageReport::is_named_by`]), the one with the most cycles (the first
    /// on a tie). `None` when `bottleneck` names no stage.
    pub fn bottleneck_stage(&self) -> Option<usize> {
        self.stages
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_named_by(&self.bottleneck))
            .max_by_key(|&(i, s)| (s.cycles, std::cmp::Reverse(i)))
            .map(|(i, _)| i)
    }

    /// The level that set the op's time: the bottleneck stage's level, or else the first word of
    /// `bottleneck` (`compute`, ...); `None` when `bottleneck` is empty.
    pub fn bottleneck_level(&self) -> Option<&str> {
        match self.bottleneck_stage() {
            Some(i) => Some(&self.stages[i].level),
            None => self.bottleneck.split_whitespace().next(),
        }
    }
}

impl Report {
    /// Cycles hidden behind other ops: the ops' own cycles summed, less the run's
    /// length (0 under the sequential schedule).
    pub fn hidden_cycles(&self) -> u64 {
        self.work_cycles().saturating_sub(self.total_cycles)
    }

    /// The ops' own cycles summed (each op's `work_cycles`, or its `cycles` in a report
    /// that predates `work_cycles`): what the run takes op after op.
    pub fn work_cycles(&self) -> u64 {
        self.ops
            .iter()
            .map(|o| {
                if o.work_cycles > 0 {
                    o.work_cycles
                } else {
                    o.cycles
                }
            })
            .sum()
    }

    /// FLOP of the whole run.
    pub fn flops(&self) -> u64 {
        self.ops.iter().filter_map(|o| o.flops).sum()
    }

    /// The run's FLOP per cycle (over its whole length), `None` when nothing computes.
    pub fn flops_per_cycle(&self) -> Option<f64> {
        let f = self.flops();
        (f > 0 && self.total_cycles > 0).then(|| f as f64 / self.total_cycles as f64)
    }

    /// `total_cycles` ÷ `bound_cycles` (`None` without a bound).
    pub fn times_bound(&self) -> Option<f64> {
        (self.bound_cycles > 0).then(|| self.total_cycles as f64 / self.bound_cycles as f64)
    }

    /// What bounds the run: the [`Bottleneck`]'s resource, or (in a report that predates
    /// it) [`Report::bottleneck_level`].
    pub fn bottleneck_name(&self) -> Option<&str> {
        match &self.bottleneck {
            Some(b) => Some(b.resource.as_str()),
            None => self.bottleneck_level(),
        }
    }

    /// The level that bounded the most cycles: op cycles summed by
    /// [`OpReport::bottleneck_level`], the largest sum (the level met first on a tie).
    pub fn bottleneck_level(&self) -> Option<&str> {
        let mut sums: Vec<(&str, u64)> = Vec::new();
        for op in &self.ops {
            let Some(level) = op.bottleneck_level() else {
                continue;
            };
            match sums.iter_mut().find(|(l, _)| *l == level) {
                Some((_, c)) => *c += op.cycles,
                None => sums.push((level, op.cycles)),
            }
        }
        sums.iter()
            .enumerate()
            .max_by_key(|&(i, &(_, c))| (c, std::cmp::Reverse(i)))
            .map(|(_, &(l, _))| l)
    }
}
