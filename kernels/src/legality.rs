//! Legality (docs/kernels.md): can every output element be computed from data already on the
//! unit that holds it?
//!
//! The rule, per addressable level X at or above the unit level: a level position is a
//! sum over the logical axes of a per-axis contribution `f(i) = Σ ((i / radix) % size)
//! · stride` over the axis's sub-axes of level X. Every variable of the kernel (an
//! output axis, or a reduced variable) gets one contribution per tensor (0 when the
//! tensor does not use it). An input is **available** at X if it is replicated at X,
//! or if its contribution equals the output's for every variable (0 for reduced
//! variables). The output is **partial** over X (Add and Mean reductions only) if it is
//! replicated at X and every input not replicated at X is split by the reduced
//! variables with one common function and by nothing else. See `docs/kernels.md`.

use crate::kernel::{ErrorKind, Kernel, KernelError, fmt_dims};
use crate::shape::{AxisSource, InputMap, index_map, output_shape, reduced_extents};
use mnsim_arch::Machine;
use mnsim_arch::layout::{Class, SubAxis, TensorLayout};
use std::fmt;

/// The unit whose locality a kernel needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Vector kernels: every input element an output element needs must be on the PE
    /// that holds the output element.
    Pe,
    /// MatMul and BatchMatMul on the matrix unit (one per node of
    /// `compute.matrix.level`: a MAB on MN-Core): data must line up at the unit's level
    /// and above; among the PEs of one unit anything goes.
    Mab,
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Pe => "PE",
            Unit::Mab => "MAB",
        })
    }
}

/// A legal kernel: where its output is partial, and the unit it runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Legality {
    /// Addressable level indices (root-most first) over which the output holds partial
    /// sums: a Reduce (add) over each of them completes it.
    pub partial: Vec<usize>,
    /// The unit of locality.
    pub unit: Unit,
    /// The addressable level of the unit: requirements apply at this level and above
    /// (the leaf level for [`Unit::Pe`]).
    pub unit_level: usize,
}

/// The addressable level that holds the matrix unit, and whether `k` runs on it in its
/// compute dtype (see [`crate::precision`]).
fn unit_of(k: &Kernel, inputs: &[&TensorLayout], out: &TensorLayout, m: &Machine) -> (Unit, usize) {
    let addr = m.addressable_levels();
    let leaf = addr.len().saturating_sub(1);
    let ins: Vec<mnsim_arch::DType> = inputs.iter().map(|l| l.dtype()).collect();
    let dtype = crate::precision::compute_dtype(k, &ins, out.dtype());
    if k.is_matmul() && crate::precision::matrix_rate(m, dtype).is_some() {
        let lvl = m
            .level_index(&m.compute.matrix.level)
            .and_then(|li| addr.iter().position(|a| a.folded.contains(&li)))
            .unwrap_or(leaf);
        (Unit::Mab, lvl)
    } else {
        (Unit::Pe, leaf)
    }
}

/// One term of a per-axis position function: `((i / radix) % size) · stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Term {
    radix: u64,
    size: u64,
    stride: u64,
}

/// The contribution of one logical axis to the position at one level, restricted to
/// indices `0..extent`, in a canonical form (terms that never move dropped, sizes
/// that never wrap cut to what is reached, adjacent digits merged).
#[derive(Clone, Debug, PartialEq, Eq)]
struct AxisFn {
    terms: Vec<Term>,
    /// A period of the function (the product span of its widest term).
    period: u64,
}

impl AxisFn {
    fn zero() -> Self {
        AxisFn {
            terms: Vec::new(),
            period: 1,
        }
    }

    fn of(layout: &TensorLayout, axis: usize, level: usize, extent: u64) -> Self {
        Self::from_group(&layout.groups()[axis], level, extent)
    }

    fn from_group(group: &[SubAxis], level: usize, extent: u64) -> Self {
        let mut raw = Vec::new();
        let mut radix = 1u64;
        for s in group.iter().rev() {
            if s.class == Class::Level(level) && s.size > 1 && radix < extent {
                raw.push(Term {
                    radix,
                    size: s.size,
                    stride: s.stride,
                });
            }
            radix = radix.saturating_mul(s.size);
        }
        raw.reverse(); // major to minor
        let period = raw
            .iter()
            .map(|t| t.radix.saturating_mul(t.size))
            .max()
            .unwrap_or(1);
        let mut terms: Vec<Term> = Vec::with_capacity(raw.len());
        for mut t in raw {
            let reach = (extent - 1) / t.radix; // largest i / radix
            if reach < t.size {
                t.size = reach + 1;
            }
            // Merge with the previous (more major) term when it continues this digit.
            if let Some(prev) = terms.last_mut()
                && prev.radix == t.radix.saturating_mul(t.size)
                && prev.stride == t.stride.saturating_mul(t.size)
            {
                *prev = Term {
                    radix: t.radix,
                    size: prev.size.saturating_mul(t.size),
                    stride: t.stride,
                };
                continue;
            }
            terms.push(t);
        }
        AxisFn { terms, period }
    }

    fn at(&self, i: u64) -> u64 {
        self.terms
            .iter()
            .map(|t| ((i / t.radix) % t.size) * t.stride)
            .sum()
    }

    fn is_zero(&self) -> bool {
        self.terms.is_empty()
    }

    /// The function is constant on blocks of this many indices.
    fn block(&self) -> u64 {
        self.terms.iter().map(|t| t.radix).min().unwrap_or(u64::MAX)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Whether `f` and `g` agree on `0..n`.
fn same(f: &AxisFn, g: &AxisFn, n: u64) -> bool {
    if f.terms == g.terms {
        return true;
    }
    // Both are step functions, constant on blocks of f.block() and g.block(), and
    // periodic: compare at every block start up to the common period.
    let lcm = (f.period / gcd(f.period, g.period)).checked_mul(g.period);
    let limit = lcm.map_or(n, |l| l.min(n));
    let (bf, bg) = (f.block(), g.block());
    let mut i = 0u64;
    while i < limit {
        if f.at(i) != g.at(i) {
            return false;
        }
        let nf = (i / bf + 1).saturating_mul(bf);
        let ng = (i / bg + 1).saturating_mul(bg);
        i = nf.min(ng);
    }
    true
}

/// `(4_PE:1, 3:8)`: a group in canonical syntax.
pub(crate) fn group_text(l: &TensorLayout, axis: usize) -> String {
    let subs: Vec<String> = l.groups()[axis]
        .iter()
        .map(|s| {
            let name = match s.class {
                Class::Mem => String::new(),
                Class::W => "_W".into(),
                Class::Time => "_Time".into(),
                Class::Level(i) => format!("_{}", l.levels()[i].name),
            };
            format!("{}{name}:{}", s.size, s.stride)
        })
        .collect();
    format!("({})", subs.join(", "))
}

/// How to make `l` replicated over level `x`: `drop its L1B sub-axes and add L1B to
/// B@: B@[L1B,MAB]` (the replicated levels with `x` added, root-most first).
pub(crate) fn bcast_with(l: &TensorLayout, x: usize) -> String {
    let names: Vec<&str> = l
        .levels()
        .iter()
        .enumerate()
        .filter(|(i, u)| u.replicated || *i == x)
        .map(|(_, u)| u.name.as_str())
        .collect();
    let lv = &l.levels()[x].name;
    let drop = if l.levels()[x].replicated {
        String::new()
    } else {
        format!("drop its {lv} sub-axes and ")
    };
    format!("{drop}add {lv} to B@: B@[{}]", names.join(","))
}

/// A rule of legality broken at level `x` (see [`Ctx::level`]): input `j`, variable
/// `v` (an output axis below the output's rank, a reduced variable above it).
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Softmax/LayerNorm: the input splits the normalised axis.
    NormInputSplit { x: usize, axis: usize },
    /// Softmax/LayerNorm: the output splits the normalised axis.
    NormOutputSplit { x: usize, axis: usize },
    /// Input `j` splits variable `v` unlike the output.
    Mismatch { x: usize, j: usize, v: usize },
    /// The output is replicated but input `j` splits its output axis `h`.
    SplitUnderReplicatedOutput { x: usize, j: usize, h: usize },
    /// A reduced variable split where partial results are not allowed.
    NotAdditive { x: usize, j: usize, v: usize },
    /// The output is replicated, input `j` is held by only some positions.
    NotHeld { x: usize, j: usize },
    /// Inputs `j0` and `j` split reduced variable `v` differently.
    ReducedSplitDisagrees {
        x: usize,
        j0: usize,
        j: usize,
        v: usize,
    },
}

struct Ctx<'a> {
    k: &'a Kernel,
    inputs: &'a [&'a TensorLayout],
    out: &'a TensorLayout,
    names: Vec<String>,
    maps: Vec<InputMap>,
    out_rank: usize,
    /// Extent of every variable: output axes, then reduced variables.
    ext: Vec<u64>,
}

impl Ctx<'_> {
    fn name(&self, j: usize) -> &str {
        &self.names[j]
    }
    fn out_name(&self) -> &str {
        &self.names[self.inputs.len()]
    }
    fn source(&self, v: usize) -> AxisSource {
        if v < self.out_rank {
            AxisSource::Out(v)
        } else {
            AxisSource::Reduced(v - self.out_rank)
        }
    }
    /// The axis of input `j` that takes variable `v`.
    fn axis_of(&self, j: usize, v: usize) -> Option<usize> {
        let s = self.source(v);
        self.maps[j].axes.iter().position(|&a| a == s)
    }
    fn level_name(&self, x: usize) -> &str {
        &self.out.levels()[x].name
    }

    fn contributions(&self, j: usize, x: usize) -> Vec<AxisFn> {
        (0..self.ext.len())
            .map(|v| match self.axis_of(j, v) {
                Some(p) => AxisFn::of(self.inputs[j], p, x, self.ext[v]),
                None => AxisFn::zero(),
            })
            .collect()
    }

    fn illegal(&self, operand: usize, level: usize, msg: String) -> KernelError {
        KernelError::new(ErrorKind::Illegal { operand, level }, msg)
    }

    /// The contributions at level `x`: the output's per variable (zero where it is
    /// replicated or the variable is reduced), each input's (empty for an input
    /// replicated at `x`), and the inputs not replicated at `x`.
    fn contributions_at(&self, x: usize) -> (Vec<AxisFn>, Vec<Vec<AxisFn>>, Vec<usize>) {
        let (r, nv) = (self.out_rank, self.ext.len());
        let out_rep = self.out.levels()[x].replicated;
        let cout: Vec<AxisFn> = (0..nv)
            .map(|v| {
                if v < r && !out_rep {
                    AxisFn::of(self.out, v, x, self.ext[v])
                } else {
                    AxisFn::zero()
                }
            })
            .collect();
        let non_rep: Vec<usize> = (0..self.inputs.len())
            .filter(|&j| !self.inputs[j].levels()[x].replicated)
            .collect();
        let cin: Vec<Vec<AxisFn>> = (0..self.inputs.len())
            .map(|j| {
                if non_rep.contains(&j) {
                    self.contributions(j, x)
                } else {
                    Vec::new()
                }
            })
            .collect();
        (cout, cin, non_rep)
    }

    /// Checks level `x`; `Ok(true)` if the output is partial over it. A broken rule is
    /// a [`Fault`], which [`Ctx::explain`] turns into a message only when one is asked
    /// for (the planner asks thousands of times whether a layout is legal).
    fn level(&self, x: usize) -> Result<bool, Fault> {
        let (k, r, nv) = (self.k, self.out_rank, self.ext.len());
        let out_rep = self.out.levels()[x].replicated;
        let (cout, cin, non_rep) = self.contributions_at(x);

        // Softmax, LayerNorm: the normalised axis must be whole on the PE.
        if let Kernel::Softmax { axis } | Kernel::LayerNorm { axis, .. } = k {
            let axis = *axis;
            if non_rep.contains(&0) && !cin[0][r].is_zero() {
                return Err(Fault::NormInputSplit { x, axis });
            }
            if non_rep.contains(&0) && !cout[axis].is_zero() {
                return Err(Fault::NormOutputSplit { x, axis });
            }
        }

        if !out_rep {
            // Reduced variables first: a split contraction is the more useful diagnosis.
            for &j in &non_rep {
                for v in (r..nv).chain(0..r) {
                    if !same(&cin[j][v], &cout[v], self.ext[v]) {
                        return Err(Fault::Mismatch { x, j, v });
                    }
                }
            }
            return Ok(false);
        }
        if non_rep.is_empty() {
            return Ok(false);
        }
        // The output is replicated over X: a non-replicated input may only be split by
        // the reduced variables, and only for an Add reduction (partial results).
        for &j in &non_rep {
            if let Some(h) = cin[j][..r].iter().position(|f| !f.is_zero()) {
                return Err(Fault::SplitUnderReplicatedOutput { x, j, h });
            }
        }
        for &j in &non_rep {
            for (v, f) in cin[j].iter().enumerate().skip(r) {
                if !f.is_zero() && !k.is_additive() {
                    return Err(Fault::NotAdditive { x, j, v });
                }
            }
        }
        // The common pattern of the reduced variables: the first split seen.
        let pattern: Vec<Option<usize>> = (r..nv)
            .map(|v| non_rep.iter().copied().find(|&j| !cin[j][v].is_zero()))
            .collect();
        if pattern.iter().all(Option::is_none) {
            return Err(Fault::NotHeld { x, j: non_rep[0] });
        }
        for &j in &non_rep {
            for v in r..nv {
                let agrees = match pattern[v - r] {
                    Some(j0) => same(&cin[j][v], &cin[j0][v], self.ext[v]),
                    None => same(&cin[j][v], &AxisFn::zero(), self.ext[v]),
                };
                if !agrees {
                    let j0 = pattern[v - r].unwrap_or(j);
                    return Err(Fault::ReducedSplitDisagrees { x, j0, j, v });
                }
            }
        }
        Ok(true)
    }

    /// The message of a broken rule: which operand, which level, and the relayout that
    /// would make the kernel legal.
    fn explain(&self, f: Fault) -> KernelError {
        match f {
            Fault::NormInputSplit { x, axis } => self.norm_input_split(x, axis),
            Fault::NormOutputSplit { x, axis } => self.norm_output_split(x, axis),
            Fault::Mismatch { x, j, v } => {
                let (cout, cin, non_rep) = self.contributions_at(x);
                self.mismatch(x, j, v, &cin, &cout, &non_rep)
            }
            Fault::SplitUnderReplicatedOutput { x, j, h } => {
                self.split_under_replicated_output(x, j, h)
            }
            Fault::NotAdditive { x, j, v } => self.not_additive(x, j, v),
            Fault::NotHeld { x, j } => {
                needs_replica(self.k, self.inputs[j], self.name(j), self.out_name(), j, x)
            }
            Fault::ReducedSplitDisagrees { x, j0, j, v } => {
                let (_, cin, _) = self.contributions_at(x);
                self.reduced_split_disagrees(x, j0, j, v, &cin)
            }
        }
    }

    fn norm_input_split(&self, x: usize, axis: usize) -> KernelError {
        let (k, lv) = (self.k, self.level_name(x));
        let x_in = self.inputs[0];
        self.illegal(
            0,
            x,
            format!(
                "{k}: input `{}` is split over {lv} along its axis {axis} = {}, the normalised axis; \
                 every output element needs the whole axis on its PE. Relayout `{}` so axis {axis} has \
                 no {lv} sub-axis (keep it in memory, W or Time), or replicate it over {lv} ({})",
                self.name(0),
                group_text(x_in, axis),
                self.name(0),
                bcast_with(x_in, x)
            ),
        )
    }

    fn norm_output_split(&self, x: usize, axis: usize) -> KernelError {
        let (k, lv) = (self.k, self.level_name(x));
        self.illegal(
            1,
            x,
            format!(
                "{k}: the output `{}` is split over {lv} along its axis {axis} = {}, the normalised axis, \
                 but input `{}` is not replicated over {lv}; every output element needs the whole axis \
                 on its PE. Relayout the output `{}` so axis {axis} has no {lv} sub-axis, or replicate \
                 `{}` over {lv} ({})",
                self.out_name(),
                group_text(self.out, axis),
                self.name(0),
                self.out_name(),
                self.name(0),
                bcast_with(self.inputs[0], x)
            ),
        )
    }

    /// The output is replicated over `x` but input `j` splits output axis `h` there.
    fn split_under_replicated_output(&self, x: usize, j: usize, h: usize) -> KernelError {
        let (k, lv) = (self.k, self.level_name(x));
        let p = self.axis_of(j, h).unwrap_or(h);
        self.illegal(
            j,
            x,
            format!(
                "{k}: the output `{}` is replicated over {lv} but input `{}` is split over {lv} \
                 along its axis {p} = {} (output axis {h}); Relayout `{}` to replicate over {lv} \
                 ({}), or split the output's axis {h} over {lv} the same way",
                self.out_name(),
                self.name(j),
                group_text(self.inputs[j], p),
                self.name(j),
                bcast_with(self.inputs[j], x)
            ),
        )
    }

    /// A split reduced variable where partial results are not allowed.
    fn not_additive(&self, x: usize, j: usize, v: usize) -> KernelError {
        let (k, lv) = (self.k, self.level_name(x));
        let p = self.axis_of(j, v).unwrap_or(0);
        self.illegal(
            j,
            x,
            format!(
                "{k}: input `{}` is split over {lv} along its axis {p} = {}, {}; only Add and Mean reductions may leave \
                 partial results. Relayout `{}` so axis {p} has no {lv} sub-axis, or replicate it over {lv} ({})",
                self.name(j),
                group_text(self.inputs[j], p),
                k.reduced_role(),
                self.name(j),
                bcast_with(self.inputs[j], x)
            ),
        )
    }

    /// Two inputs split reduced variable `v` differently over `x` (`j0` splits it).
    fn reduced_split_disagrees(
        &self,
        x: usize,
        j0: usize,
        j: usize,
        v: usize,
        cin: &[Vec<AxisFn>],
    ) -> KernelError {
        let (k, lv) = (self.k, self.level_name(x));
        let p0 = self.axis_of(j0, v).unwrap_or(0);
        let role = k.reduced_role();
        let (n0, n1) = (self.name(j0), self.name(j));
        match self.axis_of(j, v) {
            Some(p) if cin[j][v].is_zero() => self.illegal(
                j0,
                x,
                format!(
                    "{k}: input `{n0}` is split over {lv} along its axis {p0} ({role}) but `{n1}` is not; \
                     Relayout `{n0}` to replicate over {lv} ({}) or split `{n1}`'s axis {p} over {lv} the same way \
                     (as `{n0}`'s axis {p0} = {})",
                    bcast_with(self.inputs[j0], x),
                    group_text(self.inputs[j0], p0),
                ),
            ),
            Some(p) => self.illegal(
                j,
                x,
                format!(
                    "{k}: inputs `{n0}` and `{n1}` split {role} over {lv} differently (`{n0}` axis {p0} = {}, \
                     `{n1}` axis {p} = {}); Relayout `{n1}` to split its axis {p} over {lv} like `{n0}`'s axis {p0}, \
                     or replicate both over {lv}",
                    group_text(self.inputs[j0], p0),
                    group_text(self.inputs[j], p)
                ),
            ),
            None => self.illegal(
                j,
                x,
                format!(
                    "{k}: input `{n0}` is split over {lv} along its axis {p0} = {} ({role}), which `{n1}` does not \
                     have; Relayout `{n0}` to replicate over {lv} ({})",
                    group_text(self.inputs[j0], p0),
                    bcast_with(self.inputs[j0], x)
                ),
            ),
        }
    }

    /// Input `j`'s contribution for variable `v` differs from the output's (the output
    /// is not replicated over `x`).
    fn mismatch(
        &self,
        x: usize,
        j: usize,
        v: usize,
        cin: &[Vec<AxisFn>],
        cout: &[AxisFn],
        non_rep: &[usize],
    ) -> KernelError {
        let (k, lv, r) = (self.k, self.level_name(x), self.out_rank);
        let (nj, no) = (self.name(j), self.out_name());
        let rep_j = bcast_with(self.inputs[j], x);
        if v >= r {
            // A reduced variable split in input j (the output cannot hold partials).
            if !k.is_additive() {
                return self.not_additive(x, j, v);
            }
            if let Some(&o) = non_rep
                .iter()
                .find(|&&o| o != j && !same(&cin[o][v], &cin[j][v], self.ext[v]))
            {
                return self.reduced_split_disagrees(x, j, o, v, cin);
            }
            let splitters: Vec<(usize, usize)> = non_rep
                .iter()
                .filter_map(|&o| self.axis_of(o, v).map(|q| (o, q)))
                .collect();
            let list: Vec<String> = splitters
                .iter()
                .map(|&(o, q)| format!("axis {q} of `{}`", self.name(o)))
                .collect();
            let undo = match splitters.as_slice() {
                [(o, q)] => format!(
                    "relayout `{}` so its axis {q} has no {lv} sub-axis",
                    self.name(*o)
                ),
                _ => format!(
                    "relayout the inputs so {} is not split over {lv}",
                    k.reduced_role()
                ),
            };
            let what = if k.is_matmul() { "sums" } else { "results" };
            return self.illegal(
                self.inputs.len(),
                x,
                format!(
                    "{k}: {} ({}) is split over {lv}, so the output would hold partial {what} over {lv}, but the \
                     output `{no}` is not replicated over {lv}; Relayout `{no}` to replicate over {lv} ({}) and \
                     Reduce it over {lv} afterwards, or {undo}",
                    k.reduced_role(),
                    list.join(", "),
                    bcast_with(self.out, x)
                ),
            );
        }
        let h = v;
        let out_g = group_text(self.out, h);
        match self.axis_of(j, v) {
            None => {
                // A broadcasting kernel's input lacks an output axis only by broadcasting
                // along it: a size-1 axis, or one missing from a lower rank.
                let broadcasts = k.broadcasts();
                let how = if broadcasts {
                    "broadcasts"
                } else {
                    "does not have"
                };
                self.illegal(
                    j,
                    x,
                    format!(
                        "{k}: the output `{no}` is split over {lv} along its axis {h} = {out_g}, which input `{nj}` \
                         {how}, so every {lv} position needs all of `{nj}`; Relayout `{nj}` to replicate over {lv} \
                         ({rep_j})"
                    ),
                )
            }
            Some(p) => {
                let in_g = group_text(self.inputs[j], p);
                let msg = if cin[j][v].is_zero() {
                    format!(
                        "{k}: the output `{no}` is split over {lv} along its axis {h} = {out_g} but input `{nj}`'s \
                         axis {p} = {in_g} is not; Relayout `{nj}` to split its axis {p} over {lv} like the output's \
                         axis {h}, or to replicate over {lv} ({rep_j})"
                    )
                } else if cout[v].is_zero() {
                    format!(
                        "{k}: input `{nj}` is split over {lv} along its axis {p} = {in_g} but the output `{no}`'s \
                         axis {h} = {out_g} is not; Relayout `{nj}` to replicate over {lv} ({rep_j}), or split the \
                         output's axis {h} over {lv} the same way"
                    )
                } else {
                    format!(
                        "{k}: input `{nj}` splits its axis {p} = {in_g} over {lv} differently from the output `{no}`'s \
                         axis {h} = {out_g}; Relayout `{nj}` to split its axis {p} over {lv} like the output's axis \
                         {h}, or to replicate over {lv} ({rep_j})"
                    )
                };
                self.illegal(j, x, msg)
            }
        }
    }
}

/// Default operand names: `a`, `b` for two inputs, `x` for one; `out` for the output.
fn default_name(k: &Kernel, i: usize) -> String {
    if i >= k.arity() {
        "out".into()
    } else if k.arity() == 1 {
        "x".into()
    } else {
        match k {
            Kernel::Select => ["cond", "a", "b"][i.min(2)].into(),
            Kernel::BiasAdd { .. } => ["x", "bias"][i.min(1)].into(),
            Kernel::Concat { .. } => format!("x{i}"),
            Kernel::Quant(_) => ["x", "scales", "zps"][i.min(2)].into(),
            _ => ["a", "b"][i.min(1)].into(),
        }
    }
}

/// Whether `k` may run on `inputs` laid out as given, writing `out` as laid out, on
/// machine `m`. `names` names the operands in messages: the inputs in order, then the
/// output (missing names default to `a`, `b` / `x`, and `out`).
///
/// Vector kernels need every input element an output element reads on the PE that
/// holds it ([`Unit::Pe`]); MatMul and BatchMatMul on the matrix unit need it on the
/// unit ([`Unit::Mab`]: the level `m.compute.matrix.level` and above), or fall back to
/// the vector unit (and [`Unit::Pe`]) when the output dtype has no matrix rate.
///
/// An illegal combination is an [`ErrorKind::Illegal`] error that names the operand,
/// the level and the relayout that would make it legal.
pub fn check(
    k: &Kernel,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
    names: &[&str],
) -> Result<Legality, KernelError> {
    decide(k, inputs, out, m, names, true)
}

/// Whether [`check`] would accept the layouts, without building its message: what the
/// planner asks of thousands of candidates (an illegal one costs no formatting).
pub fn is_legal(k: &Kernel, inputs: &[&TensorLayout], out: &TensorLayout, m: &Machine) -> bool {
    decide(k, inputs, out, m, &[], false).is_ok()
}

/// [`check`]; a broken level rule is explained only when `explain` is set (otherwise its
/// error carries the kind and no message).
fn decide(
    k: &Kernel,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
    names: &[&str],
    explain: bool,
) -> Result<Legality, KernelError> {
    let names: Vec<String> = (0..=k.arity())
        .map(|i| {
            names
                .get(i)
                .map_or_else(|| default_name(k, i), |s| s.to_string())
        })
        .collect();
    let in_shapes: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    let want = output_shape(k, &in_shapes)?;
    let out_name = &names[k.arity()];
    if want != out.logical_shape() {
        return Err(KernelError::new(
            ErrorKind::Layout,
            format!(
                "{k}: the output `{out_name}` has shape {}, but the inputs give {}",
                fmt_dims(out.logical_shape()),
                fmt_dims(&want)
            ),
        ));
    }
    let addr = m.addressable_levels();
    let all = inputs.iter().copied().chain(std::iter::once(out));
    for (i, l) in all.enumerate() {
        let same_levels = l.levels().len() == addr.len()
            && l.levels().iter().zip(&addr).all(|(u, a)| u.name == a.name);
        if !same_levels {
            return Err(KernelError::new(
                ErrorKind::Layout,
                format!(
                    "{k}: `{}` is laid out for another machine than {} (levels {})",
                    names[i],
                    m.name,
                    l.levels()
                        .iter()
                        .map(|u| u.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let (unit, unit_level) = unit_of(k, inputs, out, m);
    if let Kernel::Reshape { .. } | Kernel::Concat { .. } | Kernel::Slice { .. } = k {
        let leaf = addr.len().saturating_sub(1);
        if !addr.is_empty() {
            for x in 0..=leaf {
                match k {
                    Kernel::Concat { axis, .. } => concat_level(k, *axis, inputs, out, &names, x)?,
                    Kernel::Slice {
                        start,
                        limit,
                        stride,
                    } => slice_level(k, (start, limit, stride), inputs[0], out, &names, x)?,
                    _ => reshape_level(k, inputs[0], out, &names, x)?,
                }
            }
        }
        return Ok(Legality {
            partial: Vec::new(),
            unit,
            unit_level,
        });
    }
    let maps = match crate::window::map_of(k, &in_shapes)? {
        Some(w) => {
            crate::window::check_whole(k, &w, inputs, out, &names, unit_level)?;
            w.maps
        }
        None => index_map(k, &in_shapes, &want)?,
    };
    let mut ext = want.clone();
    ext.extend(reduced_extents(k, &in_shapes)?);
    let ctx = Ctx {
        k,
        inputs,
        out,
        names,
        maps,
        out_rank: want.len(),
        ext,
    };
    let mut partial = Vec::new();
    if !addr.is_empty() {
        for x in 0..=unit_level {
            match ctx.level(x) {
                Ok(true) => partial.push(x),
                Ok(false) => {}
                Err(f) if explain => return Err(ctx.explain(f)),
                // Only `is_legal` asks without `explain`, and it keeps only whether.
                Err(_) => {
                    let kind = ErrorKind::Illegal {
                        operand: 0,
                        level: x,
                    };
                    return Err(KernelError::new(kind, String::new()));
                }
            }
        }
    }
    Ok(Legality {
        partial,
        unit,
        unit_level,
    })
}

/// The position of element `idx` of `l` at addressable level `x` (the sum of the
/// per-axis contributions), given each axis's function.
fn position(fns: &[AxisFn], idx: &[u64]) -> u64 {
    fns.iter().zip(idx).map(|(f, &i)| f.at(i)).sum()
}

/// Per-axis functions of `l` at level `x`.
fn axis_fns(l: &TensorLayout, x: usize) -> Vec<AxisFn> {
    let shape = l.logical_shape();
    (0..shape.len())
        .map(|a| AxisFn::of(l, a, x, shape[a].max(1)))
        .collect()
}

/// The common error when the output is replicated over `x` but an input is not.
fn needs_replica(
    k: &Kernel,
    l: &TensorLayout,
    name: &str,
    out: &str,
    j: usize,
    x: usize,
) -> KernelError {
    let lv = &l.levels()[x].name;
    KernelError::new(
        ErrorKind::Illegal {
            operand: j,
            level: x,
        },
        format!(
            "{k}: the output `{out}` is replicated over {lv} but input `{name}` is not: only some {lv} \
             positions hold it. Relayout `{name}` to replicate over {lv} ({})",
            bcast_with(l, x)
        ),
    )
}

/// Reshape at level `x`: every element must keep its position. The row-major index
/// splits into groups of axes where the two shapes' suffix products meet; the
/// position is a sum of per-group parts, each zero at index 0, so the rule holds
/// when it holds within every group, checked element by element.
fn reshape_level(
    k: &Kernel,
    input: &TensorLayout,
    out: &TensorLayout,
    names: &[String],
    x: usize,
) -> Result<(), KernelError> {
    if input.levels()[x].replicated {
        return Ok(());
    }
    if out.levels()[x].replicated {
        return Err(needs_replica(k, input, &names[0], &names[1], 0, x));
    }
    let (a, b) = (input.logical_shape(), out.logical_shape());
    let (fa, fb) = (axis_fns(input, x), axis_fns(out, x));
    let lv = &out.levels()[x].name;
    let mut ia = vec![0u64; a.len()];
    let mut ib = vec![0u64; b.len()];
    for (lo_a, hi_a, lo_b, hi_b) in crate::shape::reshape_groups(a, b) {
        let n = a[lo_a..hi_a].iter().fold(1u64, |p, &d| p.saturating_mul(d));
        for t in 0..n {
            let (mut ra, mut rb) = (t, t);
            for ax in (lo_a..hi_a).rev() {
                ia[ax] = ra % a[ax].max(1);
                ra /= a[ax].max(1);
            }
            for ax in (lo_b..hi_b).rev() {
                ib[ax] = rb % b[ax].max(1);
                rb /= b[ax].max(1);
            }
            let pa = position(&fa[lo_a..hi_a], &ia[lo_a..hi_a]);
            let pb = position(&fb[lo_b..hi_b], &ib[lo_b..hi_b]);
            if pa != pb {
                let (na, nb) = (&names[0], &names[1]);
                return Err(KernelError::new(
                    ErrorKind::Illegal {
                        operand: 0,
                        level: x,
                    },
                    format!(
                        "{k}: element {} of `{na}` is at {lv} position {pa} but the output `{nb}` puts it (as {}) at {lv} \
                         position {pb}; every element must stay where it is. Relayout `{na}` to split over {lv} only \
                         along axes the reshape keeps whole, as the output does, or replicate it over {lv} ({})",
                        fmt_dims(&ia),
                        fmt_dims(&ib),
                        bcast_with(input, x)
                    ),
                ));
            }
        }
        for v in ia[lo_a..hi_a].iter_mut().chain(ib[lo_b..hi_b].iter_mut()) {
            *v = 0;
        }
    }
    Ok(())
}

/// Concat at level `x`: input `j`'s element `i` on the joined axis is the output's
/// element `i + offset_j`; both must be at the same position, and every other axis
/// split alike.
fn concat_level(
    k: &Kernel,
    axis: usize,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    names: &[String],
    x: usize,
) -> Result<(), KernelError> {
    let oname = &names[inputs.len()];
    let fo = axis_fns(out, x);
    let lv = &out.levels()[x].name;
    let mut offset = 0u64;
    for (j, l) in inputs.iter().enumerate() {
        let shape = l.logical_shape();
        let n = shape[axis];
        let base = offset;
        offset += n;
        if l.levels()[x].replicated {
            continue;
        }
        if out.levels()[x].replicated {
            return Err(needs_replica(k, l, &names[j], oname, j, x));
        }
        let fi = axis_fns(l, x);
        for (a, f) in fi.iter().enumerate() {
            let ok = if a == axis {
                (0..n).all(|i| f.at(i) == fo[a].at(i + base))
            } else {
                same(f, &fo[a], shape[a].max(1))
            };
            if !ok {
                return Err(KernelError::new(
                    ErrorKind::Illegal {
                        operand: j,
                        level: x,
                    },
                    format!(
                        "{k}: input `{}` is laid out over {lv} along its axis {a} = {} unlike its part of the output \
                         `{oname}` (axis {a} = {}, from index {}); Relayout `{}` to split over {lv} like that part, \
                         or replicate it over {lv} ({})",
                        names[j],
                        group_text(l, a),
                        group_text(out, a),
                        if a == axis { base } else { 0 },
                        names[j],
                        bcast_with(l, x)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Slice at level `x`: output element `h` of axis `a` is input element `start[a] +
/// stride[a]·h`; both must be at the same position. A position is a sum of per-axis
/// contributions, each 0 at index 0 and never negative, so the rule holds exactly when
/// it holds on every axis alone: `f_in(start + stride·h) = f_out(h)` for every `h` of
/// the output's extent (an axis the slice keeps whole is compared as the elementwise
/// kernels compare it).
fn slice_level(
    k: &Kernel,
    (start, limit, stride): (&[u64], &[u64], &[u64]),
    input: &TensorLayout,
    out: &TensorLayout,
    names: &[String],
    x: usize,
) -> Result<(), KernelError> {
    if input.levels()[x].replicated {
        return Ok(());
    }
    let (na, nb) = (&names[0], &names[1]);
    if out.levels()[x].replicated {
        return Err(needs_replica(k, input, na, nb, 0, x));
    }
    let shape = out.logical_shape();
    let (fi, fo) = (axis_fns(input, x), axis_fns(out, x));
    let lv = &out.levels()[x].name;
    for a in 0..shape.len() {
        let (s, l, t, n) = (start[a], limit[a], stride[a], shape[a]);
        let whole = s == 0 && t == 1;
        let moved = if whole && same(&fi[a], &fo[a], n.max(1)) {
            None
        } else {
            (0..n).find(|&h| fi[a].at(s + t * h) != fo[a].at(h))
        };
        let Some(h) = moved else { continue };
        let (pi, po) = (fi[a].at(s + t * h), fo[a].at(h));
        let keep = if whole {
            format!("split its axis {a} over {lv} like the output's axis {a}")
        } else {
            format!(
                "keep its axis {a} (sliced {s}:{l}:{t}) unsplit over {lv}, as well as the output's axis {a} \
                 (no {lv} sub-axis in either: memory, W or Time)"
            )
        };
        return Err(KernelError::new(
            ErrorKind::Illegal {
                operand: 0,
                level: x,
            },
            format!(
                "{k}: output element {h} of axis {a} of `{nb}` = {} is at {lv} position {po}, but it reads \
                 element {} of `{na}`'s axis {a} = {}, at {lv} position {pi}; every element must stay where \
                 it is. Relayout `{na}` to {keep}, or replicate it over {lv} ({})",
                group_text(out, a),
                s + t * h,
                group_text(input, a),
                bcast_with(input, x)
            ),
        ));
    }
    Ok(())
}

/// The values of each reduced variable (see [`crate::reduced_extents`]) that the unit at
/// `pos` works on, where the output is partial: on every level of `legality.partial`,
/// the values whose contribution to the position of the splitting input (the first
/// input not replicated there) is the unit's own. Elsewhere every value. `pos` gives a
/// position per addressable level (root-most first); only the partial levels are read.
///
/// The shares need not be ranges: a contraction split on a minor digit (`(2, 2_L1B)`)
/// gives every other value. A position the split does not reach gets empty shares (its
/// partial sums are the identity, 0). Feed the result to [`crate::eval_share`].
pub fn reduced_share(
    k: &Kernel,
    inputs: &[&TensorLayout],
    legality: &Legality,
    pos: &[u64],
) -> Result<Vec<Vec<u64>>, KernelError> {
    let in_shapes: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    let out_shape = output_shape(k, &in_shapes)?;
    let ext = reduced_extents(k, &in_shapes)?;
    if legality.partial.is_empty() {
        return Ok(ext.iter().map(|&n| (0..n).collect()).collect());
    }
    let maps = match crate::window::map_of(k, &in_shapes)? {
        Some(w) => w.maps,
        None => index_map(k, &in_shapes, &out_shape)?,
    };
    let mut shares: Vec<Vec<u64>> = ext.iter().map(|&n| (0..n).collect()).collect();
    for &x in &legality.partial {
        let Some(&p) = pos.get(x) else {
            return Err(KernelError::new(
                ErrorKind::Layout,
                format!(
                    "{k}: the position {pos:?} names no level {x} (a position per addressable level is needed)"
                ),
            ));
        };
        let Some(j) =
            (0..inputs.len()).find(|&j| inputs[j].levels().get(x).is_some_and(|u| !u.replicated))
        else {
            continue;
        };
        // The splitting input's contribution for every reduced variable at level x.
        let fns: Vec<AxisFn> = (0..ext.len())
            .map(|r| {
                let src = AxisSource::Reduced(r);
                match maps[j].axes.iter().position(|&a| a == src) {
                    Some(axis) => AxisFn::of(inputs[j], axis, x, ext[r]),
                    None => AxisFn::zero(),
                }
            })
            .collect();
        // The images of the split variables; the position decomposes into one value of
        // each (the layout's level map is injective).
        let split: Vec<usize> = (0..ext.len()).filter(|&r| !fns[r].is_zero()).collect();
        let images: Vec<Vec<u64>> = split
            .iter()
            .map(|&r| {
                let mut v: Vec<u64> = (0..ext[r]).map(|t| fns[r].at(t)).collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let mut pick = vec![0u64; split.len()];
        if !decompose(p, &images, 0, &mut pick) {
            return Ok(ext.iter().map(|_| Vec::new()).collect());
        }
        for (i, &r) in split.iter().enumerate() {
            shares[r].retain(|&t| fns[r].at(t) == pick[i]);
        }
    }
    Ok(shares)
}

/// Finds one value per image summing to `p` (depth-first).
fn decompose(p: u64, images: &[Vec<u64>], i: usize, pick: &mut [u64]) -> bool {
    if i == images.len() {
        return p == 0;
    }
    for &v in &images[i] {
        if v <= p {
            pick[i] = v;
            if decompose(p - v, images, i + 1, pick) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// The position contribution of a raw group at level 0, by definition.
    fn brute(group: &[SubAxis], i: u64) -> u64 {
        let mut radix = 1u64;
        let mut v = 0;
        for s in group.iter().rev() {
            if s.class == Class::Level(0) {
                v += ((i / radix) % s.size) * s.stride;
            }
            radix *= s.size;
        }
        v
    }

    fn random_group(rng: &mut Rng) -> Vec<SubAxis> {
        (0..1 + rng.next(4))
            .map(|_| SubAxis {
                size: 1 + rng.next(4),
                class: if rng.next(3) == 0 {
                    Class::Mem
                } else {
                    Class::Level(0)
                },
                stride: 1 + rng.next(6),
            })
            .collect()
    }

    #[test]
    fn canonical_functions_agree_with_the_definition() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for _ in 0..4000 {
            let (g1, g2) = (random_group(&mut rng), random_group(&mut rng));
            let n = 1 + rng.next(40);
            let (f1, f2) = (AxisFn::from_group(&g1, 0, n), AxisFn::from_group(&g2, 0, n));
            for i in 0..n {
                assert_eq!(f1.at(i), brute(&g1, i), "{g1:?} at {i}");
            }
            assert_eq!(f1.is_zero(), (0..n).all(|i| brute(&g1, i) == 0), "{g1:?}");
            let want = (0..n).all(|i| brute(&g1, i) == brute(&g2, i));
            assert_eq!(same(&f1, &f2, n), want, "{g1:?} vs {g2:?} on 0..{n}");
        }
    }

    #[test]
    fn equal_functions_with_different_digits() {
        // (2:2, 2:1) merges into one digit of size 4: the same function as (4:1).
        let l = |size, stride| SubAxis {
            size,
            class: Class::Level(0),
            stride,
        };
        let a = AxisFn::from_group(&[l(2, 2), l(2, 1)], 0, 4);
        let b = AxisFn::from_group(&[l(4, 1)], 0, 4);
        assert_eq!(a, b);
        // On 0..2 only the minor digit moves: (2:1) and (4:1) agree there, not on 0..3.
        let c = AxisFn::from_group(&[l(2, 1)], 0, 2);
        let d = AxisFn::from_group(&[l(4, 1)], 0, 2);
        assert!(same(&c, &d, 2));
        let c = AxisFn::from_group(&[l(2, 1)], 0, 3);
        let d = AxisFn::from_group(&[l(4, 1)], 0, 3);
        assert!(!same(&c, &d, 3));
    }
}
