//! Streams on the timeline (docs/model.md, streams): a task that walks `Time` steps.
//!
//! A task with a [`Walk`] runs its steps one after another, its own cycles spread evenly
//! over them. A step starts when the previous step has ended and the slice of every
//! streamed input it reads has arrived. A slice arrives one slice-time after its send
//! starts; a send starts when the previous send of the same stream has arrived (a
//! stream's slices cross the network one after another, each paying its latencies, as
//! the op-by-op figure charges them), the buffer it takes is no longer read (the last
//! step reading the slice it replaces has ended: with one buffer, the transfer of step
//! k+1 waits for the consumer's step k; with two it runs during it), and the resources
//! of a slice are free.
//!
//! A transfer whose output is a stream (a Load, a Relayout) is **deferred**: it is
//! placed (its start fixed in program order) but its sends are placed only when its
//! consumer is, in the order the consumer's walk needs them, so that several streams
//! of one consumer share their ports slice by slice. A stream nothing streams from is
//! sent as fast as its resources allow when something else needs it (its region is
//! read whole, written or freed) or when the program ends. A kernel's output stream is
//! not deferred: its slice k is ready when the walk step completing it ends.
//!
//! A slice the walk needs again after it left LM is **re-sent**: the consumer pays the
//! producer's cycles and holds per slice again (in both schedules).

use super::pace::Pacer;
use super::sends::SendList;
use super::steady::send_chain;
use super::{Busy, Hold, Timeline};
use crate::ids::RegionId;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `a · b / c` rounded down (`c` > 0), in 64 bits where the product fits (a 128-bit
/// division is several times slower, and this runs for every step of every walk), else
/// in 128 bits; saturating.
pub(super) fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => (a as u128 * b as u128 / c as u128).min(u64::MAX as u128) as u64,
    }
}

/// `part`-th of `n` near-equal shares of `total` (the shares sum to `total`).
pub fn share(total: u64, part: u64, n: u64) -> u64 {
    if n == 0 || part >= n {
        return 0;
    }
    mul_div(total, part + 1, n) - mul_div(total, part, n)
}

/// How a task walks `Time` steps (see [`crate::lowering::walk`]).
#[derive(Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Walk {
    /// Steps of the walk.
    pub steps: u32,
    /// The task's own cycles (its work without re-sends), spread evenly over the steps.
    pub own_cycles: u64,
    /// Per walk step, the output slice it writes (empty: the output is not a stream).
    /// Shared: the planner copies a task for every plan it places.
    pub out: Arc<[u32]>,
    /// Slices of the output stream (0: the output is not a stream).
    pub out_slices: u32,
    /// The output is a transfer's stream: its sends are placed with its consumer's.
    pub deferred: bool,
    /// The streams the task reads slice by slice.
    pub inputs: Vec<StreamIn>,
}

/// A stream read slice by slice: from the region `region`, held in `buffers` slices.
#[derive(Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StreamIn {
    pub region: RegionId,
    pub buffers: u32,
    /// Per walk step, the send whose slice the step reads (shared, as `Walk::out`).
    pub need: Arc<[u32]>,
    /// Per send in order: the slice it carries, and the send whose buffer it takes.
    pub sends: SendList,
    /// The producer's slices, cycles and holds: a re-sent slice costs one slice of them.
    pub slices: u32,
    pub producer_cycles: u64,
    pub producer_holds: Vec<Hold>,
    /// Sends of a slice already sent once: [`resends_of`] `sends` and `slices` (read
    /// wherever the walk is lowered or placed, so counted once).
    pub resent: u64,
}

/// Field by field, so that `clone_from` reuses the inputs' vectors ([`super::Task`]).
impl Clone for Walk {
    fn clone(&self) -> Walk {
        let Walk {
            steps,
            own_cycles,
            out,
            out_slices,
            deferred,
            inputs,
        } = self;
        Walk {
            steps: *steps,
            own_cycles: *own_cycles,
            out: out.clone(),
            out_slices: *out_slices,
            deferred: *deferred,
            inputs: inputs.clone(),
        }
    }

    fn clone_from(&mut self, source: &Walk) {
        let Walk {
            steps,
            own_cycles,
            out,
            out_slices,
            deferred,
            inputs,
        } = source;
        self.steps = *steps;
        self.own_cycles = *own_cycles;
        self.out.clone_from(out);
        self.out_slices = *out_slices;
        self.deferred = *deferred;
        self.inputs.clone_from(inputs);
    }
}

impl Clone for StreamIn {
    fn clone(&self) -> StreamIn {
        let StreamIn {
            region,
            buffers,
            need,
            sends,
            slices,
            producer_cycles,
            producer_holds,
            resent,
        } = self;
        StreamIn {
            region: *region,
            buffers: *buffers,
            need: need.clone(),
            sends: sends.clone(),
            slices: *slices,
            producer_cycles: *producer_cycles,
            producer_holds: producer_holds.clone(),
            resent: *resent,
        }
    }

    fn clone_from(&mut self, source: &StreamIn) {
        let StreamIn {
            region,
            buffers,
            need,
            sends,
            slices,
            producer_cycles,
            producer_holds,
            resent,
        } = source;
        self.region = *region;
        self.buffers = *buffers;
        self.need.clone_from(need);
        self.sends.clone_from(sends);
        self.slices = *slices;
        self.producer_cycles = *producer_cycles;
        self.producer_holds.clone_from(producer_holds);
        self.resent = *resent;
    }
}

impl StreamIn {
    /// Sends of a slice already sent once.
    pub fn resends(&self) -> u64 {
        self.resent
    }

    /// Cycles of the re-sends: the producer's cycles per slice, once per re-send.
    pub fn resend_cycles(&self) -> u64 {
        scale(self.producer_cycles, self.resends(), self.slices)
    }

    /// Resources the re-sends hold, each for the producer's hold per slice, once per re-send.
    pub fn resend_holds(&self) -> Vec<Hold> {
        self.holds_of(self.resends())
    }

    /// The producer's holds per slice, `r` times.
    fn holds_of(&self, r: u64) -> Vec<Hold> {
        if r == 0 {
            return Vec::new();
        }
        self.producer_holds
            .iter()
            .map(|h| Hold {
                resource: h.resource,
                cycles: scale(h.cycles, r, self.slices),
            })
            .collect()
    }
}

/// `total × times / slices`, saturating.
fn scale(total: u64, times: u64, slices: u32) -> u64 {
    mul_div(total, times, u64::from(slices.max(1)))
}

/// When a stream's slices are ready.
#[derive(Clone, Debug)]
pub(super) enum Produced {
    /// A transfer's stream whose sends are not placed yet.
    Deferred {
        task: usize,
        start: u64,
        cycles: u64,
        slices: u32,
        holds: Vec<Hold>,
    },
    /// Per slice, the cycle it is ready (shared: a stream is read by every walk step
    /// and a timeline is cloned where a search resumes it; a vector, which becomes it
    /// without a copy and is kept for later walks when the timeline ends: `spare.rs`).
    Fixed(Arc<Vec<u64>>),
}

/// One send of a deferred transfer: slice `k` of `slices`, starting no earlier than
/// `after`, booking its share of the transfer's holds (`booked`: what the stream's earlier
/// sends booked of each); returns its arrival.
pub(super) fn send(
    busy: &mut dyn Busy,
    task: usize,
    (cycles, slices, holds): (u64, u32, &[Hold]),
    (k, after): (u64, u64),
    booked: &mut [u64],
) -> u64 {
    book_step(
        holds,
        booked,
        (cycles, k, u64::from(slices)),
        task,
        after,
        busy,
    )
}

/// Step `j` of `n` of `own` cycles (a walk's step, or a stream's send), from `st` at the
/// earliest: books its share of every hold (the part of `h` due by the step's end that
/// is not booked yet, at most the step's length; all that is left on the last step) once
/// those resources are free, and returns the step's end. Over the `n` steps each hold is
/// booked whole (`h` ≤ `own`: the cumulative part due never runs more than the steps'
/// length ahead), and no step outlasts its share of `own` but by the last step's
/// remainder.
pub(super) fn book_step(
    holds: &[Hold],
    booked: &mut [u64],
    (own, j, n): (u64, u64, u64),
    index: usize,
    st: u64,
    busy: &mut dyn Busy,
) -> u64 {
    let n = n.max(1);
    let len = share(own, j, n);
    let due = |h: &Hold| mul_div(h.cycles, j + 1, n);
    let part = |h: &Hold, b: u64| {
        let left = due(h).saturating_sub(b);
        if j + 1 == n { left } else { left.min(len) }
    };
    // The parts this step books (a task holds a handful of resources: on the stack).
    let mut buf = [(super::Resource::VectorUnit, 0u64, 0usize); 8];
    let mut heap = Vec::new();
    let need: &mut [(super::Resource, u64, usize)] = if holds.len() <= buf.len() {
        &mut buf[..holds.len()]
    } else {
        heap.resize(holds.len(), (super::Resource::VectorUnit, 0, 0));
        &mut heap
    };
    let mut k = 0;
    for (i, (h, &b)) in holds.iter().zip(booked.iter()).enumerate() {
        let p = part(h, b);
        if p > 0 {
            need[k] = (h.resource, p, i);
            k += 1;
        }
    }
    let need = &need[..k];
    let st = super::busy::fit(busy, need.iter().map(|&(r, p, _)| (r, p)), st).0;
    let mut e = st.saturating_add(len);
    for &(r, p, i) in need {
        busy.hold(r, index, st, p);
        booked[i] += p;
        e = e.max(st.saturating_add(p));
    }
    e
}

/// A stream a walk reads, as the walk goes: per send its arrival and the end of the
/// last step that read it, the slices sent once, and what the sends booked.
pub(super) struct WalkIn {
    pub arrival: Vec<u64>,
    pub last_use: Vec<u64>,
    pub seen: Vec<bool>,
    pub firsts: u64,
    resends: u64,
    total_resends: u64,
    resend_cycles: u64,
    resend_holds: Vec<Hold>,
    /// What the sends and the re-sends booked so far of each hold.
    pub sent: Vec<u64>,
    resent: Vec<u64>,
    /// The latest arrival.
    pub prev: u64,
    pub source: Option<Produced>,
    whole: u64,
}

impl WalkIn {
    /// The walk's next send of `input`: a slice's first send (a deferred transfer's send,
    /// or when a fixed stream's slice is ready), or a re-send the walk's task `index`
    /// issues from `s0` on; each once the buffer it takes is no longer read.
    fn send_next(&mut self, input: &StreamIn, (index, s0): (usize, u64), busy: &mut dyn Busy) {
        let (slice, evicts) =
            (input.sends.get(self.arrival.len())).expect("a step reads a send of its list");
        let free = evicts.map_or(0, |e| self.last_use[e as usize]);
        let first = self.seen.get(slice as usize).is_some_and(|x| !x);
        let a = if first {
            self.seen[slice as usize] = true;
            let k = self.firsts;
            self.firsts += 1;
            match &self.source {
                Some(Produced::Deferred {
                    task,
                    start,
                    cycles,
                    slices,
                    holds,
                }) => {
                    self.sent.resize(holds.len(), 0);
                    send(
                        busy,
                        *task,
                        (*cycles, *slices, holds),
                        (k, (*start).max(self.prev).max(free)),
                        &mut self.sent,
                    )
                }
                Some(Produced::Fixed(t)) => {
                    t.get(slice as usize).or(t.last()).copied().unwrap_or(0)
                }
                None => self.whole,
            }
        } else {
            // A re-send: the producer's slice again, issued by this task.
            let q = self.resends;
            self.resends += 1;
            self.resent.resize(self.resend_holds.len(), 0);
            book_step(
                &self.resend_holds,
                &mut self.resent,
                (self.resend_cycles, q, self.total_resends),
                index,
                s0.max(self.prev).max(free),
                busy,
            )
        };
        self.prev = a;
        self.arrival.push(a);
        self.last_use.push(0);
    }
}

/// A walk in progress: its inputs as read so far, what its steps booked of each hold,
/// the end of its last step, when each output slice is ready, and the steps placed.
pub(super) struct WalkRun {
    pub ins: Vec<WalkIn>,
    pub booked: Vec<u64>,
    pub prev_end: u64,
    pub ready: Vec<u64>,
    pub j: u64,
}

impl WalkRun {
    /// Places the walk's next step (of `w`, task `index` started at `s0`) and the sends
    /// it reads that are not sent yet; returns the work (one per send and step).
    pub(super) fn step(
        &mut self,
        w: &Walk,
        holds: &[Hold],
        (index, s0): (usize, u64),
        busy: &mut dyn Busy,
    ) -> u64 {
        let (j, n) = (self.j, u64::from(w.steps.max(1)));
        let mut work = 1;
        let mut st = self.prev_end;
        for (s, input) in self.ins.iter_mut().zip(&w.inputs) {
            let Some(&m) = input.need.get(j as usize) else {
                continue;
            };
            while (s.arrival.len() as u32) <= m {
                s.send_next(input, (index, s0), busy);
                work += 1;
            }
            st = st.max(s.arrival[m as usize]);
        }
        let e = book_step(
            holds,
            &mut self.booked,
            (w.own_cycles, j, n),
            index,
            st,
            busy,
        );
        for (s, input) in self.ins.iter_mut().zip(&w.inputs) {
            if let Some(&m) = input.need.get(j as usize) {
                s.last_use[m as usize] = e;
            }
        }
        if let Some(r) = (w.out.get(j as usize)).and_then(|&o| self.ready.get_mut(o as usize)) {
            *r = e;
        }
        self.prev_end = e;
        self.j += 1;
        work
    }
}

impl Timeline {
    /// Places the sends of a deferred stream nothing streams from (as fast as its
    /// resources allow) and records when it ends.
    pub(super) fn flush(&mut self, region: RegionId, busy: &mut dyn Busy) {
        let Some(Produced::Deferred {
            task,
            start,
            cycles,
            slices,
            holds,
        }) = self.produced.get(&region).cloned()
        else {
            return;
        };
        let mut times = self.spare.times(slices as usize);
        let mut booked = vec![0u64; holds.len()];
        let (prev, work) = send_chain(
            busy,
            task,
            (cycles, slices, &holds),
            (0, start),
            &mut booked,
            |t| times.push(t),
        );
        self.work = self.work.saturating_add(work);
        self.finish_stream(region, task, prev);
        self.produced
            .insert(region, Produced::Fixed(Arc::new(times)));
    }

    /// Places every deferred stream's sends, in program order (the end of a program).
    pub fn settle(&mut self, busy: &mut dyn Busy) {
        let mut open: Vec<(usize, RegionId)> = self
            .produced
            .iter()
            .filter_map(|(r, p)| match p {
                Produced::Deferred { task, .. } => Some((*task, *r)),
                Produced::Fixed(_) => None,
            })
            .collect();
        open.sort();
        for (_, r) in open {
            self.flush(r, busy);
        }
    }

    /// A deferred transfer's last slice arrived at `end`: its placement and region say so.
    pub(super) fn finish_stream(&mut self, region: RegionId, task: usize, end: u64) {
        if let Some(p) = self.placed.get_mut(task) {
            p.end = end.max(p.start);
        }
        let u = self.region(region);
        u.written = Some((end, task));
        if u.used.is_none_or(|x| x.0 <= end) {
            u.used = Some((end, task));
        }
    }

    /// Deferred streams `task` needs placed before it: read whole, written or freed.
    pub(super) fn flush_for(&mut self, task: &super::Task, busy: &mut dyn Busy) {
        if self.produced.is_empty() {
            return;
        }
        let streamed: Vec<RegionId> = task
            .walk
            .iter()
            .flat_map(|w| w.inputs.iter().map(|i| i.region))
            .collect();
        let mut want: Vec<RegionId> = task
            .reads
            .iter()
            .filter(|r| !streamed.contains(r))
            .chain(&task.writes)
            .chain(task.frees_before.iter().map(|f| &f.0))
            .chain(task.frees_after.iter().map(|f| &f.0))
            .copied()
            .collect();
        want.sort();
        want.dedup();
        for r in want {
            self.flush(r, busy);
        }
    }

    /// Runs a walk from `s0`: returns its end and, per output slice, when it is ready.
    /// The task's own `holds` are booked step by step, each step taking its share of
    /// every hold (never past the step's end but for rounding on the last step), from
    /// when the resources are free; stretches at a steady pace in closed form
    /// ([`super::pace`]).
    pub(super) fn run_walk(
        &mut self,
        w: &Walk,
        holds: &[Hold],
        index: usize,
        s0: u64,
        busy: &mut dyn Busy,
    ) -> (u64, Vec<u64>) {
        let spare = &mut self.spare;
        let ins: Vec<WalkIn> = (w.inputs.iter())
            .map(|i| {
                let resends = i.resends();
                WalkIn {
                    arrival: spare.times(i.sends.len()),
                    last_use: spare.times(i.sends.len()),
                    seen: spare.flags(i.slices.max(1) as usize),
                    firsts: 0,
                    resends: 0,
                    total_resends: resends,
                    resend_cycles: scale(i.producer_cycles, resends, i.slices),
                    resend_holds: i.holds_of(resends),
                    sent: Vec::new(),
                    resent: Vec::new(),
                    prev: 0,
                    source: self.produced.get(&i.region).cloned(),
                    whole: (self.regions.get(&i.region))
                        .and_then(|u| u.written)
                        .map_or(0, |x| x.0),
                }
            })
            .collect();
        let n = u64::from(w.steps.max(1));
        let mut run = WalkRun {
            ins,
            booked: vec![0u64; holds.len()],
            prev_end: s0,
            ready: self.spare.filled(w.out_slices as usize, s0),
            j: 0,
        };
        // Whether the walk may run steady: asked when it reaches its first look (a walk
        // too short to jump never pays for it).
        let mut pacer: Option<Option<Pacer>> = None;
        while run.j < n {
            let work = run.step(w, holds, (index, s0), busy);
            self.work = self.work.saturating_add(work);
            if run.j.is_multiple_of(super::pace::CHECK)
                && run.j + 2 < n
                && let Some(p) = pacer.get_or_insert_with(|| Pacer::new(w, holds, &run.ins))
            {
                let work = p.look(w, holds, (index, s0), &mut run, busy);
                self.work = self.work.saturating_add(work);
            }
        }
        self.finish_consumed(w, &run.ins, busy);
        for s in run.ins {
            self.spare.keep_times(s.arrival);
            self.spare.keep_times(s.last_use);
            self.spare.keep_flags(s.seen);
        }
        (run.prev_end, run.ready)
    }
}
