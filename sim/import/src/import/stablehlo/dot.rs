//! `dot_general` → MatMul, BatchMatMul or GeneralMatMul.

use super::emit::{reshaped, tensor_of, transposed};
use super::lower::{Lx, Tens, Val};
use super::parse::{At, Stmt, at};

fn dims_lists(st: &Stmt, key: &str, rl: usize, rr: usize) -> Result<(Vec<usize>, Vec<usize>), At> {
    match super::ops::attr_lists(&st.args, key) {
        None => Ok((Vec::new(), Vec::new())),
        Some((a, Some(b))) => Ok((
            super::ops::axes(&st.span, &a, rl, key)?,
            super::ops::axes(&st.span, &b, rr, key)?,
        )),
        Some((_, None)) => Err(at(&st.span, format!("`{key}` needs `[...] x [...]`"))),
    }
}

/// `dot_general`: operands put in (batch, free, contracting) order, merged to one
/// free and one contracting axis when needed, and run as MatMul, BatchMatMul or
/// GeneralMatMul (a transposed operand read as such).
pub(super) fn dot_general(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    vals: &[Val],
) -> Result<Vec<Val>, At> {
    let l = tensor_of(lx, &st.span, &vals[0], "the lhs")?;
    let r = tensor_of(lx, &st.span, &vals[1], "the rhs")?;
    let (rl, rr) = (l.dims.len(), r.dims.len());
    let (lb, rb) = dims_lists(st, "batching_dims", rl, rr)?;
    let (lc, rc) = dims_lists(st, "contracting_dims", rl, rr)?;
    if lb.len() != rb.len() || lc.len() != rc.len() {
        return Err(at(&st.span, "batching and contracting dims must pair up"));
    }
    for (a, b) in lb.iter().zip(&rb).chain(lc.iter().zip(&rc)) {
        if l.dims[*a] != r.dims[*b] {
            return Err(at(
                &st.span,
                format!(
                    "lhs axis {a} (size {}) pairs with rhs axis {b} (size {})",
                    l.dims[*a], r.dims[*b]
                ),
            ));
        }
    }
    if lb.iter().any(|a| lc.contains(a)) || rb.iter().any(|a| rc.contains(a)) {
        return Err(at(&st.span, "an axis is both batching and contracting"));
    }
    let lf: Vec<usize> = (0..rl)
        .filter(|a| !lb.contains(a) && !lc.contains(a))
        .collect();
    let rf: Vec<usize> = (0..rr)
        .filter(|a| !rb.contains(a) && !rc.contains(a))
        .collect();
    let size = |t: &Tens, ax: &[usize]| ax.iter().map(|&a| t.dims[a]).collect::<Vec<u64>>();
    let prod = |d: &[u64]| d.iter().product::<u64>();
    let out: Vec<u64> = [size(&l, &lb), size(&l, &lf), size(&r, &rf)].concat();
    let out = super::ops::result_dims(st, &out)?;
    let dtype = super::ops::result_ty(st)?.dtype;
    let (nb, one) = (lb.len(), lc.len() == 1 && rf.len() == 1);
    // Transposed operands the kernel reads as they are.
    let ta = one
        && lf.len() == 1
        && [lb.clone(), lc.clone(), lf.clone()].concat() == (0..rl).collect::<Vec<_>>()
        && lc != lf;
    let tb = one
        && [rb.clone(), rf.clone(), rc.clone()].concat() == (0..rr).collect::<Vec<_>>()
        && rc != rf;
    let a = if ta {
        l.clone()
    } else {
        transposed(
            lx,
            &st.span,
            &l,
            &[lb.clone(), lf.clone(), lc.clone()].concat(),
        )?
    };
    let b = if tb {
        r.clone()
    } else {
        transposed(
            lx,
            &st.span,
            &r,
            &[rb.clone(), rc.clone(), rf.clone()].concat(),
        )?
    };
    let bsz = size(&l, &lb);
    let direct = one && (lf.len() == 1 || (nb == 0 && !lf.is_empty() && !ta));
    let (a, b, mm_out) = if direct {
        (a, b, out.clone())
    } else {
        let (m, k, n) = (
            prod(&size(&l, &lf)),
            prod(&size(&l, &lc)),
            prod(&size(&r, &rf)),
        );
        let a2 = reshaped(lx, &st.span, &a, &[bsz.clone(), vec![m, k]].concat())?;
        let b2 = reshaped(lx, &st.span, &b, &[bsz.clone(), vec![k, n]].concat())?;
        (a2, b2, [bsz.clone(), vec![m, n]].concat())
    };
    let (ta, tb) = if direct { (ta, tb) } else { (false, false) };
    let o = lx.declare(base, dtype, &mm_out);
    let kernel = crate::import::lower::contraction(ta, tb, &a.dims, &b.dims);
    lx.step(&st.span, kernel, &[&a, &b], &o)?;
    if mm_out == out {
        Ok(vec![Val::T(o)])
    } else {
        Ok(vec![Val::T(reshaped(lx, &st.span, &o, &out)?)])
    }
}
