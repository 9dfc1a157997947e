//! The convolution and window kinds of oneDNN Graph → `mnsim_kernels` kernels
//! (docs/import.md): Convolution, ConvTranspose and their backward kinds become one
//! [`Conv`] pass each (a bias input a `BiasAdd` after); MaxPool, AvgPool, Interpolate
//! and their backward kinds become [`Pool`] and [`Interp`].

use super::graph::{At, GOp};
use super::lower::{Cx, count};
use mnsim_kernels::{
    Conv, ConvPass, CoordMode, Interp, InterpMode, Kernel, Pool, PoolKind, WeightsFormat,
};

/// Lowers `op` if its kind is a convolution, pooling or interpolation; `None` otherwise.
pub(super) fn lower(cx: &mut Cx, op: &GOp, ins: &[String], out: &str) -> Option<Result<(), At>> {
    let k = op.kind.as_str();
    Some(match k {
        "Convolution"
        | "ConvolutionBackwardData"
        | "ConvolutionBackwardWeights"
        | "ConvTranspose"
        | "ConvTransposeBackwardData"
        | "ConvTransposeBackwardWeights" => convolution(cx, op, ins, out),
        "MaxPool" | "AvgPool" | "MaxPoolBackward" | "AvgPoolBackward" => pool(cx, op, ins, out),
        "Interpolate" | "InterpolateBackward" => interpolate(cx, op, ins, out),
        _ => return None,
    })
}

/// A kernel step in scenario syntax.
fn step(cx: &mut Cx, op: &GOp, kernel: Kernel, ins: Vec<String>, out: &str) -> Result<(), At> {
    cx.step(op, kernel, ins, out.to_string())
}

/// A list of non-negative integers of `d` entries (`output_padding` may carry more, all
/// zero beyond `d`).
fn uints(
    op: &GOp,
    name: &str,
    v: Option<Vec<i64>>,
    d: usize,
    default: u64,
) -> Result<Vec<u64>, At> {
    let Some(v) = v else {
        return Ok(vec![default; d]);
    };
    let extra_zero = name == "output_padding" && v.len() > d && v[d..].iter().all(|&x| x == 0);
    if v.len() != d && !extra_zero {
        return Err(op.attr_error(
            name,
            format!(
                "`{name}` has {} entries; the data has {d} spatial axes",
                v.len()
            ),
        ));
    }
    v[..d]
        .iter()
        .map(|&x| {
            u64::try_from(x)
                .map_err(|_| op.attr_error(name, format!("`{name}` has a negative entry {x}")))
        })
        .collect()
}

fn required_uints(op: &GOp, name: &str, d: usize) -> Result<Vec<u64>, At> {
    let v = op.attr_i64s(name)?;
    if v.is_none() {
        return Err(op.error(format!("the attribute `{name}` is required")));
    }
    uints(op, name, v, d, 0)
}

/// `data_format`: NXC (default) or NCX → channels last.
fn channels_last(op: &GOp) -> Result<bool, At> {
    match op.attr_str("data_format")?.as_deref().unwrap_or("NXC") {
        "NXC" => Ok(true),
        "NCX" => Ok(false),
        other => Err(op.attr_error(
            "data_format",
            format!("unknown data format `{other}` (NXC or NCX)"),
        )),
    }
}

/// The spatial sizes of a data tensor.
fn spatial(dims: &[u64], cl: bool) -> Vec<u64> {
    let d = dims.len().saturating_sub(2);
    let f = if cl { 1 } else { 2 };
    dims.get(f..f + d).map_or_else(Vec::new, <[u64]>::to_vec)
}

/// Pads from `auto_pad` (`None`, `VALID`, `SAME_UPPER`, `SAME_LOWER`) for an input of
/// spatial sizes `input`, or the given ones.
#[allow(clippy::too_many_arguments)]
fn auto_pads(
    op: &GOp,
    input: &[u64],
    window: &[u64],
    strides: &[u64],
    dilations: &[u64],
    pads: (Vec<u64>, Vec<u64>),
) -> Result<(Vec<u64>, Vec<u64>), At> {
    let mode = op.attr_str("auto_pad")?.unwrap_or_else(|| "None".into());
    let same = |upper: bool| {
        let mut b = Vec::new();
        let mut e = Vec::new();
        for i in 0..input.len() {
            let s = strides[i].max(1);
            let span = (window[i].max(1) - 1) * dilations[i] + 1;
            let total =
                ((input[i].div_ceil(s)).saturating_sub(1) * s + span).saturating_sub(input[i]);
            let (small, big) = (total / 2, total - total / 2);
            if upper {
                b.push(small);
                e.push(big);
            } else {
                b.push(big);
                e.push(small);
            }
        }
        (b, e)
    };
    match mode.as_str() {
        "None" | "none" | "NONE" | "NOTSET" | "EXPLICIT" => Ok(pads),
        "VALID" | "valid" => Ok((vec![0; input.len()], vec![0; input.len()])),
        "SAME_UPPER" | "same_upper" => Ok(same(true)),
        "SAME_LOWER" | "same_lower" => Ok(same(false)),
        other => Err(op.attr_error(
            "auto_pad",
            format!("unknown `auto_pad` `{other}` (None, VALID, SAME_UPPER or SAME_LOWER)"),
        )),
    }
}

/// `weights_format` of a convolution (`OIX`, `XIO`; default `XIO`) or of a transposed
/// one (`OIX`, `XIO`, `IOX`, `XOI` naming the transposed op's own channels; default
/// `XOI`), in the forward convolution's terms.
fn weights_format(op: &GOp, transposed: bool) -> Result<WeightsFormat, At> {
    let given = op
        .attr_str("weights_format")?
        .unwrap_or_else(|| if transposed { "XOI" } else { "XIO" }.into());
    let f = match (given.as_str(), transposed) {
        ("OIX", false) | ("IOX", true) => WeightsFormat::OIX,
        ("XIO", false) | ("XOI", true) => WeightsFormat::XIO,
        ("OIX", true) => WeightsFormat::IOX,
        ("XIO", true) => WeightsFormat::XOI,
        (other, _) => {
            return Err(op.attr_error(
                "weights_format",
                format!(
                    "unknown weights format `{other}` ({})",
                    if transposed {
                        "OIX, XIO, IOX or XOI"
                    } else {
                        "OIX or XIO"
                    }
                ),
            ));
        }
    };
    Ok(f)
}

/// Every convolution kind: the pass, which tensors are the forward convolution's `x`
/// and `y`, and the window from the weights.
fn convolution(cx: &mut Cx, op: &GOp, ins: &[String], out: &str) -> Result<(), At> {
    let kind = op.kind.as_str();
    let transposed = kind.starts_with("ConvTranspose");
    let pass = match kind {
        "Convolution" | "ConvTransposeBackwardData" => ConvPass::Forward,
        "ConvTranspose" | "ConvolutionBackwardData" => ConvPass::BackwardData,
        _ => ConvPass::BackwardWeights,
    };
    let bias = matches!(kind, "Convolution" | "ConvTranspose");
    count(op, &[2, 3], 1)?;
    let cl = channels_last(op)?;
    let weights = weights_format(op, transposed)?;
    let groups = match op.attr_i64("groups")?.unwrap_or(1) {
        g if g >= 1 => g as u64,
        g => return Err(op.attr_error("groups", format!("`groups` must be at least 1, got {g}"))),
    };
    let out_dims = cx.dims(out);
    let in0 = cx.dims(&ins[0]);
    if in0.len() < 3 {
        return Err(op.error(format!(
            "the data input has shape {in0:?}; a convolution needs batch, channels and 1 to 3 spatial axes"
        )));
    }
    let d = in0.len() - 2;
    // The forward convolution's data tensors: x (its input) and y (its output).
    let (x_dims, y_dims) = match kind {
        "Convolution" | "ConvTransposeBackwardData" => (in0.clone(), out_dims.clone()),
        "ConvTranspose" | "ConvolutionBackwardData" => (out_dims.clone(), in0.clone()),
        "ConvolutionBackwardWeights" => (in0.clone(), cx.dims(&ins[1])),
        _ => (cx.dims(&ins[1]), in0.clone()),
    };
    let w_dims = match pass {
        ConvPass::BackwardWeights => out_dims.clone(),
        _ => cx.dims(&ins[1]),
    };
    if x_dims.len() != d + 2 || y_dims.len() != d + 2 {
        return Err(op.error(format!(
            "the data tensors {x_dims:?} and {y_dims:?} must have the same rank (batch, channels and the spatial axes)"
        )));
    }
    let strides = required_uints(op, "strides", d)?;
    let dilations = uints(op, "dilations", op.attr_i64s("dilations")?, d, 1)?;
    let pads = (
        uints(op, "pads_begin", op.attr_i64s("pads_begin")?, d, 0)?,
        uints(op, "pads_end", op.attr_i64s("pads_end")?, d, 0)?,
    );
    if strides.contains(&0) || dilations.contains(&0) {
        return Err(op.attr_error("strides", "strides and dilations must be at least 1".into()));
    }
    if w_dims.len() != d + 2 {
        return Err(op.error(format!(
            "the weights have shape {w_dims:?}; with {d} spatial axes they need rank {}",
            d + 2
        )));
    }
    let wf = match weights {
        WeightsFormat::OIX | WeightsFormat::IOX => 2,
        WeightsFormat::XIO | WeightsFormat::XOI => 0,
    };
    let window = w_dims[wf..wf + d].to_vec();
    let x_sp = spatial(&x_dims, cl);
    let (pads_begin, pads_end) = auto_pads(op, &x_sp, &window, &strides, &dilations, pads)?;
    sizes_given(op, (&x_dims, &w_dims), &strides, &dilations)?;
    let conv = Conv {
        pass,
        strides,
        dilations,
        pads_begin,
        pads_end,
        groups,
        channels_last: cl,
        weights,
        shape: match pass {
            ConvPass::Forward => Vec::new(),
            ConvPass::BackwardData => x_dims,
            ConvPass::BackwardWeights => w_dims,
        },
    };
    // The kernel's inputs: (x, w), (dy, w) or (x, dy) in forward terms.
    let kins = match kind {
        "ConvTransposeBackwardWeights" => vec![ins[1].clone(), ins[0].clone()],
        _ => ins[..2].to_vec(),
    };
    if ins.len() == 3 && !bias {
        // A shape given as a third input: the declared output shape is what counts.
        return step(cx, op, Kernel::Conv(conv), kins, out);
    }
    if ins.len() == 3 {
        let conv_out = cx.temp(op.outputs[0], "conv");
        step(cx, op, Kernel::Conv(conv), kins, &conv_out)?;
        let axis = if cl { out_dims.len() - 1 } else { 1 };
        let b = [conv_out.clone(), ins[2].clone()];
        let kernel = Kernel::BiasAdd { axis };
        return cx.step(op, kernel, b.to_vec(), out.to_string());
    }
    step(cx, op, Kernel::Conv(conv), kins, out)
}

/// The sizes the file gives as attributes (`dst_shape`, `weights_shape`) must be the
/// declared ones, and `output_padding` below the stride or the dilation; the kernel
/// checks that the forward convolution of `x` gives `y`.
fn sizes_given(
    op: &GOp,
    (x_dims, w_dims): (&[u64], &[u64]),
    strides: &[u64],
    dilations: &[u64],
) -> Result<(), At> {
    let d = strides.len();
    for (attr, want) in [("dst_shape", x_dims), ("weights_shape", w_dims)] {
        if let Some(v) = op.attr_i64s(attr)?
            && (v.len() != want.len() || v.iter().zip(want).any(|(&a, &b)| a < 0 || a as u64 != b))
        {
            return Err(op.attr_error(
                attr,
                format!("`{attr}` {v:?} is not the shape {want:?} the op's tensors give"),
            ));
        }
    }
    let opad = uints(op, "output_padding", op.attr_i64s("output_padding")?, d, 0)?;
    if let Some(i) = (0..d).find(|&i| opad[i] >= strides[i].max(dilations[i])) {
        return Err(op.attr_error(
            "output_padding",
            format!(
                "`output_padding` {} on spatial axis {i} must be below the stride {} or the dilation {}",
                opad[i], strides[i], dilations[i]
            ),
        ));
    }
    Ok(())
}

/// MaxPool, AvgPool and their gradients.
fn pool(cx: &mut Cx, op: &GOp, ins: &[String], out: &str) -> Result<(), At> {
    let kind = op.kind.as_str();
    let backward = kind.ends_with("Backward");
    let max = kind.starts_with("Max");
    match (max, backward) {
        (true, true) => count(op, &[2], 1)?,
        (false, true) => count(op, &[1, 2], 1)?,
        _ => count(op, &[1], 1)?,
    }
    let cl = channels_last(op)?;
    let x_dims = if backward {
        cx.dims(out)
    } else {
        cx.dims(&ins[0])
    };
    if x_dims.len() < 3 {
        return Err(op.error(format!(
            "the data has shape {x_dims:?}; pooling needs batch, channels and spatial axes"
        )));
    }
    let d = x_dims.len() - 2;
    let kernel = required_uints(op, "kernel", d)?;
    let strides = required_uints(op, "strides", d)?;
    let dilations = uints(op, "dilations", op.attr_i64s("dilations")?, d, 1)?;
    // A negative `pads_end` crops the input's end (oneDNN allows it for pooling).
    let given_end = op.attr_i64s("pads_end")?.unwrap_or_else(|| vec![0; d]);
    if given_end.len() != d {
        return Err(op.attr_error(
            "pads_end",
            format!(
                "`pads_end` has {} entries; the data has {d} spatial axes",
                given_end.len()
            ),
        ));
    }
    let pads = (
        uints(op, "pads_begin", op.attr_i64s("pads_begin")?, d, 0)?,
        given_end.iter().map(|&p| p.max(0) as u64).collect(),
    );
    if kernel.contains(&0) || strides.contains(&0) || dilations.contains(&0) {
        return Err(op.attr_error(
            "kernel",
            "kernel, strides and dilations must be at least 1".into(),
        ));
    }
    let explicit = matches!(
        op.attr_str("auto_pad")?.as_deref(),
        None | Some("None" | "none" | "NONE" | "NOTSET" | "EXPLICIT")
    );
    let (pads_begin, pads_end) = auto_pads(
        op,
        &spatial(&x_dims, cl),
        &kernel,
        &strides,
        &dilations,
        pads,
    )?;
    let pads_end: Vec<i64> = if explicit {
        given_end
    } else {
        pads_end.iter().map(|&p| p as i64).collect()
    };
    let ceil = match op.attr_str("rounding_type")?.as_deref().unwrap_or("floor") {
        "floor" => false,
        "ceil" => true,
        other => {
            return Err(op.attr_error(
                "rounding_type",
                format!("unknown `rounding_type` `{other}` (floor or ceil)"),
            ));
        }
    };
    let kind_ = if max {
        PoolKind::Max
    } else {
        let e = op
            .attr_bool("exclude_pad")?
            .ok_or_else(|| op.error("the attribute `exclude_pad` is required".into()))?;
        PoolKind::Avg { exclude_pad: e }
    };
    let p = Pool {
        kind: kind_,
        backward,
        kernel,
        strides,
        dilations,
        pads_begin,
        pads_end,
        ceil,
        channels_last: cl,
        shape: if backward { x_dims } else { Vec::new() },
    };
    let kins = match (max, backward) {
        (true, true) => ins[..2].to_vec(),
        _ => ins[..1].to_vec(),
    };
    step(cx, op, Kernel::Pool(p), kins, out)
}

/// Interpolate and its gradient; the output's declared shape gives the sizes, which
/// `sizes` or `scales` must agree with.
fn interpolate(cx: &mut Cx, op: &GOp, ins: &[String], out: &str) -> Result<(), At> {
    let backward = op.kind == "InterpolateBackward";
    if backward {
        count(op, &[2, 3], 1)?;
    } else {
        count(op, &[1, 2], 1)?;
    }
    let cl = channels_last(op)?;
    let mode = match op.attr_str("mode")?.as_deref() {
        Some("nearest") => InterpMode::Nearest,
        Some("linear" | "bilinear" | "trilinear") => InterpMode::Linear,
        Some(other) => {
            return Err(op.attr_error(
                "mode",
                format!(
                    "the mode `{other}` is not supported (nearest, linear, bilinear, trilinear)"
                ),
            ));
        }
        None => return Err(op.error("the attribute `mode` is required".into())),
    };
    let coord = match op
        .attr_str("coordinate_transformation_mode")?
        .as_deref()
        .unwrap_or("half_pixel")
    {
        "half_pixel" => CoordMode::HalfPixel,
        "align_corners" => CoordMode::AlignCorners,
        other => {
            return Err(op.attr_error(
                "coordinate_transformation_mode",
                format!("unknown `coordinate_transformation_mode` `{other}` (half_pixel or align_corners)"),
            ));
        }
    };
    // Forward: x → y; backward: (x, dy) → dx, the kernel reading dy.
    let (small, big) = if backward {
        (cx.dims(out), cx.dims(&ins[1]))
    } else {
        (cx.dims(&ins[0]), cx.dims(out))
    };
    if small.len() < 3 || small.len() != big.len() {
        return Err(op.error(format!(
            "the data shapes {small:?} and {big:?} need the same rank, with batch, channels and spatial axes"
        )));
    }
    let (xs, ys) = (spatial(&small, cl), spatial(&big, cl));
    let sizes = op.attr_i64s("sizes")?;
    let scales = scales(op)?;
    match (&sizes, &scales) {
        (Some(s), _) => {
            let ok =
                s.len() == ys.len() && s.iter().zip(&ys).all(|(&a, &b)| a >= 0 && a as u64 == b);
            if !ok {
                return Err(op.attr_error(
                    "sizes",
                    format!("`sizes` {s:?} does not give the output's spatial sizes {ys:?}"),
                ));
            }
        }
        (None, Some(f)) => {
            let ok = f.len() == ys.len()
                && f.iter()
                    .zip(&xs)
                    .zip(&ys)
                    .all(|((&f, &x), &y)| (x as f64 * f).floor() as u64 == y);
            if !ok {
                return Err(op.attr_error(
                    "scales",
                    format!(
                        "`scales` {f:?} on spatial sizes {xs:?} does not give the output's {ys:?}"
                    ),
                ));
            }
        }
        (None, None) if ins.len() < if backward { 3 } else { 2 } => {
            return Err(op.error("one of the attributes `sizes` or `scales` is required".into()));
        }
        (None, None) => {}
    }
    let (kin, sizes) = if backward {
        (ins[1].clone(), xs)
    } else {
        (ins[0].clone(), ys)
    };
    let ip = Interp {
        mode,
        coord,
        backward,
        channels_last: cl,
        sizes,
    };
    step(cx, op, Kernel::Interp(ip), vec![kin], out)
}

/// The `scales` attribute (numbers).
fn scales(op: &GOp) -> Result<Option<Vec<f64>>, At> {
    let Some(v) = op.attrs.get("scales") else {
        return Ok(None);
    };
    v.as_array()
        .and_then(|a| a.iter().map(|x| x.as_f64()).collect::<Option<Vec<f64>>>())
        .map(Some)
        .ok_or_else(|| op.attr_error("scales", "`scales` must be a list of numbers".into()))
}
