//! What resolving yields: the scenario checked and bound for one plan, as the typed
//! program (tensors with shapes bound, ops with layouts bound) and the settings it runs
//! under.

use crate::program::{LayoutRef, Program};
use crate::scenario::{Mode, Op};
use mnsim_arch::Machine;
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
    /// The program: every declared tensor (shapes bound, in name order) and the ops
    /// (plan variables substituted, layouts bound).
    pub program: Program,
    /// Every knob applied, in order: the scenario's `overrides`, then `--set`.
    pub overrides: Vec<(String, f64)>,
    /// Every binding in force (the scenario's `bind`, overridden by `--bind`).
    pub bind: Vec<(String, u64)>,
    /// Things that are allowed but probably not meant.
    pub warnings: Vec<String>,
}

/// One op of the program as resolution walks it, before it is lowered into the
/// program.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ResolvedOp {
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
