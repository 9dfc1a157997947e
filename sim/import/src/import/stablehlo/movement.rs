//! Data movement: broadcasts (kept unmaterialised), reshapes, transposes,
//! concatenation, slices and pads of computed tensors.

use super::emit::{emit_const, folded, reshaped, tensor_of, transposed};
use super::fold::{FOLD_LIMIT, Konst};
use super::lower::{Lx, Tens, Val};
use super::parse::{At, Stmt, at};
use mnsim_kernels::Kernel;

/// `broadcast_in_dim`: a constant is broadcast at import, unless the result is larger
/// than a constant may be ([`FOLD_LIMIT`]) and not a splat: then the constant becomes a
/// tensor and the result a broadcast of it, read in place like any other.
pub(super) fn broadcast(
    lx: &mut Lx,
    st: &Stmt,
    x: &Val,
    map: &[usize],
    out: Vec<u64>,
) -> Result<Vec<Val>, At> {
    let dims = x.dims();
    if map.len() != dims.len() {
        return Err(at(
            &st.span,
            format!(
                "`dims` names {} axes for a rank-{} operand",
                map.len(),
                dims.len()
            ),
        ));
    }
    for (j, &a) in map.iter().enumerate() {
        if dims[j] != 1 && dims[j] != out[a] {
            return Err(at(
                &st.span,
                format!(
                    "operand axis {j} (size {}) cannot broadcast to result axis {a} (size {})",
                    dims[j], out[a]
                ),
            ));
        }
    }
    super::ops::result_dims(st, &out)?;
    Ok(vec![match x {
        Val::C(k) if !k.is_splat() && super::fold::numel(&out).is_none_or(|n| n > FOLD_LIMIT) => {
            let src = emit_const(lx, &st.span, k)?;
            Val::B {
                src,
                map: map.to_vec(),
                out,
            }
        }
        Val::C(k) => return folded(st, k.broadcast(map, out)),
        Val::T(t) if t.dims == out && map.iter().enumerate().all(|(i, &a)| i == a) => x.clone(),
        Val::T(t) => Val::B {
            src: t.clone(),
            map: map.to_vec(),
            out,
        },
        Val::B {
            src, map: inner, ..
        } => Val::B {
            src: src.clone(),
            map: inner.iter().map(|&m| map[m]).collect(),
            out,
        },
        Val::Unit => return Err(at(&st.span, "the operand has no value")),
    }])
}

pub(super) fn reshape(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    x: &Val,
    out: Vec<u64>,
) -> Result<Vec<Val>, At> {
    let n = |d: &[u64]| d.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
    if n(&x.dims()) != n(&out) {
        return Err(at(
            &st.span,
            format!(
                "a reshape of {:?} to {out:?} changes the element count",
                x.dims()
            ),
        ));
    }
    super::ops::result_dims(st, &out)?;
    match x {
        Val::C(k) => Ok(vec![Val::C(k.reshape(out))]),
        Val::T(t) => {
            if t.dims == out {
                return Ok(vec![x.clone()]);
            }
            let _ = base;
            Ok(vec![Val::T(reshaped(lx, &st.span, t, &out)?)])
        }
        // A broadcast that adds no elements is its source reshaped; one that adds
        // elements (GQA's `repeat`) is materialised first.
        Val::B { src, map, .. } if n(&src.dims) == n(&out) && map.is_sorted() => {
            Ok(vec![Val::T(reshaped(lx, &st.span, src, &out)?)])
        }
        Val::B { .. } => {
            let t = tensor_of(lx, &st.span, x, "the reshaped operand")?;
            Ok(vec![Val::T(reshaped(lx, &st.span, &t, &out)?)])
        }
        Val::Unit => Err(at(&st.span, "the operand has no value")),
    }
}

pub(super) fn transpose(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    x: &Val,
    perm: &[usize],
) -> Result<Vec<Val>, At> {
    let dims = x.dims();
    let out: Vec<u64> = perm.iter().map(|&p| dims[p]).collect();
    super::ops::result_dims(st, &out)?;
    let _ = base;
    match x {
        Val::C(k) => folded(st, k.transpose(perm)),
        Val::T(t) => Ok(vec![Val::T(transposed(lx, &st.span, t, perm)?)]),
        Val::B { src, map, .. } => {
            // Output axis i is input axis perm[i]: source axis j lands at inv[map[j]].
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            Ok(vec![Val::B {
                src: src.clone(),
                map: map.iter().map(|&m| inv[m]).collect(),
                out,
            }])
        }
        Val::Unit => Err(at(&st.span, "the operand has no value")),
    }
}

pub(super) fn concat(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    vals: &[Val],
    axis: usize,
) -> Result<Vec<Val>, At> {
    let first = vals[0].dims();
    let mut out = first.clone();
    out[axis] = 0;
    for v in vals {
        let d = v.dims();
        if d.len() != first.len() || (0..d.len()).any(|a| a != axis && d[a] != first[a]) {
            return Err(at(
                &st.span,
                format!("operand {d:?} does not match {first:?} off axis {axis}"),
            ));
        }
        out[axis] += d[axis];
    }
    let out = super::ops::result_dims(st, &out)?;
    if let Some(ks) = Val::all_consts(vals) {
        return folded(st, Konst::concat(&ks, axis, out));
    }
    let mut ins = Vec::new();
    for v in vals {
        ins.push(tensor_of(lx, &st.span, v, "an operand")?);
    }
    let dtype = super::ops::result_ty(st)?.dtype;
    let o = lx.declare(base, dtype, &out);
    let refs: Vec<&Tens> = ins.iter().collect();
    lx.step(
        &st.span,
        Kernel::Concat {
            axis,
            inputs: ins.len(),
        },
        &refs,
        &o,
    )?;
    Ok(vec![Val::T(o)])
}

/// `slice` of a computed tensor: the `Slice` kernel (output index `h` of axis `a`
/// reads input index `start[a] + stride[a]·h`), any bounds; nothing when it takes the
/// whole tensor. A slice of a broadcast stays a broadcast: its source is sliced along
/// the axes it has (a size-1 source axis reads index 0 of any slice).
pub(super) fn slice(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    x: &Val,
    (start, limit, stride): (&[u64], &[u64], &[u64]),
    out: &[u64],
) -> Result<Vec<Val>, At> {
    if let Some(a) = out.iter().position(|&n| n == 0) {
        return Err(at(
            &st.span,
            format!(
                "the slice of a computed tensor is empty (axis {a} has no elements); mnsim's tensors hold at least one element"
            ),
        ));
    }
    if let Val::B { src, map, .. } = x {
        let n = src.dims.len();
        let (mut s, mut l, mut k, mut d) = (vec![0; n], vec![1; n], vec![1; n], vec![1; n]);
        for (j, &a) in map.iter().enumerate() {
            if src.dims[j] != 1 {
                (s[j], l[j], k[j], d[j]) = (start[a], limit[a], stride[a], out[a]);
            }
        }
        let src = slice_tensor(lx, st, base, src, (&s, &l, &k), &d)?;
        return Ok(vec![Val::B {
            src,
            map: map.clone(),
            out: out.to_vec(),
        }]);
    }
    let t = tensor_of(lx, &st.span, x, "the sliced operand")?;
    let bounds = (start, limit, stride);
    Ok(vec![Val::T(slice_tensor(lx, st, base, &t, bounds, out)?)])
}

/// The `Slice` kernel on `t` giving `out`, or `t` itself when it takes all of `t`.
fn slice_tensor(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    t: &Tens,
    (start, limit, stride): (&[u64], &[u64], &[u64]),
    out: &[u64],
) -> Result<Tens, At> {
    if t.dims == out {
        return Ok(t.clone());
    }
    let kernel = Kernel::Slice {
        start: start.to_vec(),
        limit: limit.to_vec(),
        stride: stride.to_vec(),
    };
    let o = lx.declare(base, t.dtype, out);
    lx.step(&st.span, kernel, &[t], &o)?;
    Ok(o)
}

/// `pad %x, %v, low = [..], high = [..], interior = [..]`: on a constant, evaluated;
/// on a computed tensor, edge padding (interior 0) with a constant padding value: a
/// `Slice` where `low` or `high` is negative (cropping), then per padded axis a `Concat`
/// of a constant filled with the value (`low` long), the tensor and another constant
/// (`high` long). Interior padding of a computed tensor is an error: mnsim has no
/// scatter kernel to interleave the value.
pub(super) fn pad(lx: &mut Lx, st: &Stmt, base: &str, vals: &[Val]) -> Result<Vec<Val>, At> {
    let dims = vals[0].dims();
    let r = dims.len();
    let Pads {
        low,
        high,
        interior,
        interior_at,
        out,
    } = pads(st, &dims)?;
    let (low, high, interior) = (&low, &high, &interior);
    let value = match &vals[1] {
        Val::C(k) if k.is_splat() && k.dims.is_empty() => k.data[0],
        _ => {
            return Err(at(
                &st.span,
                "`pad`: the padding value must be a scalar known at import (a constant)",
            ));
        }
    };
    if vals[1].dtype() != vals[0].dtype() {
        return Err(at(
            &st.span,
            format!(
                "`pad`: the padding value is {}, the operand {}",
                vals[1].dtype(),
                vals[0].dtype()
            ),
        ));
    }
    if let Val::C(k) = &vals[0] {
        return folded(st, k.pad(value, (low, interior), out));
    }
    let mut t = tensor_of(lx, &st.span, &vals[0], "the padded operand")?;
    // Interior padding: the Pad kernel (edges and gaps at once).
    if interior.iter().any(|&v| v != 0) {
        if low.iter().chain(high).any(|&v| v < 0) {
            return Err(at(
                &interior_at,
                "interior padding of a computed tensor with negative edge padding (a crop) is not supported",
            ));
        }
        let widths = |v: &[i128]| v.iter().map(|&w| w as u64).collect::<Vec<u64>>();
        let kernel = Kernel::Pad {
            low: widths(low),
            high: widths(high),
            interior: widths(interior),
            value,
        };
        let o = lx.declare(base, t.dtype, &out);
        lx.step(&st.span, kernel, &[&t], &o)?;
        return Ok(vec![Val::T(o)]);
    }
    // Negative padding crops: a Slice first.
    if low.iter().chain(high).any(|&v| v < 0) {
        let start: Vec<u64> = low.iter().map(|&v| (-v).max(0) as u64).collect();
        let limit: Vec<u64> = (0..r)
            .map(|a| (dims[a] as i128 - (-high[a]).max(0)).max(0) as u64)
            .collect();
        if let Some(a) = (0..r).find(|&a| start[a] >= limit[a]) {
            return Err(at(
                &st.span,
                format!(
                    "`pad` crops every element of axis {a} of a computed tensor (size {}, low {}, high {}): \
                     the result would be padding only",
                    dims[a], low[a], high[a]
                ),
            ));
        }
        let kept: Vec<u64> = (0..r).map(|a| limit[a] - start[a]).collect();
        let ones = vec![1; r];
        let v = slice(lx, st, base, &Val::T(t), (&start, &limit, &ones), &kept)?;
        let Some(Val::T(cropped)) = v.into_iter().next() else {
            return Err(at(&st.span, "the cropped operand has no value"));
        };
        t = cropped;
    }
    for a in 0..r {
        if low[a] <= 0 && high[a] <= 0 {
            continue;
        }
        let mut ins = Vec::new();
        let side = |lx: &mut Lx, n: i128, t: &Tens| -> Result<Tens, At> {
            let mut d = t.dims.clone();
            d[a] = n as u64;
            emit_const(lx, &st.span, &Konst::splat(t.dtype, d, value))
        };
        if low[a] > 0 {
            ins.push(side(lx, low[a], &t)?);
        }
        ins.push(t.clone());
        if high[a] > 0 {
            ins.push(side(lx, high[a], &t)?);
        }
        let mut dims = t.dims.clone();
        dims[a] = out[a];
        let o = lx.declare(base, t.dtype, &dims);
        let refs: Vec<&Tens> = ins.iter().collect();
        let kernel = Kernel::Concat {
            axis: a,
            inputs: ins.len(),
        };
        lx.step(&st.span, kernel, &refs, &o)?;
        t = o;
    }
    Ok(vec![Val::T(t)])
}

/// A `pad`'s amounts per axis (`low`, `high`, `interior`; negative `low`/`high` crop)
/// and the result's dims.
struct Pads {
    low: Vec<i128>,
    high: Vec<i128>,
    interior: Vec<i128>,
    /// Where `interior` is written.
    interior_at: std::ops::Range<usize>,
    out: Vec<u64>,
}

/// The amounts of `st`, a `pad` of an operand of `dims`, each list checked where it is
/// written, and the result's dims checked against its type.
fn pads(st: &Stmt, dims: &[u64]) -> Result<Pads, At> {
    let r = dims.len();
    // A list of `r` integers, and where its key is written.
    let list = |key: &str| {
        let v = match super::ops::attr_lists(&st.args, key) {
            Some((v, None)) if v.len() == r && v.iter().all(|x| i64::try_from(*x).is_ok()) => v,
            _ => {
                return Err(at(
                    &st.span,
                    format!("`pad` needs `{key} = [...]` with {r} integers, one per axis"),
                ));
            }
        };
        let span = st
            .args
            .iter()
            .find(|t| t.tok == super::lex::Tok::Ident(key.into()))
            .map_or_else(|| st.span.clone(), |t| t.span.clone());
        Ok((v, span))
    };
    let ((low, _), (high, _)) = (list("low")?, list("high")?);
    let (interior, interior_at) = list("interior")?;
    if let Some(a) = (0..r).find(|&a| interior[a] < 0) {
        return Err(at(
            &interior_at,
            format!("`interior` {} on axis {a} is negative", interior[a]),
        ));
    }
    let mut out = Vec::new();
    for a in 0..r {
        let d = dims[a] as i128;
        let n = d + low[a] + high[a] + (d - 1).max(0) * interior[a];
        if n < 0 || n > i128::from(u64::MAX) {
            return Err(at(
                &st.span,
                format!(
                    "axis {a}: padding {}/{} (interior {}) of size {d} gives {n} elements",
                    low[a], high[a], interior[a]
                ),
            ));
        }
        out.push(n as u64);
    }
    let out = super::ops::result_dims(st, &out)?;
    Ok(Pads {
        low,
        high,
        interior,
        interior_at,
        out,
    })
}
