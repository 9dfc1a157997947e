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
