//! oneDNN Graph ops → scenario kernel ops (one or a few per graph op), with the
//! kernel each one runs (for the default layouts) and its output shape checked.

use super::graph::{At, GOp, Graph, Tensor};
use mnsim_arch::DType;
use mnsim_kernels::{BinaryOp, Kernel, ReduceKind, UnaryOp};

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
}

/// One kernel op of the program.
#[derive(Clone, Debug)]
pub struct Step {
    /// The op in scenario syntax, without its `layout` field and closing parenthesis.
    pub text: String,
    pub kernel: Kernel,
    pub inputs: Vec<String>,
    pub out: String,
    /// The graph op it comes from (a comment line before its first step).
    pub origin: Option<String>,
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

pub struct Lowered {
    pub decls: Vec<Decl>,
    pub steps: Vec<Step>,
    /// Graph inputs and outputs by scenario name.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
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

/// The XLA minor_to_major of dense `stride`s: axes by increasing stride; size-1 axes
/// (whose stride never matters) are the most major. `None` for row-major.
pub fn minor_to_major(shape: &[u64], stride: &[i64]) -> Result<Vec<usize>, String> {
    let mut big: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] > 1).collect();
    big.sort_by_key(|&a| (stride[a], std::cmp::Reverse(a)));
    let mut expect: i64 = 1;
    for &a in &big {
        if stride[a] != expect {
            return Err(format!(
                "strides {stride:?} for shape {shape:?} are not a dense layout: axis {a} (size {}) has stride {} where {expect} \
                 was expected (a dense layout puts the axes one inside the other with no gaps or overlaps); \
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

struct Cx<'a> {
    g: &'a Graph,
    decls: Vec<Decl>,
    steps: Vec<Step>,
    /// The comment for the next step: the graph op it starts.
    origin: Option<String>,
}

impl Cx<'_> {
    fn tensor(&self, id: u64) -> &Tensor {
        &self.g.tensors[&id]
    }

    fn dims(&self, name: &str) -> Vec<u64> {
        self.decls
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.dims.clone())
            .unwrap_or_default()
    }

    fn declare_graph(&mut self, id: u64) {
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
        });
    }

    /// A fresh intermediate tensor `t{id}_{suffix}` like `like`.
    fn temp(&mut self, like: u64, suffix: &str) -> String {
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
        });
        name
    }

    /// Appends a kernel step after checking its output shape against the declared one.
    fn step(
        &mut self,
        op: &GOp,
        text: String,
        kernel: Kernel,
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
            text,
            kernel,
            inputs,
            out,
            origin,
        });
        Ok(())
    }
}

fn count(op: &GOp, ins: &[usize], outs: usize) -> Result<(), At> {
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
fn axis(op: &GOp, attr: &str, a: i64, rank: usize) -> Result<usize, At> {
    let r = rank as i64;
    if a < -r || a >= r.max(1) {
        return Err(op.attr_error(attr, format!("axis {a} is out of range for rank {rank}")));
    }
    Ok(if a < 0 { (a + r) as usize } else { a as usize })
}

fn required<T>(op: &GOp, name: &str, v: Option<T>) -> Result<T, At> {
    v.ok_or_else(|| op.error(format!("the attribute `{name}` is required")))
}

/// Checks `auto_broadcast: none` (shapes must be equal).
fn no_broadcast(cx: &Cx, op: &GOp) -> Result<(), At> {
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

fn unary_of(kind: &str) -> Option<UnaryOp> {
    Some(match kind {
        "ReLU" => UnaryOp::Relu,
        "GELU" => UnaryOp::Gelu,
        "Exp" => UnaryOp::Exp,
        "Log" => UnaryOp::Log,
        "Sqrt" => UnaryOp::Sqrt,
        "Square" => UnaryOp::Square,
        "Reciprocal" => UnaryOp::Recip,
        "Abs" => UnaryOp::Abs,
        "Round" => UnaryOp::Round,
        "Tanh" => UnaryOp::Tanh,
        "Sigmoid" => UnaryOp::Sigmoid,
        "HardSwish" => UnaryOp::HardSwish,
        "Reorder" | "TypeCast" => UnaryOp::Copy,
        _ => return None,
    })
}

fn binary_of(kind: &str) -> Option<BinaryOp> {
    Some(match kind {
        "Add" => BinaryOp::Add,
        "Subtract" => BinaryOp::Sub,
        "Multiply" => BinaryOp::Mul,
        "Divide" => BinaryOp::Div,
        "Maximum" => BinaryOp::Max,
        "Minimum" => BinaryOp::Min,
        _ => None?,
    })
}

fn reduce_of(kind: &str) -> Option<(ReduceKind, &'static str)> {
    Some(match kind {
        "ReduceSum" => (ReduceKind::Add, "Add"),
        "ReduceMean" => (ReduceKind::Mean, "Mean"),
        "ReduceMax" => (ReduceKind::Max, "Max"),
        "ReduceMin" => (ReduceKind::Min, "Min"),
        "ReduceProd" => (ReduceKind::Prod, "Prod"),
        "ReduceL1" => (ReduceKind::L1, "L1"),
        "ReduceL2" => (ReduceKind::L2, "L2"),
        _ => return None,
    })
}

/// Every op kind the import turns into kernels (docs/import.md).
pub const KINDS: [&str; 38] = [
    "MatMul",
    "Add",
    "Subtract",
    "Multiply",
    "Divide",
    "Maximum",
    "Minimum",
    "Select",
    "SoftMax",
    "LayerNorm",
    "GELU",
    "ReLU",
    "Sigmoid",
    "Tanh",
    "Elu",
    "Exp",
    "Log",
    "Sqrt",
    "Square",
    "Reciprocal",
    "Abs",
    "Round",
    "Clamp",
    "HardSwish",
    "BiasAdd",
    "StaticTranspose",
    "StaticReshape",
    "Reorder",
    "TypeCast",
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "Concat",
    "End",
];

fn q(s: &str) -> String {
    format!("\"{s}\"")
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", s.join(", "))
}

fn lower_op(cx: &mut Cx, op: &GOp) -> Result<(), At> {
    let k = op.kind.as_str();
    cx.origin = Some(if op.name.is_empty() {
        op.label()
    } else {
        format!("{} `{}`", op.label(), op.name)
    });
    let ins: Vec<String> = op.inputs.iter().map(|&t| name_of(t)).collect();
    for &t in op.inputs.iter().chain(&op.outputs) {
        cx.declare_graph(t);
    }
    let out = op.outputs.first().map(|&t| name_of(t)).unwrap_or_default();
    let rank = |i: usize| cx.tensor(op.inputs[i]).shape.len();
    if let Some(u) = unary_of(k) {
        count(op, &[1], 1)?;
        if k == "Reorder" && cx.tensor(op.inputs[0]).dtype != cx.tensor(op.outputs[0]).dtype {
            return Err(op.error("a Reorder keeps the data type; use TypeCast to change it".into()));
        }
        if k == "GELU"
            && op
                .attr_str("mode")?
                .as_deref()
                .is_some_and(|m| m != "gelu_erf" && m != "gelu_tanh")
        {
            return Err(op.attr_error("mode", "unknown GELU mode (gelu_erf or gelu_tanh)".into()));
        }
        let text = if k == "TypeCast" {
            format!("Cast(input: {}, out: {}", q(&ins[0]), q(&out))
        } else {
            format!(
                "Unary(op: {}, input: {}, out: {}",
                u.name(),
                q(&ins[0]),
                q(&out)
            )
        };
        return cx.step(op, text, Kernel::Unary(u), ins, out);
    }
    if let Some(b) = binary_of(k) {
        count(op, &[2], 1)?;
        no_broadcast(cx, op)?;
        let text = format!(
            "Binary(op: {}, a: {}, b: {}, out: {}",
            b.name(),
            q(&ins[0]),
            q(&ins[1]),
            q(&out)
        );
        return cx.step(op, text, Kernel::Binary(b), ins, out);
    }
    if let Some((r, name)) = reduce_of(k) {
        count(op, &[1], 1)?;
        let axes = op.attr_i64s("axes")?.ok_or_else(|| {
            op.error(
                "the attribute `axes` is required (axes given as a second input are not supported)"
                    .into(),
            )
        })?;
        let mut ax = Vec::new();
        for a in axes {
            ax.push(axis(op, "axes", a, rank(0))?);
        }
        let keep = op.attr_bool("keep_dims")?.unwrap_or(false);
        let text = format!(
            "ReduceAxes(op: {name}, input: {}, axes: {}, keep_dims: {keep}, out: {}",
            q(&ins[0]),
            list(&ax),
            q(&out)
        );
        let kernel = Kernel::ReduceAxes {
            op: r,
            axes: ax,
            keep_dims: keep,
        };
        return cx.step(op, text, kernel, ins, out);
    }
    match k {
        "MatMul" => {
            count(op, &[2, 3], 1)?;
            let ta = op.attr_bool("transpose_a")?.unwrap_or(false);
            let tb = op.attr_bool("transpose_b")?.unwrap_or(false);
            let (a, b) = (cx.dims(&ins[0]), cx.dims(&ins[1]));
            if cx.tensor(op.inputs[0]).shape.len() < 2 || cx.tensor(op.inputs[1]).shape.len() < 2 {
                return Err(op.error(
                    "operands of rank 0 or 1 are not supported (MatMul needs rank 2 or more)"
                        .into(),
                ));
            }
            let target = if ins.len() == 3 {
                cx.temp(op.outputs[0], "mm")
            } else {
                out.clone()
            };
            let (text, kernel) = if !ta && !tb && a.len() == 2 && b.len() == 2 {
                (
                    format!(
                        "MatMul(a: {}, b: {}, out: {}",
                        q(&ins[0]),
                        q(&ins[1]),
                        q(&target)
                    ),
                    Kernel::MatMul,
                )
            } else if !ta && !tb && a.len() == b.len() && a[..a.len() - 2] == b[..b.len() - 2] {
                (
                    format!(
                        "BatchMatMul(a: {}, b: {}, out: {}",
                        q(&ins[0]),
                        q(&ins[1]),
                        q(&target)
                    ),
                    Kernel::BatchMatMul,
                )
            } else {
                (
                    format!(
                        "GeneralMatMul(a: {}, b: {}, transpose_a: {ta}, transpose_b: {tb}, out: {}",
                        q(&ins[0]),
                        q(&ins[1]),
                        q(&target)
                    ),
                    Kernel::GeneralMatMul {
                        transpose_a: ta,
                        transpose_b: tb,
                    },
                )
            };
            cx.step(op, text, kernel, ins[..2].to_vec(), target.clone())?;
            if ins.len() == 3 {
                let text = format!(
                    "Binary(op: Add, a: {}, b: {}, out: {}",
                    q(&target),
                    q(&ins[2]),
                    q(&out)
                );
                cx.step(
                    op,
                    text,
                    Kernel::Binary(BinaryOp::Add),
                    vec![target, ins[2].clone()],
                    out,
                )?;
            }
            Ok(())
        }
        "Select" => {
            count(op, &[3], 1)?;
            no_broadcast(cx, op)?;
            let text = format!(
                "Select(cond: {}, a: {}, b: {}, out: {}",
                q(&ins[0]),
                q(&ins[1]),
                q(&ins[2]),
                q(&out)
            );
            cx.step(op, text, Kernel::Select, ins, out)
        }
        "SoftMax" => {
            count(op, &[1], 1)?;
            let a = axis(op, "axis", op.attr_i64("axis")?.unwrap_or(1), rank(0))?;
            let text = format!("Softmax(input: {}, axis: {a}, out: {}", q(&ins[0]), q(&out));
            cx.step(op, text, Kernel::Softmax { axis: a }, ins, out)
        }
        "LayerNorm" => {
            count(op, &[1, 2, 3], 1)?;
            let r = rank(0);
            let begin = axis(
                op,
                "begin_norm_axis",
                op.attr_i64("begin_norm_axis")?.unwrap_or(-1),
                r,
            )?;
            if begin + 1 != r {
                return Err(op.attr_error(
                    "begin_norm_axis",
                    format!("normalising over several axes (from axis {begin} of {r}) is not supported; only the last axis"),
                ));
            }
            let eps = op.attr_f64("epsilon")?.unwrap_or(1e-5);
            let affine = op.attr_bool("use_affine")?.unwrap_or(true);
            if op.outputs.len() > 1 {
                let used: Vec<u64> = op.outputs[1..]
                    .iter()
                    .filter(|t| {
                        cx.g.ops.iter().any(|o| o.inputs.contains(t)) || cx.g.outputs.contains(t)
                    })
                    .copied()
                    .collect();
                if !used.is_empty() {
                    return Err(op.error(format!(
                        "the mean and variance outputs (tensor ids {used:?}) are used; only the normalised output is supported"
                    )));
                }
            }
            if affine && ins.len() != 3 {
                return Err(op.error(format!(
                    "`use_affine` needs gamma and beta inputs; the file gives {} input(s)",
                    ins.len()
                )));
            }
            let norm = if affine {
                cx.temp(op.outputs[0], "norm")
            } else {
                out.clone()
            };
            let text = format!(
                "LayerNorm(input: {}, axis: {begin}, eps: {eps:?}, out: {}",
                q(&ins[0]),
                q(&norm)
            );
            cx.step(
                op,
                text,
                Kernel::LayerNorm { axis: begin, eps },
                vec![ins[0].clone()],
                norm.clone(),
            )?;
            if affine {
                let scaled = cx.temp(op.outputs[0], "scaled");
                let text = format!(
                    "Binary(op: Mul, a: {}, b: {}, out: {}",
                    q(&norm),
                    q(&ins[1]),
                    q(&scaled)
                );
                cx.step(
                    op,
                    text,
                    Kernel::Binary(BinaryOp::Mul),
                    vec![norm, ins[1].clone()],
                    scaled.clone(),
                )?;
                let text = format!(
                    "Binary(op: Add, a: {}, b: {}, out: {}",
                    q(&scaled),
                    q(&ins[2]),
                    q(&out)
                );
                cx.step(
                    op,
                    text,
                    Kernel::Binary(BinaryOp::Add),
                    vec![scaled, ins[2].clone()],
                    out,
                )?;
            }
            Ok(())
        }
        "Elu" => {
            count(op, &[1], 1)?;
            let alpha = required(op, "alpha", op.attr_f64("alpha")?)?;
            let text = format!(
                "Elu(input: {}, alpha: {alpha:?}, out: {}",
                q(&ins[0]),
                q(&out)
            );
            cx.step(op, text, Kernel::Elu { alpha }, ins, out)
        }
        "Clamp" => {
            count(op, &[1], 1)?;
            let min = required(op, "min", op.attr_f64("min")?)?;
            let max = required(op, "max", op.attr_f64("max")?)?;
            if min > max {
                return Err(op.attr_error("min", format!("min {min} is above max {max}")));
            }
            let text = format!(
                "Clamp(input: {}, min: {min:?}, max: {max:?}, out: {}",
                q(&ins[0]),
                q(&out)
            );
            cx.step(op, text, Kernel::Clamp { min, max }, ins, out)
        }
        "BiasAdd" => {
            count(op, &[2], 1)?;
            let r = rank(0);
            let fmt = op.attr_str("data_format")?.unwrap_or_else(|| "NXC".into());
            let a = match fmt.as_str() {
                "NXC" => r.saturating_sub(1),
                "NCX" if r >= 2 => 1,
                "NCX" => 0,
                other => {
                    return Err(op.attr_error(
                        "data_format",
                        format!("unknown data format `{other}` (NXC or NCX)"),
                    ));
                }
            };
            let text = format!(
                "BiasAdd(input: {}, bias: {}, axis: {a}, out: {}",
                q(&ins[0]),
                q(&ins[1]),
                q(&out)
            );
            cx.step(op, text, Kernel::BiasAdd { axis: a }, ins, out)
        }
        "StaticTranspose" => {
            count(op, &[1], 1)?;
            let order = required(op, "order", op.attr_i64s("order")?)?;
            let mut perm = Vec::new();
            for a in order {
                perm.push(axis(op, "order", a, rank(0))?);
            }
            let text = format!(
                "Transpose(input: {}, perm: {}, out: {}",
                q(&ins[0]),
                list(&perm),
                q(&out)
            );
            cx.step(op, text, Kernel::Transpose { perm }, ins, out)
        }
        "StaticReshape" => {
            count(op, &[1], 1)?;
            let shape = cx.dims(&out);
            let given = required(op, "shape", op.attr_i64s("shape")?)?;
            let zero = op.attr_bool("special_zero")?.unwrap_or(false);
            let src = &cx.tensor(op.inputs[0]).shape;
            let ok = given.len() == cx.tensor(op.outputs[0]).shape.len()
                && given.iter().enumerate().all(|(i, &d)| {
                    d == -1
                        || (d == 0 && zero && src.get(i) == Some(&shape[i]))
                        || d as u64 == shape[i]
                });
            if !ok {
                return Err(op.attr_error(
                    "shape",
                    format!(
                        "the shape attribute {given:?} does not give the output shape {shape:?}"
                    ),
                ));
            }
            let text = format!(
                "Reshape(input: {}, shape: {}, out: {}",
                q(&ins[0]),
                list(&shape),
                q(&out)
            );
            cx.step(op, text, Kernel::Reshape { shape }, ins, out)
        }
        "Concat" => {
            if op.inputs.is_empty() {
                return Err(op.error("needs at least one input".into()));
            }
            count(op, &[op.inputs.len()], 1)?;
            let a = axis(
                op,
                "axis",
                required(op, "axis", op.attr_i64("axis")?)?,
                rank(0),
            )?;
            let names: Vec<String> = ins.iter().map(|n| q(n)).collect();
            let text = format!(
                "Concat(inputs: [{}], axis: {a}, out: {}",
                names.join(", "),
                q(&out)
            );
            let n = ins.len();
            cx.step(op, text, Kernel::Concat { axis: a, inputs: n }, ins, out)
        }
        "End" => Ok(()),
        "Convolution"
        | "ConvolutionBackwardData"
        | "ConvolutionBackwardWeights"
        | "ConvTranspose"
        | "AvgPool"
        | "MaxPool"
        | "AvgPoolBackward"
        | "MaxPoolBackward"
        | "Interpolate"
        | "Quantize"
        | "Dequantize"
        | "DynamicQuantize"
        | "DynamicDequantize" => Err(op.error(format!(
            "the op kind `{k}` is not supported: mnsim imports {}",
            KINDS.join(", ")
        ))),
        other => Err(op.error(format!(
            "unknown or unsupported op kind `{other}`: mnsim imports {}",
            KINDS.join(", ")
        ))),
    }
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
    })
}
