//! Kernel steps for values that are not constants: elementwise ops (operands read
//! through numpy broadcasting), data movement, `dot_general`; constants that meet a
//! tensor become DRAM tensors of their smallest broadcastable shape.

use super::fold::Konst;
use super::lower::{Lx, Tens, Val};
use super::parse::{At, Stmt, at};
use crate::scenario::Init;
use mnsim_kernels::{BinaryOp, Eltwise, Kernel, UnaryOp};
use std::ops::Range;

pub(super) fn folded(st: &Stmt, r: Result<Konst, String>) -> Result<Vec<Val>, At> {
    r.map(|k| vec![Val::C(k)]).map_err(|e| at(&st.span, e))
}

/// The init of a constant: `Fill`, `Zeros`, `Ones`, `Iota` (element i holds i) or
/// `Runs`.
pub(crate) fn init_of(k: &Konst) -> Result<Init, String> {
    let v = if k.is_splat() {
        vec![k.data[0]]
    } else {
        k.values()?
    };
    if v.len() > 2 && v.iter().enumerate().all(|(i, &x)| x == i as f64) {
        return Ok(Init::Iota);
    }
    let mut runs: Vec<(u64, f64)> = Vec::new();
    for x in v {
        match runs.last_mut() {
            Some((n, y)) if *y == x || (y.is_nan() && x.is_nan()) => *n += 1,
            _ => runs.push((1, x)),
        }
    }
    Ok(match runs.as_slice() {
        [(_, x)] if *x == 0.0 => Init::Zeros,
        [(_, x)] if *x == 1.0 => Init::Ones,
        [(_, x)] => Init::Fill { value: *x },
        _ => Init::Runs(runs),
    })
}

/// `iota` of `dims` along `axis`: evaluated at import (a constant) up to [`FOLD_LIMIT`]
/// elements; above, a broadcast of the one-axis iota (a DRAM tensor, `init: Iota`), so
/// that masks built from it are kernels on the shards, of any size.
pub(super) fn iota(
    lx: &mut Lx,
    st: &Stmt,
    dtype: mnsim_arch::DType,
    dims: Vec<u64>,
    axis: usize,
) -> Result<Vec<Val>, At> {
    if super::fold::numel(&dims).is_some_and(|n| n <= super::fold::FOLD_LIMIT) {
        return folded(st, Konst::iota(dtype, dims, axis));
    }
    let line = Konst::iota(dtype, vec![dims[axis]], 0).map_err(|e| at(&st.span, e))?;
    let src = emit_const(lx, &st.span, &line)?;
    Ok(vec![Val::B {
        src,
        map: vec![axis],
        out: dims,
    }])
}

/// A constant as a DRAM tensor (loaded before its first use), shared by equal constants.
pub(super) fn emit_const(lx: &mut Lx, span: &Range<usize>, k: &Konst) -> Result<Tens, At> {
    let key = k.key();
    if let Some(n) = lx.emitted.get(&key) {
        return Ok(Tens {
            name: n.clone(),
            dtype: k.dtype,
            dims: k.dims.clone(),
        });
    }
    let init = init_of(k).map_err(|e| at(span, e))?;
    let base = format!("c{}", lx.emitted.len());
    let t = lx.declare(&base, k.dtype, &k.dims);
    if let Some(d) = lx.decls.last_mut() {
        d.init = Some(init);
        d.constant = true;
    }
    lx.inputs.push(t.name.clone());
    lx.emitted.insert(key, t.name.clone());
    Ok(t)
}

/// A `Reshape` step (shared when the same reshape is asked again).
pub(super) fn reshaped(
    lx: &mut Lx,
    span: &Range<usize>,
    x: &Tens,
    dims: &[u64],
) -> Result<Tens, At> {
    if x.dims == dims {
        return Ok(x.clone());
    }
    let key = (x.name.clone(), dims.to_vec());
    if let Some(n) = lx.reshaped.get(&key) {
        return Ok(Tens {
            name: n.clone(),
            dtype: x.dtype,
            dims: dims.to_vec(),
        });
    }
    let o = lx.declare(&format!("{}_r", x.name), x.dtype, dims);
    let shape = if dims.is_empty() {
        vec![1]
    } else {
        dims.to_vec()
    };
    lx.step(span, Kernel::Reshape { shape }, &[x], &o)?;
    lx.reshaped.insert(key, o.name.clone());
    Ok(o)
}

pub(super) fn transposed(
    lx: &mut Lx,
    span: &Range<usize>,
    x: &Tens,
    perm: &[usize],
) -> Result<Tens, At> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x.clone());
    }
    let dims: Vec<u64> = perm.iter().map(|&p| x.dims[p]).collect();
    let o = lx.declare(&format!("{}_t", x.name), x.dtype, &dims);
    lx.step(
        span,
        Kernel::Transpose {
            perm: perm.to_vec(),
        },
        &[x],
        &o,
    )?;
    Ok(o)
}

/// A value as a tensor for a kernel that does not broadcast: a constant at its full
/// shape, a broadcast that adds no elements as its source reshaped, one that adds
/// elements materialised by an `Expand` of its source (its axes in order, aligned).
pub(super) fn tensor_of(lx: &mut Lx, span: &Range<usize>, v: &Val, what: &str) -> Result<Tens, At> {
    match v {
        Val::T(t) => Ok(t.clone()),
        Val::C(k) => emit_const(lx, span, k),
        Val::B { src, out, map } => {
            if src.dims.iter().product::<u64>() == out.iter().product::<u64>() {
                let mut order: Vec<usize> = (0..src.dims.len()).collect();
                order.sort_by_key(|&j| map[j]);
                let t = transposed(lx, span, src, &order)?;
                return reshaped(lx, span, &t, out);
            }
            let x = operand(lx, span, v)?;
            let o = lx.declare(&format!("{}_x", src.name), src.dtype, out);
            let shape = o.declared_dims();
            lx.step(span, Kernel::Expand { shape }, &[&x], &o)?;
            Ok(o)
        }
        Val::Unit => Err(at(
            span,
            format!("{what} has no value (a shape assertion's result)"),
        )),
    }
}

/// An elementwise operand: a tensor, a constant (its smallest broadcastable shape), or
/// a broadcast's source with its axes in order and reshaped to align numpy-style.
fn operand(lx: &mut Lx, span: &Range<usize>, v: &Val) -> Result<Tens, At> {
    match v {
        Val::T(t) => Ok(t.clone()),
        Val::C(k) => {
            let e = k.essential().map_err(|e| at(span, e))?;
            emit_const(lx, span, &e)
        }
        Val::B { src, map, out } => {
            // Source axes in output order.
            let mut order: Vec<usize> = (0..map.len()).collect();
            order.sort_by_key(|&j| map[j]);
            let src = transposed(lx, span, src, &order)?;
            let mut need = vec![1u64; out.len()];
            for (j, &o) in order.iter().enumerate() {
                need[map[o]] = src.dims[j];
            }
            let first = need.iter().position(|&d| d != 1).unwrap_or(need.len());
            let need = need[first..].to_vec();
            // Size-1 axes a source keeps need no reshape when numpy alignment already holds.
            if src.dims == need || (src.dims.iter().product::<u64>() == 1 && need.is_empty()) {
                return Ok(src);
            }
            reshaped(lx, span, &src, &need)
        }
        Val::Unit => Err(at(
            span,
            "an operand has no value (a shape assertion's result)",
        )),
    }
}

/// numpy broadcasting of shapes (they are known to broadcast to the full shape).
fn numpy(shapes: &[&[u64]]) -> Vec<u64> {
    let r = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1u64; r];
    for s in shapes {
        for (i, &d) in s.iter().enumerate() {
            let a = r - s.len() + i;
            out[a] = out[a].max(d);
        }
    }
    out
}

/// A kernel over elementwise operands (`Binary`, `Select`, `Eltwise Compare`) whose
/// full shapes must be equal: the result is a tensor, or a broadcast of a smaller one
/// when every operand is broadcast.
pub(super) fn elementwise(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    kernel: Kernel,
    vals: &[Val],
) -> Result<Vec<Val>, At> {
    let full = vals[vals.len() - 1].dims();
    for v in vals {
        if let Val::Unit = v {
            return Err(at(&st.span, "an operand has no value"));
        }
        if v.dims() != full && !(kernel == Kernel::Select && v.dims().is_empty()) {
            return Err(at(
                &st.span,
                format!("operand shapes differ: {:?} and {:?}", v.dims(), full),
            ));
        }
    }
    let full = super::ops::result_dims(st, &full)?;
    let dtype = super::ops::result_ty(st)?.dtype;
    // An operand that is the op's identity (x + 0, x · 1, max(x, −∞), ...) leaves the
    // other operand: no step.
    if let Kernel::Binary(b) = &kernel {
        let splat = |v: &Val| match v {
            Val::C(k) if k.is_splat() => Some(k.data[0]),
            _ => None,
        };
        let ident = |x: Option<f64>, rhs: bool| {
            x.is_some_and(|x| match b {
                BinaryOp::Add => x == 0.0,
                BinaryOp::Sub => rhs && x == 0.0,
                BinaryOp::Mul => x == 1.0,
                BinaryOp::Div => rhs && x == 1.0,
                BinaryOp::Max => x == f64::NEG_INFINITY,
                BinaryOp::Min => x == f64::INFINITY,
            })
        };
        if ident(splat(&vals[1]), true) && !matches!(vals[0], Val::C(_)) {
            return Ok(vec![vals[0].clone()]);
        }
        if ident(splat(&vals[0]), false) && !matches!(vals[1], Val::C(_)) {
            return Ok(vec![vals[1].clone()]);
        }
    }
    if let Some(ks) = Val::all_consts(vals) {
        let ks: Vec<Konst> = ks
            .iter()
            .map(|k| {
                if k.dims == full {
                    Ok((*k).clone())
                } else {
                    k.broadcast(&[], full.clone())
                }
            })
            .collect::<Result<_, _>>()
            .map_err(|e| at(&st.span, e))?;
        let refs: Vec<&Konst> = ks.iter().collect();
        let r = match &kernel {
            Kernel::Binary(b) => {
                let b = *b;
                Konst::compute(&refs, dtype, move |x| b.apply(x[0], x[1]))
            }
            Kernel::Select => Konst::map(&refs, dtype, |x| if x[0] != 0.0 { x[1] } else { x[2] }),
            Kernel::Unary(u) => {
                let u = *u;
                Konst::compute(&refs, dtype, move |x| u.apply(x[0]))
            }
            Kernel::Eltwise(Eltwise::Compare(c)) => {
                let c = *c;
                Konst::map(&refs, dtype, move |x| c.apply(x[0], x[1]))
            }
            other => return Err(at(&st.span, format!("cannot evaluate {other} at import"))),
        };
        return folded(st, r);
    }
    let mut ins = Vec::new();
    for v in vals {
        ins.push(operand(lx, &st.span, v)?);
    }
    let shapes: Vec<Vec<u64>> = ins.iter().map(Tens::declared_dims).collect();
    let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
    let s = numpy(&refs);
    let padded: Vec<u64> = std::iter::repeat_n(1, full.len().saturating_sub(s.len()))
        .chain(s.iter().copied())
        .collect();
    let (o, val) = if s == full || (full.is_empty() && s == [1]) {
        let o = lx.declare(base, dtype, &full);
        (o.clone(), Val::T(o))
    } else {
        let _ = &padded;
        let o = lx.declare(base, dtype, &s);
        let map: Vec<usize> = (full.len() - s.len()..full.len()).collect();
        (
            o.clone(),
            Val::B {
                src: o,
                map,
                out: full.clone(),
            },
        )
    };
    match &kernel {
        Kernel::Binary(_) | Kernel::Select | Kernel::Eltwise(Eltwise::Compare(_)) => {}
        other => return Err(at(&st.span, format!("{other} is not elementwise"))),
    }
    let refs: Vec<&Tens> = ins.iter().collect();
    lx.step(&st.span, kernel, &refs, &o)?;
    Ok(vec![val])
}

/// A one-operand kernel; on a broadcast it runs on the source (fewer elements).
pub(super) fn unary(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    u: UnaryOp,
    x: &Val,
) -> Result<Vec<Val>, At> {
    let dtype = super::ops::result_ty(st)?.dtype;
    super::ops::result_dims(st, &x.dims())?;
    match x {
        Val::C(k) => folded(st, Konst::compute(&[k], dtype, move |v| u.apply(v[0]))),
        Val::T(t) => {
            let o = unary_step(lx, st, base, u, t)?;
            Ok(vec![Val::T(o)])
        }
        Val::B { src, map, out } => {
            let o = unary_step(lx, st, base, u, src)?;
            Ok(vec![Val::B {
                src: o,
                map: map.clone(),
                out: out.clone(),
            }])
        }
        Val::Unit => Err(at(&st.span, "the operand has no value")),
    }
}

fn unary_step(lx: &mut Lx, st: &Stmt, base: &str, u: UnaryOp, t: &Tens) -> Result<Tens, At> {
    let o = lx.declare(base, t.dtype, &t.dims);
    lx.step(&st.span, Kernel::Unary(u), &[t], &o)?;
    Ok(o)
}

pub(super) fn select(lx: &mut Lx, st: &Stmt, base: &str, vals: &[Val]) -> Result<Vec<Val>, At> {
    // A condition known at import that is all true or all false picks an operand.
    if let Val::C(c) = &vals[0]
        && let Ok(v) = c.values()
    {
        if v.iter().all(|&x| x != 0.0) && vals[1].dims() == vals[2].dims() {
            return Ok(vec![vals[1].clone()]);
        }
        if v.iter().all(|&x| x == 0.0) && vals[1].dims() == vals[2].dims() {
            return Ok(vec![vals[2].clone()]);
        }
    }
    elementwise(lx, st, base, Kernel::Select, vals)
}

pub(super) fn convert(lx: &mut Lx, st: &Stmt, base: &str, x: &Val) -> Result<Vec<Val>, At> {
    let dtype = super::ops::result_ty(st)?.dtype;
    super::ops::result_dims(st, &x.dims())?;
    if x.dtype() == dtype {
        return Ok(vec![x.clone()]);
    }
    let step = |lx: &mut Lx, t: &Tens| -> Result<Tens, At> {
        let o = lx.declare(base, dtype, &t.dims);
        lx.cast(&st.span, t, &o)?;
        Ok(o)
    };
    match x {
        Val::C(k) => folded(st, Konst::map(&[k], dtype, |v| v[0])),
        Val::T(t) => Ok(vec![Val::T(step(lx, t)?)]),
        Val::B { src, map, out } => Ok(vec![Val::B {
            src: step(lx, src)?,
            map: map.clone(),
            out: out.clone(),
        }]),
        Val::Unit => Err(at(&st.span, "the operand has no value")),
    }
}

/// `power(x, c)` with a constant exponent that a kernel computes: 2 (Square), 1/2
/// (Sqrt), −1/2 (Rsqrt), −1 (Recip), 1.
pub(super) fn power(lx: &mut Lx, st: &Stmt, base: &str, vals: &[Val]) -> Result<Vec<Val>, At> {
    if let (Val::C(a), Val::C(b)) = (&vals[0], &vals[1]) {
        let dtype = super::ops::result_ty(st)?.dtype;
        return folded(st, Konst::compute(&[a, b], dtype, |x| x[0].powf(x[1])));
    }
    let e = match &vals[1] {
        Val::C(k) if k.is_splat() => k.data[0],
        _ => {
            return Err(at(
                &st.name_span,
                "`power` with an exponent that is not one constant is not supported (no pow kernel)",
            ));
        }
    };
    let u = if e == 2.0 {
        UnaryOp::Square
    } else if e == 0.5 {
        UnaryOp::Sqrt
    } else if e == -0.5 {
        UnaryOp::Rsqrt
    } else if e == -1.0 {
        UnaryOp::Recip
    } else if e == 1.0 {
        return Ok(vec![vals[0].clone()]);
    } else {
        return Err(at(
            &st.name_span,
            format!(
                "`power` with exponent {e} is not supported (2, 1/2, −1/2, −1 and 1 map to kernels)"
            ),
        ));
    };
    unary(lx, st, base, u, &vals[0])
}
