//! The errors of a kernel that cannot run as asked.

use std::fmt;

/// What kind of problem a [`KernelError`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The wrong number of inputs.
    Arity,
    /// An input of the wrong rank.
    Rank,
    /// Contraction (or batch) axes of a matmul disagree.
    Contraction,
    /// An axis out of range or named twice.
    Axis,
    /// A transpose permutation that is not a permutation of the axes.
    Perm,
    /// Binary operands whose shapes do not broadcast.
    Broadcast,
    /// A layout disagrees with the kernel: its logical shape is not the one the
    /// kernel needs, or it is bound to another machine.
    Layout,
    /// The machine has no compute rate for the dtype.
    Rate,
    /// The layouts do not line up: operand `operand` (inputs in order, then the
    /// output) misses data at addressable level `level`. The message names the
    /// relayout that would make the kernel legal.
    Illegal {
        /// The operand that misses data (or, for the output, cannot hold the result).
        operand: usize,
        /// Index of the addressable level, root-most first.
        level: usize,
    },
}

/// A kernel that cannot run as asked, with a message for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// What kind of problem.
    pub kind: ErrorKind,
    /// The message, naming the operands, axes, levels and the fix.
    pub message: String,
}

impl KernelError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        KernelError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KernelError {}
