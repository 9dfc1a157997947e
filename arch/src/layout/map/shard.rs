//! One PE's shard (`TensorLayout::shard`: the level digits fixed, the rest free), its
//! size and its count of valid elements in closed form.

use crate::layout::inverse::invert_into;
use crate::layout::{Class, TensorLayout};

/// One PE's shard: the cells it holds, walked without inverting per element.
#[derive(Clone, Debug)]
pub struct Shard<'a> {
    pub(in crate::layout) layout: &'a TensorLayout,
    /// Per flat sub-axis: fixed digit for level sub-axes, `None` for free ones.
    pub(in crate::layout) fixed: Vec<Option<u64>>,
}

impl TensorLayout {
    /// The shard held by the PE at `pos` (a position per addressable level; ignored for
    /// replicated levels), or `None` if that PE holds nothing of this tensor.
    pub fn shard(&self, pos: &[u64]) -> Option<Shard<'_>> {
        if pos.len() != self.levels.len() {
            return None;
        }
        let mut fixed: Vec<Option<u64>> = vec![None; self.flat().len()];
        // Flat indices of one level's sub-axes (reused: one allocation per shard).
        let mut ids: Vec<usize> = Vec::with_capacity(self.flat().len());
        for (i, l) in self.levels.iter().enumerate() {
            if pos[i] >= l.fanout {
                return None;
            }
            if l.replicated {
                continue;
            }
            ids.clear();
            ids.extend(
                (0..self.flat().len()).filter(|&j| self.flat()[j].1.class == Class::Level(i)),
            );
            invert_into(&self.inv_levels[i], self.flat(), &ids, pos[i], &mut fixed)?;
        }
        Some(Shard {
            layout: self,
            fixed,
        })
    }
}

impl Shard<'_> {
    /// Number of cells (padded elements) in the shard.
    pub fn len(&self) -> u64 {
        self.layout.elems_per_pe()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(padded_index, addr, w, t)` for every cell of the shard, in an order
    /// where the last free sub-axis varies fastest. `padded_index` may lie in the
    /// padding (compare with [`TensorLayout::logical_shape`]).
    pub fn for_each(&self, mut f: impl FnMut(&[u64], u64, u64, u64)) {
        self.walk(&[], &[], |idx, _, _, a, w, t| f(idx, a, w, t));
    }
}

impl Shard<'_> {
    /// Elements of the shard whose index is below `dims` on every axis (the real,
    /// unpadded elements when `dims` is the logical or runtime shape). Counts per axis —
    /// the shard is a product of per-axis index sets — without walking the cells.
    pub fn valid_elems(&self, dims: &[u64]) -> u64 {
        let l = self.layout;
        let mut total = 1u64;
        // Per axis the shard holds {fixed part + Σ free digit·radix}; each index tuple
        // of the product is one cell, so the valid cells multiply across axes.
        for (g, &limit) in dims.iter().enumerate().take(l.groups.len()) {
            let mut base = 0u64;
            let mut free: Vec<(u64, u64)> = Vec::new();
            for (j, &(gg, s, radix)) in l.flat().iter().enumerate() {
                if gg != g {
                    continue;
                }
                match self.fixed[j] {
                    Some(k) => base += k * radix,
                    None => free.push((s.size, radix)),
                }
            }
            free.sort_by_key(|x| std::cmp::Reverse(x.1));
            let n = limit
                .checked_sub(base)
                .map_or(0, |rel| count_below(rel, &free));
            total = total.saturating_mul(n);
        }
        total
    }
}

/// How many of the values `Σ k_i · radix_i` (each `k_i < size_i`, digits by radix,
/// largest first) lie below `limit`: by the largest digit, each of its values adding
/// the rest whole where even their largest sum stays below what is left, or counted
/// the same way where it does not (nested digits leave one such value per level), so
/// a padded axis is counted without walking its values.
fn count_below(limit: u64, digits: &[(u64, u64)]) -> u64 {
    let Some((&(size, radix), rest)) = digits.split_first() else {
        return u64::from(limit > 0);
    };
    let span = (rest.iter()).fold(0u64, |a, &(s, r)| {
        a.saturating_add(s.saturating_sub(1).saturating_mul(r))
    });
    let whole = rest.iter().fold(1u64, |a, &(s, _)| a.saturating_mul(s));
    let mut n = 0u64;
    for k in 0..size {
        let Some(left) = k.checked_mul(radix).and_then(|off| limit.checked_sub(off)) else {
            break;
        };
        if left == 0 {
            break;
        }
        n = n.saturating_add(match span < left {
            true => whole,
            false => count_below(left, rest),
        });
    }
    n
}

#[cfg(test)]
mod tests {
    use super::count_below;
    use proptest::prelude::*;

    proptest! {
        /// Counted as the walk of every value counts (digits nested or not).
        #[test]
        fn count_below_is_the_walk(
            digits in proptest::collection::vec((1u64..6, 1u64..40), 0..4),
            limit in 0u64..400,
        ) {
            let mut digits = digits;
            digits.sort_by_key(|x| std::cmp::Reverse(x.1));
            let mut vals = vec![0u64];
            for &(size, radix) in &digits {
                vals = (vals.iter()).flat_map(|&v| (0..size).map(move |k| v + k * radix)).collect();
            }
            let want = vals.iter().filter(|&&v| v < limit).count() as u64;
            prop_assert_eq!(count_below(limit, &digits), want);
        }
    }
}
