//! The first algorithm of the walk, kept as the reference the walk must equal, and the
//! first of the sends.

use super::super::{MAX_WALK, WalkPlan};
use mnsim_arch::TensorLayout;
pub(super) use mnsim_arch::arith::gcd;
use mnsim_arch::layout::Class;
use mnsim_kernels::shape::AxisSource;
use std::sync::Arc;

/// (input, axis) pairs that take their index from one variable.
type Pairs = Vec<(usize, usize)>;
/// Per output axis, one key per distinct (output contribution, inputs' contributions).
type OutKeys = Vec<(u64, Vec<u64>)>;

/// The `Time` contribution of index `x` of logical axis `g` of `l`.
pub(super) fn contribution(l: &TensorLayout, g: usize, x: u64) -> u64 {
    let Some(subs) = l.groups().get(g) else {
        return 0;
    };
    let mut radix = 1u64;
    let mut t = 0u64;
    for s in subs.iter().rev() {
        if s.class == Class::Time {
            t = t.saturating_add(((x / radix) % s.size.max(1)).saturating_mul(s.stride));
        }
        radix = radix.saturating_mul(s.size.max(1));
    }
    t
}

/// The largest `q` such that every contribution of axis `g` of `l` is constant on each
/// run `[k·q, (k+1)·q)` of indices: the gcd of the radices of the axis's `Time` sub-axes
/// (0 when it has none, so that it leaves a gcd unchanged).
pub(super) fn time_period(l: &TensorLayout, g: usize) -> u64 {
    let Some(subs) = l.groups().get(g) else {
        return 0;
    };
    let mut radix = 1u64;
    let mut q = 0u64;
    for s in subs.iter().rev() {
        if s.class == Class::Time {
            q = gcd(q, radix);
        }
        radix = radix.saturating_mul(s.size.max(1));
    }
    q
}

/// Distinct values of `key(x)` for `x` in `0..extent`, sorted, where `key` is constant
/// on each run of `period` indices (0: constant everywhere): one index per run is read.
pub(super) fn distinct<K: Ord>(extent: u64, period: u64, key: impl Fn(u64) -> K) -> Vec<K> {
    let step = if period == 0 { extent.max(1) } else { period };
    let mut v: Vec<K> = (0..extent).step_by(step as usize).map(key).collect();
    v.sort();
    v.dedup();
    v
}

/// The walk of an op writing `out` (a layout of shape `out_dims`, or `None` for an op
/// without an LM output) from `inputs` (each with its per-axis index sources), with
/// reduced variables of lengths `reduced`. `None` when the walk would exceed
/// `MAX_WALK` steps.
pub(super) fn walk(
    out: Option<&TensorLayout>,
    out_dims: &[u64],
    inputs: &[(&TensorLayout, &[AxisSource])],
    reduced: &[u64],
) -> Option<WalkPlan> {
    let stepped: Vec<bool> = inputs.iter().map(|(l, _)| l.time_span() > 1).collect();
    let out_stepped = out.is_some_and(|l| l.time_span() > 1);
    let Keys {
        out: out_keys,
        reduced: red_keys,
        base,
    } = keys(out, out_dims, inputs, reduced, &stepped);
    let groups = output_groups(&out_keys);
    let mut out_steps: Vec<u32> = Vec::new();
    let mut in_steps: Vec<Vec<u32>> = vec![Vec::new(); inputs.len()];
    let mut steps = 0usize;
    let done = |out: Vec<u32>, ins: Vec<Vec<u32>>, steps| WalkPlan {
        out_slices: out.iter().max().map_or(0, |&m| m + 1),
        out: out.into(),
        inputs: ins.into_iter().map(Arc::from).collect(),
        steps,
    };
    let mut slices = vec![0u64; inputs.len()];
    // Odometer over output steps (axis 0 outermost), then over the inner keys.
    let mut outer = vec![0usize; groups.len()];
    if groups.iter().any(|g| g.is_empty()) {
        return Some(done(out_steps, in_steps, steps));
    }
    loop {
        let out_slice: u64 = outer.iter().zip(&groups).map(|(&k, g)| g[k].0).sum();
        // Inner dimensions: per output axis its keys in this output step, then the
        // reduced variables' keys.
        let mut dims: Vec<usize> = outer
            .iter()
            .zip(&groups)
            .map(|(&k, g)| g[k].1.len())
            .collect();
        dims.extend(red_keys.iter().map(|(_, k)| k.len().max(1)));
        let inner: usize = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        if steps.checked_add(inner)? > MAX_WALK {
            return None;
        }
        let mut idx = vec![0usize; dims.len()];
        for _ in 0..inner {
            slices.copy_from_slice(&base);
            for (h, (p, keys)) in out_keys.iter().enumerate() {
                let key = &keys[groups[h][outer[h]].1.start + idx[h]];
                for (&(i, _), &c) in p.iter().zip(&key.1) {
                    slices[i] += c;
                }
            }
            for (r, (p, keys)) in red_keys.iter().enumerate() {
                if let Some(key) = keys.get(idx[groups.len() + r]) {
                    for (&(i, _), &c) in p.iter().zip(key) {
                        slices[i] += c;
                    }
                }
            }
            if out_stepped {
                out_steps.push(out_slice as u32);
            }
            for (i, &s) in slices.iter().enumerate() {
                if stepped[i] {
                    in_steps[i].push(s as u32);
                }
            }
            steps += 1;
            // Next inner combination (the last dimension fastest).
            for d in (0..dims.len()).rev() {
                idx[d] += 1;
                if idx[d] < dims[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        // Next output step.
        let mut d = groups.len();
        loop {
            if d == 0 {
                return Some(done(out_steps, in_steps, steps));
            }
            d -= 1;
            outer[d] += 1;
            if outer[d] < groups[d].len() {
                break;
            }
            outer[d] = 0;
        }
    }
}

/// Per output axis and per reduced variable, the (input, axis) pairs taking their index
/// from it and its sorted distinct contributions (an output axis's with the output's
/// own); and per input, the contribution of its broadcast axes.
struct Keys {
    out: Vec<(Pairs, OutKeys)>,
    reduced: Vec<(Pairs, Vec<Vec<u64>>)>,
    base: Vec<u64>,
}

/// The `Keys` of a walk (see `walk`); `stepped`: per input, whether it has steps.
fn keys(
    out: Option<&TensorLayout>,
    out_dims: &[u64],
    inputs: &[(&TensorLayout, &[AxisSource])],
    reduced: &[u64],
    stepped: &[bool],
) -> Keys {
    let out_stepped = out.is_some_and(|l| l.time_span() > 1);
    // Per output axis: the (input, axis) pairs taking their index from it.
    let pairs = |want: AxisSource| -> Pairs {
        let mut p = Vec::new();
        for (i, (_, map)) in inputs.iter().enumerate() {
            if !stepped[i] {
                continue;
            }
            for (a, s) in map.iter().enumerate() {
                if *s == want {
                    p.push((i, a));
                }
            }
        }
        p
    };
    // Per output axis: sorted distinct (output contribution, inputs' contributions).
    let mut out_keys: Vec<(Pairs, OutKeys)> = Vec::new();
    for (h, &extent) in out_dims.iter().enumerate() {
        let p = pairs(AxisSource::Out(h));
        let own = match out {
            Some(l) if out_stepped => time_period(l, h),
            _ => 0,
        };
        let period = p
            .iter()
            .fold(own, |q, &(i, a)| gcd(q, time_period(inputs[i].0, a)));
        let keys = distinct(extent, period, |x| {
            let o = match out {
                Some(l) if out_stepped => contribution(l, h, x),
                _ => 0,
            };
            let ins: Vec<u64> = p
                .iter()
                .map(|&(i, a)| contribution(inputs[i].0, a, x))
                .collect();
            (o, ins)
        });
        out_keys.push((p, keys));
    }
    let mut red_keys: Vec<(Pairs, Vec<Vec<u64>>)> = Vec::new();
    for (r, &extent) in reduced.iter().enumerate() {
        let p = pairs(AxisSource::Reduced(r));
        let period = p
            .iter()
            .fold(0, |q, &(i, a)| gcd(q, time_period(inputs[i].0, a)));
        let keys = distinct(extent, period, |x| {
            p.iter()
                .map(|&(i, a)| contribution(inputs[i].0, a, x))
                .collect::<Vec<u64>>()
        });
        red_keys.push((p, keys));
    }
    // Broadcast axes of stepped inputs: index 0.
    let base: Vec<u64> = inputs
        .iter()
        .enumerate()
        .map(|(i, (l, map))| {
            if !stepped[i] {
                return 0;
            }
            map.iter()
                .enumerate()
                .filter(|(_, s)| **s == AxisSource::Broadcast)
                .map(|(a, _)| contribution(l, a, 0))
                .sum()
        })
        .collect();
    Keys {
        out: out_keys,
        reduced: red_keys,
        base,
    }
}

/// Output steps: per output axis, its distinct output contributions in order, each
/// with the range of its keys.
fn output_groups(out_keys: &[(Pairs, OutKeys)]) -> Vec<Vec<(u64, std::ops::Range<usize>)>> {
    out_keys
        .iter()
        .map(|(_, keys)| {
            let mut g: Vec<(u64, std::ops::Range<usize>)> = Vec::new();
            for (k, key) in keys.iter().enumerate() {
                match g.last_mut() {
                    Some((o, r)) if *o == key.0 => r.end = k + 1,
                    _ => g.push((key.0, k..k + 1)),
                }
            }
            g
        })
        .collect()
}

/// The sends a walk makes of one input held in `buffers` slices: a step whose slice is
/// not held needs a send, which takes the buffer of the least recently used slice.
/// Returns, per step, the index of the send it reads; per send, its slice and the send
/// whose buffer it takes (`None` while a buffer is still empty).
pub(super) fn sends(need: &[u32], buffers: u32) -> (Vec<u32>, Vec<(u32, Option<u32>)>) {
    let b = buffers.max(1) as usize;
    // Held: (slice, send, last step used), at most `b`.
    let mut held: Vec<(u32, u32, usize)> = Vec::with_capacity(b);
    let mut per_step = Vec::with_capacity(need.len());
    let mut out: Vec<(u32, Option<u32>)> = Vec::new();
    for (j, &s) in need.iter().enumerate() {
        if let Some(h) = held.iter_mut().find(|h| h.0 == s) {
            h.2 = j;
            per_step.push(h.1);
            continue;
        }
        let m = out.len() as u32;
        let evicts = if held.len() < b {
            held.push((s, m, j));
            None
        } else {
            let lru = (0..held.len()).min_by_key(|&k| held[k].2).unwrap_or(0);
            let old = held[lru].1;
            held[lru] = (s, m, j);
            Some(old)
        };
        out.push((s, evicts));
        per_step.push(m);
    }
    (per_step, out)
}
