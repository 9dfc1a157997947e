//! Checks of one op's arguments against its tensors: axis numbers in range, a
//! permutation a permutation, numbers usable, a kernel's operands of one dtype family.

use super::ctx::Ctx;
use crate::program::Tensor;
use crate::scenario::{KernelOp, Op, Shorthand};
use miette::Report;
use std::collections::BTreeMap;

/// Numeric fields of ops are usable numbers, and a kernel's operands share one dtype
/// (mixed dtypes are rejected; see docs/kernels.md).
pub(super) fn check_numbers(
    cx: &Ctx,
    i: usize,
    what: &str,
    op: &Op,
    tensors: &BTreeMap<String, Tensor>,
) -> Result<(), Report> {
    let Some(k) = op.kernel() else {
        return Ok(());
    };
    // A LayerNorm shorthand's `eps:`, or the generic op's `kernel` (its LayerNorm or
    // training kernel's eps).
    let eps = match (&k.kernel, k.written) {
        (mnsim_kernels::Kernel::LayerNorm { eps, .. }, Some(_)) => Some((*eps, "eps")),
        (mnsim_kernels::Kernel::LayerNorm { eps, .. }, None) => Some((*eps, "kernel")),
        (kernel, None) => mnsim_kernels::training_eps(kernel).map(|e| (e, "kernel")),
        (_, Some(_)) => None,
    };
    if let Some((eps, field)) = eps
        && !(eps.is_finite() && eps >= 0.0)
    {
        return Err(cx.err(
            cx.op_span(i, field),
            &format!("{what}: eps must be a finite number ≥ 0, got {eps}"),
            "this value",
        ));
    }
    if k.inputs.len() != k.kernel.arity() {
        return Err(cx.err(
            cx.op_span(i, "inputs"),
            &format!(
                "{what}: {} takes {} input(s), `inputs` lists {}",
                k.kernel.name(),
                k.kernel.arity(),
                k.inputs.len()
            ),
            "here",
        ));
    }
    // Mixed precision (docs/kernels.md): integers and floats meet only through an
    // explicit Cast, Quantize or Dequantize.
    if k.written == Some(Shorthand::Cast) {
        return Ok(());
    }
    let dtype = |name: &str| tensors.get(name).map(|t| t.dtype);
    let Some(ins) = k
        .inputs
        .iter()
        .map(|n| dtype(n))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(());
    };
    let Some(d_out) = dtype(&k.out) else {
        return Ok(());
    };
    let Some((r, j)) = mnsim_kernels::precision::mixed_families(&k.kernel, &ins, d_out) else {
        return Ok(());
    };
    let operand = |j: usize| match k.inputs.get(j) {
        Some(name) => (k.input_field(j), name.as_str()),
        None => ("out", k.out.as_str()),
    };
    let ((_, first), (field, name)) = (operand(r), operand(j));
    let (d0, d) = (ins[r], dtype(name).unwrap_or(d_out));
    Err(cx.err(
        cx.op_span(i, field),
        &format!(
            "{what}: `{name}` is {d} but `{first}` is {d0}: a kernel mixes float types (and a \
             MatMul's integer operands accumulate into a wider result), but integers and \
             floats meet only through an explicit Cast, Quantize or Dequantize; mnsim never \
             converts implicitly between them"
        ),
        "another dtype",
    ))
}

/// Axis numbers are within the input's rank; a permutation is a permutation.
pub(super) fn check_axes(
    cx: &Ctx,
    i: usize,
    what: &str,
    op: &Op,
    tensors: &BTreeMap<String, Tensor>,
) -> Result<(), Report> {
    use mnsim_kernels::Kernel;
    let Some(KernelOp {
        kernel,
        inputs,
        written,
        ..
    }) = op.kernel()
    else {
        return Ok(());
    };
    // The field that holds the axes: the named op's own, or the generic op's `kernel`.
    let named = |f: &'static str| if written.is_some() { f } else { "kernel" };
    let (axes, field, perm) = match kernel {
        Kernel::ReduceAxes { axes, .. } => (axes.clone(), named("axes"), false),
        Kernel::Softmax { axis } | Kernel::LayerNorm { axis, .. } => {
            (vec![*axis], named("axis"), false)
        }
        Kernel::Transpose { perm } => (perm.clone(), named("perm"), true),
        Kernel::BiasAdd { axis } | Kernel::Concat { axis, .. } => {
            (vec![*axis], named("axis"), false)
        }
        Kernel::Quant(mnsim_kernels::Quant {
            params:
                mnsim_kernels::QuantParams::Static {
                    axis: Some(axis), ..
                },
            ..
        }) => (vec![*axis], named("axis"), false),
        Kernel::Quant(_) => return Ok(()),
        // Axes of `x` (and of `update`, of the same rank).
        Kernel::DynamicSlice { dynamic, .. } | Kernel::DynamicUpdateSlice { dynamic } => {
            (dynamic.clone(), named("kernel"), false)
        }
        Kernel::Unary(_)
        | Kernel::Binary(_)
        | Kernel::MatMul
        | Kernel::BatchMatMul
        | Kernel::Select
        | Kernel::Clamp { .. }
        | Kernel::Elu { .. }
        | Kernel::GeneralMatMul { .. }
        | Kernel::Reshape { .. }
        | Kernel::Slice { .. }
        | Kernel::Expand { .. }
        | Kernel::Pad { .. }
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_) => return Ok(()),
        Kernel::Eltwise(_) | Kernel::Norm(_) => match mnsim_kernels::training_axes(kernel) {
            Some(axes) => (axes, named("kernel"), false),
            None => return Ok(()),
        },
    };
    let Some(input) = inputs.first() else {
        return Ok(());
    };
    let rank = tensors[input.as_str()].dims_at_bound.len();
    let mut seen = vec![false; rank];
    for &a in &axes {
        let problem = if a >= rank {
            Some(format!(
                "axis {a} is out of range for `{input}` of rank {rank}"
            ))
        } else if seen[a] {
            Some(format!("axis {a} is repeated"))
        } else {
            seen[a] = true;
            None
        };
        if let Some(p) = problem {
            return Err(cx.err(cx.op_span(i, field), &format!("{what}: {p}"), "here"));
        }
    }
    if perm && axes.len() != rank {
        return Err(cx.err(
            cx.op_span(i, field),
            &format!(
                "{what}: `perm` must list each of the {rank} axes of `{input}` once, it has {}",
                axes.len()
            ),
            "not a permutation",
        ));
    }
    Ok(())
}
