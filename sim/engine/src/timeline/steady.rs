//! A stream's sends at a steady pace, in closed form (docs/model.md, streams).
//!
//! The sends of a stream no walk reads, or that its walk did not read, are placed one
//! after another ([`send_chain`]). Once they settle into a steady pace — every send the
//! same length, every resource they hold free but for them, each starting when the one
//! before arrives — every later send up to the one before the last is the one before
//! it moved by that length. Those sends are booked as trains
//! ([`super::Busy::hold_train`]) and their arrivals written in closed form: the same
//! bookings and times as one by one (`timeline/tests.rs` places random stream programs
//! both ways and compares every placement and every resource's busy state). A walk's
//! steps have their own steady pace ([`super::pace`]).

use super::pace::{CHECK, TIMES_PER_WORK};
use super::streams::send;
use super::{Busy, Hold, Train};

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
