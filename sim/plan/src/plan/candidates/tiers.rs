//! The enumeration of one tier of a tensor's candidates: per level, what it may take
//! (replicated, or an axis and a part of its fan-out), every assignment of the levels to
//! the axes in turn, and for each the layouts it gives (the orders of an axis's levels and
//! its memory part, `Time` steps where a shard does not fit), built as parsed layouts and
//! bound with the arch crate.

use super::stream::time_steps;
use super::{Found, Space, Tensor, parts};
use mnsim_arch::layout::{AxisName, SubAxisExpr};
use mnsim_arch::{LayoutExpr, TensorLayout};

/// Per logical axis, the levels split over it: a level index and its part, root-most
/// first (one level assignment).
type Split = [Vec<(usize, u64)>];

/// Which layouts of a tier the tiers before it bound already (the same layouts, so
/// the tier skips them).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Done {
    /// The core: nothing before it.
    Nothing,
    /// Parts of fan-outs: the core had every assignment of whole fan-outs.
    WholeFanouts,
    /// Level orders: the tier before had the first order of every assignment.
    FirstOrders,
}

/// The candidates of one tier (see [`generate`]) not generated before.
pub(super) fn tier_of(t: &Tensor, space: Space, done: Done, acc: &mut Found) {
    let (levels, dims) = (&t.levels, t.dims);
    let rank = dims.len();
    if rank == 0 || dims.contains(&0) {
        return;
    }
    let choices = level_choices(levels, rank, space);
    let mut pick = vec![0usize; levels.len()];
    let mut groups: Vec<Vec<(usize, u64)>> = vec![Vec::new(); rank];
    let mut rest = dims.to_vec();
    while acc.out.len() < space.max {
        let ok = assign(&pick, &choices, dims, (&mut groups, &mut rest));
        let whole = (groups.iter().flatten()).all(|&(li, p)| p == levels[li].fanout);
        if ok && !(done == Done::WholeFanouts && whole) {
            let first = usize::from(done == Done::FirstOrders);
            emit(t, (&groups, &rest), space, (whole, first), acc);
        }
        if !next_pick(&mut pick, &choices) {
            break;
        }
    }
}

/// Per level, what it may take: `None` (replicated) or `(axis, part)` for every axis of
/// `rank` and part of its fan-out `space` allows.
pub(super) type Choices = Vec<Vec<Option<(usize, u64)>>>;

/// The [`Choices`] of `levels`.
pub(super) fn level_choices(
    levels: &[mnsim_arch::machine::AddrLevel],
    rank: usize,
    space: Space,
) -> Choices {
    (levels.iter())
        .map(|l| {
            let mut c = vec![None];
            for a in 0..rank {
                for p in parts(l.fanout, space.partial_fanout) {
                    c.push(Some((a, p)));
                }
            }
            c
        })
        .collect()
}

/// The assignment of levels to axes that `pick` (one choice per level) makes of a tensor
/// of `dims`: each axis's levels with their parts into `groups`, what is left of each
/// axis into `rest`; whether every part divides what is left of its axis.
pub(super) fn assign(
    pick: &[usize],
    choices: &Choices,
    dims: &[u64],
    (groups, rest): (&mut Split, &mut [u64]),
) -> bool {
    groups.iter_mut().for_each(Vec::clear);
    rest.copy_from_slice(dims);
    for (li, &k) in pick.iter().enumerate() {
        if let Some((a, p)) = choices[li][k] {
            if !rest[a].is_multiple_of(p) {
                return false;
            }
            rest[a] /= p;
            groups[a].push((li, p));
        }
    }
    true
}

/// The next `pick` (mixed radix over the choices, the last level fastest); `false` after
/// the last.
pub(super) fn next_pick(pick: &mut [usize], choices: &Choices) -> bool {
    for li in (0..pick.len()).rev() {
        pick[li] += 1;
        if pick[li] < choices[li].len() {
            return true;
        }
        pick[li] = 0;
    }
    false
}

/// Emits the layouts of one level assignment (each axis's levels with their parts, and
/// what is left of each axis): every order of each axis's levels from order `first`
/// on, with and without packing, with `Time` steps where a shard does not fit. `whole`:
/// the assignment splits whole fan-outs only (its first order is core).
fn emit(
    t: &Tensor,
    (groups, rest): (&Split, &[u64]),
    space: Space,
    (whole, first): (bool, usize),
    acc: &mut Found,
) {
    let rank = groups.len();
    let (slots, lm_words) = (t.slots, t.lm_words);
    // The orders of each axis's sub-axes: its levels and its memory part, which goes
    // last in the core order (block distribution) and anywhere otherwise (a memory
    // part before a level distributes cyclically over it).
    let counts: Vec<usize> = (groups.iter())
        .map(|g| match space.level_orders {
            true => t.orders[g.len() + 1].len(),
            false => 1,
        })
        .collect();
    let total: usize = counts.iter().product();
    let mut chosen = vec![0usize; rank];
    let (mut mem, mut time) = (vec![0u64; rank], vec![1u64; rank]);
    for code in first..total {
        let core = code == 0 && whole;
        let mut c = code;
        for (o, &n) in chosen.iter_mut().zip(&counts) {
            *o = c % n;
            c /= n;
        }
        for packed in [false, true] {
            if packed && (!space.packing || slots == 1 || !rest[rank - 1].is_multiple_of(slots)) {
                continue;
            }
            mem.copy_from_slice(rest);
            if packed {
                mem[rank - 1] /= slots;
            }
            // Words per PE; Time steps on the first axis that can take enough of them.
            let words = mem.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
            let Some(words) = words else { continue };
            time.fill(1);
            if words > lm_words {
                let Some(steps) = time_steps(&mem, words.div_ceil(lm_words.max(1))) else {
                    continue;
                };
                for a in 0..rank {
                    mem[a] /= steps[a];
                }
                time.copy_from_slice(&steps);
            }
            let word = packed.then_some(slots);
            if !build(t, (groups, &chosen), (&time, &mem), word, &mut acc.expr) {
                continue;
            }
            let shape = acc.expr.pad.as_ref().map_or(t.dims, |(l, _)| l.as_slice());
            let bound = TensorLayout::bind(&acc.expr, t.m, Some(shape), t.dtype, t.implicit_pad);
            if let Ok(layout) = bound {
                acc.keep(layout, core);
            }
        }
    }
}

/// Builds into `expr` the parsed form of a layout: per axis its `Time` steps (`time`),
/// then its levels (a level index and its part, from `groups`) and memory part (`mem`)
/// in the order `chosen` gives (an index into [`Tensor::orders`], the memory part the
/// last item), and the packed word last on the last axis when `slots` says how many
/// elements one holds; a `1` where an axis has nothing else. `false` where a memory
/// part of 1 would sit before a level: it has no place, so only the order with it last
/// counts.
fn build(
    t: &Tensor,
    (groups, chosen): (&Split, &[usize]),
    (time, mem): (&[u64], &[u64]),
    slots: Option<u64>,
    expr: &mut LayoutExpr,
) -> bool {
    let rank = groups.len();
    for (a, subs) in expr.groups.iter_mut().enumerate() {
        let mut k = 0;
        if time[a] > 1 {
            set_sub(subs, &mut k, time[a], &AxisName::Time);
        }
        let order = &t.orders[groups[a].len() + 1][chosen[a]];
        for (j, &i) in order.iter().enumerate() {
            match groups[a].get(i) {
                Some(&(li, p)) => set_sub(subs, &mut k, p, &t.names[li]),
                None if mem[a] > 1 => set_sub(subs, &mut k, mem[a], &AxisName::Mem),
                None if j + 1 < order.len() => return false,
                None => {}
            }
        }
        match slots.filter(|_| a == rank - 1) {
            Some(w) => set_sub(subs, &mut k, w, &AxisName::W),
            None if k == 0 => set_sub(subs, &mut k, 1, &AxisName::Mem),
            None => {}
        }
        subs.truncate(k);
    }
    true
}

/// Sets sub-axis `k` of `subs` to `size` and `name` (no stride), reusing what is there,
/// and moves `k` on.
fn set_sub(subs: &mut Vec<SubAxisExpr>, k: &mut usize, size: u64, name: &AxisName) {
    match subs.get_mut(*k) {
        Some(s) => {
            s.size = size;
            if s.name != *name {
                s.name = name.clone();
            }
        }
        None => subs.push(SubAxisExpr {
            size,
            name: name.clone(),
            stride: None,
            span: 0..0,
        }),
    }
    *k += 1;
}
