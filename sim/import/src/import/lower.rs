//! oneDNN Graph ops → scenario kernel ops (one or a few per graph op), with the
//! kernel each one runs (for the default layouts) and its output shape checked: the
//! lowering context and the checks every kind shares; `ops` lowers each kind.

use super::graph::{At, GOp, Graph, Tensor};
use super::ops::lower_op;
use crate::scenario::Init;
use mnsim_arch::DType;
use mnsim_kernels::{Kernel, UnaryOp};

/// A tensor of the scenario.
#[derive(Clone, Debug)]
pub struct Decl {
    pub name: String,
    pub dtype: DType,
    /// Logical dimensions (a rank-0 scalar becomes `[1]`).
    pub dims: Vec<u64>,
    /// The XLA minor_to_major order of its DRAM layout (graph inputs and outputs).
    pub minor_to_major: Vec<usize>,
    /// `Random` seed for graph inputs.
    pub seed: Option<u64>,
    /// The graph tensor id, for comments.
    pub graph_id: Option<u64>,
    pub constant: bool,
    /// The `init` of an input that is not random (a StableHLO constant: `Fill(...)`,
    /// `Runs(...)`).
    pub init: Option<Init>,
    /// The names of symbolic dimensions (`Some("b")`), per axis; empty when static.
    pub dim_names: Vec<Option<String>>,
}

/// What a step does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// A kernel on the step's inputs.
    Kernel(Kernel),
    /// The rows of `table` (a graph input, in DRAM) at the indices that are the step's
    /// one input (`scenario::Op::Gather`).
    Gather { table: String },
}

/// A tensor of the scenario, as the StableHLO and ONNX imports name it.
#[derive(Clone, Debug, PartialEq)]
pub struct Tens {
    pub name: String,
    pub dtype: DType,
    /// Its logical dimensions (a scalar has none; the scenario declares it `[1]`).
    pub dims: Vec<u64>,
}

impl Tens {
    /// Its dimensions as the scenario declares them: a scalar is `[1]`.
    pub fn declared_dims(&self) -> Vec<u64> {
        if self.dims.is_empty() {
            vec![1]
        } else {
            self.dims.clone()
        }
    }
}

/// One op of the program: a kernel, or a gather from DRAM.
#[derive(Clone, Debug)]
pub struct Step {
    pub action: Action,
    /// An explicit conversion (`Cast`): a `Unary(Copy)` into another dtype.
    pub cast: bool,
    pub inputs: Vec<String>,
    pub out: String,
    /// The graph op it comes from (a comment line before its first step).
    pub origin: Option<String>,
    /// Where it sits in a whole model (layer, part), when the import tells.
    pub place: crate::scenario::Place,
}

/// How graph inputs' strides become DRAM layouts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strides {
    /// From the file; strides that are not a dense permutation are an error.
    #[default]
    File,
    /// Row-major, whatever the file says.
    RowMajor,
}

impl Step {
    /// Every tensor it names: its inputs, a gather's table, its output.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        let table = match &self.action {
            Action::Gather { table } => Some(table),
            Action::Kernel(_) => None,
        };
        self.inputs.iter().chain(table).chain([&self.out])
    }
}

pub struct Lowered {
    pub decls: Vec<Decl>,
    pub steps: Vec<Step>,
    /// Graph inputs and outputs by scenario name.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// Bindings of the symbolic dimensions the lowering resolved (the scenario's `bind`).
    pub bind: Vec<(String, u64)>,
}

/// The contraction `a · b` (`transpose_a/b` given): `MatMul` for two matrices,
/// `BatchMatMul` for equal batch axes, `GeneralMatMul` otherwise.
pub fn contraction(transpose_a: bool, transpose_b: bool, a: &[u64], b: &[u64]) -> Kernel {
    let plain = !transpose_a && !transpose_b;
    if plain && a.len() == 2 && b.len() == 2 {
        Kernel::MatMul
    } else if plain && a.len() == b.len() && a.len() >= 2 && a[..a.len() - 2] == b[..b.len() - 2] {
        Kernel::BatchMatMul
    } else {
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        }
    }
}

pub fn name_of(id: u64) -> String {
    format!("t{id}")
}

fn dims_of(t: &Tensor) -> Vec<u64> {
    if t.shape.is_empty() {
        vec![1]
    } else {
        t.shape.clone()
    }
}

/// The XLA minor_to_major of `stride`s: axes by increasing stride; size-1 axes (whose
/// stride never matters) are the most major. Strides with gaps (a view into a larger
/// buffer, such as q, k and v slices of one packed QKV tensor) keep their axis order:
/// the view is laid out as the dense permutation (docs/import.md). Overlapping or
/// negative strides are an error.
pub fn minor_to_major(shape: &[u64], stride: &[i64]) -> Result<Vec<usize>, String> {
    let mut big: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] > 1).collect();
    big.sort_by_key(|&a| (stride[a], std::cmp::Reverse(a)));
    let mut expect: i64 = 1;
    for &a in &big {
        // A gap: the view skips elements of a larger buffer; the next axis starts at
        // its own stride.
        if stride[a] > expect {
            expect = stride[a];
        }
        if stride[a] != expect {
            return Err(format!(
                "strides {stride:?} for shape {shape:?} are not a dense layout: axis {a} (size {}) has stride {} where at least {expect} \
                 was expected (a layout puts the axes one inside the other with no overlaps); \
                 import with `--strides row-major` to ignore the file's strides",
                shape[a], stride[a]
            ));
        }
        expect = expect.saturating_mul(shape[a] as i64);
    }
    let mut m2m = big;
    m2m.extend((0..shape.len()).rev().filter(|&a| shape[a] <= 1));
    Ok(m2m)
}

pub(super) struct Cx<'a> {
    pub(super) g: &'a Graph,
    decls: Vec<Decl>,
    steps: Vec<Step>,
    /// The comment for the next step: the graph op it starts.
    pub(super) origin: Option<String>,
}

impl Cx<'_> {
    pub(super) fn tensor(&self, id: u64) -> &Tensor {
        &self.g.tensors[&id]
    }

    /// The rank of `op`'s input `i` in the file (a scalar has rank 0).
    pub(super) fn rank(&self, op: &GOp, i: usize) -> usize {
        self.tensor(op.inputs[i]).shape.len()
    }

    pub(super) fn dims(&self, name: &str) -> Vec<u64> {
        self.decls
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.dims.clone())
            .unwrap_or_default()
    }

    pub(super) fn declare_graph(&mut self, id: u64) {
        let name = name_of(id);
        if self.decls.iter().any(|d| d.name == name) {
            return;
        }
        let t = self.tensor(id).clone();
        let dims = dims_of(&t);
        self.decls.push(Decl {
            name,
            dtype: t.dtype,
            minor_to_major: (0..dims.len()).rev().collect(),
            dims,
            seed: None,
            graph_id: Some(id),
            constant: t.constant,
            init: None,
            dim_names: Vec::new(),
        });
    }

    /// A fresh intermediate tensor `t{id}_{suffix}` like `like`.
    pub(super) fn temp(&mut self, like: u64, suffix: &str) -> String {
        let t = self.tensor(like).clone();
        let name = format!("{}_{suffix}", name_of(like));
        let dims = dims_of(&t);
        self.decls.push(Decl {
            name: name.clone(),
            dtype: t.dtype,
            minor_to_major: (0..dims.len()).rev().collect(),
            dims,
            seed: None,
            graph_id: None,
            constant: false,
            init: None,
            dim_names: Vec::new(),
        });
        name
    }

    /// A fresh intermediate tensor `t{id}_{suffix}` of `like`'s dtype and shape `dims`.
    pub(super) fn temp_dims(&mut self, like: u64, suffix: &str, dims: Vec<u64>) -> String {
        let name = self.temp(like, suffix);
        if let Some(d) = self.decls.iter_mut().find(|d| d.name == name) {
            d.minor_to_major = (0..dims.len()).rev().collect();
            d.dims = dims;
        }
        name
    }

    /// Appends a kernel step after checking its output shape against the declared one.
    pub(super) fn step(
        &mut self,
        op: &GOp,
        kernel: Kernel,
        inputs: Vec<String>,
        out: String,
    ) -> Result<(), At> {
        self.push(op, kernel, false, inputs, out)
    }

    /// Appends a `Cast` of `inputs[0]` into `out` (of another dtype).
    pub(super) fn cast(&mut self, op: &GOp, inputs: Vec<String>, out: String) -> Result<(), At> {
        self.push(op, Kernel::Unary(UnaryOp::Copy), true, inputs, out)
    }

    fn push(
        &mut self,
        op: &GOp,
        kernel: Kernel,
        cast: bool,
        inputs: Vec<String>,
        out: String,
    ) -> Result<(), At> {
        let in_dims: Vec<Vec<u64>> = inputs.iter().map(|n| self.dims(n)).collect();
        let refs: Vec<&[u64]> = in_dims.iter().map(Vec::as_slice).collect();
        let want = mnsim_kernels::output_shape(&kernel, &refs).map_err(|e| op.error(e.message))?;
        let have = self.dims(&out);
        let want = if want.is_empty() { vec![1] } else { want };
        if want != have {
            return Err(op.error(format!(
                "the output `{out}` has shape {have:?}, but the inputs give {want:?}"
            )));
        }
        let origin = self.origin.take();
        self.steps.push(Step {
            action: Action::Kernel(kernel),
            cast,
            inputs,
            out,
            origin,
            place: Default::default(),
        });
        Ok(())
    }
}

pub(super) fn count(op: &GOp, ins: &[usize], outs: usize) -> Result<(), At> {
    if !ins.contains(&op.inputs.len()) {
        let want: Vec<String> = ins.iter().map(usize::to_string).collect();
        return Err(op.error(format!(
            "takes {} input(s), the file gives {}",
            want.join(" or "),
            op.inputs.len()
        )));
    }
    if op.outputs.len() < outs.max(1) {
        return Err(op.error(format!(
            "needs {outs} output(s), the file gives {}",
            op.outputs.len()
        )));
    }
    Ok(())
}

/// Normalises a possibly negative axis against `rank`.
pub(super) fn axis(op: &GOp, attr: &str, a: i64, rank: usize) -> Result<usize, At> {
    let r = rank as i64;
    if a < -r || a >= r.max(1) {
        return Err(op.attr_error(attr, format!("axis {a} is out of range for rank {rank}")));
    }
    Ok(if a < 0 { (a + r) as usize } else { a as usize })
}

pub(super) fn required<T>(op: &GOp, name: &str, v: Option<T>) -> Result<T, At> {
    v.ok_or_else(|| op.error(format!("the attribute `{name}` is required")))
}

/// Checks `auto_broadcast: none` (shapes must be equal).
pub(super) fn no_broadcast(cx: &Cx, op: &GOp) -> Result<(), At> {
    if op.attr_str("auto_broadcast")?.as_deref() == Some("none") {
        let shapes: Vec<&Vec<u64>> = op.inputs.iter().map(|&t| &cx.tensor(t).shape).collect();
        if shapes.windows(2).any(|w| w[0] != w[1]) {
            return Err(op.attr_error(
                "auto_broadcast",
                format!("`auto_broadcast: none` but the inputs' shapes differ: {shapes:?}"),
            ));
        }
    }
    Ok(())
}

/// Lowers the graph. Graph inputs get DRAM layouts from their strides (or row-major)
/// and `Random` seeds from their ids.
pub fn lower(g: &Graph, strides: Strides) -> Result<Lowered, At> {
    let mut cx = Cx {
        g,
        decls: Vec::new(),
        steps: Vec::new(),
        origin: None,
    };
    for op in &g.ops {
        lower_op(&mut cx, op)?;
    }
    let inputs: Vec<String> = g.inputs.iter().map(|&t| name_of(t)).collect();
    let outputs: Vec<String> = g.outputs.iter().map(|&t| name_of(t)).collect();
    for &id in g.outputs.iter().chain(&g.inputs) {
        let name = name_of(id);
        let t = &g.tensors[&id];
        let is_input = g.inputs.contains(&id);
        let row_major: Vec<usize> = (0..dims_of(t).len()).rev().collect();
        let m2m = match (&t.stride, strides) {
            (Some(s), Strides::File) if !t.shape.is_empty() => match minor_to_major(&t.shape, s) {
                Ok(m) => m,
                // An output's strides only say where results go: row-major when they
                // describe no dense layout.
                Err(_) if !is_input => row_major,
                Err(m) => {
                    return Err(At {
                        span: Some(t.span.clone()),
                        message: format!("{} (graph input, tensor id {id}): {m}", t.path),
                    });
                }
            },
            _ => row_major,
        };
        if let Some(d) = cx.decls.iter_mut().find(|d| d.name == name) {
            d.minor_to_major = m2m;
            if is_input {
                d.seed = Some(id);
            }
        }
    }
    Ok(Lowered {
        decls: cx.decls,
        steps: cx.steps,
        inputs,
        outputs,
        bind: Vec::new(),
    })
}
