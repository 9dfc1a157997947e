//! What a walk over an assignment tracks ([`super::walk`]): per tensor its state in LM,
//! its DRAM copy, region and writer; the tasks so far and what they hold. A walk starts
//! in the vectors of the walk before it.

use super::{Model, StateId};
use crate::ids::RegionId;
use crate::timeline::{Resource, Task};

/// Per evaluation: where each tensor's LM region is, and the regions handed out.
pub(super) struct Regions {
    pub(super) of: Vec<RegionId>,
    pub(super) next: u32,
}

/// A walk's tasks, resources' holds and joules after an op.
pub(super) type Mark = (usize, Vec<(Resource, u64)>, f64);

/// What a walk tracks over one assignment.
pub(super) struct State {
    /// Per tensor: its state in LM, and whether DRAM holds it.
    pub(super) st: Vec<Option<StateId>>,
    pub(super) dram: Vec<bool>,
    /// LM words per PE charged.
    pub(super) charged: u64,
    pub(super) regions: Regions,
    /// The plan's tasks so far (the first `ntasks` of the model's reused scratch), and
    /// frees waiting for the next task.
    pub(super) scratch: Vec<Task>,
    pub(super) ntasks: usize,
    pub(super) pending: Vec<(RegionId, u64)>,
    /// Per tensor: the task (in `scratch`) that wrote it last as a stream, and the
    /// slices LM holds of it (its default `buffers:`).
    pub(super) writer: Vec<Option<(usize, u64)>>,
    /// Per tensor: whether a reader took its stream (read it slice by slice) since it
    /// was written; until one does, the next reader takes it (as the engine's first).
    pub(super) taken: Vec<bool>,
    /// Per tensor: the words of a stream's second slice; and their sum over what lives.
    pub(super) seconds: Vec<u64>,
    pub(super) second: u64,
    /// Per resource, the cycles the ops' tasks hold it.
    pub(super) busy: Vec<(Resource, u64)>,
    /// Per op its cycles, and the ops' dynamic joules.
    pub(super) cycles: Vec<u64>,
    pub(super) dynamic_j: f64,
    /// Where the walk skips layers ([`super::repeat`]): the tasks, holds and joules
    /// after the layer before the last walked one, until the skip; then the tasks
    /// after each of the two walked layers, whose ends are a layer's time apart.
    pub(super) at_mark: Option<Mark>,
    pub(super) marks: Option<[usize; 2]>,
    /// The most LM charged after an op of the last walked layer.
    pub(super) peak: u64,
}

impl State {
    /// The cycles of the busiest resource the ops' tasks hold.
    pub(super) fn busiest(&self) -> u64 {
        self.busy.iter().map(|b| b.1).max().unwrap_or(0)
    }

    /// A walk's state at its start, in the vectors of the last walk where there was one.
    pub(super) fn new(m: &mut Model) -> State {
        let n = m.resolved().program.tensors.len();
        let Some(mut s) = m.spare.take() else {
            return State {
                st: vec![None; n],
                dram: m.initial_dram.clone(),
                charged: 0,
                regions: Regions {
                    of: vec![RegionId(u32::MAX); n],
                    next: 0,
                },
                scratch: std::mem::take(&mut m.scratch),
                ntasks: 0,
                pending: Vec::new(),
                writer: vec![None; n],
                taken: vec![false; n],
                seconds: vec![0; n],
                second: 0,
                busy: Vec::new(),
                cycles: Vec::new(),
                dynamic_j: 0.0,
                at_mark: None,
                marks: None,
                peak: 0,
            };
        };
        // Every field named: a new one must say how a walk starts it.
        let State {
            st,
            dram,
            charged,
            regions,
            scratch,
            ntasks,
            pending,
            writer,
            taken,
            seconds,
            second,
            busy,
            cycles,
            dynamic_j,
            at_mark,
            marks,
            peak,
        } = &mut s;
        refill(st, n, None);
        dram.clone_from(&m.initial_dram);
        *charged = 0;
        refill(&mut regions.of, n, RegionId(u32::MAX));
        regions.next = 0;
        *scratch = std::mem::take(&mut m.scratch);
        *ntasks = 0;
        pending.clear();
        refill(writer, n, None);
        refill(taken, n, false);
        refill(seconds, n, 0);
        *second = 0;
        busy.clear();
        cycles.clear();
        *dynamic_j = 0.0;
        *at_mark = None;
        *marks = None;
        *peak = 0;
        s
    }
}

/// `v` as `n` copies of `x`, in its own memory.
fn refill<T: Clone>(v: &mut Vec<T>, n: usize, x: T) {
    v.clear();
    v.resize(n, x);
}
