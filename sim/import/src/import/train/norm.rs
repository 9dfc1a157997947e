//! The normalisations of the training graphs: GroupNorm (through a grouped reshape),
//! BatchNorm's forward training and backward, LayerNorm's backward and its statistics
//! outputs, each as the kernels crate's `Norm` and `Eltwise` kernels.

use super::{channel, eps, finite, kstep, norm_axes, sum, wanted};
use crate::import::graph::{At, GOp};
use crate::import::lower::{Cx, count, name_of, required};
use mnsim_kernels::{Eltwise, Kernel, Norm, NormKind, ReduceKind};

pub(super) fn group_norm(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
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
pub(super) fn bn_forward_training(cx: &mut Cx, op: &GOp, ins: Vec<String>) -> Result<(), At> {
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
pub(super) fn bn_backward(cx: &mut Cx, op: &GOp, ins: Vec<String>) -> Result<(), At> {
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
pub(super) fn ln_backward(cx: &mut Cx, op: &GOp, ins: Vec<String>) -> Result<(), At> {
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
pub(in crate::import) fn layer_norm_stats(
    cx: &mut Cx,
    op: &GOp,
    axes: Vec<usize>,
) -> Result<(), At> {
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
