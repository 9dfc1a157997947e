//! Views of parts and copies (docs/layout.md, views): a slice, a concatenation and a
//! broadcast as layout algebra.
//!
//! - A slice's output is a *window* of its source's cells: every element on the same node
//!   of every level and in the same slot, at the same LM word and `Time` step counted
//!   from the window's first ([`Window`]). It exists where the slice takes, on each axis,
//!   a run of one sub-axis's digits (the more major digits fixed, the more minor ones
//!   whole, or fixed under a stride), and the fixed digits of levels and `W` are 0: a
//!   layout always starts at position 0 of a level and at slot 0 of a word, so a slice
//!   from another position or slot is no view.
//! - A concatenation is the inverse: each input is a window of the output's cells.
//! - A broadcast holds each new axis (or one broadcast from length 1) on levels its
//!   source is copied over: the copy each position holds is already the output's
//!   element there. A new axis held in memory, `W` or `Time` needs words of its own.

use super::view::pins;
use super::{Class, LevelUse, SubAxis, TensorLayout};
use crate::machine::Machine;

/// Where a slice's output starts in its source's cells: the LM words and the `Time` steps
/// before its first element. The slice view is its source's region read from there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub words: u64,
    pub steps: u64,
}

impl Window {
    /// `self` moved by `digit` steps of a sub-axis of `class` and `stride`; `None` for a
    /// level or a slot other than the first (no layout starts there).
    fn moved(self, class: Class, digit: u64, stride: u64) -> Option<Window> {
        if digit == 0 {
            return Some(self);
        }
        let by = digit.checked_mul(stride)?;
        match class {
            Class::Mem => Some(Window {
                words: self.words.checked_add(by)?,
                ..self
            }),
            Class::Time => Some(Window {
                steps: self.steps.checked_add(by)?,
                ..self
            }),
            Class::Level(_) | Class::W => None,
        }
    }

    /// Both windows' offsets added.
    fn plus(self, o: Window) -> Option<Window> {
        Some(Window {
            words: self.words.checked_add(o.words)?,
            steps: self.steps.checked_add(o.steps)?,
        })
    }
}

/// How a slice runs along one axis's sub-axes: along sub-axis `at`, `count` of its
/// indices `every` apart; the more minor sub-axes whole (`whole`) or fixed.
struct Along {
    at: usize,
    count: u64,
    every: u64,
    whole: bool,
}

/// One axis of a slice: the output's `n` indices read the source's `start + step·h`.
/// The output's sub-axes and the window they start at, where they are one sub-axis's
/// digits ([`Along`]).
fn slice_group(group: &[SubAxis], start: u64, n: u64, step: u64) -> Option<(Vec<SubAxis>, Window)> {
    let len = group.len();
    // radix[k]: the product of the sizes minor to sub-axis k.
    let mut radix = vec![1u64; len];
    for k in (0..len.saturating_sub(1)).rev() {
        radix[k] = radix[k + 1].checked_mul(group[k + 1].size)?;
    }
    let digit = |i: u64, k: usize| (i / radix[k]) % group[k].size.max(1);
    let along = if n == 1 {
        None
    } else if step == 1 {
        // The most minor sub-axis whose digits hold the run whole.
        let at = (0..len).rev().find(|&k| {
            start.is_multiple_of(radix[k])
                && n.is_multiple_of(radix[k])
                && digit(start, k) + n / radix[k] <= group[k].size
        })?;
        Some(Along {
            at,
            count: n / radix[at],
            every: 1,
            whole: true,
        })
    } else {
        let fits = |k: usize| {
            let q = step / radix[k];
            step.is_multiple_of(radix[k])
                && (q.checked_mul(n - 1))
                    .and_then(|s| s.checked_add(digit(start, k)))
                    .is_some_and(|e| e < group[k].size)
        };
        let at = (0..len).find(|&k| fits(k))?;
        Some(Along {
            at,
            count: n,
            every: step / radix[at],
            whole: false,
        })
    };
    let mut window = Window::default();
    let mut out = Vec::new();
    for (k, a) in group.iter().enumerate() {
        match &along {
            Some(r) if r.at == k => out.push(SubAxis {
                size: r.count,
                class: a.class,
                stride: a.stride.checked_mul(r.every)?,
            }),
            Some(r) if r.whole && k > r.at => {
                out.push(*a);
                continue;
            }
            Some(_) | None => {}
        }
        window = window.moved(a.class, digit(start, k), a.stride)?;
    }
    Some((out, window))
}

/// A placeholder for an axis of length 1 that no sub-axis holds.
const ONE: SubAxis = SubAxis {
    size: 1,
    class: Class::Mem,
    stride: 1,
};

impl TensorLayout {
    /// The layout of a slice of this tensor (per axis `start..limit` every `stride`,
    /// as the `Slice` kernel takes it) that keeps every element in its cell, read from
    /// the source's [`Window`]; `None` where no layout does (see the module's rules),
    /// for a padded layout or an empty slice.
    pub fn sliced(
        &self,
        start: &[u64],
        limit: &[u64],
        stride: &[u64],
        machine: &Machine,
    ) -> Option<TensorLayout> {
        Some(self.sliced_at(start, limit, stride, machine)?.0)
    }

    /// [`TensorLayout::sliced`], with the window of the source's cells it reads.
    pub fn sliced_at(
        &self,
        start: &[u64],
        limit: &[u64],
        stride: &[u64],
        machine: &Machine,
    ) -> Option<(TensorLayout, Window)> {
        let rank = self.groups.len();
        if self.logical != self.padded || [start.len(), limit.len(), stride.len()] != [rank; 3] {
            return None;
        }
        let mut window = Window::default();
        let mut groups = Vec::with_capacity(rank);
        let mut dims = Vec::with_capacity(rank);
        for a in 0..rank {
            let (s, l, k) = (start[a], limit[a], stride[a]);
            if k == 0 || s >= l || l > self.logical[a] {
                return None;
            }
            let n = (l - s).div_ceil(k);
            let (mut g, w) = slice_group(&self.groups[a], s, n, k)?;
            window = window.plus(w)?;
            if g.is_empty() {
                g.push(ONE);
            }
            groups.push(g);
            dims.push(n);
        }
        // A level the source lays the tensor over that no sub-axis names any more holds
        // the output on its position 0 (every dropped digit of it is 0): pinned there,
        // not copied.
        for (i, lv) in self.levels.iter().enumerate() {
            let named = groups.iter().flatten().any(|s| s.class == Class::Level(i));
            if !lv.replicated && !named {
                groups[0].push(SubAxis {
                    size: 1,
                    class: Class::Level(i),
                    stride: 1,
                });
            }
        }
        Some((self.rebind(&groups, &dims, machine)?, window))
    }

    /// The layout of the concatenation along `axis`, `total` long, of tensors laid out
    /// as this one (the first input): the parts one after another in memory, a new
    /// outermost memory sub-axis of `total / len` parts, each part this layout's
    /// footprint after the one before, so that each input is a window of the output
    /// ([`TensorLayout::sliced_at`] of its part). `None` for a padded layout, or where
    /// `total` is not a whole number of parts.
    pub fn concatenated(&self, axis: usize, total: u64, machine: &Machine) -> Option<TensorLayout> {
        let len = *self.logical.get(axis)?;
        if self.logical != self.padded || len == 0 || !total.is_multiple_of(len) {
            return None;
        }
        let parts = total / len;
        if parts == 1 {
            return Some(self.clone());
        }
        let mut groups = self.groups.clone();
        groups[axis].insert(
            0,
            SubAxis {
                size: parts,
                class: Class::Mem,
                stride: self.footprint_words,
            },
        );
        let mut dims = self.logical.clone();
        dims[axis] = total;
        self.rebind(&groups, &dims, machine)
    }

    /// The layout of this tensor broadcast numpy-style to `dims` (aligned to the trailing
    /// axes) that keeps every copy where the source holds it: the source's axes keep
    /// their sub-axes, and each new axis (or one broadcast from length 1) is held by
    /// levels this layout copies the tensor over whose fan-outs multiply to its length
    /// (the fewest levels, the root-most first). `None` where no such levels are left,
    /// or for a padded layout.
    pub fn broadcast_to(&self, dims: &[u64], machine: &Machine) -> Option<TensorLayout> {
        let src = &self.logical;
        let off = dims.len().checked_sub(src.len())?;
        if self.logical != self.padded {
            return None;
        }
        let mut free: Vec<usize> = (0..self.levels.len())
            .filter(|&i| self.levels[i].replicated)
            .collect();
        let mut groups = Vec::with_capacity(dims.len());
        for (a, &d) in dims.iter().enumerate() {
            let from = a.checked_sub(off);
            match from {
                Some(i) if src[i] == d => groups.push(self.groups[i].clone()),
                Some(i) if src[i] != 1 => return None,
                Some(_) | None => {
                    let mut g = copies_of(&self.levels, &mut free, d)?;
                    // A size-1 axis's pins stay: the source is on position 0 of them.
                    if let Some(i) = from {
                        g.extend(self.groups[i].iter().filter(|s| pins(s)));
                    }
                    if g.is_empty() {
                        g.push(ONE);
                    }
                    groups.push(g);
                }
            }
        }
        self.rebind(&groups, dims, machine)
    }

    /// The layout of the source of a broadcast (shape `src_dims`, aligned to this
    /// layout's trailing axes, each as long or 1) that this layout reads in place: the
    /// aligned axes keep their sub-axes; every new axis, or one broadcast from 1, must
    /// be held by levels alone that no other axis names (each position holds a copy),
    /// and those levels hold copies of the source. `None` where a copy needs words of
    /// its own (a new axis in memory, `W` or `Time`), or for a padded layout.
    pub fn unbroadcast(&self, src_dims: &[u64], machine: &Machine) -> Option<TensorLayout> {
        let rank = self.groups.len();
        let off = rank.checked_sub(src_dims.len())?;
        if self.logical != self.padded || src_dims.is_empty() {
            return None;
        }
        let mut groups: Vec<Vec<SubAxis>> = Vec::with_capacity(src_dims.len());
        let mut pinned: Vec<SubAxis> = Vec::new();
        let mut copies: Vec<usize> = Vec::new();
        for a in 0..rank {
            let src = a.checked_sub(off).map(|i| src_dims[i]);
            match src {
                Some(s) if s == self.logical[a] => {
                    groups.push(self.groups[a].clone());
                    continue;
                }
                Some(s) if s != 1 => return None,
                Some(_) | None => {}
            }
            for s in &self.groups[a] {
                match s.class {
                    Class::Level(i) if s.size > 1 => copies.push(i),
                    Class::Level(_) => pinned.push(*s),
                    Class::Mem | Class::W | Class::Time => {
                        if s.size > 1 {
                            return None;
                        }
                    }
                }
            }
            if src.is_some() {
                groups.push(vec![ONE]);
            }
        }
        let copied = |s: &SubAxis| matches!(s.class, Class::Level(i) if copies.contains(&i));
        if groups.iter().flatten().any(copied) {
            return None;
        }
        groups[0].extend(pinned.iter().filter(|s| !copied(s)));
        self.rebind(&groups, src_dims, machine)
    }
}

/// Level sub-axes, root-most first, of the fewest `free` levels whose fan-outs multiply
/// to `n` (the root-most such set), those levels taken out of `free`; none for `n` 1.
fn copies_of(levels: &[LevelUse], free: &mut Vec<usize>, n: u64) -> Option<Vec<SubAxis>> {
    if n == 1 {
        return Some(Vec::new());
    }
    let f = free.len().min(16);
    let mut masks: Vec<u32> = (1..(1u32 << f)).collect();
    masks.sort_by_key(|m| (m.count_ones(), *m));
    let product = |m: u32| {
        (0..f)
            .filter(|b| m >> b & 1 == 1)
            .try_fold(1u64, |p, b| p.checked_mul(levels[free[b]].fanout))
    };
    let pick = masks.into_iter().find(|&m| product(m) == Some(n))?;
    let chosen: Vec<usize> = (0..f)
        .filter(|b| pick >> b & 1 == 1)
        .map(|b| free[b])
        .collect();
    free.retain(|i| !chosen.contains(i));
    Some(
        chosen
            .iter()
            .map(|&i| SubAxis {
                size: levels[i].fanout,
                class: Class::Level(i),
                stride: 1,
            })
            .collect(),
    )
}
