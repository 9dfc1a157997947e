//! What can stop an op on the engine, typed: the planner acts on the kind (an illegal
//! kernel, LM full), the run points at the op and tensor, and every message names the
//! tensors by their names (the engine holds them by id).

use crate::program::{DramError, TensorId};
use mnsim_arch::DType;

/// A simulation error: what stopped the op, after `context` (the op it stopped at, when
/// a caller says).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{context}{kind}")]
pub struct SimError {
    context: String,
    /// Boxed: results that carry a `SimError` stay small on the success path.
    kind: Box<ErrorKind>,
}

/// Why an op could not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    /// A kernel that cannot run as asked: `error.kind` says why (`Illegal`: the operand
    /// and level a relayout must fix; `Layout`, `Rate`, ...).
    #[error("{0}")]
    Kernel(mnsim_kernels::KernelError),
    /// LM cannot hold what the op needs.
    #[error("{0}")]
    LmFull(LmFull),
    /// A tensor the machine's DRAM cannot hold.
    #[error("{0}")]
    Dram(#[from] DramError),
    /// An id no tensor declared on this engine has.
    #[error("unknown tensor {0}")]
    UnknownTensor(TensorId),
    #[error("tensor `{0}`: too many tensors for one engine")]
    TooManyTensors(String),
    #[error("tensor `{0}` is not in LM: Load it first")]
    NotInLm(String),
    /// A stream assumed in LM (the planner's measuring engine) is not there.
    #[error("tensor `{0}` is not in LM")]
    StreamNotInLm(String),
    #[error("tensor `{0}` is not in DRAM: give it an `init` or Store it first")]
    NotInDram(String),
    #[error("tensor `{0}` has no data in DRAM")]
    NoDramData(String),
    #[error("Gather: indices `{tensor}` are {dtype}, not integers")]
    GatherIndices { tensor: String, dtype: DType },
    #[error(
        "Gather: `{out}` ({out_dtype} {out_dims:?}) cannot hold rows of `{table}` ({dtype} {dims:?}) at indices {indices:?}: it must be {dtype} {want:?}"
    )]
    GatherShape {
        out: String,
        out_dtype: DType,
        out_dims: Vec<u64>,
        table: String,
        dtype: DType,
        dims: Vec<u64>,
        indices: Vec<u64>,
        want: Vec<u64>,
    },
    #[error("layout {layout} is for shape {shape:?} but tensor `{tensor}` has shape {dims:?}")]
    LoadShape {
        layout: String,
        shape: Vec<u64>,
        tensor: String,
        dims: Vec<u64>,
    },
    #[error("layout {layout} is for shape {shape:?}, not {dims:?}")]
    MoveShape {
        layout: String,
        shape: Vec<u64>,
        dims: Vec<u64>,
    },
    #[error("`{dst}` ({dst_dtype} {dst_dims:?}) cannot hold `{src}` ({dtype} {dims:?})")]
    CannotHold {
        dst: String,
        dst_dtype: DType,
        dst_dims: Vec<u64>,
        src: String,
        dtype: DType,
        dims: Vec<u64>,
    },
    /// A tensor with partial results where whole ones are needed.
    #[error("{}", partial_message(*.before, .tensor, .level))]
    Partial {
        before: Partial,
        tensor: String,
        level: String,
    },
    #[error("`{level}` is not an addressable level of {machine} ({levels})")]
    NotALevel {
        level: String,
        machine: String,
        levels: String,
    },
    #[error(
        "tensor `{tensor}` is split over {level}, not partial: there is nothing to reduce over {level}"
    )]
    SplitNotPartial { tensor: String, level: String },
    #[error("tensor `{0}`: LM regions too large to hold")]
    LmTooLarge(String),
    /// A kernel's declared output shape is not what it computes.
    #[error(
        "{op} of {inputs} gives {}shape {want:?}, but `{tensor}` {} {dims:?}",
        if *.runtime { "run-time " } else { "" },
        if *.runtime { "has run-time shape" } else { "is declared with shape" }
    )]
    OutputShape {
        op: String,
        inputs: String,
        runtime: bool,
        want: Vec<u64>,
        tensor: String,
        dims: Vec<u64>,
    },
    /// A kernel op with no `layout:` whose output cannot take its first input's.
    #[error(
        "{op} has no `layout:` for `{out}`, and an output without one is laid out like the op's \
         first input, `{input}`, which is {dtype}{dims:?} while `{out}` is {out_dtype}{out_dims:?}: \
         give `layout:`"
    )]
    NoOutputLayout {
        op: String,
        out: String,
        input: String,
        dtype: DType,
        dims: Vec<u64>,
        out_dtype: DType,
        out_dims: Vec<u64>,
    },
    #[error(
        "`buffers: {buffers}` for `{tensor}`: LM must hold at least one slice of a stream (give an integer ≥ 1)"
    )]
    NoBuffers { buffers: i64, tensor: String },
    /// An op that moves a tensor was given no layout to move it into.
    #[error("{0} needs a layout")]
    NeedsLayout(&'static str),
    #[error("a Reduce keeps the tensor's layout; follow it with a Relayout to change it")]
    ReduceKeepsLayout,
    /// An op whose layout a plan left to the planner (`Any`), run as it is.
    #[error(
        "op {op} ({name}): plan variable `{var}` is `Any`; choose a layout for it (or let `mnsim plan` choose)"
    )]
    AnyLayout {
        op: usize,
        name: &'static str,
        var: String,
    },
    #[error("op {op} ({name}) has no layout")]
    NoLayout { op: usize, name: &'static str },
    /// A run given an engine that holds tensors already.
    #[error("the engine holds tensors already: `{tensor}` became {got}, not {want}")]
    NotEmpty {
        tensor: String,
        got: TensorId,
        want: TensorId,
    },
}

/// What a partial tensor was about to be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partial {
    Store,
    Move,
    KernelInput,
}

fn partial_message(before: Partial, tensor: &str, level: &str) -> String {
    match before {
        Partial::Store => format!(
            "tensor `{tensor}` holds partial results over {level}: Reduce it over that level before storing"
        ),
        Partial::Move => {
            format!(
                "tensor `{tensor}` holds partial results over {level}: Reduce it before moving it"
            )
        }
        Partial::KernelInput => {
            format!("`{tensor}` holds partial sums over {level}: Reduce it over {level} first")
        }
    }
}

/// LM cannot hold what an op needs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LmFull {
    /// A tensor's region.
    #[error(
        "tensor `{tensor}` needs {need} LM words per PE but only {free} of {lm} are free (resident: {resident})"
    )]
    Tensor {
        tensor: String,
        need: u64,
        free: u64,
        lm: u64,
        /// The tensors in LM with their words, for the message.
        resident: String,
    },
    /// The slices `buffers:` asks a stream to hold.
    #[error(
        "`buffers: {held}` for `{tensor}`: {held} slices of {slice} LM words need {need}, but only {free} of {lm} are free"
    )]
    Buffers {
        held: u64,
        tensor: String,
        slice: u64,
        need: u64,
        free: u64,
        lm: u64,
    },
}

impl SimError {
    /// The same error, its message after `prefix` (e.g. the op it stopped at).
    pub fn context(mut self, prefix: &str) -> SimError {
        self.context.insert_str(0, prefix);
        self
    }

    /// Why the op could not run.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Whether LM could not hold what the op needs.
    pub fn is_lm_full(&self) -> bool {
        matches!(*self.kind, ErrorKind::LmFull(_))
    }

    /// The kernel error this is, if any (with its kind).
    pub fn kernel(&self) -> Option<&mnsim_kernels::KernelError> {
        match &*self.kind {
            ErrorKind::Kernel(e) => Some(e),
            _ => None,
        }
    }

    /// A kernel's error, after `context` (the kernels' own messages name the kernel).
    pub fn in_kernel(context: String, error: mnsim_kernels::KernelError) -> SimError {
        SimError {
            context,
            kind: Box::new(ErrorKind::Kernel(error)),
        }
    }
}

impl From<ErrorKind> for SimError {
    fn from(kind: ErrorKind) -> SimError {
        SimError {
            context: String::new(),
            kind: Box::new(kind),
        }
    }
}

impl From<DramError> for SimError {
    fn from(e: DramError) -> SimError {
        ErrorKind::Dram(e).into()
    }
}

impl From<LmFull> for SimError {
    fn from(e: LmFull) -> SimError {
        ErrorKind::LmFull(e).into()
    }
}
