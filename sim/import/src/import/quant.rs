//! oneDNN's Quantize, Dequantize, DynamicQuantize and DynamicDequantize lowered to the
//! `Quant` kernel (docs/import.md, quantisation).
//!
//! - Static forms: the `scales` and `zps` attributes, per tensor or per channel along
//!   `axis`, go into the kernel.
//! - Dynamic forms: scales (and zero points) are inputs. Per tensor they broadcast as
//!   they are; per channel they are reshaped to `[C, 1, ..]` so that they broadcast
//!   along `axis`; per group (`group_shape`) `x` is reshaped so that every grouped axis
//!   splits into `[groups, group size]`, the scales to `[groups, 1]` on it, and the
//!   result back: each reshape is a step of its own (data movement, 0 FLOP).

use super::graph::{At, GOp};
use super::json::Value;
use super::lower::{Cx, axis, count};
use mnsim_arch::DType;
use mnsim_kernels::{Kernel, Quant, QuantDir, QuantParams};

/// The op kinds this module lowers.
pub const KINDS: [&str; 4] = [
    "Quantize",
    "Dequantize",
    "DynamicQuantize",
    "DynamicDequantize",
];

/// A list of numbers from an attribute (`f32[]` or `s64[]`), `None` when absent.
fn numbers(op: &GOp, name: &str) -> Result<Option<Vec<f64>>, At> {
    let Some(v) = op.attrs.get(name) else {
        return Ok(None);
    };
    let items = v
        .as_array()
        .map(|a| a.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>());
    match items {
        Some(Some(xs)) if xs.iter().all(|x| x.is_finite()) => Ok(Some(xs)),
        _ => Err(op.attr_error(name, "must be a list of finite numbers".into())),
    }
}

/// A step running kernel `k` on `inputs` into `out`, in the generic `Kernel` op.
pub(super) fn kernel_step(
    cx: &mut Cx,
    op: &GOp,
    k: Kernel,
    inputs: Vec<String>,
    out: String,
) -> Result<(), At> {
    cx.step(op, k, inputs, out)
}

/// A `Reshape` step of `input` into a new temporary of `dims` (like graph tensor `like`).
fn reshape(
    cx: &mut Cx,
    op: &GOp,
    input: &str,
    like: u64,
    suffix: &str,
    dims: Vec<u64>,
) -> Result<String, At> {
    // Named after the op too: a scales tensor may feed several ops.
    let name = cx.temp_dims(like, &format!("{suffix}{}", op.index), dims.clone());
    cx.step(
        op,
        Kernel::Reshape { shape: dims },
        vec![input.to_string()],
        name.clone(),
    )?;
    Ok(name)
}

/// Lowers one of [`KINDS`].
pub(super) fn lower(cx: &mut Cx, op: &GOp, ins: Vec<String>, out: String) -> Result<(), At> {
    let dir = if op.kind.contains("Dequantize") {
        QuantDir::Dequantize
    } else {
        QuantDir::Quantize
    };
    let dynamic = op.kind.starts_with("Dynamic");
    if dynamic {
        count(op, &[2, 3], 1)?;
    } else {
        count(op, &[1], 1)?;
    }
    let x = cx.tensor(op.inputs[0]).clone();
    let o = cx.tensor(op.outputs[0]).clone();
    let qtype = match dir {
        QuantDir::Quantize => o.dtype,
        QuantDir::Dequantize => x.dtype,
    };
    let real = match dir {
        QuantDir::Quantize => x.dtype,
        QuantDir::Dequantize => o.dtype,
    };
    if !real.is_float() {
        return Err(op.error(format!(
            "the real side of a {} must be a float type, the file gives {real}",
            op.kind
        )));
    }
    if x.shape != o.shape {
        return Err(op.error(format!(
            "the output's shape {:?} differs from the input's {:?}",
            o.shape, x.shape
        )));
    }
    let rank = cx.dims(&ins[0]).len();
    let qt = op.attr_str("qtype")?.unwrap_or_else(|| "per_tensor".into());
    let ax = match qt.as_str() {
        "per_tensor" => None,
        "per_channel" | "per_group" => {
            Some(axis(op, "axis", op.attr_i64("axis")?.unwrap_or(1), rank)?)
        }
        other => {
            return Err(op.attr_error(
                "qtype",
                format!("unknown quantisation `{other}` (per_tensor, per_channel or per_group)"),
            ));
        }
    };
    if !dynamic {
        let scales = numbers(op, "scales")?
            .ok_or_else(|| op.error("the attribute `scales` is required".into()))?;
        let zps = numbers(op, "zps")?.unwrap_or_default();
        if qtype.is_float() && zps.iter().any(|&z| z != 0.0) {
            return Err(op.attr_error(
                "zps",
                format!("zero points must be 0 for the float type {qtype}"),
            ));
        }
        if qt == "per_group" {
            return Err(op.attr_error(
                "qtype",
                "per_group takes its scales as inputs (DynamicQuantize, DynamicDequantize)".into(),
            ));
        }
        let k = Kernel::Quant(Quant {
            dir,
            qtype,
            params: QuantParams::Static {
                axis: ax,
                scales,
                zps,
            },
        });
        return kernel_step(cx, op, k, ins, out);
    }
    dynamic_form(cx, op, (dir, qtype), (qt.as_str(), ax), ins, out)
}

/// The dynamic forms: scales (and zero points) reshaped to broadcast, `x` split by
/// groups for `per_group`.
fn dynamic_form(
    cx: &mut Cx,
    op: &GOp,
    (dir, qtype): (QuantDir, DType),
    (qt, ax): (&str, Option<usize>),
    ins: Vec<String>,
    out: String,
) -> Result<(), At> {
    let xd = cx.dims(&ins[0]);
    let k = Kernel::Quant(Quant {
        dir,
        qtype,
        params: QuantParams::Dynamic {
            zps: ins.len() == 3,
        },
    });
    let mut params: Vec<String> = ins[1..].to_vec();
    match (qt, ax) {
        ("per_channel", Some(a)) => {
            // [C] → [C, 1, ..]: aligned to x's trailing axes, it runs along `a`.
            for (j, p) in params.iter_mut().enumerate() {
                let d = cx.dims(p);
                if d != [xd[a]] {
                    return Err(op.error(format!(
                        "per-channel {} of shape {d:?} for axis {a} of {xd:?}: expected [{}]",
                        if j == 0 { "scales" } else { "zero points" },
                        xd[a]
                    )));
                }
                let mut dims = vec![xd[a]];
                dims.extend(std::iter::repeat_n(1, xd.len() - a - 1));
                if dims.len() > 1 {
                    let suffix = if j == 0 { "s" } else { "z" };
                    *p = reshape(cx, op, p, op.inputs[j + 1], suffix, dims)?;
                }
            }
            let mut all = vec![ins[0].clone()];
            all.extend(params);
            kernel_step(cx, op, k, all, out)
        }
        ("per_group", _) => per_group(cx, op, k, ins, params, out),
        _ => {
            let mut all = vec![ins[0].clone()];
            all.extend(params);
            kernel_step(cx, op, k, all, out)
        }
    }
}

/// `per_group`: every axis whose group is larger than 1 splits into `[groups, size]`.
fn per_group(
    cx: &mut Cx,
    op: &GOp,
    k: Kernel,
    ins: Vec<String>,
    params: Vec<String>,
    out: String,
) -> Result<(), At> {
    let xd = cx.dims(&ins[0]);
    let sd = cx.dims(&params[0]);
    let group: Vec<u64> = match op.attr_i64s("group_shape")? {
        Some(g) => g.iter().map(|&v| u64::try_from(v).unwrap_or(0)).collect(),
        // Without `group_shape`: the scales' shape says it.
        None => xd
            .iter()
            .zip(&sd)
            .map(|(&x, &s)| x.checked_div(s).unwrap_or(0))
            .collect(),
    };
    let bad = |why: String| op.attr_error("group_shape", why);
    if group.len() != xd.len() || sd.len() != xd.len() {
        return Err(bad(format!(
            "group shape {group:?} and scales {sd:?} must have the rank of x {xd:?}"
        )));
    }
    let (mut x2, mut s2) = (Vec::new(), Vec::new());
    for d in 0..xd.len() {
        let g = group[d];
        if g == 0 || !xd[d].is_multiple_of(g) || sd[d] != xd[d] / g {
            return Err(bad(format!(
                "axis {d}: x has {} elements in groups of {g}, but the scales have {}",
                xd[d], sd[d]
            )));
        }
        if g > 1 {
            x2.extend([xd[d] / g, g]);
            s2.extend([sd[d], 1]);
        } else {
            x2.push(xd[d]);
            s2.push(sd[d]);
        }
    }
    if x2.len() == xd.len() {
        let mut all = vec![ins[0].clone()];
        all.extend(params);
        return kernel_step(cx, op, k, all, out);
    }
    let mut all = vec![reshape(
        cx,
        op,
        &ins[0],
        op.inputs[0],
        "groups",
        x2.clone(),
    )?];
    for (j, p) in params.iter().enumerate() {
        let suffix = if j == 0 { "s" } else { "z" };
        all.push(reshape(cx, op, p, op.inputs[j + 1], suffix, s2.clone())?);
    }
    let grouped = cx.temp_dims(op.outputs[0], "grouped", x2);
    kernel_step(cx, op, k, all, grouped.clone())?;
    cx.step(op, Kernel::Reshape { shape: xd }, vec![grouped], out)
}
