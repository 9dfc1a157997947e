//! Output shapes and index maps: which input elements an output element reads.

pub(crate) mod index;
mod output;

pub use index::index_map;
pub use output::output_shape;

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

pub(crate) fn err(kind: ErrorKind, msg: impl Into<String>) -> KernelError {
    KernelError::new(kind, msg)
}

/// Product of the dimensions, `None` on overflow.
pub(crate) fn checked_numel(d: &[u64]) -> Option<u64> {
    d.iter().try_fold(1u64, |a, &b| a.checked_mul(b))
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

/// The axis of `a` a matrix kernel contracts: its last for MatMul, BatchMatMul and a
/// convolution's data, the one [`gemm`] finds for GeneralMatMul; `None` for a kernel
/// that contracts nothing, or shapes with no such axis.
pub fn contracted_axis_a(k: &Kernel, a: &[u64], b: &[u64]) -> Option<usize> {
    k.with_family(|f| f.contracted_axis_a(a, b))
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
    k.with_family(|f| f.reduced_extents(in_shapes))
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
