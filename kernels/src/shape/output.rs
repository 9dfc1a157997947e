//! Output shapes: what each kernel gives on inputs of given shapes, or why it cannot run.

use super::{broadcast, checked_numel, err, gemm};
use crate::kernel::{ErrorKind, Kernel, KernelError, fmt_dims};

fn arity(k: &Kernel, n: usize) -> Result<(), KernelError> {
    if n != k.arity() {
        return Err(err(
            ErrorKind::Arity,
            format!("{k} takes {} input(s), got {n}", k.arity()),
        ));
    }
    Ok(())
}

/// The shape of the output of `k` on inputs of shapes `inputs`.
///
/// Errors: the wrong number of inputs; a MatMul operand that is not a matrix, or a
/// BatchMatMul pair of different ranks or batch axes; contraction lengths that
/// disagree; an axis out of range or repeated; a `perm` that is not a permutation;
/// Binary shapes that do not broadcast; a Slice whose bounds do not name every axis or
/// do not fit it (`start ≤ limit ≤` length, `stride ≥ 1`).
pub fn output_shape(k: &Kernel, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
    arity(k, inputs.len())?;
    let Some(&x) = inputs.first() else {
        return Err(err(
            ErrorKind::Arity,
            format!("{k} needs at least one input"),
        ));
    };
    match k {
        Kernel::Unary(_) | Kernel::Clamp { .. } | Kernel::Elu { .. } => Ok(x.to_vec()),
        Kernel::Binary(op) => broadcast(x, inputs[1]).ok_or_else(|| {
            err(
                ErrorKind::Broadcast,
                format!(
                    "Binary {}: shapes {} and {} do not broadcast (aligned to the trailing axes, each pair of sizes must be equal or one of them 1)",
                    op.name(),
                    fmt_dims(x),
                    fmt_dims(inputs[1])
                ),
            )
        }),
        Kernel::MatMul => matmul_shape(x, inputs[1]),
        Kernel::BatchMatMul => batch_matmul_shape(x, inputs[1]),
        Kernel::ReduceAxes {
            op,
            axes,
            keep_dims,
        } => reduce_axes_shape(op.name(), axes, *keep_dims, x),
        Kernel::Softmax { axis } | Kernel::LayerNorm { axis, .. } => {
            if *axis >= x.len() {
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "{k}: axis {axis} is out of range for shape {} (axes 0..{})",
                        fmt_dims(x),
                        x.len()
                    ),
                ));
            }
            Ok(x.to_vec())
        }
        Kernel::Transpose { perm } => transpose_shape(perm, x),
        Kernel::Select => select_shape(inputs[0], inputs[1], inputs[2]),
        Kernel::Quant(q) => q.output_shape(inputs),
        Kernel::BiasAdd { axis } => bias_add_shape(*axis, x, inputs[1]),
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => gemm(*transpose_a, *transpose_b, x, inputs[1]).map(|g| g.out),
        Kernel::Reshape { shape } => reshape_shape(x, shape),
        Kernel::Eltwise(e) => e.output_shape(inputs),
        Kernel::Norm(n) => n.output_shape(inputs),
        Kernel::Expand { shape } => crate::indexed::expand_shape(x, shape),
        Kernel::DynamicSlice { sizes, dynamic } => {
            crate::indexed::dynamic_slice_shape(k, inputs, sizes, dynamic)
        }
        Kernel::DynamicUpdateSlice { dynamic } => {
            crate::indexed::dynamic_update_shape(k, inputs, dynamic)
        }
        Kernel::Concat { axis, .. } => concat_shape(*axis, inputs),
        Kernel::Slice {
            start,
            limit,
            stride,
        } => slice_shape(x, start, limit, stride),
        Kernel::Conv(c) => c.output_shape(inputs),
        Kernel::Pool(p) => p.output_shape(inputs),
        Kernel::Interp(i) => i.output_shape(inputs),
    }
}

/// MatMul's output: `a` `[M, K]` × `b` `[K, N]` → `[M, N]`.
fn matmul_shape(x: &[u64], b: &[u64]) -> Result<Vec<u64>, KernelError> {
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

/// BatchMatMul's output: `[batch.., M, K]` × `[batch.., K, N]` → `[batch.., M, N]`.
fn batch_matmul_shape(x: &[u64], b: &[u64]) -> Result<Vec<u64>, KernelError> {
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

/// ReduceAxes's output: the reduced axes dropped, or kept as 1 with `keep_dims`.
fn reduce_axes_shape(
    op: &str,
    axes: &[usize],
    keep_dims: bool,
    x: &[u64],
) -> Result<Vec<u64>, KernelError> {
    let mut seen = vec![false; x.len()];
    for &a in axes {
        if a >= x.len() {
            return Err(err(
                ErrorKind::Axis,
                format!(
                    "ReduceAxes {op}: axis {a} is out of range for shape {} (axes 0..{})",
                    fmt_dims(x),
                    x.len()
                ),
            ));
        }
        if seen[a] {
            return Err(err(
                ErrorKind::Axis,
                format!("ReduceAxes {op}: axis {a} is named twice"),
            ));
        }
        seen[a] = true;
    }
    if keep_dims {
        return Ok(x
            .iter()
            .zip(&seen)
            .map(|(d, s)| if *s { 1 } else { *d })
            .collect());
    }
    Ok(x.iter()
        .zip(&seen)
        .filter(|(_, s)| !**s)
        .map(|(d, _)| *d)
        .collect())
}

/// Transpose's output: `x`'s axes in the order `perm` names them.
fn transpose_shape(perm: &[usize], x: &[u64]) -> Result<Vec<u64>, KernelError> {
    let mut seen = vec![false; x.len()];
    let ok = perm.len() == x.len()
        && perm
            .iter()
            .all(|&p| p < x.len() && !std::mem::replace(&mut seen[p], true));
    if !ok {
        return Err(err(
            ErrorKind::Perm,
            format!(
                "Transpose: perm {perm:?} is not a permutation of the {} axes of {} (each of 0..{} exactly once)",
                x.len(),
                fmt_dims(x),
                x.len()
            ),
        ));
    }
    Ok(perm.iter().map(|&p| x[p]).collect())
}

/// BiasAdd's output: `x`, whose channel axis `axis` the vector `b` matches.
fn bias_add_shape(axis: usize, x: &[u64], b: &[u64]) -> Result<Vec<u64>, KernelError> {
    if axis >= x.len() {
        return Err(err(
            ErrorKind::Axis,
            format!(
                "BiasAdd: the channel axis {axis} is out of range for `x` {} (axes 0..{})",
                fmt_dims(x),
                x.len()
            ),
        ));
    }
    if b.len() != 1 || b[0] != x[axis] {
        return Err(err(
            ErrorKind::Broadcast,
            format!(
                "BiasAdd: `bias` must be a vector of the channel axis {axis} of `x` {} ({} elements), got shape {}",
                fmt_dims(x),
                x[axis],
                fmt_dims(b)
            ),
        ));
    }
    Ok(x.to_vec())
}

/// Reshape's output: `shape`, which must hold as many elements as `x`.
fn reshape_shape(x: &[u64], shape: &[u64]) -> Result<Vec<u64>, KernelError> {
    let (n_in, n_out) = (checked_numel(x), checked_numel(shape));
    if n_in.is_none() || n_in != n_out {
        return Err(err(
            ErrorKind::Layout,
            format!(
                "Reshape: {} and {} do not hold the same number of elements",
                fmt_dims(x),
                fmt_dims(shape)
            ),
        ));
    }
    Ok(shape.to_vec())
}

/// Concat's output: the inputs joined along `axis`, every other axis equal.
fn concat_shape(axis: usize, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
    let x = inputs[0];
    if axis >= x.len() {
        return Err(err(
            ErrorKind::Axis,
            format!(
                "Concat: axis {axis} is out of range for {} (axes 0..{})",
                fmt_dims(x),
                x.len()
            ),
        ));
    }
    let mut out = x.to_vec();
    for (j, s) in inputs.iter().enumerate().skip(1) {
        let fits = s.len() == x.len()
            && s.iter()
                .zip(x)
                .enumerate()
                .all(|(a, (p, q))| a == axis || p == q);
        if !fits {
            return Err(err(
                ErrorKind::Broadcast,
                format!(
                    "Concat: input {j} {} does not match input 0 {} on every axis but the joined axis {axis}",
                    fmt_dims(s),
                    fmt_dims(x)
                ),
            ));
        }
        out[axis] = out[axis]
            .checked_add(s[axis])
            .ok_or_else(|| err(ErrorKind::Layout, "Concat: the joined axis overflows"))?;
    }
    Ok(out)
}

/// A slice's output: `ceil((limit − start) / stride)` per axis, after checking that
/// `start`, `limit` and `stride` name every axis, `start ≤ limit ≤` the axis's length
/// and `stride ≥ 1`.
fn slice_shape(
    x: &[u64],
    start: &[u64],
    limit: &[u64],
    stride: &[u64],
) -> Result<Vec<u64>, KernelError> {
    for (name, v) in [("start", start), ("limit", limit), ("stride", stride)] {
        if v.len() != x.len() {
            return Err(err(
                ErrorKind::Rank,
                format!(
                    "Slice: `{name}` has {} entries, but `x` {} has {} axes (one entry per axis)",
                    v.len(),
                    fmt_dims(x),
                    x.len()
                ),
            ));
        }
    }
    (0..x.len())
        .map(|a| {
            let (s, l, k) = (start[a], limit[a], stride[a]);
            if s > l || l > x[a] || k == 0 {
                let why = if k == 0 {
                    "the stride must be at least 1".to_string()
                } else if s > l {
                    format!("the start {s} is past the limit {l}")
                } else {
                    format!("the limit {l} is past the axis's length {}", x[a])
                };
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "Slice: axis {a} of `x` {}: {s}:{l}:{k} (start:limit:stride) does not fit: {why}",
                        fmt_dims(x)
                    ),
                ));
            }
            Ok((l - s).div_ceil(k))
        })
        .collect()
}

/// Select's output: `a` and `b` broadcast numpy-style; `cond` broadcasts one way to
/// that shape (it may not enlarge it).
fn select_shape(c: &[u64], a: &[u64], b: &[u64]) -> Result<Vec<u64>, KernelError> {
    let ab = broadcast(a, b).ok_or_else(|| {
        err(
            ErrorKind::Broadcast,
            format!(
                "Select: `a` {} and `b` {} do not broadcast (aligned to the trailing axes, each pair of sizes must be equal or one of them 1)",
                fmt_dims(a),
                fmt_dims(b)
            ),
        )
    })?;
    match broadcast(&ab, c) {
        Some(o) if o == ab => Ok(o),
        _ => Err(err(
            ErrorKind::Broadcast,
            format!(
                "Select: the condition {} does not broadcast to the shape {} of `a` and `b` (aligned to the trailing axes, each of its sizes must be 1 or equal)",
                fmt_dims(c),
                fmt_dims(&ab)
            ),
        )),
    }
}
