//! The planner (`mnsim plan`): chooses layouts for the plan variables a plan leaves to
//! it (`Any`). See `docs/planner.md`.
//!
//! - [`candidates`]: the layouts a variable may take;
//! - [`model`]: the program resolved once, evaluated for an assignment of layouts with
//!   per-op costs memoised by (op, operand layouts), relayouts inserted where a kernel
//!   needs them;
//! - [`search`]: seeds (the file's hand plans), exhaustive on small spaces, coordinate
//!   descent with restarts on large ones, under a time limit;
//! - this module: the whole, [`plan_with`]; `passes`: its passes (the hand plans and
//!   their runs, pruning, the starts, the search, then the confirming timing runs of the
//!   best assignments, compared with the hand plans);
//! - [`write`]: adding the chosen plan to the scenario file.

pub mod boards;
pub mod candidates;
pub mod cost;
mod hot;
pub mod model;
mod passes;
pub mod rounds;
pub mod search;
pub mod spread;
mod variants;
pub mod write;

use crate::engine::Mode;
use crate::program::{EntityRef as _, LayoutRef, OpKind, ProgramOp, TensorId};
use crate::run::RunError;
use crate::scenario::{self, PlanValue, Resolved, Scenario, Source};
use candidates::Space;
use mnsim_arch::machine::Algorithm;
use mnsim_arch::{DType, Machine};
use model::Model;
pub use search::Options;
use std::collections::BTreeMap;

/// What the planner chose for one plan (the result of [`plan`]).
#[derive(Clone, Debug)]
pub struct Choice {
    pub plan: String,
    /// Plan variable → chosen layout (canonical), in program order.
    pub layouts: Vec<(String, String)>,
    /// Total cycles of the plan with these layouts (a timing run).
    pub cycles: u64,
    /// Candidates per variable, and assignments evaluated.
    pub candidates: Vec<(String, usize)>,
    pub evaluated: usize,
    /// Relayouts the plan needs that the program does not have.
    pub inserted: Vec<InsertedOp>,
}

/// A Relayout to insert into the program before op `before` (program index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsertedOp {
    pub before: usize,
    pub tensor: TensorId,
    /// The tensor's name, for reports.
    pub tensor_name: String,
    pub layout: String,
    pub cycles: u64,
    /// The algorithm the planner chose for its collective over a network, when it runs
    /// one (docs/planner.md, collectives).
    pub algorithm: Option<Algorithm>,
}

/// The algorithm the planner chose for the collective a program op runs over a network:
/// a Reduce's, a Relayout's or Broadcast's, or a kernel's tree Reduces' (the op's
/// `algorithm:`, docs/planner.md, collectives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChosenAlgorithm {
    /// The op, by its position in the program as written.
    pub op: usize,
    pub algorithm: Algorithm,
    /// Whether it is what the op runs without naming one (the network's own).
    pub networks_own: bool,
}

/// `inserted` as scenario ops, each with the index of the op it goes before
/// ([`crate::scenario::Scenario::insert_ops`]).
pub fn inserted_ops(inserted: &[InsertedOp]) -> Vec<(usize, crate::scenario::Op)> {
    inserted
        .iter()
        .map(|i| {
            let op = crate::scenario::Op::Relayout {
                tensor: i.tensor_name.clone(),
                layout: i.layout.clone(),
                out: None,
                buffers: None,
                algorithm: i.algorithm.map(crate::scenario::AlgorithmName),
            };
            (i.before, op)
        })
        .collect()
}

/// One planned assignment, confirmed by a timing run.
#[derive(Clone, Debug)]
pub struct Planned {
    pub layouts: Vec<(String, String)>,
    pub inserted: Vec<InsertedOp>,
    /// Total cycles of the timing run.
    pub total_cycles: u64,
    /// Joules of the timing run (docs/model.md, energy).
    pub energy_j: f64,
    /// Cycles per program op (kernels with their Reduces and inserted Relayouts).
    pub op_cycles: Vec<u64>,
    /// The algorithms it chose for the program's collectives over networks, in program
    /// order (the inserted Relayouts' are theirs).
    pub algorithms: Vec<ChosenAlgorithm>,
}

/// A hand plan of the file and its cycles (or why it does not run).
#[derive(Clone, Debug)]
pub struct HandPlan {
    pub plan: String,
    pub total_cycles: Option<u64>,
    /// Joules of its timing run.
    pub energy_j: Option<f64>,
    pub error: Option<String>,
    /// Whether it agrees with the planned plan on every fixed variable (then it is a
    /// seed, and the planned plan is never slower).
    pub seed: bool,
}

/// Everything a planning run found.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub plan: String,
    /// Each round's best plan and what it took (docs/planner.md, rounds): the first
    /// planning, then one per planning again from the best plan with its Relayouts in
    /// the program.
    pub rounds: Vec<rounds::Round>,
    /// On many boards, the one-board plan that seeded the search (`boards.rs`).
    pub one_board: Option<boards::OneBoard>,
    /// What the plans are ranked by.
    pub objective: mnsim_reports::Objective,
    /// Best first; `best[0]` is the choice.
    pub best: Vec<Planned>,
    pub hand_plans: Vec<HandPlan>,
    /// Candidates per variable after pruning, and how many pruning dropped.
    pub candidates: Vec<(String, usize)>,
    pub pruned: usize,
    pub method: &'static str,
    pub evaluated: u64,
    /// Evaluations decided without placing their tasks: their busiest resource, or how
    /// far a failing one got, proved them no better than what the search keeps.
    pub bounded: u64,
    /// Ops measured by the engine (memo misses).
    pub measured: u64,
    /// The work the planning did, by kind (see [`search::work`]).
    pub work: model::WorkDone,
    pub space: u128,
    pub complete: bool,
    pub timed_out: bool,
    /// Whether the work budget (`search::Options::work_limit`) stopped the search.
    pub work_spent: bool,
    /// Seconds of the search proper (after the hand plans and the joint seeds).
    pub seconds: f64,
    /// Per variable, how many of its candidates some evaluated assignment gave it.
    pub tried: Vec<usize>,
    /// Seconds of the whole planning (resolution, candidates, hand plans, search and
    /// the confirming timing runs).
    pub total_seconds: f64,
    /// The program's bound (`crate::bound`): the fewest cycles any layout could give,
    /// and what sets them.
    pub bound_cycles: u64,
    pub bound_resource: String,
}

impl Outcome {
    /// Assignments evaluated per second of planning: every evaluation (joint seeds and
    /// search, op costs included) over the whole planning's seconds.
    pub fn rate(&self) -> f64 {
        if self.total_seconds > 0.0 {
            self.evaluated as f64 / self.total_seconds
        } else {
            0.0
        }
    }
}

/// Planner options: the candidate space and the search.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    pub space: Space,
    pub search: Options,
    /// What the search minimises and the confirmed plans are ranked by (`--objective`).
    pub objective: mnsim_reports::Objective,
    /// Rounds at most (`--rounds`, docs/planner.md, rounds): 1 plans once; each more
    /// plans again from the best plan, its Relayouts written into the program, while
    /// that gains.
    pub rounds: usize,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            space: Space::default(),
            search: Options::default(),
            objective: mnsim_reports::Objective::default(),
            rounds: rounds::ROUNDS,
        }
    }
}

/// Candidate layouts (canonical text) of a tensor of `dims` and `dtype` on `m`, in the
/// default space, as for a tensor no contraction reads or writes (no padded shape).
pub fn candidates(m: &Machine, dims: &[u64], dtype: DType, implicit_pad: bool) -> Vec<String> {
    candidates::generate(m, dims, dtype, implicit_pad, Space::default(), false)
        .into_iter()
        .map(|c| c.text())
        .collect()
}

/// Joint seeds kept per kernel (the beam's width, `model::Model::joint_seeds`).
pub const JOINT_WIDTH: usize = 4;

/// Search time of [`plan`].
pub const PLAN_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Plans `plan` with the default space and a search of at most [`PLAN_TIME_LIMIT`]: fills
/// every `Any` variable. Errors if the plan has none, or if no assignment runs. The choice
/// is the fastest confirmed plan that needs no inserted Relayout (its layouts alone make
/// the program run), else the fastest. (Kept for callers; [`plan_with`] says more.)
pub fn plan(
    sc: &Scenario,
    src: &Source,
    plan: &str,
    sets: &[(String, f64)],
    binds: &BTreeMap<String, u64>,
) -> Result<Choice, miette::Report> {
    let mut opts = PlanOptions::default();
    opts.search.time_limit = Some(PLAN_TIME_LIMIT);
    let o = plan_with(sc, src, plan, sets, binds, &opts, &mut |_, _| {})?;
    let b = o
        .best
        .iter()
        .find(|p| p.inserted.is_empty())
        .unwrap_or(&o.best[0]);
    Ok(Choice {
        plan: o.plan.clone(),
        layouts: b.layouts.clone(),
        cycles: b.total_cycles,
        candidates: o.candidates.clone(),
        evaluated: o.evaluated as usize,
        inserted: b.inserted.clone(),
    })
}

/// The plans of `sc` that set no variable to `Any`.
fn hand_plan_names(sc: &Scenario) -> Vec<String> {
    sc.plans
        .iter()
        .filter(|(_, v)| v.values().all(|x| *x != PlanValue::Any))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Timing runs of resolved programs on one measuring engine (its memos carry from one
/// run to the next: a Load's and a Reduce's charge, a walk, depend on nothing else it
/// holds). Each run starts from the engine cleared of everything else, as a new one.
#[derive(Default)]
pub struct Timer(Option<crate::engine::Engine>);

impl Timer {
    /// Timing run of `res`: its report, or the error. With `choosing`, a collective over a
    /// network that names no algorithm runs the cheapest (the planner's choice,
    /// [`crate::engine::Engine::set_choosing_algorithms`]); without, the network's own,
    /// as `run` runs it.
    pub fn time(
        &mut self,
        res: &Resolved,
        choosing: bool,
    ) -> Result<mnsim_reports::Report, RunError> {
        let mut r = res.clone();
        r.mode = Mode::Timing;
        let eng = match self.0.take() {
            Some(mut e)
                if e.state.machine == r.machine && e.rec.timeline.schedule == r.schedule =>
            {
                e.clear_all();
                e
            }
            _ => {
                // Cycles and joules are all the planner reads: an engine that measures
                // as the planner's gives the same (tests/closed_form.rs) without
                // per-port statistics.
                crate::engine::Engine::measuring(r.machine.clone(), r.schedule)
            }
        };
        let mut eng = eng;
        eng.set_choosing_algorithms(choosing);
        let out = crate::run::run_on(&r, eng, &mut |_, _| {})?;
        self.0 = Some(out.engine);
        Ok(out.report)
    }
}

impl Timer {
    /// What the engine kept of each op of the last run (aligned with its report's ops).
    pub fn records(&self) -> &[crate::engine::Record] {
        self.0.as_ref().map_or(&[], |e| &e.rec.records)
    }
}

/// A plan that does not apply to the program it was made for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("layout {layout} does not bind for `{tensor}`")]
    Bind { layout: String, tensor: String },
    #[error("no layout for `${0}`")]
    NoLayout(String),
    #[error("op {0} has no output")]
    NoOutput(usize),
    #[error("{0}")]
    TooLarge(#[from] crate::program::TooLarge),
}

/// `res` (resolved with `Any` variables) with `layouts` (variable → canonical text)
/// substituted, `inserted` Relayouts added before their ops and the ops of `algorithms`
/// naming theirs.
pub fn apply(
    res: &Resolved,
    layouts: &[(String, String)],
    inserted: &[InsertedOp],
    algorithms: &[ChosenAlgorithm],
) -> Result<Resolved, ApplyError> {
    let p = &res.program;
    let bind = |text: &str, t: TensorId| {
        let rt = &p.tensors[t];
        candidates::bind_text(
            &res.machine,
            text,
            &rt.dims_at_bound,
            rt.dtype,
            rt.dims_at_bound != rt.runtime_dims,
        )
        .map(|c| c.layout)
        .ok_or_else(|| ApplyError::Bind {
            layout: text.to_string(),
            tensor: rt.name.clone(),
        })
    };
    let mut ops: Vec<ProgramOp> = Vec::with_capacity(p.ops.len() + inserted.len());
    for (id, po) in p.ops.iter() {
        for ins in inserted.iter().filter(|i| i.before == po.source.index()) {
            ops.push(ProgramOp {
                kind: OpKind::Relayout {
                    tensor: ins.tensor,
                    out: None,
                },
                source: po.source,
                name: "Relayout",
                layout_text: Some(ins.layout.clone()),
                layout: Some(LayoutRef::Bound(bind(&ins.layout, ins.tensor)?)),
                buffers: None,
                algorithm: ins.algorithm,
                span: None,
                // An inserted Relayout sits where the op it serves does.
                place: po.place,
            });
        }
        let mut op = po.clone();
        if let Some(c) = algorithms.iter().find(|c| c.op == po.source.index()) {
            op.algorithm = Some(c.algorithm);
        }
        if let Some(LayoutRef::Any(v)) = &po.layout {
            let text = layouts
                .iter()
                .find(|(x, _)| x == v)
                .map(|(_, t)| t.clone())
                .ok_or_else(|| ApplyError::NoLayout(v.clone()))?;
            let tensor = p
                .output(id)
                .ok_or(ApplyError::NoOutput(po.source.index()))?;
            op.layout = Some(LayoutRef::Bound(bind(&text, tensor)?));
            op.layout_text = Some(text);
        }
        ops.push(op);
    }
    let mut out = res.clone();
    out.program = p.with_ops(ops)?;
    Ok(out)
}

/// Plans `plan` of `sc`: resolves it once, seeds the search with every hand plan that
/// agrees with it on its fixed variables, searches, and confirms the best assignments
/// (and the seeds) with timing runs; then plans again from the best plan, its Relayouts
/// written into the program, while that gains ([`rounds`]). `progress(evaluated,
/// planned)` is called during the search. The passes, in order, are in [`passes`].
pub fn plan_with(
    sc: &Scenario,
    src: &Source,
    plan: &str,
    sets: &[(String, f64)],
    binds: &BTreeMap<String, u64>,
    opts: &PlanOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Outcome, miette::Report> {
    let started = std::time::Instant::now();
    let first = plan_round((sc, src), (plan, sets, binds), opts, None, progress)?;
    let why = (plan, sets, binds);
    Ok(rounds::again(
        first,
        (sc, src),
        why,
        opts,
        started,
        progress,
    ))
}

/// One round of [`plan_with`]: the planning of `plan` of `sc`, seeded also by `from` (the
/// scenario whose plan `plan` holds the previous round's best layouts). Only the first
/// round plans one board first: a later round's seed already descends from that plan.
fn plan_round(
    (sc, src): (&Scenario, &Source),
    (plan, sets, binds): (&str, &[(String, f64)], &BTreeMap<String, u64>),
    opts: &PlanOptions,
    from: Option<&Scenario>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Outcome, miette::Report> {
    // The time limit covers the whole planning: resolution, candidates, the hand plans'
    // runs and the search (the confirming runs after it are a few timing runs).
    let started = std::time::Instant::now();
    // Errors of the scenario itself come back as they are, pointing into the file.
    let res = scenario::resolve(sc, src, Some(plan), sets, binds)?;
    let fail = |msg: String| miette::miette!("error: {}: {msg}", src.path);
    let bound = crate::bound::program(&res.machine, &res.program);
    let mut model = Model::new(&res, opts.space).map_err(|e| fail(e.to_string()))?;
    if model.vars.is_empty() {
        return Err(fail(format!(
            "plan `{plan}` has no variable set to `Any`: nothing to choose"
        )));
    }
    let mut hands = passes::hand_plans(sc, src, (plan, sets, binds), &mut model);
    if let Some(seed) = from.and_then(|f| rounds::seed(f, src, (plan, sets, binds), &mut model)) {
        hands.seeds.push(seed);
        hands.light = spread::is_whole_model(&model);
    }
    // On many boards, the plan of one board first (`boards.rs`), on a share of the
    // budget; the search over every board from it (and the hand plans) keeps its whole
    // work budget and what is left of the time limit.
    let one_opts = boards::shared(opts, boards::ONE_BOARD_SHARE, started);
    let one = match from {
        Some(_) => None,
        None => boards::one_board_seed((sc, src), (plan, sets, binds), &one_opts, &mut model),
    };
    let one_board = one.map(|(seed, cost)| {
        hands.seeds.push(seed);
        // The seed runs with the Relayouts its planning inserted before tied variables'
        // first readers.
        model.set_chain_inserts(true);
        cost
    });
    let pruned = passes::prune(&mut model, &hands.seeds).map_err(|(tensor, var)| {
        fail(format!(
            "no layout of `{tensor}` fits {} for `${var}`",
            res.machine.name
        ))
    })?;
    // The search passes are the same whatever the objective: every objective confirms
    // the same assignments, each ranking them its own way.
    let (mut found, starts) = passes::search(&mut model, &hands, opts, started, progress);
    let mut spread_from = Vec::new();
    for beam in passes::SPREAD_BEAMS {
        let how = (beam, &mut spread_from);
        if let Some(spread) =
            passes::spread_pass(&mut model, (&starts, &found), how, opts, started, progress)
        {
            found = passes::joined(found, spread);
        }
    }
    variants::swap_pass(&mut model, &mut found);
    hot::hot_pass(&mut model, &mut found, opts, started, progress);
    model.objective = opts.objective;
    let (best, last_error) =
        passes::confirm(&mut model, &res, (&found.best, &hands.seeds), opts, started);
    if best.is_empty() {
        return Err(fail(format!(
            "no assignment of {} candidate layouts runs plan `{plan}` to the end{}",
            model.vars.iter().map(|v| v.candidates.len()).sum::<usize>(),
            last_error
                .map(|e| format!(" (closest: {e})"))
                .unwrap_or_default()
        )));
    }
    Ok(Outcome {
        plan: plan.to_string(),
        rounds: Vec::new(),
        objective: opts.objective,
        best,
        hand_plans: hands.plans,
        candidates: model
            .vars
            .iter()
            .map(|v| (v.name.clone(), v.candidates.len()))
            .collect(),
        pruned,
        method: found.method,
        // Every evaluation: the joint seeds' and the search's.
        evaluated: model.evaluated,
        bounded: model.bounded,
        measured: model.measured,
        work: model.work_done(),
        space: found.space,
        complete: found.complete,
        timed_out: found.timed_out,
        work_spent: found.work_spent,
        seconds: found.seconds,
        tried: found.tried,
        total_seconds: started.elapsed().as_secs_f64(),
        bound_cycles: bound.cycles,
        bound_resource: bound.resource,
        one_board,
    })
}
