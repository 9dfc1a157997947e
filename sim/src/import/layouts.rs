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

use super::lower::{Decl, Step};
use mnsim_arch::Machine;
use mnsim_kernels::{AxisSource, Kernel};
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

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
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
    let index: BTreeMap<&str, usize> = decls
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let mut offset = Vec::with_capacity(decls.len());
    let mut n = 0;
    for d in decls {
        offset.push(n);
        n += d.dims.len();
    }
    let node = |t: usize, a: usize| offset[t] + a;
    let mut uf = Uf((0..n).collect());
    let mut nosplit = vec![false; n];
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
        match &s.kernel {
            Kernel::Reshape { .. } => {
                let (a, b) = (&decls[ins[0]].dims, &decls[o].dims);
                for (al, ah, bl, bh) in mnsim_kernels::shape::reshape_groups(a, b) {
                    if ah > al && bh > bl {
                        uf.union(node(ins[0], al), node(o, bl));
                    }
                    for x in al + 1..ah {
                        nosplit[node(ins[0], x)] = true;
                    }
                    for x in bl + 1..bh {
                        nosplit[node(o, x)] = true;
                    }
                }
            }
            Kernel::Concat { axis, .. } => {
                for &t in &ins {
                    for x in 0..decls[t].dims.len() {
                        if x == *axis {
                            nosplit[node(t, x)] = true;
                        } else {
                            uf.union(node(t, x), node(o, x));
                        }
                    }
                }
                nosplit[node(o, *axis)] = true;
            }
            // A slice: an axis it keeps whole lines up with the output's, like an
            // elementwise one; an axis it narrows or strides stays unsplit on both sides.
            Kernel::Slice {
                start,
                limit,
                stride,
            } => {
                let d = &decls[ins[0]].dims;
                if [start.len(), limit.len(), stride.len(), decls[o].dims.len()] != [d.len(); 4] {
                    continue;
                }
                for x in 0..d.len() {
                    if (start[x], limit[x], stride[x]) == (0, d[x], 1) {
                        uf.union(node(ins[0], x), node(o, x));
                    } else {
                        nosplit[node(ins[0], x)] = true;
                        nosplit[node(o, x)] = true;
                    }
                }
            }
            // Window kernels: an axis read through a window (or a channel group), a
            // contracted axis and an output axis reading a halo stay whole.
            k @ (Kernel::Conv(_) | Kernel::Pool(_) | Kernel::Interp(_)) => {
                let shapes: Vec<&[u64]> = ins.iter().map(|&t| decls[t].dims.as_slice()).collect();
                let Ok(Some(w)) = mnsim_kernels::window_map(k, &shapes) else {
                    continue;
                };
                for (j, map) in w.maps.iter().enumerate() {
                    for (p, src) in map.axes.iter().enumerate() {
                        match src {
                            AxisSource::Out(h) => uf.union(node(ins[j], p), node(o, *h)),
                            AxisSource::Reduced(_) | AxisSource::Broadcast => {
                                nosplit[node(ins[j], p)] = true;
                            }
                        }
                    }
                }
                for (h, _) in w.halo {
                    nosplit[node(o, h)] = true;
                }
            }
            k => {
                let shapes: Vec<&[u64]> = ins.iter().map(|&t| decls[t].dims.as_slice()).collect();
                let Ok(maps) = mnsim_kernels::index_map(k, &shapes, &decls[o].dims) else {
                    continue;
                };
                // The inputs' axes of one reduced variable (a contraction's K on both
                // sides) split alike, where they may split at all.
                let splits = split_sums && k.is_additive();
                let mut reduced: BTreeMap<usize, usize> = BTreeMap::new();
                for (j, map) in maps.iter().enumerate() {
                    for (p, src) in map.axes.iter().enumerate() {
                        match src {
                            AxisSource::Out(h) => uf.union(node(ins[j], p), node(o, *h)),
                            AxisSource::Reduced(r) => {
                                nosplit[node(ins[j], p)] |= !splits;
                                if splits {
                                    let first = *reduced.entry(*r).or_insert(node(ins[j], p));
                                    uf.union(first, node(ins[j], p));
                                }
                            }
                            AxisSource::Broadcast => {}
                        }
                    }
                }
            }
        }
    }
    // Classes: length (gcd of members), weight (elements of the tensors in it), and
    // whether they may split.
    let mut class_len: BTreeMap<usize, u64> = BTreeMap::new();
    let mut weight: BTreeMap<usize, u128> = BTreeMap::new();
    let mut blocked: BTreeMap<usize, bool> = BTreeMap::new();
    for (t, d) in decls.iter().enumerate() {
        let elems: u128 = d.dims.iter().map(|&x| x as u128).product();
        let mut seen = Vec::new();
        for (a, &len) in d.dims.iter().enumerate() {
            let r = uf.find(node(t, a));
            let g = class_len.entry(r).or_insert(0);
            *g = gcd(*g, len);
            *weight.entry(r).or_insert(0) += elems;
            let b = blocked.entry(r).or_insert(false);
            *b |= nosplit[node(t, a)] || seen.contains(&r);
            seen.push(r);
        }
    }
    // Levels to classes, root first.
    let levels = m.addressable_levels();
    let mut left: BTreeMap<usize, u64> = class_len.clone();
    let mut assigned: Vec<Option<(usize, u64)>> = Vec::new();
    for l in &levels {
        let best = left
            .iter()
            .filter(|(r, _)| !blocked[r])
            .map(|(&r, &len)| (gcd(len, l.fanout), weight[&r], std::cmp::Reverse(r)))
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
    let lm_words = m.leaf_memory_bytes() / m.word_bytes.max(1);
    let classes: Vec<Vec<usize>> = decls
        .iter()
        .enumerate()
        .map(|(t, d)| (0..d.dims.len()).map(|a| uf.find(node(t, a))).collect())
        .collect();
    // A quarter of LM per tensor, less while the tensors live together need more than
    // LM holds (each holds one `Time` slice at the least).
    let mut budget = (lm_words / 4).max(1);
    let mut out = BTreeMap::new();
    for _ in 0..24 {
        out.clear();
        let mut words = Vec::with_capacity(decls.len());
        for (d, c) in decls.iter().zip(&classes) {
            let (text, fp) = layout_for(m, d, c, &assigned, &levels, budget);
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
    (0..steps.len())
        .map(|i| {
            span.iter()
                .filter(|(_, (a, b))| *a <= i && i <= *b)
                .fold(0u64, |acc, (t, _)| acc.saturating_add(words[*t]))
        })
        .max()
        .unwrap_or(0)
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
