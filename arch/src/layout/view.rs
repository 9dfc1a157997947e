//! Views as layout algebra (docs/layout.md, views): a transpose or a reshape renames a
//! tensor's elements without moving them. The view of a layout is the layout of the
//! result that puts every element in the cell (positions, word, slot, step) where the
//! source layout put it; it exists when the source's sub-axes regroup into the result's
//! axes. A reduction's layout is derived the same way (not a view: the reduced axes'
//! sub-axes are dropped and their levels hold copies of the result).
//!
//! Derived layouts are bound like any other (from their text, with explicit strides), so
//! they obey every rule of docs/layout.md; [`TensorLayout::same_cells`] says whether two
//! layouts put every element in the same cells whatever the sub-axes they are written
//! with.

use super::{Class, SubAxis, TensorLayout};
use crate::machine::Machine;

/// A sub-axis in a layout's text, its level named by `names`.
struct Written<'a>(SubAxis, &'a [String]);

impl std::fmt::Display for Written<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.0;
        match a.class {
            Class::Mem => write!(f, "{}:{}", a.size, a.stride),
            Class::W => write!(f, "{}_W:{}", a.size, a.stride),
            Class::Time => write!(f, "{}_Time:{}", a.size, a.stride),
            Class::Level(i) => write!(f, "{}_{}:{}", a.size, self.1[i], a.stride),
        }
    }
}

/// Whether `a` is a size-1 sub-axis of a level: it puts the tensor on that level's
/// position 0 (rather than on every position), whichever axis it is written in.
pub(super) fn pins(a: &SubAxis) -> bool {
    a.size == 1 && matches!(a.class, Class::Level(_))
}

/// A group's sub-axes in normal form: size-1 sub-axes dropped (those of memory, `W` and
/// `Time` address nothing; those of a level are compared apart, [`pins`]), and a sub-axis
/// merged into the one before it where together they count on as one (the major's
/// stride is the minor's stride × the minor's size).
fn normal(group: &[SubAxis]) -> Vec<SubAxis> {
    let mut out: Vec<SubAxis> = Vec::with_capacity(group.len());
    for &a in group.iter().filter(|a| a.size > 1) {
        match out.last_mut() {
            Some(m)
                if m.class == a.class
                    && a.stride.checked_mul(a.size) == Some(m.stride)
                    && m.size.checked_mul(a.size).is_some() =>
            {
                m.size *= a.size;
                m.stride = a.stride;
            }
            _ => out.push(a),
        }
    }
    out
}

impl TensorLayout {
    /// Whether `self` and `other` put every element of one shape in the same cells: the
    /// same shape, dtype and levels, and per axis the same sub-axes in normal form
    /// (size-1 sub-axes dropped, contiguous ones merged). Padded layouts compare whole.
    pub fn same_cells(&self, other: &TensorLayout) -> bool {
        if self.logical != self.padded || other.logical != other.padded {
            return self == other;
        }
        // The levels a layout puts on position 0 only: named by size-1 sub-axes and no
        // other (a level also named by a longer sub-axis is placed by that one).
        let pinned = |l: &TensorLayout| {
            let all = || l.groups.iter().flatten();
            let mut p: Vec<Class> = all()
                .filter(|a| pins(a))
                .map(|a| a.class)
                .filter(|&c| !all().any(|b| b.class == c && b.size > 1))
                .collect();
            p.sort_by_key(|c| match c {
                Class::Level(i) => *i,
                Class::Mem | Class::W | Class::Time => usize::MAX,
            });
            p.dedup();
            p
        };
        self.logical == other.logical
            && self.dtype == other.dtype
            && self.levels == other.levels
            && self.word_bytes == other.word_bytes
            && (self.groups.iter().zip(&other.groups)).all(|(a, b)| normal(a) == normal(b))
            && pinned(self) == pinned(other)
    }

    /// The layout of this tensor transposed by `perm` (output axis `i` is input axis
    /// `perm[i]`) that keeps every element in its cell (a padded layout's padding
    /// permuted with its axis); `None` for a `perm` that is not a permutation of the
    /// axes.
    pub fn transposed(&self, perm: &[usize], machine: &Machine) -> Option<TensorLayout> {
        let rank = self.groups.len();
        let mut seen = vec![false; rank];
        if perm.len() != rank
            || perm
                .iter()
                .any(|&p| p >= rank || std::mem::replace(&mut seen[p], true))
        {
            return None;
        }
        let groups: Vec<Vec<SubAxis>> = perm.iter().map(|&p| self.groups[p].clone()).collect();
        let dims: Vec<u64> = perm.iter().map(|&p| self.logical[p]).collect();
        // Padding sits at the end of each axis: permuted with its axis, every element
        // keeps its cell.
        let pad = (self.logical != self.padded).then_some(dims.as_slice());
        self.rebind_padded(&groups, &dims, pad, machine)
    }

    /// The layout of this tensor reshaped to `dims` (row-major order kept) that keeps
    /// every element in its cell: its sub-axes, major to minor, regrouped into the new
    /// axes, a sub-axis split where an axis boundary falls inside it (which needs the
    /// boundary's factor to divide it). `None` for a padded layout, an element count
    /// that differs, or a boundary no sub-axis can be split at.
    pub fn reshaped(&self, dims: &[u64], machine: &Machine) -> Option<TensorLayout> {
        if self.logical != self.padded {
            return None;
        }
        let count = |d: &[u64]| d.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
        if count(dims)? != count(&self.logical)? {
            return None;
        }
        // Every sub-axis, major to minor over the whole tensor: the row-major order of
        // its elements, which a reshape keeps. Size-1 sub-axes are left out (a level's
        // goes to the first axis: it pins the level wherever it is written).
        let mut rest = (self.groups.iter().flatten())
            .filter(|a| a.size > 1)
            .copied()
            .collect::<std::collections::VecDeque<_>>();
        let pinned: Vec<SubAxis> = self
            .groups
            .iter()
            .flatten()
            .filter(|a| pins(a))
            .copied()
            .collect();
        let mut groups: Vec<Vec<SubAxis>> = Vec::with_capacity(dims.len());
        for &d in dims {
            let mut g = Vec::new();
            let mut need = d;
            while need > 1 {
                let a = rest.pop_front()?;
                if a.size <= need {
                    if need % a.size != 0 {
                        return None;
                    }
                    need /= a.size;
                    g.push(a);
                } else {
                    // The boundary falls inside `a`: its major part ends this axis.
                    if a.size % need != 0 {
                        return None;
                    }
                    let minor = a.size / need;
                    g.push(SubAxis {
                        size: need,
                        class: a.class,
                        stride: a.stride.checked_mul(minor)?,
                    });
                    rest.push_front(SubAxis {
                        size: minor,
                        class: a.class,
                        stride: a.stride,
                    });
                    need = 1;
                }
            }
            if g.is_empty() {
                g.push(SubAxis {
                    size: 1,
                    class: Class::Mem,
                    stride: 1,
                });
            }
            groups.push(g);
        }
        if !rest.is_empty() {
            return None;
        }
        if let Some(first) = groups.first_mut() {
            first.extend(pinned);
        }
        self.rebind(&groups, dims, machine)
    }

    /// The layout of this tensor reduced over `axes` (kept as size-1 axes with
    /// `keep_dims`): the other axes keep their sub-axes, the reduced axes' are dropped,
    /// and a level only they used holds a copy of the result. Not a view: the result is
    /// a new tensor, laid out as the reduction leaves it ([`TensorLayout::derived`]).
    pub fn reduced(
        &self,
        axes: &[usize],
        keep_dims: bool,
        machine: &Machine,
    ) -> Option<TensorLayout> {
        if axes.iter().any(|&a| a >= self.groups.len()) {
            return None;
        }
        let mut from: Vec<Option<usize>> = Vec::new();
        let mut dims: Vec<u64> = Vec::new();
        for (i, &d) in self.logical.iter().enumerate() {
            if !axes.contains(&i) {
                from.push(Some(i));
                dims.push(d);
            } else if keep_dims {
                from.push(None);
                dims.push(1);
            }
        }
        if from.is_empty() {
            from.push(None);
            dims.push(1);
        }
        self.derived(&from, &dims, machine)
    }

    /// The layout of a tensor of shape `dims` computed from this one's element for
    /// element where it can be: output axis `k` keeps the sub-axes of this layout's axis
    /// `from[k]` (of the same length), and an axis of none (`None`: an axis this tensor
    /// does not have, a matrix product's `N`, a slice's shortened axis) lies in memory on
    /// each PE, its last axis packed into the words' slots as this layout packs its own.
    /// A level no kept axis uses holds copies. Memory and `Time` strides are made compact
    /// again, in the order the kept sub-axes had, the new ones minor-most. A kept axis
    /// keeps its padding. `None` for a length that differs, or what does not bind.
    pub fn derived(
        &self,
        from: &[Option<usize>],
        dims: &[u64],
        machine: &Machine,
    ) -> Option<TensorLayout> {
        if from.len() != dims.len() {
            return None;
        }
        let slots = (self.groups.last()?.iter())
            .filter(|a| a.class == Class::W)
            .map(|a| a.size)
            .product::<u64>();
        let last = dims.len() - 1;
        let mut groups: Vec<Vec<SubAxis>> = Vec::with_capacity(dims.len());
        for (k, (&f, &d)) in from.iter().zip(dims).enumerate() {
            match f {
                Some(i) => {
                    if self.logical.get(i) != Some(&d) {
                        return None;
                    }
                    groups.push(self.groups[i].clone());
                }
                None => {
                    // Stride 0 marks a new memory sub-axis: minor-most when compacted.
                    let w = if k == last && slots > 1 && d.is_multiple_of(slots) {
                        slots
                    } else {
                        1
                    };
                    let mut g = vec![SubAxis {
                        size: d / w,
                        class: Class::Mem,
                        stride: 0,
                    }];
                    if w > 1 {
                        g.push(SubAxis {
                            size: w,
                            class: Class::W,
                            stride: 1,
                        });
                    }
                    groups.push(g);
                }
            }
        }
        // `W` sub-axes kept on an axis that is no longer the last are moved to memory.
        for (k, g) in groups.iter_mut().enumerate() {
            if k != last || from[k].is_some_and(|i| i != self.groups.len() - 1) {
                for a in g.iter_mut().filter(|a| a.class == Class::W) {
                    a.class = Class::Mem;
                    a.stride = 0;
                }
            }
        }
        // A kept axis keeps its padding (at its end, as this layout pads it).
        let padded = (from.iter().flatten()).any(|&i| self.padded[i] != self.logical[i]);
        for class in [Class::Mem, Class::Time] {
            compact(&mut groups, class);
        }
        self.rebind_padded(&groups, dims, padded.then_some(dims), machine)
    }

    /// The same layout for a tensor of the same shape and another element type (an
    /// elementwise result of another dtype); `None` where its `W` slots do not fit the
    /// new dtype's word.
    pub fn with_dtype(
        &self,
        dtype: crate::dtype::DType,
        machine: &Machine,
    ) -> Option<TensorLayout> {
        if dtype == self.dtype {
            return Some(self.clone());
        }
        if self.logical != self.padded {
            return None;
        }
        TensorLayout::parse(&self.canonical(), machine, Some(&self.logical), dtype).ok()
    }

    /// `groups` (this layout's levels) bound for `dims`, from their text.
    pub(super) fn rebind(
        &self,
        groups: &[Vec<SubAxis>],
        dims: &[u64],
        machine: &Machine,
    ) -> Option<TensorLayout> {
        self.rebind_padded(groups, dims, None, machine)
    }

    /// [`TensorLayout::rebind`] with the pad prefix `pad` (the logical shape of a
    /// layout whose groups hold more than it).
    fn rebind_padded(
        &self,
        groups: &[Vec<SubAxis>],
        dims: &[u64],
        pad: Option<&[u64]>,
        machine: &Machine,
    ) -> Option<TensorLayout> {
        let names: Vec<String> = self.levels.iter().map(|l| l.name.to_string()).collect();
        let used: Vec<bool> = (0..names.len())
            .map(|i| groups.iter().flatten().any(|a| a.class == Class::Level(i)))
            .collect();
        let text = super::layout_text(
            pad,
            groups.iter().map(|g| g.iter().map(|&a| Written(a, &names))),
            (names.iter().zip(&used))
                .filter(|(_, u)| !**u)
                .map(|(n, _)| n.as_str()),
        );
        TensorLayout::parse(&text, machine, Some(dims), self.dtype).ok()
    }
}

/// The sub-axes of `class` given compact strides (row-major in the order of their
/// present strides, largest first; stride 0 marks a new one, minor-most in order of
/// appearance), the others unchanged.
fn compact(groups: &mut [Vec<SubAxis>], class: Class) {
    let mut at: Vec<(usize, usize)> = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        for (k, a) in group.iter().enumerate() {
            if a.class == class {
                at.push((g, k));
            }
        }
    }
    // Largest stride first (ties: in order of appearance), each the product of those after.
    at.sort_by(|&(g1, k1), &(g2, k2)| {
        groups[g2][k2]
            .stride
            .cmp(&groups[g1][k1].stride)
            .then((g1, k1).cmp(&(g2, k2)))
    });
    let mut stride = 1u64;
    for &(g, k) in at.iter().rev() {
        groups[g][k].stride = stride;
        stride = stride.saturating_mul(groups[g][k].size);
    }
}
