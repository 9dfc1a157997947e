//! The oneDNN kinds of training graphs and the normalisations, lowered to the kernels
//! crate's training kernels (`Kernel::Eltwise`, `Kernel::Norm`) and a few of the
//! common ones (ReduceAxes, Reshape), each step a generic `Kernel(...)` op:
//! activations with parameters and every elementwise backward kind, PReLU and its
//! backward, GenIndex and the comparisons, Dropout, LogSoftmax, RMSNorm, GroupNorm,
//! BatchNorm (inference, forward training, backward), the softmax and layer-norm
//! backward kinds, BiasAddBackprop, and LayerNorm's statistics outputs.
//! docs/import.md lists what each kind becomes.

use super::graph::{At, GOp};
use super::lower::{Cx, axis, count, name_of, no_broadcast, required};
use mnsim_kernels::{Act, Cmp, Eltwise, Kernel, Norm, NormKind, ReduceKind};

/// Every kind this module imports.
pub const KINDS: [&str; 34] = [
    "LeakyReLU",
    "Mish",
    "HardSigmoid",
    "SoftPlus",
    "PReLU",
    "GenIndex",
    "Greater",
    "GreaterEqual",
    "Less",
    "LessEqual",
    "Equal",
    "NotEqual",
    "Dropout",
    "LogSoftmax",
    "RMSNorm",
    "GroupNorm",
    "BatchNormInference",
    "BatchNormForwardTraining",
    "BatchNormTrainingBackward",
    "LayerNormBackward",
    "SoftMaxBackward",
    "LogSoftmaxBackward",
    "PReLUBackward",
    "BiasAddBackprop",
    "ReLUBackward",
    "GELUBackward",
    "SigmoidBackward",
    "TanhBackward",
    "EluBackward",
    "ClampBackward",
    "SoftPlusBackward",
    "HardSwishBackward",
    "HardSigmoidBackward",
    "AbsBackward",
];

/// The elementwise backward kinds not in [`KINDS`]' first part.
const MORE_BACKWARD: [&str; 4] = [
    "SqrtBackward",
    "MishBackward",
    "LeakyReLUBackward",
    "ExpBackward",
];

/// Whether this module imports `kind`.
pub fn handles(kind: &str) -> bool {
    KINDS.contains(&kind) || MORE_BACKWARD.contains(&kind)
}

/// Every kind, for messages listing what mnsim imports.
pub fn all_kinds() -> Vec<&'static str> {
    KINDS.iter().chain(&MORE_BACKWARD).copied().collect()
}

/// A kernel step.
fn kstep(cx: &mut Cx, op: &GOp, k: Kernel, inputs: Vec<String>, out: String) -> Result<(), At> {
    cx.step(op, k, inputs, out)
}

/// Whether graph tensor `id` is read by an op or is a graph output.
fn wanted(cx: &Cx, id: u64) -> bool {
    cx.g.ops.iter().any(|o| o.inputs.contains(&id)) || cx.g.outputs.contains(&id)
}

/// The channel axis `data_format` names (`NXC`: the last, `NCX`: axis 1).
fn channel(op: &GOp, rank: usize) -> Result<usize, At> {
    let fmt = op.attr_str("data_format")?.unwrap_or_else(|| "NXC".into());
    match fmt.as_str() {
        "NXC" => Ok(rank.saturating_sub(1)),
        "NCX" if rank >= 2 => Ok(1),
        "NCX" => Ok(0),
        other => Err(op.attr_error(
            "data_format",
            format!("unknown data format `{other}` (NXC or NCX)"),
        )),
    }
}

fn eps(op: &GOp) -> Result<f64, At> {
    let e = op.attr_f64("epsilon")?.unwrap_or(1e-5);
    if !(e.is_finite() && e >= 0.0) {
        return Err(op.attr_error(
            "epsilon",
            format!("epsilon {e} must be a finite number ≥ 0"),
        ));
    }
    Ok(e)
}

fn finite(op: &GOp, name: &str, default: Option<f64>) -> Result<f64, At> {
    let v = match default {
        Some(d) => op.attr_f64(name)?.unwrap_or(d),
        None => required(op, name, op.attr_f64(name)?)?,
    };
    if !v.is_finite() {
        return Err(op.attr_error(name, format!("`{name}` must be finite, found {v}")));
    }
    Ok(v)
}

/// The axes from `begin_norm_axis` to the last.
fn norm_axes(cx: &Cx, op: &GOp) -> Result<Vec<usize>, At> {
    let r = cx.rank(op, 0);
    let given = op.attr_i64("begin_norm_axis")?.unwrap_or(-1);
    let begin = axis(op, "begin_norm_axis", given, r)?;
    Ok((begin..r.max(1)).collect())
}

/// Lowers one graph op of a kind [`handles`] accepts.
pub(super) fn lower(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    let k = op.kind.as_str();
    if let Some(act) = forward_act(op)? {
        count(op, &[1], 1)?;
        return kstep(cx, op, Kernel::Eltwise(Eltwise::Act(act)), ins, out);
    }
    if let Some(act) = backward_act(op)? {
        return eltwise_backward(cx, op, act, ins, out);
    }
    if let Some(c) = compare_of(k) {
        count(op, &[2], 1)?;
        no_broadcast(cx, op)?;
        return kstep(cx, op, Kernel::Eltwise(Eltwise::Compare(c)), ins, out);
    }
    match k {
        "PReLU" => prelu(cx, op, ins, out),
        "PReLUBackward" => prelu_backward(cx, op, ins),
        "GenIndex" => {
            count(op, &[1], 1)?;
            let given = required(op, "axis", op.attr_i64("axis")?)?;
            let a = axis(op, "axis", given, cx.rank(op, 0))?;
            kstep(
                cx,
                op,
                Kernel::Eltwise(Eltwise::GenIndex { axis: a }),
                ins,
                out,
            )
        }
        "Dropout" => {
            count(op, &[4], 1)?;
            if let Some(&mask) = op.outputs.get(1)
                && wanted(cx, mask)
            {
                return Err(op.error(format!(
                    "the mask output (tensor id {mask}) is used; only the dropped-out output is supported"
                )));
            }
            kstep(cx, op, Kernel::Eltwise(Eltwise::Dropout), ins, out)
        }
        "LogSoftmax" | "SoftMaxBackward" | "LogSoftmaxBackward" => {
            let kind = match k {
                "LogSoftmax" => NormKind::LogSoftmax,
                "SoftMaxBackward" => NormKind::SoftmaxBackward,
                _ => NormKind::LogSoftmaxBackward,
            };
            count(op, &[if kind == NormKind::LogSoftmax { 1 } else { 2 }], 1)?;
            let given = op.attr_i64("axis")?.unwrap_or(1);
            let a = axis(op, "axis", given, cx.rank(op, 0))?;
            kstep(
                cx,
                op,
                Kernel::Norm(Norm::new(kind, vec![a], 0.0)),
                ins,
                out,
            )
        }
        "RMSNorm" => {
            count(op, &[1, 2], 1)?;
            let axes = norm_axes(cx, op)?;
            let affine = ins.len() == 2;
            if op.attr_bool("use_affine")? == Some(true) && !affine {
                return Err(op.error("`use_affine` needs a gamma input".into()));
            }
            let n = Norm {
                params: if affine { axes.clone() } else { Vec::new() },
                affine,
                ..Norm::new(NormKind::Rms, axes, eps(op)?)
            };
            kstep(cx, op, Kernel::Norm(n), ins, out)
        }
        "GroupNorm" => group_norm(cx, op, ins, out),
        "BatchNormInference" => {
            count(op, &[5], 1)?;
            let c = channel(op, cx.rank(op, 0))?;
            let k = Eltwise::Normalize {
                stats: vec![c],
                params: vec![c],
                eps: eps(op)?,
                affine: true,
            };
            // oneDNN gives (x, gamma, beta, mean, var); the kernel takes the statistics first.
            let order = vec![
                ins[0].clone(),
                ins[3].clone(),
                ins[4].clone(),
                ins[1].clone(),
                ins[2].clone(),
            ];
            kstep(cx, op, Kernel::Eltwise(k), order, out)
        }
        "BatchNormForwardTraining" => bn_forward_training(cx, op, ins),
        "BatchNormTrainingBackward" => bn_backward(cx, op, ins),
        "LayerNormBackward" => ln_backward(cx, op, ins),
        "BiasAddBackprop" => {
            count(op, &[1], 1)?;
            let r = cx.rank(op, 0);
            let c = channel(op, r)?;
            let axes: Vec<usize> = (0..r).filter(|&a| a != c).collect();
            sum(cx, op, axes, &ins[0], out)
        }
        other => Err(op.error(format!("the op kind `{other}` is not imported here"))),
    }
}

/// A ReduceAxes Add of `x` over `axes` (dropped) into `out`.
fn sum(cx: &mut Cx, op: &GOp, axes: Vec<usize>, x: &str, out: String) -> Result<(), At> {
    let k = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes,
        keep_dims: false,
    };
    kstep(cx, op, k, vec![x.to_string()], out)
}

fn compare_of(kind: &str) -> Option<Cmp> {
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
fn forward_act(op: &GOp) -> Result<Option<Act>, At> {
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
fn backward_act(op: &GOp) -> Result<Option<Act>, At> {
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
fn eltwise_backward(
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

fn prelu(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
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
fn prelu_backward(cx: &mut Cx, op: &GOp, ins: Vec<String>) -> Result<(), At> {
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

fn group_norm(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    count(op, &[1, 3], 1)?;
    let r = cx.rank(op, 0);
    if r < 2 {
        return Err(op.error(format!(
            "GroupNorm needs a batch and a channel axis; the input has rank {r}"
        )));
    }
    let c = channel(op, r)?;
    if c != 1 && r > 2 {
        return Err(op.attr_error(
            "data_format",
            "GroupNorm with the channel axis last (NXC) is not supported; NCX is".into(),
        ));
    }
    let groups = required(op, "groups", op.attr_i64("groups")?)?;
    let x = cx.dims(&ins[0]);
    if groups < 1 || !x[c].is_multiple_of(groups as u64) {
        return Err(op.attr_error(
            "groups",
            format!("{groups} groups do not divide the {} channels", x[c]),
        ));
    }
    let affine = op.attr_bool("use_affine")?.unwrap_or(true);
    if affine != (ins.len() == 3) {
        return Err(op.error(format!(
            "`use_affine: {affine}` but the file gives {} input(s) (gamma and beta go with it)",
            ins.len()
        )));
    }
    for &t in &op.outputs[1..] {
        if wanted(cx, t) {
            return Err(op.error(format!(
                "the statistics outputs (tensor id {t}) are used; only the normalised output is supported"
            )));
        }
    }
    // x [N, C, S..] as [N, G, C/G, S..]: the statistics over (C/G, S..) per (N, G), then
    // every element normalised with its group's (the groups may split over levels).
    let g = groups as u64;
    let mut dims5 = vec![x[0], g, x[c] / g];
    dims5.extend_from_slice(&x[2..]);
    let rank5 = dims5.len();
    let x5 = cx.temp_dims(op.inputs[0], "grouped", dims5.clone());
    kstep(
        cx,
        op,
        Kernel::Reshape {
            shape: dims5.clone(),
        },
        vec![ins[0].clone()],
        x5.clone(),
    )?;
    let stats_dims = vec![x[0], g];
    let axes: Vec<usize> = (2..rank5).collect();
    let mean = cx.temp_dims(op.inputs[0], "group_mean", stats_dims.clone());
    let k = Kernel::ReduceAxes {
        op: ReduceKind::Mean,
        axes: axes.clone(),
        keep_dims: false,
    };
    kstep(cx, op, k, vec![x5.clone()], mean.clone())?;
    let var = cx.temp_dims(op.inputs[0], "group_var", stats_dims);
    let k = Kernel::Norm(Norm::new(NormKind::Variance, axes, 0.0));
    kstep(cx, op, k, vec![x5.clone()], var.clone())?;
    let mut nins = vec![x5, mean, var];
    if affine {
        for (j, suffix) in [(1usize, "gamma_grouped"), (2, "beta_grouped")] {
            let t = cx.temp_dims(op.inputs[j], suffix, vec![g, x[c] / g]);
            let k = Kernel::Reshape {
                shape: vec![g, x[c] / g],
            };
            kstep(cx, op, k, vec![ins[j].clone()], t.clone())?;
            nins.push(t);
        }
    }
    let y5 = cx.temp_dims(op.outputs[0], "grouped", dims5);
    let k = Eltwise::Normalize {
        stats: vec![0, 1],
        params: vec![1, 2],
        eps: eps(op)?,
        affine,
    };
    kstep(cx, op, Kernel::Eltwise(k), nins, y5.clone())?;
    kstep(cx, op, Kernel::Reshape { shape: x.clone() }, vec![y5], out)
}

/// `(src, mean, var[, gamma, beta]) → (dst, running_mean, running_var, batch_mean,
/// batch_var)`: the batch statistics over every axis but the channel, the output
/// normalised with them, the running statistics `momentum · given + (1 − momentum) ·
/// batch` (momentum 0.5 when absent, as oneDNN's).
fn bn_forward_training(cx: &mut Cx, op: &GOp, ins: Vec<String>) -> Result<(), At> {
    count(op, &[3, 5], 5)?;
    let r = cx.rank(op, 0);
    let c = channel(op, r)?;
    let axes: Vec<usize> = (0..r).filter(|&a| a != c).collect();
    let w = finite(op, "momentum", Some(0.5))?;
    let o: Vec<String> = op.outputs.iter().map(|&t| name_of(t)).collect();
    let mean = Kernel::ReduceAxes {
        op: ReduceKind::Mean,
        axes: axes.clone(),
        keep_dims: false,
    };
    kstep(cx, op, mean, vec![ins[0].clone()], o[3].clone())?;
    let var = Norm::new(NormKind::Variance, axes, 0.0);
    kstep(
        cx,
        op,
        Kernel::Norm(var),
        vec![ins[0].clone()],
        o[4].clone(),
    )?;
    let affine = ins.len() == 5;
    let mut bn_ins = vec![ins[0].clone(), o[3].clone(), o[4].clone()];
    if affine {
        bn_ins.extend([ins[3].clone(), ins[4].clone()]);
    }
    let bn = Eltwise::Normalize {
        stats: vec![c],
        params: vec![c],
        eps: eps(op)?,
        affine,
    };
    kstep(cx, op, Kernel::Eltwise(bn), bn_ins, o[0].clone())?;
    for (given, batch, running) in [(&ins[1], &o[3], &o[1]), (&ins[2], &o[4], &o[2])] {
        let k = Kernel::Eltwise(Eltwise::Mix { w });
        kstep(
            cx,
            op,
            k,
            vec![given.clone(), batch.clone()],
            running.clone(),
        )?;
    }
    Ok(())
}

/// `(src, diff_dst, mean, var[, gamma]) → (diff_src[, diff_gamma, diff_beta])`: the
/// channel sums `Σ dy` (diff_beta) and `Σ dy·x̂` (diff_gamma) first, then diff_src
/// elementwise from them.
fn bn_backward(cx: &mut Cx, op: &GOp, ins: Vec<String>) -> Result<(), At> {
    count(op, &[4, 5], 1)?;
    let r = cx.rank(op, 0);
    let c = channel(op, r)?;
    let axes: Vec<usize> = (0..r).filter(|&a| a != c).collect();
    let e = eps(op)?;
    let out = |i: usize, cx: &mut Cx, suffix: &str| match op.outputs.get(i) {
        Some(&t) => name_of(t),
        None => cx.temp(op.inputs[2], suffix),
    };
    let a = out(2, cx, "sum_dy");
    sum(cx, op, axes.clone(), &ins[1], a.clone())?;
    let b = out(1, cx, "sum_dy_xhat");
    let gg = Norm {
        params: vec![c],
        ..Norm::new(NormKind::GammaGrad, axes, e)
    };
    kstep(cx, op, Kernel::Norm(gg), ins[..4].to_vec(), b.clone())?;
    let affine = ins.len() == 5;
    let mut bins = ins[..4].to_vec();
    bins.extend([a, b]);
    if affine {
        bins.push(ins[4].clone());
    }
    let k = Eltwise::BatchNormBackward {
        axis: c,
        eps: e,
        affine,
    };
    kstep(cx, op, Kernel::Eltwise(k), bins, name_of(op.outputs[0]))
}

/// `(src, diff_dst, mean, var[, gamma, beta]) → (diff_src[, diff_gamma, diff_beta])`.
fn ln_backward(cx: &mut Cx, op: &GOp, ins: Vec<String>) -> Result<(), At> {
    count(op, &[4, 5, 6], 1)?;
    let axes = norm_axes(cx, op)?;
    let affine = op.attr_bool("use_affine")?.unwrap_or(true);
    if affine && ins.len() < 5 {
        return Err(op.error(format!(
            "`use_affine` needs a gamma input; the file gives {} input(s)",
            ins.len()
        )));
    }
    let ins = if affine { ins } else { ins[..4].to_vec() };
    norm_backward(cx, op, ins, axes.clone(), axes)
}

/// The source's gradient, and gamma's and beta's when the op has those outputs.
fn norm_backward(
    cx: &mut Cx,
    op: &GOp,
    ins: Vec<String>,
    axes: Vec<usize>,
    params: Vec<usize>,
) -> Result<(), At> {
    let affine = ins.len() >= 5;
    let e = eps(op)?;
    let dx = Norm {
        params: params.clone(),
        affine,
        ..Norm::new(NormKind::Backward, axes.clone(), e)
    };
    let o: Vec<String> = op.outputs.iter().map(|&t| name_of(t)).collect();
    kstep(
        cx,
        op,
        Kernel::Norm(dx),
        ins[..ins.len().min(5)].to_vec(),
        o[0].clone(),
    )?;
    if let Some(dg) = o.get(1) {
        let k = Norm {
            params: params.clone(),
            ..Norm::new(NormKind::GammaGrad, axes, e)
        };
        kstep(cx, op, Kernel::Norm(k), ins[..4].to_vec(), dg.clone())?;
    }
    if let Some(db) = o.get(2) {
        let r = cx.rank(op, 0);
        let others: Vec<usize> = (0..r).filter(|a| !params.contains(a)).collect();
        sum(cx, op, others, &ins[1], db.clone())?;
    }
    Ok(())
}

/// LayerNorm's statistics outputs (`keep_stats`): the mean and the population variance
/// over the normalised `axes`, each where it is read or is a graph output.
pub(super) fn layer_norm_stats(cx: &mut Cx, op: &GOp, axes: Vec<usize>) -> Result<(), At> {
    let x = name_of(op.inputs[0]);
    if let Some(&m) = op.outputs.get(1)
        && wanted(cx, m)
    {
        let k = Kernel::ReduceAxes {
            op: ReduceKind::Mean,
            axes: axes.clone(),
            keep_dims: false,
        };
        kstep(cx, op, k, vec![x.clone()], name_of(m))?;
    }
    if let Some(&v) = op.outputs.get(2)
        && wanted(cx, v)
    {
        let k = Kernel::Norm(Norm::new(NormKind::Variance, axes, 0.0));
        kstep(cx, op, k, vec![x], name_of(v))?;
    }
    Ok(())
}
