//! The inverse of a class's strided map (`value = Σ index·stride`): building it, which
//! checks the map is injective, and solving a value back into sub-axis indices.

use super::SubAxis;

/// Inverse of one class's strided map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Inverse {
    /// Strides are nested (each larger than the span of all smaller ones): greedy
    /// division inverts the map. Sub-axis ids sorted by stride, descending.
    Greedy(Order),
    /// Irregular strides: an explicit table value → flat combination index (u64::MAX = unused).
    Table(Vec<u64>, Vec<usize>),
}

/// Sub-axis ids in order: in place for a few small ids (every bound layout keeps one
/// per class, and a planner binds tens of thousands), else in a vector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Order {
    Few { len: u8, ids: [u8; ORDER_FEW] },
    Many(Vec<usize>),
}

/// Ids an [`Order`] holds in place.
const ORDER_FEW: usize = 22;

impl Order {
    /// No ids.
    pub(super) const EMPTY: Order = Order::Few {
        len: 0,
        ids: [0; ORDER_FEW],
    };

    fn of(v: &[usize]) -> Order {
        let small = v.len() <= ORDER_FEW && v.iter().all(|&i| i <= usize::from(u8::MAX));
        if !small {
            return Order::Many(v.to_vec());
        }
        let mut ids = [0u8; ORDER_FEW];
        for (slot, &i) in ids.iter_mut().zip(v) {
            // At most `u8::MAX`: checked above.
            *slot = i as u8;
        }
        Order::Few {
            len: v.len() as u8,
            ids,
        }
    }

    /// The ids in order.
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        let (few, many): (&[u8], &[usize]) = match self {
            Order::Few { len, ids } => (&ids[..usize::from(*len)], &[]),
            Order::Many(v) => (&[], v),
        };
        (few.iter().map(|&i| usize::from(i))).chain(many.iter().copied())
    }
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
    // The sub-axes that move, on the stack where they are few.
    let mut few = [0usize; ORDER_FEW];
    let mut many: Vec<usize> = Vec::new();
    let moving = (0..axes.len()).filter(|&i| axes[i].size > 1);
    let order: &mut [usize] = if axes.len() <= ORDER_FEW {
        let mut n = 0;
        for (slot, i) in few.iter_mut().zip(moving) {
            *slot = i;
            n += 1;
        }
        &mut few[..n]
    } else {
        many.extend(moving);
        &mut many
    };
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
        return Ok(Inverse::Greedy(Order::of(order)));
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
            for i in order.iter() {
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
            for i in order.iter() {
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
