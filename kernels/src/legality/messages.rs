//! The messages of broken rules: which operand, which level, and the relayout that
//! would make the kernel legal.

use super::axis_fn::{AxisFn, same};
use super::rule::{Ctx, Fault};
use crate::kernel::{ErrorKind, Kernel, KernelError};
use mnsim_arch::layout::{Class, TensorLayout};

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

impl Ctx<'_> {
    /// The message of a broken rule: which operand, which level, and the relayout that
    /// would make the kernel legal.
    pub(super) fn explain(&self, f: Fault) -> KernelError {
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

/// The common error when the output is replicated over `x` but an input is not.
pub(super) fn needs_replica(
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
