//! Data movement: `Reshape`, `Flatten`, `Unsqueeze`, `Squeeze` (the `Reshape` kernel),
//! `Transpose` (a kernel, or a weight read transposed), `Slice` and `Split` (the
//! `Slice` kernel), `Concat`, `Gather` at indices known at import, `Expand` (kept
//! unmaterialised) and `Trilu` on constants.

use super::lower::Bad;
use super::lower::{Ox, Tens, Val};
use super::ops::{Attrs, axis, ints_of, req};
use crate::import::stablehlo::fold::{Konst, strides};
use mnsim_kernels::Kernel;

fn numel(d: &[u64]) -> Option<u64> {
    d.iter().try_fold(1u64, |a, &b| a.checked_mul(b))
}

/// A value in a new shape with the same elements.
fn to_shape(ox: &mut Ox, x: &Val, out: Vec<u64>) -> Result<Val, Bad> {
    if numel(&x.dims()) != numel(&out) {
        return Err(format!(
            "a reshape of {:?} to {out:?} changes the element count",
            x.dims()
        )
        .into());
    }
    match x {
        Val::C(k) => Ok(Val::C(k.reshape(out))),
        Val::T(t) => Ok(Val::T(ox.reshaped(t, &out)?)),
        Val::B { src, .. } if numel(&src.dims) == numel(&out) => Ok(Val::T(ox.reshaped(src, &out)?)),
        Val::B { .. } => Err("a reshape of an `Expand` of a computed tensor is not supported (no broadcast kernel materialises it)".into()),
    }
}

pub(super) fn reshape(ox: &mut Ox, a: &Attrs, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let x = req(ins, 0, "Reshape")?;
    let want = ints_of(req(ins, 1, "Reshape")?, "the shape")?;
    let allow_zero = a.int_or("allowzero", 0)? != 0;
    let d = x.dims();
    let mut out = Vec::with_capacity(want.len());
    let mut infer = None;
    for (i, &w) in want.iter().enumerate() {
        out.push(match w {
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            -1 => return Err(format!("the shape {want:?} has more than one -1").into()),
            0 if !allow_zero => *d.get(i).ok_or_else(|| {
                format!(
                    "the shape {want:?} copies axis {i} (0) of a rank-{} tensor",
                    d.len()
                )
            })?,
            w if w < 0 => return Err(format!("the shape {want:?} has a negative size {w}").into()),
            w => w as u64,
        });
    }
    let total = numel(&d).ok_or("the element count overflows")?;
    if let Some(i) = infer {
        let rest = numel(&out).ok_or("the element count overflows")?;
        if rest == 0 || total % rest != 0 {
            return Err(
                format!("the shape {want:?} cannot hold the {total} elements of {d:?}").into(),
            );
        }
        out[i] = total / rest;
    }
    to_shape(ox, x, out)
}

pub(super) fn flatten(ox: &mut Ox, a: &Attrs, x: &Val) -> Result<Val, Bad> {
    let d = x.dims();
    let r = d.len() as i64;
    let ax = a.int_or("axis", 1)?;
    let ax = if ax < 0 { ax + r } else { ax };
    if !(0..=r).contains(&ax) {
        return Err(format!("axis {ax} is out of range for rank {r}").into());
    }
    let ax = ax as usize;
    to_shape(
        ox,
        x,
        vec![d[..ax].iter().product(), d[ax..].iter().product()],
    )
}

/// The axes of `Unsqueeze`/`Squeeze`: the second input (opset 13) or the attribute.
fn axes_of(a: &Attrs, ins: &[Option<Val>]) -> Result<Option<Vec<i64>>, Bad> {
    match ins.get(1).and_then(Option::as_ref) {
        Some(v) => Ok(Some(ints_of(v, "the axes")?)),
        None => a.ints("axes"),
    }
}

pub(super) fn unsqueeze(ox: &mut Ox, a: &Attrs, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let x = req(ins, 0, "Unsqueeze")?;
    let given = axes_of(a, ins)?.ok_or("Unsqueeze needs axes")?;
    let r = x.dims().len() + given.len();
    let mut axes: Vec<usize> = given
        .iter()
        .map(|&v| axis(v, r, "axis"))
        .collect::<Result<_, _>>()?;
    axes.sort_unstable();
    let mut src = x.dims().into_iter();
    let out: Vec<u64> = (0..r)
        .map(|i| {
            if axes.contains(&i) {
                1
            } else {
                src.next().unwrap_or(1)
            }
        })
        .collect();
    to_shape(ox, x, out)
}

pub(super) fn squeeze(ox: &mut Ox, a: &Attrs, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let x = req(ins, 0, "Squeeze")?;
    let d = x.dims();
    let axes: Vec<usize> = match axes_of(a, ins)? {
        Some(g) => g
            .iter()
            .map(|&v| axis(v, d.len(), "axis"))
            .collect::<Result<_, _>>()?,
        None => (0..d.len()).filter(|&i| d[i] == 1).collect(),
    };
    if let Some(&i) = axes.iter().find(|&&i| d[i] != 1) {
        return Err(format!("axis {i} of {d:?} has size {}, not 1", d[i]).into());
    }
    let out = (0..d.len())
        .filter(|i| !axes.contains(i))
        .map(|i| d[i])
        .collect();
    to_shape(ox, x, out)
}

pub(super) fn transpose(ox: &mut Ox, a: &Attrs, x: &Val) -> Result<Val, Bad> {
    let r = x.dims().len();
    let perm: Vec<usize> = match a.ints("perm")? {
        Some(p) => p
            .iter()
            .map(|&v| axis(v, r, "perm entry"))
            .collect::<Result<_, _>>()?,
        None => (0..r).rev().collect(),
    };
    let mut seen = perm.clone();
    seen.sort_unstable();
    if seen != (0..r).collect::<Vec<_>>() {
        return Err(format!("perm {perm:?} is not a permutation of {r} axes").into());
    }
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x.clone());
    }
    match x {
        Val::C(k) => Ok(Val::C(k.transpose(&perm)?)),
        Val::T(t) if ox.weights.contains(&t.name) => Ok(Val::T(ox.transposed_weight(t, &perm))),
        Val::T(t) => {
            let k = Kernel::Transpose { perm };
            Ok(Val::T(ox.apply(
                &format!("{}_t", t.name),
                k,
                &[t],
                t.dtype,
            )?))
        }
        Val::B { .. } => {
            let t = ox.tensor_of(x, "the transposed operand")?;
            transpose(ox, a, &Val::T(t))
        }
    }
}

/// ONNX slice bounds on an axis of size `n` (negative from the end, clamped) with a
/// positive step: (start, the output length).
fn bounds(start: i64, end: i64, step: i64, n: u64) -> (u64, u64) {
    let n = n as i64;
    let norm = |v: i64| (if v < 0 { v.saturating_add(n) } else { v }).clamp(0, n);
    let (s, e) = (norm(start), norm(end));
    let len = if e > s { (e - s + step - 1) / step } else { 0 };
    (s as u64, len as u64)
}

/// A strided block of `x`: the `Slice` kernel (or the constant sliced).
fn slice_val(
    ox: &mut Ox,
    base: &str,
    x: &Val,
    start: &[u64],
    stride: &[u64],
    out: &[u64],
) -> Result<Val, Bad> {
    let d = x.dims();
    if out == d.as_slice() {
        return Ok(x.clone());
    }
    if let Some(a) = out.iter().position(|&n| n == 0) {
        return Err(format!(
            "the slice is empty (axis {a} has no elements); mnsim's tensors hold at least one element"
        ).into());
    }
    if let Val::C(k) = x {
        return Ok(Val::C(k.slice(start, stride, out.to_vec())?));
    }
    let t = ox.tensor_of(x, "the sliced operand")?;
    let limit: Vec<u64> = (0..d.len())
        .map(|a| start[a] + (out[a] - 1) * stride[a] + 1)
        .collect();
    let k = Kernel::Slice {
        start: start.to_vec(),
        limit,
        stride: stride.to_vec(),
    };
    Ok(Val::T(ox.apply(base, k, &[&t], t.dtype)?))
}

pub(super) fn slice(ox: &mut Ox, base: &str, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let x = req(ins, 0, "Slice")?;
    let d = x.dims();
    let starts = ints_of(req(ins, 1, "Slice")?, "`starts`")?;
    let ends = ints_of(req(ins, 2, "Slice")?, "`ends`")?;
    let axes: Vec<usize> = match ins.get(3).and_then(Option::as_ref) {
        Some(v) => ints_of(v, "`axes`")?
            .iter()
            .map(|&a| axis(a, d.len(), "axis"))
            .collect::<Result<_, _>>()?,
        None => (0..starts.len()).collect(),
    };
    let steps = match ins.get(4).and_then(Option::as_ref) {
        Some(v) => ints_of(v, "`steps`")?,
        None => vec![1; starts.len()],
    };
    if starts.len() != ends.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err("`starts`, `ends`, `axes` and `steps` differ in length".into());
    }
    let (mut start, mut stride, mut out) = (vec![0u64; d.len()], vec![1u64; d.len()], d.clone());
    for (i, &a) in axes.iter().enumerate() {
        if steps[i] <= 0 {
            return Err(format!(
                "a slice with step {} (mnsim's Slice kernel reads forward, step at least 1)",
                steps[i]
            )
            .into());
        }
        let (s, n) = bounds(starts[i], ends[i], steps[i], d[a]);
        (start[a], stride[a], out[a]) = (s, steps[i] as u64, n);
    }
    slice_val(ox, base, x, &start, &stride, &out)
}

pub(super) fn split(
    ox: &mut Ox,
    base: &str,
    a: &Attrs,
    ins: &[Option<Val>],
    outputs: usize,
) -> Result<Vec<Val>, Bad> {
    let x = req(ins, 0, "Split")?;
    let d = x.dims();
    let ax = axis(a.int_or("axis", 0)?, d.len(), "axis")?;
    let sizes: Vec<u64> = match ins.get(1).and_then(Option::as_ref) {
        Some(v) => ints_of(v, "the split sizes")?
            .iter()
            .map(|&s| u64::try_from(s).map_err(|_| format!("a negative split size {s}")))
            .collect::<Result<_, _>>()?,
        None => match a.ints("split")? {
            Some(s) => s.iter().map(|&v| v.max(0) as u64).collect(),
            None => {
                let n = a.int_or("num_outputs", outputs as i64)?.max(1) as u64;
                let each = d[ax].div_ceil(n);
                (0..n)
                    .map(|i| each.min(d[ax].saturating_sub(i * each)))
                    .collect()
            }
        },
    };
    if sizes.iter().sum::<u64>() != d[ax] {
        return Err(format!(
            "split sizes {sizes:?} do not add up to axis {ax}'s {}",
            d[ax]
        )
        .into());
    }
    let mut vals = Vec::new();
    let mut at = 0;
    for (i, &s) in sizes.iter().enumerate() {
        let mut start = vec![0; d.len()];
        start[ax] = at;
        let mut out = d.clone();
        out[ax] = s;
        vals.push(slice_val(
            ox,
            &format!("{base}_{i}"),
            x,
            &start,
            &vec![1; d.len()],
            &out,
        )?);
        at += s;
    }
    Ok(vals)
}

pub(super) fn concat(ox: &mut Ox, base: &str, a: &Attrs, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let vals: Vec<&Val> = ins.iter().flatten().collect();
    let first = vals.first().ok_or("Concat of no inputs")?.dims();
    let ax = axis(
        a.int("axis")?.ok_or("Concat needs `axis`")?,
        first.len(),
        "axis",
    )?;
    let mut out = first.clone();
    out[ax] = 0;
    let mut parts = Vec::new();
    for v in &vals {
        let d = v.dims();
        if d.len() != first.len() || (0..d.len()).any(|i| i != ax && d[i] != first[i]) {
            return Err(format!("input {d:?} does not match {first:?} off axis {ax}").into());
        }
        out[ax] += d[ax];
        // Empty inputs (a shape tensor with nothing to add) take no part.
        if d[ax] > 0 {
            parts.push(*v);
        }
    }
    if parts.len() == 1 {
        return Ok(parts[0].clone());
    }
    if parts.iter().all(|v| matches!(v, Val::C(_))) {
        let ks: Vec<&Konst> = parts
            .iter()
            .map(|v| match v {
                Val::C(k) => k,
                _ => unreachable!("all constants"),
            })
            .collect();
        return Ok(Val::C(Konst::concat(&ks, ax, out)?));
    }
    let mut ts: Vec<Tens> = Vec::new();
    for v in &parts {
        ts.push(ox.tensor_of(v, "an input")?);
    }
    let refs: Vec<&Tens> = ts.iter().collect();
    let k = Kernel::Concat {
        axis: ax,
        inputs: refs.len(),
    };
    let dtype = refs[0].dtype;
    let o = ox.declare(base, dtype, &out);
    ox.step(k, &refs, &o)?;
    Ok(Val::T(o))
}

/// `Gather` at indices known at import: on a constant, evaluated; on a tensor, one
/// index (the axis dropped) or an ascending run of indices is a `Slice`. Rows (axis 0)
/// at indices computed at run time (an embedding lookup) are the `Gather` op.
pub(super) fn gather(ox: &mut Ox, base: &str, a: &Attrs, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let x = req(ins, 0, "Gather")?;
    let d = x.dims();
    let ax = axis(a.int_or("axis", 0)?, d.len(), "axis")?;
    let idx = req(ins, 1, "Gather")?;
    let Val::C(ik) = idx else {
        // Rows at run-time indices: an embedding lookup.
        if ax != 0 {
            return Err(format!(
                "Gather along axis {ax} at indices computed at run time is not supported (an embedding lookup gathers rows: axis 0)"
            )
            .into());
        }
        let table = ox.tensor_of(x, "Gather's data")?;
        let indices = ox.tensor_of(idx, "Gather's indices")?;
        return Ok(Val::T(ox.gather_rows(base, &table, &indices)?));
    };
    let n = d[ax] as i64;
    let ids: Vec<u64> = ik
        .values()?
        .iter()
        .map(|&v| {
            let v = v as i64;
            let v = if v < 0 { v + n } else { v };
            u64::try_from(v)
                .ok()
                .filter(|&v| v < d[ax])
                .ok_or_else(|| format!("index {v} is out of range for axis {ax} of size {n}"))
        })
        .collect::<Result<_, _>>()?;
    let out: Vec<u64> = [&d[..ax], &ik.dims[..], &d[ax + 1..]].concat();
    if let Val::C(k) = x {
        let st = strides(&k.dims);
        let ost = strides(&out);
        let ir = ik.dims.len();
        let v: Vec<f64> = (0..numel(&out).unwrap_or(0) as usize)
            .map(|i| {
                let mut src = 0u64;
                let mut flat_idx = 0u64;
                let ist = strides(&ik.dims);
                for (o, &os) in ost.iter().enumerate() {
                    let c = (i as u64 / os) % out[o];
                    if o < ax {
                        src += c * st[o];
                    } else if o < ax + ir {
                        flat_idx += c * ist[o - ax];
                    } else {
                        src += c * st[o - ir + 1];
                    }
                }
                src += ids[flat_idx as usize] * st[ax];
                k.get(src as usize)
            })
            .collect();
        return Ok(Val::C(Konst {
            dtype: k.dtype,
            dims: out,
            data: std::rc::Rc::new(v),
        }));
    }
    let run = ids.windows(2).all(|w| w[1] == w[0] + 1) && !ids.is_empty();
    if !run {
        return Err(format!(
            "Gather at indices {:?} that are not an ascending run is not supported (known at import, they are sliced; only rows at run-time indices are gathered)",
            &ids[..ids.len().min(8)]
        ).into());
    }
    let mut start = vec![0; d.len()];
    start[ax] = ids[0];
    let mut sl = d.clone();
    sl[ax] = ids.len() as u64;
    let s = slice_val(ox, &format!("{base}_s"), x, &start, &vec![1; d.len()], &sl)?;
    to_shape(ox, &s, out)
}

/// `Expand`: numpy broadcasting to the shape; a constant is expanded, a tensor kept
/// unmaterialised (elementwise consumers read it in place).
pub(super) fn expand(ins: &[Option<Val>]) -> Result<Val, Bad> {
    let x = req(ins, 0, "Expand")?;
    let shape: Vec<u64> = ints_of(req(ins, 1, "Expand")?, "the shape")?
        .iter()
        .map(|&s| u64::try_from(s).map_err(|_| format!("a negative size {s}")))
        .collect::<Result<_, _>>()?;
    let out = super::math::numpy(&[x.dims(), shape])?;
    if out == x.dims() {
        return Ok(x.clone());
    }
    Ok(match x {
        Val::C(k) => Val::C(super::math::konst_to(k, &out)?),
        Val::T(t) => Val::B {
            src: t.clone(),
            out,
        },
        Val::B { src, .. } => Val::B {
            src: src.clone(),
            out,
        },
    })
}

/// `Trilu` of a constant (a causal mask built at import).
pub(super) fn trilu(a: &Attrs, ins: &[Option<Val>]) -> Result<Konst, Bad> {
    let Val::C(k) = req(ins, 0, "Trilu")? else {
        return Err(
            "Trilu of a tensor computed at run time is not supported (only masks known at import)"
                .into(),
        );
    };
    let kk = match ins.get(1).and_then(Option::as_ref) {
        Some(v) => ints_of(v, "k")?.first().copied().unwrap_or(0),
        None => 0,
    };
    let upper = a.int_or("upper", 1)? != 0;
    let r = k.dims.len();
    if r < 2 {
        return Err("Trilu needs a rank of at least 2".into());
    }
    let (rows, cols) = (k.dims[r - 2], k.dims[r - 1]);
    let vals = k.values()?;
    let out: Vec<f64> = vals
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = (i as u64 % cols) as i64;
            let rr = ((i as u64 / cols) % rows) as i64;
            let keep = if upper { c - rr >= kk } else { c - rr <= kk };
            if keep { v } else { 0.0 }
        })
        .collect();
    Ok(Konst {
        data: std::rc::Rc::new(out),
        ..k.clone()
    })
}
