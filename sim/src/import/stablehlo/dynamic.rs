//! `dynamic_slice` and `dynamic_update_slice`: start indices known at import (a loop's
//! counter once unrolled, constants) make a static `Slice` (or the update's kernel with
//! its starts fixed); indices computed at run time read their value when the kernel
//! runs (docs/import.md). Every start is clamped as StableHLO clamps it, into
//! `[0, dim − size]`.

use super::emit::tensor_of;
use super::fold::Konst;
use super::lower::{Lx, Tens, Val};
use super::ops::{attr_lists, result_dims, short};
use super::parse::{At, Stmt, at};
use mnsim_arch::DType;
use mnsim_kernels::Kernel;

/// A start index: known at import, or a scalar computed at run time.
pub(super) enum Start {
    Known(u64),
    Runtime(Val),
}

/// The start operands `vals` (one scalar integer per axis of an operand of `dims`,
/// each slice `sizes[a]` long) as starts, the known ones clamped into `[0, dim − size]`.
pub(super) fn starts(
    st: &Stmt,
    vals: &[Val],
    dims: &[u64],
    sizes: &[u64],
) -> Result<Vec<Start>, At> {
    if vals.len() != dims.len() {
        return Err(at(
            &st.span,
            format!(
                "`{}` takes one start index per axis: {} for a rank-{} operand",
                short(&st.name),
                vals.len(),
                dims.len()
            ),
        ));
    }
    let mut out = Vec::new();
    for (a, v) in vals.iter().enumerate() {
        if !v.dims().is_empty() || v.dtype().is_float() || v.dtype() == mnsim_arch::DType::Pred {
            return Err(at(
                &st.span,
                format!(
                    "`{}`: start index {a} is {}{:?}, not an integer scalar",
                    short(&st.name),
                    v.dtype(),
                    v.dims()
                ),
            ));
        }
        let hi = dims[a] - sizes[a];
        out.push(match v {
            Val::C(k) => {
                let x = k.data[0];
                Start::Known(if x <= 0.0 { 0 } else { (x as u64).min(hi) })
            }
            other => Start::Runtime(other.clone()),
        });
    }
    Ok(out)
}

/// `dynamic_slice %x, %i0, %i1, ..., sizes = [..]`.
pub(super) fn dynamic_slice(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    vals: &[Val],
) -> Result<Vec<Val>, At> {
    let x = vals
        .first()
        .ok_or_else(|| at(&st.span, "`dynamic_slice` needs an operand"))?;
    let dims = x.dims();
    let sizes: Vec<u64> = match attr_lists(&st.args, "sizes") {
        Some((v, None)) if v.len() == dims.len() => v
            .iter()
            .zip(&dims)
            .map(|(&s, &d)| u64::try_from(s).ok().filter(|&s| s <= d))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                at(
                    &st.span,
                    format!("`sizes` {v:?} does not fit the operand {dims:?}"),
                )
            })?,
        _ => {
            return Err(at(
                &st.span,
                format!("`dynamic_slice` needs `sizes = [...]`, one per axis of {dims:?}"),
            ));
        }
    };
    let starts = starts(st, &vals[1..], &dims, &sizes)?;
    let out = result_dims(st, &sizes)?;
    let known: Option<Vec<u64>> = starts
        .iter()
        .map(|s| match s {
            Start::Known(v) => Some(*v),
            Start::Runtime(_) => None,
        })
        .collect();
    match known {
        Some(start) => {
            let limit: Vec<u64> = start.iter().zip(&sizes).map(|(s, n)| s + n).collect();
            let ones = vec![1; dims.len()];
            match x {
                Val::C(k) => super::ops::folded(st, k.slice(&start, &ones, out)),
                _ => super::movement::slice(lx, st, base, x, (&start, &limit, &ones), &out),
            }
        }
        None => {
            let x = tensor_of(lx, &st.span, x, "the sliced operand")?;
            let (dynamic, idx) = index_operands(lx, st, &starts, &dims, &sizes)?;
            let o = lx.declare(base, x.dtype, &out);
            let mut ins = vec![&x];
            ins.extend(idx.iter());
            let kernel = Kernel::DynamicSlice {
                sizes: o.declared_dims(),
                dynamic,
            };
            lx.step(&st.span, kernel, &ins, &o)?;
            Ok(vec![Val::T(o)])
        }
    }
}

/// The axes a slice (or update) `sizes` long does not take whole, and a scalar tensor
/// of each one's start: the run-time index, or the known start as a constant.
fn index_operands(
    lx: &mut Lx,
    st: &Stmt,
    starts: &[Start],
    dims: &[u64],
    sizes: &[u64],
) -> Result<(Vec<usize>, Vec<Tens>), At> {
    let (mut axes, mut ts) = (Vec::new(), Vec::new());
    for (a, s) in starts.iter().enumerate() {
        if sizes[a] == dims[a] {
            continue;
        }
        let t = match s {
            Start::Known(v) => {
                let k = Konst::splat(DType::S32, vec![], *v as f64);
                super::emit::emit_const(lx, &st.span, &k)?
            }
            Start::Runtime(v) => tensor_of(lx, &st.span, v, "a start index")?,
        };
        axes.push(a);
        ts.push(t);
    }
    Ok((axes, ts))
}

/// `dynamic_update_slice %x, %update, %i0, %i1, ...`: the `DynamicUpdateSlice` kernel,
/// each axis the update does not cover whole read at its start index (known or
/// computed).
pub(super) fn dynamic_update_slice(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    vals: &[Val],
) -> Result<Vec<Val>, At> {
    if vals.len() < 2 {
        return Err(at(
            &st.span,
            "`dynamic_update_slice` needs an operand, an update and start indices",
        ));
    }
    let (xv, uv) = (&vals[0], &vals[1]);
    let (dims, udims) = (xv.dims(), uv.dims());
    if udims.len() != dims.len() || udims.iter().zip(&dims).any(|(u, d)| u > d) {
        return Err(at(
            &st.span,
            format!("the update {udims:?} does not fit the operand {dims:?}"),
        ));
    }
    if xv.dtype() != uv.dtype() {
        return Err(at(
            &st.span,
            format!("the update is {}, the operand {}", uv.dtype(), xv.dtype()),
        ));
    }
    let starts = starts(st, &vals[2..], &dims, &udims)?;
    let out = result_dims(st, &dims)?;
    let x = tensor_of(lx, &st.span, xv, "the updated operand")?;
    let u = tensor_of(lx, &st.span, uv, "the update")?;
    let (dynamic, idx) = index_operands(lx, st, &starts, &dims, &udims)?;
    if dynamic.is_empty() {
        // The update covers the whole operand: it is the result.
        return Ok(vec![Val::T(u)]);
    }
    let o = lx.declare(base, x.dtype, &out);
    let mut ins = vec![&u, &x];
    ins.extend(idx.iter());
    lx.step(&st.span, Kernel::DynamicUpdateSlice { dynamic }, &ins, &o)?;
    Ok(vec![Val::T(o)])
}
