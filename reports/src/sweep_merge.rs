//! Joining the shards of a sweep (`mnsim merge`), and the check every row of a sweep
//! passes, there and when an interrupted sweep resumes: one of the sweep's points and
//! plans, with a result or an error.

use crate::sweep::{SWEEP_SCHEMA, Sweep, SweepRow, parse_sweep_json, point_count};
use serde::Deserialize;
use std::collections::BTreeMap;

/// A plan as messages name it: `` `blog` ``, or `null` for a scenario without plans.
fn plan_name(p: &Option<String>) -> String {
    match p {
        Some(p) => format!("`{p}`"),
        None => "null".to_string(),
    }
}

/// Why `row` cannot be a row of the sweep (or shard) `s`, or `None` when it can: its
/// point is one of the sweep's (of the shard's), its plan one the sweep runs, and it has
/// a result or an error, not both.
pub fn row_problem(s: &Sweep, row: &SweepRow) -> Option<String> {
    let total = point_count(&s.axes).unwrap_or(0);
    if row.point >= total {
        return Some(format!(
            "point {} is out of range: the sweep has {total} points (0 to {})",
            row.point,
            total.saturating_sub(1)
        ));
    }
    if let Some((i, n)) = s.shard
        && row.point % n.max(1) != i
    {
        return Some(format!(
            "point {} is not a point of shard {i}/{n}",
            row.point
        ));
    }
    if !s.plans.contains(&row.plan) {
        let plans: Vec<String> = s.plans.iter().map(plan_name).collect();
        return Some(format!(
            "plan {} is not one the sweep runs ({})",
            plan_name(&row.plan),
            plans.join(", ")
        ));
    }
    match (&row.result, &row.error) {
        (Some(_), None) | (None, Some(_)) => None,
        (None, None) => Some(format!(
            "the row of point {}, plan {} has neither a result nor an error",
            row.point,
            plan_name(&row.plan)
        )),
        (Some(_), Some(_)) => Some(format!(
            "the row of point {}, plan {} has both a result and an error",
            row.point,
            plan_name(&row.plan)
        )),
    }
}

/// A `sweep.json` read for merging: the folder it names it by, the file, its sweep, and
/// the line each row begins on (1-based).
#[derive(Clone, Debug)]
pub struct SweepFile {
    /// The shard's folder, as given.
    pub name: String,
    /// The `sweep.json` file, for messages about a row.
    pub path: String,
    pub sweep: Sweep,
    pub row_lines: Vec<usize>,
}

/// The rows of a `sweep.json`, as they sit in its text.
#[derive(Deserialize)]
struct RowsAt<'a> {
    #[serde(borrow)]
    rows: Vec<&'a serde_json::value::RawValue>,
}

/// Parses the `sweep.json` of folder `name` at `path`, keeping where each row begins.
pub fn parse_sweep_file(name: &str, path: &str, text: &str) -> Result<SweepFile, String> {
    let sweep = parse_sweep_json(text)?;
    let at: RowsAt = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let row_lines = (at.rows.iter())
        .map(|r| {
            let offset = (r.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
            text[..offset.min(text.len())].matches('\n').count() + 1
        })
        .collect();
    Ok(SweepFile {
        name: name.to_string(),
        path: path.to_string(),
        sweep,
        row_lines,
    })
}

/// Joins the shards of one sweep into the whole sweep. Every shard must come from the same
/// scenario, plans and axes, the same shard count; every row must be one of its shard's
/// points and plans with a result or an error ([`row_problem`]), no point and plan may
/// come twice, and together they must hold every point and plan. A bad row is an error
/// naming its file and line.
pub fn merge(parts: &[SweepFile]) -> Result<Sweep, String> {
    let Some(first_file) = parts.first() else {
        return Err("nothing to merge: give the shards' folders".to_string());
    };
    let (first_name, first) = (&first_file.name, &first_file.sweep);
    let mut seen_shards: Vec<usize> = Vec::new();
    let mut n_shards = None;
    for f in parts {
        let (name, p) = (&f.name, &f.sweep);
        if let Some(diff) = difference(first, p) {
            return Err(format!(
                "{name} is a different sweep from {first_name}: {diff}; merge only the shards \
                 of one sweep"
            ));
        }
        let (i, n) = p.shard.unwrap_or((0, 1));
        if *n_shards.get_or_insert(n) != n {
            return Err(format!(
                "{name} is shard {i}/{n} but {first_name} is from a sweep cut into {} shards",
                n_shards.unwrap_or(1)
            ));
        }
        if seen_shards.contains(&i) {
            return Err(format!("shard {i}/{n} is given twice ({name})"));
        }
        seen_shards.push(i);
    }
    let n = n_shards.unwrap_or(1);
    let missing: Vec<String> = (0..n)
        .filter(|i| !seen_shards.contains(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing shard(s) {}", missing.join(", ")));
    }
    let rows = checked_rows(parts)?;
    Ok(Sweep {
        schema: SWEEP_SCHEMA.to_string(),
        scenario: first.scenario.clone(),
        scenario_hash: first.scenario_hash.clone(),
        schedule: first.schedule.clone(),
        mode: first.mode.clone(),
        plans: first.plans.clone(),
        axes: first.axes.clone(),
        shard: None,
        rows,
        x: first.x.clone(),
        metric: first.metric.clone(),
    })
}

/// Every row of the shards `parts` (of one sweep), checked, sorted by point and plan.
fn checked_rows(parts: &[SweepFile]) -> Result<Vec<SweepRow>, String> {
    let first = &parts[0].sweep;
    let mut at: BTreeMap<(usize, Option<String>), (&str, usize)> = BTreeMap::new();
    let mut rows: Vec<SweepRow> = Vec::new();
    for f in parts {
        for (k, row) in f.sweep.rows.iter().enumerate() {
            let line = f.row_lines.get(k).copied().unwrap_or(0);
            let bad = |problem: String| {
                format!(
                    "{}:{line}: {problem}; the shard's sweep.json was edited or damaged: run \
                     the shard again",
                    f.path
                )
            };
            if let Some(problem) = row_problem(&f.sweep, row) {
                return Err(bad(problem));
            }
            let key = (row.point, row.plan.clone());
            if let Some((p, l)) = at.get(&key) {
                return Err(bad(format!(
                    "point {}, plan {} is given twice (also at {p}:{l})",
                    row.point,
                    row.plan.as_deref().unwrap_or("null")
                )));
            }
            at.insert(key, (&f.path, line));
            rows.push(row.clone());
        }
    }
    let plan_rank = |p: &Option<String>| first.plans.iter().position(|x| x == p);
    rows.sort_by_key(|r| (r.point, plan_rank(&r.plan)));
    let total = point_count(&first.axes).unwrap_or(0);
    // Every row is one of the sweep's and none comes twice: a row short is a missing one.
    for p in 0..total {
        for plan in &first.plans {
            if !at.contains_key(&(p, plan.clone())) {
                return Err(format!(
                    "point {p}, plan {} is missing: no shard holds it (the sweep has {total} \
                     points × {} plan(s))",
                    plan.as_deref().unwrap_or("null"),
                    first.plans.len()
                ));
            }
        }
    }
    Ok(rows)
}

/// What differs between two shards' sweeps (`b` against `a`), named, or `None`.
fn difference(a: &Sweep, b: &Sweep) -> Option<String> {
    let pair = |what: &str, x: &str, y: &str| format!("{what} `{y}` here, `{x}` there");
    if a.scenario != b.scenario {
        return Some(pair("scenario", &a.scenario, &b.scenario));
    }
    if a.scenario_hash != b.scenario_hash {
        return Some(format!(
            "the scenario's text (or its machine file) differs: hash {} here, {} there",
            b.scenario_hash, a.scenario_hash
        ));
    }
    if a.schedule != b.schedule {
        return Some(pair("schedule", &a.schedule, &b.schedule));
    }
    if a.mode != b.mode {
        return Some(pair("mode", &a.mode, &b.mode));
    }
    if a.plans != b.plans {
        return Some(format!("plans {:?} here, {:?} there", b.plans, a.plans));
    }
    if a.axes != b.axes {
        return Some("the swept knobs or values differ".to_string());
    }
    None
}
