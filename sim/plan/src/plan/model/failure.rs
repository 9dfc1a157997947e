//! Why a plan does not run to its end, as the model finds it: an op the engine could not
//! run as measured, or the walk's own bookkeeping (what DRAM and LM hold).

use crate::engine::SimError;

/// Why an evaluated plan stopped at an op.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The engine could not run the op as measured (an illegal kernel, LM full, ...).
    #[error("{0}")]
    Op(#[from] SimError),
    #[error("tensor `{0}` is not in DRAM: give it an `init` or Store it first")]
    NotInDram(String),
    #[error("tensor `{0}` is not in LM: Load it first")]
    NotInLm(String),
    /// An inserted Relayout whose result does not fit beside what LM holds.
    #[error("LM overflow relayouting `{0}`")]
    RelayoutOverflow(String),
    /// An op's output that does not fit beside what LM holds.
    #[error("tensor `{tensor}` needs {need} LM words per PE but only {free} of {lm} are free")]
    NoRoom {
        tensor: String,
        need: u64,
        free: u64,
        lm: u64,
    },
}

/// A program the model cannot be built for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The measuring engine could not declare the program's tensors.
    #[error("{0}")]
    Engine(#[from] SimError),
    /// A plan variable on an op that leaves no tensor to lay out.
    #[error("op {op} has no tensor for `${var}`")]
    NoTensor { op: usize, var: String },
}

impl Failure {
    /// The tensor the failure names, if it names one (LM full, not in DRAM or LM).
    fn tensor_name(&self) -> Option<&str> {
        match self {
            Failure::NotInDram(t) | Failure::NotInLm(t) | Failure::RelayoutOverflow(t) => Some(t),
            Failure::NoRoom { tensor, .. } => Some(tensor),
            Failure::Op(_) => None,
        }
    }
}

impl super::Model {
    /// The tensors a plan that fails at op `i` with `f` must lay out otherwise to get
    /// past it: the op's operands and result, and the tensor the failure names.
    pub fn failure_tensors(&self, i: usize, f: &Failure) -> Vec<crate::program::TensorId> {
        let mut out: Vec<crate::program::TensorId> = Vec::new();
        if let Some(op) = self.ops.get(i) {
            out.extend(op.reads.iter().copied());
            out.extend(op.writes);
        }
        let named = f.tensor_name().and_then(|n| self.res.program.tensor_id(n));
        out.extend(named);
        out.sort_unstable();
        out.dedup();
        out
    }
}
