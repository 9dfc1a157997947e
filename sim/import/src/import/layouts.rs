//! A default layout for every tensor of an imported graph: legal for every kernel of
//! the graph by construction, fitting LM, and spreading the work over the machine.
//!
//! Axes that must line up (an elementwise output axis and the input axis it reads, a
//! matmul's batch and row axes, the axes a transpose moves, the major axes of a
//! reshape group, the inputs' axes of one contracted variable) form **classes**
//! (union-find). A class is never split when one of its axes is reduced by a kernel
//! (a contraction, a reduced or normalised axis; with `split_sums`, only a normalised
//! axis or a reduction other than a sum), is a
//! reshape axis that is not its group's major axis, or is a concat axis, or when one
//! tensor has two axes in it. Each addressable level, root first, goes to the class
//! that can use most of its fan-out (its largest common divisor with what is left of
//! the class's length; ties to the class in the most data); every axis of that class
//! splits over the level, major-most, and tensors without it are replicated there.
//! What is left of an axis stays in memory, the innermost axis that divides packed
//! into words (`W`); a
//! tensor whose per-PE share exceeds a quarter of LM takes `Time` steps on its
//! most major memory axes; while the tensors alive at one step (from the step that
//! first names them to the one that last does, graph outputs to the end) need more
//! than LM together, that share shrinks.

use super::lower::{Action, Decl, Step};
use mnsim_arch::Machine;
use mnsim_arch::arith::gcd;
use mnsim_kernels::conv::WindowMap;
use mnsim_kernels::{AxisSource, ByPositions, Kernel};
use std::collections::BTreeMap;

struct Uf(Vec<usize>);
impl Uf {
    fn find(&mut self, x: usize) -> usize {
        let mut r = x;
        while self.0[r] != r {
            r = self.0[r];
        }
        let mut y = x;
        while self.0[y] != r {
            let n = self.0[y];
            self.0[y] = r;
            y = n;
        }
        r
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra.max(rb)] = ra.min(rb);
        }
    }
}

/// The divisors of `n` in increasing order, by trial division up to √n (`n` is a
/// dimension DRAM holds, so at most a few hundred thousand divisions).
fn divisors(n: u64) -> Vec<u64> {
    let (mut low, mut high) = (Vec::new(), Vec::new());
    let mut d = 1u64;
    while d.checked_mul(d).is_some_and(|q| q <= n) {
        if n.is_multiple_of(d) {
            low.push(d);
            if d != n / d {
                high.push(n / d);
            }
        }
        d += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

/// The default layout text of every tensor the steps name.
///
/// With `split_sums`, the reduced axes of sums and contractions (additive kernels) may
/// split too: the kernel's output is then partial over the level, and the tree Reduce
/// that completes it (`auto_reduce`, which imports set) leaves it replicated there.
/// Without it they stay whole, and no kernel of the defaults leaves a partial output.
pub fn default_layouts(
    m: &Machine,
    decls: &[Decl],
    steps: &[Step],
    outputs: &[String],
    split_sums: bool,
) -> BTreeMap<String, String> {
    let mut axes = link_axes(decls, steps, split_sums);
    let classes = Classes::of(decls, &mut axes);
    let levels = m.addressable_levels();
    let assigned = assign_levels(&levels, &classes);
    let tensor_classes: Vec<Vec<usize>> = decls
        .iter()
        .enumerate()
        .map(|(t, d)| (0..d.dims.len()).map(|a| axes.class(t, a)).collect())
        .collect();
    fit_layouts(
        m,
        decls,
        steps,
        outputs,
        &tensor_classes,
        &assigned,
        &levels,
    )
}

/// The axes of all tensors as union-find nodes (axis `a` of tensor `t` is node
/// `offset[t] + a`), with the classes joined so far and the axes that must stay whole.
struct Axes {
    offset: Vec<usize>,
    uf: Uf,
    nosplit: Vec<bool>,
}

impl Axes {
    /// Every axis of `decls` in a class of its own, free to split.
    fn new(decls: &[Decl]) -> Axes {
        let mut offset = Vec::with_capacity(decls.len());
        let mut n = 0;
        for d in decls {
            offset.push(n);
            n += d.dims.len();
        }
        Axes {
            offset,
            uf: Uf((0..n).collect()),
            nosplit: vec![false; n],
        }
    }

    /// The node of axis `a` of tensor `t`.
    fn node(&self, t: usize, a: usize) -> usize {
        self.offset[t] + a
    }

    /// Puts axis `a` of tensor `t` and axis `b` of tensor `u` in one class.
    fn join(&mut self, t: usize, a: usize, u: usize, b: usize) {
        let (x, y) = (self.node(t, a), self.node(u, b));
        self.uf.union(x, y);
    }

    /// Keeps axis `a` of tensor `t` whole.
    fn keep_whole(&mut self, t: usize, a: usize) {
        let x = self.node(t, a);
        self.nosplit[x] = true;
    }

    /// The class (its root node) of axis `a` of tensor `t`.
    fn class(&mut self, t: usize, a: usize) -> usize {
        let x = self.node(t, a);
        self.uf.find(x)
    }
}

/// The axes of `decls` joined into classes and marked whole as every step's kernel
/// requires (steps naming a tensor that is not declared are skipped).
fn link_axes(decls: &[Decl], steps: &[Step], split_sums: bool) -> Axes {
    let index: BTreeMap<&str, usize> = decls
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let mut axes = Axes::new(decls);
    for s in steps {
        let ins: Vec<usize> = s
            .inputs
            .iter()
            .filter_map(|x| index.get(x.as_str()).copied())
            .collect();
        let Some(&o) = index.get(s.out.as_str()) else {
            continue;
        };
        if ins.len() != s.inputs.len() {
            continue;
        }
        let k = match &s.action {
            Action::Kernel(k) => k,
            // The indices' axes lead the result's; the table's rows are read whole.
            Action::Gather { .. } => {
                for x in 0..decls[ins[0]].dims.len() {
                    axes.join(ins[0], x, o, x);
                }
                continue;
            }
        };
        // A kernel that keeps elements by position, one with a window, or any other
        // through its index map (the kernel's family says which).
        let shapes: Vec<&[u64]> = ins.iter().map(|&t| decls[t].dims.as_slice()).collect();
        let window = k.with_family(|f| f.window_map(&shapes)).ok().flatten();
        k.with_family(|f| match (f.by_positions(), window) {
            (Some(ByPositions::Reshape), _) => link_reshape(&mut axes, decls, ins[0], o),
            (Some(ByPositions::Concat { axis }), _) => link_concat(&mut axes, decls, &ins, o, axis),
            (
                Some(ByPositions::Slice {
                    start,
                    limit,
                    stride,
                }),
                _,
            ) => link_slice(&mut axes, decls, ins[0], o, start, limit, stride),
            (None, Some(w)) => link_window(&mut axes, &ins, o, &w),
            (None, None) => link_indexed(&mut axes, decls, &ins, o, k, split_sums),
        });
    }
    axes
}

/// A reshape: the major axes of each group line up; its other axes stay whole.
fn link_reshape(axes: &mut Axes, decls: &[Decl], i: usize, o: usize) {
    let (a, b) = (&decls[i].dims, &decls[o].dims);
    for (al, ah, bl, bh) in mnsim_kernels::shape::reshape_groups(a, b) {
        if ah > al && bh > bl {
            axes.join(i, al, o, bl);
        }
        for x in al + 1..ah {
            axes.keep_whole(i, x);
        }
        for x in bl + 1..bh {
            axes.keep_whole(o, x);
        }
    }
}

/// A concat: the other axes line up with the output's; the concat axis stays whole.
fn link_concat(axes: &mut Axes, decls: &[Decl], ins: &[usize], o: usize, axis: usize) {
    for &t in ins {
        for x in 0..decls[t].dims.len() {
            if x == axis {
                axes.keep_whole(t, x);
            } else {
                axes.join(t, x, o, x);
            }
        }
    }
    axes.keep_whole(o, axis);
}

/// A slice: an axis it keeps whole lines up with the output's, like an elementwise
/// one; an axis it narrows or strides stays unsplit on both sides.
fn link_slice(
    axes: &mut Axes,
    decls: &[Decl],
    i: usize,
    o: usize,
    start: &[u64],
    limit: &[u64],
    stride: &[u64],
) {
    let d = &decls[i].dims;
    if [start.len(), limit.len(), stride.len(), decls[o].dims.len()] != [d.len(); 4] {
        return;
    }
    for x in 0..d.len() {
        if (start[x], limit[x], stride[x]) == (0, d[x], 1) {
            axes.join(i, x, o, x);
        } else {
            axes.keep_whole(i, x);
            axes.keep_whole(o, x);
        }
    }
}

/// Window kernels: an axis read through a window (or a channel group), a contracted
/// axis and an output axis reading a halo stay whole.
fn link_window(axes: &mut Axes, ins: &[usize], o: usize, w: &WindowMap) {
    for (j, map) in w.maps.iter().enumerate() {
        for (p, src) in map.axes.iter().enumerate() {
            match src {
                AxisSource::Out(h) => axes.join(ins[j], p, o, *h),
                AxisSource::Reduced(_) | AxisSource::Broadcast => axes.keep_whole(ins[j], p),
            }
        }
    }
    for &(h, _) in &w.halo {
        axes.keep_whole(o, h);
    }
}

/// Any other kernel, through its index map: an input axis lines up with the output
/// axis it reads; a reduced axis stays whole unless `split_sums` lets an additive
/// kernel split it.
fn link_indexed(
    axes: &mut Axes,
    decls: &[Decl],
    ins: &[usize],
    o: usize,
    k: &Kernel,
    split_sums: bool,
) {
    let shapes: Vec<&[u64]> = ins.iter().map(|&t| decls[t].dims.as_slice()).collect();
    let Ok(maps) = mnsim_kernels::index_map(k, &shapes, &decls[o].dims) else {
        return;
    };
    // The inputs' axes of one reduced variable (a contraction's K on both
    // sides) split alike, where they may split at all.
    let splits = split_sums && k.is_additive();
    let mut reduced: BTreeMap<usize, usize> = BTreeMap::new();
    for (j, map) in maps.iter().enumerate() {
        for (p, src) in map.axes.iter().enumerate() {
            match src {
                AxisSource::Out(h) => axes.join(ins[j], p, o, *h),
                AxisSource::Reduced(r) => {
                    let x = axes.node(ins[j], p);
                    axes.nosplit[x] |= !splits;
                    if splits {
                        let first = *reduced.entry(*r).or_insert(x);
                        axes.uf.union(first, x);
                    }
                }
                AxisSource::Broadcast => {}
            }
        }
    }
}

/// The axis classes, by root node.
struct Classes {
    /// The length of each class: the gcd of its axes' lengths.
    length: BTreeMap<usize, u64>,
    /// The weight of each class: the elements of the tensors in it (once per axis).
    weight: BTreeMap<usize, u128>,
    /// Whether each class must stay whole: one of its axes must, or one tensor has two
    /// axes in it.
    blocked: BTreeMap<usize, bool>,
}

impl Classes {
    /// The length, weight and whether it may split of every class of `axes`.
    fn of(decls: &[Decl], axes: &mut Axes) -> Classes {
        let mut class_len: BTreeMap<usize, u64> = BTreeMap::new();
        let mut weight: BTreeMap<usize, u128> = BTreeMap::new();
        let mut blocked: BTreeMap<usize, bool> = BTreeMap::new();
        for (t, d) in decls.iter().enumerate() {
            let elems: u128 = d.dims.iter().map(|&x| x as u128).product();
            let mut seen = Vec::new();
            for (a, &len) in d.dims.iter().enumerate() {
                let r = axes.class(t, a);
                let g = class_len.entry(r).or_insert(0);
                *g = gcd(*g, len);
                *weight.entry(r).or_insert(0) += elems;
                let b = blocked.entry(r).or_insert(false);
                *b |= axes.nosplit[axes.node(t, a)] || seen.contains(&r);
                seen.push(r);
            }
        }
        Classes {
            length: class_len,
            weight,
            blocked,
        }
    }
}

/// Levels to classes, root first: each level goes to the class that may split and can
/// use most of its fan-out (ties to the heavier class, then the lower root), with the
/// factor it takes; `None` when no class can use the level.
fn assign_levels(
    levels: &[mnsim_arch::machine::AddrLevel],
    classes: &Classes,
) -> Vec<Option<(usize, u64)>> {
    let mut left: BTreeMap<usize, u64> = classes.length.clone();
    let mut assigned: Vec<Option<(usize, u64)>> = Vec::new();
    for l in levels {
        let best = left
            .iter()
            .filter(|(r, _)| !classes.blocked[r])
            .map(|(&r, &len)| (gcd(len, l.fanout), classes.weight[&r], std::cmp::Reverse(r)))
            .filter(|c| c.0 > 1)
            .max();
        match best {
            Some((f, _, std::cmp::Reverse(r))) => {
                *left.get_mut(&r).expect("class") /= f;
                assigned.push(Some((r, f)));
            }
            None => assigned.push(None),
        }
    }
    assigned
}

/// The layout text of every tensor, given the class of each of its axes: a quarter of
/// LM per tensor, less while the tensors live together need more than LM holds (each
/// holds one `Time` slice at the least).
fn fit_layouts(
    m: &Machine,
    decls: &[Decl],
    steps: &[Step],
    outputs: &[String],
    classes: &[Vec<usize>],
    assigned: &[Option<(usize, u64)>],
    levels: &[mnsim_arch::machine::AddrLevel],
) -> BTreeMap<String, String> {
    let lm_words = m.leaf_memory_bytes() / m.word_bytes.max(1);
    let mut budget = (lm_words / 4).max(1);
    let mut out = BTreeMap::new();
    for _ in 0..24 {
        out.clear();
        let mut words = Vec::with_capacity(decls.len());
        for (d, c) in decls.iter().zip(classes) {
            let (text, fp) = layout_for(m, d, c, assigned, levels, budget);
            out.insert(d.name.clone(), text);
            words.push(fp);
        }
        let peak = peak_live(decls, steps, outputs, &words);
        if peak <= lm_words || budget <= 1 {
            break;
        }
        let scaled = u128::from(budget) * u128::from(lm_words) * 9 / (10 * u128::from(peak));
        budget = u64::try_from(scaled).unwrap_or(budget).clamp(1, budget - 1);
    }
    out
}

/// The most LM words per PE the tensors live at one step need together: a tensor lives
/// from the step that first names it to the step that last does (graph outputs, which
/// are stored at the end, to the end), holding `words[t]` (one `Time` slice).
fn peak_live(decls: &[Decl], steps: &[Step], outputs: &[String], words: &[u64]) -> u64 {
    let index: BTreeMap<&str, usize> = decls
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let mut span: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for (i, s) in steps.iter().enumerate() {
        for n in s.inputs.iter().chain([&s.out]) {
            if let Some(&t) = index.get(n.as_str()) {
                let e = span.entry(t).or_insert((i, i));
                e.1 = i;
            }
        }
    }
    let end = steps.len().saturating_sub(1);
    for o in outputs {
        if let Some(e) = index.get(o.as_str()).and_then(|t| span.get_mut(t)) {
            e.1 = end;
        }
    }
    // Words live at each step: each tensor's words added where its span starts and
    // taken away after it ends, summed along the steps.
    let mut delta = vec![0i128; steps.len() + 1];
    for (t, (a, b)) in &span {
        delta[*a] += i128::from(words[*t]);
        delta[*b + 1] -= i128::from(words[*t]);
    }
    let mut live = 0i128;
    let mut peak = 0i128;
    for d in &delta[..steps.len()] {
        live += d;
        peak = peak.max(live);
    }
    u64::try_from(peak).unwrap_or(u64::MAX)
}

fn layout_for(
    m: &Machine,
    d: &Decl,
    classes: &[usize],
    assigned: &[Option<(usize, u64)>],
    levels: &[mnsim_arch::machine::AddrLevel],
    budget: u64,
) -> (String, u64) {
    let rank = d.dims.len();
    let slots = (m.word_bytes / d.dtype.bytes()).max(1);
    // Level sub-axes and the memory remainder of every axis.
    let mut subs: Vec<Vec<String>> = vec![Vec::new(); rank];
    let mut rest = d.dims.clone();
    for (li, a) in assigned.iter().enumerate() {
        let Some((class, f)) = a else { continue };
        if let Some(ax) = classes.iter().position(|c| c == class)
            && rest[ax].is_multiple_of(*f)
            && *f > 1
        {
            subs[ax].push(format!("{f}_{}", levels[li].name));
            rest[ax] /= f;
        }
    }
    // Words hold `slots` elements: pack the innermost axis whose memory part divides.
    let w_axis = (0..rank)
        .rev()
        .find(|&a| slots > 1 && rest[a].is_multiple_of(slots) && rest[a] > 1);
    let build = |time: &[u64]| -> String {
        let groups: Vec<String> = (0..rank)
            .map(|a| {
                let mut g = subs[a].clone();
                let mut r = rest[a];
                if time[a] > 1 {
                    g.push(format!("{}_Time", time[a]));
                    r /= time[a];
                }
                let packed = Some(a) == w_axis && r.is_multiple_of(slots);
                if packed {
                    if r / slots > 1 {
                        g.push((r / slots).to_string());
                    }
                    g.push(format!("{slots}_W"));
                } else if r > 1 || g.is_empty() {
                    g.push(r.to_string());
                }
                format!("({})", g.join(", "))
            })
            .collect();
        format!("({})", groups.join(", "))
    };
    // Words one PE holds per step: the memory parts, the packed axis divided by slots.
    let footprint = |time: &[u64]| -> u64 {
        (0..rank)
            .map(|a| {
                let r = rest[a] / time[a].max(1);
                if Some(a) == w_axis { r / slots } else { r }
            })
            .fold(1u64, |x, y| x.saturating_mul(y.max(1)))
    };
    let mut time = vec![1u64; rank];
    // Time steps, most major memory axis first, until one step fits the budget.
    for a in 0..rank {
        let fp = footprint(&time);
        if fp <= budget {
            break;
        }
        let r = rest[a];
        let cap = if Some(a) == w_axis { r / slots } else { r };
        let want = fp.div_ceil(budget);
        let ds = divisors(cap);
        let t = ds
            .iter()
            .copied()
            .find(|&t| t >= 2 && t >= want)
            .or_else(|| ds.iter().copied().rfind(|&t| t >= 2))
            .unwrap_or(1);
        time[a] = t;
    }
    (build(&time), footprint(&time))
}

#[cfg(test)]
mod tests {
    #[test]
    fn divisors_in_order() {
        assert_eq!(super::divisors(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(super::divisors(1), vec![1]);
        assert_eq!(super::divisors(0), Vec::<u64>::new());
        assert_eq!(super::divisors(49), vec![1, 7, 49]);
        assert_eq!(super::divisors(1 << 33).len(), 34);
    }
}
