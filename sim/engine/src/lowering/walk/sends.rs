//! The sends a walk makes of a stream it reads in a few buffers ([`sends`]), memoised
//! by the walk's shared step vector ([`SendsMemo`]).

use crate::timeline::SendList;
use std::sync::Arc;

/// [`sends`] of the step vectors of memoised walks, by the vector (its allocation: the
/// walks' vectors are shared), the buffers and the producer's slices.
#[derive(Default)]
pub struct SendsMemo {
    map: std::collections::HashMap<(ByPtr, u32, u32), Sends, foldhash::fast::FixedState>,
    /// Per length, the steps of a walk that reads a new send every step (`0, 1, ...`),
    /// shared by every such walk of that length.
    identity: std::collections::HashMap<usize, Arc<[u32]>, foldhash::fast::FixedState>,
    /// The steps and sends of the vector being replayed (kept: their memory is reused).
    steps: Vec<u32>,
    scratch: Vec<Send>,
}

/// What [`SendsMemo::sends`] gives: per step, the send it reads; per send, its slice and
/// the send whose buffer it takes; and how many sends carry a slice sent before.
#[derive(Clone, Debug)]
pub struct Sends {
    pub per_step: Arc<[u32]>,
    pub sends: SendList,
    pub resent: u64,
}

/// A step vector keyed by its allocation. The key holds the vector, so no other takes
/// its address while the entry lives; equal vectors apart are two keys of one value.
struct ByPtr(Arc<[u32]>);

impl PartialEq for ByPtr {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.0, &o.0)
    }
}
impl Eq for ByPtr {}
impl std::hash::Hash for ByPtr {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (Arc::as_ptr(&self.0) as *const u32 as usize).hash(h);
    }
}

impl SendsMemo {
    /// [`sends`] of `need` in `buffers` slices, from a producer of `slices` slices. A
    /// walk that reads a new send every step gets the shared identity steps, and its
    /// sends keep `need` itself as their slices where they take the buffers in order
    /// ([`SendList::Lagged`]): no new vector.
    pub fn sends(&mut self, need: &Arc<[u32]>, buffers: u32, slices: u32) -> Sends {
        let key = (ByPtr(need.clone()), buffers, slices);
        if let Some(s) = self.map.get(&key) {
            return s.clone();
        }
        let n = need.len();
        // Buffers in use: one where none is asked for (`replay`).
        let held = buffers.max(1);
        let (per_step, sends) = if every_step_sends(need, held as usize) {
            // Send `m` is step `m`'s slice, into the buffer of the send `held` before
            // (the least recently used); the lag as `SendList::from_table` finds it.
            let per_step = (self.identity.entry(n))
                .or_insert_with(|| (0..n as u32).collect())
                .clone();
            let lag = held.min(u32::try_from(n).unwrap_or(u32::MAX));
            let slices = need.clone();
            (per_step, SendList::Lagged { slices, lag })
        } else {
            self.steps.clear();
            self.steps.resize(n, 0);
            self.scratch.clear();
            replay(need, buffers, &mut self.steps, &mut self.scratch);
            let sends = SendList::from_table(&self.scratch, Some(need));
            (Arc::from(&self.steps[..]), sends)
        };
        let s = Sends {
            resent: crate::timeline::resends_of(sends.slices(), slices),
            per_step,
            sends,
        };
        self.map.insert(key, s.clone());
        s
    }
}

/// A send a step makes: its slice, and the send whose buffer it takes.
type Send = (u32, Option<u32>);

/// The sends a walk makes of one input held in `buffers` slices: a step whose slice is
/// not held needs a send, which takes the buffer of the least recently used slice.
/// Returns, per step, the index of the send it reads; per send, its slice and the send
/// whose buffer it takes (`None` while a buffer is still empty).
pub fn sends(need: &[u32], buffers: u32) -> (Vec<u32>, Vec<Send>) {
    let (mut steps, mut out) = (vec![0; need.len()], Vec::new());
    replay(need, buffers, &mut steps, &mut out);
    (steps, out)
}

/// Whether a walk reading `need` in `held` buffers sends a slice at every step: no
/// step's slice is one of the `held` slices before it (then those are the last `held`
/// sends, held; otherwise the first step that reads one finds it held).
fn every_step_sends(need: &[u32], held: usize) -> bool {
    match held {
        0 | 1 => need.windows(2).all(|w| w[0] != w[1]),
        2 => need.windows(2).all(|w| w[0] != w[1]) && need.windows(3).all(|w| w[0] != w[2]),
        h => (1..need.len()).all(|j| !need[j.saturating_sub(h)..j].contains(&need[j])),
    }
}

/// [`sends`] into `steps` (as long as `need`) and `out`.
fn replay(need: &[u32], buffers: u32, steps: &mut [u32], out: &mut Vec<Send>) {
    match buffers {
        0..=2 => replay_two(need, buffers == 2, steps, out),
        b => replay_lru(need, b as usize, steps, out),
    }
}

/// The sends of a walk reading `need` in one buffer or `two`: per step into `steps`,
/// the sends into `out` (see [`sends`]).
fn replay_two(need: &[u32], two: bool, steps: &mut [u32], out: &mut Vec<Send>) {
    // (slice, send) of the buffer used last, and of the other (with two buffers).
    let mut last: Option<(u32, u32)> = None;
    let mut other: Option<(u32, u32)> = None;
    for (&s, step) in need.iter().zip(steps) {
        match (last, other) {
            (Some((slice, m)), _) if slice == s => *step = m,
            (_, Some((slice, m))) if slice == s => {
                (last, other) = (other, last);
                *step = m;
            }
            (Some(_), _) | (None, _) => {
                let m = out.len() as u32;
                // The least recently used buffer: the other one (empty at first), or
                // the only one.
                let freed = if two { other } else { last };
                out.push((s, freed.map(|f| f.1)));
                if two {
                    other = last;
                }
                last = Some((s, m));
                *step = m;
            }
        }
    }
}

/// The sends of a walk reading `need` in `b` buffers: per step into `steps`, the sends
/// into `out` (see [`sends`]).
fn replay_lru(need: &[u32], b: usize, steps: &mut [u32], out: &mut Vec<Send>) {
    // Held: (slice, send, last step used), at most `b`.
    let mut held: Vec<(u32, u32, usize)> = Vec::with_capacity(b.min(need.len()));
    for (j, (&s, step)) in need.iter().zip(steps).enumerate() {
        if let Some(h) = held.iter_mut().find(|h| h.0 == s) {
            h.2 = j;
            *step = h.1;
            continue;
        }
        let m = out.len() as u32;
        let evicts = if held.len() < b {
            held.push((s, m, j));
            None
        } else {
            // The least recently used slice gives its buffer.
            let mut lru = 0;
            for k in 1..held.len() {
                if held[k].2 < held[lru].2 {
                    lru = k;
                }
            }
            let old = held[lru].1;
            held[lru] = (s, m, j);
            Some(old)
        };
        out.push((s, evicts));
        *step = m;
    }
}
