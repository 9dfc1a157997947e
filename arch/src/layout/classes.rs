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
    /// The members of each of `classes` classes in `groups` (sub-axes of other classes
    /// are no member): counted per class, then placed, in one pass each.
    pub(super) fn new(groups: &[Vec<SubAxis>], classes: usize) -> Self {
        let index = |a: &SubAxis| Some(class_index(a.class)).filter(|&c| c < classes);
        let mut start = vec![0usize; classes + 1];
        for a in groups.iter().flatten() {
            if let Some(c) = index(a) {
                start[c + 1] += 1;
            }
        }
        for c in 0..classes {
            start[c + 1] += start[c];
        }
        let mut subs = vec![(0, 0); start[classes]];
        // The next free place of each class.
        let mut next = start[..classes].to_vec();
        for (g, axes) in groups.iter().enumerate() {
            for (k, a) in axes.iter().enumerate() {
                if let Some(c) = index(a) {
                    subs[next[c]] = (g, k);
                    next[c] += 1;
                }
            }
        }
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

/// The class index of `class` (0 mem, 1 W, 2 Time, 3+i level i): [`class_at`]'s
/// inverse.
fn class_index(class: Class) -> usize {
    match class {
        Class::Mem => 0,
        Class::W => 1,
        Class::Time => 2,
        Class::Level(l) => l.saturating_add(3),
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
