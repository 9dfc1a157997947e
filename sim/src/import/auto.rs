//! Planning an imported graph's plan `auto` as `run` does (within a work budget, so the
//! same plan everywhere) and writing the planner's choice, Relayouts and all, into the
//! scenario.

use crate::scenario::print::{self, Comments};
use crate::scenario::{self, Scenario, Source};
use std::collections::BTreeMap;

/// How much the planner may search an imported graph before `run` (its work budget,
/// counted by `plan::search::work`: some 1.5–4 µs a unit, 0.02–1.9 s of planning on one
/// core for the shared graphs). A budget of work, not of time, so that `run` gives the
/// same plan, and the same cycles, on every machine and at any load.
pub const PLAN_WORK: u64 = 300_000;

/// The best plans a search keeps (`mnsim plan --top`'s default): `run`, `sweep --replan`
/// and `plan` search alike, so `run` runs the plan `plan` finds (the kept plans set the
/// bar a search prunes by, so their number steers it).
pub const PLAN_TOP: usize = 3;

/// Writes planned plan `b` into plan `plan` of `sc`: its layouts, the Relayouts it
/// needs into the program before the ops that read them, and the algorithms it chose
/// into the ops that run collectives over a network. Those would run under every plan, so the other plans are then dropped (`run --plan NAME` runs the file as it
/// is), and `src`'s text becomes the scenario printed again, so that later messages
/// point at the program that runs.
pub fn take_plan(sc: &mut Scenario, src: &mut Source, plan: &str, b: &crate::plan::Planned) {
    if let Some(p) = sc.plans.get_mut(plan) {
        for (v, text) in &b.layouts {
            p.insert(v.clone(), scenario::PlanValue::Layout(text.clone()));
        }
    }
    if !b.inserted.is_empty() || !b.algorithms.is_empty() {
        sc.plans.retain(|name, _| name == plan);
        // The algorithms first: they name ops by their place before the inserts.
        for c in &b.algorithms {
            if let Some(op) = sc.program.get_mut(c.op) {
                op.set_algorithm(Some(c.algorithm));
            }
        }
        sc.insert_ops(crate::plan::inserted_ops(&b.inserted));
        src.text = print::print(sc, &Comments::default());
    }
}

/// Plans plan `auto` of an imported graph with the planner (`crate::plan`, seeded by
/// plan `default`, within [`PLAN_WORK`] and no time limit: the same plan on every
/// machine and at any load) and writes its choice into the scenario: the layouts into
/// plan `auto`, and the Relayouts it needs into the program, before the ops that read
/// them (`src`'s text is then the scenario printed again, so that later messages point
/// at the program that runs; the other plans, which would run those Relayouts too, are
/// dropped: `run --plan NAME` runs one of them on the import as it is). When the planner finds no runnable plan, `auto` takes the
/// default layouts. Returns a line saying what happened.
pub fn plan_auto(
    sc: &mut Scenario,
    src: &mut Source,
    sets: &[(String, f64)],
    binds: &BTreeMap<String, u64>,
) -> String {
    plan_auto_with(sc, src, sets, binds, &mut |_, _| {})
}

/// [`plan_auto`], calling `progress(evaluated, planned)` during the search.
pub fn plan_auto_with(
    sc: &mut Scenario,
    src: &mut Source,
    sets: &[(String, f64)],
    binds: &BTreeMap<String, u64>,
    progress: &mut dyn FnMut(u64, u64),
) -> String {
    let opts = crate::plan::PlanOptions {
        search: crate::plan::search::Options {
            time_limit: None,
            work_limit: Some(PLAN_WORK),
            top: PLAN_TOP,
            ..Default::default()
        },
        ..Default::default()
    };
    let start = std::time::Instant::now();
    let result = crate::plan::plan_with(sc, src, "auto", sets, binds, &opts, progress);
    let secs = start.elapsed().as_secs_f64();
    let fallback = |sc: &mut Scenario| {
        let default = sc.plans.get("default").cloned().unwrap_or_default();
        if let Some(p) = sc.plans.get_mut("auto") {
            *p = default;
        }
    };
    match result {
        Ok(o) => match o.best.first() {
            Some(b) => {
                take_plan(sc, src, "auto", b);
                format!(
                    "planned the {} layouts of plan `auto` in {secs:.2} s{} ({} assignments evaluated{}){}: {} cycles",
                    b.layouts.len(),
                    match o.rounds.len() {
                        0 | 1 => String::new(),
                        n => format!(" and {n} rounds"),
                    },
                    o.evaluated,
                    if o.timed_out {
                        ", time limit reached"
                    } else if o.work_spent {
                        ", work budget spent"
                    } else {
                        ""
                    },
                    match b.inserted.len() {
                        0 => String::new(),
                        1 => ", with the Relayout it needs added to the program (other plans: --plan NAME)".to_string(),
                        n => format!(", with the {n} Relayouts it needs added to the program (other plans: --plan NAME)"),
                    },
                    b.total_cycles
                )
            }
            None => {
                fallback(sc);
                format!(
                    "the planner found no runnable plan in {secs:.2} s; plan `auto` takes the default layouts"
                )
            }
        },
        Err(e) => {
            fallback(sc);
            let first = e.to_string().lines().next().unwrap_or("").to_string();
            format!(
                "the planner found no runnable plan in {secs:.2} s ({first}); plan `auto` takes the default layouts"
            )
        }
    }
}
