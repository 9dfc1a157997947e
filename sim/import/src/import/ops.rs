//! Each oneDNN Graph op kind lowered to scenario kernel ops: the kind tables, then one
//! function per family of kinds (docs/import.md lists the kinds and what they become).

use super::graph::{At, GOp};
use super::lower::{Cx, axis, count, name_of, no_broadcast, required};
use mnsim_kernels::{BinaryOp, Kernel, ReduceKind, UnaryOp};

fn unary_of(kind: &str) -> Option<UnaryOp> {
    Some(match kind {
        "ReLU" => UnaryOp::Relu,
        "GELU" => UnaryOp::Gelu,
        "Exp" => UnaryOp::Exp,
        "Log" => UnaryOp::Log,
        "Sqrt" => UnaryOp::Sqrt,
        "Square" => UnaryOp::Square,
        "Reciprocal" => UnaryOp::Recip,
        "Abs" => UnaryOp::Abs,
        "Round" => UnaryOp::Round,
        "Tanh" => UnaryOp::Tanh,
        "Sigmoid" => UnaryOp::Sigmoid,
        "HardSwish" => UnaryOp::HardSwish,
        "Reorder" | "TypeCast" => UnaryOp::Copy,
        _ => return None,
    })
}

fn binary_of(kind: &str) -> Option<BinaryOp> {
    Some(match kind {
        "Add" => BinaryOp::Add,
        "Subtract" => BinaryOp::Sub,
        "Multiply" => BinaryOp::Mul,
        "Divide" => BinaryOp::Div,
        "Maximum" => BinaryOp::Max,
        "Minimum" => BinaryOp::Min,
        _ => None?,
    })
}

fn reduce_of(kind: &str) -> Option<ReduceKind> {
    Some(match kind {
        "ReduceSum" => ReduceKind::Add,
        "ReduceMean" => ReduceKind::Mean,
        "ReduceMax" => ReduceKind::Max,
        "ReduceMin" => ReduceKind::Min,
        "ReduceProd" => ReduceKind::Prod,
        "ReduceL1" => ReduceKind::L1,
        "ReduceL2" => ReduceKind::L2,
        _ => return None,
    })
}

/// Every op kind the import turns into kernels (docs/import.md).
pub const KINDS: [&str; 50] = [
    "MatMul",
    "Add",
    "Subtract",
    "Multiply",
    "Divide",
    "Maximum",
    "Minimum",
    "Select",
    "SoftMax",
    "LayerNorm",
    "GELU",
    "ReLU",
    "Sigmoid",
    "Tanh",
    "Elu",
    "Exp",
    "Log",
    "Sqrt",
    "Square",
    "Reciprocal",
    "Abs",
    "Round",
    "Clamp",
    "HardSwish",
    "BiasAdd",
    "StaticTranspose",
    "StaticReshape",
    "Reorder",
    "TypeCast",
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "Concat",
    "End",
    "Convolution",
    "ConvolutionBackwardData",
    "ConvolutionBackwardWeights",
    "ConvTranspose",
    "ConvTransposeBackwardData",
    "ConvTransposeBackwardWeights",
    "MaxPool",
    "AvgPool",
    "MaxPoolBackward",
    "AvgPoolBackward",
    "Interpolate",
    "InterpolateBackward",
];

/// A `Binary` step `out = a op b`.
fn binary(cx: &mut Cx, op: &GOp, b: BinaryOp, x: &str, y: &str, out: &str) -> Result<(), At> {
    let inputs = vec![x.to_string(), y.to_string()];
    cx.step(op, Kernel::Binary(b), inputs, out.to_string())
}

/// Lowers one graph op to its kernel steps.
pub(super) fn lower_op(cx: &mut Cx, op: &GOp) -> Result<(), At> {
    let k = op.kind.as_str();
    cx.origin = Some(if op.name.is_empty() {
        op.label()
    } else {
        format!("{} `{}`", op.label(), op.name)
    });
    let ins: Vec<String> = op.inputs.iter().map(|&t| name_of(t)).collect();
    for &t in op.inputs.iter().chain(&op.outputs) {
        cx.declare_graph(t);
    }
    let out = op.outputs.first().map(|&t| name_of(t)).unwrap_or_default();
    if let Some(u) = unary_of(k) {
        return unary(cx, op, u, ins, out);
    }
    if let Some(b) = binary_of(k) {
        count(op, &[2], 1)?;
        no_broadcast(cx, op)?;
        return binary(cx, op, b, &ins[0], &ins[1], &out);
    }
    if let Some(r) = reduce_of(k) {
        return reduce(cx, op, r, ins, out);
    }
    if let Some(r) = super::conv::lower(cx, op, &ins, &out) {
        return r;
    }
    match k {
        "MatMul" => matmul(cx, op, ins, out),
        "LayerNorm" => layer_norm(cx, op, ins, out),
        "Select" => {
            count(op, &[3], 1)?;
            no_broadcast(cx, op)?;
            cx.step(op, Kernel::Select, ins, out)
        }
        "SoftMax" => {
            count(op, &[1], 1)?;
            let a = axis(
                op,
                "axis",
                op.attr_i64("axis")?.unwrap_or(1),
                cx.rank(op, 0),
            )?;
            cx.step(op, Kernel::Softmax { axis: a }, ins, out)
        }
        "Elu" => {
            count(op, &[1], 1)?;
            let alpha = required(op, "alpha", op.attr_f64("alpha")?)?;
            cx.step(op, Kernel::Elu { alpha }, ins, out)
        }
        "Clamp" => {
            count(op, &[1], 1)?;
            let min = required(op, "min", op.attr_f64("min")?)?;
            let max = required(op, "max", op.attr_f64("max")?)?;
            if min > max {
                return Err(op.attr_error("min", format!("min {min} is above max {max}")));
            }
            cx.step(op, Kernel::Clamp { min, max }, ins, out)
        }
        "BiasAdd" => bias_add(cx, op, ins, out),
        "StaticTranspose" => {
            count(op, &[1], 1)?;
            let order = required(op, "order", op.attr_i64s("order")?)?;
            let mut perm = Vec::new();
            for a in order {
                perm.push(axis(op, "order", a, cx.rank(op, 0))?);
            }
            cx.step(op, Kernel::Transpose { perm }, ins, out)
        }
        "StaticReshape" => reshape(cx, op, ins, out),
        "Concat" => {
            if op.inputs.is_empty() {
                return Err(op.error("needs at least one input".into()));
            }
            count(op, &[op.inputs.len()], 1)?;
            let given = required(op, "axis", op.attr_i64("axis")?)?;
            let a = axis(op, "axis", given, cx.rank(op, 0))?;
            let n = ins.len();
            cx.step(op, Kernel::Concat { axis: a, inputs: n }, ins, out)
        }
        "End" => Ok(()),
        k if super::train::handles(k) => super::train::lower(cx, op, ins, out),
        k if super::quant::KINDS.contains(&k) => super::quant::lower(cx, op, ins, out),
        other => Err(op.error(format!(
            "unknown or unsupported op kind `{other}`: mnsim imports {}",
            imported()
        ))),
    }
}

/// Every kind the import takes, for messages.
fn imported() -> String {
    let mut all: Vec<&str> = KINDS.to_vec();
    all.extend(super::train::all_kinds());
    all.join(", ")
}

/// Elementwise one-input kinds; `TypeCast` becomes an explicit `Cast`.
fn unary(cx: &mut Cx, op: &GOp, u: UnaryOp, ins: Vec<String>, out: String) -> Result<(), At> {
    let k = op.kind.as_str();
    count(op, &[1], 1)?;
    if k == "Reorder" && cx.tensor(op.inputs[0]).dtype != cx.tensor(op.outputs[0]).dtype {
        return Err(op.error("a Reorder keeps the data type; use TypeCast to change it".into()));
    }
    if k == "GELU"
        && op
            .attr_str("mode")?
            .as_deref()
            .is_some_and(|m| m != "gelu_erf" && m != "gelu_tanh")
    {
        return Err(op.attr_error("mode", "unknown GELU mode (gelu_erf or gelu_tanh)".into()));
    }
    if k == "TypeCast" {
        cx.cast(op, ins, out)
    } else {
        cx.step(op, Kernel::Unary(u), ins, out)
    }
}

/// The `Reduce*` kinds, over the `axes` attribute.
fn reduce(cx: &mut Cx, op: &GOp, r: ReduceKind, ins: Vec<String>, out: String) -> Result<(), At> {
    count(op, &[1], 1)?;
    let axes = op.attr_i64s("axes")?.ok_or_else(|| {
        op.error(
            "the attribute `axes` is required (axes given as a second input are not supported)"
                .into(),
        )
    })?;
    let mut ax = Vec::new();
    for a in axes {
        ax.push(axis(op, "axes", a, cx.rank(op, 0))?);
    }
    let keep = op.attr_bool("keep_dims")?.unwrap_or(false);
    let kernel = Kernel::ReduceAxes {
        op: r,
        axes: ax,
        keep_dims: keep,
    };
    cx.step(op, kernel, ins, out)
}

/// `MatMul`, with `transpose_a/b`, batch broadcasting and an optional bias (a third
/// input, added after).
fn matmul(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    count(op, &[2, 3], 1)?;
    let ta = op.attr_bool("transpose_a")?.unwrap_or(false);
    let tb = op.attr_bool("transpose_b")?.unwrap_or(false);
    if cx.rank(op, 0) == 0 || cx.rank(op, 1) == 0 {
        return Err(
            op.error("operands of rank 0 are not supported (MatMul needs rank 1 or more)".into())
        );
    }
    // Rank-1 operands (numpy): reshaped to a row `[1,K]` (`a`) or a column `[K,1]` (`b`),
    // and the product reshaped back without that axis.
    let mut ins = ins;
    let vec_a = cx.rank(op, 0) == 1;
    let vec_b = cx.rank(op, 1) == 1;
    for (i, is_vec) in [(0usize, vec_a), (1, vec_b)] {
        if is_vec {
            let k = cx.dims(&ins[i])[0];
            let dims = if i == 0 { vec![1, k] } else { vec![k, 1] };
            let name = cx.temp_dims(op.inputs[i], "mat", dims.clone());
            let src = ins[i].clone();
            cx.step(op, Kernel::Reshape { shape: dims }, vec![src], name.clone())?;
            ins[i] = name;
        }
    }
    let (a, b) = (cx.dims(&ins[0]), cx.dims(&ins[1]));
    let product = if vec_a || vec_b {
        let g = mnsim_kernels::gemm(ta, tb, &a, &b).map_err(|e| op.error(e.message))?;
        Some(cx.temp_dims(op.outputs[0], "prod", g.out))
    } else {
        None
    };
    let target = if ins.len() == 3 || product.is_some() {
        product
            .clone()
            .unwrap_or_else(|| cx.temp(op.outputs[0], "mm"))
    } else {
        out.clone()
    };
    let kernel = super::lower::contraction(ta, tb, &a, &b);
    cx.step(op, kernel, ins[..2].to_vec(), target.clone())?;
    let mut result = target;
    if product.is_some() {
        let shape = cx.dims(&out);
        let dest = if ins.len() == 3 {
            cx.temp(op.outputs[0], "mm")
        } else {
            out.clone()
        };
        cx.step(op, Kernel::Reshape { shape }, vec![result], dest.clone())?;
        result = dest;
    }
    if ins.len() == 3 {
        binary(cx, op, BinaryOp::Add, &result, &ins[2], &out)?;
    }
    Ok(())
}

/// `LayerNorm` over the last axis; with `use_affine`, a multiply by gamma and an add of
/// beta after.
fn layer_norm(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    count(op, &[1, 2, 3], 1)?;
    let r = cx.rank(op, 0);
    let given = op.attr_i64("begin_norm_axis")?.unwrap_or(-1);
    let begin = axis(op, "begin_norm_axis", given, r)?;
    if begin + 1 != r {
        return Err(op.attr_error(
            "begin_norm_axis",
            format!(
                "normalising over several axes (from axis {begin} of {r}) is not supported; only the last axis"
            ),
        ));
    }
    let eps = op.attr_f64("epsilon")?.unwrap_or(1e-5);
    let affine = op.attr_bool("use_affine")?.unwrap_or(true);
    super::train::layer_norm_stats(cx, op, vec![begin])?;
    if affine && ins.len() != 3 {
        return Err(op.error(format!(
            "`use_affine` needs gamma and beta inputs; the file gives {} input(s)",
            ins.len()
        )));
    }
    let norm = if affine {
        cx.temp(op.outputs[0], "norm")
    } else {
        out.clone()
    };
    let kernel = Kernel::LayerNorm { axis: begin, eps };
    cx.step(op, kernel, vec![ins[0].clone()], norm.clone())?;
    if affine {
        let scaled = cx.temp(op.outputs[0], "scaled");
        binary(cx, op, BinaryOp::Mul, &norm, &ins[1], &scaled)?;
        binary(cx, op, BinaryOp::Add, &scaled, &ins[2], &out)?;
    }
    Ok(())
}

/// `BiasAdd` along the channel axis that `data_format` names.
fn bias_add(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    count(op, &[2], 1)?;
    let r = cx.rank(op, 0);
    let fmt = op.attr_str("data_format")?.unwrap_or_else(|| "NXC".into());
    let a = match fmt.as_str() {
        "NXC" => r.saturating_sub(1),
        "NCX" if r >= 2 => 1,
        "NCX" => 0,
        other => {
            return Err(op.attr_error(
                "data_format",
                format!("unknown data format `{other}` (NXC or NCX)"),
            ));
        }
    };
    cx.step(op, Kernel::BiasAdd { axis: a }, ins, out)
}

/// `StaticReshape`: the `shape` attribute (with `-1` and `special_zero`) must give the
/// output's declared shape.
fn reshape(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    count(op, &[1], 1)?;
    let shape = cx.dims(&out);
    let given = required(op, "shape", op.attr_i64s("shape")?)?;
    let zero = op.attr_bool("special_zero")?.unwrap_or(false);
    let src = &cx.tensor(op.inputs[0]).shape;
    let ok = given.len() == cx.tensor(op.outputs[0]).shape.len()
        && given.iter().enumerate().all(|(i, &d)| {
            d == -1 || (d == 0 && zero && src.get(i) == Some(&shape[i])) || d as u64 == shape[i]
        });
    if !ok {
        return Err(op.attr_error(
            "shape",
            format!("the shape attribute {given:?} does not give the output shape {shape:?}"),
        ));
    }
    cx.step(op, Kernel::Reshape { shape }, ins, out)
}
