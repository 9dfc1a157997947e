//! What the crate asks of a kernel, in one place: the [`KernelFamily`] trait, which
//! every kernel implements, and [`Kernel::with_family`], the one match over the
//! [`Kernel`] variants, which lends each variant to the code that asks as its family.
//!
//! A kernel that carries its own struct (`Conv`, `Pool`, `Interp`, `Eltwise`, `Norm`,
//! `Quant`) implements the trait beside that struct; the variants written inline in
//! [`Kernel`] (their RON form is `Softmax(axis: 1)`, not a struct inside a variant) are
//! lent as the small views of this module's files, built from the variant's fields:
//!
//! - `elementwise.rs`: `Unary`, `Binary`, `Select`, `Clamp`, `Elu`, `BiasAdd`;
//! - `contraction.rs`: `MatMul`, `BatchMatMul`, `GeneralMatMul`;
//! - `reduction.rs`: `ReduceAxes`, `Softmax`, `LayerNorm`;
//! - `moves.rs`: `Transpose`, `Reshape`, `Concat`, `Slice`;
//! - `indexed.rs`: `Expand`, `DynamicSlice`, `DynamicUpdateSlice`, `Pad`.
//!
//! A new kernel is its variant in [`Kernel`], its arm in [`Kernel::with_family`] and
//! its `impl KernelFamily`: the compiler asks for the methods without a default.

mod contraction;
mod elementwise;
mod indexed;
mod moves;
mod reduction;

pub use contraction::{BatchMatMul, GeneralMatMul, MatMul};
pub use elementwise::{BiasAdd, Binary, Clamp, Elu, Select, Unary};
pub use indexed::{DynamicSlice, DynamicUpdateSlice, Expand, Pad};
pub use moves::{Concat, Reshape, Slice, Transpose};
pub use reduction::{LayerNorm, ReduceAxes, Softmax};

use crate::conv::WindowMap;
use crate::cost::KernelCost;
use crate::elem::Combine;
use crate::kernel::{ErrorKind, Kernel, KernelError};
use crate::legality::Legality;
use crate::shape::InputMap;
use crate::view::View;
use mnsim_arch::{DType, Machine, TensorLayout};
use std::fmt;

/// Reads an input element at a logical index: `fetch(input, index)`.
pub type Fetch<'a> = &'a mut dyn FnMut(usize, &[u64]) -> f64;

/// Calls the callback for every value of reduced variable `r` the unit holds:
/// `visit(r, f)`.
pub type Visit<'a> = &'a dyn Fn(usize, &mut dyn FnMut(u64));

/// The values of reduced variable `r` the unit holds, in visiting order.
pub(crate) fn held(visit: Visit<'_>, r: usize) -> Vec<u64> {
    let mut v = Vec::new();
    visit(r, &mut |t| v.push(t));
    v
}

/// What the crate asks of a kernel. The methods without a default are what every
/// kernel must say; the defaults are those of a vector kernel whose output element
/// reads its inputs along fixed axes, with no reduced variable, no window, no view, and
/// one rounding of error.
pub trait KernelFamily {
    /// The variant name (`"Softmax"`, `"GeneralMatMul"`), as a scenario's generic
    /// `Kernel(kernel: ...)` op writes it and reports name the op.
    fn name(&self) -> &'static str;

    /// The name in messages (`MatMul`, `Unary Relu`, `ReduceAxes Max`, `Convolution`):
    /// the kernel's `Display`. By default its [`KernelFamily::name`].
    fn label(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }

    /// Number of inputs.
    fn arity(&self) -> usize {
        1
    }

    /// The default name in messages of input `i` of a kernel of two or more inputs
    /// (`a`, `b`; a one-input kernel's is `x`, the output's `out`).
    fn operand_name(&self, i: usize) -> String {
        ["a", "b"][i.min(1)].into()
    }

    /// The kernel's row in the table of traits (unit, broadcasting, additivity, data
    /// movement, rate dtype, its reduced variables' name, own dtypes).
    fn traits(&self) -> Traits {
        Traits::VECTOR
    }

    /// Vector-unit FLOP charged per element: `(per input element of the first input,
    /// per output element)`. See `docs/kernels.md` for the table.
    fn flops_per_element(&self) -> (u64, u64);

    /// The output shape on inputs of shapes `inputs`, which are as many as
    /// [`KernelFamily::arity`] (at least one), or why the kernel cannot run on them.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError>;

    /// Per input, how each of its axes takes its index (see [`crate::index_map`]);
    /// `out_shape` is the output shape on `in_shapes`. By default there is none: an
    /// output element does not read its inputs along fixed axes.
    fn index_map(
        &self,
        in_shapes: &[&[u64]],
        out_shape: &[u64],
    ) -> Result<Vec<InputMap>, KernelError> {
        let _ = (in_shapes, out_shape);
        Err(KernelError::new(
            ErrorKind::Layout,
            format!(
                "{}: an output element does not read its input along fixed axes (no per-axis index map)",
                Shown(self)
            ),
        ))
    }

    /// The legality map of a window kernel (Conv, Pool, Interp); `None` for the kernels
    /// with a per-axis index map or none at all.
    fn window_map(&self, in_shapes: &[&[u64]]) -> Result<Option<WindowMap>, KernelError> {
        let _ = in_shapes;
        Ok(None)
    }

    /// The lengths of the reduced variables, in order (see [`crate::reduced_extents`]);
    /// the shapes fit the kernel. By default none: every output element reads its own
    /// inputs' elements.
    fn reduced_extents(&self, in_shapes: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let _ = in_shapes;
        Ok(Vec::new())
    }

    /// The axis of `a` a matrix kernel contracts; `None` for a kernel that contracts
    /// nothing, or shapes with no such axis.
    fn contracted_axis_a(&self, a: &[u64], b: &[u64]) -> Option<usize> {
        let _ = (a, b);
        None
    }

    /// The useful FLOP of a matrix kernel on inputs of shapes `inputs` whose output has
    /// `out_elems` elements: 2 · output · the length of `a`'s contracted axis; `None` for
    /// a kernel that contracts nothing.
    fn matrix_flops(&self, inputs: &[&[u64]], out_elems: u128) -> Option<u128> {
        let (a, b) = (inputs.first()?, inputs.get(1)?);
        let k = *a.get(self.contracted_axis_a(a, b)?)?;
        Some(
            2u128
                .saturating_mul(out_elems)
                .saturating_mul(u128::from(k)),
        )
    }

    /// The axis of `b` a matrix kernel's cost counts as its contraction; `None` for a
    /// kernel that contracts nothing, or whose cost is its own
    /// ([`KernelFamily::own_cost`]).
    fn contracted_axis_b(&self, a: &[u64], b: &[u64]) -> Option<usize> {
        let _ = (a, b);
        None
    }

    /// The axis of its input a normalising kernel (Softmax, LayerNorm) needs whole on
    /// the PE, for the legality rule.
    fn normalised_axis(&self) -> Option<usize> {
        None
    }

    /// For a kernel with no per-axis index map whose legality is decided by element
    /// positions (Reshape, Concat, Slice), which rule decides it.
    fn by_positions(&self) -> Option<ByPositions<'_>> {
        None
    }

    /// The view the kernel is, if it is one (see [`crate::view_of`]).
    fn view(&self) -> Option<View> {
        None
    }

    /// One output element at `out_idx` from its inputs, in `f64` (see [`crate::eval`]):
    /// `visit` gives the values of each reduced variable the unit holds.
    fn eval(
        &self,
        out_idx: &[u64],
        fetch: Fetch<'_>,
        visit: Visit<'_>,
        in_shapes: &[&[u64]],
    ) -> f64;

    /// The host reference on whole inputs `(shape, row-major values)`, row-major (see
    /// [`crate::reference`]); the shapes fit the kernel and `out_shape` is its output's.
    /// By default every output element by [`KernelFamily::eval`] over whole inputs.
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
        let ext = self.reduced_extents(&shapes).unwrap_or_default();
        let n = crate::kernel::numel(out_shape) as usize;
        let mut out = vec![0.0; n];
        let mut idx = vec![0u64; out_shape.len()];
        for (l, o) in out.iter_mut().enumerate() {
            crate::reference::unravel(out_shape, l as u64, &mut idx);
            let mut fetch =
                |j: usize, at: &[u64]| inputs[j].1[crate::reference::linear(inputs[j].0, at)];
            let visit = |r: usize, f: &mut dyn FnMut(u64)| {
                for t in 0..ext[r] {
                    f(t)
                }
            };
            *o = self.eval(&idx, &mut fetch, &visit, &shapes);
        }
        out
    }

    /// How many roundings' errors add up in an output element, for `verify`'s
    /// tolerance (which grows with its square root), given the length of the kernel's
    /// reduction; `None` where the output is exact (a copy of input elements). By
    /// default one.
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        let _ = reduction_len;
        Some(1)
    }

    /// How the partial results the kernel leaves over a split reduced variable combine
    /// in the tree Reduces that always complete them (a `ReduceAxes`); `None` where
    /// they are completed only when the scenario asks for `auto_reduce` (by addition).
    fn tree_reduce(&self) -> Option<Combine> {
        None
    }

    /// Checks the dtypes of the first input and the output where the kernel has its
    /// own (a quantisation's real and integer sides).
    fn check_dtypes(&self, x: DType, out: DType) -> Result<(), KernelError> {
        let _ = (x, out);
        Ok(())
    }

    /// The kernel's cost where it is its own rather than the vector or matrix rule of
    /// [`crate::cost()`] (a convolution's implicit GEMM); the arguments as there, with
    /// the compute dtype and the runtime input shapes.
    fn own_cost(
        &self,
        inputs: &[&TensorLayout],
        out: &TensorLayout,
        legality: &Legality,
        m: &Machine,
        dtype: DType,
        runtime: &[&[u64]],
    ) -> Option<Result<KernelCost, KernelError>> {
        let _ = (inputs, out, legality, m, dtype, runtime);
        None
    }

    /// The operand the mixed-precision rule compares the others with (see
    /// [`crate::precision::mixed_families`]): the first data input (a `Select`'s
    /// condition, input 0, is a mask of any dtype).
    fn first_data_input(&self) -> usize {
        0
    }

    /// The `eps` of a training kernel that has one (BatchNorm, every Norm).
    fn training_eps(&self) -> Option<f64> {
        None
    }

    /// The axes of its first input a training kernel names, for checks against its
    /// rank (see [`crate::training_axes`]).
    fn training_axes(&self) -> Option<Vec<usize>> {
        None
    }
}

/// A family's [`KernelFamily::label`] as `Display`, for messages.
pub(crate) struct Shown<'a, T: ?Sized>(pub &'a T);

impl<T: KernelFamily + ?Sized> fmt::Display for Shown<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.label(f)
    }
}

/// The rule that decides the legality of a kernel by element positions, level by level
/// (`legality/views.rs`).
#[derive(Clone, Copy, Debug)]
pub enum ByPositions<'a> {
    /// Every element keeps its row-major position (Reshape).
    Reshape,
    /// The inputs joined along `axis` (Concat).
    Concat {
        /// The joined axis.
        axis: usize,
    },
    /// A strided block (Slice).
    Slice {
        /// The first input index read on each axis.
        start: &'a [u64],
        /// The end (exclusive) of each axis's range.
        limit: &'a [u64],
        /// The step on each axis.
        stride: &'a [u64],
    },
}

/// What [`KernelFamily::traits`] gives: the answers of the predicates on [`Kernel`]
/// (`is_matmul`, `broadcasts`, `is_additive`, `moves_data`, `rate_dtype`,
/// `reduced_role`, `own_dtypes`).
#[derive(Clone, Copy, Debug)]
pub struct Traits {
    /// Runs on the matrix unit when the dtype has a matrix rate.
    pub matrix: bool,
    /// Reads its inputs at the same position through numpy broadcasting.
    pub broadcasts: bool,
    /// Partial results over a split reduced variable combine by addition.
    pub additive: bool,
    /// Only moves data: 0 useful FLOP.
    pub moves_data: bool,
    /// Whose dtype's vector rate it runs at.
    pub rate: Rate,
    /// How messages name its reduced variables.
    pub reduced: &'static str,
    /// Its operands and result differ in dtype family by design.
    pub own_dtypes: bool,
}

impl Traits {
    /// A vector kernel: none of the above, the output's rate, `a reduced axis`.
    pub const VECTOR: Traits = Traits {
        matrix: false,
        broadcasts: false,
        additive: false,
        moves_data: false,
        rate: Rate::Output,
        reduced: "a reduced axis",
        own_dtypes: false,
    };
    /// A matrix kernel: additive partial results over `the contraction`.
    pub const CONTRACTION: Traits = Traits {
        matrix: true,
        additive: true,
        reduced: "the contraction",
        ..Traits::VECTOR
    };
    /// A kernel that only moves data.
    pub const MOVES: Traits = Traits {
        moves_data: true,
        ..Traits::VECTOR
    };
    /// A vector kernel whose inputs broadcast.
    pub const BROADCASTS: Traits = Traits {
        broadcasts: true,
        ..Traits::VECTOR
    };
    /// A kernel that normalises along an axis.
    pub const NORMALISES: Traits = Traits {
        reduced: "the normalised axis",
        ..Traits::VECTOR
    };
}

/// Which dtype's vector rate a kernel runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// The output's.
    Output,
    /// The first input's (a comparison's, whose output is `pred`).
    FirstInput,
}

impl Kernel {
    /// Lends the kernel, as its family, to `f`: the one match over the variants, so a
    /// new variant is a compile error here until its family is given.
    pub fn with_family<R>(&self, f: impl FnOnce(&dyn KernelFamily) -> R) -> R {
        match self {
            Kernel::Unary(op) => f(&Unary(*op)),
            Kernel::Binary(op) => f(&Binary(*op)),
            Kernel::MatMul => f(&MatMul),
            Kernel::BatchMatMul => f(&BatchMatMul),
            Kernel::ReduceAxes {
                op,
                axes,
                keep_dims,
            } => f(&ReduceAxes {
                op: *op,
                axes,
                keep_dims: *keep_dims,
            }),
            Kernel::Softmax { axis } => f(&Softmax { axis: *axis }),
            Kernel::LayerNorm { axis, eps } => f(&LayerNorm {
                axis: *axis,
                eps: *eps,
            }),
            Kernel::Transpose { perm } => f(&Transpose { perm }),
            Kernel::Select => f(&Select),
            Kernel::Clamp { min, max } => f(&Clamp {
                min: *min,
                max: *max,
            }),
            Kernel::Elu { alpha } => f(&Elu { alpha: *alpha }),
            Kernel::BiasAdd { axis } => f(&BiasAdd { axis: *axis }),
            Kernel::GeneralMatMul {
                transpose_a,
                transpose_b,
            } => f(&GeneralMatMul {
                transpose_a: *transpose_a,
                transpose_b: *transpose_b,
            }),
            Kernel::Reshape { shape } => f(&Reshape { shape }),
            Kernel::Concat { axis, inputs } => f(&Concat {
                axis: *axis,
                inputs: *inputs,
            }),
            Kernel::Slice {
                start,
                limit,
                stride,
            } => f(&Slice {
                start,
                limit,
                stride,
            }),
            Kernel::Expand { shape } => f(&Expand { shape }),
            Kernel::DynamicSlice { sizes, dynamic } => f(&DynamicSlice { sizes, dynamic }),
            Kernel::DynamicUpdateSlice { dynamic } => f(&DynamicUpdateSlice { dynamic }),
            Kernel::Pad {
                low,
                high,
                interior,
                value,
            } => f(&Pad {
                low,
                high,
                interior,
                value: *value,
            }),
            Kernel::Conv(c) => f(c),
            Kernel::Pool(p) => f(p),
            Kernel::Interp(i) => f(i),
            Kernel::Eltwise(e) => f(e),
            Kernel::Norm(n) => f(n),
            Kernel::Quant(q) => f(q),
        }
    }
}
