//! How an op walks the `Time` steps of its operands (docs/model.md, streams).
//!
//! A walk is a sequence of steps. **Output steps are outer**: the output's slices are
//! produced one after another, in increasing step order (axis by axis, the first
//! logical axis outermost). Inside one output step, the walk visits every combination
//! of the inputs' slices that output step needs: first the inputs' finer steps along
//! output axes, then the reduced (contraction) variables, in order. Each step names the
//! slice every stepped input reads and the output slice it writes.
//!
//! A slice is found per logical axis: the `Time` sub-axes of an axis's group give a
//! step contribution for each index of that axis, and a slice is the sum of its axes'
//! contributions. An input axis that takes its index from an output axis needs, for
//! one output step, the contributions of the indices that output step covers; an axis
//! of a reduced variable needs all of them.
//!
//! A walk is computed from its [`WalkKey`] alone: per variable (an output axis or a
//! reduced variable) its distinct keys (`keys`), then the steps, written in place into
//! vectors of the walk's length.

use mnsim_arch::TensorLayout;
use mnsim_arch::layout::Class;
use mnsim_kernels::shape::AxisSource;
use std::ops::Range;
use std::sync::Arc;

mod keys;
mod sends;
#[cfg(test)]
mod tests;

pub use sends::{Sends, SendsMemo, sends};

/// Walks longer than this are not streamed (their operands are consumed whole).
pub const MAX_WALK: usize = 1 << 16;

/// An op's walk over the `Time` steps of its operands. The step vectors are shared:
/// a walk is cloned for every op that walks alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkPlan {
    /// Per walk step, the output slice it writes (empty: the output has no steps).
    pub out: Arc<[u32]>,
    /// Per input, per walk step the slice it reads (empty: the input has no steps).
    pub inputs: Vec<Arc<[u32]>>,
    /// Steps of the walk.
    pub steps: usize,
    /// Slices of the output `out` names: one more than the largest (0: none).
    pub out_slices: u32,
}

/// What a walk depends on ([`walk`]): the output's dims and the reduced variables'
/// lengths; the `Time` sub-axes of the output, if it has steps, and of every input
/// with steps (per axis: each one's radix in its group, size and stride), with the
/// inputs' index sources. Two ops of equal keys walk alike, whatever else their
/// layouts say.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WalkKey {
    out_dims: Vec<u64>,
    reduced: Vec<u64>,
    out: Option<TimeAxes>,
    inputs: Vec<Option<(TimeAxes, Vec<AxisSource>)>>,
}

/// A `Time` sub-axis: its radix in its group (the product of the sizes inside it), its
/// size (at least 1) and its stride. The index `x` of its axis gives it the digit
/// `(x / radix) % size`, which contributes `digit × stride` to the slice.
type Sub = (u64, u64, u64);

/// Per logical axis, its `Time` sub-axes, innermost first.
type TimeAxes = Vec<Vec<Sub>>;

/// The `Time` sub-axes of `l`, axis by axis, or `None` when it has no steps.
fn time_axes(l: &TensorLayout) -> Option<TimeAxes> {
    if l.time_span() <= 1 {
        return None;
    }
    let axes = l.groups().iter().map(|subs| {
        let mut radix = 1u64;
        let mut v = Vec::new();
        for s in subs.iter().rev() {
            if s.class == Class::Time {
                v.push((radix, s.size.max(1), s.stride));
            }
            radix = radix.saturating_mul(s.size.max(1));
        }
        v
    });
    Some(axes.collect())
}

/// The sub-axes of axis `a` in `t` (none past its axes).
fn subs_of(t: &TimeAxes, a: usize) -> &[Sub] {
    t.get(a).map_or(&[], Vec::as_slice)
}

impl WalkKey {
    /// The key of [`walk`]'s arguments.
    pub fn of(
        out: Option<&TensorLayout>,
        out_dims: &[u64],
        inputs: &[(&TensorLayout, &[AxisSource])],
        reduced: &[u64],
    ) -> WalkKey {
        WalkKey {
            out_dims: out_dims.to_vec(),
            reduced: reduced.to_vec(),
            out: out.and_then(time_axes),
            inputs: (inputs.iter())
                .map(|(l, map)| time_axes(l).map(|t| (t, map.to_vec())))
                .collect(),
        }
    }

    /// The (input, sub-axes) pairs of the stepped inputs' axes that take their index
    /// from `want`, input by input and axis by axis.
    fn pairs(&self, want: AxisSource) -> Vec<(usize, &[Sub])> {
        let mut p = Vec::new();
        for (i, input) in self.inputs.iter().enumerate() {
            let Some((t, map)) = input else { continue };
            for (a, s) in map.iter().enumerate() {
                if *s == want {
                    p.push((i, subs_of(t, a)));
                }
            }
        }
        p
    }

    /// The walk of the op this is the key of ([`walk`]).
    pub fn walk(&self) -> Option<WalkPlan> {
        let n = self.inputs.len();
        // The variables: the output axes, then the reduced variables.
        let outs = self.out_dims.iter().enumerate().map(|(h, &extent)| {
            let own = self.out.as_ref().map(|t| subs_of(t, h));
            keys::Var::of(extent, own, &self.pairs(AxisSource::Out(h)), n)
        });
        let reds = self.reduced.iter().enumerate().map(|(r, &extent)| {
            keys::Var::of(extent, None, &self.pairs(AxisSource::Reduced(r)), n)
        });
        let vars: Vec<keys::Var> = outs.chain(reds).collect();
        let groups: Vec<_> = vars[..self.out_dims.len()]
            .iter()
            .map(keys::Var::groups)
            .collect();
        let stepped: Vec<bool> = self.inputs.iter().map(Option::is_some).collect();
        let out_stepped = self.out.is_some();
        let total = if groups.iter().any(Vec::is_empty) {
            0
        } else {
            let outer =
                (vars[..groups.len()].iter()).try_fold(1usize, |a, v| a.checked_mul(v.len()));
            let inner = (vars[groups.len()..].iter())
                .try_fold(1usize, |a, v| a.checked_mul(v.len().max(1)));
            outer?.checked_mul(inner?).filter(|&t| t <= MAX_WALK)?
        };
        let zeros = |on: bool| -> Arc<[u32]> {
            std::iter::repeat_n(0, if on { total } else { 0 }).collect()
        };
        let mut out = zeros(out_stepped);
        let mut ins: Vec<Arc<[u32]>> = stepped.iter().map(|&s| zeros(s)).collect();
        let fresh = "a vector made just now is not shared";
        if total > 0 {
            let mut slices: Vec<Option<&mut [u32]>> = (ins.iter_mut().zip(&stepped))
                .map(|(v, &s)| s.then(|| Arc::get_mut(v).expect(fresh)))
                .collect();
            let out = out_stepped.then(|| Arc::get_mut(&mut out).expect(fresh));
            write_steps(&groups, &vars, out, &mut slices);
        }
        let out_slices = out.iter().max().map_or(0, |&m| m + 1);
        Some(WalkPlan {
            out,
            inputs: ins,
            steps: total,
            out_slices,
        })
    }
}

/// The walk of an op writing `out` (a layout of shape `out_dims`, or `None` for an op
/// without an LM output) from `inputs` (each with its per-axis index sources), with
/// reduced variables of lengths `reduced`. `None` when the walk would exceed
/// [`MAX_WALK`] steps.
pub fn walk(
    out: Option<&TensorLayout>,
    out_dims: &[u64],
    inputs: &[(&TensorLayout, &[AxisSource])],
    reduced: &[u64],
) -> Option<WalkPlan> {
    WalkKey::of(out, out_dims, inputs, reduced).walk()
}

/// Per output axis, its output contributions in order, each with its keys' range.
type Groups = [Vec<(u64, Range<usize>)>];

/// Writes a walk's steps in order into `out` and `ins` (per input; `None`: it has no
/// steps), `vars` the output axes (of `groups`) then the reduced variables: per output
/// step (one group per output axis, the last axis fastest) a block of steps, every
/// combination of the groups' keys and for each the reduced variables' keys.
fn write_steps(
    groups: &Groups,
    vars: &[keys::Var],
    mut out: Option<&mut [u32]>,
    ins: &mut [Option<&mut [u32]>],
) {
    let n = ins.len();
    let (outs, reds) = vars.split_at(groups.len());
    let patterns: Vec<Vec<u64>> = (ins.iter().enumerate())
        .map(|(i, s)| match s {
            Some(_) => pattern(reds, i, n),
            None => Vec::new(),
        })
        .collect();
    let per_key: usize = reds.iter().map(|v| v.len().max(1)).product();
    // The group of each output axis, and the key of each in a block.
    let mut at = vec![0usize; groups.len()];
    let mut keys = vec![0usize; groups.len()];
    let mut j = 0;
    loop {
        let chosen = || at.iter().zip(groups).map(|(&g, gs)| &gs[g]);
        let out_slice: u64 = chosen().map(|g| g.0).sum();
        let steps = j..j + chosen().map(|g| g.1.len()).product::<usize>() * per_key;
        if let Some(out) = out.as_deref_mut() {
            out[steps.clone()].fill(out_slice as u32);
        }
        for (i, input) in ins.iter_mut().enumerate() {
            let Some(input) = input.as_deref_mut() else {
                continue;
            };
            for (k, g) in keys.iter_mut().zip(chosen()) {
                *k = g.1.start;
            }
            for block in input[steps.clone()].chunks_exact_mut(per_key) {
                let base: u64 = keys.iter().zip(outs).map(|(&k, v)| v.ins[k * n + i]).sum();
                for (s, &p) in block.iter_mut().zip(&patterns[i]) {
                    *s = (base + p) as u32;
                }
                // The next combination of the groups' keys, the last fastest.
                for (k, g) in keys.iter_mut().zip(chosen()).rev() {
                    *k += 1;
                    if *k < g.1.end {
                        break;
                    }
                    *k = g.1.start;
                }
            }
        }
        j = steps.end;
        // The next output step, the last axis fastest.
        let mut d = at.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            at[d] += 1;
            if at[d] < groups[d].len() {
                break;
            }
            at[d] = 0;
        }
    }
}

/// What the reduced variables `reds` add to input `i` (of `n`), per combination of
/// their keys in order (the last fastest; a variable without keys passes once).
fn pattern(reds: &[keys::Var], i: usize, n: usize) -> Vec<u64> {
    let mut p = vec![0u64];
    for v in reds.iter().filter(|v| v.len() > 0) {
        p = (p.iter())
            .flat_map(|&a| (0..v.len()).map(move |k| a + v.ins[k * n + i]))
            .collect();
    }
    p
}
