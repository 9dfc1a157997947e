//! A plan planned where it runs: `mnsim sweep --replan` plans every plan that leaves
//! layouts `Any` at each point (its knobs and bindings), as `mnsim run` plans an
//! imported graph's `auto`: the planner within [`PLAN_WORK`] and no time limit, so
//! the same point gives the same plan on every machine and at any load.

use super::{PLAN_TOP, PLAN_WORK, is_imported, plan_auto, take_plan};
use crate::scenario::{Scenario, Source};
use miette::{Report, miette};
use std::collections::BTreeMap;

/// Plans plan `plan` of `sc` with knobs `sets` and bindings `binds`, and writes the
/// choice into the scenario; returns a line saying what happened. `auto` of an
/// imported graph is [`plan_auto`] (the default layouts when the planner finds none);
/// another plan the planner cannot fill is an error. The Relayouts a plan needs are
/// added to the program ([`take_plan`]).
pub fn plan_open(
    sc: &mut Scenario,
    src: &mut Source,
    plan: &str,
    sets: &[(String, f64)],
    binds: &BTreeMap<String, u64>,
) -> Result<String, Report> {
    if plan == "auto" && is_imported(src) {
        return Ok(plan_auto(sc, src, sets, binds));
    }
    let opts = crate::plan::PlanOptions {
        search: crate::plan::search::Options {
            time_limit: None,
            work_limit: Some(PLAN_WORK),
            top: PLAN_TOP,
            ..Default::default()
        },
        ..Default::default()
    };
    let o = crate::plan::plan_with(sc, src, plan, sets, binds, &opts, &mut |_, _| {})?;
    let best = o.best.first().ok_or_else(|| {
        miette!(
            "error: {}: the planner found no runnable plan for `{plan}`",
            src.path
        )
    })?;
    take_plan(sc, src, plan, best);
    Ok(format!(
        "planned the {} layouts of plan `{plan}` ({} assignments evaluated{}): {} cycles",
        best.layouts.len(),
        o.evaluated,
        match best.inserted.len() {
            0 => String::new(),
            n => format!(", {n} Relayout(s) added to the program"),
        },
        best.total_cycles
    ))
}
