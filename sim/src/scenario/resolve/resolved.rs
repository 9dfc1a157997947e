//! What resolving yields: the scenario checked and bound for one plan, its tensors with
//! shapes bound and its ops with layouts bound.

use crate::scenario::{Init, Mode, Op};
use mnsim_arch::shape::Shape;
use mnsim_arch::{DType, Machine, TensorLayout};
use std::collections::BTreeMap;
use std::ops::Range;

/// A scenario checked and bound for one plan.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The scenario's name.
    pub scenario: String,
    /// The plan, if one was selected.
    pub plan: Option<String>,
    /// The machine with the scenario's overrides and the command line's knobs applied.
    pub machine: Machine,
    /// Functional or timing.
    pub mode: Mode,
    /// Whether to compare outputs with a host reference.
    pub verify: bool,
    /// Insert a Reduce after every kernel whose output is partial.
    pub auto_reduce: bool,
    /// How ops are placed in time.
    pub schedule: crate::scenario::Schedule,
    /// Every declared tensor, shapes bound.
    pub tensors: BTreeMap<String, ResolvedTensor>,
    /// The program, plan variables substituted, layouts bound.
    pub ops: Vec<ResolvedOp>,
    /// Every knob applied, in order: the scenario's `overrides`, then `--set`.
    pub overrides: Vec<(String, f64)>,
    /// Every binding in force (the scenario's `bind`, overridden by `--bind`).
    pub bind: Vec<(String, u64)>,
    /// Things that are allowed but probably not meant.
    pub warnings: Vec<String>,
}

/// A tensor with its shape bound.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedTensor {
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

impl ResolvedTensor {
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

/// One op of the program.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedOp {
    /// Position in the program (0-based).
    pub index: usize,
    /// The op, with `$var` layouts replaced by the plan's text (kept as `$var` when the
    /// plan says `Any`).
    pub op: Op,
    /// The op's layout, bound to the tensor it applies to (Load, Relayout, Broadcast:
    /// the moved tensor or `out`; Reduce: the result; kernels: `out`). `None` when the
    /// op has no layout (Store, Free, a kernel whose output layout is derived).
    pub layout: Option<LayoutRef>,
    /// Byte range of the op in the scenario file, when found.
    pub span: Option<Range<usize>>,
    /// Where it sits in a whole model (the scenario's `places`).
    pub place: crate::scenario::Place,
}
