//! What an op reads, writes and holds, asked of any `Op`: its name and class, its
//! inputs, output, layout and `buffers:`, a short description for messages, and the
//! plan variable a layout text names.

use super::{AlgorithmName, Buffers, KernelOp, Op};

/// `$req` with `$l` bound to the `layout` field of an op whose layout is required
/// (transfers), `$opt` with it bound to the optional one (Reduce and the kernels: their
/// output's layout may follow the input's), else `$none`: the one list of each.
macro_rules! with_layout {
    ($op:expr, $l:ident => required: $req:expr, optional: $opt:expr, none: $none:expr) => {
        match $op {
            Op::Load { layout: $l, .. }
            | Op::Gather { layout: $l, .. }
            | Op::Relayout { layout: $l, .. }
            | Op::Broadcast { layout: $l, .. } => $req,
            Op::Reduce { layout: $l, .. } | Op::Kernel(KernelOp { layout: $l, .. }) => $opt,
            Op::Store { .. } | Op::Free { .. } => $none,
        }
    };
}

/// `$on` with `$b` bound to the `buffers` field of an op that has one (every op that
/// writes a tensor into LM), else `$none`: the one list of those ops.
macro_rules! with_buffers {
    ($op:expr, $b:ident => $on:expr, $none:expr) => {
        match $op {
            Op::Load { buffers: $b, .. }
            | Op::Gather { buffers: $b, .. }
            | Op::Relayout { buffers: $b, .. }
            | Op::Broadcast { buffers: $b, .. }
            | Op::Reduce { buffers: $b, .. }
            | Op::Kernel(KernelOp { buffers: $b, .. }) => $on,
            Op::Store { .. } | Op::Free { .. } => $none,
        }
    };
}

/// `$on` with `$a` bound to the `algorithm` field of an op that has one (the moves, and
/// kernels for their tree Reduces), else `$none`: the one list of those ops.
macro_rules! with_algorithm {
    ($op:expr, $a:ident => $on:expr, $none:expr) => {
        match $op {
            Op::Relayout { algorithm: $a, .. }
            | Op::Broadcast { algorithm: $a, .. }
            | Op::Reduce { algorithm: $a, .. }
            | Op::Kernel(KernelOp { algorithm: $a, .. }) => $on,
            Op::Load { .. } | Op::Gather { .. } | Op::Store { .. } | Op::Free { .. } => $none,
        }
    };
}

impl Op {
    /// `buffers:` as the op gives it (a count; `None` when absent or still a plan variable:
    /// resolution replaces those with the plan's count).
    pub fn buffers(&self) -> Option<i64> {
        match self.buffers_field() {
            Some(Buffers::Count(b)) => Some(*b),
            _ => None,
        }
    }

    /// `buffers:` as written (Load, Relayout, Broadcast, Reduce and kernels).
    pub fn buffers_field(&self) -> Option<&Buffers> {
        self.buffers_slot().and_then(|b| b.as_ref())
    }

    /// Sets `buffers:` (resolution: a plan variable replaced by its count).
    pub fn set_buffers(&mut self, b: i64) {
        if let Some(slot) = self.buffers_slot_mut() {
            *slot = Some(Buffers::Count(b));
        }
    }

    fn buffers_slot(&self) -> Option<&Option<Buffers>> {
        with_buffers!(self, b => Some(b), None)
    }

    fn buffers_slot_mut(&mut self) -> Option<&mut Option<Buffers>> {
        with_buffers!(self, b => Some(b), None)
    }

    /// `algorithm:` as the op gives it: the collective algorithm of its transfers over a
    /// network (Relayout, Broadcast, Reduce; a kernel's tree Reduces); `None` when unset
    /// or the op has none.
    pub fn algorithm(&self) -> Option<mnsim_arch::machine::Algorithm> {
        self.algorithm_slot().and_then(|a| a.map(|a| a.0))
    }

    /// Sets `algorithm:` (no effect on ops without one): a plan's choice written into
    /// the program.
    pub fn set_algorithm(&mut self, a: Option<mnsim_arch::machine::Algorithm>) {
        if let Some(slot) = self.algorithm_slot_mut() {
            *slot = a.map(AlgorithmName);
        }
    }

    fn algorithm_slot(&self) -> Option<&Option<AlgorithmName>> {
        with_algorithm!(self, a => Some(a), None)
    }

    fn algorithm_slot_mut(&mut self) -> Option<&mut Option<AlgorithmName>> {
        with_algorithm!(self, a => Some(a), None)
    }

    /// The op's name (`"Load"`, `"MatMul"`, `"Cast"`, ...): a kernel op's shorthand as
    /// written, else its kernel's name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Load { .. } => "Load",
            Op::Gather { .. } => "Gather",
            Op::Store { .. } => "Store",
            Op::Relayout { .. } => "Relayout",
            Op::Broadcast { .. } => "Broadcast",
            Op::Reduce { .. } => "Reduce",
            Op::Free { .. } => "Free",
            Op::Kernel(k) => k.written.map_or_else(|| k.kernel.name(), |s| s.name()),
        }
    }

    /// What the op does with memory: every variant named, so a new op must say.
    pub fn class(&self) -> OpClass {
        match self {
            Op::Load { .. } => OpClass::Load,
            Op::Gather { .. } => OpClass::Gather,
            Op::Store { .. } => OpClass::Store,
            Op::Free { .. } => OpClass::Free,
            Op::Relayout { .. } | Op::Broadcast { .. } | Op::Reduce { .. } => OpClass::Move,
            Op::Kernel(_) => OpClass::Kernel,
        }
    }

    /// Whether the op is a data movement (Load, Store, Relayout, Broadcast, Reduce,
    /// Free) rather than a kernel.
    pub fn is_transfer(&self) -> bool {
        match self.class() {
            OpClass::Load | OpClass::Gather | OpClass::Store | OpClass::Free | OpClass::Move => {
                true
            }
            OpClass::Kernel => false,
        }
    }

    /// The kernel op, if the op is one.
    pub fn kernel(&self) -> Option<&KernelOp> {
        match self {
            Op::Kernel(k) => Some(k),
            Op::Load { .. }
            | Op::Gather { .. }
            | Op::Store { .. }
            | Op::Relayout { .. }
            | Op::Broadcast { .. }
            | Op::Reduce { .. }
            | Op::Free { .. } => None,
        }
    }

    /// The tensors the op reads in LM, with the names of their fields (a Gather's
    /// table is read in DRAM: [`Op::dram_input`]).
    pub fn inputs(&self) -> Vec<(&'static str, &str)> {
        match self {
            Op::Gather { indices, .. } => vec![("indices", indices)],
            Op::Load { tensor, .. }
            | Op::Store { tensor }
            | Op::Relayout { tensor, .. }
            | Op::Broadcast { tensor, .. }
            | Op::Reduce { tensor, .. }
            | Op::Free { tensor } => vec![("tensor", tensor)],
            Op::Kernel(k) => (k.inputs.iter().enumerate())
                .map(|(i, t)| (k.input_field(i), t.as_str()))
                .collect(),
        }
    }

    /// The tensor a Gather reads in DRAM (its `table`), with its field's name.
    pub fn dram_input(&self) -> Option<(&'static str, &str)> {
        if let Op::Gather { table, .. } = self {
            Some(("table", table))
        } else {
            None
        }
    }

    /// The tensor the op leaves in LM (with its field name): `out`, or the moved
    /// tensor when there is no `out`. `None` for Store and Free.
    pub fn output(&self) -> Option<(&'static str, &str)> {
        match self {
            Op::Gather { out, .. } | Op::Kernel(KernelOp { out, .. }) => Some(("out", out)),
            Op::Load { tensor, .. } => Some(("tensor", tensor)),
            Op::Store { .. } | Op::Free { .. } => None,
            Op::Relayout { tensor, out, .. }
            | Op::Broadcast { tensor, out, .. }
            | Op::Reduce { tensor, out, .. } => Some(match out {
                Some(o) => ("out", o),
                None => ("tensor", tensor),
            }),
        }
    }

    /// The layout text (literal or `$var`), if the op has one.
    pub fn layout(&self) -> Option<&str> {
        with_layout!(self, l => required: Some(l.as_str()), optional: l.as_deref(), none: None)
    }

    /// Replaces the layout text (no effect on ops without a layout field).
    pub fn set_layout(&mut self, text: String) {
        with_layout!(self, l => required: *l = text, optional: *l = Some(text), none: ())
    }

    /// A short description for messages: `Load of `x``, `MatMul -> `h``.
    pub fn describe(&self) -> String {
        match self {
            Op::Load { tensor, .. }
            | Op::Store { tensor }
            | Op::Relayout { tensor, .. }
            | Op::Broadcast { tensor, .. }
            | Op::Reduce { tensor, .. }
            | Op::Free { tensor } => format!("{} of `{tensor}`", self.name()),
            Op::Gather { out, .. } | Op::Kernel(KernelOp { out, .. }) => {
                format!("{} -> `{out}`", self.name())
            }
        }
    }
}

/// The plan variable a layout text refers to: `"$act"` → `Some("act")`.
pub fn plan_variable(layout: &str) -> Option<&str> {
    layout.trim().strip_prefix('$').map(str::trim)
}

/// What an op does with memory ([`Op::class`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    /// DRAM → LM.
    Load,
    /// DRAM → LM of rows named by indices in LM (a Gather).
    Gather,
    /// LM → DRAM.
    Store,
    /// Releases a tensor's LM.
    Free,
    /// Moves a tensor inside LM over the network (Relayout, Broadcast, Reduce).
    Move,
    /// Computes its output from its inputs on the PEs.
    Kernel,
}
