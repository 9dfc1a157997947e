//! `mnsim check S.ron`: load and resolve every plan, and run it in timing mode (no
//! element data): every check `run` makes short of moving data — the kernels' layouts,
//! the live set in LM, DRAM, streams and buffers, the report's limits — fails here with
//! the message `run` gives. Lists the tree Reduces a run inserts.

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
        return json(&sc, &src, &plans, &sets, &binds, a.plan.is_some());
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
        match check_plan(&sc, &src, plan.as_deref(), &sets, &binds, a.plan.is_some()) {
            Ok((r, inserted)) => {
                outln!(
                    "ok  {label}: {} ops, {} tensors, machine {}",
                    r.program.ops.len(),
                    r.program.tensors.len(),
                    r.machine.name
                );
                for i in inserted {
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

/// Resolves a plan and runs it in timing mode as `run --mode timing` would (the same
/// errors, with the same messages); returns it with the tree Reduces the run inserted
/// after kernels whose outputs hold partial sums. A plan that leaves layouts to the
/// planner (`Any`), which `run` skips, is only resolved unless it was asked for by name.
fn check_plan(
    sc: &scenario::Scenario,
    src: &scenario::Source,
    plan: Option<&str>,
    sets: &[(String, f64)],
    binds: &std::collections::BTreeMap<String, u64>,
    named: bool,
) -> Result<(scenario::Resolved, Vec<mnsim_sim::run::InsertedReduce>), Report> {
    let r = scenario::resolve(sc, src, plan, sets, binds)?;
    let open = (r.program.ops.values())
        .any(|o| matches!(o.layout, Some(mnsim_sim::program::LayoutRef::Any(_))));
    if open && !named {
        return Ok((r, Vec::new()));
    }
    let out = super::run::execute(sc, src, plan, &super::run::timing(&r), false)?;
    Ok((r, out.inserted))
}

/// `check --json`: every plan's outcome in one object; exit non-zero when one failed.
fn json(
    sc: &scenario::Scenario,
    src: &scenario::Source,
    plans: &[Option<String>],
    sets: &[(String, f64)],
    binds: &std::collections::BTreeMap<String, u64>,
    named: bool,
) -> Result<(), Report> {
    let mut out = Vec::new();
    let mut failed = 0usize;
    for plan in plans {
        out.push(
            match check_plan(sc, src, plan.as_deref(), sets, binds, named) {
                Ok((r, inserted)) => serde_json::json!({
                    "plan": plan,
                    "ok": true,
                    "ops": r.program.ops.len(),
                    "tensors": r.program.tensors.len(),
                    "machine": r.machine.name,
                    "inserted_reduces": inserted
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
