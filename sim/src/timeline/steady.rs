//! Steady paces in closed form (docs/model.md, streams).
//!
//! A stream's sends, and a walk's steps with the sends they read, are placed one by one
//! ([`super::streams`]). Once they settle into a steady pace — every step the same
//! length, every resource they hold free but for them, each step starting a fixed
//! period after the one before — every later step up to the one before the last is the
//! one before it moved by that period. Those steps are booked as trains
//! ([`super::Busy::hold_train`]) and their times written in closed form: the same
//! bookings and times as one by one (`timeline/tests.rs` places random stream programs
//! both ways and compares every placement and every resource's busy state).

use super::streams::{Produced, Walk, WalkIn, send};
use super::{Busy, Hold, Resource, Train};

/// Steps or sends between two looks for a steady pace.
pub(super) const CHECK: u64 = 16;

/// Steps of a train whose times are written per unit of [`super::Timeline::work`]:
/// writing a step's times (its arrival, its end, the slice it marks sent) takes some
/// fraction of booking it one by one.
pub(super) const TIMES_PER_WORK: u64 = 8;

/// Step ends a walk remembers for [`Pace::jump`] (more than the deepest buffering).
pub(super) const RING: usize = 16;

/// The step length and each hold's part when `cycles` and `holds` share evenly over `n`
/// steps (every hold at most `cycles`).
fn even(cycles: u64, holds: &[Hold], n: u64) -> Option<(u64, Vec<u64>)> {
    let even = n > 0
        && cycles.is_multiple_of(n)
        && (holds.iter()).all(|h| h.cycles.is_multiple_of(n) && h.cycles <= cycles);
    even.then(|| (cycles / n, holds.iter().map(|h| h.cycles / n).collect()))
}

/// Whether `k` steps booked their parts of `holds` exactly, and every resource the parts
/// hold is free from `at` on.
fn on_pace(
    busy: &mut dyn Busy,
    (holds, parts, booked): (&[Hold], &[u64], &[u64]),
    k: u64,
    at: u64,
) -> bool {
    booked.len() == holds.len()
        && (holds.iter().zip(parts).zip(booked)).all(|((h, &p), &b)| {
            Some(b) == p.checked_mul(k) && (p == 0 || busy.last_end(h.resource) <= at)
        })
}

/// Books `count` steps of `task`'s `parts` of `holds`, the first from `start`, one every
/// `period`, and adds them to `booked`.
fn trains(
    busy: &mut dyn Busy,
    task: usize,
    (holds, parts, booked): (&[Hold], &[u64], &mut [u64]),
    (start, period, count): (u64, u64, u64),
) {
    for ((h, &p), b) in holds.iter().zip(parts).zip(booked) {
        if p > 0 {
            let train = Train {
                start,
                period,
                count,
                pattern: &[(0, p)],
            };
            busy.hold_train(h.resource, task, train);
            *b = b.saturating_add(p.saturating_mul(count));
        }
    }
}

/// The sends `from..` of a deferred transfer, one after another from `prev` (each when
/// the previous one has arrived); `arrived` gets each arrival in order; returns the last
/// and the work of placing them (sends one by one and trains, one each).
/// Where the sends reach a steady pace (even shares, the transfer's resources free from
/// the current send on: nothing else books while a chain is placed) they are booked as
/// trains up to the last send.
pub(super) fn send_chain(
    busy: &mut dyn Busy,
    task: usize,
    (cycles, slices, holds): (u64, u32, &[Hold]),
    (from, mut prev): (u64, u64),
    booked: &mut [u64],
    mut arrived: impl FnMut(u64),
) -> (u64, u64) {
    let n = u64::from(slices);
    let even = even(cycles, holds, n);
    let mut k = from;
    let mut work = 0u64;
    while k < n {
        if let Some((len, parts)) = &even
            && k % CHECK == from % CHECK
            && k + 2 < n
            && on_pace(busy, (holds, parts, booked), k, prev)
        {
            let m = n - 1 - k;
            trains(busy, task, (holds, parts, booked), (prev, *len, m));
            work += holds.len() as u64 + m / TIMES_PER_WORK;
            for _ in 0..m {
                prev = prev.saturating_add(*len);
                arrived(prev);
            }
            k += m;
            continue;
        }
        prev = send(busy, task, (cycles, slices, holds), (k, prev), booked);
        arrived(prev);
        k += 1;
        work += 1;
    }
    (prev, work)
}

/// One input of a walk that may run steady: its producer's send length, task, holds and
/// their parts.
struct PaceIn {
    len: u64,
    task: usize,
    holds: Vec<Hold>,
    parts: Vec<u64>,
}

/// What a walk's steady pace needs that holds for the whole walk: even shares of its
/// own cycles and holds and of every input's producer, every input a deferred
/// transfer's stream, and no resource held by two of them.
pub(super) struct Pace {
    len: u64,
    parts: Vec<u64>,
    inputs: Vec<PaceIn>,
    /// The most slices an input holds: the step ends a steady state spans.
    depth: u64,
}

/// A walk's [`Pace`], if it may run steady.
pub(super) fn pace(w: &Walk, holds: &[Hold], ins: &[WalkIn]) -> Option<Pace> {
    let n = u64::from(w.steps.max(1));
    let (len, parts) = even(w.own_cycles, holds, n)?;
    let mut used: Vec<Resource> = Vec::new();
    let mut fresh = |holds: &[Hold], parts: &[u64]| {
        (holds.iter().zip(parts))
            .filter(|(_, p)| **p > 0)
            .all(|(h, _)| {
                let new = !used.contains(&h.resource);
                used.push(h.resource);
                new
            })
    };
    if !fresh(holds, &parts) {
        return None;
    }
    let mut inputs = Vec::with_capacity(ins.len());
    let mut depth = 1;
    for (i, s) in w.inputs.iter().zip(ins) {
        let Some(Produced::Deferred {
            task,
            cycles,
            slices,
            holds,
            ..
        }) = &s.source
        else {
            return None;
        };
        let (len, parts) = even(*cycles, holds, u64::from(*slices))?;
        if !fresh(holds, &parts) {
            return None;
        }
        depth = depth.max(u64::from(i.buffers.max(1)));
        inputs.push(PaceIn {
            len,
            task: *task,
            holds: holds.clone(),
            parts,
        });
    }
    (depth < RING as u64 - 1).then_some(Pace {
        len,
        parts,
        inputs,
        depth,
    })
}

/// A walk in progress, as [`Pace::jump`] reads and moves it on.
pub(super) struct WalkState<'a> {
    pub ins: &'a mut [WalkIn],
    /// The walk's own holds and what its steps booked of them.
    pub holds: &'a [Hold],
    pub booked: &'a mut [u64],
    /// The end of step `j` at `ends[j % RING]`.
    pub ends: &'a mut [u64; RING],
    /// Per output slice, when it is ready.
    pub ready: &'a mut [u64],
    /// The walk's task.
    pub index: usize,
}

impl Pace {
    /// The trains a jump books: one per hold of the walk and of its inputs' producers.
    pub(super) fn trains(&self) -> u64 {
        let ins: usize = self.inputs.iter().map(|i| i.holds.len()).sum();
        (self.parts.len() + ins) as u64
    }

    /// After step `j` of `w`: if the walk runs steady from there, books its next steps
    /// and the sends they read in closed form, up to the step before the last or to
    /// where an input stops reading a new slice each step, and returns how many steps it
    /// booked (0: it books nothing).
    pub(super) fn jump(&self, w: &Walk, st: WalkState<'_>, j: u64, busy: &mut dyn Busy) -> u64 {
        let Some((period, last)) = self.period(w, &st, j, busy) else {
            return 0;
        };
        let count = reach(w, st.ins, j, last);
        if count > 0 {
            self.book(w, st, (j, count), period, busy);
        }
        count
    }

    /// The period of the walk's pace after step `j` and the last step a jump may reach,
    /// if the walk runs steady from there: every step and send so far booked exactly its
    /// share, every resource free from the current step and send on, each input's last
    /// `depth` steps reading one new send each, and step j+1 — as the walk books it with
    /// every resource free: each input's send when its previous send has arrived and the
    /// buffer it takes is no longer read (by step j+1−b), the step when the previous one
    /// is done and its slices have arrived — step j's state (the inputs' arrivals, the
    /// last `depth` step ends) moved by one period. That map moves with its state, so
    /// every later step is then the one before it moved by the period.
    fn period(
        &self,
        w: &Walk,
        st: &WalkState<'_>,
        j: u64,
        busy: &mut dyn Busy,
    ) -> Option<(u64, u64)> {
        let n = u64::from(w.steps.max(1));
        let d = self.depth;
        if j < d || j + 2 >= n {
            return None;
        }
        let e = |t: u64| st.ends[t as usize % RING];
        let ej = e(j);
        if !on_pace(busy, (st.holds, &self.parts, st.booked), j + 1, ej) {
            return None;
        }
        // Per input, its send for step j+1 and the arrival before it.
        let mut sends: Vec<(u64, u64)> = Vec::with_capacity(st.ins.len());
        // The producer's last send is left to the walk (its share is the rest).
        let mut last = n - 2;
        for ((p, s), i) in self.inputs.iter().zip(st.ins.iter()).zip(&w.inputs) {
            let m0 = u64::from(*i.need.get(j as usize)?);
            let b = u64::from(i.buffers.max(1));
            // Steps j−depth..=j read sends m0−depth..=m0, one each.
            let linear_before = (1..=d).all(|t| {
                let m = m0.checked_sub(t);
                let need = i.need.get((j - t) as usize).map(|&x| u64::from(x));
                m.is_some()
                    && need == m
                    && s.last_use.get(m.unwrap_or(0) as usize) == Some(&e(j - t))
            });
            let paced = s.arrival.len() as u64 == m0 + 1
                && on_pace(busy, (&p.holds, &p.parts, &s.sent), s.firsts, s.prev);
            if !linear_before || !paced || b > d {
                return None;
            }
            sends.push((s.prev, s.prev.max(e(j + 1 - b)).saturating_add(p.len)));
            last = last.min((j + s.seen.len() as u64).saturating_sub(s.firsts + 1));
        }
        let next = sends.iter().fold(ej, |x, &(_, a)| x.max(a));
        let period = next.saturating_add(self.len) - ej;
        let sends_moved = sends.iter().all(|&(prev, a)| a - prev == period);
        let ends_moved = (0..d - 1).all(|t| e(j - t).checked_sub(e(j - t - 1)) == Some(period));
        (sends_moved && ends_moved).then_some((period, last))
    }

    /// Books steps `j+1..=j+count` and the sends they read, each `period` after the one
    /// before, and writes their times into the walk's state.
    fn book(
        &self,
        w: &Walk,
        st: WalkState<'_>,
        (j, count): (u64, u64),
        period: u64,
        busy: &mut dyn Busy,
    ) {
        let ej = st.ends[j as usize % RING];
        let at =
            |from: u64| (1..=count).map(move |k| from.saturating_add(k.saturating_mul(period)));
        let step0 = ej.saturating_add(period) - self.len;
        let own = (st.holds, &self.parts[..], &mut st.booked[..]);
        trains(busy, st.index, own, (step0, period, count));
        for (p, s) in self.inputs.iter().zip(st.ins.iter_mut()) {
            let aj = s.prev;
            let send0 = aj.saturating_add(period) - p.len;
            trains(
                busy,
                p.task,
                (&p.holds, &p.parts, &mut s.sent),
                (send0, period, count),
            );
            s.arrival.extend(at(aj));
            s.last_use.extend(at(ej));
            s.firsts += count;
            s.prev = aj.saturating_add(count.saturating_mul(period));
        }
        for (k, end) in (1..=count).zip(at(ej)) {
            st.ends[(j + k) as usize % RING] = end;
            if let Some(r) =
                (w.out.get((j + k) as usize)).and_then(|&o| st.ready.get_mut(o as usize))
            {
                *r = end;
            }
        }
    }
}

/// How many steps after step `j` (up to `last`) every input of `w` reads a new send
/// each, of a slice not sent before and into the buffer of the send `b` before it: those
/// slices are marked sent (0, marking nothing, when fewer than two).
fn reach(w: &Walk, ins: &mut [WalkIn], j: u64, mut last: u64) -> u64 {
    // Per input, the last step its scan marked.
    let mut scanned: Vec<u64> = Vec::with_capacity(ins.len());
    for (s, i) in ins.iter_mut().zip(&w.inputs) {
        let m0 = u64::from(i.need[j as usize]);
        let b = u64::from(i.buffers.max(1));
        let mut t = j + 1;
        while t <= last {
            let m = m0 + (t - j);
            let need = i.need.get(t as usize).map(|&x| u64::from(x));
            let Some(&(slice, ev)) = i.sends.get(m as usize) else {
                break;
            };
            let fresh = s.seen.get(slice as usize) == Some(&false);
            if need != Some(m) || ev.map(u64::from) != m.checked_sub(b) || !fresh {
                break;
            }
            s.seen[slice as usize] = true;
            t += 1;
        }
        last = t - 1;
        scanned.push(last);
    }
    let count = last.saturating_sub(j);
    let keep = if count < 2 { j } else { last };
    for ((s, i), &upto) in ins.iter_mut().zip(&w.inputs).zip(&scanned) {
        let m0 = u64::from(i.need[j as usize]);
        for t in keep + 1..=upto {
            let slice = i.sends[(m0 + t - j) as usize].0;
            s.seen[slice as usize] = false;
        }
    }
    keep - j
}
