//! The activations of the training graphs: the forward ones with parameters, every
//! elementwise `*Backward` kind, the comparisons, and PReLU and its backward (the slope
//! reshaped to broadcast along the channel axis, its gradient summed over the axes it
//! broadcasts along).

use super::{channel, finite, kstep};
use crate::import::graph::{At, GOp};
use crate::import::lower::{Cx, count, name_of};
use mnsim_kernels::{Act, Cmp, Eltwise, Kernel, ReduceKind};

pub(super) fn compare_of(kind: &str) -> Option<Cmp> {
    Some(match kind {
        "Greater" => Cmp::Greater,
        "GreaterEqual" => Cmp::GreaterEqual,
        "Less" => Cmp::Less,
        "LessEqual" => Cmp::LessEqual,
        "Equal" => Cmp::Equal,
        "NotEqual" => Cmp::NotEqual,
        _ => return None,
    })
}

/// The forward activations with parameters.
pub(super) fn forward_act(op: &GOp) -> Result<Option<Act>, At> {
    Ok(Some(match op.kind.as_str() {
        "LeakyReLU" => Act::LeakyRelu {
            alpha: finite(op, "alpha", None)?,
        },
        "Mish" => Act::Mish,
        "HardSigmoid" => Act::HardSigmoid {
            alpha: finite(op, "alpha", Some(1.0 / 6.0))?,
            beta: finite(op, "beta", Some(0.5))?,
        },
        "SoftPlus" => Act::SoftPlus {
            beta: softplus_beta(op)?,
        },
        _ => return Ok(None),
    }))
}

fn softplus_beta(op: &GOp) -> Result<f64, At> {
    let b = finite(op, "beta", Some(1.0))?;
    if b == 0.0 {
        return Err(op.attr_error("beta", "SoftPlus needs a nonzero beta".into()));
    }
    Ok(b)
}

/// The activation whose backward an `*Backward` kind is.
pub(super) fn backward_act(op: &GOp) -> Result<Option<Act>, At> {
    Ok(Some(match op.kind.as_str() {
        "ReLUBackward" => Act::Relu,
        "GELUBackward" => {
            let mode = op.attr_str("mode")?.unwrap_or_else(|| "gelu_erf".into());
            match mode.as_str() {
                "gelu_erf" => Act::Gelu { erf: true },
                "gelu_tanh" => Act::Gelu { erf: false },
                _ => {
                    return Err(
                        op.attr_error("mode", "unknown GELU mode (gelu_erf or gelu_tanh)".into())
                    );
                }
            }
        }
        "SigmoidBackward" => Act::Sigmoid,
        "TanhBackward" => Act::Tanh,
        "EluBackward" => Act::Elu {
            alpha: finite(op, "alpha", None)?,
        },
        "ClampBackward" => {
            let (min, max) = (finite(op, "min", None)?, finite(op, "max", None)?);
            if min > max {
                return Err(op.attr_error("min", format!("min {min} is above max {max}")));
            }
            Act::Clamp { min, max }
        }
        "SoftPlusBackward" => Act::SoftPlus {
            beta: softplus_beta(op)?,
        },
        "HardSwishBackward" => Act::HardSwish,
        "HardSigmoidBackward" => Act::HardSigmoid {
            alpha: finite(op, "alpha", Some(1.0 / 6.0))?,
            beta: finite(op, "beta", Some(0.5))?,
        },
        "AbsBackward" => Act::Abs,
        "SqrtBackward" => Act::Sqrt,
        "MishBackward" => Act::Mish,
        "LeakyReLUBackward" => Act::LeakyRelu {
            alpha: finite(op, "alpha", None)?,
        },
        "ExpBackward" => Act::Exp,
        _ => return Ok(None),
    }))
}

/// `(src or dst, diff_dst) → diff_src`; `use_dst` (default true where the result gives
/// the derivative) says the first input is the forward's result.
pub(super) fn eltwise_backward(
    cx: &mut Cx,
    op: &GOp,
    act: Act,
    ins: Vec<String>,
    out: String,
) -> Result<(), At> {
    count(op, &[2], 1)?;
    let use_dst = op.attr_bool("use_dst")?.unwrap_or(act.has_dst_form());
    if use_dst && !act.has_dst_form() {
        return Err(op.attr_error(
            "use_dst",
            format!(
                "{} has no derivative from its result: give the source with `use_dst: false`",
                op.kind
            ),
        ));
    }
    kstep(
        cx,
        op,
        Kernel::Eltwise(Eltwise::Backward { act, use_dst }),
        ins,
        out,
    )
}

/// The slope as PReLU reads it: numpy-broadcast, or a vector along the channel axis
/// (`per_channel_broadcast`), reshaped to broadcast there.
fn slope_of(cx: &mut Cx, op: &GOp, slope: &str) -> Result<String, At> {
    let (x, s) = (cx.dims(&cx_name(op, 0)), cx.dims(slope));
    let per_channel = op.attr_bool("per_channel_broadcast")?.unwrap_or(true);
    let c = channel(op, x.len())?;
    if per_channel && s.len() == 1 && x.len() >= 2 && s[0] == x[c] && s[0] != 1 && c + 1 != x.len()
    {
        let mut dims = vec![s[0]];
        dims.extend(std::iter::repeat_n(1, x.len() - c - 1));
        let t = cx.temp_dims(op.inputs[1], "slope", dims.clone());
        let k = Kernel::Reshape { shape: dims };
        kstep(cx, op, k, vec![slope.to_string()], t.clone())?;
        return Ok(t);
    }
    Ok(slope.to_string())
}

fn cx_name(op: &GOp, i: usize) -> String {
    name_of(op.inputs[i])
}

pub(super) fn prelu(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    count(op, &[2], 1)?;
    let slope = slope_of(cx, op, &ins[1])?;
    kstep(
        cx,
        op,
        Kernel::Eltwise(Eltwise::PRelu),
        vec![ins[0].clone(), slope],
        out,
    )
}

/// `(src, slope, diff_dst) → (diff_src, diff_slope)`: the slope's gradient is summed
/// over the axes it broadcasts along.
pub(super) fn prelu_backward(cx: &mut Cx, op: &GOp, ins: Vec<String>) -> Result<(), At> {
    count(op, &[3], 2)?;
    let slope = slope_of(cx, op, &ins[1])?;
    let (dx, ds) = (name_of(op.outputs[0]), name_of(op.outputs[1]));
    let k = Kernel::Eltwise(Eltwise::PReluBackward);
    kstep(
        cx,
        op,
        k,
        vec![ins[0].clone(), slope.clone(), ins[2].clone()],
        dx,
    )?;
    let (x, s, want) = (cx.dims(&ins[0]), cx.dims(&slope), cx.dims(&ds));
    let pieces = vec![ins[0].clone(), ins[2].clone()];
    if s == x && want == x {
        return kstep(cx, op, Kernel::Eltwise(Eltwise::PReluSlope), pieces, ds);
    }
    let per = cx.temp(op.inputs[0], "dslope");
    kstep(
        cx,
        op,
        Kernel::Eltwise(Eltwise::PReluSlope),
        pieces,
        per.clone(),
    )?;
    // The axes the slope broadcasts along (aligned to the trailing axes).
    let off = x.len() - s.len().min(x.len());
    let axes: Vec<usize> = (0..x.len())
        .filter(|&a| a < off || (s[a - off] == 1 && x[a] != 1))
        .collect();
    let mut kept: Vec<u64> = x.clone();
    for &a in &axes {
        kept[a] = 1;
    }
    let k = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes,
        keep_dims: true,
    };
    if kept == want {
        return kstep(cx, op, k, vec![per], ds);
    }
    let summed = cx.temp_dims(op.inputs[0], "dslope_sum", kept);
    kstep(cx, op, k, vec![per], summed.clone())?;
    kstep(cx, op, Kernel::Reshape { shape: want }, vec![summed], ds)
}
