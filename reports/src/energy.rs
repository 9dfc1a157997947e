//! The energy of a run (`report.json` `energy`, docs/report-schema.md): joules in total,
//! static and per resource and level, average and peak watts, FLOP per joule, and power
//! over time. The simulator computes it (docs/model.md, energy); this module only holds
//! and shows it.

use crate::model::Report;
use serde::{Deserialize, Serialize};

/// The energy of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyReport {
    /// Joules of the whole run: `dynamic_j + static_j`, also the ops' `energy_j` summed.
    pub total_j: f64,
    /// Joules of the accesses, transfers and FLOP (the resources' joules summed).
    pub dynamic_j: f64,
    /// Static power × the run's time.
    pub static_j: f64,
    /// The machine's static power (every level's nodes), in watts.
    pub static_w: f64,
    /// `total_j` over the run's time, in watts.
    pub average_w: f64,
    /// The highest power of the run: static power plus the dynamic power of the ops running
    /// at that moment (each op's dynamic joules spread evenly over its span).
    pub peak_w: f64,
    /// The run's FLOP per joule (`null` when nothing computes or nothing costs energy).
    pub flop_per_j: Option<f64>,
    /// Every charged resource: a memory's reads or writes, a link level's direction, the
    /// DRAM, a compute unit in one dtype.
    pub resources: Vec<EnergyResource>,
    /// Per level of the machine: dynamic joules of the resources it owns, static joules of
    /// its nodes.
    pub levels: Vec<EnergyLevel>,
    /// Power over the run in at most 200 windows, each ⌈total ÷ 200⌉ cycles long but the
    /// last (cut at the run's end); their watts × lengths add up to the joules.
    pub power: Vec<PowerWindow>,
    /// FLOP in a dtype the machine gives no coefficient for (a preset's int8 or fp8
    /// mode, which no public figure prices): counted at 0 J, and said.
    #[serde(default)]
    pub uncosted: Vec<Uncosted>,
}

/// FLOP the run computed that no coefficient prices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Uncosted {
    /// The compute resource, as `resources` names it (`PE vector S8`).
    pub resource: String,
    /// The coefficient the machine does not give (`energy.vector_pj_per_flop.S8`).
    pub knob: String,
    /// Its FLOP over the run.
    pub flop: u64,
}

/// A FLOP count as the views write it: `50.2 MFLOP`.
pub fn flop_amount(n: u64) -> String {
    format!("{}FLOP", crate::text::si(n as f64))
}

/// One charged resource.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnergyResource {
    /// `DRAM read`, `L1BM write`, `L1B down` (a link), `MAB matrix F16`, `PE vector F32`.
    pub name: String,
    /// `dram`, `memory`, `link`, `matrix` or `vector`.
    pub kind: String,
    /// The level that owns it.
    pub level: String,
    /// Bytes (DRAM, memories, links) or FLOP (compute units) over the run.
    pub amount: u64,
    /// `bytes` or `flop`.
    pub unit: String,
    /// The coefficient: picojoules per byte or per FLOP (the `energy.…` knob).
    pub pj_per_unit: f64,
    /// `amount × pj_per_unit × 1e-12`.
    pub joules: f64,
}

/// One level's joules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnergyLevel {
    pub level: String,
    /// Nodes of the level in the machine.
    pub nodes: u64,
    /// Joules of the resources the level owns.
    pub dynamic_j: f64,
    /// `nodes × energy.static_w_per_node.LEVEL × the run's time`.
    pub static_j: f64,
}

/// Average power over a window of the run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerWindow {
    /// First and one-past-last cycle.
    pub start: u64,
    pub end: u64,
    pub watts: f64,
}

impl EnergyReport {
    /// GFLOPS per watt (`flop_per_j` / 10^9).
    pub fn gflops_per_w(&self) -> Option<f64> {
        self.flop_per_j.map(|f| f / 1e9)
    }
}

/// What `compare --by`, `plan --objective` and sweeps rank or plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Objective {
    /// Cycles of the run.
    #[default]
    Cycles,
    /// Joules of the run.
    Energy,
    /// Energy-delay product: joules × seconds.
    Edp,
}

impl Objective {
    /// `cycles`, `energy`, `edp`.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Cycles => "cycles",
            Objective::Energy => "energy",
            Objective::Edp => "edp",
        }
    }

    /// Parses `cycles`, `energy` or `edp`.
    pub fn parse(s: &str) -> Result<Objective, String> {
        match s {
            "cycles" => Ok(Objective::Cycles),
            "energy" => Ok(Objective::Energy),
            "edp" => Ok(Objective::Edp),
            other => Err(format!(
                "unknown objective '{other}': expected cycles, energy or edp"
            )),
        }
    }

    /// The figure of a run this objective minimises: cycles, joules or joule-seconds
    /// (a report without energy counts as 0 joules).
    pub fn score(self, cycles: u64, joules: f64, clock_ghz: f64) -> f64 {
        match self {
            Objective::Cycles => cycles as f64,
            Objective::Energy => joules,
            Objective::Edp => joules * seconds(cycles, clock_ghz),
        }
    }

    /// The report's figure for this objective.
    pub fn of(self, r: &Report) -> f64 {
        self.score(r.total_cycles, r.energy_j(), r.clock_ghz)
    }
}

/// Seconds of `cycles` at `clock_ghz` (0 for a clock of 0).
pub fn seconds(cycles: u64, clock_ghz: f64) -> f64 {
    if clock_ghz > 0.0 {
        cycles as f64 / (clock_ghz * 1e9)
    } else {
        0.0
    }
}

impl Report {
    /// Joules of the run (0 when the report has no energy).
    pub fn energy_j(&self) -> f64 {
        self.energy.as_ref().map_or(0.0, |e| e.total_j)
    }
}

/// A quantity in joules as people read it: `1.23 J`, `45.6 mJ`, `789 µJ`, `12.3 nJ`.
pub fn human_joules(j: f64) -> String {
    let a = j.abs();
    let (v, unit) = if a >= 1.0 || a == 0.0 {
        (j, "J")
    } else if a >= 1e-3 {
        (j * 1e3, "mJ")
    } else if a >= 1e-6 {
        (j * 1e6, "µJ")
    } else if a >= 1e-9 {
        (j * 1e9, "nJ")
    } else {
        (j * 1e12, "pJ")
    };
    format!("{} {unit}", three(v))
}

/// Three significant figures.
pub fn three(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The terminal's energy line: `energy: 1.23 J (static 0.12 J), 412 W average, 498 W peak,
/// 65.5 GFLOPS/W`, and the FLOP no coefficient prices (`; without 50.2 MFLOP PE vector S8
/// (no coefficient: 0 J)`); `None` when the run was charged nothing.
pub fn summary_line(r: &Report) -> Option<String> {
    let e = r.energy.as_ref()?;
    if e.total_j <= 0.0 {
        return None;
    }
    let mut s = format!(
        "energy: {} (static {}), {} W average, {} W peak",
        human_joules(e.total_j),
        human_joules(e.static_j),
        three(e.average_w),
        three(e.peak_w)
    );
    if let Some(g) = e.gflops_per_w() {
        s.push_str(&format!(", {} GFLOPS/W", three(g)));
    }
    if !e.uncosted.is_empty() {
        let what: Vec<String> = e
            .uncosted
            .iter()
            .map(|u| format!("{} {}", flop_amount(u.flop), u.resource))
            .collect();
        s.push_str(&format!(
            "; without {} (no coefficient: 0 J)",
            what.join(", ")
        ));
    }
    Some(s)
}

/// The energy figures of one sweep point (`sweep.json` rows' `result.energy`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowEnergy {
    pub energy_j: f64,
    pub average_w: f64,
    pub peak_w: f64,
    /// GFLOPS per watt (`null` when nothing computes).
    pub gflops_per_w: Option<f64>,
    /// Energy × delay: joules × seconds.
    pub edp_js: f64,
}

impl RowEnergy {
    /// The figures of a run, `None` when its report has no energy.
    pub fn of(r: &Report) -> Option<RowEnergy> {
        let e = r.energy.as_ref()?;
        Some(RowEnergy {
            energy_j: e.total_j,
            average_w: e.average_w,
            peak_w: e.peak_w,
            gflops_per_w: e.gflops_per_w(),
            edp_js: Objective::Edp.of(r),
        })
    }
}

/// The `sweep.csv` columns of [`RowEnergy`], after `time_us`.
pub const CSV_COLUMNS: &str = ",energy_j,average_w,peak_w,gflops_per_w,edp_js";

/// The `sweep.csv` cells of a row's energy (empty cells without it).
pub fn csv_cells(e: Option<&RowEnergy>) -> String {
    let g = |v: f64| format!("{v}");
    match e {
        Some(e) => format!(
            ",{},{},{},{},{}",
            g(e.energy_j),
            g(e.average_w),
            g(e.peak_w),
            e.gflops_per_w.map(g).unwrap_or_default(),
            g(e.edp_js)
        ),
        None => ",,,,,".to_string(),
    }
}

/// What a sweep chart plots against the swept axis (`sweep --metric`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SweepMetric {
    #[default]
    Cycles,
    Energy,
    Power,
    PeakPower,
    GflopsPerW,
    Edp,
}

impl SweepMetric {
    /// Every metric, as `--metric` takes them.
    pub const NAMES: &'static str = "cycles, energy, power, peak_power, gflops_per_w, edp";

    /// The metric as `--metric` names it.
    pub fn name(self) -> &'static str {
        match self {
            SweepMetric::Cycles => "cycles",
            SweepMetric::Energy => "energy",
            SweepMetric::Power => "power",
            SweepMetric::PeakPower => "peak_power",
            SweepMetric::GflopsPerW => "gflops_per_w",
            SweepMetric::Edp => "edp",
        }
    }

    /// Parses a `--metric` value.
    pub fn parse(s: &str) -> Result<SweepMetric, String> {
        Ok(match s {
            "cycles" => SweepMetric::Cycles,
            "energy" => SweepMetric::Energy,
            "power" => SweepMetric::Power,
            "peak_power" => SweepMetric::PeakPower,
            "gflops_per_w" => SweepMetric::GflopsPerW,
            "edp" => SweepMetric::Edp,
            other => {
                return Err(format!(
                    "unknown metric '{other}': expected one of {}",
                    Self::NAMES
                ));
            }
        })
    }

    /// The point's value (`None`: failed, or no energy in its report).
    pub fn value(self, r: &crate::sweep::RowResult) -> Option<f64> {
        let e = r.energy.as_ref();
        match self {
            SweepMetric::Cycles => Some(r.total_cycles as f64),
            SweepMetric::Energy => e.map(|e| e.energy_j),
            SweepMetric::Power => e.map(|e| e.average_w),
            SweepMetric::PeakPower => e.map(|e| e.peak_w),
            SweepMetric::GflopsPerW => e.and_then(|e| e.gflops_per_w),
            SweepMetric::Edp => e.map(|e| e.edp_js),
        }
    }

    /// The quantity's name and base unit (`total cycles`, `energy`/`J`).
    fn quantity(self) -> (&'static str, &'static str) {
        match self {
            SweepMetric::Cycles => ("total cycles", ""),
            SweepMetric::Energy => ("energy", "J"),
            SweepMetric::Power => ("average power", "W"),
            SweepMetric::PeakPower => ("peak power", "W"),
            SweepMetric::GflopsPerW => ("GFLOPS/W", ""),
            SweepMetric::Edp => ("energy × delay", "J·s"),
        }
    }

    /// A factor that brings values up to `max` into readable numbers (at least 1), and the
    /// axis label in the unit it gives (`energy (mJ)`).
    pub fn scale(self, max: f64) -> (f64, String) {
        let (name, unit) = self.quantity();
        if unit.is_empty() {
            return (1.0, name.to_string());
        }
        let mut f = 1.0;
        let mut prefix = "";
        for (scale, p) in [(1e3, "m"), (1e6, "µ"), (1e9, "n"), (1e12, "p")] {
            if max <= 0.0 || max * f >= 1.0 {
                break;
            }
            f = scale;
            prefix = p;
        }
        (f, format!("{name} ({prefix}{unit})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joules_read_as_people_write_them() {
        assert_eq!(human_joules(1.234), "1.23 J");
        assert_eq!(human_joules(0.0456), "45.6 mJ");
        assert_eq!(human_joules(7.89e-4), "789 µJ");
        assert_eq!(human_joules(1.2e-8), "12.0 nJ");
        assert_eq!(human_joules(0.0), "0 J");
    }

    #[test]
    fn objectives_parse_and_score() {
        assert_eq!(Objective::parse("edp"), Ok(Objective::Edp));
        assert!(Objective::parse("watts").is_err());
        // 1e9 cycles at 1 GHz = 1 s: EDP = joules.
        assert_eq!(Objective::Edp.score(1_000_000_000, 3.0, 1.0), 3.0);
        assert_eq!(Objective::Cycles.score(7, 3.0, 1.0), 7.0);
        assert_eq!(Objective::Energy.score(7, 3.0, 1.0), 3.0);
    }

    #[test]
    fn metrics_parse_and_scale() {
        assert_eq!(SweepMetric::parse("peak_power"), Ok(SweepMetric::PeakPower));
        assert!(SweepMetric::parse("joules").is_err());
        assert_eq!(SweepMetric::Energy.scale(0.004).1, "energy (mJ)");
        assert_eq!(SweepMetric::Energy.scale(0.004).0, 1e3);
        assert_eq!(
            SweepMetric::Energy.scale(3.0),
            (1.0, "energy (J)".to_string())
        );
        assert_eq!(SweepMetric::Edp.scale(2e-9).1, "energy × delay (nJ·s)");
        assert_eq!(
            SweepMetric::Cycles.scale(1e9),
            (1.0, "total cycles".to_string())
        );
    }
}
