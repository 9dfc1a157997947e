//! The planner's model of a program: resolved once, then evaluated for many layout
//! assignments without parsing or resolving anything.
//!
//! Layouts and (layout, partial levels) states are interned to small ids. Evaluating an
//! assignment walks the program once ([`walk`]), tracking each tensor's state, what DRAM
//! holds and the LM words charged, and asks each op's lowered tasks from a memo keyed by
//! (op, the states of the tensors it reads, its own layout). Only a key never seen before
//! is measured ([`measure`], by [`Coster`]), so changing one variable re-measures only the
//! ops whose operands it changed. Where a kernel is illegal for the layouts its inputs
//! arrive in, the model inserts a Relayout of one input into the cheapest of a few legal
//! layouts of it, and counts it. The walk renumbers the tasks' LM regions for the plan
//! and places them with [`crate::timeline::schedule`] under the scenario's schedule, so a
//! plan whose ops overlap is scored as it will run.

mod failure;
mod joint;
mod layers;
mod layouts;
mod measure;
mod moves;
mod prune;
mod reads;
mod repeat;
mod shared;
mod state;
mod strategy;
mod ties;
mod walk;
#[cfg(test)]
pub(crate) mod testing {
    //! A model of a scenario's plan `auto`, for the planner's unit tests.
    use super::Model;
    use crate::plan::candidates::Space;
    use crate::scenario::{self, Source};

    /// The model of plan `auto` of scenario `text`, read as file `path`.
    pub(crate) fn model(text: &str, path: &str) -> Model {
        let sc = scenario::parse(text, path).unwrap();
        let src = Source {
            path: path.into(),
            text: text.into(),
        };
        let res = scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default()).unwrap();
        Model::new(&res, Space::default()).unwrap()
    }
}

use super::candidates::{self, Space};
use super::cost::Coster;
use crate::ids::RegionId;
use crate::program::{EntityRef as _, LayoutRef, OpId, OpKind, ProgramOp, Tensor, TensorId};
use crate::scenario::Resolved;
use crate::timeline::{Resource, Schedule, Task};
pub use failure::{Failure, ModelError};
use mnsim_arch::TensorLayout;
/// The model's tables hash with a fixed, fast hasher (not SipHash: they are looked up
/// at every op of every evaluation; iteration order is never relied on).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

/// An interned bound layout.
pub type LayoutId = u32;
/// A tensor's shape as candidates see it: dims, dtype, whether padded.
type ShapeKey = (Vec<u64>, mnsim_arch::DType, bool);
type StateId = u32;
/// An op's measurement: (op, its inputs' states, its layout, its producers' fingerprint).
type MemoKey = (u32, reads::Reads, LayoutId, u64);
/// A measured Relayout: its cycles, tasks, the region it moves its tensor to and its
/// dynamic joules.
type Relayouted = (u64, Vec<Task>, RegionId, f64);

/// A plan variable: its name, the tensor it lays out, its candidates (bound layouts of
/// that tensor) and the ops whose layout it is.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub tensor: TensorId,
    pub candidates: Vec<LayoutId>,
    /// The first `core` candidates are the core of the space (whole fan-outs, levels
    /// root-most first, seeds).
    pub core: usize,
    pub ops: Vec<usize>,
}

impl Var {
    /// Adds layout `id` first among the candidates, in the core, unless it is one
    /// already (a seed's layout, kept whatever pruning or generation left).
    pub fn add_first(&mut self, id: LayoutId) {
        if !self.candidates.contains(&id) {
            self.candidates.insert(0, id);
            self.core += 1;
        }
    }
}

/// The work a model has done ([`Model::work_done`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkDone {
    pub evaluated: u64,
    /// Ops the measuring engine ran: measures, and the Relayouts it tried.
    pub runs: u64,
    /// Walk steps and sends booked, by measured ops and by evaluations' placements, and
    /// the walk steps the measuring engine planned.
    pub booked: u64,
    /// Legality checks of candidate Relayout targets.
    pub legal_checks: u64,
}

/// A Relayout the model inserted before a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inserted {
    /// Program index of the kernel it precedes.
    pub before: usize,
    pub tensor: TensorId,
    pub layout: LayoutId,
    pub cycles: u64,
}

/// The result of evaluating one assignment.
#[derive(Clone, Debug, PartialEq)]
pub struct Eval {
    /// Ops that ran (all of them when `failure` is `None`).
    pub completed: usize,
    pub total_cycles: u64,
    /// Why and where the program stopped.
    pub failure: Option<(usize, Failure)>,
    /// Joules of the ops that ran and the static energy of their time.
    pub energy_j: f64,
    /// What the model minimises ([`Model::objective`]): cycles, or the bits of the
    /// (non-negative) joules or joule-seconds, which order as the numbers do.
    pub score: u64,
    /// Whether the chain phase's Relayouts were on ([`Model::chain_inserts`]): the plan
    /// is confirmed, explained and written as it was scored.
    pub chained: bool,
}

/// An evaluation's ordering key ([`Eval::key`]).
pub type Key = (bool, std::cmp::Reverse<usize>, u64);

impl Eval {
    /// Ordering key: runnable first, then further, then a lower score.
    pub fn key(&self) -> Key {
        (
            self.failure.is_some(),
            std::cmp::Reverse(self.completed),
            self.score,
        )
    }
}

/// An input an inserted Relayout moved.
#[derive(Clone, Debug)]
struct Moved {
    tensor: TensorId,
    /// Its new state, and its new region (symbolic, as in [`OpOut::tasks`]).
    state: StateId,
    region: RegionId,
    /// The Relayout's last task (its index in [`OpOut::tasks`]).
    task: usize,
    insert: Inserted,
}

/// A measured op: its cycles, what it leaves in LM and its lowered tasks.
#[derive(Clone, Debug)]
struct OpOut {
    cycles: u64,
    /// Dynamic joules (the op, its Reduces and an inserted Relayout).
    dynamic_j: f64,
    /// The state the op leaves its output in, and the output's region (symbolic).
    output: Option<(TensorId, StateId, RegionId)>,
    /// Inputs moved by inserted relayouts.
    moved: Vec<Moved>,
    /// The op's tasks (inserted Relayouts first), regions symbolic
    /// ([`super::cost::input_region`] for inputs, else the op's own, below `span`).
    tasks: Vec<Task>,
    span: u32,
    /// Per resource, the cycles its tasks hold it (a part of that resource's busy
    /// time in any plan that runs them, which no run's total is below).
    busy: Vec<(Resource, u64)>,
}

/// What kind of LM effect an op has (for the walk's bookkeeping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// Load: from DRAM (needs it there).
    Load,
    /// Reads its inputs from LM and writes its output.
    Compute,
    Store,
    Free,
}

#[derive(Clone, Debug)]
struct ModelOp {
    /// The program's op.
    op: OpId,
    effect: Effect,
    /// Tensors read from LM.
    reads: Vec<TensorId>,
    /// Tensor written.
    writes: Option<TensorId>,
    /// Fixed layout, or the variable that gives it.
    fixed: Option<LayoutId>,
    var: Option<usize>,
    is_kernel: bool,
    /// Whether the op's output, `Time`-stepped, is a stream its first reader reads slice
    /// by slice as the op's task makes or sends it: a kernel's, and a program Relayout's
    /// (a transfer the engine defers to its reader's walk, which re-sends a slice it
    /// needs again). A Load's is read so too, applied in the reader's measurement.
    makes_stream: bool,
    /// Per read: whether a Relayout may be inserted before this op for it. Not when
    /// the input comes straight from a variable's op and this is its first reader:
    /// the search chooses that layout directly.
    insert_ok: Vec<bool>,
    /// Per read: whether its writer's variable is tied ([`ties`]): in the chain phase a
    /// Relayout may go before this op too (the tied layout was not chosen to suit it).
    insert_tied: Vec<bool>,
    /// Per read: the Load or stream maker (op index: [`ModelOp::makes_stream`]) the
    /// tensor comes straight from, when this is its first reader, so that a
    /// `Time`-stepped layout of it is a stream this op reads slice by slice (measured
    /// so: [`Coster::measure`]).
    streamed: Vec<Option<usize>>,
    /// Per read: the Load or stream maker the tensor comes straight from, when an op
    /// read it since: a stream LM holds whole, or that no reader before took (read
    /// slice by slice), is read slice by slice by its later readers too (when it is:
    /// [`Model::memo_index`]).
    later: Vec<Option<usize>>,
}

impl ModelOp {
    /// The Load or kernel whose output read `k` may read slice by slice: its first
    /// read's or a later read's.
    fn source(&self, k: usize) -> Option<usize> {
        (self.streamed.get(k).copied().flatten()).or(self.later.get(k).copied().flatten())
    }
}

/// The program, its variables and the memo.
pub struct Model {
    /// Shared: a measurement holds the op it measures while it changes the model.
    ops: std::sync::Arc<Vec<ModelOp>>,
    pub vars: Vec<Var>,
    layouts: Vec<TensorLayout>,
    /// Interned layouts by shape, then the bound layout (its defining parts hashed: no
    /// text is written): tensors of one shape share them.
    layout_ids: HashMap<ShapeKey, HashMap<TensorLayout, LayoutId>>,
    footprint: Vec<u64>,
    states: Vec<(LayoutId, Vec<usize>)>,
    state_ids: HashMap<(LayoutId, Vec<usize>), StateId>,
    /// Keyed by (op, its inputs' states, its layout, a fingerprint of the tasks of the
    /// kernels whose output streams it reads: their cycles and holds price a re-sent
    /// slice); the index of the measurement in `measured_ops`.
    memo: HashMap<MemoKey, u32>,
    /// The memo's measurements, in the order they were made.
    measured_ops: Vec<Result<OpOut, Failure>>,
    /// The walks' step and send vectors the memo holds, one copy of each
    /// ([`Model::share_walks`]).
    step_vectors: shared::Shared<u32>,
    send_vectors: shared::Shared<(u32, Option<u32>)>,
    coster: Coster,
    res: Resolved,
    initial_dram: Vec<bool>,
    lm_words: u64,
    /// Layout texts the joint seeds bound for a tensor, and what they bound to.
    bound_texts: HashMap<TensorId, HashMap<String, Option<LayoutId>>>,
    /// Relayout targets per tensor, generated on first need, with what a scan reads of
    /// each.
    targets: HashMap<TensorId, (Vec<LayoutId>, mnsim_kernels::ScanSet)>,
    /// Each tensor's fully replicated layout (`None` where it does not fit LM).
    replicas: HashMap<TensorId, Option<TensorLayout>>,
    /// Legal targets per (op, slot, the other inputs' layouts, output layout).
    legal_targets: HashMap<(usize, usize, Vec<LayoutId>, LayoutId), Vec<LayoutId>>,
    /// Inserted Relayouts by (tensor, state, target) ([`Model::relayout`]).
    relayouts: HashMap<(TensorId, StateId, LayoutId), Option<Relayouted>>,
    /// Ops measured (memo misses) and evaluations done.
    pub measured: u64,
    /// Legality checks of relayout targets ([`Model::work_done`]).
    legal_checks: u64,
    /// Walk steps and sends booked by the measured ops' tasks and by placements that
    /// did not resume a timeline ([`Model::work_done`]).
    booked: u64,
    pub evaluated: u64,
    /// Evaluations decided by their busiest resource alone, without placing their tasks
    /// ([`Model::evaluate_below`]).
    pub bounded: u64,
    /// Failed measurements are measured again with their errors explained
    /// ([`Model::explained_failure`]).
    explaining: bool,
    space: Space,
    /// How the scored plan's tasks are placed in time (the scenario's schedule).
    pub schedule: Schedule,
    /// The machine's static power, in watts (a sum over its levels: asked for every
    /// score, so summed once).
    static_watts: f64,
    /// What evaluations minimise (`plan --objective`): cycles by default.
    pub objective: mnsim_reports::Objective,
    /// Candidates per shape (interned, the core first) and how many are core,
    /// generated once.
    generated: HashMap<ShapeKey, (Vec<LayoutId>, usize)>,
    /// Scratch of the walk: the plan's tasks, reused from one evaluation to the next.
    scratch: Vec<Task>,
    /// The vectors of the last walk, reused by the next (its tasks are `scratch`).
    spare: Option<state::State>,
    /// The last plan's timeline, resumed after the tasks the next plan shares with it
    /// (`None`: every plan placed from its first task; the same totals).
    resume: Option<crate::timeline::Resumable>,
    /// The hand plans' and the confirming timing runs.
    pub timer: super::Timer,
    /// Per variable, the variable its layout follows from, and how ([`ties`]).
    ties: Vec<Option<ties::Tie>>,
    /// Whether the chain phase is on: Relayouts may go before the first readers of tied
    /// variables' tensors ([`ModelOp::insert_tied`]); memoised apart.
    chain_inserts: bool,
    /// A tied variable's layout by its source's ([`Model::propagate`]).
    derivations: HashMap<(usize, LayoutId), Option<LayoutId>>,
    /// Per variable, the variable of the first identical layer whose layout it takes
    /// (itself outside layers) ([`layers`]).
    leader: Vec<usize>,
    /// Layers alike op for op that evaluations do not walk ([`repeat`]), and whether
    /// they skip them (an explanation walks every op).
    skip: Option<std::sync::Arc<repeat::Skip>>,
    skipping: bool,
}

const NO_LAYOUT: LayoutId = LayoutId::MAX;
/// Legal relayout targets measured per inserted relayout.
const TARGETS_MEASURED: usize = 12;

impl Model {
    /// Builds the model of `res` (a resolved plan whose variables are `Any`), with the
    /// candidates of every variable from `space`.
    pub fn new(res: &Resolved, space: Space) -> Result<Model, ModelError> {
        let mut res = res.clone();
        res.mode = crate::engine::Mode::Timing;
        let coster = Coster::new(&res)?;
        let lm_words = res.machine.leaf_memory_bytes() / res.machine.word_bytes.max(1);
        let initial_dram = (res.program.tensors.values())
            .map(|t| t.init.is_some())
            .collect();
        let mut m = Model {
            ops: Default::default(),
            vars: Vec::new(),
            layouts: Vec::new(),
            layout_ids: HashMap::default(),
            footprint: Vec::new(),
            states: Vec::new(),
            state_ids: HashMap::default(),
            memo: HashMap::default(),
            measured_ops: Vec::new(),
            step_vectors: Default::default(),
            send_vectors: Default::default(),
            coster,
            res: res.clone(),
            initial_dram,
            lm_words,
            targets: HashMap::default(),
            bound_texts: HashMap::default(),
            legal_targets: HashMap::default(),
            relayouts: HashMap::default(),
            replicas: HashMap::default(),
            measured: 0,
            legal_checks: 0,
            booked: 0,
            evaluated: 0,
            bounded: 0,
            explaining: false,
            space,
            schedule: res.schedule,
            static_watts: res.machine.energy.static_watts(&res.machine),
            objective: mnsim_reports::Objective::Cycles,
            scratch: Vec::new(),
            spare: None,
            resume: Some(Default::default()),
            timer: Default::default(),
            generated: HashMap::default(),
            ties: Vec::new(),
            chain_inserts: false,
            derivations: HashMap::default(),
            leader: Vec::new(),
            skip: None,
            skipping: false,
        };
        for (id, po) in res.program.ops.iter() {
            let op = m.model_op(id, po)?;
            std::sync::Arc::make_mut(&mut m.ops).push(op);
        }
        m.generate_candidates();
        m.find_ties();
        m.find_layer_classes();
        m.skip = m.find_skip().map(std::sync::Arc::new);
        m.skipping = m.skip.is_some();
        Ok(m)
    }

    /// The model of program op `id` (the ops before it modelled), its variable declared
    /// if it is the first op of it.
    fn model_op(&mut self, id: OpId, po: &ProgramOp) -> Result<ModelOp, ModelError> {
        let m = self;
        let p = &m.res.program;
        let (reads, writes) = (p.inputs(id), p.output(id));
        let (effect, reads, writes) = match &po.kind {
            OpKind::Load { tensor } => (Effect::Load, vec![], Some(*tensor)),
            OpKind::Store { .. } => (Effect::Store, reads, None),
            OpKind::Free { tensor } => (Effect::Free, vec![], Some(*tensor)),
            OpKind::Relayout { .. }
            | OpKind::Broadcast { .. }
            | OpKind::Reduce { .. }
            | OpKind::Gather { .. }
            | OpKind::Kernel { .. } => (Effect::Compute, reads, writes),
        };
        let is_kernel = matches!(po.kind, OpKind::Kernel { .. });
        let makes_stream = is_kernel || matches!(po.kind, OpKind::Relayout { .. });
        let (fixed, var) = match &po.layout {
            Some(LayoutRef::Bound(l)) => {
                let w = writes.unwrap_or(TensorId::new(0));
                (Some(m.intern(w, l.clone())), None)
            }
            Some(LayoutRef::Any(v)) => {
                let Some(w) = writes else {
                    return Err(ModelError::NoTensor {
                        op: po.source.index(),
                        var: v.clone(),
                    });
                };
                let vi = match m.vars.iter().position(|x| &x.name == v) {
                    Some(i) => i,
                    None => {
                        m.vars.push(Var {
                            name: v.clone(),
                            tensor: w,
                            candidates: Vec::new(),
                            core: 0,
                            ops: Vec::new(),
                        });
                        m.vars.len() - 1
                    }
                };
                m.vars[vi].ops.push(m.ops.len());
                (None, Some(vi))
            }
            None => (None, None),
        };
        // Per read: its last writer so far, and whether an op read it since.
        let origin: Vec<Option<(usize, bool)>> = reads
            .iter()
            .map(|&r| {
                let w = m.ops.iter().rposition(|o| o.writes == Some(r))?;
                Some((w, m.ops[w + 1..].iter().any(|o| o.reads.contains(&r))))
            })
            .collect();
        let insert_ok = origin
            .iter()
            .map(|o| o.is_none_or(|(w, read)| m.ops[w].var.is_none() || read))
            .collect();
        // Per read, the Load or kernel it comes straight from, when an op read it since
        // (`read`) or not.
        let source = |read: bool| -> Vec<Option<usize>> {
            (origin.iter())
                .map(|o| {
                    o.filter(|&(w, r)| {
                        r == read && (m.ops[w].effect == Effect::Load || m.ops[w].makes_stream)
                    })
                    .map(|(w, _)| w)
                })
                .collect()
        };
        let (streamed, later) = (source(false), source(true));
        Ok(ModelOp {
            op: id,
            effect,
            reads,
            writes,
            fixed,
            var,
            is_kernel,
            makes_stream,
            insert_ok,
            insert_tied: Vec::new(),
            streamed,
            later,
        })
    }

    /// The work done so far, in counts that grow with the time it took (a search's
    /// budget is spent in them, the same on every machine).
    pub fn work_done(&self) -> WorkDone {
        let placed = self.resume.as_ref().map_or(0, |r| r.booked);
        WorkDone {
            evaluated: self.evaluated,
            runs: self.coster.runs,
            booked: (self.booked.saturating_add(placed))
                .saturating_add(self.coster.walked())
                .saturating_add(self.coster.placed()),
            legal_checks: self.legal_checks,
        }
    }

    /// Whether a kernel's legality is checked before its streamed Loads are applied when
    /// measuring (the default; the same results either way: for tests).
    pub fn set_legality_first(&mut self, on: bool) {
        self.coster.set_legality_first(on);
    }

    /// Measurements found illegal before their Loads were applied.
    pub fn illegal_first(&self) -> u64 {
        self.coster.illegal_first
    }

    /// Whether plans are placed from the timeline of the last one, after the tasks they
    /// share (the default), or each from its first task: the totals are the same.
    pub fn set_resume(&mut self, on: bool) {
        self.resume = on.then(Default::default);
    }

    /// Whether evaluations skip the layers alike the two before them that they may
    /// ([`repeat`]; the default where there are such), or walk every op: for tests.
    pub fn set_skipping(&mut self, on: bool) {
        self.skipping = on && self.skip.is_some();
    }

    /// Whether an evaluation of `pick` skips layers: it lays them out as it lays out
    /// the layers walked.
    pub fn skips(&self, pick: &[LayoutId]) -> bool {
        self.skipping && self.skip.as_ref().is_some_and(|s| s.holds_for(pick))
    }

    /// The layers evaluations skip: the first op skipped, the first after them and how
    /// many layers they are.
    pub fn skipped(&self) -> Option<(usize, usize, u64)> {
        self.skip.as_ref().map(|s| (s.from, s.to, s.times))
    }

    /// Forgets every measured op cost (the next evaluations measure again).
    pub fn clear_memo(&mut self) {
        self.memo.clear();
        self.measured_ops.clear();
    }

    /// Tensor `t` of the program.
    pub fn tensor(&self, t: TensorId) -> &Tensor {
        &self.res.program.tensors[t]
    }

    /// The kernel program op `op` runs, if it is a kernel.
    fn kernel(&self, op: OpId) -> Option<&mnsim_kernels::Kernel> {
        match &self.res.program.ops[op].kind {
            OpKind::Kernel { kernel, .. } => Some(kernel),
            OpKind::Load { .. }
            | OpKind::Gather { .. }
            | OpKind::Store { .. }
            | OpKind::Relayout { .. }
            | OpKind::Broadcast { .. }
            | OpKind::Reduce { .. }
            | OpKind::Free { .. } => None,
        }
    }

    /// Whether program op `op` is a Broadcast.
    fn is_broadcast(&self, op: OpId) -> bool {
        matches!(self.res.program.ops[op].kind, OpKind::Broadcast { .. })
    }

    /// Whether program op `op` is a Reduce.
    fn is_reduce(&self, op: OpId) -> bool {
        matches!(self.res.program.ops[op].kind, OpKind::Reduce { .. })
    }

    /// Size of the search space (product of candidate counts), saturating.
    /// Variables that follow another layer for layer count once.
    pub fn space_size(&self) -> u128 {
        (self.movers().into_iter()).fold(1u128, |a, v| {
            a.saturating_mul(self.vars[v].candidates.len() as u128)
        })
    }
}
