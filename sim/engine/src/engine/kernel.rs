//! Kernels on the engine: legality and cost from `mnsim_kernels`, the output's region,
//! values from the data plane in functional mode, and the compute stage charged on the
//! unit the kernel runs on (the PE's vector unit, or a level's matrix unit).
//!
//! Invariant: the output gets a fresh region (it may replace an input); a split
//! contraction leaves the output partial over the levels `Legality::partial` names.

use super::{Engine, ErrorKind, Mode, OpSettings, Partial, Resident, SimError};
use crate::ids::RegionId;
use crate::net;
use crate::program::TensorId;
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
        inputs: &[TensorId],
        out: TensorId,
        layout: Option<TensorLayout>,
    ) -> Result<OpReport, SimError> {
        self.op(OpSettings::default())
            .kernel(op, k, inputs, out, layout)
    }

    /// [`Engine::kernel`] with the op's settings: its legality as the caller checked it,
    /// and the slices its output's stream holds.
    pub(super) fn kernel_op(
        &mut self,
        (op, k): (&str, &mnsim_kernels::Kernel),
        (inputs, out): (&[TensorId], TensorId),
        layout: Option<TensorLayout>,
        s: OpSettings,
    ) -> Result<OpReport, SimError> {
        let Operands {
            res,
            dims: in_dims,
            runtime: in_rt,
            dtypes: in_dtypes,
        } = self.operands(inputs)?;
        let dims_ref: Vec<&[u64]> = in_dims.iter().map(|d| d.as_slice()).collect();
        let rt_ref: Vec<&[u64]> = in_rt.iter().map(|d| d.as_slice()).collect();
        let (out_dtype, out_dims, out_rt) =
            self.kernel_output(op, k, inputs, out, (&dims_ref, &rt_ref))?;
        let layout = match layout {
            Some(l) => l,
            None => {
                let first = inputs.first().map_or("", |&t| self.state.name(t));
                let names = (first, self.state.name(out));
                output_layout(op, names, &res, &in_dtypes, (out_dtype, &out_dims))?
            }
        };
        let in_layouts: Vec<&TensorLayout> = res.iter().map(|r| &r.layout).collect();
        let legal = match s.legality {
            Some(legal) => legal,
            None => self.kernel_legality(op, k, (inputs, out), &in_layouts, &layout)?,
        };
        let cost = mnsim_kernels::cost(
            k,
            &in_layouts,
            &layout,
            &legal,
            &self.state.machine,
            out_dtype,
            Some(&rt_ref),
        )
        .map_err(|error| SimError::in_kernel(format!("{op}: "), error))?;
        // A view whose output keeps every element in its cell computes nothing and moves
        // nothing (docs/layout.md, views).
        let view = legal.partial.is_empty()
            && mnsim_kernels::is_view(k, &in_layouts, &layout, &self.state.machine);
        let cost = if view {
            mnsim_kernels::KernelCost { cycles: 0, ..cost }
        } else {
            cost
        };
        // The output gets a fresh region (it may replace one of the inputs).
        let old = self.state.tensors[out].lm.as_ref().map(|r| r.offset);
        let (offset, words, region) = self.allocate(out, &layout, s.buffers)?;
        // Measuring for the planner: the units that compute, counted in closed form; the
        // PEs' ready cycles (a report's) are not kept.
        let measured = self.rec.measuring() && self.state.mode == Mode::Timing;
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
            self.state.release(o);
        }
        let units = if measured {
            Self::closed_product(&layout, &legal.partial, &out_rt, false, None).pes()
        } else {
            facts.len() as u64
        };
        let c = self.compute_cost(legal.unit_level, units, cost.cycles, &facts);
        let reads: Vec<RegionId> = res.iter().map(|r| r.region).collect();
        let walk = match view {
            true => reshape_view_walk(k, &res, &layout),
            false => None,
        }
        .or_else(|| {
            kernel_walk(
                &mut self.walks.walk,
                k,
                &res,
                &layout,
                (&dims_ref, &out_dims),
            )
        });
        let steps = walk.as_ref().map_or(0, |(p, _)| p.steps as u64);
        self.rec.walked = self.rec.walked.saturating_add(steps);
        let mut rep = self.finish(op, out, Some(&layout), &out_rt, c, &reads, &[region], walk);
        rep.flops = Some(cost.flops);
        rep.utilisation = cost.utilisation();
        rep.view = view;
        if let Some(last) = self.rec.ops.last_mut() {
            last.flops = rep.flops;
            last.utilisation = rep.utilisation;
            last.view = view;
        }
        self.state.tensors[out].lm = Some(Resident {
            layout,
            offset,
            words,
            partial: legal.partial.clone(),
            region,
        });
        Ok(rep)
    }

    /// The compute stage of a kernel on the unit at addressable level `unit_level`:
    /// `units` of them busy `cycles`, the PEs of `facts` ready then.
    fn compute_cost(
        &self,
        unit_level: usize,
        units: u64,
        cycles: u64,
        facts: &net::Facts,
    ) -> net::Cost {
        let unit = self.state.machine.addressable_levels()[unit_level].level_index;
        let place = net::Place::Compute {
            level: crate::ids::LevelId::of(unit),
            leaf: unit + 1 == self.state.machine.levels.len(),
        };
        let stage = net::endpoint_stage(place, net::StageKind::Compute, 0, 0, units, cycles);
        net::Cost {
            stages: vec![stage],
            cycles,
            ready: net::runs_of(facts.iter().map(|&(p, _)| (p, cycles))),
            bottleneck: Some(0),
            ports: Vec::new(),
            again: None,
            collectives: Vec::new(),
        }
    }

    /// A kernel's inputs as LM holds them (none may hold partial sums), with their
    /// shapes, run-time shapes and dtypes.
    fn operands(&self, inputs: &[TensorId]) -> Result<Operands, SimError> {
        let mut o = Operands {
            res: Vec::new(),
            dims: Vec::new(),
            runtime: Vec::new(),
            dtypes: Vec::new(),
        };
        for &id in inputs {
            let r = self.state.resident(id)?.clone();
            if let Some(&p) = r.partial.first() {
                return Err(self.state.partial(Partial::KernelInput, id, &r.layout, p));
            }
            let t = self.state.tensor(id)?;
            o.dims.push(t.dims.clone());
            o.runtime.push(t.runtime.clone());
            o.dtypes.push(t.dtype);
            o.res.push(r);
        }
        Ok(o)
    }

    /// Whether kernel `k` of op `op` may read `inputs` laid out as `in_layouts` and write
    /// `out` as `layout`: the check [`Engine::kernel`] makes once its operands and output
    /// shape are checked, and its error word for word.
    pub fn kernel_legality(
        &self,
        op: &str,
        k: &mnsim_kernels::Kernel,
        (inputs, out): (&[TensorId], TensorId),
        in_layouts: &[&TensorLayout],
        layout: &TensorLayout,
    ) -> Result<mnsim_kernels::Legality, SimError> {
        let legal = if self.opts.explaining {
            let mut names: Vec<&str> = inputs.iter().map(|&t| self.state.name(t)).collect();
            names.push(self.state.name(out));
            mnsim_kernels::check(k, in_layouts, layout, &self.state.machine, &names)
        } else {
            mnsim_kernels::check_unexplained(k, in_layouts, layout, &self.state.machine)
                .map_err(|e| unexplained(e, &self.state.machine))
        };
        legal.map_err(|error| {
            // The kernels' messages name the kernel already (`Binary Add: ...`).
            let context = if error.message.starts_with(op) {
                String::new()
            } else {
                format!("{op}: ")
            };
            SimError::in_kernel(context, error)
        })
    }

    /// Whether [`Engine::kernel`] of op `op` gets past its operands and output shape when
    /// `inputs` are in LM without partial sums: both read the tensors' declared shapes
    /// only.
    pub fn kernel_shapes_ok(
        &self,
        op: &str,
        k: &mnsim_kernels::Kernel,
        inputs: &[TensorId],
        out: TensorId,
    ) -> bool {
        let mut dims = Vec::with_capacity(inputs.len());
        let mut runtime = Vec::with_capacity(inputs.len());
        for &id in inputs {
            let Ok(t) = self.state.tensor(id) else {
                return false;
            };
            dims.push(t.dims.as_slice());
            runtime.push(t.runtime.as_slice());
        }
        (self.kernel_output(op, k, inputs, out, (&dims, &runtime))).is_ok()
    }

    /// The output `out`'s dtype, shape and run-time shape, checked against what `k`
    /// gives on inputs of shapes `dims` and run-time shapes `runtime`.
    fn kernel_output(
        &self,
        op: &str,
        k: &mnsim_kernels::Kernel,
        inputs: &[TensorId],
        out: TensorId,
        (dims, runtime): (&[&[u64]], &[&[u64]]),
    ) -> Result<(DType, Vec<u64>, Vec<u64>), SimError> {
        let shape = |d: &[&[u64]]| {
            mnsim_kernels::output_shape(k, d)
                .map_err(|error| SimError::in_kernel(String::new(), error))
        };
        let (want, want_rt) = (shape(dims)?, shape(runtime)?);
        let o = self.state.tensor(out)?;
        let (out_dtype, out_dims, out_rt) = (o.dtype, o.dims.clone(), o.runtime.clone());
        let names = || {
            let names: Vec<&str> = inputs.iter().map(|&t| self.state.name(t)).collect();
            names.join(", ")
        };
        for (runtime, want, dims) in [(false, want, &out_dims), (true, want_rt, &out_rt)] {
            if *dims != want {
                return Err(ErrorKind::OutputShape {
                    op: op.to_string(),
                    inputs: names(),
                    runtime,
                    want,
                    tensor: o.name.clone(),
                    dims: dims.clone(),
                }
                .into());
            }
        }
        Ok((out_dtype, out_dims, out_rt))
    }
}

/// A kernel's inputs: as LM holds them, their shapes, run-time shapes and dtypes.
struct Operands {
    res: Vec<Resident>,
    dims: Vec<Vec<u64>>,
    runtime: Vec<Vec<u64>>,
    dtypes: Vec<DType>,
}

/// The layout of a kernel's output given no `layout:`: its first input's, when that has
/// the output's shape and dtype.
fn output_layout(
    op: &str,
    (first_input, out): (&str, &str),
    res: &[Resident],
    in_dtypes: &[DType],
    (out_dtype, out_dims): (DType, &[u64]),
) -> Result<TensorLayout, SimError> {
    match res.first() {
        Some(r) if r.layout.logical_shape() == out_dims && in_dtypes[0] == out_dtype => {
            Ok(r.layout.clone())
        }
        first => {
            // The output takes the first input's layout: say which input that is and
            // what differs (Select's is `cond`).
            let (name, dtype, dims) = match first {
                Some(r) => (first_input, in_dtypes[0], r.layout.logical_shape()),
                None => ("", out_dtype, &[][..]),
            };
            Err(ErrorKind::NoOutputLayout {
                op: op.to_string(),
                out: out.to_string(),
                input: name.to_string(),
                dtype,
                dims: dims.to_vec(),
                out_dtype,
                out_dims: out_dims.to_vec(),
            }
            .into())
        }
    }
}

/// The walk of a `Reshape` view between two layouts whose `Time` sub-axes have the same
/// sizes and strides in the same order: the view keeps every element in its cell, its `Time` step
/// too (a reshape keeps the order of the sub-axes), so output slice k is input slice k
/// and the view passes the stream on slice by slice.
/// `None` for any other kernel or layouts (a reshape has no per-axis index map: it is
/// read whole).
fn reshape_view_walk(
    k: &mnsim_kernels::Kernel,
    res: &[Resident],
    layout: &TensorLayout,
) -> Option<(crate::lowering::walk::WalkPlan, bool)> {
    let [input] = res else {
        return None;
    };
    if !matches!(
        mnsim_kernels::view::view_of(k),
        Some(mnsim_kernels::view::View::Reshape)
    ) {
        return None;
    }
    // Each `Time` sub-axis's size and stride (its step's weight in the slice number).
    let steps = |l: &TensorLayout| -> Vec<(u64, u64)> {
        (l.groups().iter().flatten())
            .filter(|s| s.class == mnsim_arch::layout::Class::Time && s.size > 1)
            .map(|s| (s.size, s.stride))
            .collect()
    };
    let (a, b) = (steps(&input.layout), steps(layout));
    let n = a.iter().try_fold(1u64, |p, &(x, _)| p.checked_mul(x))?;
    if a.is_empty() || a != b || n > crate::lowering::walk::MAX_WALK as u64 {
        return None;
    }
    let n = n as u32;
    let each: std::sync::Arc<[u32]> = (0..n).collect();
    let plan = crate::lowering::walk::WalkPlan {
        out: each.clone(),
        inputs: vec![each],
        steps: n as usize,
        out_slices: n,
    };
    Some((plan, false))
}

/// The walk of kernel `k` over `Time` steps, writing `layout` of shape `out_dims` from
/// `res`: operands whose axes have no per-axis index map (Reshape, Concat) are read
/// whole.
fn kernel_walk(
    memo: &mut super::streams::WalkMemo,
    k: &mnsim_kernels::Kernel,
    res: &[Resident],
    layout: &TensorLayout,
    (dims, out_dims): (&[&[u64]], &[u64]),
) -> Option<(crate::lowering::walk::WalkPlan, bool)> {
    let maps = mnsim_kernels::shape::index_map(k, dims, out_dims);
    let reduced = mnsim_kernels::shape::reduced_extents(k, dims).unwrap_or_default();
    let ins: Vec<(&TensorLayout, Vec<mnsim_kernels::shape::AxisSource>)> = match &maps {
        Ok(m) => res
            .iter()
            .zip(m)
            .map(|(r, m)| (&r.layout, m.axes.clone()))
            .collect(),
        Err(_) => Vec::new(),
    };
    super::streams::plan(memo, Some(layout), out_dims, &ins, &reduced).map(|p| (p, false))
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
