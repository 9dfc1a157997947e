//! The program's steps: the `Op` enum as scenario files write it (RON), its fields
//! (tensors, layouts, `buffers:`), and the plan variables its layouts name.

use crate::program::ReduceOp;
use serde::{Deserialize, Serialize};

/// One step of a program. Layout fields hold TensorLayout text or `$var` (a plan
/// variable).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Op {
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

/// `buffers:` of an op: a count, or `"$name"`, a plan variable whose value is the count
/// (as text: `"wb": "1"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Buffers {
    Count(i64),
    Var(String),
}

impl<'de> Deserialize<'de> for Buffers {
    /// An integer or a string; a number out of range or not whole is refused in the
    /// project's words (the resolver checks that a count is at least 1).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Buffers;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a count of slices (an integer ≥ 1) or a plan variable `\"$name\"`")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Buffers, E> {
                Ok(Buffers::Count(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Buffers, E> {
                i64::try_from(v)
                    .map(Buffers::Count)
                    .map_err(|_| too_large(v))
            }
            fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Buffers, E> {
                i64::try_from(v)
                    .map(Buffers::Count)
                    .map_err(|_| too_large(v))
            }
            fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Buffers, E> {
                i64::try_from(v)
                    .map(Buffers::Count)
                    .map_err(|_| too_large(v))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Buffers, E> {
                Err(E::custom(format!(
                    "`buffers: {v}`: a count of slices is a whole number (an integer ≥ 1)"
                )))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Buffers, E> {
                Ok(Buffers::Var(v.to_string()))
            }
        }
        fn too_large<E: serde::de::Error>(v: impl std::fmt::Display) -> E {
            E::custom(format!(
                "`buffers: {v}` is out of range: a count of slices is an integer from 1 to {} \
                 (LM holds at most every slice of a stream; a larger count changes nothing)",
                i64::MAX
            ))
        }
        d.deserialize_any(V)
    }
}

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
            Op::Reduce { layout: $l, .. }
            | Op::Unary { layout: $l, .. }
            | Op::Binary { layout: $l, .. }
            | Op::MatMul { layout: $l, .. }
            | Op::BatchMatMul { layout: $l, .. }
            | Op::ReduceAxes { layout: $l, .. }
            | Op::Softmax { layout: $l, .. }
            | Op::LayerNorm { layout: $l, .. }
            | Op::Transpose { layout: $l, .. }
            | Op::Select { layout: $l, .. }
            | Op::Clamp { layout: $l, .. }
            | Op::Elu { layout: $l, .. }
            | Op::BiasAdd { layout: $l, .. }
            | Op::GeneralMatMul { layout: $l, .. }
            | Op::Reshape { layout: $l, .. }
            | Op::Concat { layout: $l, .. }
            | Op::Kernel { layout: $l, .. }
            | Op::Cast { layout: $l, .. } => $opt,
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
            | Op::Unary { buffers: $b, .. }
            | Op::Binary { buffers: $b, .. }
            | Op::MatMul { buffers: $b, .. }
            | Op::BatchMatMul { buffers: $b, .. }
            | Op::ReduceAxes { buffers: $b, .. }
            | Op::Softmax { buffers: $b, .. }
            | Op::LayerNorm { buffers: $b, .. }
            | Op::Transpose { buffers: $b, .. }
            | Op::Select { buffers: $b, .. }
            | Op::Clamp { buffers: $b, .. }
            | Op::Elu { buffers: $b, .. }
            | Op::BiasAdd { buffers: $b, .. }
            | Op::GeneralMatMul { buffers: $b, .. }
            | Op::Reshape { buffers: $b, .. }
            | Op::Concat { buffers: $b, .. }
            | Op::Kernel { buffers: $b, .. }
            | Op::Cast { buffers: $b, .. } => $on,
            Op::Store { .. } | Op::Free { .. } => $none,
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

    /// The variant name (`"Load"`, `"MatMul"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Load { .. } => "Load",
            Op::Gather { .. } => "Gather",
            Op::Store { .. } => "Store",
            Op::Relayout { .. } => "Relayout",
            Op::Broadcast { .. } => "Broadcast",
            Op::Reduce { .. } => "Reduce",
            Op::Free { .. } => "Free",
            Op::Unary { .. } => "Unary",
            Op::Binary { .. } => "Binary",
            Op::MatMul { .. } => "MatMul",
            Op::BatchMatMul { .. } => "BatchMatMul",
            Op::ReduceAxes { .. } => "ReduceAxes",
            Op::Softmax { .. } => "Softmax",
            Op::LayerNorm { .. } => "LayerNorm",
            Op::Transpose { .. } => "Transpose",
            Op::Select { .. } => "Select",
            Op::Clamp { .. } => "Clamp",
            Op::Elu { .. } => "Elu",
            Op::BiasAdd { .. } => "BiasAdd",
            Op::GeneralMatMul { .. } => "GeneralMatMul",
            Op::Reshape { .. } => "Reshape",
            Op::Concat { .. } => "Concat",
            Op::Cast { .. } => "Cast",
            Op::Kernel { kernel, .. } => kernel.name(),
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
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::MatMul { .. }
            | Op::BatchMatMul { .. }
            | Op::ReduceAxes { .. }
            | Op::Softmax { .. }
            | Op::LayerNorm { .. }
            | Op::Transpose { .. }
            | Op::Select { .. }
            | Op::Clamp { .. }
            | Op::Elu { .. }
            | Op::BiasAdd { .. }
            | Op::GeneralMatMul { .. }
            | Op::Reshape { .. }
            | Op::Concat { .. }
            | Op::Kernel { .. }
            | Op::Cast { .. } => OpClass::Kernel,
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
            Op::Unary { input, .. }
            | Op::ReduceAxes { input, .. }
            | Op::Softmax { input, .. }
            | Op::LayerNorm { input, .. }
            | Op::Transpose { input, .. }
            | Op::Clamp { input, .. }
            | Op::Elu { input, .. }
            | Op::Reshape { input, .. }
            | Op::Cast { input, .. } => vec![("input", input)],
            Op::Binary { a, b, .. }
            | Op::MatMul { a, b, .. }
            | Op::BatchMatMul { a, b, .. }
            | Op::GeneralMatMul { a, b, .. } => {
                vec![("a", a), ("b", b)]
            }
            Op::Select { cond, a, b, .. } => vec![("cond", cond), ("a", a), ("b", b)],
            Op::BiasAdd { input, bias, .. } => vec![("input", input), ("bias", bias)],
            Op::Concat { inputs, .. } | Op::Kernel { inputs, .. } => {
                inputs.iter().map(|t| ("inputs", t.as_str())).collect()
            }
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
            Op::Gather { out, .. } => Some(("out", out)),
            Op::Load { tensor, .. } => Some(("tensor", tensor)),
            Op::Store { .. } | Op::Free { .. } => None,
            Op::Relayout { tensor, out, .. }
            | Op::Broadcast { tensor, out, .. }
            | Op::Reduce { tensor, out, .. } => Some(match out {
                Some(o) => ("out", o),
                None => ("tensor", tensor),
            }),
            Op::Unary { out, .. }
            | Op::Binary { out, .. }
            | Op::MatMul { out, .. }
            | Op::BatchMatMul { out, .. }
            | Op::ReduceAxes { out, .. }
            | Op::Softmax { out, .. }
            | Op::LayerNorm { out, .. }
            | Op::Transpose { out, .. }
            | Op::Select { out, .. }
            | Op::Clamp { out, .. }
            | Op::Elu { out, .. }
            | Op::BiasAdd { out, .. }
            | Op::GeneralMatMul { out, .. }
            | Op::Reshape { out, .. }
            | Op::Concat { out, .. }
            | Op::Kernel { out, .. }
            | Op::Cast { out, .. } => Some(("out", out)),
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
            _ => match self.output() {
                Some((_, o)) => format!("{} -> `{o}`", self.name()),
                None => self.name().to_string(),
            },
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
