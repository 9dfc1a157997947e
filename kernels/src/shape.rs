//! Output shapes and index maps: which input elements an output element reads.

use crate::kernel::{ErrorKind, Kernel, KernelError, fmt_dims};

/// Where one input axis takes its index from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AxisSource {
    /// The index of output axis `h`.
    Out(usize),
    /// Reduced variable `r` (see [`reduced_extents`]): every value of it is needed.
    Reduced(usize),
    /// A broadcast axis (size 1 where the output is larger): index 0.
    Broadcast,
}

/// How the index of one input derives from the output index and the reduced
/// variables: one [`AxisSource`] per input axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InputMap {
    /// One entry per input axis.
    pub axes: Vec<AxisSource>,
}

fn err(kind: ErrorKind, msg: impl Into<String>) -> KernelError {
    KernelError::new(kind, msg)
}

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
        Kernel::Unary(_) => Ok(x.to_vec()),
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
        Kernel::MatMul => {
            let b = inputs[1];
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
        Kernel::BatchMatMul => {
            let b = inputs[1];
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
        Kernel::ReduceAxes {
            op,
            axes,
            keep_dims,
        } => {
            let mut seen = vec![false; x.len()];
            for &a in axes {
                if a >= x.len() {
                    return Err(err(
                        ErrorKind::Axis,
                        format!(
                            "ReduceAxes {}: axis {a} is out of range for shape {} (axes 0..{})",
                            op.name(),
                            fmt_dims(x),
                            x.len()
                        ),
                    ));
                }
                if seen[a] {
                    return Err(err(
                        ErrorKind::Axis,
                        format!("ReduceAxes {}: axis {a} is named twice", op.name()),
                    ));
                }
                seen[a] = true;
            }
            if *keep_dims {
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
        Kernel::Transpose { perm } => {
            let mut seen = vec![false; x.len()];
            let ok = perm.len() == x.len()
                && perm.iter().all(|&p| {
                    p < x.len() && !std::mem::replace(&mut seen[p], true)
                });
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
        Kernel::Select => select_shape(inputs[0], inputs[1], inputs[2]),
        Kernel::Quant(q) => q.output_shape(inputs),
        Kernel::Clamp { .. } | Kernel::Elu { .. } => Ok(x.to_vec()),
        Kernel::BiasAdd { axis } => {
            let b = inputs[1];
            if *axis >= x.len() {
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "BiasAdd: the channel axis {axis} is out of range for `x` {} (axes 0..{})",
                        fmt_dims(x),
                        x.len()
                    ),
                ));
            }
            if b.len() != 1 || b[0] != x[*axis] {
                return Err(err(
                    ErrorKind::Broadcast,
                    format!(
                        "BiasAdd: `bias` must be a vector of the channel axis {axis} of `x` {} ({} elements), got shape {}",
                        fmt_dims(x),
                        x[*axis],
                        fmt_dims(b)
                    ),
                ));
            }
            Ok(x.to_vec())
        }
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => gemm(*transpose_a, *transpose_b, x, inputs[1]).map(|g| g.out),
        Kernel::Reshape { shape } => {
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
            Ok(shape.clone())
        }
        Kernel::Eltwise(e) => e.output_shape(inputs),
        Kernel::Norm(n) => n.output_shape(inputs),
        Kernel::Concat { axis, .. } => {
            if *axis >= x.len() {
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
                    && s.iter().zip(x).enumerate().all(|(a, (p, q))| a == *axis || p == q);
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
                out[*axis] = out[*axis].checked_add(s[*axis]).ok_or_else(|| {
                    err(ErrorKind::Layout, "Concat: the joined axis overflows")
                })?;
            }
            Ok(out)
        }
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

/// Product of the dimensions, `None` on overflow.
pub(crate) fn checked_numel(d: &[u64]) -> Option<u64> {
    d.iter().try_fold(1u64, |a, &b| a.checked_mul(b))
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

/// The dimensions of a [`Kernel::GeneralMatMul`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gemm {
    /// The output shape `[B..,M,N]`.
    pub out: Vec<u64>,
    /// The contraction length.
    pub k: u64,
    /// The axis of `a` that runs over the contraction.
    pub k_axis_a: usize,
    /// The axis of `b` that runs over the contraction.
    pub k_axis_b: usize,
}

/// Shapes of a general matmul: `a` `[B..,M,K]` (or `[B..,K,M]` transposed), `b`
/// `[B..,K,N]` (or `[B..,N,K]`), batch axes broadcast.
pub fn gemm(ta: bool, tb: bool, a: &[u64], b: &[u64]) -> Result<Gemm, KernelError> {
    for (name, s) in [("a", a), ("b", b)] {
        if s.len() < 2 {
            return Err(err(
                ErrorKind::Rank,
                format!(
                    "MatMul: `{name}` needs rank 2 or more ([batch.., M, K] × [batch.., K, N]), got shape {}",
                    fmt_dims(s)
                ),
            ));
        }
    }
    let (ra, rb) = (a.len(), b.len());
    let (m, ka, kaa) = if ta {
        (a[ra - 1], a[ra - 2], ra - 2)
    } else {
        (a[ra - 2], a[ra - 1], ra - 1)
    };
    let (kb, n, kab) = if tb {
        (b[rb - 1], b[rb - 2], rb - 1)
    } else {
        (b[rb - 2], b[rb - 1], rb - 2)
    };
    if ka != kb {
        return Err(err(
            ErrorKind::Contraction,
            format!(
                "MatMul: the contraction lengths differ: `a` {}{} has {ka}, `b` {}{} has {kb}",
                fmt_dims(a),
                if ta { " (transposed)" } else { "" },
                fmt_dims(b),
                if tb { " (transposed)" } else { "" },
            ),
        ));
    }
    let mut out = broadcast(&a[..ra - 2], &b[..rb - 2]).ok_or_else(|| {
        err(
            ErrorKind::Contraction,
            format!(
                "MatMul: the batch axes {} of `a` and {} of `b` do not broadcast",
                fmt_dims(&a[..ra - 2]),
                fmt_dims(&b[..rb - 2])
            ),
        )
    })?;
    out.extend([m, n]);
    Ok(Gemm {
        out,
        k: ka,
        k_axis_a: kaa,
        k_axis_b: kab,
    })
}

/// Numpy broadcasting of two shapes, `None` if they do not broadcast.
pub fn broadcast(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let r = a.len().max(b.len());
    let at = |s: &[u64], i: usize| -> u64 {
        // i counts from the left of the result; s aligns to the right.
        let off = r - s.len();
        if i < off { 1 } else { s[i - off] }
    };
    (0..r)
        .map(|i| {
            let (x, y) = (at(a, i), at(b, i));
            if x == y || y == 1 {
                Some(x)
            } else if x == 1 {
                Some(y)
            } else {
                None
            }
        })
        .collect()
}

/// The lengths of the reduced variables of `k`, in order:
/// MatMul, BatchMatMul: `[K]`; ReduceAxes: the reduced axes' lengths in the order
/// `axes` names them; Softmax, LayerNorm: `[length of the normalised axis]`; others: `[]`.
pub fn reduced_extents(k: &Kernel, in_shapes: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
    output_shape(k, in_shapes)?;
    let x = in_shapes[0];
    Ok(match k {
        Kernel::MatMul | Kernel::BatchMatMul => vec![x[x.len() - 1]],
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => vec![gemm(*transpose_a, *transpose_b, x, in_shapes[1])?.k],
        Kernel::ReduceAxes { axes, .. } => axes.iter().map(|&a| x[a]).collect(),
        Kernel::Softmax { axis } | Kernel::LayerNorm { axis, .. } => vec![x[*axis]],
        Kernel::Conv(c) => c.reduced_extents(in_shapes)?,
        Kernel::Norm(n) => n.reduced_extents(x),
        _ => Vec::new(),
    })
}

/// Per input, how each of its axes takes its index: from an output axis, from a
/// reduced variable, or fixed at 0 (broadcast). `out_shape` must be the output shape
/// of `k` on `in_shapes`.
///
/// For Softmax and LayerNorm the normalised axis of the input is `Reduced(0)`: the
/// output element at position `i` of that axis needs every position of it.
pub fn index_map(
    k: &Kernel,
    in_shapes: &[&[u64]],
    out_shape: &[u64],
) -> Result<Vec<InputMap>, KernelError> {
    let want = output_shape(k, in_shapes)?;
    if want != out_shape {
        return Err(err(
            ErrorKind::Layout,
            format!(
                "{k}: the output shape is {}, but {} was given",
                fmt_dims(&want),
                fmt_dims(out_shape)
            ),
        ));
    }
    use AxisSource::*;
    let out_rank = out_shape.len();
    let map = |axes: Vec<AxisSource>| InputMap { axes };
    Ok(match k {
        Kernel::Unary(_)
        | Kernel::Clamp { .. }
        | Kernel::Elu { .. }
        | Kernel::Softmax { .. }
        | Kernel::LayerNorm { .. } => {
            let axes = (0..out_rank)
                .map(|h| match k {
                    Kernel::Softmax { axis } | Kernel::LayerNorm { axis, .. } if *axis == h => {
                        Reduced(0)
                    }
                    _ => Out(h),
                })
                .collect();
            vec![map(axes)]
        }
        Kernel::Binary(_) | Kernel::Select => in_shapes
            .iter()
            .map(|s| {
                let off = out_rank - s.len();
                map(s
                    .iter()
                    .enumerate()
                    .map(|(a, &d)| {
                        if d == 1 && out_shape[off + a] != 1 {
                            Broadcast
                        } else {
                            Out(off + a)
                        }
                    })
                    .collect())
            })
            .collect(),
        Kernel::MatMul | Kernel::BatchMatMul => {
            let batch: Vec<AxisSource> = (0..out_rank - 2).map(Out).collect();
            let mut a = batch.clone();
            a.extend([Out(out_rank - 2), Reduced(0)]);
            let mut b = batch;
            b.extend([Reduced(0), Out(out_rank - 1)]);
            vec![map(a), map(b)]
        }
        Kernel::ReduceAxes {
            axes, keep_dims, ..
        } => {
            let mut h = 0;
            let m = (0..in_shapes[0].len())
                .map(|a| match axes.iter().position(|&x| x == a) {
                    Some(r) => {
                        h += usize::from(*keep_dims);
                        Reduced(r)
                    }
                    None => {
                        h += 1;
                        Out(h - 1)
                    }
                })
                .collect();
            vec![map(m)]
        }
        Kernel::BiasAdd { axis } => {
            vec![map((0..out_rank).map(Out).collect()), map(vec![Out(*axis)])]
        }
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => {
            let nb = out_rank - 2;
            let side = |s: &[u64], t: bool, first: AxisSource, second: AxisSource| {
                let off = nb - (s.len() - 2);
                let mut m: Vec<AxisSource> = s[..s.len() - 2]
                    .iter()
                    .enumerate()
                    .map(|(a, &d)| {
                        if d == 1 && out_shape[off + a] != 1 {
                            Broadcast
                        } else {
                            Out(off + a)
                        }
                    })
                    .collect();
                if t {
                    m.extend([second, first]);
                } else {
                    m.extend([first, second]);
                }
                map(m)
            };
            vec![
                side(in_shapes[0], *transpose_a, Out(nb), Reduced(0)),
                side(in_shapes[1], *transpose_b, Reduced(0), Out(nb + 1)),
            ]
        }
        Kernel::Reshape { .. }
        | Kernel::Concat { .. }
        | Kernel::Slice { .. }
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_) => {
            return Err(err(
                ErrorKind::Layout,
                format!(
                    "{k}: an output element does not read its input along fixed axes (no per-axis index map)"
                ),
            ));
        }
        Kernel::Eltwise(e) => e.index_map(in_shapes, out_shape),
        Kernel::Norm(n) => n.index_map(in_shapes),
        Kernel::Quant(q) => q.index_map(in_shapes, out_shape),
        Kernel::Transpose { perm } => {
            let mut m = vec![Broadcast; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                m[p] = Out(i);
            }
            vec![map(m)]
        }
    })
}

/// `(in_lo, in_hi, out_lo, out_hi)` axis ranges of a reshape's groups, where the
/// row-major suffix products of the two shapes meet: the reshape keeps each group's
/// elements together. Groups come from the minor end (the last axes first).
pub fn reshape_groups(a: &[u64], b: &[u64]) -> Vec<(usize, usize, usize, usize)> {
    let suffix = |s: &[u64]| -> Vec<u64> {
        let mut v = vec![1u64; s.len() + 1];
        for i in (0..s.len()).rev() {
            v[i] = v[i + 1].saturating_mul(s[i]);
        }
        v
    };
    let (sa, sb) = (suffix(a), suffix(b));
    let mut out = Vec::new();
    let (mut i, mut j) = (a.len(), b.len());
    while i > 0 || j > 0 {
        let (mut ni, mut nj) = (i, j);
        loop {
            if ni > 0 && (sa[ni] <= sb[nj] || nj == 0) {
                ni -= 1;
            } else if nj > 0 {
                nj -= 1;
            } else {
                break;
            }
            if sa[ni] == sb[nj] {
                break;
            }
        }
        out.push((ni, i, nj, j));
        (i, j) = (ni, nj);
    }
    out
}
