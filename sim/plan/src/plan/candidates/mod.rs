//! Candidate layouts of one tensor: the space the planner searches for a plan variable.
//!
//! A candidate says, for every addressable level of the machine, whether the tensor is
//! replicated over it or which logical axis is split over it and over how many of its
//! positions (all of them, or a power-of-two part: `8_MAB` of 16 leaves the other 8
//! idle). An axis may take several levels, in any order (the order decides which
//! elements share a node: root-most first is the usual block distribution). What is
//! left of each axis stays in memory, after its levels; the last axis may be packed into
//! the words' slots (`W`). When a shard does not fit the PE's memory, the first axis
//! that can take them gets `Time` steps (the fewest powers of two that fit), or where
//! no axis can, the major axes take them together (any divisors: `stream::time_steps`). Every candidate is bound
//! with the arch crate (so it is legal for the tensor's shape, dtype and the machine's
//! LM) and candidates are unique in canonical form.
//!
//! The space is generated in tiers, up to [`Space::max`] candidates: the core (whole
//! fan-outs, levels root-most first, memory last) always, then parts of fan-outs, then
//! every order of an axis's levels and memory part. So a budget cuts the least usual
//! layouts first, and a tensor of many axes costs milliseconds, not seconds.
//!
//! This module holds the space, the candidate and the tiers in order; `tiers.rs`
//! enumerates one tier, `stream.rs` makes a layout's stream variants.

mod stream;
mod tiers;

pub use stream::{STREAM_STEPS, streamed};
use tiers::{Done, tier_of};

use mnsim_arch::layout::AxisName;
use mnsim_arch::{DType, LayoutExpr, Machine, TensorLayout};
/// Candidate texts hash with a fixed, fast hasher (not SipHash: thousands per tensor).
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

/// Which layouts to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Space {
    /// Split over a power-of-two part of a level's fan-out, not only all of it.
    pub partial_fanout: bool,
    /// Several levels on one axis in every order (otherwise root-most first only).
    pub level_orders: bool,
    /// Pack the last axis into words (`W`) as well as not.
    pub packing: bool,
    /// Stop after this many distinct candidates (the core is always whole).
    pub max: usize,
}

impl Default for Space {
    fn default() -> Self {
        Space {
            partial_fanout: true,
            level_orders: true,
            packing: true,
            max: MAX_CANDIDATES,
        }
    }
}

/// Candidates per tensor in the default space.
pub const MAX_CANDIDATES: usize = 4_000;

/// One candidate: the bound layout ([`Candidate::text`] its canonical text).
#[derive(Clone, Debug)]
pub struct Candidate {
    pub layout: TensorLayout,
    /// Whole fan-outs only, levels root-most first: the core of the space, which the
    /// search covers first.
    pub core: bool,
}

impl Candidate {
    /// The canonical text, written when asked (the planner keeps the bound layouts, and
    /// prints the few it reports).
    pub fn text(&self) -> String {
        self.layout.canonical()
    }
}

/// Power-of-two parts of a fan-out a split may use (> 1), smallest first.
fn parts(fanout: u64, partial: bool) -> Vec<u64> {
    if !partial {
        return vec![fanout];
    }
    let mut v: Vec<u64> = (1..64)
        .map(|k| 1u64 << k)
        .take_while(|&p| p < fanout)
        .filter(|p| fanout.is_multiple_of(*p))
        .collect();
    v.push(fanout);
    v
}

/// Every permutation of `v` (v is short: the levels of one axis).
fn permutations<T: Clone>(v: &[T]) -> Vec<Vec<T>> {
    if v.len() <= 1 {
        return vec![v.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..v.len() {
        let mut rest = v.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x.clone());
            out.push(p);
        }
    }
    out
}

/// The candidates of a tensor of `dims` (at its bound) and `dtype` on `m` (with `pad`,
/// those of its padded shape too, after its own: [`padded_dims`]), in a fixed
/// order: the core, then (as `space` allows) parts of fan-outs, then other level orders;
/// within a tier, level assignments in mixed radix over the levels root-most first, then
/// level orders, then unpacked before packed. At most `space.max` beyond the core.
///
/// Each layout is built as the parsed form of its text (no text, no parse) and bound
/// by the arch crate. A tier skips what the tier before it bound already: the parts
/// tier the assignments of whole fan-outs (the core's), the orders tier the first
/// order of each assignment (the tier before's).
pub fn generate(
    m: &Machine,
    dims: &[u64],
    dtype: DType,
    implicit_pad: bool,
    space: Space,
    pad: bool,
) -> Vec<Candidate> {
    let mut out = generate_shape(m, (dims, None), dtype, implicit_pad, space);
    if let Some(padded) = padded_dims(dims).filter(|_| pad) {
        let room = Space {
            max: space.max.saturating_sub(out.len()),
            ..space
        };
        out.extend(generate_shape(
            m,
            (&padded, Some(dims)),
            dtype,
            implicit_pad,
            room,
        ));
        // The cores first (stable: the unpadded before the padded).
        out.sort_by_key(|c| !c.core);
    }
    out
}

/// Padding allowed per axis: at most this fraction (`1 / PAD_WASTE`) of its length.
pub const PAD_WASTE: u64 = 32;

/// The padded shape the planner also tries for `dims`: each axis rounded up to the
/// largest power of two whose rounding pads it by at most `1 / PAD_WASTE` of its length
/// (3000 to 3072 = 3 · 1024, 500 to 512, 50257 to 51200 = 25 · 2048), so that an axis
/// with few factors of two can still split over whole fan-outs (which are powers of two
/// on the shipped machines). `None` when no axis moves: a length with factors of two
/// enough (768 = 3 · 256 pads to 1024 only, a third more) keeps its exact candidates
/// alone.
pub fn padded_dims(dims: &[u64]) -> Option<Vec<u64>> {
    let padded: Vec<u64> = (dims.iter())
        .map(|&d| {
            (0..40)
                .map(|k| 1u64 << k)
                .filter_map(|g| d.checked_next_multiple_of(g))
                .take_while(|&r| (r - d).saturating_mul(PAD_WASTE) <= d)
                .last()
                .unwrap_or(d)
        })
        .collect();
    (padded.as_slice() != dims).then_some(padded)
}

/// The candidates of one shape (see [`generate`]): `(dims, logical)` the lengths the
/// layouts split and, where they pad, the tensor's own (then every layout has a pad
/// prefix).
fn generate_shape(
    m: &Machine,
    (dims, logical): (&[u64], Option<&[u64]>),
    dtype: DType,
    implicit_pad: bool,
    space: Space,
) -> Vec<Candidate> {
    let shape = Tensor::new(m, dims, dtype, implicit_pad);
    let mut acc = Found::new(dims.len(), space.max, !shape.distinct_names());
    acc.expr.pad = logical.map(|l| (l.to_vec(), 0..0));
    let core = Space {
        partial_fanout: false,
        level_orders: false,
        max: usize::MAX,
        ..space
    };
    let mut tiers = vec![(core, Done::Nothing)];
    if space.partial_fanout {
        let parts = Space {
            level_orders: false,
            ..space
        };
        tiers.push((parts, Done::WholeFanouts));
    }
    if space.level_orders {
        tiers.push((space, Done::FirstOrders));
    }
    for (tier, done) in tiers {
        tier_of(&shape, tier, done, &mut acc);
        if acc.out.len() >= space.max {
            break;
        }
    }
    let mut out = acc.out;
    // The core first (stable: otherwise in generation order).
    out.sort_by_key(|c| !c.core);
    out
}

/// What every tier of one tensor's generation reads: the machine and its addressable
/// levels, the tensor, element slots per word and LM words per PE.
struct Tensor<'a> {
    m: &'a Machine,
    levels: Vec<mnsim_arch::machine::AddrLevel>,
    /// Each level's name as a sub-axis suffix reads it (the names are identifiers:
    /// `Machine::validate`).
    names: Vec<AxisName>,
    dims: &'a [u64],
    dtype: DType,
    implicit_pad: bool,
    slots: u64,
    lm_words: u64,
    /// `orders[n]`: every order of `n` items (an axis's levels and its memory part), as
    /// indices, in [`permutations`]' order.
    orders: Vec<Vec<Vec<usize>>>,
}

impl<'a> Tensor<'a> {
    fn new(m: &'a Machine, dims: &'a [u64], dtype: DType, implicit_pad: bool) -> Self {
        let levels = m.addressable_levels();
        let names = (levels.iter())
            .map(|l| AxisName::of(l.name.clone()))
            .collect();
        let orders = (0..=levels.len() + 1)
            .map(|n| permutations(&(0..n).collect::<Vec<_>>()))
            .collect();
        Tensor {
            m,
            names,
            dims,
            dtype,
            implicit_pad,
            slots: (m.word_bytes / dtype.bytes().max(1)).max(1),
            lm_words: m.leaf_memory_bytes() / m.word_bytes.max(1),
            orders,
            levels,
        }
    }

    /// Whether every level has a name of its own that no other sub-axis suffix reads
    /// (`Machine::validate` does not forbid `W` or `Time`). Then two layouts built from
    /// different assignments, orders or packing differ in some sub-axis's size or
    /// name, so they bind to different layouts, with different canonical texts.
    fn distinct_names(&self) -> bool {
        (self.names.iter().enumerate())
            .all(|(i, n)| matches!(n, AxisName::Level(_)) && !self.names[..i].contains(n))
    }
}

/// The candidates found so far, their texts (where two layouts built apart may read
/// as one: [`Tensor::distinct_names`]), and the layout being built (its vectors reused
/// from one layout to the next).
struct Found {
    out: Vec<Candidate>,
    seen: Option<HashSet<String>>,
    expr: LayoutExpr,
}

impl Found {
    /// Room for `max` candidates (or a few thousand, if `max` is more); `check`: compare
    /// texts.
    fn new(rank: usize, max: usize, check: bool) -> Self {
        let room = max.min(MAX_CANDIDATES + 100);
        Found {
            out: Vec::with_capacity(room),
            seen: check.then(|| HashSet::with_capacity_and_hasher(room, Default::default())),
            expr: LayoutExpr {
                pad: None,
                groups: vec![Vec::new(); rank],
                group_spans: vec![0..0; rank],
                bcast: Vec::new(),
            },
        }
    }

    /// Keeps `layout` unless a candidate of the same text was kept before.
    fn keep(&mut self, layout: TensorLayout, core: bool) {
        if let Some(seen) = &mut self.seen
            && !seen.insert(layout.canonical())
        {
            return;
        }
        self.out.push(Candidate { layout, core });
    }
}

/// Binds a layout text (canonical or not) for a tensor, as the planner's seeds need.
pub fn bind_text(
    m: &Machine,
    text: &str,
    dims: &[u64],
    dtype: DType,
    implicit_pad: bool,
) -> Option<Candidate> {
    let expr = LayoutExpr::parse(text).ok()?;
    let layout = TensorLayout::bind(&expr, m, Some(dims), dtype, implicit_pad).ok()?;
    Some(Candidate { layout, core: true })
}

#[cfg(test)]
mod tests;
