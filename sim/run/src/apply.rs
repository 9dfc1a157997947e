//! One op of the program applied to the engine: the one op-application path that the
//! run (`run.rs`), the planner's measurement (`plan/cost.rs`) and the tests share. A
//! transfer moves its tensor; a kernel computes, and a partial output is then completed
//! by tree Reduces, one per level (after every `ReduceAxes` whose axis spans a level, and
//! after any kernel when the scenario asks for `auto_reduce`). The host reference, when
//! given, is told what happened.

use crate::engine::{Engine, ErrorKind, OpSettings, SimError};
use crate::ids::LevelId;
use crate::program::{OpId, OpKind, Program, ReduceOp};
use crate::verify::Reference;
use mnsim_arch::{TensorLayout, XlaLayout};
use mnsim_kernels::elem::Combine;

/// What applying an op did beyond the op itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The tree Reduces that completed a partial output: the index of the first in the
    /// engine's ops, and the level of each, in order.
    pub reduces: Option<(usize, Vec<LevelId>)>,
}

/// The combine of a tree Reduce.
pub fn combine_of(op: ReduceOp) -> Combine {
    op.kind().partials_combine()
}

/// Applies op `id` of `p` to `eng` in `layout` (the op's own layout: the moved
/// tensor's for Load, Relayout and Broadcast, the result's for a kernel; for a Reduce,
/// the layout it was written with, which must be the tensor's own). `auto_reduce`
/// completes any partial kernel output; `reference` follows what was done. A kernel
/// takes `legality` instead of checking its own (the planner's, checked already).
pub fn apply(
    eng: &mut Engine,
    (p, id): (&Program, OpId),
    layout: Option<&TensorLayout>,
    (auto_reduce, legality): (bool, Option<mnsim_kernels::Legality>),
    mut reference: Option<&mut Reference>,
) -> Result<Applied, SimError> {
    let o = &p.ops[id];
    let need = || {
        layout
            .cloned()
            .ok_or_else(|| SimError::from(ErrorKind::NeedsLayout(o.name)))
    };
    // `buffers:` of this op, for the allocation of its result (a stream's slices).
    let s = OpSettings {
        buffers: o.buffers,
        legality,
        algorithm: o.algorithm,
    };
    match &o.kind {
        OpKind::Load { tensor } => {
            eng.op(s).load(*tensor, need()?)?;
        }
        OpKind::Gather {
            table,
            indices,
            out,
        } => {
            eng.op(s).gather(*table, *indices, *out, need()?)?;
            if let Some(r) = reference.as_deref_mut() {
                r.gather(*table, *indices, *out);
            }
        }
        OpKind::Broadcast { tensor, out } => {
            let l = need()?;
            let resident = eng
                .state
                .tensors
                .get(*tensor)
                .is_some_and(|t| t.lm.is_some());
            if resident {
                eng.op(s).relayout("Broadcast", *tensor, l, *out)?;
            } else {
                eng.op(s).load_as("Broadcast", *tensor, l)?;
            }
            if let Some(r) = reference.as_deref_mut() {
                r.copy(*tensor, *out);
            }
        }
        OpKind::Relayout { tensor, out } => {
            eng.op(s).relayout("Relayout", *tensor, need()?, *out)?;
            if let Some(r) = reference.as_deref_mut() {
                r.copy(*tensor, *out);
            }
        }
        OpKind::Reduce {
            tensor,
            level,
            op,
            out,
        } => {
            let state = eng.state.tensors.get(*tensor);
            let resident = state.and_then(|t| t.lm.as_ref()).cloned();
            if let Some(l) = layout
                && resident.as_ref().is_some_and(|r| r.layout != *l)
            {
                return Err(ErrorKind::ReduceKeepsLayout.into());
            }
            let dtype = state.map(|t| t.dtype);
            eng.op(s).reduce(*tensor, *level, combine_of(*op), *out)?;
            if let (Some(r), Some(res), Some(dtype), Some(at)) = (
                reference.as_deref_mut(),
                resident,
                dtype,
                eng.addressable(*level),
            ) {
                r.reduce(&res, dtype, *tensor, at, *op, *out);
            }
        }
        OpKind::Store { tensor } => {
            let t = &p.tensors[*tensor];
            let xla = t
                .shape
                .layout
                .clone()
                .unwrap_or_else(|| XlaLayout::default_for(t.runtime_dims.len()));
            eng.store(*tensor, xla)?;
            if let Some(r) = reference.as_deref_mut()
                && r.is_on()
            {
                let dtype = eng.state.tensors.get(*tensor).map_or(t.dtype, |t| t.dtype);
                r.store((*tensor, &t.name), dtype, eng.state.dram_row_major(*tensor));
            }
        }
        OpKind::Free { tensor } => eng.state.free(*tensor)?,
        OpKind::Kernel {
            kernel,
            inputs,
            out,
        } => {
            eng.op(s)
                .kernel(o.name, kernel, inputs, *out, layout.cloned())?;
            if let (Some(r), Some(t)) = (reference, eng.state.tensors.get(*out)) {
                r.kernel(kernel, inputs, *out, t.dtype);
            }
            // A reduction whose axis spans a level leaves partial sums: finish them with
            // tree Reduces, one per level (shown as ops of their own). A split
            // contraction is finished the same way when the scenario asks for it.
            let comb = kernel.tree_reduce().or(auto_reduce.then_some(Combine::Add));
            if let Some(comb) = comb {
                let levels = eng.partial_levels(*out);
                let first = eng.rec.ops.len();
                eng.reduce_partials(*out, comb, o.algorithm)?;
                return Ok(Applied {
                    reduces: Some((first, levels)),
                });
            }
        }
    }
    Ok(Applied::default())
}
