//! The resolved ops lowered into the typed program: tensors named by ids, a kernel op's
//! kernel as the file's op holds it ([`crate::scenario::KernelOp`]).

use super::resolved::ResolvedOp;
use crate::ids::LevelId;
use crate::program::{EntityRef as _, OpId, OpKind, Program, ProgramOp, Tensor, TensorId};
use crate::scenario::Op;
use mnsim_arch::Machine;
use std::collections::BTreeMap;

/// Resolved ops the program cannot hold: an op naming a tensor no declaration has, or
/// more entries than ids can name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LowerError {
    /// The op (position in the program), when one is at fault.
    pub op: Option<usize>,
    pub message: String,
}

/// The program of `tensors` (by name) and the resolved `ops`, on `machine` (a Reduce's
/// level is one of its addressable levels, by id).
pub(super) fn lower(
    tensors: BTreeMap<String, Tensor>,
    ops: Vec<ResolvedOp>,
    machine: &Machine,
) -> Result<Program, LowerError> {
    let mut p = Program::with_tensors(tensors.into_values().collect(), ops.len()).map_err(|e| {
        LowerError {
            op: None,
            message: e.to_string(),
        }
    })?;
    for rop in ops {
        let kind = kind_of(&p, &rop, machine)?;
        p.ops.push(ProgramOp {
            kind,
            source: OpId::new(rop.index),
            name: rop.op.name(),
            layout_text: rop.op.layout().map(str::to_string),
            layout: rop.layout,
            buffers: rop.op.buffers(),
            algorithm: rop.op.algorithm(),
            span: rop.span,
            place: rop.place,
        });
    }
    Ok(p)
}

/// What `rop` does, its tensors named by id.
fn kind_of(p: &Program, rop: &ResolvedOp, machine: &Machine) -> Result<OpKind, LowerError> {
    let id = |name: &str| {
        p.tensor_id(name).ok_or_else(|| LowerError {
            op: Some(rop.index),
            message: format!(
                "op {} ({}): no tensor `{name}` is declared",
                rop.index,
                rop.op.describe()
            ),
        })
    };
    let opt = |name: &Option<String>| name.as_deref().map(id).transpose();
    Ok(match &rop.op {
        Op::Load { tensor, .. } => OpKind::Load {
            tensor: id(tensor)?,
        },
        Op::Gather {
            table,
            indices,
            out,
            ..
        } => OpKind::Gather {
            table: id(table)?,
            indices: id(indices)?,
            out: id(out)?,
        },
        Op::Store { tensor } => OpKind::Store {
            tensor: id(tensor)?,
        },
        Op::Relayout { tensor, out, .. } => OpKind::Relayout {
            tensor: id(tensor)?,
            out: opt(out)?,
        },
        Op::Broadcast { tensor, out, .. } => OpKind::Broadcast {
            tensor: id(tensor)?,
            out: opt(out)?,
        },
        Op::Reduce {
            tensor,
            level,
            op,
            out,
            ..
        } => OpKind::Reduce {
            tensor: id(tensor)?,
            // Resolution checked the level (`program.rs`), with its message.
            level: (machine.addressable_levels().iter())
                .find(|a| a.name == *level)
                .map(|a| LevelId::of(a.level_index))
                .ok_or_else(|| LowerError {
                    op: Some(rop.index),
                    message: format!("`{level}` is not an addressable level of {}", machine.name),
                })?,
            op: *op,
            out: opt(out)?,
        },
        Op::Free { tensor } => OpKind::Free {
            tensor: id(tensor)?,
        },
        Op::Kernel(k) => OpKind::Kernel {
            kernel: k.kernel.clone(),
            inputs: (k.inputs.iter())
                .map(|t| id(t))
                .collect::<Result<Vec<TensorId>, _>>()?,
            out: id(&k.out)?,
        },
    })
}
