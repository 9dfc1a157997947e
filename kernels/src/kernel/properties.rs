//! What the rest of the workspace asks of a kernel: its arity and name, whether it runs
//! on the matrix unit, broadcasts, adds up partial results or only moves data, the dtype
//! of its rate, its FLOP per element, and how messages name its reduced variables. Each
//! is its family's answer ([`crate::KernelFamily`]).

use super::Kernel;
use crate::elem::Combine;
use crate::family::Rate;
use mnsim_arch::DType;

impl Kernel {
    /// Number of inputs.
    pub fn arity(&self) -> usize {
        self.with_family(|k| k.arity())
    }

    /// The variant name (`"Softmax"`, `"GeneralMatMul"`), as a scenario's generic
    /// `Kernel(kernel: ...)` op writes it and reports name the op.
    pub fn name(&self) -> &'static str {
        self.with_family(|k| k.name())
    }

    /// Whether the kernel runs on the matrix unit when the dtype has a matrix rate.
    pub fn is_matmul(&self) -> bool {
        self.with_family(|k| k.traits().matrix)
    }

    /// Whether each output element reads its inputs at the same position through
    /// numpy broadcasting (Binary, Select, BiasAdd): an input axis of size 1 against
    /// a larger output axis broadcasts.
    pub fn broadcasts(&self) -> bool {
        self.with_family(|k| k.traits().broadcasts)
    }

    /// The dtype whose vector rate the kernel runs at, given its inputs' and output's:
    /// the output's, but a comparison's (whose output is `pred`) is its first input's.
    pub fn rate_dtype(&self, inputs: &[DType], out: DType) -> DType {
        match self.with_family(|k| k.traits().rate) {
            Rate::Output => out,
            Rate::FirstInput => inputs.first().copied().unwrap_or(out),
        }
    }

    /// Whether partial results over a split reduced variable combine by addition, so
    /// the output may be left partial for a Reduce to complete. A Mean's partial results
    /// are partial sums of `x / n` (`n` the whole reduced extent), which add up to it.
    pub fn is_additive(&self) -> bool {
        self.with_family(|k| k.traits().additive)
    }

    /// Vector-unit FLOP charged per element: `(per input element of the first input,
    /// per output element)`. See `docs/kernels.md` for the table.
    ///
    /// - Unary, Binary: `(0, op)`; Transpose: `(0, 1)` (one move per element);
    /// - ReduceAxes: [`ReduceKind::flops`](super::ReduceKind::flops) (`(1, 0)` for a
    ///   sum: every input element is combined once);
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
        self.with_family(|k| k.flops_per_element())
    }

    /// Whether the kernel only moves data (Transpose, Reshape, Concat, Slice, and the
    /// `Copy` that Reorder and TypeCast become): it still takes its vector-unit cycles (one
    /// move per element, [`Kernel::flops_per_element`]), but reports 0 useful FLOP.
    pub fn moves_data(&self) -> bool {
        self.with_family(|k| k.traits().moves_data)
    }

    /// How messages name the reduced variables: `the contraction`, `the normalised axis`,
    /// `a reduced axis`.
    pub fn reduced_role(&self) -> &'static str {
        self.with_family(|k| k.traits().reduced)
    }

    /// Whether the kernel's operands and result differ in dtype family by design, so
    /// that the mixed-precision rule ([`crate::precision::mixed_families`]) leaves them
    /// be: a quantisation, and the eltwise kernels that compare (a `pred` result), count
    /// indices (`s32`) or draw a dropout mask from an integer seed.
    pub fn own_dtypes(&self) -> bool {
        self.with_family(|k| k.traits().own_dtypes)
    }

    /// How the tree Reduces that always complete the kernel's partial output combine
    /// (a `ReduceAxes`: see [`crate::KernelFamily::tree_reduce`]); `None` where a partial
    /// output is completed only on the scenario's `auto_reduce`.
    pub fn tree_reduce(&self) -> Option<Combine> {
        self.with_family(|k| k.tree_reduce())
    }
}
