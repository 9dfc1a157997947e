//! `mnsim plan S.ron`: choose layouts for the plan variables set to `Any`.

use super::run::ScenarioArgs;
use clap::Args;
use miette::{Report, miette};
use mnsim_sim::scenario::{self, PlanValue};

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub s: ScenarioArgs,
    /// Plan only this plan (default: every plan with an `Any` variable).
    #[arg(long)]
    pub plan: Option<String>,
}

pub fn run(a: PlanArgs) -> Result<(), Report> {
    let sets = scenario::parse_sets(&a.s.sets)?;
    let binds = scenario::parse_binds(&a.s.binds)?;
    let (sc, src) = a.s.load()?;
    let plans: Vec<String> = match &a.plan {
        Some(p) => vec![p.clone()],
        None => sc
            .plans
            .iter()
            .filter(|(_, vars)| vars.values().any(|v| *v == PlanValue::Any))
            .map(|(p, _)| p.clone())
            .collect(),
    };
    if plans.is_empty() {
        return Err(miette!(
            "error: {}: no plan sets a variable to `Any`: nothing to choose",
            src.path
        ));
    }
    for p in plans {
        let c = mnsim_sim::plan::plan(&sc, &src, &p, &sets, &binds)?;
        let counts: Vec<String> = c
            .candidates
            .iter()
            .map(|(v, n)| format!("${v}: {n}"))
            .collect();
        outln!(
            "plan {}: {} cycles (timing), {} runs over candidates {}",
            c.plan,
            c.cycles,
            c.evaluated,
            counts.join(", ")
        );
        for (v, l) in &c.layouts {
            outln!("  ${v} = {l}");
        }
        // The plan with its choices, ready to paste into the scenario.
        let mut vars: Vec<String> = Vec::new();
        for (v, val) in &sc.plans[&p] {
            let text = match (val, c.layouts.iter().find(|(x, _)| x == v)) {
                (_, Some((_, l))) => l.clone(),
                (PlanValue::Layout(l), None) => l.clone(),
                (PlanValue::Any, None) => continue,
            };
            vars.push(format!("{v:?}: {text:?}"));
        }
        outln!("  \"{}\": {{{}}},", c.plan, vars.join(", "));
    }
    Ok(())
}
