//! The oneDNN kinds of training graphs and the normalisations, lowered to the kernels
//! crate's training kernels (`Kernel::Eltwise`, `Kernel::Norm`) and a few of the
//! common ones (ReduceAxes, Reshape), each step a generic `Kernel(...)` op:
//! activations with parameters and every elementwise backward kind, PReLU and its
//! backward, GenIndex and the comparisons, Dropout, LogSoftmax, RMSNorm, GroupNorm,
//! BatchNorm (inference, forward training, backward), the softmax and layer-norm
//! backward kinds, BiasAddBackprop, and LayerNorm's statistics outputs.
//! docs/import.md lists what each kind becomes. This module holds the kinds and the
//! dispatch; `act` the activations and PReLU, `norm` the normalisations.

mod act;
mod norm;

use super::graph::{At, GOp};
use super::lower::{Cx, axis, count, no_broadcast, required};
use act::{backward_act, compare_of, eltwise_backward, forward_act, prelu, prelu_backward};
use mnsim_kernels::{Eltwise, Kernel, Norm, NormKind, ReduceKind};
pub(super) use norm::layer_norm_stats;
use norm::{bn_backward, bn_forward_training, group_norm, ln_backward};

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
