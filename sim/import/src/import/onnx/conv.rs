//! Convolutional nodes: `Conv` (the `Conv` kernel, NCHW data and OIHW weights as
//! PyTorch writes them, a bias by `BiasAdd`), `BatchNormalization` in inference
//! (`Eltwise Normalize` with the given statistics), `MaxPool`, `AveragePool` and the
//! global pools (a mean or max over the spatial axes).

use super::lower::Bad;
use super::lower::{Ox, Val};
use super::ops::{Attrs, req};
use mnsim_kernels::{Conv, ConvPass, Eltwise, Kernel, Pool, PoolKind, ReduceKind, WeightsFormat};

/// Per spatial axis: an attribute of `d` entries, or `default` everywhere.
fn per_axis(a: &Attrs, name: &str, d: usize, default: u64) -> Result<Vec<u64>, Bad> {
    match a.ints(name)? {
        None => Ok(vec![default; d]),
        Some(v) if v.len() == d => v
            .iter()
            .map(|&x| {
                u64::try_from(x)
                    .ok()
                    .filter(|&x| x >= 1)
                    .ok_or_else(|| Bad(format!("`{name}` has {x}; at least 1 expected")))
            })
            .collect(),
        Some(v) => Err(format!(
            "`{name}` has {} entries; the data has {d} spatial axes",
            v.len()
        )
        .into()),
    }
}

/// The padding before and after each spatial axis: `pads`, or what `auto_pad` gives.
fn pads(
    a: &Attrs,
    input: &[u64],
    window: &[u64],
    strides: &[u64],
    dilations: &[u64],
) -> Result<(Vec<u64>, Vec<u64>), Bad> {
    let d = input.len();
    match a.string("auto_pad")?.as_deref().unwrap_or("NOTSET") {
        "NOTSET" => match a.ints("pads")? {
            None => Ok((vec![0; d], vec![0; d])),
            Some(p) if p.len() == 2 * d && p.iter().all(|&x| x >= 0) => Ok((
                p[..d].iter().map(|&x| x as u64).collect(),
                p[d..].iter().map(|&x| x as u64).collect(),
            )),
            Some(p) => Err(format!("`pads` {p:?}: {} non-negative entries expected", 2 * d).into()),
        },
        "VALID" => Ok((vec![0; d], vec![0; d])),
        mode @ ("SAME_UPPER" | "SAME_LOWER") => {
            let (mut b, mut e) = (Vec::new(), Vec::new());
            for i in 0..d {
                let out = input[i].div_ceil(strides[i]);
                let span = (window[i] - 1) * dilations[i] + 1;
                let total = ((out - 1) * strides[i] + span).saturating_sub(input[i]);
                let (lo, hi) = (total / 2, total - total / 2);
                if mode == "SAME_UPPER" {
                    b.push(lo);
                    e.push(hi);
                } else {
                    b.push(hi);
                    e.push(lo);
                }
            }
            Ok((b, e))
        }
        other => Err(format!("unknown `auto_pad` `{other}`").into()),
    }
}

pub(super) fn conv(ox: &mut Ox, base: &str, a: &Attrs, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let x = ox.tensor_of(req(ins, 0, "Conv")?, "the data")?;
    let w = ox.tensor_of(req(ins, 1, "Conv")?, "the weights")?;
    if x.dims.len() < 3 || w.dims.len() != x.dims.len() {
        return Err(format!(
            "Conv of data {:?} and weights {:?}: NCX data and OIX weights of one rank expected",
            x.dims, w.dims
        )
        .into());
    }
    let d = x.dims.len() - 2;
    let window = w.dims[2..].to_vec();
    if let Some(k) = a.ints("kernel_shape")?
        && k.iter().map(|&v| v as u64).collect::<Vec<_>>() != window
    {
        return Err(
            format!("`kernel_shape` {k:?} differs from the weights' window {window:?}").into(),
        );
    }
    let strides = per_axis(a, "strides", d, 1)?;
    let dilations = per_axis(a, "dilations", d, 1)?;
    let (pads_begin, pads_end) = pads(a, &x.dims[2..], &window, &strides, &dilations)?;
    let groups = u64::try_from(a.int_or("group", 1)?)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or("`group` must be at least 1")?;
    let k = Kernel::Conv(Conv {
        pass: ConvPass::Forward,
        strides,
        dilations,
        pads_begin,
        pads_end,
        groups,
        channels_last: false,
        weights: WeightsFormat::OIX,
        shape: Vec::new(),
    });
    let bias = ins.get(2).and_then(Option::as_ref);
    let name = if bias.is_some() {
        format!("{base}_conv")
    } else {
        base.to_string()
    };
    let y = ox.apply(&name, k, &[&x, &w], x.dtype)?;
    match bias {
        Some(b) => {
            let b = ox.tensor_of(b, "the bias")?;
            Ok(Val::T(ox.apply(
                base,
                Kernel::BiasAdd { axis: 1 },
                &[&y, &b],
                y.dtype,
            )?))
        }
        None => Ok(Val::T(y)),
    }
}

pub(super) fn batch_norm(
    ox: &mut Ox,
    base: &str,
    a: &Attrs,
    ins: &[Option<Val>],
    outputs: usize,
) -> Result<Val, Bad> {
    if a.int_or("training_mode", 0)? != 0 || outputs > 1 {
        return Err("BatchNormalization in training mode (running statistics as outputs) is not supported; export the model in eval mode".into());
    }
    let mut t = Vec::new();
    // ONNX gives (x, scale, B, mean, var); the kernel takes the statistics first.
    for (i, what) in [
        (0, "the data"),
        (3, "the mean"),
        (4, "the variance"),
        (1, "the scale"),
        (2, "the bias"),
    ] {
        t.push(ox.tensor_of(req(ins, i, "BatchNormalization")?, what)?);
    }
    if t[0].dims.len() < 2 {
        return Err(format!(
            "BatchNormalization of {:?}: the channels are axis 1",
            t[0].dims
        )
        .into());
    }
    let k = Kernel::Eltwise(Eltwise::Normalize {
        stats: vec![1],
        params: vec![1],
        eps: a.float_or("epsilon", 1e-5)?,
        affine: true,
    });
    let refs: Vec<&_> = t.iter().collect();
    Ok(Val::T(ox.apply(base, k, &refs, t[0].dtype)?))
}

pub(super) fn pool(
    ox: &mut Ox,
    base: &str,
    op: &str,
    a: &Attrs,
    ins: &[Option<Val>],
    outputs: usize,
) -> Result<Val, Bad> {
    if outputs > 1 {
        return Err("MaxPool's indices output is not supported".into());
    }
    let x = ox.tensor_of(req(ins, 0, op)?, "the data")?;
    if x.dims.len() < 3 {
        return Err(format!("{op} of {:?}: NCX data expected", x.dims).into());
    }
    let d = x.dims.len() - 2;
    let kernel: Vec<u64> = match a.ints("kernel_shape")? {
        Some(k) if k.len() == d && k.iter().all(|&v| v >= 1) => {
            k.iter().map(|&v| v as u64).collect()
        }
        _ => return Err(format!("`kernel_shape` must give {d} sizes of at least 1").into()),
    };
    let strides = per_axis(a, "strides", d, 1)?;
    let dilations = per_axis(a, "dilations", d, 1)?;
    let (pads_begin, pads_end) = pads(a, &x.dims[2..], &kernel, &strides, &dilations)?;
    let kind = if op == "MaxPool" {
        PoolKind::Max
    } else {
        PoolKind::Avg {
            exclude_pad: a.int_or("count_include_pad", 0)? == 0,
        }
    };
    let p = Pool {
        kind,
        backward: false,
        kernel,
        strides,
        dilations,
        pads_begin,
        pads_end: pads_end.iter().map(|&p| p as i64).collect(),
        ceil: a.int_or("ceil_mode", 0)? != 0,
        channels_last: false,
        shape: Vec::new(),
    };
    Ok(Val::T(ox.apply(base, Kernel::Pool(p), &[&x], x.dtype)?))
}

pub(super) fn global_pool(
    ox: &mut Ox,
    base: &str,
    op: &str,
    ins: &[Option<Val>],
) -> Result<Val, Bad> {
    let x = ox.tensor_of(req(ins, 0, op)?, "the data")?;
    if x.dims.len() < 3 {
        return Err(format!("{op} of {:?}: NCX data expected", x.dims).into());
    }
    let k = Kernel::ReduceAxes {
        op: if op == "GlobalMaxPool" {
            ReduceKind::Max
        } else {
            ReduceKind::Mean
        },
        axes: (2..x.dims.len()).collect(),
        keep_dims: true,
    };
    Ok(Val::T(ox.apply(base, k, &[&x], x.dtype)?))
}
