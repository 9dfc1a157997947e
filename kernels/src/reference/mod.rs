//! Values: a plain host reference for whole tensors (here), and the per-element
//! evaluation the functional engine runs on each PE (`element`). Both compute in `f64`.

mod element;

pub use element::{eval, eval_share};

use crate::kernel::{Kernel, numel};

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
        Kernel::Expand { .. } => {
            return crate::indexed::reference(inputs, out_shape, crate::indexed::eval_expand);
        }
        Kernel::DynamicSlice { sizes, dynamic } => {
            return crate::indexed::reference(inputs, out_shape, |o, f, s| {
                crate::indexed::eval_slice((sizes, dynamic), o, f, s)
            });
        }
        Kernel::DynamicUpdateSlice { dynamic } => {
            return crate::indexed::reference(inputs, out_shape, |o, f, s| {
                crate::indexed::eval_update(dynamic, o, f, s)
            });
        }
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
