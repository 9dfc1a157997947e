//! The per-level rule for kernels with an index map: at each level, every input
//! available where the output element is, or the output partial over the level.

use super::axis_fn::{AxisFn, same};
use crate::kernel::{ErrorKind, Kernel, KernelError};
use crate::shape::{AxisSource, InputMap, reduced_extents};
use mnsim_arch::layout::TensorLayout;

/// A rule of legality broken at level `x` (see [`Ctx::level`]): input `j`, variable
/// `v` (an output axis below the output's rank, a reduced variable above it).
#[derive(Clone, Copy, Debug)]
pub(super) enum Fault {
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

pub(super) struct Ctx<'a> {
    pub(super) k: &'a Kernel,
    pub(super) inputs: &'a [&'a TensorLayout],
    pub(super) out: &'a TensorLayout,
    pub(super) names: Vec<String>,
    pub(super) maps: Vec<InputMap>,
    pub(super) out_rank: usize,
    /// Extent of every variable: output axes, then reduced variables.
    pub(super) ext: Vec<u64>,
}

/// The contributions at one level ([`Ctx::contributions_at`]): the output's, each
/// input's, and the inputs not replicated there.
#[derive(Default)]
pub(super) struct Contributions {
    cout: Vec<AxisFn>,
    cin: Vec<Vec<AxisFn>>,
    non_rep: Vec<usize>,
}

impl<'a> Ctx<'a> {
    /// The context of kernel `k` whose inputs (of logical shapes `in_shapes`) have the
    /// index maps `maps`, and whose output has shape `want`.
    pub(super) fn new(
        k: &'a Kernel,
        (inputs, in_shapes): (&'a [&'a TensorLayout], &[&[u64]]),
        out: &'a TensorLayout,
        names: Vec<String>,
        maps: Vec<InputMap>,
        want: &[u64],
    ) -> Result<Self, KernelError> {
        let mut ext = want.to_vec();
        ext.extend(reduced_extents(k, in_shapes)?);
        Ok(Ctx {
            k,
            inputs,
            out,
            names,
            maps,
            out_rank: want.len(),
            ext,
        })
    }

    pub(super) fn name(&self, j: usize) -> &str {
        &self.names[j]
    }
    pub(super) fn out_name(&self) -> &str {
        &self.names[self.inputs.len()]
    }
    pub(super) fn source(&self, v: usize) -> AxisSource {
        if v < self.out_rank {
            AxisSource::Out(v)
        } else {
            AxisSource::Reduced(v - self.out_rank)
        }
    }
    /// The axis of input `j` that takes variable `v`.
    pub(super) fn axis_of(&self, j: usize, v: usize) -> Option<usize> {
        let s = self.source(v);
        self.maps[j].axes.iter().position(|&a| a == s)
    }
    pub(super) fn level_name(&self, x: usize) -> &str {
        &self.out.levels()[x].name
    }

    pub(super) fn illegal(&self, operand: usize, level: usize, msg: String) -> KernelError {
        KernelError::new(ErrorKind::Illegal { operand, level }, msg)
    }

    /// The contributions at level `x`: the output's per variable (zero where it is
    /// replicated or the variable is reduced), each input's (empty for an input
    /// replicated at `x`), and the inputs not replicated at `x`.
    pub(super) fn contributions_at(&self, x: usize) -> (Vec<AxisFn>, Vec<Vec<AxisFn>>, Vec<usize>) {
        let mut c = Contributions::default();
        self.contributions_into(x, &mut c);
        (c.cout, c.cin, c.non_rep)
    }

    /// [`Ctx::contributions_at`] into `c`, its vectors kept from one level to the next.
    fn contributions_into(&self, x: usize, c: &mut Contributions) {
        let (r, nv, n) = (self.out_rank, self.ext.len(), self.inputs.len());
        let out_rep = self.out.levels()[x].replicated;
        c.cout.clear();
        c.cout.extend((0..nv).map(|v| {
            if v < r && !out_rep {
                AxisFn::of(self.out, v, x, self.ext[v])
            } else {
                AxisFn::zero()
            }
        }));
        c.non_rep.clear();
        c.non_rep
            .extend((0..n).filter(|&j| !self.inputs[j].levels()[x].replicated));
        c.cin.resize_with(n, Vec::new);
        for (j, cin) in c.cin.iter_mut().enumerate() {
            cin.clear();
            if c.non_rep.contains(&j) {
                cin.extend((0..nv).map(|v| match self.axis_of(j, v) {
                    Some(p) => AxisFn::of(self.inputs[j], p, x, self.ext[v]),
                    None => AxisFn::zero(),
                }));
            }
        }
    }

    /// Checks level `x`; `Ok(true)` if the output is partial over it. A broken rule is
    /// a [`Fault`], which [`Ctx::explain`] turns into a message only when one is asked
    /// for (the planner asks thousands of times whether a layout is legal). The
    /// contributions are worked out into `c` (its vectors serve every level).
    pub(super) fn level(&self, x: usize, c: &mut Contributions) -> Result<bool, Fault> {
        self.contributions_into(x, c);
        let cin = &c.cin;
        self.rule(x, &c.cout, &|j, v| &cin[j][v], &c.non_rep)
    }

    /// [`Ctx::level`] on the contributions at level `x` ([`Ctx::contributions_at`]):
    /// `cin(j, v)` is input `j`'s contribution to variable `v` (asked of the inputs in
    /// `non_rep` only).
    pub(super) fn rule<'c>(
        &self,
        x: usize,
        cout: &[AxisFn],
        cin: &dyn Fn(usize, usize) -> &'c AxisFn,
        non_rep: &[usize],
    ) -> Result<bool, Fault> {
        let (k, r, nv) = (self.k, self.out_rank, self.ext.len());
        let out_rep = self.out.levels()[x].replicated;

        // Softmax, LayerNorm: the normalised axis must be whole on the PE.
        if let Some(axis) = k.with_family(|f| f.normalised_axis()) {
            if non_rep.contains(&0) && !cin(0, r).is_zero() {
                return Err(Fault::NormInputSplit { x, axis });
            }
            if non_rep.contains(&0) && !cout[axis].is_zero() {
                return Err(Fault::NormOutputSplit { x, axis });
            }
        }

        if !out_rep {
            // Reduced variables first: a split contraction is the more useful diagnosis.
            for &j in non_rep {
                for v in (r..nv).chain(0..r) {
                    if !same(cin(j, v), &cout[v], self.ext[v]) {
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
        for &j in non_rep {
            if let Some(h) = (0..r).position(|v| !cin(j, v).is_zero()) {
                return Err(Fault::SplitUnderReplicatedOutput { x, j, h });
            }
        }
        for &j in non_rep {
            for v in r..nv {
                if !cin(j, v).is_zero() && !k.is_additive() {
                    return Err(Fault::NotAdditive { x, j, v });
                }
            }
        }
        // The common pattern of the reduced variables: the first split seen.
        let pattern: Vec<Option<usize>> = (r..nv)
            .map(|v| non_rep.iter().copied().find(|&j| !cin(j, v).is_zero()))
            .collect();
        if pattern.iter().all(Option::is_none) {
            return Err(Fault::NotHeld { x, j: non_rep[0] });
        }
        for &j in non_rep {
            for v in r..nv {
                let agrees = match pattern[v - r] {
                    Some(j0) => same(cin(j, v), cin(j0, v), self.ext[v]),
                    None => same(cin(j, v), &AxisFn::zero(), self.ext[v]),
                };
                if !agrees {
                    let j0 = pattern[v - r].unwrap_or(j);
                    return Err(Fault::ReducedSplitDisagrees { x, j0, j, v });
                }
            }
        }
        Ok(true)
    }
}
