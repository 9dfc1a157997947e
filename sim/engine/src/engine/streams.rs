//! Streams on the engine (docs/model.md, streams): how many slices of a `Time`-stepped
//! tensor LM holds (`buffers:`), and every op's walk lowered with the streams it reads.
//!
//! Invariant: a stream's LM charge is its slices held × one slice's words; a stream is
//! read slice by slice by the first reader whose walk reads it so (later readers read it
//! whole, but where LM holds every slice).

use super::{Engine, ErrorKind, SimError};
use crate::ids::RegionId;
use crate::lowering::{self, Source, walk, walk::WalkPlan};
use crate::net;
use crate::program::TensorId;
use crate::timeline::{Task, Walk};
use mnsim_arch::TensorLayout;
use mnsim_kernels::shape::AxisSource;

/// A `Time`-stepped tensor placed in LM: the slices LM holds of it, why, and what read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamState {
    pub tensor: TensorId,
    /// The op that produced it (index in the program's ops).
    pub producer: usize,
    /// Its `Time` steps (slices) and one slice's LM words.
    pub slices: u64,
    pub slice_words: u64,
    /// Slices LM holds (2: double-buffered).
    pub buffers: u64,
    /// `buffers:` as the op gave it.
    pub requested: Option<u64>,
    /// Why it holds one slice although it was not asked to (LM full).
    pub fallback: Option<String>,
    /// Its allocation's entry in the engine's charge log.
    pub log_at: usize,
    /// The op that read it slice by slice, its sends and the re-sends among them.
    pub consumer: Option<usize>,
    pub sends: u64,
    pub resends: u64,
    pub resend_cycles: u64,
    /// The producer's task when the producer is not an op of this engine (a stream the
    /// planner's measuring engine assumes: [`Engine::assume_stream`]).
    pub external: Option<Box<Task>>,
}

/// Axes longer than this are not scanned for a walk (their operands are read whole).
const MAX_AXIS: u64 = 1 << 22;

/// Every axis of a transfer takes its index from the same axis of its output.
pub(super) fn identity(rank: usize) -> Vec<AxisSource> {
    (0..rank).map(AxisSource::Out).collect()
}

/// The walk of an op writing `out` from `inputs`, when anything in it has `Time` steps;
/// `memo` keeps the walks planned so far, by what they depend on ([`walk::WalkKey`]).
pub(super) fn plan(
    memo: &mut WalkMemo,
    out: Option<&TensorLayout>,
    dims: &[u64],
    inputs: &[(&TensorLayout, Vec<AxisSource>)],
    reduced: &[u64],
) -> Option<WalkPlan> {
    let stepped =
        out.is_some_and(|l| l.time_span() > 1) || inputs.iter().any(|(l, _)| l.time_span() > 1);
    // Beyond the walk's bounds (very many steps, or axes too long to scan) nothing streams.
    let span_ok = |l: &TensorLayout| l.time_span() <= walk::MAX_WALK as u64;
    let long = dims
        .iter()
        .chain(inputs.iter().flat_map(|(l, _)| l.logical_shape()))
        .any(|&d| d > MAX_AXIS)
        || reduced.iter().any(|&d| d > MAX_AXIS);
    if !stepped || long || !out.is_none_or(span_ok) || !inputs.iter().all(|(l, _)| span_ok(l)) {
        return None;
    }
    let ins: Vec<(&TensorLayout, &[AxisSource])> =
        inputs.iter().map(|(l, m)| (*l, m.as_slice())).collect();
    let key = walk::WalkKey::of(out, dims, &ins, reduced);
    if let Some(p) = memo.get(&key) {
        return p.clone();
    }
    let p = key.walk();
    memo.insert(key, p.clone());
    p
}

/// Walks by what they depend on (hashed with a fixed, fast hasher).
pub(super) type WalkMemo =
    std::collections::HashMap<walk::WalkKey, Option<WalkPlan>, foldhash::fast::FixedState>;

impl Engine {
    /// The planner's measuring engine: `name`, placed in LM in a `Time`-stepped layout,
    /// is the output stream of a kernel measured apart, whose task is `producer`; the
    /// next op to read it reads it slice by slice, as in the run. It holds `buffers:`
    /// slices if the producer gave it, else `held` (the default the caller decided: two
    /// where two fit beside what lived when the producer allocated it).
    pub fn assume_stream(
        &mut self,
        t: TensorId,
        (buffers, held): (Option<i64>, u64),
        producer: Task,
    ) -> Result<(), SimError> {
        let Some(r) = self.state.tensors.get(t).and_then(|s| s.lm.clone()) else {
            return Err(ErrorKind::StreamNotInLm(self.state.name(t).to_string()).into());
        };
        let lm = self.state.machine.leaf_memory_bytes() / self.state.machine.word_bytes.max(1);
        let asked = self.state.hold(t, &r.layout, (0, lm), buffers);
        let (asked, _, fallback, requested) = asked?;
        let held = if requested.is_some() {
            asked
        } else {
            held.clamp(1, r.layout.time_span().max(1))
        };
        self.state.streams.insert(
            r.region,
            StreamState {
                tensor: t,
                producer: usize::MAX,
                slices: r.layout.time_span(),
                slice_words: r.layout.footprint_words(),
                buffers: held,
                requested,
                fallback,
                log_at: 0,
                consumer: None,
                sends: 0,
                resends: 0,
                resend_cycles: 0,
                external: Some(Box::new(producer)),
            },
        );
        Ok(())
    }

    /// The walk of the op being recorded: its stream inputs (the first read of a
    /// stream), their sends and re-sends, and the producers' stages the re-sends charge
    /// again.
    pub(super) fn lower_walk(
        &mut self,
        plan: Option<(WalkPlan, bool)>,
        reads: &[RegionId],
        writes: &[RegionId],
        own_cycles: u64,
    ) -> (Option<Walk>, Vec<net::Stage>) {
        let Some((plan, deferred)) = plan else {
            return (None, Vec::new());
        };
        let index = self.rec.ops.len();
        let mut chosen: Vec<Option<(RegionId, u32, u32, usize)>> = Vec::new();
        for (i, need) in plan.inputs.iter().enumerate() {
            let pick = match reads.get(i) {
                // An operand read twice (`a + a`) is one stream.
                Some(r) if !need.is_empty() && !chosen.iter().flatten().any(|c| c.0 == *r) => {
                    match self.state.streams.get(r) {
                        // Its first reader, or an op writing the region it reads (the
                        // Reduce after a partial kernel, in place: slice by slice as the
                        // kernel makes them); a later reader when LM holds every slice.
                        Some(st)
                            if (st.consumer.is_none() || st.buffers >= st.slices)
                                && (st.external.is_some()
                                    || st.producer < self.rec.tasks.len()) =>
                        {
                            Some((*r, st.buffers as u32, st.slices as u32, st.producer))
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            chosen.push(pick);
        }
        let sources: Vec<Option<Source>> = chosen
            .iter()
            .map(|c| {
                c.map(|(region, buffers, slices, p)| Source {
                    region,
                    buffers,
                    slices,
                    producer: match (self.state.streams)
                        .get(&region)
                        .and_then(|s| s.external.as_deref())
                    {
                        Some(t) => t,
                        None => &self.rec.tasks[p],
                    },
                })
            })
            .collect();
        // A transfer reading a stream slice by slice produces its own as it goes.
        let deferred = deferred && sources.iter().all(Option::is_none);
        let walk = lowering::walk_of(&mut self.walks.sends, &plan, own_cycles, deferred, &sources);
        let mut extra = Vec::new();
        for input in &walk.inputs {
            let Some(st) = self.state.streams.get_mut(&input.region) else {
                continue;
            };
            if st.consumer.is_some() || writes.contains(&input.region) {
                // A later reader of a stream held whole (no buffer taken, nothing
                // re-sent), or an op writing it in place: not its first reader.
                continue;
            }
            st.consumer = Some(index);
            st.sends = input.sends.len() as u64;
            st.resends = input.resends();
            st.resend_cycles = input.resend_cycles();
            if st.resends == 0 {
                continue;
            }
            let (r, n) = (st.resends, st.slices.max(1));
            let scale = |v: u64| (v as u128 * r as u128 / n as u128).min(u64::MAX as u128) as u64;
            if st.external.is_some() {
                // Its producer's stages are another engine's.
                continue;
            }
            if let Some(rec) = self.rec.records.get(st.producer) {
                let stages = rec.again.as_deref().unwrap_or(&rec.stages);
                extra.extend(stages.iter().map(|s| net::Stage {
                    bytes: scale(s.bytes),
                    child_bytes: scale(s.child_bytes),
                    max_port_bytes: scale(s.max_port_bytes),
                    max_child_bytes: scale(s.max_child_bytes),
                    cycles: scale(s.cycles),
                    ..*s
                }));
            }
        }
        (Some(walk), extra)
    }
}
