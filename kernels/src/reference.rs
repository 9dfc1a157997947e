//! Values: a plain host reference for whole tensors, and the per-element evaluation
//! the functional engine runs on each PE. Both compute in `f64`.

use crate::kernel::{Kernel, ReduceKind, numel};
use std::ops::Range;

/// Row-major strides of `shape`.
fn strides(shape: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Row-major linear index of `idx` in `shape`.
fn linear(shape: &[u64], idx: &[u64]) -> usize {
    let mut l = 0u64;
    for (i, d) in idx.iter().zip(shape) {
        l = l * d + i;
    }
    l as usize
}

/// The row-major multi-index of linear position `l` in `shape`.
fn unravel(shape: &[u64], mut l: u64, out: &mut [u64]) {
    for i in (0..shape.len()).rev() {
        let d = shape[i].max(1);
        out[i] = l % d;
        l /= d;
    }
}

/// The output of `k` on whole inputs `(shape, row-major values)`, row-major.
/// `out_shape` must be [`crate::output_shape`] of the inputs.
///
/// Written for obviousness, not speed: direct loops in `f64`. GELU is the tanh
/// approximation; Softmax subtracts the maximum; LayerNorm uses the population
/// variance and no affine parameters.
///
/// # Panics
/// If the shapes do not fit `k` or the values do not fill their shapes.
pub fn reference(k: &Kernel, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
    let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
    let want =
        crate::shape::output_shape(k, &shapes).expect("reference: shapes do not fit the kernel");
    assert_eq!(want, out_shape, "reference: wrong output shape");
    for (s, v) in inputs {
        assert_eq!(
            numel(s) as usize,
            v.len(),
            "reference: values do not fill their shape"
        );
    }
    let n = numel(out_shape) as usize;
    let mut out = vec![0.0; n];
    let mut idx = vec![0u64; out_shape.len()];
    let (xs, x) = inputs[0];
    match k {
        Kernel::Unary(op) => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = op.apply(v);
            }
        }
        Kernel::Quant(q) => out = q.reference(inputs, out_shape),
        Kernel::Binary(op) => {
            let (bs, b) = inputs[1];
            for (l, o) in out.iter_mut().enumerate() {
                unravel(out_shape, l as u64, &mut idx);
                let va = x[linear(xs, &aligned(xs, &idx))];
                let vb = b[linear(bs, &aligned(bs, &idx))];
                *o = op.apply(va, vb);
            }
        }
        Kernel::MatMul | Kernel::BatchMatMul => matmul(x, inputs[1], out_shape, &mut out),
        Kernel::ReduceAxes {
            op,
            axes,
            keep_dims,
        } => {
            out.iter_mut().for_each(|o| *o = op.identity());
            let mut xi = vec![0u64; xs.len()];
            for (l, &v) in x.iter().enumerate() {
                unravel(xs, l as u64, &mut xi);
                let kept: Vec<u64> = (0..xs.len())
                    .filter(|a| *keep_dims || !axes.contains(a))
                    .map(|a| if axes.contains(&a) { 0 } else { xi[a] })
                    .collect();
                let o = &mut out[linear(out_shape, &kept)];
                *o = op.combine(*o, v);
            }
            let count: u64 = axes.iter().map(|&a| xs[a]).product();
            out.iter_mut().for_each(|o| *o = op.finish(*o, count));
        }
        Kernel::Softmax { axis } | Kernel::LayerNorm { axis, .. } => {
            normalise_rows(k, *axis, inputs[0], &mut out)
        }
        Kernel::Transpose { perm } => {
            let mut xi = vec![0u64; xs.len()];
            for (l, o) in out.iter_mut().enumerate() {
                unravel(out_shape, l as u64, &mut idx);
                for (i, &p) in perm.iter().enumerate() {
                    xi[p] = idx[i];
                }
                *o = x[linear(xs, &xi)];
            }
        }
        Kernel::Select => {
            let ((bs, b), (cs, c)) = (inputs[1], inputs[2]);
            for (l, o) in out.iter_mut().enumerate() {
                unravel(out_shape, l as u64, &mut idx);
                *o = if x[linear(xs, &aligned(xs, &idx))] != 0.0 {
                    b[linear(bs, &aligned(bs, &idx))]
                } else {
                    c[linear(cs, &aligned(cs, &idx))]
                };
            }
        }
        Kernel::Clamp { min, max } => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = v.max(*min).min(*max);
            }
        }
        Kernel::Elu { alpha } => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = if v > 0.0 { v } else { alpha * (v.exp() - 1.0) };
            }
        }
        Kernel::BiasAdd { axis } => {
            let (_, bias) = inputs[1];
            for (l, o) in out.iter_mut().enumerate() {
                unravel(out_shape, l as u64, &mut idx);
                *o = x[l] + bias[idx[*axis] as usize];
            }
        }
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => general_matmul((*transpose_a, *transpose_b), inputs, out_shape, &mut out),
        Kernel::Conv(c) => return crate::conv::reference(c, inputs, out_shape),
        Kernel::Pool(p) => return p.reference(inputs, out_shape),
        Kernel::Interp(i) => return i.reference(inputs, out_shape),
        Kernel::Eltwise(_) | Kernel::Norm(_) => {
            crate::training::reference(k, inputs, out_shape, &mut out)
        }
        Kernel::Reshape { .. } => out.copy_from_slice(x),
        Kernel::Slice { start, stride, .. } => {
            let mut xi = vec![0u64; xs.len()];
            for (l, o) in out.iter_mut().enumerate() {
                unravel(out_shape, l as u64, &mut idx);
                for a in 0..xs.len() {
                    xi[a] = start[a] + stride[a] * idx[a];
                }
                *o = x[linear(xs, &xi)];
            }
        }
        Kernel::Concat { axis, .. } => concat(*axis, inputs, out_shape, &mut out),
    }
    out
}

/// The index into an operand of shape `s` of output index `idx`: its axes align to the
/// trailing output axes, and an axis of size 1 reads 0 (numpy broadcasting).
fn aligned(s: &[u64], idx: &[u64]) -> Vec<u64> {
    let off = idx.len() - s.len();
    s.iter()
        .enumerate()
        .map(|(a, &d)| if d == 1 { 0 } else { idx[off + a] })
        .collect()
}

/// MatMul and BatchMatMul: `x` `[batch.., M, K]` × `b` `[batch.., K, N]` into `out`.
fn matmul(x: &[f64], (bs, b): (&[u64], &[f64]), out_shape: &[u64], out: &mut [f64]) {
    let r = out_shape.len();
    let (m, nn, kk) = (out_shape[r - 2], out_shape[r - 1], bs[r - 2]);
    let batches = numel(&out_shape[..r - 2]);
    for p in 0..batches {
        for i in 0..m {
            for j in 0..nn {
                let mut acc = 0.0;
                for t in 0..kk {
                    let va = x[((p * m + i) * kk + t) as usize];
                    let vb = b[((p * kk + t) * nn + j) as usize];
                    acc += va * vb;
                }
                out[((p * m + i) * nn + j) as usize] = acc;
            }
        }
    }
}

/// Softmax or LayerNorm of `x` along `axis`, row by row (every index with 0 on the
/// axis starts one), into `out`.
fn normalise_rows(k: &Kernel, axis: usize, (xs, x): (&[u64], &[f64]), out: &mut [f64]) {
    let len = xs[axis];
    let stride = strides(xs)[axis];
    let mut idx = vec![0u64; xs.len()];
    for l in 0..out.len() as u64 {
        unravel(xs, l, &mut idx);
        if idx[axis] != 0 {
            continue;
        }
        let at = |t: u64| (l + t * stride) as usize;
        match k {
            Kernel::LayerNorm { eps, .. } => {
                let mean = (0..len).map(|t| x[at(t)]).sum::<f64>() / len as f64;
                let var = (0..len).map(|t| (x[at(t)] - mean).powi(2)).sum::<f64>() / len as f64;
                for t in 0..len {
                    out[at(t)] = (x[at(t)] - mean) / (var + eps).sqrt();
                }
            }
            _ => {
                let mx = (0..len).map(|t| x[at(t)]).fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = (0..len).map(|t| (x[at(t)] - mx).exp()).sum();
                for t in 0..len {
                    out[at(t)] = (x[at(t)] - mx).exp() / sum;
                }
            }
        }
    }
}

/// A general matmul (`transpose_a`, `transpose_b`; batch axes broadcast) into `out`.
fn general_matmul(
    (transpose_a, transpose_b): (bool, bool),
    inputs: &[(&[u64], &[f64])],
    out_shape: &[u64],
    out: &mut [f64],
) {
    let ((xs, x), (bs, b)) = (inputs[0], inputs[1]);
    let r = out_shape.len();
    let ra = xs.len();
    let kk = if transpose_a { xs[ra - 2] } else { xs[ra - 1] };
    // An operand's index: its batch axes align to the trailing output batch axes (size
    // 1 reads 0), then its two matrix axes. (Row-major, as `linear`, without building
    // the index per multiply-add.)
    let at = |s: &[u64], idx: &[u64], row: u64, col: u64| -> usize {
        let rs = s.len();
        let off = (r - 2) - (rs - 2);
        let mut l = 0u64;
        for a in 0..rs - 2 {
            l = l * s[a] + if s[a] == 1 { 0 } else { idx[off + a] };
        }
        ((l * s[rs - 2] + row) * s[rs - 1] + col) as usize
    };
    let mut idx = vec![0u64; r];
    for (l, o) in out.iter_mut().enumerate() {
        unravel(out_shape, l as u64, &mut idx);
        let (i, j) = (idx[r - 2], idx[r - 1]);
        let mut acc = 0.0;
        for t in 0..kk {
            let va = if transpose_a {
                x[at(xs, &idx, t, i)]
            } else {
                x[at(xs, &idx, i, t)]
            };
            let vb = if transpose_b {
                b[at(bs, &idx, j, t)]
            } else {
                b[at(bs, &idx, t, j)]
            };
            acc += va * vb;
        }
        *o = acc;
    }
}

/// Concat along `axis`: each output element from the input whose part of the axis
/// holds it.
fn concat(axis: usize, inputs: &[(&[u64], &[f64])], out_shape: &[u64], out: &mut [f64]) {
    let mut idx = vec![0u64; out_shape.len()];
    let mut xi = vec![0u64; out_shape.len()];
    for (l, o) in out.iter_mut().enumerate() {
        unravel(out_shape, l as u64, &mut idx);
        let mut i = idx[axis];
        for (s, v) in inputs {
            if i < s[axis] {
                xi.copy_from_slice(&idx);
                xi[axis] = i;
                *o = v[linear(s, &xi)];
                break;
            }
            i -= s[axis];
        }
    }
}

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
