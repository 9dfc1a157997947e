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

use mnsim_arch::TensorLayout;
use mnsim_arch::layout::Class;
use mnsim_kernels::shape::AxisSource;
use std::sync::Arc;

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

/// Per logical axis, its `Time` sub-axes: (radix, size, stride).
type TimeAxes = Vec<Vec<(u64, u64, u64)>>;

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
}

/// (input, axis) pairs that take their index from one variable.
type Pairs = Vec<(usize, usize)>;
/// Per output axis, one key per distinct (output contribution, inputs' contributions).
type OutKeys = Vec<(u64, Vec<u64>)>;

/// The `Time` contribution of index `x` of logical axis `g` of `l`.
pub fn contribution(l: &TensorLayout, g: usize, x: u64) -> u64 {
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
fn time_period(l: &TensorLayout, g: usize) -> u64 {
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

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Distinct values of `key(x)` for `x` in `0..extent`, sorted, where `key` is constant
/// on each run of `period` indices (0: constant everywhere): one index per run is read.
fn distinct<K: Ord>(extent: u64, period: u64, key: impl Fn(u64) -> K) -> Vec<K> {
    let step = if period == 0 { extent.max(1) } else { period };
    let mut v: Vec<K> = (0..extent).step_by(step as usize).map(key).collect();
    v.sort();
    v.dedup();
    v
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

/// The [`Keys`] of a walk (see [`walk`]); `stepped`: per input, whether it has steps.
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

/// [`sends`] of the step vectors of memoised walks, by the vector (its allocation: the
/// walks' vectors are shared), the buffers and the producer's slices.
#[derive(Default)]
pub struct SendsMemo {
    map: std::collections::HashMap<(ByPtr, u32, u32), Sends, foldhash::fast::FixedState>,
}

/// What [`SendsMemo::sends`] gives: per step, the send it reads; per send, its slice and
/// the send whose buffer it takes; and how many sends carry a slice sent before.
#[derive(Clone, Debug)]
pub struct Sends {
    pub per_step: Arc<[u32]>,
    pub sends: Arc<[(u32, Option<u32>)]>,
    pub resent: u64,
}

/// A step vector keyed by its allocation. The key holds the vector, so no other takes
/// its address while the entry lives; equal vectors apart are two keys of one value.
struct ByPtr(Arc<[u32]>);

impl PartialEq for ByPtr {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.0, &o.0)
    }
}
impl Eq for ByPtr {}
impl std::hash::Hash for ByPtr {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (Arc::as_ptr(&self.0) as *const u32 as usize).hash(h);
    }
}

impl SendsMemo {
    /// [`sends`] of `need` in `buffers` slices, from a producer of `slices` slices.
    pub fn sends(&mut self, need: &Arc<[u32]>, buffers: u32, slices: u32) -> Sends {
        let key = (ByPtr(need.clone()), buffers, slices);
        if let Some(s) = self.map.get(&key) {
            return s.clone();
        }
        let (per_step, sends) = sends(need, buffers);
        let s = Sends {
            resent: crate::timeline::resends_of(&sends, slices),
            per_step: per_step.into(),
            sends: sends.into(),
        };
        self.map.insert(key, s.clone());
        s
    }
}

/// The sends a walk makes of one input held in `buffers` slices: a step whose slice is
/// not held needs a send, which takes the buffer of the least recently used slice.
/// Returns, per step, the index of the send it reads; per send, its slice and the send
/// whose buffer it takes (`None` while a buffer is still empty).
pub fn sends(need: &[u32], buffers: u32) -> (Vec<u32>, Vec<(u32, Option<u32>)>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use mnsim_arch::DType;
    use mnsim_kernels::shape::AxisSource::{Out, Reduced};

    fn bind(text: &str, dims: &[u64]) -> TensorLayout {
        let m = mnsim_arch::preset("mncore2").unwrap();
        TensorLayout::parse(text, &m, Some(dims), DType::F16).unwrap()
    }

    #[test]
    fn a_matmul_walks_output_steps_outer_and_the_contraction_inner() {
        // a[512,64] over K in 4 steps; b[64,64] over K in 2; c[512,64] over N in 2.
        let a = bind(
            "((8_L2B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L1B])",
            &[512, 64],
        );
        let b = bind("((2_Time, 32), (8_L1B, 2, 4_W); B@[L2B,MAB,PE])", &[64, 64]);
        let c = bind("((8_L2B, 16_MAB, 4_PE), (8_L1B, 2_Time, 4_W))", &[512, 64]);
        let p = walk(
            Some(&c),
            &[512, 64],
            &[(&a, &[Out(0), Reduced(0)]), (&b, &[Reduced(0), Out(1)])],
            &[64],
        )
        .unwrap();
        // Per output step, K's 4 distinct (a, b) pairs: a 0..3 with b 0,0,1,1.
        assert_eq!(p.steps, 8);
        assert_eq!(*p.out, [0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!(*p.inputs[0], [0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(*p.inputs[1], [0, 0, 1, 1, 0, 0, 1, 1]);
        // An elementwise op on a stream walks its steps once.
        let p = walk(Some(&c), &[512, 64], &[(&c, &[Out(0), Out(1)])], &[]).unwrap();
        assert_eq!((&*p.out, &*p.inputs[0]), (&[0, 1][..], &[0, 1][..]));
    }

    #[test]
    fn reading_one_index_per_period_finds_every_distinct_contribution() {
        // `Time` sub-axes outermost, innermost, in the middle, two of them, none.
        let cases = [
            ("((8_Time, 64), (64))", [512, 64]),
            ("((64, 8_Time), (64))", [512, 64]),
            ("((4, 4_Time, 32), (2_Time, 32))", [512, 64]),
            ("((2_Time, 4, 4_Time, 16), (64))", [512, 64]),
            (
                "((8_L2B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L1B])",
                [512, 64],
            ),
            ("((8_L2B, 64), (64))", [512, 64]),
        ];
        for (text, dims) in cases {
            let l = bind(text, &dims);
            for (g, &e) in dims.iter().enumerate() {
                let key = |x| contribution(&l, g, x);
                let all = distinct(e, 1, key);
                assert_eq!(distinct(e, time_period(&l, g), key), all, "{text} axis {g}");
            }
        }
        // Two layouts of one axis: the gcd of their periods.
        let (a, b) = (bind(cases[0].0, &[512, 64]), bind(cases[2].0, &[512, 64]));
        let key = |x| (contribution(&a, 0, x), contribution(&b, 0, x));
        let q = gcd(time_period(&a, 0), time_period(&b, 0));
        assert_eq!(distinct(512, q, key), distinct(512, 1, key));
    }

    #[test]
    fn layouts_of_one_walk_key_walk_alike() {
        // The first two differ in their levels only, not in their `Time` sub-axes.
        let texts = [
            "((8_L2B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L1B])",
            "((8_L1B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L2B])",
            "((8_L2B, 16_MAB, 4_PE), (2_Time, 8, 4_W); B@[L1B])",
            "((2_Time, 4_L2B, 16_MAB, 4_PE), (16, 4_W); B@[L1B])",
            "((8_L2B, 16_MAB, 4_PE), (16, 4_W); B@[L1B])",
        ];
        let b = bind("((2_Time, 32), (8_L1B, 2, 4_W); B@[L2B,MAB,PE])", &[64, 64]);
        let c = bind("((8_L2B, 16_MAB, 4_PE), (8_L1B, 2_Time, 4_W))", &[512, 64]);
        let map: [&[AxisSource]; 2] = [&[Out(0), Reduced(0)], &[Reduced(0), Out(1)]];
        let of = |a: &TensorLayout| {
            let ins = [(a, map[0]), (&b, map[1])];
            let key = WalkKey::of(Some(&c), &[512, 64], &ins, &[64]);
            (key, walk(Some(&c), &[512, 64], &ins, &[64]))
        };
        let walks: Vec<_> = texts.iter().map(|t| of(&bind(t, &[512, 64]))).collect();
        let mut shared = 0;
        for (i, (ki, wi)) in walks.iter().enumerate() {
            for (kj, wj) in &walks[..i] {
                if ki == kj {
                    shared += 1;
                    assert_eq!(wi, wj, "{}", texts[i]);
                }
            }
        }
        assert_eq!(shared, 1, "only the first two share a key");
    }

    #[test]
    fn memoised_sends_are_the_sends() {
        let mut memo = SendsMemo::default();
        let needs: Vec<Arc<[u32]>> = vec![
            Arc::from(vec![0, 1, 2, 3, 0, 1, 2, 3]),
            Arc::from(vec![0, 0, 1, 1, 2, 2, 0, 1]),
        ];
        for need in &needs {
            for b in 1..4 {
                let (steps, s) = sends(need, b);
                let m = memo.sends(need, b, 4);
                assert_eq!((&*m.per_step, &*m.sends), (&steps[..], &s[..]));
                assert_eq!(m.resent, crate::timeline::resends_of(&s, 4));
                // Asked again, the same vectors.
                assert!(Arc::ptr_eq(&memo.sends(need, b, 4).sends, &m.sends));
            }
        }
    }

    #[test]
    fn a_slice_needed_again_after_it_left_is_sent_again() {
        // Two output steps each reading slices 0..3 of a 4-step operand.
        let need = [0, 1, 2, 3, 0, 1, 2, 3];
        let (steps, s) = sends(&need, 2);
        assert_eq!(s.len(), 8);
        assert_eq!(steps, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(s[2], (2, Some(0)));
        // Held whole, nothing is sent twice.
        let (_, s) = sends(&need, 4);
        assert_eq!(s.len(), 4);
        // A slice read on consecutive steps is sent once.
        let (steps, s) = sends(&[0, 0, 1, 1], 1);
        assert_eq!((steps, s.len()), (vec![0, 0, 1, 1], 2));
    }
}
