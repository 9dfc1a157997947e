//! `mnsim check S.ron`: load and resolve every plan; list the tree Reduces a run would
//! insert (found by a timing run), nothing else runs.

use super::run::ScenarioArgs;
use clap::Args;
use miette::{Report, miette};
use mnsim_sim::scenario;

#[derive(Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub s: ScenarioArgs,
    /// Check only this plan (default: every plan).
    #[arg(long)]
    pub plan: Option<String>,
    /// Print the result as one JSON object: {"scenario", "ok", "plans": [{"plan", "ok",
    /// "ops", "tensors", "machine", "inserted_reduces": [{"after", "tensor", "level"}],
    /// "warnings"} or {"plan", "ok": false, "error"}]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: CheckArgs) -> Result<(), Report> {
    let sets = scenario::parse_sets(&a.s.sets)?;
    let binds = scenario::parse_binds(&a.s.binds)?;
    let (sc, src) = a.s.load()?;
    let plans = match &a.plan {
        Some(p) => vec![Some(p.clone())],
        None => scenario::plans_to_run(&sc),
    };
    if a.json {
        return json(&sc, &src, &plans, &sets, &binds);
    }
    let mut failed = 0usize;
    let mut warned: Vec<String> = Vec::new();
    // An error outside the plans (a shape, a knob) is the same for every plan: shown once.
    let mut shown: Vec<(String, String)> = Vec::new();
    for plan in &plans {
        let label = match plan {
            Some(p) => format!("plan {p}"),
            None => "no plan".to_string(),
        };
        match scenario::resolve(&sc, &src, plan.as_deref(), &sets, &binds) {
            Ok(r) => {
                outln!(
                    "ok  {label}: {} ops, {} tensors, machine {}",
                    r.ops.len(),
                    r.tensors.len(),
                    r.machine.name
                );
                for i in inserted(&r) {
                    outln!(
                        "    + Reduce of `{}` over {} after op {} (inserted: partial sums)",
                        i.tensor,
                        i.level,
                        i.after
                    );
                }
                for w in r.warnings {
                    if !warned.contains(&w) {
                        eprintln!("warning: {w}");
                        warned.push(w);
                    }
                }
            }
            Err(report) => {
                failed += 1;
                if plans.len() == 1 {
                    return Err(report);
                }
                let msg = report.to_string();
                match shown.iter().find(|(m, _)| *m == msg) {
                    Some((_, first)) => eprintln!("error: {label}: the same error as {first}"),
                    None => {
                        eprintln!("{report:?}");
                        shown.push((msg, label));
                    }
                }
            }
        }
    }
    if failed > 0 {
        return Err(miette!(
            "error: {failed} of {} plans of {} have errors",
            plans.len(),
            src.path
        ));
    }
    Ok(())
}

/// The tree Reduces a run of `r` inserts after kernels whose outputs hold partial sums
/// (`auto_reduce`, or a `ReduceAxes` spanning levels): they are ops of their own, so check
/// lists them. Found by a timing run of the plan, when it has one to find (nothing
/// partial to insert, a layout left to the planner, or a run that stops: none listed).
fn inserted(r: &scenario::Resolved) -> Vec<mnsim_sim::run::InsertedReduce> {
    let may = r.auto_reduce
        || r.ops
            .iter()
            .any(|o| matches!(o.op, scenario::Op::ReduceAxes { .. }));
    let bound = r
        .ops
        .iter()
        .all(|o| !matches!(o.layout, Some(scenario::LayoutRef::Any(_))));
    if !may || !bound {
        return Vec::new();
    }
    let mut t = r.clone();
    t.mode = scenario::Mode::Timing;
    t.verify = false;
    mnsim_sim::run::run(&t)
        .map(|o| o.inserted)
        .unwrap_or_default()
}

/// `check --json`: every plan's outcome in one object; exit non-zero when one failed.
fn json(
    sc: &scenario::Scenario,
    src: &scenario::Source,
    plans: &[Option<String>],
    sets: &[(String, f64)],
    binds: &std::collections::BTreeMap<String, u64>,
) -> Result<(), Report> {
    let mut out = Vec::new();
    let mut failed = 0usize;
    for plan in plans {
        out.push(
            match scenario::resolve(sc, src, plan.as_deref(), sets, binds) {
                Ok(r) => serde_json::json!({
                    "plan": plan,
                    "ok": true,
                    "ops": r.ops.len(),
                    "tensors": r.tensors.len(),
                    "machine": r.machine.name,
                    "inserted_reduces": inserted(&r)
                        .iter()
                        .map(|i| serde_json::json!({"after": i.after, "tensor": i.tensor, "level": i.level}))
                        .collect::<Vec<_>>(),
                    "warnings": r.warnings,
                }),
                Err(e) => {
                    failed += 1;
                    serde_json::json!({"plan": plan, "ok": false, "error": e.to_string()})
                }
            },
        );
    }
    let v = serde_json::json!({"scenario": src.path, "ok": failed == 0, "plans": out});
    outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    if failed > 0 {
        return Err(miette!(
            "error: {failed} of {} plans of {} have errors",
            plans.len(),
            src.path
        ));
    }
    Ok(())
}
