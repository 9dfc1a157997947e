//! A task: what an op's lowering hands the timeline (how long it takes, the resources
//! it holds and for how long each, the LM regions it reads and writes, the LM it keeps
//! charged, its walk and what re-sending one of its slices costs).

use super::{Resource, Walk};
use crate::ids::RegionId;
use serde::{Deserialize, Serialize};

/// A resource held for `cycles` from the task's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Hold {
    pub resource: Resource,
    pub cycles: u64,
}

/// Adds `cycles` to `r`'s entry of `sums` (a few resources: a short list, in order of
/// first use), saturating.
pub fn tally(sums: &mut Vec<(Resource, u64)>, r: Resource, cycles: u64) {
    match sums.iter_mut().find(|s| s.0 == r) {
        Some(s) => s.1 = s.1.saturating_add(cycles),
        None => sums.push((r, cycles)),
    }
}

/// One op, lowered: what the schedule needs to know of it.
#[derive(Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Task {
    /// Cycles from start to end (docs/model.md: the slowest stage plus latencies).
    pub cycles: u64,
    /// Resources held, each for its stage's cycles (at most one hold per resource).
    pub holds: Vec<Hold>,
    /// LM regions read: the task starts after their writers end.
    pub reads: Vec<RegionId>,
    /// LM regions written.
    pub writes: Vec<RegionId>,
    /// LM words per PE charged while the task runs (every live region, its own included).
    pub lm_words: u64,
    /// Regions freed since the previous task (a `Free`), with their words: their space
    /// is free for this task once their last user has ended.
    pub frees_before: Vec<(RegionId, u64)>,
    /// Regions this task replaces (freed after it), with their words.
    pub frees_after: Vec<(RegionId, u64)>,
    /// How the task walks `Time` steps (streams), when its output or an input has them.
    pub walk: Option<Walk>,
    /// What a slice of its output costs sent again, where that differs from the first
    /// time (a program input's first Load comes from the host, a re-sent slice from the
    /// DRAM copy: `net::Cost::again`). `None`: `cycles` and `holds`.
    pub again: Option<Box<Again>>,
}

/// A task's cycles and holds done again ([`Task::again`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Again {
    pub cycles: u64,
    pub holds: Vec<Hold>,
}

impl Task {
    /// The cycles and holds of producing its output again (a re-sent slice's source).
    pub fn again(&self) -> (u64, &[Hold]) {
        match &self.again {
            Some(a) => (a.cycles, &a.holds),
            None => (self.cycles, &self.holds),
        }
    }
}

/// Field by field, so that `clone_from` reuses the vectors a task already has (the
/// planner copies an op's tasks into its scratch for every plan it walks).
impl Clone for Task {
    fn clone(&self) -> Task {
        let Task {
            cycles,
            holds,
            reads,
            writes,
            lm_words,
            frees_before,
            frees_after,
            walk,
            again,
        } = self;
        Task {
            cycles: *cycles,
            holds: holds.clone(),
            reads: reads.clone(),
            writes: writes.clone(),
            lm_words: *lm_words,
            frees_before: frees_before.clone(),
            frees_after: frees_after.clone(),
            walk: walk.clone(),
            again: again.clone(),
        }
    }

    fn clone_from(&mut self, source: &Task) {
        let Task {
            cycles,
            holds,
            reads,
            writes,
            lm_words,
            frees_before,
            frees_after,
            walk,
            again,
        } = source;
        self.cycles = *cycles;
        self.holds.clone_from(holds);
        self.reads.clone_from(reads);
        self.writes.clone_from(writes);
        self.lm_words = *lm_words;
        self.frees_before.clone_from(frees_before);
        self.frees_after.clone_from(frees_after);
        self.walk.clone_from(walk);
        self.again.clone_from(again);
    }
}
