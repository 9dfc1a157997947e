//! Kernels on the engine: legality and cost from `mnsim_kernels`, the output's region,
//! values from the data plane in functional mode, and the compute stage charged on the
//! unit the kernel runs on (the PE's vector unit, or a level's matrix unit).
//!
//! Invariant: the output gets a fresh region (it may replace an input); a split
//! contraction leaves the output partial over the levels `Legality::partial` names.

use super::{Engine, Mode, Resident, SimError, err};
use crate::ids::RegionId;
use crate::net;
use mnsim_arch::{DType, TensorLayout};
use mnsim_reports::OpReport;

impl Engine {
    /// Runs a SIMD kernel: checks legality (docs/kernels.md), computes (functional mode),
    /// charges the compute unit. The output is partial over the levels where a split
    /// contraction leaves partial sums; a Reduce completes it.
    pub fn kernel(
        &mut self,
        op: &str,
        k: &mnsim_kernels::Kernel,
        inputs: &[&str],
        out: &str,
        layout: Option<TensorLayout>,
    ) -> Result<OpReport, SimError> {
        let mut res: Vec<Resident> = Vec::new();
        let mut in_dims: Vec<Vec<u64>> = Vec::new();
        let mut in_rt: Vec<Vec<u64>> = Vec::new();
        let mut in_dtypes: Vec<DType> = Vec::new();
        for name in inputs {
            let r = self.resident(name)?.clone();
            if let Some(&p) = r.partial.first() {
                return err(format!(
                    "`{name}` holds partial sums over {}: Reduce it over {} first",
                    r.layout.levels()[p].name,
                    r.layout.levels()[p].name
                ));
            }
            let t = self.state(name)?;
            in_dims.push(t.dims.clone());
            in_rt.push(t.runtime.clone());
            in_dtypes.push(t.dtype);
            res.push(r);
        }
        let dims_ref: Vec<&[u64]> = in_dims.iter().map(|d| d.as_slice()).collect();
        let rt_ref: Vec<&[u64]> = in_rt.iter().map(|d| d.as_slice()).collect();
        let want = mnsim_kernels::output_shape(k, &dims_ref).map_err(|error| SimError::Kernel {
            context: String::new(),
            error,
        })?;
        let want_rt =
            mnsim_kernels::output_shape(k, &rt_ref).map_err(|error| SimError::Kernel {
                context: String::new(),
                error,
            })?;
        let o = self.state(out)?;
        let (out_dtype, out_dims, out_rt) = (o.dtype, o.dims.clone(), o.runtime.clone());
        if out_dims != want {
            return err(format!(
                "{op} of {} gives shape {want:?}, but `{out}` is declared with shape {out_dims:?}",
                inputs.join(", ")
            ));
        }
        if out_rt != want_rt {
            return err(format!(
                "{op} of {} gives run-time shape {want_rt:?}, but `{out}` has run-time shape {out_rt:?}",
                inputs.join(", ")
            ));
        }
        let layout = match layout {
            Some(l) => l,
            None => match res.first() {
                Some(r)
                    if r.layout.logical_shape() == out_dims.as_slice()
                        && in_dtypes[0] == out_dtype =>
                {
                    r.layout.clone()
                }
                first => {
                    // Without `layout:` the output takes the first input's layout: say
                    // which input that is and what differs (Select's is `cond`).
                    let (name, dtype, dims) = match first {
                        Some(r) => (inputs[0], in_dtypes[0], r.layout.logical_shape()),
                        None => ("", out_dtype, &[][..]),
                    };
                    return err(format!(
                        "{op} has no `layout:` for `{out}`, and an output without one is laid out like the op's \
                         first input, `{name}`, which is {}{dims:?} while `{out}` is {out_dtype}{out_dims:?}: \
                         give `layout:`",
                        dtype
                    ));
                }
            },
        };
        let in_layouts: Vec<&TensorLayout> = res.iter().map(|r| &r.layout).collect();
        let mut names: Vec<&str> = inputs.to_vec();
        names.push(out);
        let legal = if self.explaining {
            mnsim_kernels::check(k, &in_layouts, &layout, &self.machine, &names)
        } else {
            mnsim_kernels::check_unexplained(k, &in_layouts, &layout, &self.machine)
                .map_err(|e| unexplained(e, &self.machine))
        };
        let legal = legal.map_err(|error| SimError::Kernel {
            // The kernels' messages name the kernel already (`Binary Add: ...`).
            context: if error.message.starts_with(op) {
                String::new()
            } else {
                format!("{op}: ")
            },
            error,
        })?;
        let cost = mnsim_kernels::cost(
            k,
            &in_layouts,
            &layout,
            &legal,
            &self.machine,
            out_dtype,
            Some(&rt_ref),
        )
        .map_err(|error| SimError::Kernel {
            context: format!("{op}: "),
            error,
        })?;
        // The output gets a fresh region (it may replace one of the inputs).
        let old = self
            .tensors
            .get(out)
            .and_then(|t| t.lm.as_ref())
            .map(|r| r.offset);
        let (offset, words, region) = self.allocate(out, &layout)?;
        // Measuring for the planner: the units that compute, counted in closed form; the
        // PEs' ready cycles (a report's) are not kept.
        let measured = self.measuring && self.mode == Mode::Timing;
        let facts = match self.functional() {
            None if measured => Vec::new(),
            None => self.closed_facts(&layout, &legal.partial, &out_rt, false, None),
            Some(f) => {
                let inputs: Vec<(&Resident, DType)> = res.iter().zip(in_dtypes).collect();
                self.move_kernel(
                    f,
                    k,
                    &inputs,
                    &rt_ref,
                    &layout,
                    offset,
                    &out_rt,
                    out_dtype,
                    &legal,
                    &in_layouts,
                )
            }
        };
        if let Some(o) = old {
            self.release(o);
        }
        let unit = self.machine.addressable_levels()[legal.unit_level].level_index;
        let units = if measured {
            Self::closed_product(&layout, &legal.partial, &out_rt, false, None).pes()
        } else {
            facts.len() as u64
        };
        let place = net::Place::Compute {
            level: crate::ids::LevelId::of(unit),
            leaf: unit + 1 == self.machine.levels.len(),
        };
        let stage = net::endpoint_stage(place, net::StageKind::Compute, 0, 0, units, cost.cycles);
        let c = net::Cost {
            stages: vec![stage],
            cycles: cost.cycles,
            ready: net::runs_of(facts.iter().map(|&(p, _)| (p, cost.cycles))),
            bottleneck: Some(0),
            ports: Vec::new(),
        };
        let reads: Vec<RegionId> = res.iter().map(|r| r.region).collect();
        // The walk over `Time` steps: operands whose axes have no per-axis index map
        // (Reshape, Concat) are read whole.
        let maps = mnsim_kernels::shape::index_map(k, &dims_ref, &out_dims);
        let reduced = mnsim_kernels::shape::reduced_extents(k, &dims_ref).unwrap_or_default();
        let ins: Vec<(&TensorLayout, Vec<mnsim_kernels::shape::AxisSource>)> = match &maps {
            Ok(m) => res
                .iter()
                .zip(m)
                .map(|(r, m)| (&r.layout, m.axes.clone()))
                .collect(),
            Err(_) => Vec::new(),
        };
        let walk =
            super::streams::plan(Some(&layout), &out_dims, &ins, &reduced).map(|p| (p, false));
        let steps = walk.as_ref().map_or(0, |(p, _)| p.steps as u64);
        self.walked = self.walked.saturating_add(steps);
        let mut rep = self.finish(op, out, Some(&layout), &out_rt, c, &reads, &[region], walk);
        rep.flops = Some(cost.flops);
        rep.utilisation = cost.utilisation();
        if let Some(last) = self.ops.last_mut() {
            last.flops = rep.flops;
            last.utilisation = rep.utilisation;
        }
        self.tensors.get_mut(out).expect("checked").lm = Some(Resident {
            layout,
            offset,
            words,
            partial: legal.partial.clone(),
            region,
        });
        Ok(rep)
    }
}

/// `e` from [`mnsim_kernels::check_unexplained`], with a short message: the level at
/// which the operands' layouts do not line up.
fn unexplained(
    mut e: mnsim_kernels::KernelError,
    m: &mnsim_arch::Machine,
) -> mnsim_kernels::KernelError {
    if let mnsim_kernels::ErrorKind::Illegal { level, .. } = e.kind
        && e.message.is_empty()
    {
        let lv = m.addressable_names().nth(level).unwrap_or("?");
        e.message = format!("the operands' layouts do not line up at {lv}");
    }
    e
}
