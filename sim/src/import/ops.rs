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

fn reduce_of(kind: &str) -> Option<(ReduceKind, &'static str)> {
    Some(match kind {
        "ReduceSum" => (ReduceKind::Add, "Add"),
        "ReduceMean" => (ReduceKind::Mean, "Mean"),
        "ReduceMax" => (ReduceKind::Max, "Max"),
        "ReduceMin" => (ReduceKind::Min, "Min"),
        "ReduceProd" => (ReduceKind::Prod, "Prod"),
        "ReduceL1" => (ReduceKind::L1, "L1"),
        "ReduceL2" => (ReduceKind::L2, "L2"),
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

/// `"name"`, as the scenario writes a tensor name.
fn q(s: &str) -> String {
    format!("\"{s}\"")
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", s.join(", "))
}

/// An op in scenario syntax, without its `layout` field and closing parenthesis:
/// `Name(key: value, ...`.
fn call(name: &str, args: &[(&str, String)]) -> String {
    let a: Vec<String> = args.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{name}({}", a.join(", "))
}

/// A `Binary` step `out = a op b`.
fn binary(cx: &mut Cx, op: &GOp, b: BinaryOp, x: &str, y: &str, out: &str) -> Result<(), At> {
    let text = call(
        "Binary",
        &[
            ("op", b.name().to_string()),
            ("a", q(x)),
            ("b", q(y)),
            ("out", q(out)),
        ],
    );
    let inputs = vec![x.to_string(), y.to_string()];
    cx.step(op, text, Kernel::Binary(b), inputs, out.to_string())
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
    if let Some((r, name)) = reduce_of(k) {
        return reduce(cx, op, (r, name), ins, out);
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
            let text = call(
                "Select",
                &[
                    ("cond", q(&ins[0])),
                    ("a", q(&ins[1])),
                    ("b", q(&ins[2])),
                    ("out", q(&out)),
                ],
            );
            cx.step(op, text, Kernel::Select, ins, out)
        }
        "SoftMax" => {
            count(op, &[1], 1)?;
            let a = axis(
                op,
                "axis",
                op.attr_i64("axis")?.unwrap_or(1),
                cx.rank(op, 0),
            )?;
            let text = call(
                "Softmax",
                &[
                    ("input", q(&ins[0])),
                    ("axis", a.to_string()),
                    ("out", q(&out)),
                ],
            );
            cx.step(op, text, Kernel::Softmax { axis: a }, ins, out)
        }
        "Elu" => {
            count(op, &[1], 1)?;
            let alpha = required(op, "alpha", op.attr_f64("alpha")?)?;
            let text = call(
                "Elu",
                &[
                    ("input", q(&ins[0])),
                    ("alpha", format!("{alpha:?}")),
                    ("out", q(&out)),
                ],
            );
            cx.step(op, text, Kernel::Elu { alpha }, ins, out)
        }
        "Clamp" => {
            count(op, &[1], 1)?;
            let min = required(op, "min", op.attr_f64("min")?)?;
            let max = required(op, "max", op.attr_f64("max")?)?;
            if min > max {
                return Err(op.attr_error("min", format!("min {min} is above max {max}")));
            }
            let text = call(
                "Clamp",
                &[
                    ("input", q(&ins[0])),
                    ("min", format!("{min:?}")),
                    ("max", format!("{max:?}")),
                    ("out", q(&out)),
                ],
            );
            cx.step(op, text, Kernel::Clamp { min, max }, ins, out)
        }
        "BiasAdd" => bias_add(cx, op, ins, out),
        "StaticTranspose" => {
            count(op, &[1], 1)?;
            let order = required(op, "order", op.attr_i64s("order")?)?;
            let mut perm = Vec::new();
            for a in order {
                perm.push(axis(op, "order", a, cx.rank(op, 0))?);
            }
            let text = call(
                "Transpose",
                &[
                    ("input", q(&ins[0])),
                    ("perm", list(&perm)),
                    ("out", q(&out)),
                ],
            );
            cx.step(op, text, Kernel::Transpose { perm }, ins, out)
        }
        "StaticReshape" => reshape(cx, op, ins, out),
        "Concat" => {
            if op.inputs.is_empty() {
                return Err(op.error("needs at least one input".into()));
            }
            count(op, &[op.inputs.len()], 1)?;
            let given = required(op, "axis", op.attr_i64("axis")?)?;
            let a = axis(op, "axis", given, cx.rank(op, 0))?;
            let names: Vec<String> = ins.iter().map(|n| q(n)).collect();
            let text = call(
                "Concat",
                &[
                    ("inputs", format!("[{}]", names.join(", "))),
                    ("axis", a.to_string()),
                    ("out", q(&out)),
                ],
            );
            let n = ins.len();
            cx.step(op, text, Kernel::Concat { axis: a, inputs: n }, ins, out)
        }
        "End" => Ok(()),
        k if super::train::handles(k) => super::train::lower(cx, op, ins, out),
        "Quantize" | "Dequantize" | "DynamicQuantize" | "DynamicDequantize" => {
            Err(op.error(format!(
                "the op kind `{k}` is not supported: mnsim imports {}",
                imported()
            )))
        }
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
    let text = if k == "TypeCast" {
        call("Cast", &[("input", q(&ins[0])), ("out", q(&out))])
    } else {
        call(
            "Unary",
            &[
                ("op", u.name().to_string()),
                ("input", q(&ins[0])),
                ("out", q(&out)),
            ],
        )
    };
    cx.step(op, text, Kernel::Unary(u), ins, out)
}

/// The `Reduce*` kinds, over the `axes` attribute.
fn reduce(
    cx: &mut Cx,
    op: &GOp,
    (r, name): (ReduceKind, &str),
    ins: Vec<String>,
    out: String,
) -> Result<(), At> {
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
    let text = call(
        "ReduceAxes",
        &[
            ("op", name.to_string()),
            ("input", q(&ins[0])),
            ("axes", list(&ax)),
            ("keep_dims", keep.to_string()),
            ("out", q(&out)),
        ],
    );
    let kernel = Kernel::ReduceAxes {
        op: r,
        axes: ax,
        keep_dims: keep,
    };
    cx.step(op, text, kernel, ins, out)
}

/// `MatMul`, with `transpose_a/b`, batch broadcasting and an optional bias (a third
/// input, added after).
fn matmul(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    count(op, &[2, 3], 1)?;
    let ta = op.attr_bool("transpose_a")?.unwrap_or(false);
    let tb = op.attr_bool("transpose_b")?.unwrap_or(false);
    let (a, b) = (cx.dims(&ins[0]), cx.dims(&ins[1]));
    if cx.rank(op, 0) < 2 || cx.rank(op, 1) < 2 {
        return Err(op.error(
            "operands of rank 0 or 1 are not supported (MatMul needs rank 2 or more)".into(),
        ));
    }
    let target = if ins.len() == 3 {
        cx.temp(op.outputs[0], "mm")
    } else {
        out.clone()
    };
    let operands = [("a", q(&ins[0])), ("b", q(&ins[1]))];
    let (text, kernel) = if !ta && !tb && a.len() == 2 && b.len() == 2 {
        let args = [
            operands[0].clone(),
            operands[1].clone(),
            ("out", q(&target)),
        ];
        (call("MatMul", &args), Kernel::MatMul)
    } else if !ta && !tb && a.len() == b.len() && a[..a.len() - 2] == b[..b.len() - 2] {
        let args = [
            operands[0].clone(),
            operands[1].clone(),
            ("out", q(&target)),
        ];
        (call("BatchMatMul", &args), Kernel::BatchMatMul)
    } else {
        let args = [
            operands[0].clone(),
            operands[1].clone(),
            ("transpose_a", ta.to_string()),
            ("transpose_b", tb.to_string()),
            ("out", q(&target)),
        ];
        let kernel = Kernel::GeneralMatMul {
            transpose_a: ta,
            transpose_b: tb,
        };
        (call("GeneralMatMul", &args), kernel)
    };
    cx.step(op, text, kernel, ins[..2].to_vec(), target.clone())?;
    if ins.len() == 3 {
        binary(cx, op, BinaryOp::Add, &target, &ins[2], &out)?;
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
    let text = call(
        "LayerNorm",
        &[
            ("input", q(&ins[0])),
            ("axis", begin.to_string()),
            ("eps", format!("{eps:?}")),
            ("out", q(&norm)),
        ],
    );
    let kernel = Kernel::LayerNorm { axis: begin, eps };
    cx.step(op, text, kernel, vec![ins[0].clone()], norm.clone())?;
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
    let text = call(
        "BiasAdd",
        &[
            ("input", q(&ins[0])),
            ("bias", q(&ins[1])),
            ("axis", a.to_string()),
            ("out", q(&out)),
        ],
    );
    cx.step(op, text, Kernel::BiasAdd { axis: a }, ins, out)
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
    let text = call(
        "Reshape",
        &[
            ("input", q(&ins[0])),
            ("shape", list(&shape)),
            ("out", q(&out)),
        ],
    );
    cx.step(op, text, Kernel::Reshape { shape }, ins, out)
}
