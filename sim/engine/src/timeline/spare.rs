//! Buffers a walk fills while it is placed ([`super::streams`]), kept for the next walk:
//! a walk of the gated MLP's 28,672 steps fills two vectors of some 230 KB and a flag per
//! slice for each stream it reads, and the times of the streams it consumes and writes,
//! and allocating them afresh for every walk placed had the allocator fault their pages
//! in anew each time. A timeline resumed ([`super::Resumable`]) gives back, when it is
//! done, the times of its streams that no snapshot shares.

use super::Timeline;
use super::streams::Produced;
use std::sync::Arc;

/// Spare buffers, empty. A clone starts with none: a timeline cloned to be resumed
/// later does not keep the buffers of the one it was cloned from.
#[derive(Debug, Default)]
pub(super) struct Spare {
    times: Vec<Vec<u64>>,
    flags: Vec<Vec<bool>>,
}

/// Spare buffers kept of each kind, at most.
const MAX_SPARE: usize = 16;

/// The least room of a buffer worth keeping (smaller ones are quick to allocate).
const MIN_SPARE: usize = 1024;

impl Clone for Spare {
    fn clone(&self) -> Spare {
        Spare::default()
    }
}

impl Spare {
    /// An empty vector with room for `n` times.
    pub(super) fn times(&mut self, n: usize) -> Vec<u64> {
        let mut v = take(&mut self.times, n);
        v.reserve(n);
        v
    }

    /// `n` times, all `t`.
    pub(super) fn filled(&mut self, n: usize, t: u64) -> Vec<u64> {
        let mut v = self.times(n);
        v.resize(n, t);
        v
    }

    /// `n` flags, all false.
    pub(super) fn flags(&mut self, n: usize) -> Vec<bool> {
        let mut v = take(&mut self.flags, n);
        v.resize(n, false);
        v
    }

    /// Keeps `v` for a later [`Spare::times`].
    pub(super) fn keep_times(&mut self, v: Vec<u64>) {
        keep(&mut self.times, v);
    }

    /// Keeps `v` for a later [`Spare::flags`].
    pub(super) fn keep_flags(&mut self, v: Vec<bool>) {
        keep(&mut self.flags, v);
    }

    /// Takes every buffer of `other` that fits.
    pub(super) fn take_from(&mut self, other: &mut Spare) {
        for v in other.times.drain(..) {
            self.keep_times(v);
        }
        for v in other.flags.drain(..) {
            self.keep_flags(v);
        }
    }
}

/// A kept buffer with room for `n` (or the last kept, or a new one), emptied; a new
/// one for fewer than [`MIN_SPARE`].
fn take<T>(kept: &mut Vec<Vec<T>>, n: usize) -> Vec<T> {
    if n < MIN_SPARE {
        return Vec::new();
    }
    let i = kept.iter().position(|v| v.capacity() >= n);
    let mut v = match i {
        Some(i) => kept.swap_remove(i),
        None => kept.pop().unwrap_or_default(),
    };
    v.clear();
    v
}

/// Keeps `v` (emptied) if it is worth it and there is room.
fn keep<T>(kept: &mut Vec<Vec<T>>, mut v: Vec<T>) {
    if kept.len() < MAX_SPARE && v.capacity() >= MIN_SPARE {
        v.clear();
        kept.push(v);
    }
}

impl Timeline {
    /// Gives `spare` the timeline's buffers and the times of its streams that nothing
    /// else shares (its streams are then forgotten: the timeline is done with).
    pub(super) fn keep_buffers(&mut self, spare: &mut Spare) {
        spare.take_from(&mut self.spare);
        for (_, p) in self.produced.drain() {
            match p {
                Produced::Fixed(t) => {
                    if let Ok(v) = Arc::try_unwrap(t) {
                        spare.keep_times(v);
                    }
                }
                Produced::Deferred { .. } => {}
            }
        }
    }
}
