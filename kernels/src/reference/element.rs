//! The per-element evaluation the functional engine runs on each PE: one output
//! element from the input elements it reads, in `f64`.

use super::unravel;
use crate::kernel::{Kernel, ReduceKind};
use std::ops::Range;

/// One output element of `k` at `out_idx`, from its inputs, in `f64`.
///
/// `fetch(input, index)` reads an input element at a logical index. `reduced(r)` is
/// the range of reduced variable `r` (see [`crate::reduced_extents`]) this unit holds:
/// the whole range normally, the local part where the output is partial (the result
/// is then this unit's partial sum; an empty range gives the reduction's identity).
/// For Softmax and LayerNorm it must be the whole normalised axis.
/// `in_shapes` are the inputs' logical shapes (for broadcasting and batch axes).
/// When the local part is not a range, use [`eval_share`].
pub fn eval(
    k: &Kernel,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    reduced: &dyn Fn(usize) -> Range<u64>,
    in_shapes: &[&[u64]],
) -> f64 {
    eval_core(
        k,
        out_idx,
        fetch,
        &|r, f| {
            for t in reduced(r) {
                f(t)
            }
        },
        in_shapes,
    )
}

/// Like [`eval`], with the values of every reduced variable this unit holds given as a
/// list per variable (as [`crate::reduced_share`] computes them).
pub fn eval_share(
    k: &Kernel,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    share: &[Vec<u64>],
    in_shapes: &[&[u64]],
) -> f64 {
    eval_core(
        k,
        out_idx,
        fetch,
        &|r, f| {
            for &t in &share[r] {
                f(t)
            }
        },
        in_shapes,
    )
}

/// Calls the callback for every value of reduced variable `r` the unit holds.
type Visit<'a> = &'a dyn Fn(usize, &mut dyn FnMut(u64));

/// The values of reduced variable `r` the unit holds, in visiting order.
fn held(visit: Visit<'_>, r: usize) -> Vec<u64> {
    let mut v = Vec::new();
    visit(r, &mut |t| v.push(t));
    v
}

/// One output element of `k` at `out_idx` (for [`eval`] and [`eval_share`]), `visit`
/// giving the values of each reduced variable the unit holds.
fn eval_core(
    k: &Kernel,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    visit: Visit<'_>,
    in_shapes: &[&[u64]],
) -> f64 {
    match k {
        Kernel::Unary(op) => op.apply(fetch(0, out_idx)),
        Kernel::Quant(q) => q.eval(out_idx, fetch, in_shapes),
        Kernel::Binary(op) => {
            let val = broadcast_operands(out_idx, fetch, in_shapes);
            op.apply(val[0], val[1])
        }
        Kernel::Select => {
            let val = broadcast_operands(out_idx, fetch, in_shapes);
            if val[0] != 0.0 { val[1] } else { val[2] }
        }
        Kernel::Clamp { min, max } => fetch(0, out_idx).max(*min).min(*max),
        Kernel::Elu { alpha } => {
            let v = fetch(0, out_idx);
            if v > 0.0 { v } else { alpha * (v.exp() - 1.0) }
        }
        Kernel::BiasAdd { axis } => fetch(0, out_idx) + fetch(1, &[out_idx[*axis]]),
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => eval_general_matmul(
            (*transpose_a, *transpose_b),
            out_idx,
            fetch,
            visit,
            in_shapes,
        ),
        Kernel::Reshape { shape } => eval_reshape(shape, out_idx, fetch, in_shapes),
        Kernel::Slice { start, stride, .. } => eval_slice(start, stride, out_idx, fetch),
        Kernel::Expand { .. } => crate::indexed::eval_expand(out_idx, fetch, in_shapes),
        Kernel::DynamicSlice { sizes, dynamic } => {
            crate::indexed::eval_slice((sizes, dynamic), out_idx, fetch, in_shapes)
        }
        Kernel::DynamicUpdateSlice { dynamic } => {
            crate::indexed::eval_update(dynamic, out_idx, fetch, in_shapes)
        }
        Kernel::Concat { axis, .. } => eval_concat(*axis, out_idx, fetch, in_shapes),
        Kernel::MatMul | Kernel::BatchMatMul => eval_matmul(out_idx, fetch, visit),
        Kernel::ReduceAxes {
            op,
            axes,
            keep_dims,
        } => eval_reduce((op, axes, *keep_dims), out_idx, fetch, visit, in_shapes),
        Kernel::Softmax { axis } => {
            let (row, x) = normalised_row(*axis, out_idx, fetch, visit);
            softmax_of(&row, x)
        }
        Kernel::LayerNorm { axis, eps } => {
            let (row, x) = normalised_row(*axis, out_idx, fetch, visit);
            layer_norm_of(&row, x, *eps)
        }
        Kernel::Eltwise(e) => e.eval(out_idx, fetch, in_shapes),
        Kernel::Norm(n) => n.eval(out_idx, fetch, in_shapes),
        Kernel::Transpose { perm } => eval_transpose(perm, out_idx, fetch),
        Kernel::Conv(c) => {
            let n = c.reduced_extents(in_shapes).map_or(0, |e| e.len());
            let lists: Vec<Vec<u64>> = (0..n).map(|r| held(visit, r)).collect();
            crate::conv::eval(c, out_idx, fetch, &lists, in_shapes)
        }
        Kernel::Pool(p) => p.eval(out_idx, fetch, in_shapes),
        Kernel::Interp(i) => i.eval(out_idx, fetch, in_shapes),
    }
}

/// The (up to three) inputs of Binary or Select at output index `out_idx`, numpy
/// broadcast (see [`aligned`]); the missing ones are 0.
fn broadcast_operands(
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    in_shapes: &[&[u64]],
) -> [f64; 3] {
    let r = out_idx.len();
    let mut idx = Vec::with_capacity(r);
    let mut val = [0.0; 3];
    for (j, s) in in_shapes.iter().take(3).enumerate() {
        let off = r - s.len();
        idx.clear();
        idx.extend(
            s.iter()
                .enumerate()
                .map(|(a, &d)| if d == 1 { 0 } else { out_idx[off + a] }),
        );
        val[j] = fetch(j, &idx);
    }
    val
}

/// One element of a general matmul (`transpose_a`, `transpose_b`; batch axes
/// broadcast): the sum over the contraction values the unit holds.
fn eval_general_matmul(
    (transpose_a, transpose_b): (bool, bool),
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    visit: Visit<'_>,
    in_shapes: &[&[u64]],
) -> f64 {
    let r = out_idx.len();
    let side = |s: &[u64]| -> Vec<u64> {
        let rs = s.len();
        let off = (r - 2) - (rs - 2);
        let mut v: Vec<u64> = (0..rs - 2)
            .map(|a| if s[a] == 1 { 0 } else { out_idx[off + a] })
            .collect();
        v.extend([0, 0]);
        v
    };
    let (mut ia, mut ib) = (side(in_shapes[0]), side(in_shapes[1]));
    let (na, nb) = (ia.len(), ib.len());
    // Positions of (row, contraction) in a and (contraction, col) in b.
    let (am, ak) = if transpose_a {
        (na - 1, na - 2)
    } else {
        (na - 2, na - 1)
    };
    let (bk, bn) = if transpose_b {
        (nb - 1, nb - 2)
    } else {
        (nb - 2, nb - 1)
    };
    ia[am] = out_idx[r - 2];
    ib[bn] = out_idx[r - 1];
    let mut acc = 0.0;
    visit(0, &mut |t| {
        ia[ak] = t;
        ib[bk] = t;
        acc += fetch(0, &ia) * fetch(1, &ib);
    });
    acc
}

/// One element of a Reshape to `shape`: the input element at the same row-major
/// position.
fn eval_reshape(
    shape: &[u64],
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    in_shapes: &[&[u64]],
) -> f64 {
    let mut l = 0u64;
    for (i, d) in out_idx.iter().zip(shape) {
        l = l * d + i;
    }
    let mut idx = vec![0u64; in_shapes[0].len()];
    unravel(in_shapes[0], l, &mut idx);
    fetch(0, &idx)
}

/// One element of a Slice: the input element at `start + stride · out_idx`.
fn eval_slice(
    start: &[u64],
    stride: &[u64],
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
) -> f64 {
    let idx: Vec<u64> = out_idx
        .iter()
        .zip(start.iter().zip(stride))
        .map(|(&h, (&s, &k))| s + k * h)
        .collect();
    fetch(0, &idx)
}

/// One element of a Concat along `axis`: from the input whose part of the axis holds
/// it (NaN past the last).
fn eval_concat(
    axis: usize,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    in_shapes: &[&[u64]],
) -> f64 {
    let mut idx = out_idx.to_vec();
    let mut i = idx[axis];
    for (j, s) in in_shapes.iter().enumerate() {
        if i < s[axis] {
            idx[axis] = i;
            return fetch(j, &idx);
        }
        i -= s[axis];
    }
    f64::NAN
}

/// One element of MatMul or BatchMatMul: the sum over the contraction values the
/// unit holds.
fn eval_matmul(
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    visit: Visit<'_>,
) -> f64 {
    let r = out_idx.len();
    let mut ia = out_idx.to_vec(); // [batch.., m, t]
    let mut ib = out_idx.to_vec(); // [batch.., t, n]
    let mut acc = 0.0;
    visit(0, &mut |t| {
        ia[r - 1] = t;
        ib[r - 2] = t;
        acc += fetch(0, &ia) * fetch(1, &ib);
    });
    acc
}

/// One element of ReduceAxes (`op`, `axes`, `keep_dims`): `op` over the values of the
/// reduced axes the unit holds.
fn eval_reduce(
    (op, axes, keep_dims): (&ReduceKind, &[usize], bool),
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    visit: Visit<'_>,
    in_shapes: &[&[u64]],
) -> f64 {
    let rank = in_shapes[0].len();
    let mut idx = vec![0u64; rank];
    let mut h = 0;
    for (a, slot) in idx.iter_mut().enumerate() {
        if keep_dims {
            *slot = out_idx[a];
        } else if !axes.contains(&a) {
            *slot = out_idx[h];
            h += 1;
        }
    }
    let lists: Vec<Vec<u64>> = (0..axes.len()).map(|r| held(visit, r)).collect();
    let mut acc = op.identity();
    if lists.iter().any(Vec::is_empty) {
        return acc;
    }
    // A Mean divides by the whole reduced extent, also where this unit holds part
    // of it: its partial results are then partial sums of `x / n`, which a Reduce
    // adds up to the mean.
    let count: u64 = match op {
        ReduceKind::Mean => (axes.iter())
            .map(|&a| in_shapes[0].get(a).copied().unwrap_or(1))
            .product(),
        _ => lists.iter().map(|l| l.len() as u64).product(),
    };
    // Odometer over the reduced variables, the last one fastest.
    let mut at = vec![0usize; axes.len()];
    loop {
        for (j, &a) in axes.iter().enumerate() {
            idx[a] = lists[j][at[j]];
        }
        acc = op.combine(acc, fetch(0, &idx));
        let mut j = axes.len();
        loop {
            if j == 0 {
                return op.finish(acc, count);
            }
            j -= 1;
            at[j] += 1;
            if at[j] < lists[j].len() {
                break;
            }
            at[j] = 0;
        }
    }
}

/// The row of Softmax or LayerNorm along `axis` through `out_idx` (the values the unit
/// holds), then the element at `out_idx` itself.
fn normalised_row(
    axis: usize,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    visit: Visit<'_>,
) -> (Vec<f64>, f64) {
    let mut idx = out_idx.to_vec();
    let mut row = Vec::new();
    visit(0, &mut |t| {
        idx[axis] = t;
        row.push(fetch(0, &idx));
    });
    let x = fetch(0, out_idx);
    (row, x)
}

/// Softmax of `x` in `row`: `exp(x − max) / Σ exp(v − max)`.
fn softmax_of(row: &[f64], x: f64) -> f64 {
    let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = row.iter().map(|v| (v - mx).exp()).sum();
    (x - mx).exp() / sum
}

/// LayerNorm of `x` in `row`: `(x − mean) / √(var + eps)`, population variance.
fn layer_norm_of(row: &[f64], x: f64, eps: f64) -> f64 {
    let n = row.len() as f64;
    let mean = row.iter().sum::<f64>() / n;
    let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (x - mean) / (var + eps).sqrt()
}

/// One element of a Transpose by `perm`: output axis `i` is input axis `perm[i]`.
fn eval_transpose(
    perm: &[usize],
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
) -> f64 {
    let mut idx = vec![0u64; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        idx[p] = out_idx[i];
    }
    fetch(0, &idx)
}
