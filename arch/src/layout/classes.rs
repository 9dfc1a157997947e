//! The sub-axes of a layout by class, as binding reads them: which sub-axes each class
//! has, and their resolved forms with what error messages say of them.

use super::{Class, LayoutExpr, SubAxis};
use std::ops::Range;

/// The sub-axes of each class, as `(group, index in group)` in order of appearance.
/// Classes: 0 mem, 1 W, 2 Time, 3+i level i. One list by class, and where each class
/// starts in it (and where the last ends).
pub(super) struct Members {
    pub(super) subs: Vec<(usize, usize)>,
    start: Vec<usize>,
}

impl Members {
    /// The members of each of `classes` classes in `groups`.
    pub(super) fn new(groups: &[Vec<SubAxis>], classes: usize) -> Self {
        let mut subs = Vec::with_capacity(groups.iter().map(Vec::len).sum());
        let mut start = Vec::with_capacity(classes + 1);
        for c in 0..classes {
            start.push(subs.len());
            let class = class_at(c);
            for (g, axes) in groups.iter().enumerate() {
                let of = (axes.iter().enumerate()).filter(|(_, a)| a.class == class);
                subs.extend(of.map(|(k, _)| (g, k)));
            }
        }
        start.push(subs.len());
        Members { subs, start }
    }

    /// How many classes there are.
    pub(super) fn classes(&self) -> usize {
        self.start.len() - 1
    }

    /// The sub-axes of class `c`, in order of appearance.
    pub(super) fn of(&self, c: usize) -> &[(usize, usize)] {
        &self.subs[self.start[c]..self.start[c + 1]]
    }
}

/// The sub-axes of each class once resolved, with what error messages say of them.
pub(super) struct ClassView<'a> {
    pub(super) expr: &'a LayoutExpr,
    /// The resolved sub-axes in the order of `members`.
    pub(super) axes: Vec<SubAxis>,
    pub(super) members: &'a Members,
    pub(super) whole: &'a Range<usize>,
}

impl ClassView<'_> {
    /// The resolved sub-axes of class `c`, in order of appearance.
    pub(super) fn axes(&self, c: usize) -> &[SubAxis] {
        &self.axes[self.members.start[c]..self.members.start[c + 1]]
    }

    /// The span of class `c`'s first sub-axis (the whole layout if it has none).
    pub(super) fn first_span(&self, c: usize) -> Range<usize> {
        (self.members.of(c).first()).map_or(self.whole.clone(), |&(g, k)| {
            self.expr.groups[g][k].span.clone()
        })
    }

    /// Class `c`'s sub-axes as text: "`a`, `b`".
    pub(super) fn subs_text(&self, c: usize) -> String {
        (self.members.of(c).iter())
            .map(|&(g, k)| format!("`{}`", self.expr.groups[g][k]))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The class of class index `c` (0 mem, 1 W, 2 Time, 3+i level i).
pub(super) fn class_at(c: usize) -> Class {
    match c {
        0 => Class::Mem,
        1 => Class::W,
        2 => Class::Time,
        l => Class::Level(l - 3),
    }
}
