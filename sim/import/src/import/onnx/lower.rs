//! ONNX graph → the import's kernel steps (`import::lower::{Decl, Step}`). Nodes are
//! walked in the file's order (ONNX requires it to be topological); each value is a
//! scenario tensor, a constant evaluated at import ([`Konst`]: shape tensors, masks,
//! scalars), or a broadcast of a tensor not materialised ([`Val::B`], from `Expand`:
//! elementwise consumers read it through numpy broadcasting).

use super::model::{self, Dim, Model};
use super::proto::{NodeProto, ValueInfoProto};
use crate::import::lower::{Decl, Lowered, Step};
use crate::import::stablehlo::Binds;
use crate::import::stablehlo::fold::Konst;
use crate::scenario::Init;
use mnsim_arch::DType;
use mnsim_kernels::{Kernel, UnaryOp};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::import::lower::Tens;

/// What an ONNX value is at import.
#[derive(Clone, Debug)]
pub enum Val {
    /// A tensor of the scenario.
    T(Tens),
    /// A constant evaluated at import.
    C(Konst),
    /// `src` broadcast numpy-style (aligned to the trailing axes) to dims `out`.
    B { src: Tens, out: Vec<u64> },
}

impl Val {
    pub fn dims(&self) -> Vec<u64> {
        match self {
            Val::T(t) => t.dims.clone(),
            Val::C(k) => k.dims.clone(),
            Val::B { out, .. } => out.clone(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Val::T(t) => t.dtype,
            Val::C(k) => k.dtype,
            Val::B { src, .. } => src.dtype,
        }
    }
}

/// The lowering context.
pub(super) struct Ox {
    pub(super) decls: Vec<Decl>,
    pub(super) steps: Vec<Step>,
    pub(super) inputs: Vec<String>,
    names: BTreeSet<String>,
    /// Constants already emitted as DRAM tensors.
    emitted: Vec<(Konst, String)>,
    /// Reshapes already made: (tensor, shape) → the reshaped tensor.
    reshaped: BTreeMap<(String, Vec<u64>), String>,
    /// Weights (initializers read from DRAM) by scenario name: a transpose of one is
    /// the same bytes read in another order, not a kernel.
    pub(super) weights: BTreeSet<String>,
    /// The comment for the next step: the node it starts.
    pub(super) origin: Option<String>,
    /// The model's default-domain opset.
    pub(super) opset: i64,
    /// The next `Random` seed.
    seed: u64,
}

fn clean(s: &str) -> String {
    let c: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let c = c.trim_matches('_').to_string();
    if c.starts_with(|c: char| c.is_ascii_alphabetic()) {
        c
    } else {
        format!("v{c}")
    }
}

impl Ox {
    /// A fresh tensor name from `base`.
    pub(super) fn fresh(&mut self, base: &str) -> String {
        let b = clean(base);
        let mut n = b.clone();
        let mut k = 1;
        while self.names.contains(&n) {
            k += 1;
            n = format!("{b}_{k}");
        }
        self.names.insert(n.clone());
        n
    }

    fn decl(&mut self, name: &str, dtype: DType, dims: &[u64]) -> &mut Decl {
        let d = if dims.is_empty() {
            vec![1]
        } else {
            dims.to_vec()
        };
        self.decls.push(Decl {
            name: name.to_string(),
            dtype,
            minor_to_major: (0..d.len()).rev().collect(),
            dims: d,
            seed: None,
            graph_id: None,
            constant: false,
            init: None,
            dim_names: Vec::new(),
        });
        let i = self.decls.len() - 1;
        &mut self.decls[i]
    }

    /// Declares a computed tensor.
    pub(super) fn declare(&mut self, base: &str, dtype: DType, dims: &[u64]) -> Tens {
        let name = self.fresh(base);
        self.decl(&name, dtype, dims);
        Tens {
            name,
            dtype,
            dims: dims.to_vec(),
        }
    }

    /// Declares a DRAM tensor with seeded random values (a graph input or a weight).
    pub(super) fn declare_input(
        &mut self,
        base: &str,
        dtype: DType,
        dims: &[u64],
        dim_names: Vec<Option<String>>,
    ) -> Tens {
        let name = self.fresh(base);
        self.seed += 1;
        let seed = self.seed;
        let d = self.decl(&name, dtype, dims);
        d.seed = Some(seed);
        if !dims.is_empty() {
            d.dim_names = dim_names;
        }
        self.inputs.push(name.clone());
        Tens {
            name,
            dtype,
            dims: dims.to_vec(),
        }
    }

    /// A weight read transposed: the same DRAM bytes declared in the transposed shape,
    /// its minor-to-major order permuted so that each element stays where it is.
    pub(super) fn transposed_weight(&mut self, w: &Tens, perm: &[usize]) -> Tens {
        let dims: Vec<u64> = perm.iter().map(|&p| w.dims[p]).collect();
        let m2m = self
            .decls
            .iter()
            .find(|d| d.name == w.name)
            .map(|d| d.minor_to_major.clone())
            .unwrap_or_else(|| (0..dims.len()).rev().collect());
        let mut inv = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i;
        }
        let t = self.declare_input(&format!("{}_t", w.name), w.dtype, &dims, Vec::new());
        if let Some(d) = self.decls.iter_mut().find(|d| d.name == t.name) {
            d.minor_to_major = m2m.iter().map(|&a| inv[a]).collect();
        }
        self.weights.insert(t.name.clone());
        t
    }

    /// Appends a kernel step after checking the shape the kernel gives.
    pub(super) fn step(&mut self, kernel: Kernel, inputs: &[&Tens], out: &Tens) -> Result<(), Bad> {
        self.push(kernel, false, inputs, out)
    }

    /// Appends a `Cast` of `input` into `out` (of another dtype).
    pub(super) fn cast(&mut self, input: &Tens, out: &Tens) -> Result<(), Bad> {
        self.push(Kernel::Unary(UnaryOp::Copy), true, &[input], out)
    }

    fn push(
        &mut self,
        kernel: Kernel,
        cast: bool,
        inputs: &[&Tens],
        out: &Tens,
    ) -> Result<(), Bad> {
        let shapes: Vec<Vec<u64>> = inputs.iter().map(|t| t.declared_dims()).collect();
        let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        let want = mnsim_kernels::output_shape(&kernel, &refs).map_err(|e| e.message)?;
        let want = if want.is_empty() { vec![1] } else { want };
        let have = out.declared_dims();
        if want != have {
            return Err(format!(
                "the result has shape {have:?}, but the kernel ({kernel}) gives {want:?}"
            )
            .into());
        }
        let origin = self.origin.take();
        self.steps.push(Step {
            action: crate::import::lower::Action::Kernel(kernel),
            cast,
            inputs: inputs.iter().map(|t| t.name.clone()).collect(),
            out: out.name.clone(),
            origin,
            place: Default::default(),
        });
        Ok(())
    }

    /// The rows of `table` (a DRAM tensor: a graph input or an initializer) at the
    /// indices `indices` computes on the chip: an embedding lookup, the `Gather` op
    /// (`scenario::Op::Gather`). Its result is the indices' shape, then a row's.
    pub(super) fn gather_rows(
        &mut self,
        base: &str,
        table: &Tens,
        indices: &Tens,
    ) -> Result<Tens, Bad> {
        let in_dram = (self.decls.iter())
            .any(|d| d.name == table.name && (d.seed.is_some() || d.constant || d.init.is_some()));
        if !in_dram {
            return Err(format!(
                "Gather at run-time indices reads rows of a tensor in DRAM (a graph input or \
                 an initializer); `{}` is computed on the chip",
                table.name
            )
            .into());
        }
        if !indices.dtype.is_int() {
            return Err(format!("Gather indices must be integers, not {}", indices.dtype).into());
        }
        let dims: Vec<u64> = (indices.dims.iter())
            .chain(table.dims.iter().skip(1))
            .copied()
            .collect();
        let out = self.declare(base, table.dtype, &dims);
        let origin = self.origin.take();
        self.steps.push(Step {
            action: crate::import::lower::Action::Gather {
                table: table.name.clone(),
            },
            cast: false,
            inputs: vec![indices.name.clone()],
            out: out.name.clone(),
            origin,
            place: Default::default(),
        });
        Ok(out)
    }

    /// A kernel over `inputs` whose result shape the kernel gives: the result tensor.
    pub(super) fn apply(
        &mut self,
        base: &str,
        kernel: Kernel,
        inputs: &[&Tens],
        dtype: DType,
    ) -> Result<Tens, Bad> {
        let shapes: Vec<Vec<u64>> = inputs.iter().map(|t| t.declared_dims()).collect();
        let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        let dims = mnsim_kernels::output_shape(&kernel, &refs).map_err(|e| e.message)?;
        let o = self.declare(base, dtype, &dims);
        self.step(kernel, inputs, &o)?;
        Ok(o)
    }

    /// A constant as a DRAM tensor (loaded before its first use), shared by equal
    /// constants.
    pub(super) fn emit_const(&mut self, k: &Konst) -> Result<Tens, Bad> {
        if let Some((_, n)) = self.emitted.iter().find(|(e, _)| e == k) {
            return Ok(Tens {
                name: n.clone(),
                dtype: k.dtype,
                dims: k.dims.clone(),
            });
        }
        let init: Init = crate::import::stablehlo::emit::init_of(k)?;
        let base = format!("c{}", self.emitted.len());
        let t = self.declare(&base, k.dtype, &k.dims);
        if let Some(d) = self.decls.iter_mut().find(|d| d.name == t.name) {
            d.init = Some(init);
            d.constant = true;
        }
        self.inputs.push(t.name.clone());
        self.emitted.push((k.clone(), t.name.clone()));
        Ok(t)
    }

    /// A `Reshape` step (shared when the same reshape is asked again).
    pub(super) fn reshaped(&mut self, x: &Tens, dims: &[u64]) -> Result<Tens, Bad> {
        if x.dims == dims {
            return Ok(x.clone());
        }
        if x.declared_dims() == dims {
            return Ok(Tens {
                dims: dims.to_vec(),
                ..x.clone()
            });
        }
        let key = (x.name.clone(), dims.to_vec());
        if let Some(n) = self.reshaped.get(&key) {
            return Ok(Tens {
                name: n.clone(),
                dtype: x.dtype,
                dims: dims.to_vec(),
            });
        }
        let o = self.declare(&format!("{}_r", x.name), x.dtype, dims);
        let shape = o.declared_dims();
        self.step(Kernel::Reshape { shape }, &[x], &o)?;
        self.reshaped.insert(key, o.name.clone());
        Ok(o)
    }

    /// A value as a tensor for a kernel that does not broadcast: a constant as a DRAM
    /// tensor, a broadcast that adds no elements as its source reshaped.
    pub(super) fn tensor_of(&mut self, v: &Val, what: &str) -> Result<Tens, Bad> {
        match v {
            Val::T(t) => Ok(t.clone()),
            Val::C(k) => self.emit_const(k),
            Val::B { src, out }
                if src.dims.iter().product::<u64>() == out.iter().product::<u64>() =>
            {
                self.reshaped(src, out)
            }
            Val::B { .. } => Err(format!(
                "{what} is an `Expand` of a computed tensor that only elementwise ops may read (mnsim has no broadcast kernel; elementwise ops read broadcasts in place)"
            ).into()),
        }
    }
}

/// Why a node (or the graph) cannot be imported: the message, which the caller puts
/// after the node's label.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Bad(pub String);

impl From<String> for Bad {
    fn from(s: String) -> Bad {
        Bad(s)
    }
}

impl From<&str> for Bad {
    fn from(s: &str) -> Bad {
        Bad(s.to_string())
    }
}

/// A value's declared dtype and dims (`None` where a dimension is unknown).
type Declared = (DType, Vec<Option<u64>>);

/// What the lowering gives beyond the steps.
pub struct Out {
    pub low: Lowered,
    /// Op types in order of first appearance, and the node count.
    pub kinds: Vec<String>,
    pub ops: usize,
    pub opset: i64,
    pub producer: String,
}

/// Where an error is: the node (index, name, op type) or the graph.
pub struct At {
    pub node: Option<String>,
    pub message: String,
}

fn at_graph(message: impl Into<String>) -> At {
    At {
        node: None,
        message: message.into(),
    }
}

/// A node's label in messages: `node 12 "/attn/MatMul" (MatMul)`.
pub fn label(i: usize, n: &NodeProto) -> String {
    let op = n.op_type.as_deref().unwrap_or("?");
    match n.name.as_deref().filter(|s| !s.is_empty()) {
        Some(name) => format!("node {i} `{name}` ({op})"),
        None => format!("node {i} ({op})"),
    }
}

/// The dims of a graph input, each named one given by `binds` (and added to `bind`,
/// the scenario's bindings, once).
fn input_dims(
    v: &ValueInfoProto,
    i: usize,
    dims: &[Dim],
    binds: &Binds,
    bind: &mut Vec<(String, u64)>,
) -> Result<(Vec<u64>, Vec<Option<String>>), At> {
    let name = v.name.as_deref().unwrap_or("");
    let mut out = Vec::new();
    let mut names = Vec::new();
    for (d, x) in dims.iter().enumerate() {
        let sym = match x {
            Dim::Size(s) => {
                out.push(*s);
                names.push(None);
                continue;
            }
            Dim::Named(n) => n.clone(),
            Dim::Unknown => format!("arg{i}_d{d}"),
        };
        let v = *binds.get(&sym).ok_or_else(|| {
            at_graph(format!(
                "the dynamic dimension `{sym}` (dimension {d} of graph input `{name}`) is not bound: give its size with `--bind {sym}=8`"
            ))
        })?;
        if v == 0 {
            return Err(at_graph(format!(
                "`--bind {sym}=0`: a dimension needs at least one element"
            )));
        }
        if !bind.iter().any(|(k, _)| *k == sym) {
            bind.push((sym.clone(), v));
        }
        out.push(v);
        names.push(Some(sym));
    }
    Ok((out, names))
}

/// Whether an initializer is a constant evaluated at import rather than a weight read
/// from DRAM: integer and boolean tensors (shape tensors, indices, masks) and any
/// tensor of at most 64 elements, when the file holds their values.
fn is_constant(h: &model::Held) -> bool {
    h.values
        .as_ref()
        .is_some_and(|k| !k.dtype.is_float() || k.data.len() <= 64)
}

/// Lowers the model's graph with `binds` giving its named dynamic dimensions.
pub fn lower(m: &Model, binds: &Binds) -> Result<Out, At> {
    let g = m
        .proto
        .graph
        .as_ref()
        .ok_or_else(|| at_graph("the model has no graph"))?;
    let mut ox = Ox {
        decls: Vec::new(),
        steps: Vec::new(),
        inputs: Vec::new(),
        names: BTreeSet::new(),
        emitted: Vec::new(),
        reshaped: BTreeMap::new(),
        weights: BTreeSet::new(),
        origin: None,
        opset: m.opset,
        seed: 0,
    };
    let mut env: BTreeMap<String, Val> = BTreeMap::new();
    let mut bind = Vec::new();
    let inits: BTreeSet<&str> = g
        .initializer
        .iter()
        .filter_map(|t| t.name.as_deref())
        .collect();
    // Graph inputs (an input that an initializer also names is that initializer, as
    // older exporters listed them).
    for (i, v) in g.input.iter().enumerate() {
        let name = v.name.clone().unwrap_or_default();
        if inits.contains(name.as_str()) {
            continue;
        }
        let (dtype, dims) = match model::declared(v)
            .map_err(|e| at_graph(format!("graph input `{name}`: {e}")))?
        {
            Some((d, Some(dims))) => (d, dims),
            _ => {
                return Err(at_graph(format!(
                    "graph input `{name}` declares no tensor shape; mnsim needs the rank and sizes of every input"
                )));
            }
        };
        let (dims, dim_names) = input_dims(v, i, &dims, binds, &mut bind)?;
        let t = ox.declare_input(&name, dtype, &dims, dim_names);
        env.insert(name, Val::T(t));
    }
    for t in &g.initializer {
        let name = t.name.clone().unwrap_or_default();
        let h = model::held(t, true).map_err(|e| at_graph(format!("initializer `{name}`: {e}")))?;
        let v = if is_constant(&h) {
            Val::C(h.values.expect("checked by is_constant"))
        } else {
            let w = ox.declare_input(&name, h.dtype, &h.dims, Vec::new());
            ox.weights.insert(w.name.clone());
            Val::T(w)
        };
        env.insert(name, v);
    }
    let declared = declared_shapes(g, &bind)?;
    let mut kinds: Vec<String> = Vec::new();
    for (i, n) in g.node.iter().enumerate() {
        let op = n.op_type.clone().unwrap_or_default();
        if !kinds.contains(&op) {
            kinds.push(op.clone());
        }
        let here = |e: Bad| At {
            node: Some(label(i, n)),
            message: e.0,
        };
        ox.origin = Some(format!(
            "{}: {op}",
            n.name
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or("node")
        ));
        let vals = super::ops::node(&mut ox, n, &env).map_err(here)?;
        ox.origin = None;
        // Outputs mnsim does not compute (a Dropout's mask) are left undefined: a node
        // that reads one fails naming it.
        let outs: Vec<&String> = n.output.iter().collect();
        for (o, v) in outs.iter().zip(vals) {
            if o.is_empty() {
                continue;
            }
            if let Some(want) = declared.get(o.as_str()) {
                check_declared(o, want, &v).map_err(here)?;
            }
            env.insert((*o).clone(), v);
        }
    }
    let mut outputs = Vec::new();
    for o in &g.output {
        let name = o.name.clone().unwrap_or_default();
        let v = env
            .get(&name)
            .ok_or_else(|| at_graph(format!("graph output `{name}` is computed by no node")))?
            .clone();
        let t = match &v {
            Val::T(t) => t.clone(),
            Val::B { .. } => ox
                .tensor_of(&v, &format!("graph output `{name}`"))
                .map_err(|e| at_graph(e.0))?,
            Val::C(_) => {
                return Err(at_graph(format!(
                    "graph output `{name}` is a constant that nothing computes; mnsim stores computed tensors"
                )));
            }
        };
        if outputs.contains(&t.name) || ox.inputs.contains(&t.name) {
            return Err(at_graph(format!(
                "graph output `{name}` is `{}`, a graph input or another output: mnsim stores each computed tensor once",
                t.name
            )));
        }
        outputs.push(t.name);
    }
    Ok(Out {
        low: Lowered {
            decls: ox.decls,
            steps: ox.steps,
            inputs: ox.inputs,
            outputs,
            bind,
        },
        kinds,
        ops: g.node.len(),
        opset: m.opset,
        producer: format!(
            "{} {}",
            m.proto
                .producer_name
                .as_deref()
                .unwrap_or("an unnamed producer"),
            m.proto.producer_version.as_deref().unwrap_or("")
        )
        .trim()
        .to_string(),
    })
}

/// The shapes `value_info` and the graph outputs declare, by value name, with named
/// dimensions resolved through `bind` where bound (unknown otherwise).
fn declared_shapes(
    g: &super::proto::GraphProto,
    bind: &[(String, u64)],
) -> Result<BTreeMap<String, Declared>, At> {
    let mut out = BTreeMap::new();
    for v in g.value_info.iter().chain(&g.output) {
        let name = v.name.clone().unwrap_or_default();
        let Some((dt, Some(dims))) =
            model::declared(v).map_err(|e| at_graph(format!("`{name}`: {e}")))?
        else {
            continue;
        };
        let dims = dims
            .iter()
            .map(|d| match d {
                Dim::Size(s) => Some(*s),
                Dim::Named(n) => bind.iter().find(|(k, _)| k == n).map(|(_, v)| *v),
                Dim::Unknown => None,
            })
            .collect();
        out.insert(name, (dt, dims));
    }
    Ok(out)
}

/// A value against the dtype and shape the file declares for it.
fn check_declared(name: &str, (dt, dims): &Declared, v: &Val) -> Result<(), Bad> {
    let have = v.dims();
    let ok = have.len() == dims.len()
        && dims
            .iter()
            .zip(&have)
            .all(|(d, h)| d.is_none_or(|d| d == *h));
    if !ok || v.dtype() != *dt {
        let show: Vec<String> = dims
            .iter()
            .map(|d| d.map_or("?".into(), |d| d.to_string()))
            .collect();
        return Err(format!(
            "output `{name}` is {}{have:?} here, but the file declares {dt}[{}]",
            v.dtype(),
            show.join(", ")
        )
        .into());
    }
    Ok(())
}
