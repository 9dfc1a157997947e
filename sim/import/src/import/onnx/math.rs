//! Arithmetic nodes: elementwise ops with numpy broadcasting (constants folded, or
//! DRAM tensors of their smallest broadcastable shape), `Pow`, `Where`, `Cast`,
//! `MatMul`, `Gemm`, `Softmax`, `LayerNormalization` and the reductions.

use super::lower::Bad;
use super::lower::{Ox, Tens, Val};
use super::ops::{Attrs, axis, ints_of, req};
use crate::import::stablehlo::fold::Konst;
use mnsim_arch::DType;
use mnsim_kernels::{Act, BinaryOp, Cmp, Eltwise, Kernel, ReduceKind, UnaryOp};

/// numpy broadcasting of shapes.
pub(super) fn numpy(shapes: &[Vec<u64>]) -> Result<Vec<u64>, Bad> {
    let r = shapes.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![1u64; r];
    for s in shapes {
        for (i, &d) in s.iter().enumerate() {
            let a = r - s.len() + i;
            if out[a] != 1 && d != 1 && out[a] != d {
                return Err(format!(
                    "shapes {shapes:?} do not broadcast (axis {a}: {} and {d})",
                    out[a]
                )
                .into());
            }
            if d != 1 {
                out[a] = d;
            }
        }
    }
    Ok(out)
}

/// A constant broadcast numpy-style to `full`.
pub(super) fn konst_to(k: &Konst, full: &[u64]) -> Result<Konst, Bad> {
    if k.dims == full {
        return Ok(k.clone());
    }
    let off = full.len() - k.dims.len();
    let map: Vec<usize> = (off..full.len()).collect();
    Ok(k.broadcast(&map, full.to_vec())?)
}

/// An elementwise operand as a tensor: a constant at its smallest broadcastable
/// shape, a broadcast's source.
fn operand(ox: &mut Ox, v: &Val) -> Result<Tens, Bad> {
    match v {
        Val::T(t) => Ok(t.clone()),
        Val::C(k) => ox.emit_const(&k.essential()?),
        Val::B { src, .. } => Ok(src.clone()),
    }
}

/// A kernel over elementwise operands (`Binary`, `Select`, `Compare`): folded when
/// every operand is a constant; otherwise the result is a tensor, or a broadcast of a
/// smaller one when every operand is broadcast.
fn elementwise(
    ox: &mut Ox,
    base: &str,
    kernel: Kernel,
    vals: &[&Val],
    dtype: DType,
    fold: &dyn Fn(&[f64]) -> f64,
) -> Result<Val, Bad> {
    let full = numpy(&vals.iter().map(|v| v.dims()).collect::<Vec<_>>())?;
    if vals.iter().all(|v| matches!(v, Val::C(_))) {
        let ks: Vec<Konst> = vals
            .iter()
            .map(|v| match v {
                Val::C(k) => konst_to(k, &full),
                _ => unreachable!("all constants"),
            })
            .collect::<Result<_, _>>()?;
        let refs: Vec<&Konst> = ks.iter().collect();
        return Ok(Val::C(Konst::map(&refs, dtype, fold)?));
    }
    let mut ins = Vec::new();
    for v in vals {
        ins.push(operand(ox, v)?);
    }
    let s = numpy(&ins.iter().map(Tens::declared_dims).collect::<Vec<_>>())?;
    let refs: Vec<&Tens> = ins.iter().collect();
    if s == full || (full.is_empty() && s == [1]) {
        let o = ox.declare(base, dtype, &full);
        ox.step(kernel, &refs, &o)?;
        Ok(Val::T(o))
    } else {
        let o = ox.declare(base, dtype, &s);
        ox.step(kernel, &refs, &o)?;
        Ok(Val::B { src: o, out: full })
    }
}

/// The dtype of an op's result: that of its first operand that is not a constant
/// (ONNX gives both operands one type; a constant may come from a wider literal).
fn data_dtype(vals: &[&Val]) -> DType {
    vals.iter()
        .find(|v| !matches!(v, Val::C(_)))
        .unwrap_or(&vals[0])
        .dtype()
}

pub(super) fn binary(
    ox: &mut Ox,
    base: &str,
    op: BinaryOp,
    ins: &[Option<Val>],
) -> Result<Val, Bad> {
    let (a, b) = (req(ins, 0, op.name())?, req(ins, 1, op.name())?);
    // An operand that is the op's identity (x + 0, x · 1) of the other's shape: no step.
    let splat = |v: &Val| match v {
        Val::C(k) if k.is_splat() => Some(k.data[0]),
        _ => None,
    };
    let ident = |x: Option<f64>, rhs: bool| {
        x.is_some_and(|x| match op {
            BinaryOp::Add => x == 0.0,
            BinaryOp::Sub => rhs && x == 0.0,
            BinaryOp::Mul => x == 1.0,
            BinaryOp::Div => rhs && x == 1.0,
            BinaryOp::Max | BinaryOp::Min => false,
        })
    };
    let full = numpy(&[a.dims(), b.dims()])?;
    if ident(splat(b), true) && !matches!(a, Val::C(_)) && a.dims() == full {
        return Ok(a.clone());
    }
    if ident(splat(a), false) && !matches!(b, Val::C(_)) && b.dims() == full {
        return Ok(b.clone());
    }
    let dtype = data_dtype(&[a, b]);
    elementwise(ox, base, Kernel::Binary(op), &[a, b], dtype, &move |x| {
        op.apply(x[0], x[1])
    })
}

pub(super) fn compare(ox: &mut Ox, base: &str, c: Cmp, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let (a, b) = (
        req(ins, 0, "the comparison")?,
        req(ins, 1, "the comparison")?,
    );
    let k = super::ops::cmp_kernel(c);
    elementwise(ox, base, k, &[a, b], DType::Pred, &move |x| {
        c.apply(x[0], x[1])
    })
}

pub(super) fn select(ox: &mut Ox, base: &str, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let (c, a, b) = (
        req(ins, 0, "Where")?,
        req(ins, 1, "Where")?,
        req(ins, 2, "Where")?,
    );
    // A condition known at import that is all true or all false picks an operand.
    if let Val::C(k) = c
        && let Ok(v) = k.values()
    {
        let full = numpy(&[c.dims(), a.dims(), b.dims()])?;
        if v.iter().all(|&x| x != 0.0) && a.dims() == full {
            return Ok(a.clone());
        }
        if v.iter().all(|&x| x == 0.0) && b.dims() == full {
            return Ok(b.clone());
        }
    }
    let dtype = data_dtype(&[a, b]);
    elementwise(ox, base, Kernel::Select, &[c, a, b], dtype, &|x| {
        if x[0] != 0.0 { x[1] } else { x[2] }
    })
}

/// A one-operand kernel; on a broadcast it runs on the source (fewer elements).
pub(super) fn unary(ox: &mut Ox, base: &str, u: UnaryOp, x: &Val) -> Result<Val, Bad> {
    match x {
        Val::C(k) => Ok(Val::C(Konst::map(&[k], k.dtype, move |v| u.apply(v[0]))?)),
        Val::T(t) => Ok(Val::T(ox.apply(base, Kernel::Unary(u), &[t], t.dtype)?)),
        Val::B { src, out } => {
            let o = ox.apply(base, Kernel::Unary(u), &[src], src.dtype)?;
            Ok(Val::B {
                src: o,
                out: out.clone(),
            })
        }
    }
}

/// `Gelu`: the tanh form is the `Gelu` kernel, the exact (erf) form `Eltwise Gelu`.
pub(super) fn gelu(ox: &mut Ox, base: &str, a: &Attrs, x: &Val) -> Result<Val, Bad> {
    match a.string("approximate")?.as_deref().unwrap_or("none") {
        "tanh" => unary(ox, base, UnaryOp::Gelu, x),
        "none" => {
            let t = ox.tensor_of(x, "the operand")?;
            let k = Kernel::Eltwise(Eltwise::Act(Act::Gelu { erf: true }));
            Ok(Val::T(ox.apply(base, k, &[&t], t.dtype)?))
        }
        other => Err(format!("unknown `approximate` `{other}` (none or tanh)").into()),
    }
}

/// `Pow` with a constant exponent a kernel computes: 2 (Square), 3 (Square, Mul),
/// 1/2 (Sqrt), −1/2 (Rsqrt), −1 (Recip), 1.
pub(super) fn pow(ox: &mut Ox, base: &str, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let (x, e) = (req(ins, 0, "Pow")?, req(ins, 1, "Pow")?);
    if let (Val::C(a), Val::C(b)) = (x, e) {
        let full = numpy(&[a.dims.clone(), b.dims.clone()])?;
        let (a, b) = (konst_to(a, &full)?, konst_to(b, &full)?);
        return Ok(Val::C(Konst::map(&[&a, &b], a.dtype, |v| v[0].powf(v[1]))?));
    }
    let e = match e {
        Val::C(k) if k.values().is_ok_and(|v| v.windows(2).all(|w| w[0] == w[1])) => k.get(0),
        _ => {
            return Err(
                "`Pow` with an exponent that is not one constant is not supported (no pow kernel)"
                    .into(),
            );
        }
    };
    let u = match e {
        2.0 => UnaryOp::Square,
        0.5 => UnaryOp::Sqrt,
        -0.5 => UnaryOp::Rsqrt,
        -1.0 => UnaryOp::Recip,
        1.0 => return Ok(x.clone()),
        3.0 => {
            let sq = unary(ox, &format!("{base}_sq"), UnaryOp::Square, x)?;
            return binary(ox, base, BinaryOp::Mul, &[Some(sq), Some(x.clone())]);
        }
        _ => {
            return Err(format!(
                "`Pow` with exponent {e} is not supported (2, 3, 1/2, −1/2, −1 and 1 map to kernels)"
            ).into());
        }
    };
    unary(ox, base, u, x)
}

pub(super) fn cast(ox: &mut Ox, base: &str, a: &Attrs, x: &Val) -> Result<Val, Bad> {
    let to = a.int("to")?.ok_or("Cast needs the attribute `to`")?;
    let dtype = super::model::dtype(to as i32)?;
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    let step = |ox: &mut Ox, t: &Tens| -> Result<Tens, Bad> {
        let o = ox.declare(base, dtype, &t.dims);
        ox.cast(t, &o)?;
        Ok(o)
    };
    Ok(match x {
        Val::C(k) => Val::C(Konst::map(&[k], dtype, |v| v[0])?),
        Val::T(t) => Val::T(step(ox, t)?),
        Val::B { src, out } => Val::B {
            src: step(ox, src)?,
            out: out.clone(),
        },
    })
}

/// `MatMul` (numpy's matmul): a rank-1 operand is a row (a) or a column (b) that the
/// result drops; batch axes broadcast.
pub(super) fn matmul(ox: &mut Ox, base: &str, a: &Val, b: &Val) -> Result<Val, Bad> {
    let (a, b) = (ox.tensor_of(a, "the lhs")?, ox.tensor_of(b, "the rhs")?);
    if a.dims.is_empty() || b.dims.is_empty() {
        return Err("MatMul of a scalar".into());
    }
    let (a1, b1) = (a.dims.len() == 1, b.dims.len() == 1);
    let a2 = if a1 {
        ox.reshaped(&a, &[1, a.dims[0]])?
    } else {
        a
    };
    let b2 = if b1 {
        ox.reshaped(&b, &[b.dims[0], 1])?
    } else {
        b
    };
    let (ra, rb) = (a2.dims.len(), b2.dims.len());
    if a2.dims[ra - 1] != b2.dims[rb - 2] {
        return Err(format!(
            "MatMul of {:?} and {:?}: the contracted sizes differ ({} and {})",
            a2.dims,
            b2.dims,
            a2.dims[ra - 1],
            b2.dims[rb - 2]
        )
        .into());
    }
    let kernel = crate::import::lower::contraction(false, false, &a2.dims, &b2.dims);
    let o = ox.apply(base, kernel, &[&a2, &b2], a2.dtype)?;
    let mut want = o.dims.clone();
    if b1 {
        want.pop();
    }
    if a1 {
        want.remove(want.len() - 1 - usize::from(!b1));
    }
    Ok(Val::T(ox.reshaped(&o, &want)?))
}

/// `Gemm`: `alpha · A' · B' + beta · C` (A', B' transposed when `transA`, `transB`).
pub(super) fn gemm(ox: &mut Ox, base: &str, a: &Attrs, ins: &[Option<Val>]) -> Result<Val, Bad> {
    let (x, w) = (req(ins, 0, "Gemm")?, req(ins, 1, "Gemm")?);
    let (x, w) = (ox.tensor_of(x, "A")?, ox.tensor_of(w, "B")?);
    if x.dims.len() != 2 || w.dims.len() != 2 {
        return Err(format!("Gemm takes matrices; A is {:?}, B is {:?}", x.dims, w.dims).into());
    }
    let (ta, tb) = (a.int_or("transA", 0)? != 0, a.int_or("transB", 0)? != 0);
    let (alpha, beta) = (a.float_or("alpha", 1.0)?, a.float_or("beta", 1.0)?);
    let kernel = crate::import::lower::contraction(ta, tb, &x.dims, &w.dims);
    let mm = format!("{base}_mm");
    let c = ins.get(2).and_then(Option::as_ref);
    let mut y = Val::T(ox.apply(
        if c.is_some() || alpha != 1.0 {
            &mm
        } else {
            base
        },
        kernel,
        &[&x, &w],
        x.dtype,
    )?);
    if alpha != 1.0 {
        let s = Val::C(Konst::splat(x.dtype, Vec::new(), alpha));
        y = binary(
            ox,
            &format!("{base}_alpha"),
            BinaryOp::Mul,
            &[Some(y), Some(s)],
        )?;
    }
    if let Some(c) = c {
        let c = if beta != 1.0 {
            let s = Val::C(Konst::splat(c.dtype(), Vec::new(), beta));
            binary(
                ox,
                &format!("{base}_beta"),
                BinaryOp::Mul,
                &[Some(c.clone()), Some(s)],
            )?
        } else {
            c.clone()
        };
        y = binary(ox, base, BinaryOp::Add, &[Some(y), Some(c)])?;
    }
    Ok(y)
}

pub(super) fn softmax(ox: &mut Ox, base: &str, a: &Attrs, x: &Val) -> Result<Val, Bad> {
    let t = ox.tensor_of(x, "the operand")?;
    let ax = axis(a.int_or("axis", -1)?, t.dims.len(), "axis")?;
    if ox.opset < 13 && ax + 1 != t.dims.len() {
        return Err(
            "Softmax before opset 13 flattens the trailing axes; mnsim reads opset 13 and later"
                .into(),
        );
    }
    Ok(Val::T(ox.apply(
        base,
        Kernel::Softmax { axis: ax },
        &[&t],
        t.dtype,
    )?))
}

/// `LayerNormalization` over the axes from `axis` on: the `LayerNorm` kernel (over the
/// trailing axes merged into one when there are several), then `· Scale + B`.
pub(super) fn layer_norm(
    ox: &mut Ox,
    base: &str,
    a: &Attrs,
    ins: &[Option<Val>],
) -> Result<Val, Bad> {
    let x = ox.tensor_of(req(ins, 0, "LayerNormalization")?, "the operand")?;
    let r = x.dims.len();
    let ax = axis(a.int_or("axis", -1)?, r, "axis")?;
    let eps = a.float_or("epsilon", 1e-5)?;
    let inner: u64 = x.dims[ax..].iter().product();
    let merged = [x.dims[..ax].to_vec(), vec![inner]].concat();
    let xm = ox.reshaped(&x, &merged)?;
    let k = Kernel::LayerNorm {
        axis: merged.len() - 1,
        eps,
    };
    let n = ox.apply(&format!("{base}_norm"), k, &[&xm], x.dtype)?;
    let n = ox.reshaped(&n, &x.dims)?;
    let scale = req(ins, 1, "LayerNormalization")?.clone();
    let bias = ins.get(2).and_then(Option::as_ref).cloned();
    let scaled_base = if bias.is_some() {
        format!("{base}_scaled")
    } else {
        base.to_string()
    };
    let y = binary(
        ox,
        &scaled_base,
        BinaryOp::Mul,
        &[Some(Val::T(n)), Some(scale)],
    )?;
    match bias {
        Some(b) => binary(ox, base, BinaryOp::Add, &[Some(y), Some(b)]),
        None => Ok(y),
    }
}

/// `ReduceSum`, `ReduceMean`, ...: the axes from the attribute (before opset 18; 13 for
/// ReduceSum) or the second input; none reduces every axis unless
/// `noop_with_empty_axes`.
pub(super) fn reduce(
    ox: &mut Ox,
    base: &str,
    op: ReduceKind,
    a: &Attrs,
    ins: &[Option<Val>],
) -> Result<Val, Bad> {
    let x = req(ins, 0, "the reduction")?;
    let r = x.dims().len();
    let given = match ins.get(1).and_then(Option::as_ref) {
        Some(v) => Some(ints_of(v, "the axes")?),
        None => a.ints("axes")?,
    };
    let keep = a.int_or("keepdims", 1)? != 0;
    let mut axes: Vec<usize> = match given {
        Some(g) if !g.is_empty() => g
            .iter()
            .map(|&v| axis(v, r, "axis"))
            .collect::<Result<_, _>>()?,
        _ if a.int_or("noop_with_empty_axes", 0)? != 0 => return Ok(x.clone()),
        _ => (0..r).collect(),
    };
    axes.sort_unstable();
    axes.dedup();
    let t = ox.tensor_of(x, "the operand")?;
    let k = Kernel::ReduceAxes {
        op,
        axes: axes.clone(),
        keep_dims: keep,
    };
    let dims: Vec<u64> = (0..r)
        .filter_map(|i| {
            if axes.contains(&i) {
                keep.then_some(1)
            } else {
                Some(t.dims[i])
            }
        })
        .collect();
    let o = ox.declare(base, t.dtype, &dims);
    ox.step(k, &[&t], &o)?;
    Ok(Val::T(o))
}
