//! `mnsim plan --objective`: the plan chosen under an objective is never worse by that
//! objective than the plan chosen under another objective in the same round, nor than a
//! seed (a hand plan the planned plan agrees with). A property over every shipped scenario with a plan left
//! to the planner, with the presets' static power and without it (where energy × delay
//! weighs dynamic joules most).

use mnsim_reports::Objective;
use mnsim_sim::plan::{self, PlanOptions};
use mnsim_sim::scenario;
use std::collections::BTreeMap;
use std::path::Path;

/// The shipped scenarios with a plan that sets a variable to `Any`.
const PLANNED: [&str; 6] = [
    "plan_layernorm.ron",
    "studies/gemm_from_nothing.ron",
    "studies/matmul_softmax_from_nothing.ron",
    "graphs/MHA-GPT-inf-fp32-bs1.ron",
    "graphs/sdpa-plain-simplified-f16.ron",
    "graphs/gated-mlp-f32.ron",
];

const OBJECTIVES: [Objective; 3] = [Objective::Cycles, Objective::Energy, Objective::Edp];

/// Every `static_w_per_node` knob of `machine` at 0.
fn no_static(machine: &mnsim_arch::Machine) -> Vec<(String, f64)> {
    machine
        .levels
        .iter()
        .filter(|l| machine.energy.static_w_per_node.contains_key(&l.name))
        .map(|l| (format!("energy.static_w_per_node.{}", l.name), 0.0))
        .collect()
}

#[test]
fn the_plan_chosen_for_an_objective_is_never_worse_by_it_than_another_objectives_or_a_seed() {
    let mut failures = Vec::new();
    for file in PLANNED {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(file);
        let (sc, src) = scenario::load(&path).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        let machine = scenario::machine(&sc, &src).unwrap();
        let plans: Vec<String> = (sc.plans.iter())
            .filter(|(_, v)| v.values().any(|x| *x == scenario::PlanValue::Any))
            .map(|(k, _)| k.clone())
            .collect();
        for (label, sets) in [("static", Vec::new()), ("no static", no_static(&machine))] {
            for p in &plans {
                let outcomes: Vec<plan::Outcome> = OBJECTIVES
                    .iter()
                    .map(|&objective| {
                        let mut o = PlanOptions::default();
                        o.search.time_limit = None;
                        o.search.work_limit = Some(30_000);
                        // One round: a later round plans from the plan chosen by its
                        // own objective, so across rounds the guarantee is the seed's
                        // (docs/planner.md), checked below.
                        o.rounds = 1;
                        o.objective = objective;
                        plan::plan_with(&sc, &src, p, &sets, &BTreeMap::new(), &o, &mut |_, _| {})
                            .unwrap_or_else(|e| panic!("{file} {p}: {e:?}"))
                    })
                    .collect();
                let clock = machine.clock_ghz;
                for (x, ox) in OBJECTIVES.iter().zip(&outcomes) {
                    let b = &ox.best[0];
                    let mine = x.score(b.total_cycles, b.energy_j, clock);
                    for (y, oy) in OBJECTIVES.iter().zip(&outcomes) {
                        let c = &oy.best[0];
                        let theirs = x.score(c.total_cycles, c.energy_j, clock);
                        if mine > theirs {
                            failures.push(format!(
                                "{file} plan {p} ({label}): by {}, the {} plan scores {mine:.6e}, the {} plan {theirs:.6e} ({:+.2}%)",
                                x.name(),
                                x.name(),
                                y.name(),
                                (mine / theirs - 1.0) * 100.0
                            ));
                        }
                    }
                    for h in ox.hand_plans.iter().filter(|h| h.seed) {
                        let (Some(c), Some(j)) = (h.total_cycles, h.energy_j) else {
                            continue;
                        };
                        let theirs = x.score(c, j, clock);
                        if mine > theirs {
                            failures.push(format!(
                                "{file} plan {p} ({label}): by {}, the plan scores {mine:.6e}, the seed {} {theirs:.6e}",
                                x.name(),
                                h.plan
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
