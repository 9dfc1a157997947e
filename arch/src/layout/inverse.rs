//! The inverse of a class's strided map (`value = Σ index·stride`): building it, which
//! checks the map is injective, and solving a value back into sub-axis indices.

use super::SubAxis;

/// Inverse of one class's strided map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Inverse {
    /// Strides are nested (each larger than the span of all smaller ones): greedy
    /// division inverts the map. Sub-axis ids sorted by stride, descending.
    Greedy(Vec<usize>),
    /// Irregular strides: an explicit table value → flat combination index (u64::MAX = unused).
    Table(Vec<u64>, Vec<usize>),
}

pub(super) fn checked_product(it: impl IntoIterator<Item = u64>) -> Option<u64> {
    it.into_iter().try_fold(1u64, |a, b| a.checked_mul(b))
}

/// Largest value `Σ (size-1)·stride` of a class, checked.
pub(super) fn max_value(axes: &[SubAxis]) -> Option<u64> {
    axes.iter().try_fold(0u64, |a, s| {
        (s.size - 1)
            .checked_mul(s.stride)
            .and_then(|v| a.checked_add(v))
    })
}

/// Builds the inverse of a class's map and checks it is injective.
/// `Err(())` means two index combinations reach the same value.
pub(super) fn build_inverse(axes: &[SubAxis], span: u64) -> Result<Inverse, ()> {
    let mut order: Vec<usize> = (0..axes.len()).filter(|&i| axes[i].size > 1).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(axes[i].stride));
    // Nested check, smallest stride first.
    let mut reach = 0u64; // max value reachable by the smaller-stride axes
    let mut nested = true;
    for &i in order.iter().rev() {
        let s = axes[i];
        if s.stride <= reach {
            nested = false;
            break;
        }
        reach = reach.saturating_add((s.size - 1).saturating_mul(s.stride));
    }
    if nested {
        return Ok(Inverse::Greedy(order));
    }
    let count = checked_product(axes.iter().map(|a| a.size)).ok_or(())?;
    if count > span {
        return Err(());
    }
    // Brute force over all combinations; bounded by the span (≤ memory words or fan-out).
    const LIMIT: u64 = 1 << 26;
    if span > LIMIT {
        return Err(());
    }
    let mut table = vec![u64::MAX; span as usize];
    let ids: Vec<usize> = (0..axes.len()).collect();
    for flat in 0..count {
        let mut rem = flat;
        let mut v = 0u64;
        for &i in ids.iter().rev() {
            let a = axes[i];
            v += (rem % a.size) * a.stride;
            rem /= a.size;
        }
        let cell = &mut table[v as usize];
        if *cell != u64::MAX {
            return Err(());
        }
        *cell = flat;
    }
    Ok(Inverse::Table(table, ids))
}

/// Solves `value = Σ idx·stride` for the class's sub-axes; returns per-axis indices.
/// [`invert`] for the sub-axes `ids` of `flat`, writing each digit into `fixed[id]`
/// (no allocation: a shard per PE calls it per level).
pub(super) fn invert_into(
    inv: &Inverse,
    flat: &[(usize, SubAxis, u64)],
    ids: &[usize],
    value: u64,
    fixed: &mut [Option<u64>],
) -> Option<()> {
    let axis = |i: usize| flat[ids[i]].1;
    match inv {
        Inverse::Greedy(order) => {
            let mut v = value;
            for &i in order {
                let a = axis(i);
                let k = v / a.stride;
                if k >= a.size {
                    return None;
                }
                fixed[ids[i]] = Some(k);
                v -= k * a.stride;
            }
            // Sub-axes the greedy order leaves out stay at 0, as in `invert`.
            for &j in ids {
                fixed[j].get_or_insert(0);
            }
            (v == 0).then_some(())
        }
        Inverse::Table(table, order) => {
            let mut f = *table.get(usize::try_from(value).ok()?)?;
            if f == u64::MAX {
                return None;
            }
            for &j in ids {
                fixed[j].get_or_insert(0);
            }
            for &i in order.iter().rev() {
                fixed[ids[i]] = Some(f % axis(i).size);
                f /= axis(i).size;
            }
            Some(())
        }
    }
}

pub(super) fn invert(inv: &Inverse, axes: &[SubAxis], value: u64) -> Option<Vec<u64>> {
    let mut idx = vec![0u64; axes.len()];
    match inv {
        Inverse::Greedy(order) => {
            let mut v = value;
            for &i in order {
                let a = axes[i];
                let k = v / a.stride;
                if k >= a.size {
                    return None;
                }
                idx[i] = k;
                v -= k * a.stride;
            }
            (v == 0).then_some(idx)
        }
        Inverse::Table(table, ids) => {
            let mut flat = *table.get(usize::try_from(value).ok()?)?;
            if flat == u64::MAX {
                return None;
            }
            for &i in ids.iter().rev() {
                idx[i] = flat % axes[i].size;
                flat /= axes[i].size;
            }
            Some(idx)
        }
    }
}
