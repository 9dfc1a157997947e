//! A walk's consumed streams, finished (docs/model.md, streams): after the walk, each
//! deferred stream it read sends the slices it did not read, its transfer is placed, and
//! its slices' times are kept for whatever reads the region next.

use super::Timeline;
use super::busy::Busy;
use super::sends::SendList;
use super::steady::send_chain;
use super::streams::{Produced, StreamIn, Walk, WalkIn};
use std::sync::Arc;

#[cfg(test)]
thread_local! {
    /// Tests set it to work out every consumed stream's times send by send
    /// ([`Timeline::each_sent_once`] off), to compare the two ways; and count the streams
    /// that took the direct way.
    pub(super) static SEND_BY_SEND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    pub(super) static SENT_ONCE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Whether a test asks for the times of consumed streams send by send (never outside
/// tests); in tests, counts the streams that take the direct way otherwise.
fn tests_send_by_send() -> bool {
    #[cfg(test)]
    {
        if SEND_BY_SEND.get() {
            return true;
        }
        SENT_ONCE.set(SENT_ONCE.get() + 1);
    }
    false
}

/// Calls `f` with each send's slice and arrival, in order, for the sends that arrived
/// (one loop per form of the list, so that each is a plain loop over two slices).
fn each_arrival(sends: &SendList, arrival: &[u64], mut f: impl FnMut(u32, u64)) {
    match sends {
        SendList::Lagged { slices, .. } => {
            (slices.iter().zip(arrival)).for_each(|(&slice, &a)| f(slice, a));
        }
        SendList::Table(t) => {
            (t.iter().zip(arrival)).for_each(|(&(slice, _), &a)| f(slice, a));
        }
    }
}

impl Timeline {
    /// The times of a consumed stream of `slices` whose sends, every one, carried a slice
    /// not sent before, and sent every slice: each slice's arrival is that of its one
    /// send (no flags kept), and none is left to send. Their latest with them; `None`
    /// otherwise ([`Timeline::finish_consumed`] then works them out send by send).
    fn each_sent_once(
        &mut self,
        s: &WalkIn,
        input: &StreamIn,
        slices: u32,
    ) -> Option<(Vec<u64>, u64)> {
        // `resent` counts, over the whole list, the sends of a slice below `slices` sent
        // before; `firsts` the slices sent so far. Every slice sent, none twice: each
        // slice below `slices` is written once, by its first send.
        let n = slices as usize;
        let once = input.resent == 0 && input.slices == slices && s.firsts == u64::from(slices);
        if !once || n == 0 || tests_send_by_send() {
            return None;
        }
        let mut times = self.spare.filled(n, 0);
        let mut latest = 0;
        let put = |slice: u32, a: u64| {
            if let Some(t) = times.get_mut(slice as usize) {
                *t = a;
                latest = latest.max(a);
            }
        };
        each_arrival(&input.sends, &s.arrival, put);
        Some((times, latest))
    }

    /// After a walk: the deferred streams it consumed send the slices it did not read,
    /// and their transfers are placed.
    pub(super) fn finish_consumed(&mut self, w: &Walk, ins: &[WalkIn], busy: &mut dyn Busy) {
        for (s, input) in ins.iter().zip(&w.inputs) {
            if let Some(Produced::Deferred {
                task,
                cycles,
                slices,
                holds,
                ..
            }) = &s.source
            {
                // Per slice, when its first send arrived, and the latest of those.
                let n = *slices as usize;
                if let Some((times, latest)) = self.each_sent_once(s, input, *slices) {
                    self.finish_stream(input.region, *task, latest);
                    self.produced
                        .insert(input.region, Produced::Fixed(Arc::new(times)));
                    continue;
                }
                let mut times = self.spare.filled(n, 0);
                let mut sent_once = self.spare.flags(n);
                let (mut sent_slices, mut latest) = (0usize, 0);
                // Both `n` long: a slice below `n` indexes them without a check.
                let (at, once) = (&mut times[..n], &mut sent_once[..n]);
                let mut first = |slice: u32, a: u64| {
                    let k = slice as usize;
                    if k < n && !once[k] {
                        at[k] = a;
                        once[k] = true;
                        // At most `n`: no overflow.
                        sent_slices = sent_slices.wrapping_add(1);
                        latest = latest.max(a);
                    }
                };
                each_arrival(&input.sends, &s.arrival, &mut first);
                let mut sent = s.sent.clone();
                sent.resize(holds.len(), 0);
                // The slices not sent yet, in order of the sends that follow.
                let mut unsent = (times.iter_mut().zip(&sent_once))
                    .filter(|(_, once)| !**once)
                    .map(|(t, _)| t);
                let (last, work) = send_chain(
                    busy,
                    *task,
                    (*cycles, *slices, holds),
                    (s.firsts, s.prev),
                    &mut sent,
                    |a| {
                        if let Some(t) = unsent.next() {
                            *t = a;
                            latest = latest.max(a);
                        }
                    },
                );
                if sent_slices < *slices as usize {
                    for t in unsent {
                        *t = last;
                        latest = latest.max(last);
                    }
                }
                self.spare.keep_flags(sent_once);
                self.work = self.work.saturating_add(work);
                // The latest time of a slice (every slice's time is written above).
                let end = if times.is_empty() { last } else { latest };
                self.finish_stream(input.region, *task, end);
                self.produced
                    .insert(input.region, Produced::Fixed(Arc::new(times)));
            }
        }
    }
}
