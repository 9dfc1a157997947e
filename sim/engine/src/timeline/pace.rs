//! A walk's steady pace in closed form (docs/model.md, streams).
//!
//! A walk's steps, and the sends of the streams they read, are placed one by one
//! ([`super::streams`]). Their shares of the op's cycles and holds repeat every `p` steps
//! (`p` the least count of steps after which every share rule starts over: one where the
//! shares are even). Placing `p` steps — a **macro step** — is a function of a small
//! state: the end of the last step, the lags of what was booked behind what was due,
//! and per stream read one new send a step, its last arrival, its lags and the ends of
//! the steps that last read the buffers its next sends take. Where every resource those
//! steps hold is free of any other booking from there on, that function does not look
//! at the busy table, and it commutes with moving the state in time. So when one macro
//! step, placed one by one, leaves the state it found moved by a period `P`, every later
//! macro step does the same: the one before it moved by `P`, for as long as the streams
//! are read the same way. Those macro steps are booked as trains (one per resource: the
//! holds of the macro step placed one by one, repeated every `P`,
//! [`super::Busy::hold_train`]) and their times written in closed form: the same
//! bookings and times as one by one (`timeline/tests.rs` places random stream programs
//! both ways and compares every placement and every resource's busy state).

use super::busy::{Booking, Busy};
use super::repeated::Repeated;
use super::sends::SendList;
use super::streams::{Produced, StreamIn, Walk, WalkIn, WalkRun, mul_div};
use super::{Hold, Resource, Train};
use mnsim_arch::arith::{gcd, lcm};

/// Steps between two looks for a steady pace, after a look that found none.
pub(super) const CHECK: u64 = 16;

/// Steps of a train whose times are written per unit of [`super::Timeline::work`]:
/// writing a step's times (its arrival, its end, the slice it marks sent) takes some
/// fraction of booking it one by one.
pub(super) const TIMES_PER_WORK: u64 = 8;

/// The most steps of a macro step.
const MAX_STEPS: u64 = 64;

/// Steps after which `n` near-equal shares of `total` start over (the shares of step
/// `j` and `j + period` are the same).
fn share_period(total: u64, n: u64) -> u64 {
    n / gcd(total % n, n)
}

/// The steps after which a task's share of `cycles` and of every hold over `n` parts
/// start over.
fn shares_period(cycles: u64, holds: &[Hold], n: u64) -> Option<u64> {
    let n = n.max(1);
    (holds.iter()).try_fold(share_period(cycles, n), |p, h| {
        lcm(p, share_period(h.cycles, n))
    })
}

/// How a walk reads one input over a stretch of steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    /// A new send each step, of a slice not sent before, into the buffer of the send
    /// `buffers` before it; from a deferred transfer.
    New { buffers: u64 },
    /// The same send every step, arrived before the stretch.
    Same(u32),
}

/// A walk's looks for a steady pace: its macro step, and when to look next.
pub(super) struct Pacer {
    /// Steps of a macro step.
    p: u64,
    /// The step count at which to look next, and the looks that found none in a row.
    next: u64,
    misses: u32,
}

/// What a macro step that left its state moved did, to repeat: its period, its steps'
/// ends, and per input reading new sends their arrivals and what they booked of each
/// hold; what its steps booked of each hold.
struct Macro {
    period: u64,
    ends: Vec<u64>,
    arrivals: Vec<Vec<u64>>,
    sent: Vec<Vec<u64>>,
    booked: Vec<u64>,
}

/// A [`Busy`] that keeps every hold made through it.
struct Recorder<'a> {
    busy: &'a mut dyn Busy,
    holds: Vec<Booking>,
}

/// The holds of one resource in a macro step, as a train repeats them: the task that
/// held it, the first hold's start, and every hold's offset from it and cycles.
struct Pattern {
    resource: Resource,
    task: usize,
    start: u64,
    holds: Vec<(u64, u64)>,
}

impl Busy for Recorder<'_> {
    fn earliest(&mut self, r: Resource, at: u64, cycles: u64) -> (u64, Option<usize>) {
        self.busy.earliest(r, at, cycles)
    }
    fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64) {
        if cycles > 0 {
            self.holds.push(Booking {
                resource: r,
                task,
                start,
                end: start.saturating_add(cycles),
            });
        }
        self.busy.hold(r, task, start, cycles);
    }
    fn last_end(&mut self, r: Resource) -> u64 {
        self.busy.last_end(r)
    }
}

impl Pacer {
    /// A walk's pacer, if its shares and its deferred inputs' repeat within
    /// [`MAX_STEPS`] steps.
    pub(super) fn new(w: &Walk, holds: &[Hold], ins: &[WalkIn]) -> Option<Pacer> {
        let mut p = shares_period(w.own_cycles, holds, u64::from(w.steps))?;
        for s in ins {
            if let Some(Produced::Deferred {
                cycles,
                slices,
                holds,
                ..
            }) = &s.source
            {
                p = lcm(p, shares_period(*cycles, holds, u64::from(*slices))?)?;
            }
        }
        (p <= MAX_STEPS).then_some(Pacer {
            p,
            next: 0,
            misses: 0,
        })
    }

    /// After `run`'s last step: looks for a steady pace and, where one is found, places
    /// its macro steps in closed form up to where an input stops being read the same
    /// way, or to the step before the last. Returns the work done: the macro step
    /// placed one by one to look (its sends and steps, one each), then the trains (one
    /// per resource) and the steps whose times were written (one per
    /// [`TIMES_PER_WORK`]).
    pub(super) fn look(
        &mut self,
        w: &Walk,
        holds: &[Hold],
        task: (usize, u64),
        run: &mut WalkRun,
        busy: &mut dyn Busy,
    ) -> u64 {
        let (p, n) = (self.p, u64::from(w.steps));
        if run.j == 0 || run.j < self.next || run.j.saturating_add(2 * p + 1) >= n {
            return 0;
        }
        let Some(reads) = self.reads(w, holds, run, busy) else {
            return self.miss(run.j);
        };
        let before = Snapshot::take(run, &reads);
        let mut rec = Recorder {
            busy,
            holds: Vec::new(),
        };
        let mut work = 0;
        let mut ends = Vec::with_capacity(p as usize);
        for _ in 0..p {
            work += run.step(w, holds, task, &mut rec);
            ends.push(run.prev_end);
        }
        let booked = rec.holds;
        let Some(m) = before.moved(w, holds, run, &reads, &ends) else {
            return work + self.miss(run.j);
        };
        self.misses = 0;
        let Some(patterns) = patterns(booked, m.period) else {
            return work;
        };
        let count = reach(w, run, &reads, p);
        if count == 0 {
            return work;
        }
        for t in &patterns {
            let train = Train {
                start: t.start.saturating_add(m.period),
                period: m.period,
                count,
                pattern: &t.holds,
            };
            busy.hold_train(t.resource, t.task, train);
        }
        repeat(w, run, &reads, &m, count);
        let steps = count.saturating_mul(p);
        work + patterns.len() as u64 + steps / TIMES_PER_WORK
    }

    /// A look that found no pace: the next is later, twice as far each time up to 16
    /// looks apart.
    fn miss(&mut self, j: u64) -> u64 {
        self.misses = (self.misses + 1).min(4);
        self.next = j + (CHECK << self.misses);
        0
    }

    /// How the next macro step reads each input, if the walk may run steady from here:
    /// every input read the same way over the macro step (and a new send the step
    /// before, where it reads new sends), and the resources of the walk and of the
    /// inputs read anew, none shared, free of any other booking from the walk's end and
    /// each stream's last arrival on.
    fn reads(
        &self,
        w: &Walk,
        holds: &[Hold],
        run: &WalkRun,
        busy: &mut dyn Busy,
    ) -> Option<Vec<Read>> {
        let (ja, p) = (run.j - 1, self.p);
        let mut used: Vec<Resource> = Vec::new();
        let mut fresh = |holds: &[Hold], from: u64, busy: &mut dyn Busy| {
            (holds.iter().filter(|h| h.cycles > 0)).all(|h| {
                let new = !used.contains(&h.resource) && busy.last_end(h.resource) <= from;
                used.push(h.resource);
                new
            })
        };
        if !fresh(holds, run.prev_end, busy) {
            return None;
        }
        let mut reads = Vec::with_capacity(w.inputs.len());
        for (i, s) in w.inputs.iter().zip(&run.ins) {
            let m0 = *i.need.get(ja as usize)?;
            let mut steps = (ja + 1..=ja + p).map(|t| i.need.get(t as usize).copied());
            if steps.all(|m| m == Some(m0)) {
                // Arrived before step `ja`, which read it.
                reads.push(Read::Same(m0));
                continue;
            }
            let b = u64::from(i.buffers.max(1));
            let Some(Produced::Deferred { slices, holds, .. }) = &s.source else {
                return None;
            };
            let new = (1..=p).all(|k| {
                let m = u64::from(m0) + k;
                let t = (ja + k) as usize;
                i.need.get(t).map(|&x| u64::from(x)) == Some(m)
                    && i.sends.get(m as usize).is_some_and(|(slice, ev)| {
                        ev.map(u64::from) == m.checked_sub(b)
                            && s.seen.get(slice as usize) == Some(&false)
                    })
            });
            let ok = new
                && s.arrival.len() as u64 == u64::from(m0) + 1
                && u64::from(m0) + 1 >= b
                && s.firsts + p < u64::from(*slices)
                && fresh(holds, s.prev, busy);
            ok.then_some(())?;
            reads.push(Read::New { buffers: b });
        }
        Some(reads)
    }
}

/// The state a macro step starts from, as [`Snapshot::moved`] compares it.
struct Snapshot {
    end: u64,
    booked: Vec<u64>,
    /// Per input reading new sends: its last arrival, what its sends booked, its first
    /// sends, and the last uses of the sends whose buffers its next sends take.
    ins: Vec<(u64, Vec<u64>, u64, Vec<u64>)>,
}

impl Snapshot {
    fn take(run: &mut WalkRun, reads: &[Read]) -> Snapshot {
        let ins = (run.ins.iter_mut().zip(reads))
            .filter_map(|(s, r)| match *r {
                Read::New { buffers } => {
                    if let Some(Produced::Deferred { holds, .. }) = &s.source {
                        s.sent.resize(holds.len(), 0);
                    }
                    let m = s.arrival.len();
                    let uses = s.last_use[m - buffers as usize..].to_vec();
                    Some((s.prev, s.sent.clone(), s.firsts, uses))
                }
                Read::Same(_) => None,
            })
            .collect();
        Snapshot {
            end: run.prev_end,
            booked: run.booked.clone(),
            ins,
        }
    }

    /// What the macro step just placed (its steps' `ends`) did, if it left the state it
    /// found moved by its period: the walk's end, each input's last arrival and the last
    /// uses of the buffers its next sends take moved by it, and every lag of what was
    /// booked behind what was due the same.
    fn moved(
        &self,
        w: &Walk,
        holds: &[Hold],
        run: &WalkRun,
        reads: &[Read],
        ends: &[u64],
    ) -> Option<Macro> {
        let n = u64::from(w.steps);
        let p = ends.len() as u64;
        let period = run.prev_end.checked_sub(self.end).filter(|&d| d > 0)?;
        let (ja, jb) = (run.j - p, run.j);
        let delta =
            |b: &[u64], a: &[u64]| -> Vec<u64> { b.iter().zip(a).map(|(b, a)| b - a).collect() };
        let booked = delta(&run.booked, &self.booked);
        let due = |h: u64, (a, b): (u64, u64), n: u64| mul_div(h, b, n) - mul_div(h, a, n);
        let lags = (holds.iter().zip(&booked)).all(|(h, &d)| d == due(h.cycles, (ja, jb), n));
        if !lags {
            return None;
        }
        let mut arrivals = Vec::new();
        let mut sent = Vec::new();
        let new = (run.ins.iter().zip(reads)).filter(|(_, r)| matches!(r, Read::New { .. }));
        for ((s, r), (prev, sent0, firsts, uses)) in new.zip(&self.ins) {
            let (Read::New { buffers }, Some(Produced::Deferred { slices, holds, .. })) =
                (*r, &s.source)
            else {
                return None;
            };
            let k = u64::from(*slices);
            let m = s.arrival.len();
            let moved = s.prev.checked_sub(*prev) == Some(period)
                && s.firsts == firsts + p
                && m as u64 >= p
                && (s.last_use[m - buffers as usize..].iter().zip(uses))
                    .all(|(b, a)| b.checked_sub(*a) == Some(period))
                && (holds.iter().zip(s.sent.iter().zip(sent0)))
                    .all(|(h, (b, a))| b - a == due(h.cycles, (*firsts, s.firsts), k));
            if !moved {
                return None;
            }
            arrivals.push(s.arrival[m - p as usize..].to_vec());
            sent.push(delta(&s.sent, sent0));
        }
        Some(Macro {
            period,
            ends: ends.to_vec(),
            arrivals,
            sent,
            booked,
        })
    }
}

/// A macro step's bookings as the patterns of trains of `period`, one per resource
/// (`None` if a resource was held by two tasks or its holds would overlap the next
/// period's).
fn patterns(mut booked: Vec<Booking>, period: u64) -> Option<Vec<Pattern>> {
    booked.sort_by_key(|b| (b.resource, b.start));
    let mut out: Vec<Pattern> = Vec::new();
    for b in booked {
        let hold = |start: u64| (b.start - start, b.end - b.start);
        match out.last_mut() {
            Some(t) if t.resource == b.resource => {
                (t.task == b.task).then_some(())?;
                t.holds.push(hold(t.start));
            }
            _ => out.push(Pattern {
                resource: b.resource,
                task: b.task,
                start: b.start,
                holds: vec![hold(b.start)],
            }),
        }
    }
    let valid = out.iter().all(|t| {
        let train = Train {
            start: t.start,
            period,
            count: 2,
            pattern: &t.holds,
        };
        train.is_valid()
    });
    valid.then_some(out)
}

/// How many macro steps of `p` after the walk's last step read every input as `reads`
/// says, each step before the walk's last and each new send before its stream's last:
/// the slices they send are marked sent.
fn reach(w: &Walk, run: &mut WalkRun, reads: &[Read], p: u64) -> u64 {
    let j0 = run.j;
    // The last step a macro step may reach, and per input the last step it marked.
    let mut last = u64::from(w.steps).saturating_sub(2);
    let mut marked: Vec<u64> = Vec::with_capacity(reads.len());
    for ((s, i), r) in run.ins.iter_mut().zip(&w.inputs).zip(reads) {
        let steps = (last + 1).saturating_sub(j0) as usize;
        let t = match *r {
            Read::Same(m0) => {
                let need = i.need.get(j0 as usize..).unwrap_or_default();
                j0 + need.iter().take(steps).take_while(|&&m| m == m0).count() as u64
            }
            Read::New { buffers } => {
                let Some(Produced::Deferred { slices, .. }) = &s.source else {
                    return 0;
                };
                let slices = u64::from(*slices);
                j0 + mark_new(s, i, (j0, steps), buffers, slices)
            }
        };
        last = t.saturating_sub(1).min(last);
        marked.push(t);
        if t == j0 {
            break;
        }
    }
    let count = if last + 1 > j0 {
        (last + 1 - j0) / p
    } else {
        0
    };
    // Slices marked past the macro steps are not sent yet.
    let keep = j0 + count * p;
    for (((s, i), r), &upto) in run.ins.iter_mut().zip(&w.inputs).zip(reads).zip(&marked) {
        if let Read::New { .. } = r {
            let m0 = s.arrival.len() as u64;
            for t in keep..upto {
                if let Some((slice, _)) = i.sends.get((m0 + t - j0) as usize) {
                    s.seen[slice as usize] = false;
                }
            }
        }
    }
    count
}

/// How many of the `steps` steps from `j0` on read input `s` (of `i`, held in `buffers`
/// slices, from a stream of `slices`) anew, one after another: each its next send, a
/// slice not sent before (but the stream's last) into the buffer of the send `buffers`
/// before it. Their slices are marked sent.
fn mark_new(
    s: &mut WalkIn,
    i: &StreamIn,
    (j0, steps): (u64, usize),
    buffers: u64,
    slices: u64,
) -> u64 {
    let m0 = s.arrival.len() as u64;
    // A step's first send is before the stream's last.
    let firsts = slices.saturating_sub(s.firsts.saturating_add(1)) as usize;
    let need = i.need.get(j0 as usize..).unwrap_or_default();
    // A step reads send `x` < 2^32: no send past that is read anew. In 32 bits from
    // here (the loop runs over every step of a steady stretch).
    let Ok(first) = u32::try_from(m0) else {
        return 0;
    };
    let room = (u64::from(u32::MAX) - m0 + 1)
        .try_into()
        .unwrap_or(usize::MAX);
    let buffers = u32::try_from(buffers).ok();
    let seen = &mut s.seen[..];
    // Step `k` reads send `first + k`, of slice `slice`, not sent before.
    let mut new = |k: usize, x: u32, slice: u32| {
        // At most `u32::MAX` (`room`): no overflow.
        let m = first.wrapping_add(k as u32);
        x == m
            && match seen.get_mut(slice as usize) {
                Some(f) if !*f => {
                    *f = true;
                    true
                }
                _ => false,
            }
    };
    let mut k = 0;
    match &i.sends {
        // Each send takes the buffer of the send `lag` before: the buffer the step
        // needs wherever `lag` is `buffers`.
        SendList::Lagged { slices, lag } => {
            let sends = slices.get(m0 as usize..).unwrap_or_default();
            let limit = (steps.min(firsts).min(room)).min(need.len().min(sends.len()));
            let same = buffers == Some(*lag);
            for (&x, &slice) in need[..limit].iter().zip(&sends[..limit]) {
                let m = first.wrapping_add(k as u32);
                let ev = m.checked_sub(*lag);
                if (!same && ev != buffers.and_then(|b| m.checked_sub(b))) || !new(k, x, slice) {
                    break;
                }
                k += 1;
            }
        }
        SendList::Table(t) => {
            let sends = t.get(m0 as usize..).unwrap_or_default();
            let limit = (steps.min(firsts).min(room)).min(need.len().min(sends.len()));
            for (&x, &(slice, ev)) in need[..limit].iter().zip(&sends[..limit]) {
                let m = first.wrapping_add(k as u32);
                if ev != buffers.and_then(|b| m.checked_sub(b)) || !new(k, x, slice) {
                    break;
                }
                k += 1;
            }
        }
    }
    k as u64
}

/// Writes the times of `count` macro steps of `m` after the walk's last step: each
/// step's end, the output slice it completes, and the arrivals, last uses and counts of
/// the sends it reads (in bulk: [`Repeated`]).
fn repeat(w: &Walk, run: &mut WalkRun, reads: &[Read], m: &Macro, count: u64) {
    let p = m.ends.len() as u64;
    let j0 = run.j;
    let ends = Repeated::new(&m.ends, m.period, count);
    if let Some(out) = w.out.get(j0 as usize..) {
        ends.scatter(out, &mut run.ready);
    }
    let end = ends.last().unwrap_or(run.prev_end);
    let mut new = 0;
    for (s, r) in run.ins.iter_mut().zip(reads) {
        match *r {
            Read::Same(m0) => s.last_use[m0 as usize] = end,
            Read::New { .. } => {
                Repeated::new(&m.arrivals[new], m.period, count).extend_onto(&mut s.arrival);
                ends.extend_onto(&mut s.last_use);
                s.firsts += count * p;
                s.prev = s.arrival.last().copied().unwrap_or(s.prev);
                for (b, d) in s.sent.iter_mut().zip(&m.sent[new]) {
                    *b = b.saturating_add(d.saturating_mul(count));
                }
                new += 1;
            }
        }
    }
    for (b, d) in run.booked.iter_mut().zip(&m.booked) {
        *b = b.saturating_add(d.saturating_mul(count));
    }
    run.prev_end = end;
    run.j += count * p;
}
