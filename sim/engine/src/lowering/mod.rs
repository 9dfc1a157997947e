//! Lowering: an op's charged stages ([`net::Cost`]) become a timeline [`Task`].
//!
//! An op that walks `Time` steps (streams, docs/model.md) also gets a [`Walk`]: its
//! steps ([`walk::walk`]), the slices each step reads of the streams it consumes and
//! the sends those need ([`walk::sends`]); a slice needed again after it left LM is
//! re-sent, and the task's cycles include the re-sends (in both schedules).
//!
//! The task holds each stage's resource ([`net::Place::resource`]) for that stage's
//! cycles, lasts the op's cycles (slowest stage plus latencies), and names the LM
//! regions it reads and writes. The cost, and so the task, depends only on the op and
//! its operands' layouts; the regions and LM figures come from the allocator.

use crate::ids::RegionId;
use crate::net;
use crate::timeline::{Again, Hold, StreamIn, Task, Walk};

pub mod walk;

/// A stream an op reads slice by slice: its region, the slices LM holds of it, and the
/// task that produced it.
pub struct Source<'a> {
    pub region: RegionId,
    pub buffers: u32,
    pub slices: u32,
    pub producer: &'a Task,
}

/// The walk of an op of `own_cycles` from its plan: `sources[i]` is the stream input
/// `i` of the plan reads (`None`: read whole). `deferred`: the op is a transfer whose
/// output stream is sent as its consumer walks it.
pub fn walk_of(
    memo: &mut walk::SendsMemo,
    plan: &walk::WalkPlan,
    own_cycles: u64,
    deferred: bool,
    sources: &[Option<Source>],
) -> Walk {
    let inputs = plan
        .inputs
        .iter()
        .zip(sources)
        .filter_map(|(need, src)| {
            let src = src.as_ref()?;
            if need.is_empty() {
                return None;
            }
            let s = memo.sends(need, src.buffers, src.slices);
            let (producer_cycles, producer_holds) = src.producer.again();
            Some(StreamIn {
                region: src.region,
                buffers: src.buffers,
                need: s.per_step,
                sends: s.sends,
                slices: src.slices,
                producer_cycles,
                producer_holds: producer_holds.to_vec(),
                resent: s.resent,
            })
        })
        .collect();
    Walk {
        steps: plan.steps.max(1) as u32,
        own_cycles,
        out: plan.out.clone(),
        out_slices: plan.out_slices,
        deferred,
        inputs,
    }
}

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

/// The task of an op charged `cost` (plus the re-sends of its walk, if any).
pub fn task(
    cost: &net::Cost,
    reads: &[RegionId],
    writes: &[RegionId],
    lm_words: u64,
    frees_before: Vec<(RegionId, u64)>,
    frees_after: Vec<(RegionId, u64)>,
    walk: Option<Walk>,
) -> Task {
    let resend: u64 = walk
        .iter()
        .flat_map(|w| &w.inputs)
        .map(StreamIn::resend_cycles)
        .fold(0u64, u64::saturating_add);
    Task {
        cycles: cost.cycles.saturating_add(resend),
        holds: holds(&cost.stages),
        reads: reads.to_vec(),
        writes: writes.to_vec(),
        lm_words,
        frees_before,
        frees_after,
        walk,
        again: (cost.again.as_ref()).map(|a| {
            Box::new(Again {
                cycles: a.cycles,
                holds: holds(&a.stages),
            })
        }),
    }
}
