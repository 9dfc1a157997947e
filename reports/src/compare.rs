//! Plans of a scenario side by side, ranked by simulated cycles.

use crate::model::Report;
use crate::rows::plan_name;
use crate::text::{Col, Nums, Table, num, thousands, verified_mark};
use serde_json::{Value, json};

/// The value of `schema` in [`compare_json`]'s output.
pub const COMPARE_SCHEMA: &str = "mnsim.compare/1";

/// `reports` in rank order: fewest total cycles first, ties by plan name (a report without a
/// plan sorts as `–`), then by input order.
pub(crate) fn ranked(reports: &[Report]) -> Vec<&Report> {
    let mut v: Vec<&Report> = reports.iter().collect();
    v.sort_by(|a, b| {
        a.total_cycles
            .cmp(&b.total_cycles)
            .then_with(|| plan_name(a).cmp(plan_name(b)))
    });
    v
}

/// `num / den` as a ratio, `None` when it is not finite (a zero-cycle denominator with a
/// non-zero numerator); `0 / 0` is 1.
pub(crate) fn ratio(num: u64, den: u64) -> Option<f64> {
    match (num, den) {
        (0, 0) => Some(1.0),
        (_, 0) => None,
        _ => Some(num as f64 / den as f64),
    }
}

/// A ratio with two decimals (`1.35×`), compact from 1000 on (`18.45E×`), `–` when not finite.
pub(crate) fn times(x: Option<f64>) -> String {
    match x {
        Some(x) if x < 1000.0 => format!("{x:.2}×"),
        Some(x) => format!("{}×", num(x.round() as u64, Nums::Compact)),
        None => "–".to_string(),
    }
}

/// Distinct values of `f` over `reports`, in order of first appearance, joined by `, `.
fn distinct(reports: &[Report], f: impl Fn(&Report) -> &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for r in reports {
        if !seen.contains(&f(r)) {
            seen.push(f(r));
        }
    }
    seen.join(", ")
}

/// Plans ranked by total cycles, fastest first (ties broken by plan name), as a terminal table
/// of at most 100 columns: rank, plan, cycles, cycles as a multiple of the fastest plan's
/// (`× fastest`), speedup over the slowest plan (`speedup`), the level that bounded the most
/// cycles (see [`Report::bottleneck_level`]) and verification (`✓`, `✗`, `–`).
pub fn compare_table(reports: &[Report]) -> String {
    if reports.is_empty() {
        return "no plans to compare\n".to_string();
    }
    let order = ranked(reports);
    let fastest = order[0].total_cycles;
    let slowest = order[order.len() - 1].total_cycles;
    let mut table = Table::new(
        vec![
            Col::right("rank"),
            Col::left("plan"),
            Col::right("cycles"),
            Col::right("× fastest"),
            Col::right("speedup"),
            Col::left("bottleneck"),
            Col::left("verified"),
        ],
        2,
        2,
    );
    for (i, r) in order.iter().enumerate() {
        table.push(vec![
            (i + 1).to_string().into(),
            plan_name(r).into(),
            thousands(r.total_cycles).into(),
            times(ratio(r.total_cycles, fastest)).into(),
            times(ratio(slowest, r.total_cycles)).into(),
            r.bottleneck_level().unwrap_or("–").into(),
            verified_mark(r.verified).into(),
        ]);
    }
    let w = table.widths();
    let count = match reports.len() {
        1 => "1 plan".to_string(),
        n => format!("{n} plans"),
    };
    let mut lines = vec![format!(
        "{} on {}: {count} by total cycles",
        distinct(reports, |r| &r.scenario),
        distinct(reports, |r| &r.machine),
    )];
    lines.push(table.header(&w, false));
    lines.extend((0..order.len()).map(|i| table.row(i, &w, false)));
    lines.push(
        "  × fastest: cycles / fastest plan's cycles · speedup: slowest plan's cycles / cycles"
            .into(),
    );
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

/// The ranking as JSON, schema `mnsim.compare/1`:
///
/// ```json
/// {"schema": "mnsim.compare/1", "scenario": "mlp block", "machine": "mncore2",
///  "plans": [{"plan": "cols", "total_cycles": 52000, "rank": 1, "speedup_vs_slowest": 1.34,
///             "ratio_vs_fastest": 1.0, "bottleneck_level": "DRAM", "verified": true}, ...]}
/// ```
///
/// `plans` is in rank order (as [`compare_table`]). `scenario` and `machine` are the first
/// report's (`null` without reports); `plan` is `null` for a report without a plan; ratios
/// that are not finite (a plan of zero cycles beside a non-zero one) are `null`.
pub fn compare_json(reports: &[Report]) -> Value {
    let order = ranked(reports);
    let fastest = order.first().map_or(0, |r| r.total_cycles);
    let slowest = order.last().map_or(0, |r| r.total_cycles);
    let plans: Vec<Value> = order
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!({
                "plan": r.plan,
                "total_cycles": r.total_cycles,
                "rank": i + 1,
                "speedup_vs_slowest": ratio(slowest, r.total_cycles),
                "ratio_vs_fastest": ratio(r.total_cycles, fastest),
                "bottleneck_level": r.bottleneck_level(),
                "verified": r.verified,
            })
        })
        .collect();
    json!({
        "schema": COMPARE_SCHEMA,
        "scenario": reports.first().map(|r| r.scenario.as_str()),
        "machine": reports.first().map(|r| r.machine.as_str()),
        "plans": plans,
    })
}
