//! Lowering: an op's charged stages ([`net::Cost`]) become a timeline [`Task`].
//!
//! The task holds each stage's resource ([`net::Place::resource`]) for that stage's
//! cycles, lasts the op's cycles (slowest stage plus latencies), and names the LM
//! regions it reads and writes. The cost, and so the task, depends only on the op and
//! its operands' layouts; the regions and LM figures come from the allocator.

use crate::ids::RegionId;
use crate::net;
use crate::timeline::{Hold, Task};

/// The holds of an op's stages: one per resource, for the longest stage on it.
pub fn holds(stages: &[net::Stage]) -> Vec<Hold> {
    let mut out: Vec<Hold> = Vec::with_capacity(stages.len());
    for s in stages {
        let r = s.place.resource();
        match out.iter_mut().find(|h| h.resource == r) {
            Some(h) => h.cycles = h.cycles.max(s.cycles),
            None => out.push(Hold {
                resource: r,
                cycles: s.cycles,
            }),
        }
    }
    out
}

/// The task of an op charged `cost`.
pub fn task(
    cost: &net::Cost,
    reads: &[RegionId],
    writes: &[RegionId],
    lm_words: u64,
    frees_before: Vec<(RegionId, u64)>,
    frees_after: Vec<(RegionId, u64)>,
) -> Task {
    Task {
        cycles: cost.cycles,
        holds: holds(&cost.stages),
        reads: reads.to_vec(),
        writes: writes.to_vec(),
        lm_words,
        frees_before,
        frees_after,
    }
}
