//! What the crate asks of a kernel: its arity and name, whether it runs on the matrix
//! unit, broadcasts, adds up partial results or only moves data, the dtype of its rate,
//! its FLOP per element, and how messages name its reduced variables.

use super::{Kernel, ReduceKind, UnaryOp};
use crate::eltwise::Eltwise;
use mnsim_arch::DType;

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
            Kernel::DynamicSlice { dynamic, .. } => 1 + dynamic.len(),
            Kernel::DynamicUpdateSlice { dynamic } => 2 + dynamic.len(),
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
            | Kernel::Expand { .. }
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
            Kernel::Expand { .. } => "Expand",
            Kernel::DynamicSlice { .. } => "DynamicSlice",
            Kernel::DynamicUpdateSlice { .. } => "DynamicUpdateSlice",
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
        self.traits().matrix
    }

    /// Whether each output element reads its inputs at the same position through
    /// numpy broadcasting (Binary, Select, BiasAdd): an input axis of size 1 against
    /// a larger output axis broadcasts.
    pub fn broadcasts(&self) -> bool {
        self.traits().broadcasts
    }

    /// The dtype whose vector rate the kernel runs at, given its inputs' and output's:
    /// the output's, but a comparison's (whose output is `pred`) is its first input's.
    pub fn rate_dtype(&self, inputs: &[DType], out: DType) -> DType {
        match self.traits().rate {
            Rate::Output => out,
            Rate::FirstInput => inputs.first().copied().unwrap_or(out),
        }
    }

    /// Whether partial results over a split reduced variable combine by addition, so
    /// the output may be left partial for a Reduce to complete. A Mean's partial results
    /// are partial sums of `x / n` (`n` the whole reduced extent), which add up to it.
    pub fn is_additive(&self) -> bool {
        self.traits().additive
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
            | Kernel::Slice { .. }
            | Kernel::Expand { .. }
            | Kernel::DynamicSlice { .. } => (0, 1),
            // One move per element of `update` (the first input): the rest of `x` stays.
            Kernel::DynamicUpdateSlice { .. } => (1, 0),
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
        self.traits().moves_data
    }

    /// How messages name the reduced variables: `the contraction`, `the normalised axis`,
    /// `a reduced axis`.
    pub fn reduced_role(&self) -> &'static str {
        self.traits().reduced
    }

    /// Whether the kernel's operands and result differ in dtype family by design, so
    /// that the mixed-precision rule ([`crate::precision::mixed_families`]) leaves them
    /// be: a quantisation, and the eltwise kernels that compare (a `pred` result), count
    /// indices (`s32`) or draw a dropout mask from an integer seed.
    pub fn own_dtypes(&self) -> bool {
        self.traits().own_dtypes
    }

    /// The kernel's row in the table of traits: every kernel is listed here once, so a
    /// new kernel is a compile error here until its traits are given.
    fn traits(&self) -> Traits {
        use crate::quant::QuantParams;
        let vector = Traits {
            matrix: false,
            broadcasts: false,
            additive: false,
            moves_data: false,
            rate: Rate::Output,
            reduced: "a reduced axis",
            own_dtypes: false,
        };
        let contraction = Traits {
            matrix: true,
            additive: true,
            reduced: "the contraction",
            ..vector
        };
        let moves = Traits {
            moves_data: true,
            ..vector
        };
        let broadcasts = Traits {
            broadcasts: true,
            ..vector
        };
        let normalises = Traits {
            reduced: "the normalised axis",
            ..vector
        };
        match self {
            Kernel::MatMul
            | Kernel::BatchMatMul
            | Kernel::GeneralMatMul { .. }
            | Kernel::Conv(_) => contraction,
            Kernel::Transpose { .. }
            | Kernel::Reshape { .. }
            | Kernel::Concat { .. }
            | Kernel::Slice { .. }
            | Kernel::Expand { .. }
            | Kernel::Unary(UnaryOp::Copy) => moves,
            // Integer start indices beside data of any type.
            Kernel::DynamicSlice { .. } | Kernel::DynamicUpdateSlice { .. } => Traits {
                own_dtypes: true,
                reduced: "an axis read at a run-time index",
                ..moves
            },
            Kernel::Binary(_) | Kernel::Select | Kernel::BiasAdd { .. } => broadcasts,
            Kernel::ReduceAxes { op, .. } => Traits {
                additive: matches!(op, ReduceKind::Add | ReduceKind::Mean),
                ..vector
            },
            Kernel::Softmax { .. } | Kernel::LayerNorm { .. } => normalises,
            Kernel::Norm(n) if n.kind == crate::norm::NormKind::GammaGrad => Traits {
                reduced: "a summed axis",
                ..vector
            },
            Kernel::Norm(_) => normalises,
            Kernel::Eltwise(e) => {
                let (rate, own_dtypes) = match e {
                    Eltwise::Compare(_) => (Rate::FirstInput, true),
                    Eltwise::GenIndex { .. } | Eltwise::Dropout => (Rate::Output, true),
                    Eltwise::Act(_)
                    | Eltwise::Backward { .. }
                    | Eltwise::PRelu
                    | Eltwise::PReluBackward
                    | Eltwise::PReluSlope
                    | Eltwise::Normalize { .. }
                    | Eltwise::BatchNormBackward { .. }
                    | Eltwise::Mix { .. } => (Rate::Output, false),
                };
                Traits {
                    broadcasts: e.broadcasts(),
                    rate,
                    own_dtypes,
                    ..vector
                }
            }
            Kernel::Quant(q) => Traits {
                broadcasts: matches!(q.params, QuantParams::Dynamic { .. }),
                own_dtypes: true,
                ..vector
            },
            Kernel::Unary(_)
            | Kernel::Clamp { .. }
            | Kernel::Elu { .. }
            | Kernel::Pool(_)
            | Kernel::Interp(_) => vector,
        }
    }
}

/// What [`Kernel::traits`] gives: the answers of the predicates above.
#[derive(Clone, Copy)]
struct Traits {
    matrix: bool,
    broadcasts: bool,
    additive: bool,
    moves_data: bool,
    rate: Rate,
    reduced: &'static str,
    own_dtypes: bool,
}

/// Which dtype's vector rate a kernel runs at.
#[derive(Clone, Copy)]
enum Rate {
    Output,
    /// A comparison's (its output is `pred`).
    FirstInput,
}
