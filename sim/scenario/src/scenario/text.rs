//! The program's steps as scenario files write them (RON): `OpText`, the transfers,
//! the named shorthands of kernels and the generic `Kernel(...)` form. Only the format
//! sees it: a parsed op is an [`super::Op`] at once (`shorthand.rs` maps the two).

use super::{AlgorithmName, Buffers};
use crate::program::ReduceOp;
use serde::{Deserialize, Serialize};

/// One step of a program as the file writes it. Layout fields hold TensorLayout text or
/// `$var` (a plan variable).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Op")]
pub enum OpText {
    /// DRAM → LM in `layout`.
    Load {
        tensor: String,
        layout: String,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
    },
    /// DRAM → LM of the rows of `table` that `indices` name: `out[i.., r..] =
    /// table[indices[i..], r..]` (an embedding lookup), each index clamped into the
    /// table's first axis; `out` is laid out in `layout` like a Load's result, and
    /// charged as a Load of it (the gathered rows' bytes, whichever rows).
    Gather {
        /// A tensor in DRAM (an `init`, or stored).
        table: String,
        /// An integer tensor in LM.
        indices: String,
        /// Of `indices`' shape followed by `table`'s without its first axis.
        out: String,
        layout: String,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
    },
    /// LM → DRAM.
    Store { tensor: String },
    /// LM layout → another LM layout (into `out` if given, else in place).
    Relayout {
        tensor: String,
        layout: String,
        #[serde(default)]
        out: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of its collectives over a network: `"ring"`, `"tree"` or
        /// `"direct"` (docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// A Load (tensor not in LM) or Relayout (tensor in LM) into a layout that
    /// replicates over some level.
    Broadcast {
        tensor: String,
        layout: String,
        #[serde(default)]
        out: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of its collectives over a network: `"ring"`, `"tree"` or
        /// `"direct"` (docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// Combines partial results across `level`.
    Reduce {
        tensor: String,
        level: String,
        #[serde(default)]
        op: ReduceOp,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        #[serde(default)]
        out: Option<String>,
        /// The algorithm of its collective over a network: `"ring"`, `"tree"` or
        /// `"direct"` (docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// Releases a tensor's LM.
    Free { tensor: String },
    /// Elementwise `op(input)`.
    Unary {
        op: UnaryOp,
        input: String,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// Elementwise `op(a, b)`.
    Binary {
        op: BinaryOp,
        a: String,
        b: String,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// `out = a × b`.
    MatMul {
        a: String,
        b: String,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// Batched `out = a × b` over the leading axes.
    BatchMatMul {
        a: String,
        b: String,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// Reduces `input` along `axes` (kept with size 1 when `keep_dims`).
    ReduceAxes {
        op: ReduceOp,
        input: String,
        axes: Vec<usize>,
        #[serde(default)]
        keep_dims: bool,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// Softmax along `axis`.
    Softmax {
        input: String,
        axis: usize,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// Layer normalisation along `axis`.
    LayerNorm {
        input: String,
        axis: usize,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
        #[serde(default = "default_eps")]
        eps: f64,
    },
    /// Permutes axes: output axis `i` is input axis `perm[i]`.
    Transpose {
        input: String,
        perm: Vec<usize>,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// `out = cond ? a : b` elementwise, numpy broadcasting (`cond` nonzero is true).
    Select {
        cond: String,
        a: String,
        b: String,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// `min(max(input, min), max)`.
    Clamp {
        input: String,
        min: f64,
        max: f64,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// `input` where positive, else `alpha · (e^input − 1)`.
    Elu {
        input: String,
        #[serde(default = "default_alpha")]
        alpha: f64,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// `input + bias`, the vector `bias` along `axis` of `input`.
    BiasAdd {
        input: String,
        bias: String,
        axis: usize,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// MatMul with transposed operands and broadcast batch axes.
    GeneralMatMul {
        a: String,
        b: String,
        out: String,
        #[serde(default)]
        transpose_a: bool,
        #[serde(default)]
        transpose_b: bool,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// The same elements (row-major) in the shape `shape`.
    Reshape {
        input: String,
        shape: Vec<u64>,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// `inputs` joined along `axis`.
    Concat {
        inputs: Vec<String>,
        axis: usize,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// Any kernel of the kernels crate, named as it is there
    /// (`Kernel(kernel: Softmax(axis: 1), inputs: ["x"], out: "y")`): the one form every
    /// kernel has, and the only one a kernel added later needs. Its operands' dtypes are
    /// the kernel's to check.
    Kernel {
        kernel: mnsim_kernels::Kernel,
        inputs: Vec<String>,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
    /// `input` converted to the dtype of `out` (the one kernel whose operands' dtypes
    /// differ).
    Cast {
        input: String,
        out: String,
        #[serde(default)]
        layout: Option<String>,
        /// Slices of a `Time`-stepped result LM holds (docs/model.md, streams).
        #[serde(default)]
        buffers: Option<Buffers>,
        /// The algorithm of the tree Reduces the run inserts after it over a network
        /// (`auto_reduce`; docs/model.md, many boards); unset, the network's own.
        #[serde(default)]
        algorithm: Option<AlgorithmName>,
    },
}

fn default_alpha() -> f64 {
    1.0
}

fn default_eps() -> f64 {
    1e-5
}

/// Elementwise functions: the kernels' own enums (`Relu`, `Gelu`, ... and `Add`,
/// `Sub`, ...), so a scenario names exactly what the kernels run.
pub use mnsim_kernels::{BinaryOp, UnaryOp};
