//! Sweeps: the cartesian product of what-if knobs and bindings, one row per point and
//! plan, as `sweep.json` (everything, what `mnsim merge` reads), `sweep.csv`, and charts
//! (`sweep_chart`).
//!
//! Points are numbered in row-major order over the axes as given (the last axis varies
//! fastest). A shard `I/N` holds the points whose number is `I` modulo `N`; merging every
//! shard of a sweep gives exactly the unsharded sweep, byte for byte, because every file is
//! rendered from the rows sorted by point and plan.

use crate::model::Report;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The value of [`Sweep::schema`].
pub const SWEEP_SCHEMA: &str = "mnsim.sweep/2";

/// What an axis of a sweep changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AxisKind {
    /// A machine knob (`--set`).
    Knob,
    /// A dynamic dimension's binding (`--bind`).
    Bind,
}

/// One swept quantity and its values, in the order given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepAxis {
    /// The knob path or the dimension's name; for a knob group, its patterns as written
    /// (`links.Group.*`, `a,b`).
    pub name: String,
    pub kind: AxisKind,
    /// The values; for a scaling axis, the multipliers.
    pub values: Vec<f64>,
    /// A knob group's knobs (`--set 'links.Group.*=x2'`): every knob the axis sets,
    /// expanded on the scenario's machine; empty for an axis of one knob named `name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<String>,
    /// Whether the values multiply each knob's own value (`x2`) rather than set it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scale: bool,
}

impl SweepAxis {
    /// An axis of one knob or binding, set to `values`.
    pub fn new(name: impl Into<String>, kind: AxisKind, values: Vec<f64>) -> SweepAxis {
        SweepAxis {
            name: name.into(),
            kind,
            values,
            knobs: Vec::new(),
            scale: false,
        }
    }

    /// A value of the axis as the CSV and the pages write it: `128`, or `x2` for a
    /// multiplier.
    pub fn show(&self, v: f64) -> String {
        if self.scale {
            format!("x{}", fmt_value(v))
        } else {
            fmt_value(v)
        }
    }
}

/// The figures of one point and plan that ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowResult {
    pub total_cycles: u64,
    /// `total_cycles` at the machine's clock, in microseconds.
    pub time_us: f64,
    /// Busy cycles per stage level, in the report's order.
    pub levels: Vec<(String, u64)>,
    /// The run's bottleneck: the resource on the critical path holding the most cycles
    /// (`-` when none; the level that bounded the most cycles in a sweep that predates it).
    pub bottleneck: String,
    /// The run's bound (0 in a sweep that predates it).
    #[serde(default)]
    pub bound_cycles: u64,
    /// Joules, watts and GFLOPS/W (`null` in a sweep that predates them).
    #[serde(default)]
    pub energy: Option<crate::energy::RowEnergy>,
}

/// One point of the sweep and one plan: its figures or why it failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// Number of the point in the whole (unsharded) sweep.
    pub point: usize,
    /// The plan (`null` for a scenario without plans).
    pub plan: Option<String>,
    /// The run's figures; `null` when the point failed.
    pub result: Option<RowResult>,
    /// Why the point failed; `null` when it ran.
    pub error: Option<String>,
}

/// A sweep, or one shard of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// Always [`SWEEP_SCHEMA`].
    pub schema: String,
    /// The scenario's name.
    pub scenario: String,
    /// A hash of the scenario's text and of the machine file it names (16 hex digits):
    /// shards of an edited scenario are not merged.
    pub scenario_hash: String,
    /// The schedule every point ran under (`overlapped` or `sequential`).
    pub schedule: String,
    /// The mode every point ran in (`timing` or `functional`).
    pub mode: String,
    /// The plans run at every point, in order (`[null]` for a scenario without plans).
    pub plans: Vec<Option<String>>,
    pub axes: Vec<SweepAxis>,
    /// `[I, N]` for shard I of N; `null` for a whole sweep.
    pub shard: Option<(usize, usize)>,
    /// Rows sorted by point, then by plan in `plans` order.
    pub rows: Vec<SweepRow>,
    /// The axis the chart is drawn against when `--x` named one, and the metric it
    /// plots when `--metric` named another than cycles: `mnsim merge` draws the merged
    /// chart the same way unless told otherwise. Absent: the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

impl RowResult {
    /// The figures of a run.
    pub fn of(r: &Report) -> RowResult {
        RowResult {
            total_cycles: r.total_cycles,
            time_us: r.total_cycles as f64 / (r.clock_ghz * 1e3),
            levels: r
                .levels
                .iter()
                .map(|l| (l.level.clone(), l.busy_cycles))
                .collect(),
            bottleneck: r.bottleneck_name().unwrap_or("-").to_string(),
            bound_cycles: r.bound_cycles,
            energy: crate::energy::RowEnergy::of(r),
        }
    }
}

/// Number of points of the cartesian product of `axes` (`None` on overflow).
pub fn point_count(axes: &[SweepAxis]) -> Option<usize> {
    axes.iter()
        .try_fold(1usize, |a, x| a.checked_mul(x.values.len()))
}

/// The value of every axis at point `p` (row-major: the last axis varies fastest).
pub fn point_values(axes: &[SweepAxis], mut p: usize) -> Vec<f64> {
    let mut out = vec![0.0; axes.len()];
    for (i, a) in axes.iter().enumerate().rev() {
        let n = a.values.len().max(1);
        out[i] = a.values[p % n];
        p /= n;
    }
    out
}

/// The points of shard `i` of `n` (all points when `shard` is `None`).
pub fn shard_points(total: usize, shard: Option<(usize, usize)>) -> Vec<usize> {
    match shard {
        None => (0..total).collect(),
        Some((i, n)) => (0..total).filter(|p| p % n.max(1) == i).collect(),
    }
}

/// A number as the CSV and charts write it: whole numbers without a fraction, others with
/// up to 6 decimals.
pub fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn csv_field(s: &str) -> String {
    let flat = s.replace(['\n', '\r'], " ");
    if flat.contains([',', '"']) {
        format!("\"{}\"", flat.replace('"', "\"\""))
    } else {
        flat
    }
}

/// Level columns: every level any row reports, in first-seen order over the rows.
pub fn level_columns(s: &Sweep) -> Vec<String> {
    let mut levels: Vec<String> = Vec::new();
    for r in s.rows.iter().filter_map(|r| r.result.as_ref()) {
        for (l, _) in &r.levels {
            if !levels.contains(l) {
                levels.push(l.clone());
            }
        }
    }
    levels
}

/// `sweep.csv`: `point,plan,<axis>...,total_cycles,time_us,energy_j,average_w,peak_w,
/// gflops_per_w,edp_js,<level>_busy_cycles...,bound_cycles,x_bound,bottleneck,error`,
/// one row per point and plan (`x_bound` = cycles ÷ bound, 2 decimals, empty without a
/// bound). A failed point has empty figures and its `error`.
pub fn sweep_csv(s: &Sweep) -> String {
    let levels = level_columns(s);
    let mut out = String::from("point,plan");
    for a in &s.axes {
        let _ = write!(out, ",{}", csv_field(&a.name));
    }
    out.push_str(",total_cycles,time_us");
    out.push_str(crate::energy::CSV_COLUMNS);
    for l in &levels {
        let _ = write!(out, ",{}", csv_field(&format!("{l}_busy_cycles")));
    }
    out.push_str(",bound_cycles,x_bound,bottleneck,error\n");
    for row in &s.rows {
        let _ = write!(
            out,
            "{},{}",
            row.point,
            csv_field(row.plan.as_deref().unwrap_or("-"))
        );
        for (a, v) in s.axes.iter().zip(point_values(&s.axes, row.point)) {
            let _ = write!(out, ",{}", a.show(v));
        }
        match &row.result {
            Some(r) => {
                let _ = write!(out, ",{},{}", r.total_cycles, fmt_value(r.time_us));
                out.push_str(&crate::energy::csv_cells(r.energy.as_ref()));
                for l in &levels {
                    let v = r.levels.iter().find(|(x, _)| x == l).map_or(0, |x| x.1);
                    let _ = write!(out, ",{v}");
                }
                let x = if r.bound_cycles > 0 {
                    format!("{:.2}", r.total_cycles as f64 / r.bound_cycles as f64)
                } else {
                    String::new()
                };
                let _ = write!(out, ",{},{x},{},", r.bound_cycles, csv_field(&r.bottleneck));
            }
            None => {
                out.push_str(",,");
                out.push_str(&crate::energy::csv_cells(None));
                for _ in &levels {
                    out.push(',');
                }
                // The empty bound, × bound and bottleneck, then the separator before the error.
                out.push_str(",,,,");
            }
        }
        out.push_str(&csv_field(row.error.as_deref().unwrap_or("")));
        out.push('\n');
    }
    out
}

/// `sweep.json`: the whole sweep (or shard), what `mnsim merge` reads.
pub fn sweep_json(s: &Sweep) -> String {
    let mut t = serde_json::to_string_pretty(s).unwrap_or_default();
    t.push('\n');
    t
}

/// Parses a `sweep.json`.
pub fn parse_sweep_json(text: &str) -> Result<Sweep, String> {
    let s: Sweep = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if s.schema != SWEEP_SCHEMA {
        return Err(format!(
            "schema `{}` is not `{SWEEP_SCHEMA}`; it is not a sweep of this version",
            s.schema
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep_merge::*;

    fn axes() -> Vec<SweepAxis> {
        vec![
            SweepAxis::new("a", AxisKind::Knob, vec![1.0, 2.0]),
            SweepAxis::new("b", AxisKind::Bind, vec![10.0, 20.0, 30.0]),
        ]
    }

    fn sweep(shard: Option<(usize, usize)>) -> Sweep {
        let ax = axes();
        let total = point_count(&ax).unwrap();
        let rows = shard_points(total, shard)
            .into_iter()
            .map(|p| {
                let v = point_values(&ax, p);
                SweepRow {
                    point: p,
                    plan: None,
                    result: (v[1] != 20.0).then(|| RowResult {
                        total_cycles: (v[0] * v[1]) as u64,
                        time_us: v[0] * v[1] / 1e3,
                        levels: vec![("L1B".into(), 5)],
                        bottleneck: "L1B".into(),
                        bound_cycles: 5,
                        energy: (v[0] == 1.0).then_some(crate::energy::RowEnergy {
                            energy_j: 0.5,
                            average_w: 250.0,
                            peak_w: 400.0,
                            gflops_per_w: None,
                            edp_js: 1e-6,
                        }),
                    }),
                    error: (v[1] == 20.0).then(|| "bad, \"very\"".to_string()),
                }
            })
            .collect();
        Sweep {
            schema: SWEEP_SCHEMA.into(),
            scenario: "s".into(),
            scenario_hash: "0123456789abcdef".into(),
            schedule: "overlapped".into(),
            mode: "timing".into(),
            plans: vec![None],
            axes: ax,
            shard,
            rows,
            x: None,
            metric: None,
        }
    }

    #[test]
    fn points_are_row_major() {
        let ax = axes();
        assert_eq!(point_count(&ax), Some(6));
        assert_eq!(point_values(&ax, 0), [1.0, 10.0]);
        assert_eq!(point_values(&ax, 2), [1.0, 30.0]);
        assert_eq!(point_values(&ax, 3), [2.0, 10.0]);
        assert_eq!(shard_points(6, Some((1, 4))), [1, 5]);
    }

    #[test]
    fn csv_rows_and_failed_points() {
        let csv = sweep_csv(&sweep(None));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "point,plan,a,b,total_cycles,time_us,energy_j,average_w,peak_w,gflops_per_w,edp_js,\
             L1B_busy_cycles,bound_cycles,x_bound,bottleneck,error"
        );
        assert_eq!(lines.len(), 7);
        assert_eq!(
            lines[1],
            "0,-,1,10,10,0.01,0.5,250,400,,0.000001,5,5,2.00,L1B,"
        );
        assert_eq!(lines[2], "1,-,1,20,,,,,,,,,,,,\"bad, \"\"very\"\"\"");
        // A point whose report has no energy leaves its cells empty.
        assert_eq!(lines[4], "3,-,2,10,20,0.02,,,,,,5,5,4.00,L1B,");
    }

    /// Shard folder `name` holding `s`, as `merge` reads it.
    fn file(name: &str, s: &Sweep) -> SweepFile {
        parse_sweep_file(name, &format!("{name}/sweep.json"), &sweep_json(s)).unwrap()
    }

    #[test]
    fn a_sweep_file_knows_the_line_of_each_row() {
        let f = file("s", &sweep(None));
        let text = sweep_json(&f.sweep);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(f.row_lines.len(), 6);
        for (k, &l) in f.row_lines.iter().enumerate() {
            assert_eq!(lines[l - 1].trim(), "{", "row {k}");
            assert_eq!(lines[l].trim(), format!("\"point\": {k},"), "row {k}");
        }
    }

    #[test]
    fn shards_merge_into_the_whole() {
        let whole = sweep(None);
        let parts: Vec<SweepFile> = [2, 0, 1]
            .iter()
            .map(|&i| file(&format!("s{i}"), &sweep(Some((i, 3)))))
            .collect();
        let merged = merge(&parts).unwrap();
        assert_eq!(merged, whole);
        assert_eq!(sweep_csv(&merged), sweep_csv(&whole));
        assert_eq!(sweep_json(&merged), sweep_json(&whole));
        let err = merge(&parts[..2]).unwrap_err();
        assert!(err.contains("missing shard(s) 1/3"), "{err}");
        let twice = [parts[0].clone(), parts[0].clone()];
        assert!(merge(&twice).unwrap_err().contains("given twice"));
        let back = parse_sweep_json(&sweep_json(&whole)).unwrap();
        assert_eq!(back, whole);
    }

    #[test]
    fn shards_of_different_sweeps_are_refused_naming_the_difference() {
        let parts = |f: &dyn Fn(&mut Sweep)| -> Vec<SweepFile> {
            let mut b = sweep(Some((1, 2)));
            f(&mut b);
            vec![file("a", &sweep(Some((0, 2)))), file("b", &b)]
        };
        assert!(merge(&parts(&|_| {})).is_ok());
        let err = merge(&parts(&|s| s.schedule = "sequential".into())).unwrap_err();
        assert!(
            err.contains(
                "b is a different sweep from a: schedule `sequential` here, `overlapped` there"
            ),
            "{err}"
        );
        let err = merge(&parts(&|s| s.mode = "functional".into())).unwrap_err();
        assert!(
            err.contains("mode `functional` here, `timing` there"),
            "{err}"
        );
        let err = merge(&parts(&|s| s.scenario_hash = "ffffffffffffffff".into())).unwrap_err();
        assert!(
            err.contains("the scenario's text (or its machine file) differs"),
            "{err}"
        );
        let err = merge(&parts(&|s| s.axes[0].values[0] = 3.0)).unwrap_err();
        assert!(err.contains("swept knobs or values differ"), "{err}");
    }
}
