//! Checks of one op's arguments against its tensors: axis numbers in range, a
//! permutation a permutation, numbers usable, a kernel's operands of one dtype family.

use super::ctx::Ctx;
use super::resolved::ResolvedTensor;
use crate::scenario::Op;
use miette::Report;
use mnsim_arch::DType;
use std::collections::BTreeMap;

/// Numeric fields of ops are usable numbers, and a kernel's operands share one dtype
/// (mixed dtypes are rejected; see docs/kernels.md).
pub(super) fn check_numbers(
    cx: &Ctx,
    i: usize,
    what: &str,
    op: &Op,
    tensors: &BTreeMap<String, ResolvedTensor>,
) -> Result<(), Report> {
    let eps = match op {
        Op::LayerNorm { eps, .. } => Some((*eps, "eps")),
        Op::Kernel {
            kernel: mnsim_kernels::Kernel::LayerNorm { eps, .. },
            ..
        } => Some((*eps, "kernel")),
        Op::Kernel { kernel, .. } => mnsim_kernels::training_eps(kernel).map(|e| (e, "kernel")),
        _ => None,
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
    if let Op::Kernel { kernel, inputs, .. } = op
        && inputs.len() != kernel.arity()
    {
        return Err(cx.err(
            cx.op_span(i, "inputs"),
            &format!(
                "{what}: {} takes {} input(s), `inputs` lists {}",
                kernel.name(),
                kernel.arity(),
                inputs.len()
            ),
            "here",
        ));
    }
    let Some((kernel, inputs, out)) = op.kernel() else {
        return Ok(());
    };
    let matrix = match dtype_rule(op, &kernel) {
        DtypeRule::Own => return Ok(()),
        DtypeRule::OneFamily => false,
        DtypeRule::Matrix => true,
    };
    // Select's condition is a mask, true where nonzero, of any dtype.
    let mask = usize::from(matches!(kernel, mnsim_kernels::Kernel::Select));
    let operands: Vec<(&str, &str)> = (inputs.iter().enumerate().skip(mask))
        .map(|(k, &name)| (input_field(op, k), name))
        .chain([("out", out)])
        .collect();
    let Some(&(_, first)) = operands.first() else {
        return Ok(());
    };
    let Some(d0) = tensors.get(first).map(|t| t.dtype) else {
        return Ok(());
    };
    // Mixed precision (docs/kernels.md): float operands and results mix freely (the
    // kernel computes in the widest and rounds once into the result); a matrix kernel's
    // integer operands may accumulate into an integer or a float result; integers and
    // floats otherwise meet only through an explicit Cast, Quantize or Dequantize.
    let family = |d: DType| {
        if d.is_float() {
            0
        } else if d == DType::Pred {
            2
        } else {
            1
        }
    };
    for &(field, name) in &operands[1..] {
        if let Some(t) = tensors.get(name)
            && family(t.dtype) != family(d0)
            && !(matrix && field == "out" && family(d0) == 1 && t.dtype.is_float())
        {
            return Err(cx.err(
                cx.op_span(i, field),
                &format!(
                    "{what}: `{name}` is {} but `{first}` is {d0}: a kernel mixes float types (and a \
                     MatMul's integer operands accumulate into a wider result), but integers and \
                     floats meet only through an explicit Cast, Quantize or Dequantize; mnsim never \
                     converts implicitly between them",
                    t.dtype
                ),
                "another dtype",
            ));
        }
    }
    Ok(())
}

/// How a kernel's operands and result may differ in dtype (docs/kernels.md, mixed
/// precision).
enum DtypeRule {
    /// One family: floats mix freely, integers with integers.
    OneFamily,
    /// A matrix kernel: integer operands may also accumulate into a float result.
    Matrix,
    /// Operands and result differ by design: a conversion, or an eltwise kernel that
    /// compares (a `pred` result), counts indices (`s32`) or draws a dropout mask from an
    /// integer seed.
    Own,
}

fn dtype_rule(op: &Op, kernel: &mnsim_kernels::Kernel) -> DtypeRule {
    use mnsim_kernels::Kernel;
    if matches!(op, Op::Cast { .. }) {
        return DtypeRule::Own;
    }
    match kernel {
        Kernel::MatMul | Kernel::BatchMatMul | Kernel::GeneralMatMul { .. } | Kernel::Conv(_) => {
            DtypeRule::Matrix
        }
        Kernel::Quant(_) | Kernel::Eltwise(_) => DtypeRule::Own,
        Kernel::Unary(_)
        | Kernel::Binary(_)
        | Kernel::ReduceAxes { .. }
        | Kernel::Softmax { .. }
        | Kernel::LayerNorm { .. }
        | Kernel::Transpose { .. }
        | Kernel::Select
        | Kernel::Clamp { .. }
        | Kernel::Elu { .. }
        | Kernel::BiasAdd { .. }
        | Kernel::Reshape { .. }
        | Kernel::Concat { .. }
        | Kernel::Slice { .. }
        | Kernel::Pool(_)
        | Kernel::Interp(_)
        | Kernel::Norm(_) => DtypeRule::OneFamily,
    }
}

/// The field of a kernel op that names its input `k`, for an error to point at.
fn input_field(op: &Op, k: usize) -> &'static str {
    let of = |names: &[&'static str]| names.get(k).copied().unwrap_or("inputs");
    match op {
        Op::Binary { .. }
        | Op::MatMul { .. }
        | Op::BatchMatMul { .. }
        | Op::GeneralMatMul { .. } => of(&["a", "b"]),
        Op::Select { .. } => of(&["cond", "a", "b"]),
        Op::BiasAdd { .. } => of(&["input", "bias"]),
        Op::Unary { .. }
        | Op::ReduceAxes { .. }
        | Op::Softmax { .. }
        | Op::LayerNorm { .. }
        | Op::Transpose { .. }
        | Op::Clamp { .. }
        | Op::Elu { .. }
        | Op::Reshape { .. }
        | Op::Cast { .. } => "input",
        Op::Concat { .. }
        | Op::Kernel { .. }
        | Op::Load { .. }
        | Op::Store { .. }
        | Op::Relayout { .. }
        | Op::Broadcast { .. }
        | Op::Reduce { .. }
        | Op::Free { .. } => "inputs",
    }
}

/// Axis numbers are within the input's rank; a permutation is a permutation.
pub(super) fn check_axes(
    cx: &Ctx,
    i: usize,
    what: &str,
    op: &Op,
    tensors: &BTreeMap<String, ResolvedTensor>,
) -> Result<(), Report> {
    use mnsim_kernels::Kernel;
    let Some((kernel, inputs, _)) = op.kernel() else {
        return Ok(());
    };
    // The field that holds the axes: the named op's own, or the generic op's `kernel`.
    let named = |f: &'static str| {
        if matches!(op, Op::Kernel { .. }) {
            "kernel"
        } else {
            f
        }
    };
    let (axes, field, perm) = match &kernel {
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
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_) => return Ok(()),
        Kernel::Eltwise(_) | Kernel::Norm(_) => match mnsim_kernels::training_axes(&kernel) {
            Some(axes) => (axes, named("kernel"), false),
            None => return Ok(()),
        },
    };
    let Some(&input) = inputs.first() else {
        return Ok(());
    };
    let rank = tensors[input].dims_at_bound.len();
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
