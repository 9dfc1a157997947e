//! Data movement: broadcasts (kept unmaterialised), reshapes, transposes,
//! concatenation, slices and pads of computed tensors.

use super::emit::{emit_const, folded, q, reshaped, tensor_of, transposed};
use super::fold::Konst;
use super::lower::{Lx, Tens, Val};
use super::parse::{At, Stmt, at};
use mnsim_kernels::Kernel;

pub(super) fn broadcast(st: &Stmt, x: &Val, map: &[usize], out: Vec<u64>) -> Result<Vec<Val>, At> {
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
        // A broadcast that adds no elements is its source reshaped.
        Val::B { src, .. } if n(&src.dims) == n(&out) => {
            Ok(vec![Val::T(reshaped(lx, &st.span, src, &out)?)])
        }
        _ => Err(at(
            &st.span,
            "a reshape of a broadcast is not supported (no broadcast kernel materialises it)",
        )),
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
    let names: Vec<String> = ins.iter().map(|t| q(&t.name)).collect();
    let text = format!(
        "Concat(inputs: [{}], axis: {axis}, out: {}",
        names.join(", "),
        q(&o.name)
    );
    let refs: Vec<&Tens> = ins.iter().collect();
    lx.step(
        &st.span,
        text,
        Kernel::Concat {
            axis,
            inputs: ins.len(),
        },
        &refs,
        &o,
    )?;
    Ok(vec![Val::T(o)])
}

/// `slice` of a computed tensor along each axis it narrows: mnsim has no slice kernel,
/// so an aligned block (`start` a multiple of the length `limit - start`, which
/// divides the axis, stride 1) is picked by a masked sum: a Reshape splitting the axis
/// into (blocks, length), a Binary Mul by a one-hot constant over the blocks and a
/// ReduceAxes Add over them (exact: the other blocks add zeros).
pub(super) fn slice(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    x: &Val,
    start: &[u64],
    stride: &[u64],
    out: &[u64],
) -> Result<Vec<Val>, At> {
    let mut t = tensor_of(lx, &st.span, x, "the sliced operand")?;
    for a in 0..out.len() {
        let (d, len, s0) = (t.dims[a], out[a], start[a]);
        if len == d {
            continue;
        }
        if stride[a] != 1 || len == 0 || d % len != 0 || s0 % len != 0 {
            return Err(at(
                &st.name_span,
                format!(
                    "`slice` of a computed tensor is supported for aligned blocks only (axis {a}: {s0}:{}:{} of {d}); mnsim has no slice kernel",
                    s0 + len * stride[a],
                    stride[a]
                ),
            ));
        }
        let blocks = d / len;
        let mut split = t.dims.clone();
        split[a] = len;
        split.insert(a, blocks);
        let r = reshaped(lx, &st.span, &t, &split)?;
        let mut mdims = vec![1u64; split.len() - a];
        mdims[0] = blocks;
        let mut data = vec![0.0; blocks as usize];
        data[(s0 / len) as usize] = 1.0;
        let mask = Konst {
            dtype: t.dtype,
            dims: mdims,
            data: std::rc::Rc::new(data),
        };
        let m = emit_const(lx, &st.span, &mask)?;
        let masked = lx.declare(&format!("{base}_m{a}"), t.dtype, &split);
        let text = format!(
            "Binary(op: Mul, a: {}, b: {}, out: {}",
            q(&r.name),
            q(&m.name),
            q(&masked.name)
        );
        lx.step(
            &st.span,
            text,
            Kernel::Binary(mnsim_kernels::BinaryOp::Mul),
            &[&r, &m],
            &masked,
        )?;
        let mut dims = t.dims.clone();
        dims[a] = len;
        let o = lx.declare(&format!("{base}_s{a}"), t.dtype, &dims);
        let text = format!(
            "ReduceAxes(op: Add, input: {}, axes: [{a}], keep_dims: false, out: {}",
            q(&masked.name),
            q(&o.name)
        );
        let kernel = Kernel::ReduceAxes {
            op: mnsim_kernels::ReduceKind::Add,
            axes: vec![a],
            keep_dims: false,
        };
        lx.step(&st.span, text, kernel, &[&masked], &o)?;
        t = o;
    }
    Ok(vec![Val::T(t)])
}

/// `pad %x, %v, low = [..], high = [..], interior = [..]`: on a constant, evaluated;
/// on a computed tensor, edge padding (low and high ≥ 0, interior 0) with a constant
/// padding value: per padded axis a `Concat` of a constant filled with the value
/// (`low` long), the tensor and another constant (`high` long). Negative (cropping)
/// and interior padding of computed tensors are errors: mnsim has no slice or
/// scatter kernel to make them.
pub(super) fn pad(lx: &mut Lx, st: &Stmt, base: &str, vals: &[Val]) -> Result<Vec<Val>, At> {
    let dims = vals[0].dims();
    let r = dims.len();
    let mut lists = Vec::new();
    for key in ["low", "high", "interior"] {
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
        lists.push((v, span));
    }
    let (low, high, interior) = (&lists[0].0, &lists[1].0, &lists[2].0);
    if let Some(a) = (0..r).find(|&a| interior[a] < 0) {
        return Err(at(
            &lists[2].1,
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
    if interior.iter().any(|&v| v != 0) {
        return Err(at(
            &lists[2].1,
            "interior padding of a computed tensor is not supported: mnsim has no kernel to interleave the padding value",
        ));
    }
    for (i, list) in [low, high].iter().enumerate() {
        if list.iter().any(|&v| v < 0) {
            return Err(at(
                &lists[i].1,
                "negative padding (cropping) of a computed tensor is not supported: mnsim has no slice kernel",
            ));
        }
    }
    let mut t = tensor_of(lx, &st.span, &vals[0], "the padded operand")?;
    for a in 0..r {
        if low[a] == 0 && high[a] == 0 {
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
        let names: Vec<String> = ins.iter().map(|x| q(&x.name)).collect();
        let text = format!(
            "Concat(inputs: [{}], axis: {a}, out: {}",
            names.join(", "),
            q(&o.name)
        );
        let refs: Vec<&Tens> = ins.iter().collect();
        let kernel = Kernel::Concat {
            axis: a,
            inputs: ins.len(),
        };
        lx.step(&st.span, text, kernel, &refs, &o)?;
        t = o;
    }
    Ok(vec![Val::T(t)])
}
