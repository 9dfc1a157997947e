//! The kernels, their element functions, their work per element, and their errors.
//!
//! `mod.rs`: the `Kernel` enum and its display name; `ops.rs`: the element functions of
//! `Unary` and `Binary`; `reduce.rs`: how reductions combine; `properties.rs`: the
//! predicates the rest of the workspace asks of a kernel (arity, unit, broadcasting, FLOP
//! per element), each its family's answer ([`crate::family`]); `error.rs`:
//! `KernelError`; `dims.rs`: dimension lists in messages and their element count.

mod dims;
mod error;
mod ops;
mod properties;
mod reduce;

pub(crate) use dims::{fmt_dims, numel};
pub use error::{ErrorKind, KernelError};
pub use ops::{BinaryOp, UnaryOp, erf, erfc, gelu};
pub use reduce::ReduceKind;

use crate::eltwise::Eltwise;
use crate::norm::Norm;
use std::fmt;

/// A SIMD kernel: every PE runs it on its shards, in lock-step. Scenarios name one in
/// RON through the generic `Kernel(kernel: ..., inputs: [...], out: ...)` op, with the
/// variant's fields as written here (`Softmax(axis: 1)`, `Unary(Relu)`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Kernel {
    /// `out = op(x)`, same shape.
    Unary(UnaryOp),
    /// `out = op(a, b)` with numpy broadcasting: the shorter shape aligns to the
    /// trailing axes, and an axis of size 1 broadcasts.
    Binary(BinaryOp),
    /// `[M,K] × [K,N] → [M,N]`.
    MatMul,
    /// `[B..,M,K] × [B..,K,N] → [B..,M,N]`, the batch axes equal on both sides.
    BatchMatMul,
    /// Combines `x` along `axes`; the output drops them, or keeps them with size 1
    /// when `keep_dims`.
    ReduceAxes {
        /// How elements combine.
        op: ReduceKind,
        /// The reduced axes of the input (reduced variable `r` is `axes[r]`).
        axes: Vec<usize>,
        /// Keep the reduced axes in the output, with size 1.
        keep_dims: bool,
    },
    /// `exp(x − max) / Σ exp(x − max)` along `axis`.
    Softmax {
        /// The normalised axis.
        axis: usize,
    },
    /// `(x − mean) / √(var + eps)` along `axis` (population variance, no affine
    /// parameters).
    LayerNorm {
        /// The normalised axis.
        axis: usize,
        /// Added to the variance.
        eps: f64,
    },
    /// Output axis `i` is input axis `perm[i]`.
    Transpose {
        /// A permutation of the input's axes.
        perm: Vec<usize>,
    },
    /// `out = cond ? a : b` elementwise: inputs `cond` (any dtype, nonzero is true),
    /// `a`, `b`, with numpy broadcasting of all three.
    Select,
    /// `min(max(x, min), max)`.
    Clamp {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
    /// `x` for `x > 0`, else `alpha · (eˣ − 1)`.
    Elu {
        /// The scale of the negative part.
        alpha: f64,
    },
    /// `x + bias`, where the rank-1 `bias` runs along `axis` of `x` (the channel axis).
    BiasAdd {
        /// The axis of `x` that `bias` runs along.
        axis: usize,
    },
    /// MatMul as graphs define it: `a` `[B..,M,K]` (`[B..,K,M]` with `transpose_a`) ×
    /// `b` `[B..,K,N]` (`[B..,N,K]` with `transpose_b`) → `[B..,M,N]`, both of rank
    /// 2 or more, the batch axes broadcast numpy-style (a missing or size-1 batch axis
    /// repeats).
    GeneralMatMul {
        /// `a` holds its last two axes swapped.
        transpose_a: bool,
        /// `b` holds its last two axes swapped.
        transpose_b: bool,
    },
    /// The same elements, row-major, in a new shape (the element count must not change).
    Reshape {
        /// The output shape.
        shape: Vec<u64>,
    },
    /// `inputs` tensors joined along `axis` (all other axes equal).
    Concat {
        /// The joined axis.
        axis: usize,
        /// The number of inputs.
        inputs: usize,
    },
    /// A strided block of `x`: along every axis `a`, output index `h` reads input index
    /// `start[a] + stride[a]·h`, for the indices below `limit[a]` (StableHLO's `slice`):
    /// the output has `ceil((limit[a] − start[a]) / stride[a])` elements on axis `a`.
    Slice {
        /// The first input index read on each axis.
        start: Vec<u64>,
        /// The end (exclusive) of each axis's range, at most the axis's length.
        limit: Vec<u64>,
        /// The step on each axis, at least 1.
        stride: Vec<u64>,
    },
    /// `x` broadcast numpy-style to `shape` (its axes aligned to the trailing axes of
    /// `shape`, each equal to its axis or 1): every element a copy (see
    /// [`crate::indexed`]).
    Expand {
        /// The output shape.
        shape: Vec<u64>,
    },
    /// A block of `x` (`sizes` long) from start indices read when it runs: inputs `x`,
    /// then one scalar start index per axis of `dynamic` (clamped into
    /// `[0, dim − size]`); the other axes are taken whole (see [`crate::indexed`]).
    DynamicSlice {
        /// The output shape: at most `x`'s on the dynamic axes, equal on the others.
        sizes: Vec<u64>,
        /// The axes sliced from a run-time index, in the order of their index inputs.
        dynamic: Vec<usize>,
    },
    /// `x` with `update` written from start indices read when it runs: inputs
    /// `update`, `x`, then one scalar start index per axis of `dynamic` (clamped into
    /// `[0, dim − size]`); `update` is as long as `x` on the other axes. Charged one
    /// move per element of `update` (see [`crate::indexed`]).
    DynamicUpdateSlice {
        /// The axes written from a run-time index, in the order of their index inputs.
        dynamic: Vec<usize>,
    },
    /// `x` padded with `value` (StableHLO's `pad` with non-negative widths): along every
    /// axis `a`, `low[a]` elements before, `high[a]` after and `interior[a]` between
    /// every two; output index `low[a] + (interior[a] + 1)·i` holds input index `i`. A
    /// padded axis is read whole (see [`crate::family::Pad`]).
    Pad {
        /// Elements before each axis.
        low: Vec<u64>,
        /// Elements after each axis.
        high: Vec<u64>,
        /// Elements between every two of each axis.
        interior: Vec<u64>,
        /// The padding value.
        value: f64,
    },
    /// A convolution pass on the matrix unit (implicit GEMM; see [`crate::conv`]).
    Conv(crate::conv::Conv),
    /// Max or average pooling, or its gradient (see [`crate::window`]).
    Pool(crate::window::Pool),
    /// Nearest or linear resizing, or its gradient (see [`crate::window`]).
    Interp(crate::window::Interp),
    /// Elementwise kernels of training graphs: activations with parameters and their
    /// backward, PReLU, comparisons, GenIndex, Dropout, BatchNorm with given statistics
    /// (see [`crate::eltwise`]).
    Eltwise(Eltwise),
    /// Normalisations and their backward along axes (see [`crate::norm`]).
    Norm(Norm),
    /// Quantize or Dequantize, with static or dynamic scales (see [`crate::quant`]).
    Quant(crate::quant::Quant),
}

impl fmt::Display for Kernel {
    /// `MatMul`, `Unary Relu`, `Binary Add`, `ReduceAxes Max`, `Softmax`, ... (the
    /// family's [`label`](crate::KernelFamily::label)).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_family(|k| k.label(f))
    }
}
