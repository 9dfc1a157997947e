//! ONNX graph → the import's kernel steps (`import::lower::{Decl, Step}`). Nodes are
//! walked in the file's order (ONNX requires it to be topological); each value is a
//! scenario tensor, a constant evaluated at import ([`Konst`]: shape tensors, masks,
//! scalars), or a broadcast of a tensor not materialised ([`Val::B`], from `Expand`:
//! elementwise consumers read it through numpy broadcasting). The values and the
//! context the node lowerings write into are `ox.rs`; this module walks the graph.

use super::model::{self, Dim, Model};
use super::proto::{GraphProto, NodeProto, ValueInfoProto};
use crate::import::lower::Lowered;
use crate::import::stablehlo::Binds;
use mnsim_arch::DType;
use std::collections::{BTreeMap, BTreeSet};

pub(super) use super::ox::Ox;
pub use super::ox::{Bad, Val};
pub use crate::import::lower::Tens;

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

/// An initializer's values, if it is a constant evaluated at import rather than a
/// weight read from DRAM: integer and boolean tensors (shape tensors, indices, masks)
/// and any tensor of at most 64 elements, when the file holds their values.
fn constant(h: &model::Held) -> Option<&crate::import::stablehlo::fold::Konst> {
    (h.values.as_ref()).filter(|k| !k.dtype.is_float() || k.data.len() <= 64)
}

/// Lowers the model's graph with `binds` giving its named dynamic dimensions.
pub fn lower(m: &Model, binds: &Binds) -> Result<Out, At> {
    let g = m
        .proto
        .graph
        .as_ref()
        .ok_or_else(|| at_graph("the model has no graph"))?;
    let mut ox = Ox::new(m.opset);
    let mut env: BTreeMap<String, Val> = BTreeMap::new();
    let mut bind = Vec::new();
    graph_inputs(g, binds, &mut ox, &mut env, &mut bind)?;
    initializers(g, &mut ox, &mut env)?;
    let declared = declared_shapes(g, &bind)?;
    let kinds = nodes(g, &mut ox, &mut env, &declared)?;
    let outputs = graph_outputs(g, &mut ox, &env)?;
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

/// Declares the graph inputs as scenario inputs into `env`, their named dimensions given
/// by `binds` (and added to `bind`). An input that an initializer also names is that
/// initializer, as older exporters listed them, and is left to [`initializers`].
fn graph_inputs(
    g: &GraphProto,
    binds: &Binds,
    ox: &mut Ox,
    env: &mut BTreeMap<String, Val>,
    bind: &mut Vec<(String, u64)>,
) -> Result<(), At> {
    let inits: BTreeSet<&str> = g
        .initializer
        .iter()
        .filter_map(|t| t.name.as_deref())
        .collect();
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
        let (dims, dim_names) = input_dims(v, i, &dims, binds, bind)?;
        let t = ox.declare_input(&name, dtype, &dims, dim_names);
        env.insert(name, Val::T(t));
    }
    Ok(())
}

/// Puts the initializers into `env`: constants evaluated at import ([`constant`]) as
/// values, the others as weights, scenario inputs read from DRAM.
fn initializers(g: &GraphProto, ox: &mut Ox, env: &mut BTreeMap<String, Val>) -> Result<(), At> {
    for t in &g.initializer {
        let name = t.name.clone().unwrap_or_default();
        let h = model::held(t, true).map_err(|e| at_graph(format!("initializer `{name}`: {e}")))?;
        let v = if let Some(k) = constant(&h) {
            Val::C(k.clone())
        } else {
            let w = ox.declare_input(&name, h.dtype, &h.dims, Vec::new());
            ox.weights.insert(w.name.clone());
            Val::T(w)
        };
        env.insert(name, v);
    }
    Ok(())
}

/// Lowers the nodes in the file's order, each output into `env` once checked against
/// the shape `declared` for it; gives the op types in order of first appearance.
fn nodes(
    g: &GraphProto,
    ox: &mut Ox,
    env: &mut BTreeMap<String, Val>,
    declared: &BTreeMap<String, Declared>,
) -> Result<Vec<String>, At> {
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
        let vals = super::ops::node(ox, n, env).map_err(here)?;
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
    Ok(kinds)
}

/// The scenario tensors the graph outputs name, a broadcast materialised; an output
/// that is a constant, a graph input or another output is an error.
fn graph_outputs(
    g: &GraphProto,
    ox: &mut Ox,
    env: &BTreeMap<String, Val>,
) -> Result<Vec<String>, At> {
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
    Ok(outputs)
}

/// The shapes `value_info` and the graph outputs declare, by value name, with named
/// dimensions resolved through `bind` where bound (unknown otherwise).
fn declared_shapes(
    g: &GraphProto,
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
