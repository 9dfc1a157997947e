//! The planner's model against the run: a hand plan as the model's assignment, and its
//! cycles both ways.

use mnsim_sim::plan::candidates::Space;
use mnsim_sim::plan::model::{Eval, LayoutId, Model};
use mnsim_sim::scenario::{self, Mode, Resolved, Source};

/// The model's assignment for a hand plan (`hres`, resolved under plan `name`): each
/// variable's layout as its first op there binds it.
pub fn hand_pick(model: &mut Model, hres: &Resolved, name: &str) -> Vec<LayoutId> {
    (0..model.vars.len())
        .map(|vi| {
            let op = mnsim_sim::program::EntityRef::new(model.vars[vi].ops[0]);
            match &hres.program.ops[op].layout {
                Some(mnsim_sim::program::LayoutRef::Bound(l)) => model.seed(vi, l),
                other => panic!("{name}: {other:?}"),
            }
        })
        .collect()
}

/// Hand plan `plan` of scenario `text` (read as file `path`) scored by the model of its
/// plan `auto` (one candidate per variable besides the plan's), and run in timing mode.
#[allow(dead_code)]
pub fn model_and_run(text: &str, path: &str, plan: &str) -> (Eval, mnsim_reports::Report) {
    let sc = scenario::parse(text, path).unwrap();
    let src = Source {
        path: path.into(),
        text: text.into(),
    };
    let res = scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default()).unwrap();
    let space = Space {
        max: 1,
        ..Space::default()
    };
    let mut model = Model::new(&res, space).unwrap();
    let hres = scenario::resolve(&sc, &src, Some(plan), &[], &Default::default()).unwrap();
    let pick = hand_pick(&mut model, &hres, plan);
    let e = model.evaluate(&pick);
    let mut run = hres.clone();
    run.mode = Mode::Timing;
    (e, mnsim_sim::run::run(&run).unwrap().report)
}
