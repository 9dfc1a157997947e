//! The program's steps as the scenario holds them: the transfers and one kernel op.
//! The file writes a kernel op by a named shorthand (`MatMul(a: .., b: .., out: ..)`)
//! or the generic `Kernel(kernel: .., inputs: .., out: ..)`; both are a [`KernelOp`],
//! which remembers the form it was written in ([`Shorthand`]) for messages and for
//! printing it back. The text forms and their one table are `text.rs` and
//! `shorthand.rs`; what is asked of an op (its inputs, output, layout, class) is
//! `op_fields.rs`.

use super::shorthand::Shorthand;
use super::text::OpText;
use super::{AlgorithmName, Buffers};
use crate::program::ReduceOp;
use serde::{Deserialize, Serialize};

/// One step of a program. Layout fields hold TensorLayout text or `$var` (a plan
/// variable). Read and written as the file writes it ([`OpText`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "OpText", into = "OpText")]
pub enum Op {
    /// DRAM → LM in `layout`.
    Load {
        tensor: String,
        layout: String,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        buffers: Option<Buffers>,
    },
    /// DRAM → LM of the rows of `table` that `indices` name (an embedding lookup).
    Gather {
        table: String,
        indices: String,
        out: String,
        layout: String,
        buffers: Option<Buffers>,
    },
    /// LM → DRAM.
    Store { tensor: String },
    /// LM layout → another LM layout (into `out` if given, else in place).
    Relayout {
        tensor: String,
        layout: String,
        out: Option<String>,
        buffers: Option<Buffers>,
        /// The algorithm of its collectives over a network (docs/model.md, many
        /// boards); `None`: the network's own.
        algorithm: Option<AlgorithmName>,
    },
    /// A Load (tensor not in LM) or Relayout (tensor in LM) into a layout that
    /// replicates over some level.
    Broadcast {
        tensor: String,
        layout: String,
        out: Option<String>,
        buffers: Option<Buffers>,
        /// The algorithm of its collectives over a network (docs/model.md, many
        /// boards); `None`: the network's own.
        algorithm: Option<AlgorithmName>,
    },
    /// Combines partial results across `level`.
    Reduce {
        tensor: String,
        level: String,
        op: ReduceOp,
        layout: Option<String>,
        buffers: Option<Buffers>,
        out: Option<String>,
        /// The algorithm of its collective over a network (docs/model.md, many
        /// boards); `None`: the network's own.
        algorithm: Option<AlgorithmName>,
    },
    /// Releases a tensor's LM.
    Free { tensor: String },
    /// A kernel: `out = kernel(inputs)`.
    Kernel(KernelOp),
}

/// A kernel op: the kernels crate's kernel, its operands and result, and the form the
/// file writes it in.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelOp {
    pub kernel: mnsim_kernels::Kernel,
    pub inputs: Vec<String>,
    pub out: String,
    pub layout: Option<String>,
    /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
    pub buffers: Option<Buffers>,
    /// The algorithm of the tree Reduces the run inserts after it over a network
    /// (docs/model.md, many boards); `None`: the network's own.
    pub algorithm: Option<AlgorithmName>,
    /// The shorthand it is written as; `None`: the generic `Kernel(...)`.
    pub written: Option<Shorthand>,
}

impl KernelOp {
    /// A kernel op written in the generic form.
    pub fn generic(kernel: mnsim_kernels::Kernel, inputs: Vec<String>, out: String) -> KernelOp {
        KernelOp {
            kernel,
            inputs,
            out,
            layout: None,
            buffers: None,
            algorithm: None,
            written: None,
        }
    }

    /// The name of the field that names input `k` as the op is written (`a`, `input`,
    /// `inputs`), for messages to point at.
    pub fn input_field(&self, k: usize) -> &'static str {
        self.written.map_or("inputs", |s| s.operand(k))
    }
}
