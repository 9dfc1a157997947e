//! Plans of a scenario side by side, ranked by simulated cycles.

use crate::energy::{Objective, human_joules};
use crate::model::{OpReport, Report};
use crate::rows::plan_name;
use crate::text::{Col, Nums, Table, num, thousands, verified_mark};
use serde_json::{Value, json};

/// The value of `schema` in [`compare_json`]'s output.
pub const COMPARE_SCHEMA: &str = "mnsim.compare/1";

/// `reports` in rank order: fewest total cycles first, ties by plan name (a report without a
/// plan sorts as `–`), then by input order.
pub(crate) fn ranked(reports: &[Report]) -> Vec<&Report> {
    ranked_by(reports, Objective::Cycles)
}

/// `reports` in rank order by an objective (fewest cycles, joules or joule-seconds first),
/// ties by cycles, then plan name, then input order.
pub(crate) fn ranked_by(reports: &[Report], by: Objective) -> Vec<&Report> {
    let mut v: Vec<&Report> = reports.iter().collect();
    v.sort_by(|a, b| {
        by.of(a)
            .total_cmp(&by.of(b))
            .then(a.total_cycles.cmp(&b.total_cycles))
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
/// (`× fastest`), speedup over the slowest plan (`speedup`), cycles as a multiple of the
/// bound (`× bound`), the bottleneck (see [`Report::bottleneck_name`]) and verification
/// (`✓`, `✗`, `–`).
pub fn compare_table(reports: &[Report]) -> String {
    compare_table_by(reports, Objective::Cycles)
}

/// [`compare_table`] ranked by `by` (`compare --by cycles|energy|edp`), with each plan's
/// joules (`energy`).
pub fn compare_table_by(reports: &[Report], by: Objective) -> String {
    if reports.is_empty() {
        return "no plans to compare\n".to_string();
    }
    let order = ranked_by(reports, by);
    let fastest = order[0].total_cycles;
    let slowest = order[order.len() - 1].total_cycles;
    let mut table = Table::new(
        vec![
            Col::right("rank"),
            Col::left("plan"),
            Col::right("cycles"),
            Col::right("× fastest"),
            Col::right("speedup"),
            Col::right("× bound"),
            Col::right("energy"),
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
            crate::rows::times_bound(r).into(),
            r.energy
                .as_ref()
                .map_or("–".to_string(), |e| human_joules(e.total_j))
                .into(),
            r.bottleneck_name().unwrap_or("–").into(),
            verified_mark(r.verified).into(),
        ]);
    }
    let w = table.widths();
    let count = match reports.len() {
        1 => "1 plan".to_string(),
        n => format!("{n} plans"),
    };
    let mut lines = vec![format!(
        "{} on {}: {count} by {}",
        distinct(reports, |r| &r.scenario),
        distinct(reports, |r| &r.machine),
        match by {
            Objective::Cycles => "total cycles",
            Objective::Energy => "energy",
            Objective::Edp => "energy × delay",
        },
    )];
    lines.push(table.header(&w, false));
    lines.extend((0..order.len()).map(|i| table.row(i, &w, false)));
    lines.push(
        "  × fastest: cycles / fastest plan's cycles · speedup: slowest plan's cycles / cycles · × bound: cycles / the bound".into(),
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
///             "ratio_vs_fastest": 1.0, "bottleneck_level": "DRAM", "bottleneck": "Group down",
///             "bound_cycles": 41000, "times_bound": 1.27, "verified": true}, ...]}
/// ```
///
/// `plans` is in rank order (as [`compare_table`]). `scenario` and `machine` are the first
/// report's (`null` without reports); `plan` is `null` for a report without a plan; ratios
/// that are not finite (a plan of zero cycles beside a non-zero one) are `null`. `ops` is
/// the op-by-op comparison ([`crate::op_diff_json`]).
pub fn compare_json(reports: &[Report]) -> Value {
    compare_json_by(reports, Objective::Cycles)
}

/// [`compare_json`] ranked by `by`; each plan also gives `energy_j` and `edp_js` (joules ×
/// seconds), and the document `by`.
pub fn compare_json_by(reports: &[Report], by: Objective) -> Value {
    let order = ranked_by(reports, by);
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
                "bottleneck": r.bottleneck_name(),
                "bound_cycles": r.bound_cycles,
                "times_bound": r.times_bound(),
                "verified": r.verified,
                "energy_j": r.energy.as_ref().map(|e| e.total_j),
                "edp_js": r.energy.as_ref().map(|_| Objective::Edp.of(r)),
            })
        })
        .collect();
    json!({
        "schema": COMPARE_SCHEMA,
        "by": by.name(),
        "scenario": reports.first().map(|r| r.scenario.as_str()),
        "machine": reports.first().map(|r| r.machine.as_str()),
        "plans": plans,
        "ops": crate::op_diff::op_diff_json(reports),
    })
}

/// How one op of a plan compares with the same op of another plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpChange {
    /// Same cycles, bottleneck and layout.
    Same,
    /// In both plans, with different cycles, bottleneck or layout.
    Changed,
    /// Only in the first plan (an op its layouts needed: a Reduce of partial sums, an
    /// inserted Relayout).
    OnlyA,
    /// Only in the second plan.
    OnlyB,
}

/// One row of an op-by-op comparison.
#[derive(Clone, Copy, Debug)]
pub struct OpPair<'a> {
    pub a: Option<&'a OpReport>,
    pub b: Option<&'a OpReport>,
    pub change: OpChange,
}

/// The ops of two reports of one program, aligned: ops are matched by (op, tensor) in
/// program order (a longest common subsequence), so the ops one plan has and the other
/// does not (Reduces of partial sums, inserted Relayouts) stand out.
pub fn op_pairs<'a>(a: &'a Report, b: &'a Report) -> Vec<OpPair<'a>> {
    let key = |o: &OpReport| (o.op.clone(), o.tensor.clone());
    let (n, m) = (a.ops.len(), b.ops.len());
    // lcs[i][j]: longest common subsequence of a.ops[i..] and b.ops[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if key(&a.ops[i]) == key(&b.ops[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = Vec::with_capacity(n.max(m));
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && key(&a.ops[i]) == key(&b.ops[j]) {
            let (x, y) = (&a.ops[i], &b.ops[j]);
            let same = x.cycles == y.cycles && x.bottleneck == y.bottleneck && x.layout == y.layout;
            out.push(OpPair {
                a: Some(x),
                b: Some(y),
                change: if same {
                    OpChange::Same
                } else {
                    OpChange::Changed
                },
            });
            i += 1;
            j += 1;
        } else if j >= m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(OpPair {
                a: Some(&a.ops[i]),
                b: None,
                change: OpChange::OnlyA,
            });
            i += 1;
        } else {
            out.push(OpPair {
                a: None,
                b: Some(&b.ops[j]),
                change: OpChange::OnlyB,
            });
            j += 1;
        }
    }
    out
}

/// The pairs that differ, largest difference first: by the cycles one plan takes more
/// than the other (an op only one plan has: its cycles), ties in program order.
pub(crate) fn by_size<'a>(pairs: &[OpPair<'a>]) -> Vec<OpPair<'a>> {
    let mut v: Vec<OpPair> = pairs
        .iter()
        .copied()
        .filter(|p| p.change != OpChange::Same)
        .collect();
    v.sort_by_key(|p| {
        let (a, b) = (p.a.map_or(0, |x| x.cycles), p.b.map_or(0, |x| x.cycles));
        std::cmp::Reverse(a.abs_diff(b))
    });
    v
}

/// Signed difference `b − a` with thousands separators (`+1,024`, `−512`, `0`).
pub(crate) fn delta(a: u64, b: u64) -> String {
    match b.cmp(&a) {
        std::cmp::Ordering::Greater => format!("+{}", thousands(b - a)),
        std::cmp::Ordering::Less => format!("−{}", thousands(a - b)),
        std::cmp::Ordering::Equal => "0".into(),
    }
}

/// What differs in a row, in words.
pub(crate) fn what_differs(p: &OpPair) -> String {
    match (p.change, p.a, p.b) {
        (OpChange::OnlyA, Some(_), _) => "only in the first plan".into(),
        (OpChange::OnlyB, _, Some(_)) => "only in the second plan".into(),
        (_, Some(x), Some(y)) => {
            let mut v = Vec::new();
            if x.layout != y.layout {
                v.push("layout");
            }
            if x.bottleneck != y.bottleneck {
                v.push("bottleneck");
            }
            if x.cycles != y.cycles {
                v.push("cycles");
            }
            v.join(", ")
        }
        _ => String::new(),
    }
}

/// Where plan `b` differs from plan `a`, op by op, as a terminal table: the ops that
/// differ (cycles of each, the difference, each bottleneck) and the ops only one plan has,
/// the largest difference first; then how many ops are the same.
pub fn op_diff_table(a: &Report, b: &Report) -> String {
    let pairs = op_pairs(a, b);
    let (pa, pb) = (plan_name(a), plan_name(b));
    let mut table = Table::new(
        vec![
            Col::left("op"),
            Col::right("A cycles"),
            Col::right("B cycles"),
            Col::right("Δ"),
            Col::left("bottleneck"),
            Col::left("differs in"),
        ],
        2,
        2,
    );
    let (same, same_cycles) = pairs
        .iter()
        .filter(|p| p.change == OpChange::Same)
        .fold((0usize, 0u64), |(n, c), p| {
            (n + 1, c + p.a.map_or(0, |o| o.cycles))
        });
    for p in &by_size(&pairs) {
        let o = p.a.or(p.b).expect("one side");
        let ca = p.a.map_or(0, |x| x.cycles);
        let cb = p.b.map_or(0, |x| x.cycles);
        let bott = match (p.a, p.b) {
            (Some(x), Some(y)) if x.bottleneck != y.bottleneck => {
                format!("{} → {}", x.bottleneck, y.bottleneck)
            }
            _ => o.bottleneck.clone(),
        };
        table.push(vec![
            format!("{} {}", o.op, o.tensor).into(),
            p.a.map_or("–".into(), |x| thousands(x.cycles)).into(),
            p.b.map_or("–".into(), |x| thousands(x.cycles)).into(),
            delta(ca, cb).into(),
            bott.into(),
            what_differs(p)
                .replace("the first plan", "A")
                .replace("the second plan", "B")
                .into(),
        ]);
    }
    // No name is cut: the table is as wide as its contents.
    let mut lines = vec![format!(
        "op by op, B = {pb} against A = {pa}: {} → {} cycles ({})",
        thousands(a.total_cycles),
        thousands(b.total_cycles),
        delta(a.total_cycles, b.total_cycles)
    )];
    if !table.rows.is_empty() {
        let w = table.widths();
        lines.push(table.header(&w, false));
        lines.extend((0..table.rows.len()).map(|i| table.row(i, &w, false)));
    }
    lines.push(format!(
        "  {same} op{} the same ({} cycles)",
        if same == 1 { "" } else { "s" },
        thousands(same_cycles)
    ));
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

/// Every plan against the fastest, op by op (see [`op_diff_table`]); empty with fewer
/// than two plans.
pub fn compare_ops(reports: &[Report]) -> String {
    let order = ranked(reports);
    let Some((first, rest)) = order.split_first() else {
        return String::new();
    };
    rest.iter()
        .map(|r| op_diff_table(first, r))
        .collect::<Vec<_>>()
        .join("\n")
}
