//! A macro step's times repeated in bulk ([`super::pace`]): the times of the macro step
//! placed one by one (one a step), moved by one period, two, ... up to the last macro
//! step placed in closed form. A walk of the gated MLP writes some 28,672 of them per
//! stream it reads; they are written block by block, each block a run of periods of
//! the pattern (computed once) moved again by the block's first period: a tight loop
//! over a slice, with no work per value but an addition.

/// Values per block, about (a block holds whole periods: at least one).
const BLOCK: u64 = 256;

/// `pattern` (one value a step of a macro step) moved by `period` 1, 2, ... `count`
/// times, in that order: `count · pattern.len()` values, each saturating as
/// `x.saturating_add(k.saturating_mul(period))` does (adding nonnegative parts one
/// after another saturates to the same value).
pub(super) struct Repeated {
    /// The pattern moved by 1 to `periods` periods.
    block: Vec<u64>,
    /// How far one block moves the next: `periods` periods.
    stride: u64,
    /// The values in all.
    len: u64,
    /// The block's largest value: a move that does not overflow it overflows none, and
    /// the block is then moved by a plain addition (which vectorises).
    max: u64,
}

impl Repeated {
    pub(super) fn new(pattern: &[u64], period: u64, count: u64) -> Repeated {
        let p = pattern.len() as u64;
        let periods = (BLOCK / p.max(1)).clamp(1, count.max(1));
        let block: Vec<u64> = match pattern {
            // A macro step of one step (the common case): one value a period.
            &[x] => (1..=periods)
                .map(|k| x.saturating_add(k.saturating_mul(period)))
                .collect(),
            _ => (1..=periods)
                .flat_map(|k| {
                    let by = k.saturating_mul(period);
                    pattern.iter().map(move |&x| x.saturating_add(by))
                })
                .collect(),
        };
        Repeated {
            max: block.iter().copied().max().unwrap_or(0),
            block,
            stride: periods.saturating_mul(period),
            len: count.saturating_mul(p),
        }
    }

    /// The values in order, a block at a time: the block's values before the move, and
    /// the move (the last block may be cut short).
    fn blocks(&self) -> impl Iterator<Item = (&[u64], u64)> {
        let size = self.block.len() as u64;
        let n = if size == 0 {
            0
        } else {
            self.len.div_ceil(size)
        };
        (0..n).map(move |b| {
            let left = self.len - b * size;
            let base = &self.block[..left.min(size) as usize];
            (base, b.saturating_mul(self.stride))
        })
    }

    /// Appends the values to `v`.
    pub(super) fn extend_onto(&self, v: &mut Vec<u64>) {
        v.reserve(self.len as usize);
        for (base, by) in self.blocks() {
            if self.max.checked_add(by).is_some() {
                v.extend(base.iter().map(|&x| x.wrapping_add(by)));
            } else {
                v.extend(base.iter().map(|&x| x.saturating_add(by)));
            }
        }
    }

    /// Writes value `i` to `to[at[i]]`, in order, for every `i` that `at` has (an entry
    /// of `at` past `to` is skipped).
    pub(super) fn scatter(&self, at: &[u32], to: &mut [u64]) {
        let mut at = at;
        for (base, by) in self.blocks() {
            let (here, rest) = at.split_at(base.len().min(at.len()));
            let plain = self.max.checked_add(by).is_some();
            let moved = |x: u64| {
                if plain {
                    x.wrapping_add(by)
                } else {
                    x.saturating_add(by)
                }
            };
            // The common cases, a walk whose steps write its output's slices in order:
            // every value to one place (steps that add to one slice), where the last is
            // the one left; or the values to consecutive places, written as one run (the
            // choice of addition made once for the run, so that it vectorises).
            if let Some(&o) = here.first()
                && all_are(here, o)
            {
                if let (Some(r), Some(&x)) = (to.get_mut(o as usize), base[..here.len()].last()) {
                    *r = moved(x);
                }
            } else if let Some(run) = consecutive(here, to.len()) {
                let to = &mut to[run];
                if plain {
                    for (r, &x) in to.iter_mut().zip(base) {
                        *r = x.wrapping_add(by);
                    }
                } else {
                    for (r, &x) in to.iter_mut().zip(base) {
                        *r = x.saturating_add(by);
                    }
                }
            } else {
                for (&o, &x) in here.iter().zip(base) {
                    if let Some(r) = to.get_mut(o as usize) {
                        *r = moved(x);
                    }
                }
            }
            at = rest;
        }
    }

    /// The last value, if any.
    pub(super) fn last(&self) -> Option<u64> {
        let (base, by) = self.blocks().last()?;
        base.last().map(|&x| x.saturating_add(by))
    }
}

/// Whether every place of `at` is `o`: the differences or-ed together, with no early
/// exit, so that the loop vectorises (a block of a few hundred places is compared in a
/// few dozen instructions).
fn all_are(at: &[u32], o: u32) -> bool {
    at.iter().fold(0, |acc, &x| acc | (x ^ o)) == 0
}

/// The places `at` names when they are consecutive, rising from the first, and all
/// below `len`.
fn consecutive(at: &[u32], len: usize) -> Option<std::ops::Range<usize>> {
    let first = *at.first()? as usize;
    let end = first.checked_add(at.len()).filter(|&e| e <= len)?;
    // Compared as `u64` sums (no wrap: `first + i` < `len`), a loop that vectorises.
    let rising = (at.iter().zip(first as u64..)).all(|(&o, i)| u64::from(o) == i);
    rising.then_some(first..end)
}

#[cfg(test)]
mod tests {
    use super::Repeated;

    /// The values one by one, as the bulk writes must give them.
    fn one_by_one(pattern: &[u64], period: u64, count: u64) -> Vec<u64> {
        let mut v = Vec::new();
        for k in 1..=count {
            for &x in pattern {
                v.push(x.saturating_add(k.saturating_mul(period)));
            }
        }
        v
    }

    proptest::proptest! {
        /// Written in blocks, the values are those moved one period at a time: in
        /// order, scattered (to places at random or consecutive), and the last; near the
        /// top of the range too (saturating).
        #[test]
        fn repeated_values_are_the_pattern_moved_period_by_period(
            pattern in proptest::collection::vec(0u64..1000, 1..70),
            period in 1u64..500,
            count in 0u64..700,
            high in proptest::bool::ANY,
            at in proptest::collection::vec(0u32..50, 0..3000),
            from in proptest::option::of(0u32..45),
        ) {
            // Places at random, or consecutive from `from` (past the end of `to` or not),
            // or in runs of one place.
            let at: Vec<u32> = match from {
                Some(f) if f % 2 == 0 => (f..).take(at.len().min(60)).collect(),
                Some(f) => (0..at.len() as u32).map(|k| k / (f + 1) * 3).collect(),
                None => at,
            };
            let top = if high { u64::MAX - 300_000 } else { 0 };
            let pattern: Vec<u64> = pattern.iter().map(|&x| x + top).collect();
            let want = one_by_one(&pattern, period, count);
            let r = Repeated::new(&pattern, period, count);
            let mut got = vec![7];
            r.extend_onto(&mut got);
            proptest::prop_assert_eq!(&got[1..], &want[..]);
            proptest::prop_assert_eq!(r.last(), want.last().copied());
            let mut to = vec![1u64; 40];
            let mut expect = to.clone();
            for (&o, &x) in at.iter().zip(&want) {
                if let Some(t) = expect.get_mut(o as usize) {
                    *t = x;
                }
            }
            r.scatter(&at, &mut to);
            proptest::prop_assert_eq!(to, expect);
        }
    }
}
