//! Per-axis position functions: the contribution of one logical axis to a position at
//! one level, in a canonical form that makes two functions easy to compare.

use mnsim_arch::arith::lcm;
use mnsim_arch::layout::{Class, SubAxis, TensorLayout};

/// One term of a per-axis position function: `((i / radix) % size) · stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Term {
    radix: u64,
    size: u64,
    stride: u64,
}

/// The contribution of one logical axis to the position at one level, restricted to
/// indices `0..extent`, in a canonical form (terms that never move dropped, sizes
/// that never wrap cut to what is reached, adjacent digits merged).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct AxisFn {
    terms: Vec<Term>,
    /// A period of the function (the product span of its widest term).
    period: u64,
}

impl AxisFn {
    /// The contribution of no axis (or of one not split at the level).
    pub(super) const ZERO: AxisFn = AxisFn {
        terms: Vec::new(),
        period: 1,
    };

    pub(super) fn zero() -> Self {
        Self::ZERO
    }

    pub(super) fn of(layout: &TensorLayout, axis: usize, level: usize, extent: u64) -> Self {
        Self::from_group(&layout.groups()[axis], level, extent)
    }

    /// [`AxisFn::of`] into `self`, its vector reused.
    pub(super) fn set_of(&mut self, layout: &TensorLayout, axis: usize, level: usize, extent: u64) {
        self.set_from_group(&layout.groups()[axis], level, extent);
    }

    pub(super) fn from_group(group: &[SubAxis], level: usize, extent: u64) -> Self {
        let mut f = Self::ZERO;
        f.set_from_group(group, level, extent);
        f
    }

    /// [`AxisFn::from_group`] into `self`, its vector reused.
    fn set_from_group(&mut self, group: &[SubAxis], level: usize, extent: u64) {
        // The level's terms, collected minor to major (the radix grows from the minor
        // end), then put major to minor and merged in place: one vector.
        let terms = &mut self.terms;
        terms.clear();
        let mut radix = 1u64;
        for s in group.iter().rev() {
            if s.class == Class::Level(level) && s.size > 1 && radix < extent {
                terms.push(Term {
                    radix,
                    size: s.size,
                    stride: s.stride,
                });
            }
            radix = radix.saturating_mul(s.size);
        }
        terms.reverse(); // major to minor
        let period = terms
            .iter()
            .map(|t| t.radix.saturating_mul(t.size))
            .max()
            .unwrap_or(1);
        let mut kept = 0usize;
        for i in 0..terms.len() {
            let mut t = terms[i];
            let reach = (extent - 1) / t.radix; // largest i / radix
            if reach < t.size {
                t.size = reach + 1;
            }
            // Merge with the previous (more major) term when it continues this digit.
            if let Some(prev) = kept.checked_sub(1).map(|k| &mut terms[k])
                && prev.radix == t.radix.saturating_mul(t.size)
                && prev.stride == t.stride.saturating_mul(t.size)
            {
                *prev = Term {
                    radix: t.radix,
                    size: prev.size.saturating_mul(t.size),
                    stride: t.stride,
                };
                continue;
            }
            terms[kept] = t;
            kept += 1;
        }
        terms.truncate(kept);
        self.period = period;
    }

    pub(super) fn at(&self, i: u64) -> u64 {
        self.terms
            .iter()
            .map(|t| ((i / t.radix) % t.size) * t.stride)
            .sum()
    }

    /// The least index past `i` where the function may change (`extent` at most): every
    /// term is constant until its digit `i / radix` moves.
    pub(super) fn next_change(&self, i: u64, extent: u64) -> u64 {
        self.terms
            .iter()
            .map(|t| (i / t.radix + 1).saturating_mul(t.radix))
            .fold(extent, u64::min)
    }

    pub(super) fn is_zero(&self) -> bool {
        self.terms.is_empty()
    }

    /// The function is constant on blocks of this many indices.
    fn block(&self) -> u64 {
        self.terms.iter().map(|t| t.radix).min().unwrap_or(u64::MAX)
    }
}

/// Whether `f` and `g` agree on `0..n`.
pub(super) fn same(f: &AxisFn, g: &AxisFn, n: u64) -> bool {
    if f.terms == g.terms {
        return true;
    }
    // Both are step functions, constant on blocks of f.block() and g.block(), and
    // periodic: compare at every block start up to the common period.
    let limit = lcm(f.period, g.period).map_or(n, |l| l.min(n));
    let (bf, bg) = (f.block(), g.block());
    let mut i = 0u64;
    while i < limit {
        if f.at(i) != g.at(i) {
            return false;
        }
        let nf = (i / bf + 1).saturating_mul(bf);
        let ng = (i / bg + 1).saturating_mul(bg);
        i = nf.min(ng);
    }
    true
}

/// The functions `fns` of row-major axes `dims` as one function of the row-major index
/// over them, canonical as [`AxisFn::from_group`] makes an axis's (major to minor,
/// adjacent digits merged), where every term is a digit of that index: its radix
/// divides its axis's extent, and its size what is left of it. `None` where one is not.
/// Two axis runs whose flat terms are equal place every index alike.
pub(super) fn flat(dims: &[u64], fns: &[AxisFn]) -> Option<Vec<(u64, u64, u64)>> {
    let mut raw: Vec<Term> = Vec::new();
    let mut suffix = 1u64;
    for (&d, f) in dims.iter().zip(fns).rev() {
        let d = d.max(1);
        for t in &f.terms {
            if !d.is_multiple_of(t.radix) || !(d / t.radix).is_multiple_of(t.size) {
                return None;
            }
            raw.push(Term {
                radix: suffix.checked_mul(t.radix)?,
                size: t.size,
                stride: t.stride,
            });
        }
        suffix = suffix.checked_mul(d)?;
    }
    raw.sort_by_key(|t| std::cmp::Reverse(t.radix));
    let mut terms: Vec<(u64, u64, u64)> = Vec::with_capacity(raw.len());
    for t in raw {
        match terms.last_mut() {
            Some(prev)
                if prev.0 == t.radix.saturating_mul(t.size)
                    && prev.2 == t.stride.saturating_mul(t.size) =>
            {
                *prev = (t.radix, prev.1.saturating_mul(t.size), t.stride);
            }
            _ => terms.push((t.radix, t.size, t.stride)),
        }
    }
    Some(terms)
}

/// The position of element `idx` of `l` at addressable level `x` (the sum of the
/// per-axis contributions), given each axis's function.
pub(super) fn position(fns: &[AxisFn], idx: &[u64]) -> u64 {
    fns.iter().zip(idx).map(|(f, &i)| f.at(i)).sum()
}

/// Per-axis functions of `l` at level `x`.
pub(super) fn axis_fns(l: &TensorLayout, x: usize) -> Vec<AxisFn> {
    let shape = l.logical_shape();
    (0..shape.len())
        .map(|a| AxisFn::of(l, a, x, shape[a].max(1)))
        .collect()
}
