//! A program's tensors: shapes bound, initial values, and the layouts its ops name.

use mnsim_arch::shape::Shape;
use mnsim_arch::{DType, TensorLayout};
use serde::{Deserialize, Serialize};

/// A tensor with its shape bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// The tensor's name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// The shape with bindings applied (a bound dimension becomes static).
    pub shape: Shape,
    /// The shape as declared.
    pub declared: Shape,
    /// The size every dimension is laid out at: static size, bound, or (for an
    /// unbounded dimension) its binding. TensorLayouts of the tensor cover this shape.
    pub dims_at_bound: Vec<u64>,
    /// The size every dimension has at run time: its binding if it has one, else its
    /// size at the bound. Positions between the two are padding.
    pub runtime_dims: Vec<u64>,
    /// Initial DRAM contents (`None`: computed by the program).
    pub init: Option<Init>,
}

impl Tensor {
    /// Whether any dimension was declared dynamic (bounded or not).
    pub fn is_dynamic(&self) -> bool {
        !self.declared.is_static()
    }

    /// The shape layouts cover, as text: `f32[64,1024]`.
    pub fn laid_out(&self) -> String {
        let dims: Vec<String> = self.dims_at_bound.iter().map(u64::to_string).collect();
        format!("{}[{}]", self.dtype, dims.join(","))
    }
}

/// A layout after plan substitution.
// One per op: the size difference does not matter, direct matching does.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum LayoutRef {
    /// A layout bound to its tensor.
    Bound(TensorLayout),
    /// The plan leaves this variable to the planner (`Any`).
    Any(String),
}

/// Initial contents of a tensor in DRAM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Init {
    /// Uniform in [-1, 1), from a seeded generator.
    Random {
        /// The generator's seed.
        seed: u64,
    },
    /// All 0.
    Zeros,
    /// All 1.
    Ones,
    /// Element `i` (row-major over the logical shape) holds `i`.
    Iota,
    /// Every element holds `value`.
    Fill {
        /// The value.
        value: f64,
    },
    /// Runs of equal values, row-major: `(count, value)` each; the counts add up to
    /// the element count (a StableHLO constant such as a causal mask, evaluated at
    /// import).
    Runs(Vec<(u64, f64)>),
}

/// How partial results combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReduceOp {
    /// Sum.
    #[default]
    Add,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product (`ReduceAxes` only).
    Prod,
    /// Mean (`ReduceAxes` only).
    Mean,
    /// Sum of absolute values (`ReduceAxes` only).
    L1,
    /// Square root of the sum of squares (`ReduceAxes` only).
    L2,
}

impl ReduceOp {
    /// The kernels' reduction.
    pub fn kind(self) -> mnsim_kernels::ReduceKind {
        use mnsim_kernels::ReduceKind as K;
        match self {
            ReduceOp::Add => K::Add,
            ReduceOp::Max => K::Max,
            ReduceOp::Min => K::Min,
            ReduceOp::Prod => K::Prod,
            ReduceOp::Mean => K::Mean,
            ReduceOp::L1 => K::L1,
            ReduceOp::L2 => K::L2,
        }
    }

    /// Whether a tree `Reduce` can combine with it (Add, Max, Min).
    pub fn combines_over_levels(self) -> bool {
        matches!(self, ReduceOp::Add | ReduceOp::Max | ReduceOp::Min)
    }
}
