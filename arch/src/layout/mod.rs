//! TensorLayout (docs/layout.md): how a tensor is spread over the machine tree.
//!
//! [`LayoutExpr`] is the parsed text; [`TensorLayout`] is a layout bound to a machine,
//! a logical shape and an element type, with every stride resolved and every rule of
//! docs/layout.md checked. A bound layout maps logical indices to cells (a position per
//! addressable level, an LM word, a slot in the word, a time step) and back, and
//! counts in closed form what timing mode needs.

mod bind;
mod classes;
mod inverse;
mod map;
mod nest;
mod parse;
mod relevel;
#[cfg(test)]
mod tests;
mod text;
mod view;
mod view_parts;
#[cfg(test)]
mod view_parts_tests;
#[cfg(test)]
mod view_tests;

pub use map::{AxisTables, LevelStat, Run, RunStep, Shard};
pub use nest::{Cell, Loop, Nest};
pub use parse::{AxisName, BcastExpr, LayoutExpr, SubAxisExpr};
pub use text::{NO_BCAST, Piece, layout_text, write_layout};
pub use view_parts::Window;

use crate::dtype::DType;
use inverse::Inverse;
use std::fmt;
use std::ops::Range;

/// A layout error: a message naming the offending text, and its byte range in the
/// layout string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError {
    pub message: String,
    pub span: Range<usize>,
}

impl LayoutError {
    pub fn new(message: impl Into<String>, span: Range<usize>) -> Self {
        LayoutError {
            message: message.into(),
            span,
        }
    }
    /// Byte offset of the offending text.
    pub fn offset(&self) -> usize {
        self.span.start
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.span.start)
    }
}

impl std::error::Error for LayoutError {}

/// The class of a resolved sub-axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    Mem,
    /// Index into [`TensorLayout::levels`].
    Level(usize),
    W,
    Time,
}

/// A sub-axis with its stride resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SubAxis {
    pub size: u64,
    pub class: Class,
    pub stride: u64,
}

/// How one addressable level is used by a layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LevelUse {
    /// The level's name, held in place (no allocation: every layout bound has one per
    /// level).
    pub name: smol_str::SmolStr,
    /// Positions among siblings (folded fan-out).
    pub fanout: u64,
    /// No sub-axis names this level: every position holds a copy.
    pub replicated: bool,
    /// Number of distinct positions the level's sub-axes reach (= fanout if replicated).
    pub used: u64,
}

/// Where one element lives: one cell per replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Position per addressable level, root-most first; `None` = replicated (`*`).
    pub pos: Vec<Option<u64>>,
    /// LM word address.
    pub addr: u64,
    /// Slot inside the word.
    pub w: u64,
    /// Time step.
    pub t: u64,
}

/// A layout bound to a machine, a logical shape and an element type. Immutable once
/// bound: its body is shared, so a clone (a planner copies layouts into every op it
/// measures) costs a reference count, not the body's dozen vectors.
#[derive(Clone, PartialEq, Eq)]
pub struct TensorLayout(std::sync::Arc<body::Body>);

impl std::ops::Deref for TensorLayout {
    type Target = body::Body;
    fn deref(&self) -> &body::Body {
        &self.0
    }
}

/// Hashes what sets layouts of one machine apart (their shape, sub-axes, which levels
/// hold copies and the dtype), worked out once when the layout is bound: equal layouts
/// hash equal (the hash reads part of what equality compares), and layouts of one
/// machine that differ differ in one of those (the levels' names and fan-outs and the
/// word are the machine's). Cheaper than keying a table by the canonical text.
impl std::hash::Hash for TensorLayout {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(self.0.hash);
    }
}

/// The hash [`TensorLayout`]'s `Hash` writes, of the parts of a layout being bound.
pub(crate) fn key_hash(
    logical: &[u64],
    groups: &[Vec<SubAxis>],
    levels: &[LevelUse],
    dtype: DType,
) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    logical.hash(&mut h);
    groups.hash(&mut h);
    for l in levels {
        l.replicated.hash(&mut h);
    }
    dtype.hash(&mut h);
    h.finish()
}

impl fmt::Debug for TensorLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

mod body {
    use super::{DType, Inverse, LevelUse, SubAxis};

    /// The body of a [`super::TensorLayout`] (its fields are the layout module's).
    #[derive(Debug)]
    pub struct Body {
        /// [`super::key_hash`] of the layout (its `Hash`); first, so that layouts that
        /// differ compare unequal at once.
        pub(in crate::layout) hash: u64,
        pub(in crate::layout) logical: Vec<u64>,
        pub(in crate::layout) padded: Vec<u64>,
        pub(in crate::layout) groups: Vec<Vec<SubAxis>>,
        pub(in crate::layout) levels: Vec<LevelUse>,
        pub(in crate::layout) dtype: DType,
        pub(in crate::layout) word_bytes: u64,
        pub(in crate::layout) slots: u64,
        pub(in crate::layout) footprint_words: u64,
        /// Time steps spanned (max step + 1), read at every op a planner walks.
        pub(in crate::layout) time_span: u64,
        /// Flat list of all sub-axes (group-major) with the radix of each inside its
        /// group, made when first read ([`super::TensorLayout::flat`]): what maps
        /// elements one by one reads, which most layouts a planner binds never do.
        pub(in crate::layout) flat_once: std::sync::OnceLock<Vec<(usize, SubAxis, u64)>>,
        pub(in crate::layout) inv_mem: Inverse,
        pub(in crate::layout) inv_w: Inverse,
        pub(in crate::layout) inv_time: Inverse,
        pub(in crate::layout) inv_levels: Vec<Inverse>,
    }

    /// Every part but the flat list, which follows from the groups (and may not be
    /// made yet).
    impl PartialEq for Body {
        fn eq(&self, o: &Body) -> bool {
            let Body {
                hash,
                logical,
                padded,
                groups,
                levels,
                dtype,
                word_bytes,
                slots,
                footprint_words,
                time_span,
                flat_once: _,
                inv_mem,
                inv_w,
                inv_time,
                inv_levels,
            } = self;
            *hash == o.hash
                && *logical == o.logical
                && *padded == o.padded
                && *groups == o.groups
                && *levels == o.levels
                && *dtype == o.dtype
                && *word_bytes == o.word_bytes
                && *slots == o.slots
                && *footprint_words == o.footprint_words
                && *time_span == o.time_span
                && *inv_mem == o.inv_mem
                && *inv_w == o.inv_w
                && *inv_time == o.inv_time
                && *inv_levels == o.inv_levels
        }
    }

    impl Eq for Body {}
}

impl TensorLayout {
    /// Every sub-axis, group-major, with its group and its radix inside the group.
    pub(in crate::layout) fn flat(&self) -> &[(usize, SubAxis, u64)] {
        self.0
            .flat_once
            .get_or_init(|| bind::flat_sub_axes(&self.0.groups))
    }
}
