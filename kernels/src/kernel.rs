//! The kernels, their element functions, their work per element, and their errors.

use crate::eltwise::Eltwise;
use crate::norm::Norm;
use mnsim_arch::DType;
use std::fmt;

/// Elementwise one-operand functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum UnaryOp {
    /// max(x, 0).
    Relu,
    /// The tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
    Gelu,
    /// eˣ.
    Exp,
    /// −x.
    Neg,
    /// |x|.
    Abs,
    /// √x.
    Sqrt,
    /// 1/√x.
    Rsqrt,
    /// tanh x.
    Tanh,
    /// 1/(1+e⁻ˣ).
    Sigmoid,
    /// 1/x.
    Recip,
    /// x².
    Square,
    /// x.
    Copy,
    /// x · min(max(x + 3, 0), 6) / 6.
    HardSwish,
    /// The nearest integer, halves to even.
    Round,
    /// ln x.
    Log,
    /// The error function erf x (StableHLO's `chlo.erf`, the exact GELU's core).
    Erf,
}

impl UnaryOp {
    /// Every unary op.
    pub const ALL: [UnaryOp; 16] = [
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::Exp,
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Recip,
        UnaryOp::Square,
        UnaryOp::Copy,
        UnaryOp::HardSwish,
        UnaryOp::Round,
        UnaryOp::Log,
        UnaryOp::Erf,
    ];

    /// The variant name (`"Relu"`).
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Relu => "Relu",
            UnaryOp::Gelu => "Gelu",
            UnaryOp::Exp => "Exp",
            UnaryOp::Neg => "Neg",
            UnaryOp::Abs => "Abs",
            UnaryOp::Sqrt => "Sqrt",
            UnaryOp::Rsqrt => "Rsqrt",
            UnaryOp::Tanh => "Tanh",
            UnaryOp::Sigmoid => "Sigmoid",
            UnaryOp::Recip => "Recip",
            UnaryOp::Square => "Square",
            UnaryOp::Copy => "Copy",
            UnaryOp::HardSwish => "HardSwish",
            UnaryOp::Round => "Round",
            UnaryOp::Log => "Log",
            UnaryOp::Erf => "Erf",
        }
    }

    /// The function, in `f64`.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            UnaryOp::Relu => x.max(0.0),
            UnaryOp::Gelu => gelu(x),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            UnaryOp::Recip => 1.0 / x,
            UnaryOp::Square => x * x,
            UnaryOp::Copy => x,
            UnaryOp::HardSwish => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            UnaryOp::Round => x.round_ties_even(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Erf => erf(x),
        }
    }

    /// Vector-unit FLOP charged per element (assumed; see `docs/kernels.md`):
    /// 1 for Relu, Neg, Abs, Square, Copy, Round; 4 for Sqrt, Rsqrt, Recip (an
    /// iterative reciprocal or root) and HardSwish (an add, a clamp, two multiplies);
    /// 8 for Exp, Log, Tanh, Sigmoid, Erf (a polynomial or table evaluation); 10 for
    /// Gelu (a tanh plus the cubic around it).
    pub fn flops_per_element(self) -> u64 {
        match self {
            UnaryOp::Relu
            | UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Square
            | UnaryOp::Copy
            | UnaryOp::Round => 1,
            UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip | UnaryOp::HardSwish => 4,
            UnaryOp::Exp | UnaryOp::Log | UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Erf => 8,
            UnaryOp::Gelu => 10,
        }
    }
}

/// erf x: its Taylor series below |x| = 1/2 (to 10⁻¹⁶), Abramowitz and Stegun 7.1.26
/// above (absolute error below 1.5·10⁻⁷, relative below 3·10⁻⁷: about f32's resolution).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 0.5 {
        // 2/√π · Σ (−1)ⁿ x^(2n+1) / (n! (2n+1))
        let (mut term, mut sum) = (a, a);
        for n in 1..24 {
            term *= -a * a / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        let t = 1.0 / (1.0 + 0.327_591_1 * a);
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        1.0 - poly * (-a * a).exp()
    };
    if x < 0.0 { -r } else { r }
}

/// The tanh approximation of GELU.
pub fn gelu(x: f64) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
}

/// Elementwise two-operand functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum BinaryOp {
    /// a + b.
    Add,
    /// a − b.
    Sub,
    /// a × b.
    Mul,
    /// a / b.
    Div,
    /// max(a, b).
    Max,
    /// min(a, b).
    Min,
}

impl BinaryOp {
    /// Every binary op.
    pub const ALL: [BinaryOp; 6] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Max,
        BinaryOp::Min,
    ];

    /// The variant name (`"Add"`).
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "Add",
            BinaryOp::Sub => "Sub",
            BinaryOp::Mul => "Mul",
            BinaryOp::Div => "Div",
            BinaryOp::Max => "Max",
            BinaryOp::Min => "Min",
        }
    }

    /// The function, in `f64`.
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Max => a.max(b),
            BinaryOp::Min => a.min(b),
        }
    }

    /// Vector-unit FLOP charged per element (assumed): 1 for Add, Sub, Mul, Max, Min;
    /// 4 for Div (a reciprocal and a multiply).
    pub fn flops_per_element(self) -> u64 {
        match self {
            BinaryOp::Div => 4,
            _ => 1,
        }
    }
}

/// How a reduction combines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ReduceKind {
    /// Sum.
    Add,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
    /// Arithmetic mean (the sum divided by the number of reduced elements).
    Mean,
    /// Sum of absolute values.
    L1,
    /// Square root of the sum of squares.
    L2,
}

impl ReduceKind {
    /// Every reduction kind.
    pub const ALL: [ReduceKind; 7] = [
        ReduceKind::Add,
        ReduceKind::Max,
        ReduceKind::Min,
        ReduceKind::Prod,
        ReduceKind::Mean,
        ReduceKind::L1,
        ReduceKind::L2,
    ];

    /// The variant name (`"Add"`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Add => "Add",
            ReduceKind::Max => "Max",
            ReduceKind::Min => "Min",
            ReduceKind::Prod => "Prod",
            ReduceKind::Mean => "Mean",
            ReduceKind::L1 => "L1",
            ReduceKind::L2 => "L2",
        }
    }

    /// The value that combines with nothing: 0 (sums), 1 (product), −∞, +∞.
    pub fn identity(self) -> f64 {
        match self {
            ReduceKind::Add | ReduceKind::Mean | ReduceKind::L1 | ReduceKind::L2 => 0.0,
            ReduceKind::Prod => 1.0,
            ReduceKind::Max => f64::NEG_INFINITY,
            ReduceKind::Min => f64::INFINITY,
        }
    }

    /// `acc ⊕ x`: L1 adds |x|, L2 adds x².
    pub fn combine(self, acc: f64, x: f64) -> f64 {
        match self {
            ReduceKind::Add | ReduceKind::Mean => acc + x,
            ReduceKind::Max => acc.max(x),
            ReduceKind::Min => acc.min(x),
            ReduceKind::Prod => acc * x,
            ReduceKind::L1 => acc + x.abs(),
            ReduceKind::L2 => acc + x * x,
        }
    }

    /// The result from the combined value of `n` elements: Mean divides by `n`, L2
    /// takes the square root, the others keep it.
    pub fn finish(self, acc: f64, n: u64) -> f64 {
        match self {
            ReduceKind::Mean => acc / n.max(1) as f64,
            ReduceKind::L2 => acc.sqrt(),
            _ => acc,
        }
    }

    /// Vector-unit FLOP per input element (1 to combine; 2 for L1 and L2, which map
    /// the element first) and per output element (1 for Mean's division, 4 for L2's
    /// root, 0 otherwise).
    pub fn flops(self) -> (u64, u64) {
        match self {
            ReduceKind::Add | ReduceKind::Max | ReduceKind::Min | ReduceKind::Prod => (1, 0),
            ReduceKind::Mean => (1, 1),
            ReduceKind::L1 => (2, 0),
            ReduceKind::L2 => (2, 4),
        }
    }
}

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

impl Kernel {
    /// Number of inputs.
    pub fn arity(&self) -> usize {
        match self {
            Kernel::Binary(_)
            | Kernel::MatMul
            | Kernel::BatchMatMul
            | Kernel::GeneralMatMul { .. }
            | Kernel::BiasAdd { .. }
            | Kernel::Conv(_) => 2,
            Kernel::Pool(p) => p.arity(),
            Kernel::Select => 3,
            Kernel::Concat { inputs, .. } => *inputs,
            Kernel::Eltwise(e) => e.arity(),
            Kernel::Norm(n) => n.arity(),
            Kernel::Unary(_)
            | Kernel::ReduceAxes { .. }
            | Kernel::Softmax { .. }
            | Kernel::LayerNorm { .. }
            | Kernel::Transpose { .. }
            | Kernel::Clamp { .. }
            | Kernel::Elu { .. }
            | Kernel::Reshape { .. }
            | Kernel::Slice { .. }
            | Kernel::Interp(_) => 1,
            Kernel::Quant(q) => q.arity(),
        }
    }

    /// The variant name (`"Softmax"`, `"GeneralMatMul"`), as a scenario's generic
    /// `Kernel(kernel: ...)` op writes it and reports name the op.
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Unary(_) => "Unary",
            Kernel::Binary(_) => "Binary",
            Kernel::MatMul => "MatMul",
            Kernel::BatchMatMul => "BatchMatMul",
            Kernel::ReduceAxes { .. } => "ReduceAxes",
            Kernel::Softmax { .. } => "Softmax",
            Kernel::LayerNorm { .. } => "LayerNorm",
            Kernel::Transpose { .. } => "Transpose",
            Kernel::Select => "Select",
            Kernel::Clamp { .. } => "Clamp",
            Kernel::Elu { .. } => "Elu",
            Kernel::BiasAdd { .. } => "BiasAdd",
            Kernel::GeneralMatMul { .. } => "GeneralMatMul",
            Kernel::Reshape { .. } => "Reshape",
            Kernel::Concat { .. } => "Concat",
            Kernel::Slice { .. } => "Slice",
            Kernel::Conv(_) => "Conv",
            Kernel::Pool(_) => "Pool",
            Kernel::Interp(_) => "Interp",
            Kernel::Eltwise(_) => "Eltwise",
            Kernel::Norm(_) => "Norm",
            Kernel::Quant(_) => "Quant",
        }
    }

    /// Whether the kernel runs on the matrix unit when the dtype has a matrix rate.
    pub fn is_matmul(&self) -> bool {
        matches!(
            self,
            Kernel::MatMul | Kernel::BatchMatMul | Kernel::GeneralMatMul { .. } | Kernel::Conv(_)
        )
    }

    /// Whether each output element reads its inputs at the same position through
    /// numpy broadcasting (Binary, Select, BiasAdd): an input axis of size 1 against
    /// a larger output axis broadcasts.
    pub fn broadcasts(&self) -> bool {
        match self {
            Kernel::Eltwise(e) => e.broadcasts(),
            Kernel::Quant(crate::quant::Quant {
                params: crate::quant::QuantParams::Dynamic { .. },
                ..
            }) => true,
            _ => matches!(
                self,
                Kernel::Binary(_) | Kernel::Select | Kernel::BiasAdd { .. }
            ),
        }
    }

    /// The dtype whose vector rate the kernel runs at, given its inputs' and output's:
    /// the output's, but a comparison's (whose output is `pred`) is its first input's.
    pub fn rate_dtype(&self, inputs: &[DType], out: DType) -> DType {
        match self {
            Kernel::Eltwise(Eltwise::Compare(_)) => inputs.first().copied().unwrap_or(out),
            _ => out,
        }
    }

    /// Whether partial results over a split reduced variable combine by addition, so
    /// the output may be left partial for a Reduce to complete. A Mean's partial results
    /// are partial sums of `x / n` (`n` the whole reduced extent), which add up to it.
    pub fn is_additive(&self) -> bool {
        matches!(
            self,
            Kernel::MatMul
                | Kernel::BatchMatMul
                | Kernel::GeneralMatMul { .. }
                | Kernel::Conv(_)
                | Kernel::ReduceAxes {
                    op: ReduceKind::Add | ReduceKind::Mean,
                    ..
                }
        )
    }

    /// Vector-unit FLOP charged per element: `(per input element of the first input,
    /// per output element)`. See `docs/kernels.md` for the table.
    ///
    /// - Unary, Binary: `(0, op)`; Transpose: `(0, 1)` (one move per element);
    /// - ReduceAxes: [`ReduceKind::flops`] (`(1, 0)` for a sum: every input element
    ///   is combined once);
    /// - Select, BiasAdd, Reshape, Concat, Slice: `(0, 1)`; Clamp `(0, 2)`; Elu `(0, 9)` (an
    ///   exp, a subtract, a multiply, a select);
    /// - Softmax: `(2, 13)`: a max and a sum per input element; a subtraction, an exp (8)
    ///   and a division (4) per output element;
    /// - LayerNorm: `(4, 2)`: a sum for the mean, a subtraction, a square and a sum for
    ///   the variance per input element; a subtraction and a multiplication by
    ///   1/√(var+ε) per output element;
    /// - MatMul, BatchMatMul on the vector unit: 2 per multiply-add (charged separately);
    /// - Quant: `(0, 5)` Quantize, `(0, 2)` Dequantize ([`crate::quant::Quant::flops_per_element`]).
    pub fn flops_per_element(&self) -> (u64, u64) {
        match self {
            Kernel::Unary(op) => (0, op.flops_per_element()),
            Kernel::Binary(op) => (0, op.flops_per_element()),
            Kernel::Transpose { .. }
            | Kernel::Select
            | Kernel::BiasAdd { .. }
            | Kernel::Reshape { .. }
            | Kernel::Concat { .. }
            | Kernel::Slice { .. } => (0, 1),
            Kernel::Clamp { .. } => (0, 2),
            Kernel::Elu { .. } => (0, 9),
            Kernel::ReduceAxes { op, .. } => op.flops(),
            Kernel::Softmax { .. } => (2, 13),
            Kernel::LayerNorm { .. } => (4, 2),
            Kernel::MatMul
            | Kernel::BatchMatMul
            | Kernel::GeneralMatMul { .. }
            | Kernel::Conv(_) => (0, 2),
            Kernel::Pool(p) => p.flops_per_element(),
            Kernel::Interp(i) => i.flops_per_element(),
            Kernel::Eltwise(e) => (0, e.flops()),
            Kernel::Norm(n) => n.flops(),
            Kernel::Quant(q) => (0, q.flops_per_element()),
        }
    }

    /// Whether the kernel only moves data (Transpose, Reshape, Concat, Slice, and the
    /// `Copy` that Reorder and TypeCast become): it still takes its vector-unit cycles (one
    /// move per element, [`Kernel::flops_per_element`]), but reports 0 useful FLOP.
    pub fn moves_data(&self) -> bool {
        matches!(
            self,
            Kernel::Transpose { .. }
                | Kernel::Reshape { .. }
                | Kernel::Concat { .. }
                | Kernel::Slice { .. }
                | Kernel::Unary(UnaryOp::Copy)
        )
    }

    /// How messages name the reduced variables: `the contraction`, `the normalised axis`,
    /// `a reduced axis`.
    pub fn reduced_role(&self) -> &'static str {
        match self {
            Kernel::MatMul
            | Kernel::BatchMatMul
            | Kernel::GeneralMatMul { .. }
            | Kernel::Conv(_) => "the contraction",
            Kernel::Softmax { .. } | Kernel::LayerNorm { .. } => "the normalised axis",
            Kernel::Norm(n) if n.kind == crate::norm::NormKind::GammaGrad => "a summed axis",
            Kernel::Norm(_) => "the normalised axis",
            _ => "a reduced axis",
        }
    }
}

impl fmt::Display for Kernel {
    /// `MatMul`, `Unary Relu`, `Binary Add`, `ReduceAxes Max`, `Softmax`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::Unary(op) => write!(f, "Unary {}", op.name()),
            Kernel::Binary(op) => write!(f, "Binary {}", op.name()),
            Kernel::MatMul => f.write_str("MatMul"),
            Kernel::BatchMatMul => f.write_str("BatchMatMul"),
            Kernel::ReduceAxes { op, .. } => write!(f, "ReduceAxes {}", op.name()),
            Kernel::Softmax { .. } => f.write_str("Softmax"),
            Kernel::LayerNorm { .. } => f.write_str("LayerNorm"),
            Kernel::Transpose { .. } => f.write_str("Transpose"),
            Kernel::Select => f.write_str("Select"),
            Kernel::Clamp { .. } => f.write_str("Clamp"),
            Kernel::Elu { .. } => f.write_str("Elu"),
            Kernel::BiasAdd { .. } => f.write_str("BiasAdd"),
            Kernel::GeneralMatMul { .. } => f.write_str("MatMul"),
            Kernel::Reshape { .. } => f.write_str("Reshape"),
            Kernel::Concat { .. } => f.write_str("Concat"),
            Kernel::Slice { .. } => f.write_str("Slice"),
            Kernel::Conv(c) => f.write_str(c.name()),
            Kernel::Pool(p) => f.write_str(p.name()),
            Kernel::Interp(i) => f.write_str(i.name()),
            Kernel::Eltwise(e) => f.write_str(&e.label()),
            Kernel::Norm(n) => f.write_str(n.label()),
            Kernel::Quant(q) => f.write_str(q.name()),
        }
    }
}

/// What kind of problem a [`KernelError`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The wrong number of inputs.
    Arity,
    /// An input of the wrong rank.
    Rank,
    /// Contraction (or batch) axes of a matmul disagree.
    Contraction,
    /// An axis out of range or named twice.
    Axis,
    /// A transpose permutation that is not a permutation of the axes.
    Perm,
    /// Binary operands whose shapes do not broadcast.
    Broadcast,
    /// A layout disagrees with the kernel: its logical shape is not the one the
    /// kernel needs, or it is bound to another machine.
    Layout,
    /// The machine has no compute rate for the dtype.
    Rate,
    /// The layouts do not line up: operand `operand` (inputs in order, then the
    /// output) misses data at addressable level `level`. The message names the
    /// relayout that would make the kernel legal.
    Illegal {
        /// The operand that misses data (or, for the output, cannot hold the result).
        operand: usize,
        /// Index of the addressable level, root-most first.
        level: usize,
    },
}

/// A kernel that cannot run as asked, with a message for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// What kind of problem.
    pub kind: ErrorKind,
    /// The message, naming the operands, axes, levels and the fix.
    pub message: String,
}

impl KernelError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        KernelError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KernelError {}

/// `[4,8]`.
pub(crate) fn fmt_dims(d: &[u64]) -> String {
    let s: Vec<String> = d.iter().map(u64::to_string).collect();
    format!("[{}]", s.join(","))
}

/// Product of the dimensions (saturating).
pub(crate) fn numel(d: &[u64]) -> u64 {
    d.iter().fold(1u64, |a, &b| a.saturating_mul(b))
}
