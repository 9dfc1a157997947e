//! The matrix kernels: `MatMul` `[M,K] × [K,N]`, `BatchMatMul` (equal batch axes) and
//! `GeneralMatMul` (transposed operands, broadcast batch axes). Their reduced variable
//! is the contraction; they run on the matrix unit where the dtype has a matrix rate.

use super::{Fetch, KernelFamily, Traits, Visit};
use crate::kernel::{ErrorKind, KernelError, fmt_dims, numel};
use crate::reference::unravel;
use crate::shape::{AxisSource, InputMap, err, gemm, index::aligned};

/// The map of MatMul and BatchMatMul: the batch axes follow the output, `a`'s last
/// axis and `b`'s second last are the contraction.
fn matmul_maps(out_rank: usize) -> Vec<InputMap> {
    use AxisSource::{Out, Reduced};
    let batch: Vec<AxisSource> = (0..out_rank - 2).map(Out).collect();
    let mut a = batch.clone();
    a.extend([Out(out_rank - 2), Reduced(0)]);
    let mut b = batch;
    b.extend([Reduced(0), Out(out_rank - 1)]);
    vec![InputMap { axes: a }, InputMap { axes: b }]
}

/// One element of MatMul or BatchMatMul: the sum over the contraction values the
/// unit holds.
fn eval_matmul(out_idx: &[u64], fetch: Fetch<'_>, visit: Visit<'_>) -> f64 {
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

/// MatMul and BatchMatMul: `x` `[batch.., M, K]` × `b` `[batch.., K, N]`.
fn reference_matmul(inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
    let ((_, x), (bs, b)) = (inputs[0], inputs[1]);
    let mut out = vec![0.0; numel(out_shape) as usize];
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
    out
}

/// `[M,K] × [K,N] → [M,N]`.
pub struct MatMul;

impl KernelFamily for MatMul {
    fn name(&self) -> &'static str {
        "MatMul"
    }
    fn arity(&self) -> usize {
        2
    }
    fn traits(&self) -> Traits {
        Traits::CONTRACTION
    }
    /// On the vector unit: 2 per multiply-add.
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 2)
    }
    /// `a` `[M, K]` × `b` `[K, N]` → `[M, N]`.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (x, b) = (inputs[0], inputs[1]);
        for (name, s) in [("a", x), ("b", b)] {
            if s.len() != 2 {
                return Err(err(
                    ErrorKind::Rank,
                    format!(
                        "MatMul: `{name}` must be a matrix (rank 2), got shape {} of rank {}; use BatchMatMul for batched operands",
                        fmt_dims(s),
                        s.len()
                    ),
                ));
            }
        }
        if x[1] != b[0] {
            return Err(err(
                ErrorKind::Contraction,
                format!(
                    "MatMul: the contraction lengths differ: `a` {} has {} columns, `b` {} has {} rows",
                    fmt_dims(x),
                    x[1],
                    fmt_dims(b),
                    b[0]
                ),
            ));
        }
        Ok(vec![x[0], b[1]])
    }
    fn index_map(&self, _: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(matmul_maps(out_shape.len()))
    }
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(vec![s[0][s[0].len() - 1]])
    }
    fn contracted_axis_a(&self, a: &[u64], _: &[u64]) -> Option<usize> {
        a.len().checked_sub(1)
    }
    fn contracted_axis_b(&self, _: &[u64], b: &[u64]) -> Option<usize> {
        b.len().checked_sub(2)
    }
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        Some(reduction_len.max(1))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, visit: Visit<'_>, _: &[&[u64]]) -> f64 {
        eval_matmul(out_idx, fetch, visit)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        reference_matmul(inputs, out_shape)
    }
}

/// `[B..,M,K] × [B..,K,N] → [B..,M,N]`, the batch axes equal on both sides.
pub struct BatchMatMul;

impl KernelFamily for BatchMatMul {
    fn name(&self) -> &'static str {
        "BatchMatMul"
    }
    fn arity(&self) -> usize {
        2
    }
    fn traits(&self) -> Traits {
        Traits::CONTRACTION
    }
    /// On the vector unit: 2 per multiply-add.
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 2)
    }
    /// `[batch.., M, K]` × `[batch.., K, N]` → `[batch.., M, N]`.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (x, b) = (inputs[0], inputs[1]);
        for (name, s) in [("a", x), ("b", b)] {
            if s.len() < 2 {
                return Err(err(
                    ErrorKind::Rank,
                    format!(
                        "BatchMatMul: `{name}` needs rank 2 or more ([batch.., M, K] × [batch.., K, N]), got shape {}",
                        fmt_dims(s)
                    ),
                ));
            }
        }
        if x.len() != b.len() {
            return Err(err(
                ErrorKind::Rank,
                format!(
                    "BatchMatMul: `a` {} and `b` {} have different ranks; both need the same batch axes",
                    fmt_dims(x),
                    fmt_dims(b)
                ),
            ));
        }
        let r = x.len();
        if x[..r - 2] != b[..r - 2] {
            return Err(err(
                ErrorKind::Contraction,
                format!(
                    "BatchMatMul: the batch axes differ: `a` {} has {}, `b` {} has {}",
                    fmt_dims(x),
                    fmt_dims(&x[..r - 2]),
                    fmt_dims(b),
                    fmt_dims(&b[..r - 2])
                ),
            ));
        }
        if x[r - 1] != b[r - 2] {
            return Err(err(
                ErrorKind::Contraction,
                format!(
                    "BatchMatMul: the contraction lengths differ: `a` {} has {} on its last axis, `b` {} has {} on axis {}",
                    fmt_dims(x),
                    x[r - 1],
                    fmt_dims(b),
                    b[r - 2],
                    r - 2
                ),
            ));
        }
        let mut o = x[..r - 1].to_vec();
        o.push(b[r - 1]);
        Ok(o)
    }
    fn index_map(&self, _: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(matmul_maps(out_shape.len()))
    }
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(vec![s[0][s[0].len() - 1]])
    }
    fn contracted_axis_a(&self, a: &[u64], _: &[u64]) -> Option<usize> {
        a.len().checked_sub(1)
    }
    fn contracted_axis_b(&self, _: &[u64], b: &[u64]) -> Option<usize> {
        b.len().checked_sub(2)
    }
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        Some(reduction_len.max(1))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, visit: Visit<'_>, _: &[&[u64]]) -> f64 {
        eval_matmul(out_idx, fetch, visit)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        reference_matmul(inputs, out_shape)
    }
}

/// MatMul as graphs define it: `a` `[B..,M,K]` (`[B..,K,M]` with `transpose_a`) ×
/// `b` `[B..,K,N]` (`[B..,N,K]` with `transpose_b`) → `[B..,M,N]`, the batch axes
/// broadcast numpy-style.
pub struct GeneralMatMul {
    /// `a` holds its last two axes swapped.
    pub transpose_a: bool,
    /// `b` holds its last two axes swapped.
    pub transpose_b: bool,
}

impl KernelFamily for GeneralMatMul {
    fn name(&self) -> &'static str {
        "GeneralMatMul"
    }
    fn label(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MatMul")
    }
    fn arity(&self) -> usize {
        2
    }
    fn traits(&self) -> Traits {
        Traits::CONTRACTION
    }
    /// On the vector unit: 2 per multiply-add.
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 2)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        gemm(self.transpose_a, self.transpose_b, inputs[0], inputs[1]).map(|g| g.out)
    }
    fn index_map(&self, s: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        use AxisSource::{Out, Reduced};
        let nb = out_shape.len() - 2;
        let side = |s: &[u64], t: bool, first: AxisSource, second: AxisSource| {
            let mut m = aligned(&s[..s.len() - 2], nb - (s.len() - 2), out_shape);
            m.extend(if t { [second, first] } else { [first, second] });
            InputMap { axes: m }
        };
        Ok(vec![
            side(s[0], self.transpose_a, Out(nb), Reduced(0)),
            side(s[1], self.transpose_b, Reduced(0), Out(nb + 1)),
        ])
    }
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(vec![
            gemm(self.transpose_a, self.transpose_b, s[0], s[1])?.k,
        ])
    }
    fn contracted_axis_a(&self, a: &[u64], b: &[u64]) -> Option<usize> {
        let g = gemm(self.transpose_a, self.transpose_b, a, b).ok()?;
        Some(g.k_axis_a)
    }
    fn contracted_axis_b(&self, a: &[u64], b: &[u64]) -> Option<usize> {
        let g = gemm(self.transpose_a, self.transpose_b, a, b).ok()?;
        Some(g.k_axis_b)
    }
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        Some(reduction_len.max(1))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, visit: Visit<'_>, s: &[&[u64]]) -> f64 {
        eval_general(
            (self.transpose_a, self.transpose_b),
            out_idx,
            fetch,
            visit,
            s,
        )
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        reference_general((self.transpose_a, self.transpose_b), inputs, out_shape)
    }
}

/// One element of a general matmul (`transpose_a`, `transpose_b`; batch axes
/// broadcast): the sum over the contraction values the unit holds.
fn eval_general(
    (transpose_a, transpose_b): (bool, bool),
    out_idx: &[u64],
    fetch: Fetch<'_>,
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

/// The host reference of a general matmul (`transpose_a`, `transpose_b`; batch axes
/// broadcast).
fn reference_general(
    (transpose_a, transpose_b): (bool, bool),
    inputs: &[(&[u64], &[f64])],
    out_shape: &[u64],
) -> Vec<f64> {
    let ((xs, x), (bs, b)) = (inputs[0], inputs[1]);
    let mut out = vec![0.0; numel(out_shape) as usize];
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
    out
}
