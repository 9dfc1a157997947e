//! The typed program: what a resolved scenario (or an imported graph) runs, with
//! tensors and ops in primary maps named by typed ids ([`TensorId`], [`OpId`]) and each
//! op carrying what it does: a transfer ([`OpKind::Load`], `Store`, `Relayout`,
//! `Broadcast`, `Reduce`, `Free`) or a kernel of the kernels crate with its operands.
//!
//! Every front end builds it (scenario resolution, and through it the imports); the
//! run, the planner, the bound and the reports read it. It knows nothing of any file
//! format: names are kept for messages and reports only, never as keys.

pub mod entity;
mod place;
mod settings;
mod tensor;

use entity::entity_impl;
pub use entity::{EntityRef, PrimaryMap};
use mnsim_kernels::Kernel;
pub use place::{Part, Place};
pub use settings::{DramError, Mode, Schedule, check_dram, dram_capacity};
use std::collections::BTreeMap;
use std::ops::Range;
pub use tensor::{Init, LayoutRef, ReduceOp, Tensor};

entity_impl!(TensorId, "t");
entity_impl!(OpId, "op");

/// A program: its tensors (declared, shapes bound) and its ops in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Every declared tensor, in name order.
    pub tensors: PrimaryMap<TensorId, Tensor>,
    /// The ops, in program order (an op's id is its position in the file).
    pub ops: PrimaryMap<OpId, ProgramOp>,
    /// A tensor's id by its name.
    by_name: BTreeMap<String, TensorId>,
}

/// One op of the program.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramOp {
    /// What the op does.
    pub kind: OpKind,
    /// The op of the program as written that this op is (or, for a Relayout a planner
    /// inserted, the op it precedes): reports number ops by it.
    pub source: OpId,
    /// The name reports and messages give it (`"Load"`, `"MatMul"`, `"Cast"`, ...).
    pub name: &'static str,
    /// Its layout as written: TensorLayout text, or `$var` when the plan says `Any`.
    pub layout_text: Option<String>,
    /// Its layout, bound to the tensor it applies to (Load, Relayout, Broadcast: the
    /// moved tensor or `out`; Reduce: the result; kernels: `out`). `None` when the op
    /// has no layout (Store, Free, a kernel whose output layout is derived).
    pub layout: Option<LayoutRef>,
    /// `buffers:`: slices of a `Time`-stepped result LM holds.
    pub buffers: Option<i64>,
    /// `algorithm:`: how the collectives of the op's transfers over a network run (a
    /// Reduce's, a Relayout's or Broadcast's from LM, a kernel's tree Reduces'; docs/model.md,
    /// many boards). `None`: each network's own algorithm.
    pub algorithm: Option<mnsim_arch::machine::Algorithm>,
    /// Byte range of the op in the scenario file, when known.
    pub span: Option<Range<usize>>,
    /// Where it sits in a whole model: its layer and part, when the import tells them
    /// (`scenario::Place`); nothing in a run depends on it.
    pub place: Place,
}

/// What an op does.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// DRAM → LM in the op's layout.
    Load { tensor: TensorId },
    /// DRAM → LM of the rows of `table` that `indices` (in LM) name, into `out` in the
    /// op's layout (`scenario::Op::Gather`).
    Gather {
        table: TensorId,
        indices: TensorId,
        out: TensorId,
    },
    /// LM → DRAM.
    Store { tensor: TensorId },
    /// LM layout → another LM layout (into `out` if given, else in place).
    Relayout {
        tensor: TensorId,
        out: Option<TensorId>,
    },
    /// A Load (tensor not in LM) or Relayout (tensor in LM) into a replicating layout.
    Broadcast {
        tensor: TensorId,
        out: Option<TensorId>,
    },
    /// Combines partial results across `level` (an addressable level of the machine).
    Reduce {
        tensor: TensorId,
        level: crate::ids::LevelId,
        op: ReduceOp,
        out: Option<TensorId>,
    },
    /// Releases a tensor's LM.
    Free { tensor: TensorId },
    /// A kernel: `out = kernel(inputs)`.
    Kernel {
        kernel: Kernel,
        inputs: Vec<TensorId>,
        out: TensorId,
    },
}

/// A program whose maps would hold more entries than ids can name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "a program holds at most {max} tensors and ops; this one has {tensors} tensors and {ops} ops",
    max = Program::MAX_ENTRIES
)]
pub struct TooLarge {
    pub tensors: usize,
    pub ops: usize,
}

impl Program {
    /// The most entries a map of a program holds (ids are `u32`).
    pub const MAX_ENTRIES: usize = u32::MAX as usize;

    /// A program of `tensors` (in the order given) and no ops yet; `ops` is how many
    /// ops will be pushed, checked against [`Program::MAX_ENTRIES`] with the tensors.
    pub fn with_tensors(tensors: Vec<Tensor>, ops: usize) -> Result<Program, TooLarge> {
        if tensors.len() > Self::MAX_ENTRIES || ops > Self::MAX_ENTRIES {
            return Err(TooLarge {
                tensors: tensors.len(),
                ops,
            });
        }
        let mut p = Program {
            tensors: PrimaryMap::new(),
            ops: PrimaryMap::new(),
            by_name: BTreeMap::new(),
        };
        for t in tensors {
            let name = t.name.clone();
            let id = p.tensors.push(t);
            p.by_name.insert(name, id);
        }
        Ok(p)
    }

    /// The program with its ops replaced by `ops` (the same tensors), e.g. a plan's
    /// Relayouts inserted.
    pub fn with_ops(&self, ops: Vec<ProgramOp>) -> Result<Program, TooLarge> {
        if ops.len() > Self::MAX_ENTRIES {
            return Err(TooLarge {
                tensors: self.tensors.len(),
                ops: ops.len(),
            });
        }
        let mut p = Program {
            tensors: self.tensors.clone(),
            ops: PrimaryMap::new(),
            by_name: self.by_name.clone(),
        };
        for o in ops {
            p.ops.push(o);
        }
        Ok(p)
    }

    /// How many of the ops are `Free`s (they take no cycles and have no line in a
    /// report; `mnsim check` counts them and says so).
    pub fn frees(&self) -> usize {
        self.ops
            .values()
            .filter(|o| matches!(o.kind, OpKind::Free { .. }))
            .count()
    }

    /// A tensor's id by name.
    pub fn tensor_id(&self, name: &str) -> Option<TensorId> {
        self.by_name.get(name).copied()
    }

    /// The tensor declared as `name` (front ends and tests name tensors; nothing below
    /// them looks one up by name).
    pub fn named(&self, name: &str) -> Option<&Tensor> {
        self.tensor_id(name).map(|t| &self.tensors[t])
    }

    /// A tensor's name.
    pub fn name(&self, t: TensorId) -> &str {
        &self.tensors[t].name
    }

    /// The tensor the op leaves in LM: `out`, or the moved tensor when there is no
    /// `out`. `None` for Store and Free.
    pub fn output(&self, op: OpId) -> Option<TensorId> {
        match &self.ops[op].kind {
            OpKind::Load { tensor } => Some(*tensor),
            OpKind::Store { .. } | OpKind::Free { .. } => None,
            OpKind::Relayout { tensor, out }
            | OpKind::Broadcast { tensor, out }
            | OpKind::Reduce { tensor, out, .. } => Some(out.unwrap_or(*tensor)),
            OpKind::Kernel { out, .. } | OpKind::Gather { out, .. } => Some(*out),
        }
    }

    /// The tensors the op reads in LM: the moved tensor of a transfer, a kernel's
    /// inputs, a Gather's indices (its table is read in DRAM).
    pub fn inputs(&self, op: OpId) -> Vec<TensorId> {
        match &self.ops[op].kind {
            OpKind::Load { tensor }
            | OpKind::Store { tensor }
            | OpKind::Relayout { tensor, .. }
            | OpKind::Broadcast { tensor, .. }
            | OpKind::Reduce { tensor, .. }
            | OpKind::Free { tensor } => vec![*tensor],
            OpKind::Gather { indices, .. } => vec![*indices],
            OpKind::Kernel { inputs, .. } => inputs.clone(),
        }
    }

    /// A short description for messages: `Load of `x``, `MatMul -> `h``.
    pub fn describe(&self, op: OpId) -> String {
        let o = &self.ops[op];
        match &o.kind {
            OpKind::Load { tensor }
            | OpKind::Store { tensor }
            | OpKind::Relayout { tensor, .. }
            | OpKind::Broadcast { tensor, .. }
            | OpKind::Reduce { tensor, .. }
            | OpKind::Free { tensor } => format!("{} of `{}`", o.name, self.name(*tensor)),
            OpKind::Kernel { out, .. } | OpKind::Gather { out, .. } => {
                format!("{} -> `{}`", o.name, self.name(*out))
            }
        }
    }
}
