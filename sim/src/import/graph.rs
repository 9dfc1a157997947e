//! Reading a oneDNN Graph JSON document into ops and logical tensors, checking
//! everything the import relies on and pointing at the place when something is off.

use super::json::{Kind, Value};
use mnsim_arch::DType;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// An import error: the message and the span of the JSON value it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct At {
    pub span: Option<Range<usize>>,
    pub message: String,
}

pub fn at(v: &Value, message: String) -> At {
    At {
        span: Some(v.span.clone()),
        message,
    }
}

/// A logical tensor of the graph.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub id: u64,
    pub dtype: DType,
    /// The file's shape (rank 0 for a scalar).
    pub shape: Vec<u64>,
    /// The strides in elements, when the tensor is `strided` and gives them.
    pub stride: Option<Vec<i64>>,
    /// `property_type: constant`.
    pub constant: bool,
    /// The file gives its dimensions as −2^63 ("to be inferred"): the shape is filled in
    /// from the producing op (`infer.rs`) before anything reads it.
    pub unknown_shape: bool,
    /// Where the tensor is first described (for messages).
    pub path: String,
    pub span: Range<usize>,
}

/// One op of the graph.
#[derive(Clone, Debug)]
pub struct GOp {
    /// Index in the file's `graph` array.
    pub index: usize,
    pub id: u64,
    pub name: String,
    pub kind: String,
    pub attrs: BTreeMap<String, Value>,
    pub inputs: Vec<u64>,
    pub outputs: Vec<u64>,
    pub span: Range<usize>,
    pub kind_span: Range<usize>,
}

impl GOp {
    /// `graph[3] (op 26509520640, Select)`: how messages name the op.
    pub fn label(&self) -> String {
        format!(
            "graph[{}] (op id {}, kind {})",
            self.index, self.id, self.kind
        )
    }

    fn attr_value(&self, name: &str) -> Option<&Value> {
        self.attrs.get(name)
    }

    fn bad_attr(&self, name: &str, v: &Value, want: &str) -> At {
        at(
            v,
            format!(
                "{}: attribute `{name}` must be {want}, found {}",
                self.label(),
                v.what()
            ),
        )
    }

    pub fn attr_i64(&self, name: &str) -> Result<Option<i64>, At> {
        self.attr_value(name)
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| self.bad_attr(name, v, "an integer"))
            })
            .transpose()
    }

    pub fn attr_f64(&self, name: &str) -> Result<Option<f64>, At> {
        self.attr_value(name)
            .map(|v| v.as_f64().ok_or_else(|| self.bad_attr(name, v, "a number")))
            .transpose()
    }

    pub fn attr_bool(&self, name: &str) -> Result<Option<bool>, At> {
        self.attr_value(name)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| self.bad_attr(name, v, "a boolean (true, false, 0 or 1)"))
            })
            .transpose()
    }

    pub fn attr_str(&self, name: &str) -> Result<Option<String>, At> {
        self.attr_value(name)
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.bad_attr(name, v, "a string"))
            })
            .transpose()
    }

    pub fn attr_i64s(&self, name: &str) -> Result<Option<Vec<i64>>, At> {
        self.attr_value(name)
            .map(|v| {
                v.as_array()
                    .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<i64>>>())
                    .ok_or_else(|| self.bad_attr(name, v, "a list of integers"))
            })
            .transpose()
    }

    /// An error about the op as a whole (pointing at its `kind`).
    pub fn error(&self, message: String) -> At {
        At {
            span: Some(self.kind_span.clone()),
            message: format!("{}: {message}", self.label()),
        }
    }

    /// An error about one of its attributes (pointing at it when present).
    pub fn attr_error(&self, name: &str, message: String) -> At {
        At {
            span: Some(
                self.attrs
                    .get(name)
                    .map_or(self.kind_span.clone(), |v| v.span.clone()),
            ),
            message: format!("{}: {message}", self.label()),
        }
    }
}

/// The graph: ops in an order where every op comes after the producers of its inputs.
#[derive(Clone, Debug)]
pub struct Graph {
    pub version: Option<String>,
    pub ops: Vec<GOp>,
    pub tensors: BTreeMap<u64, Tensor>,
    /// Tensors no op produces, in order of first use.
    pub inputs: Vec<u64>,
    /// Tensors the graph hands back: `output_ports`, else the produced tensors no op
    /// consumes (and the inputs of `End` ops).
    pub outputs: Vec<u64>,
}

fn field<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a Value, At> {
    v.get(key)
        .ok_or_else(|| at(v, format!("{path}: missing member `{key}`")))
}

fn uint(v: &Value, path: &str, what: &str) -> Result<u64, At> {
    v.as_i64()
        .and_then(|x| u64::try_from(x).ok())
        .ok_or_else(|| {
            at(
                v,
                format!(
                    "{path}: {what} must be a non-negative integer, found {}",
                    v.what()
                ),
            )
        })
}

/// The dtype of a oneDNN data type name.
fn dtype(name: &str) -> Result<DType, String> {
    Ok(match name {
        "f32" => DType::F32,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "f64" => DType::F64,
        "boolean" => DType::Pred,
        "s32" => DType::S32,
        "s64" => DType::S64,
        "s8" => DType::S8,
        "u8" => DType::U8,
        "s4" => DType::S4,
        "u4" => DType::U4,
        "f8_e4m3" => DType::F8E4M3,
        "f8_e5m2" => DType::F8E5M2,
        other => {
            return Err(format!(
                "unknown data type `{other}` (f32, f16, bf16, f64, f8_e4m3, f8_e5m2, s64, s32, s8, u8, s4, u4 \
                 and boolean are supported)"
            ));
        }
    })
}

fn tensor(v: &Value, path: &str) -> Result<Tensor, At> {
    if !matches!(v.kind, Kind::Object(_)) {
        return Err(at(
            v,
            format!(
                "{path}: a logical tensor must be an object, found {}",
                v.what()
            ),
        ));
    }
    let id = uint(field(v, "id", path)?, path, "`id`")?;
    let dt = field(v, "dtype", path)?;
    let dtype = dt
        .as_str()
        .ok_or_else(|| at(dt, format!("{path}.dtype: must be a string")))
        .and_then(|s| {
            dtype(s).map_err(|m| at(dt, format!("{path}.dtype (tensor id {id}): {m}")))
        })?;
    let sh = field(v, "shape", path)?;
    let items = sh
        .as_array()
        .ok_or_else(|| at(sh, format!("{path}.shape: must be a list of integers")))?;
    let mut shape = Vec::with_capacity(items.len());
    let mut unknown_shape = false;
    for (k, d) in items.iter().enumerate() {
        match d.as_i64() {
            Some(x) if x >= 0 => shape.push(x as u64),
            // oneDNN's DNNL_GRAPH_UNKNOWN_DIM: the shape is inferred from the producer.
            Some(i64::MIN) => unknown_shape = true,
            Some(-1) => {
                return Err(at(
                    d,
                    format!(
                        "{path}.shape[{k}] (tensor id {id}): a dynamic dimension (-1) cannot be imported; give the size"
                    ),
                ));
            }
            _ => {
                return Err(at(
                    d,
                    format!(
                        "{path}.shape[{k}] (tensor id {id}): a dimension must be a non-negative integer"
                    ),
                ));
            }
        }
    }
    let layout_type = match v.get("layout_type") {
        Some(l) => l
            .as_str()
            .ok_or_else(|| at(l, format!("{path}.layout_type: must be a string")))?
            .to_string(),
        None => "strided".into(),
    };
    if unknown_shape {
        shape.clear();
    }
    // Strides written as −2^63 are unknown: dense row-major, as for `undef`.
    let unknown_strides = v
        .get("stride")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x.as_i64() == Some(i64::MIN)));
    let stride = match (layout_type.as_str(), v.get("stride")) {
        ("strided", Some(_)) if unknown_shape || unknown_strides => None,
        ("strided", Some(s)) => {
            let items = s
                .as_array()
                .ok_or_else(|| at(s, format!("{path}.stride: must be a list of integers")))?;
            let st: Option<Vec<i64>> = items.iter().map(Value::as_i64).collect();
            let st =
                st.ok_or_else(|| at(s, format!("{path}.stride: must be a list of integers")))?;
            if st.len() != shape.len() {
                return Err(at(
                    s,
                    format!(
                        "{path}.stride (tensor id {id}): {} strides for a shape of rank {}",
                        st.len(),
                        shape.len()
                    ),
                ));
            }
            Some(st)
        }
        // `undef` (an unspecified layout, its strides −2^63) is taken as dense row-major,
        // like `any` (docs/import.md).
        ("strided" | "any" | "opaque" | "undef", _) => None,
        (other, _) => {
            return Err(at(
                v.get("layout_type").unwrap_or(v),
                format!(
                    "{path}.layout_type (tensor id {id}): unknown layout type `{other}` (strided, any, opaque or undef)"
                ),
            ));
        }
    };
    let constant = v.get("property_type").and_then(Value::as_str) == Some("constant");
    Ok(Tensor {
        id,
        dtype,
        shape,
        stride,
        constant,
        unknown_shape,
        path: path.to_string(),
        span: v.span.clone(),
    })
}

/// Reads the document.
pub fn read(doc: &Value) -> Result<Graph, At> {
    if !matches!(doc.kind, Kind::Object(_)) {
        return Err(at(
            doc,
            format!(
                "the document must be an object with a `graph` list, found {}",
                doc.what()
            ),
        ));
    }
    let g = field(doc, "graph", "the document")?;
    let list = g.as_array().ok_or_else(|| {
        at(
            g,
            format!("graph: must be a list of ops, found {}", g.what()),
        )
    })?;
    if list.is_empty() {
        return Err(at(g, "graph: the graph has no ops".into()));
    }
    let mut tensors: BTreeMap<u64, Tensor> = BTreeMap::new();
    let mut ops = Vec::with_capacity(list.len());
    let mut ids = BTreeSet::new();
    for (i, o) in list.iter().enumerate() {
        let path = format!("graph[{i}]");
        if !matches!(o.kind, Kind::Object(_)) {
            return Err(at(
                o,
                format!("{path}: an op must be an object, found {}", o.what()),
            ));
        }
        let id = uint(field(o, "id", &path)?, &path, "`id`")?;
        if !ids.insert(id) {
            return Err(at(
                field(o, "id", &path)?,
                format!("{path}: op id {id} appears twice"),
            ));
        }
        let kv = field(o, "kind", &path)?;
        let kind = kv
            .as_str()
            .ok_or_else(|| at(kv, format!("{path}.kind: must be a string")))?
            .to_string();
        let name = o
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut attrs = BTreeMap::new();
        if let Some(a) = o.get("attrs") {
            let Kind::Object(members) = &a.kind else {
                return Err(at(a, format!("{path}.attrs: must be an object")));
            };
            for (k, v) in members {
                // `{"type": ..., "value": ...}`; a bare value is accepted too.
                let value = v.get("value").unwrap_or(v);
                attrs.insert(k.clone(), value.clone());
            }
        }
        let mut lists = [Vec::new(), Vec::new()];
        for (slot, key) in lists.iter_mut().zip(["inputs", "outputs"]) {
            let lv = field(o, key, &path)?;
            let items = lv.as_array().ok_or_else(|| {
                at(
                    lv,
                    format!("{path}.{key}: must be a list of logical tensors"),
                )
            })?;
            for (k, t) in items.iter().enumerate() {
                let tp = format!("{path}.{key}[{k}]");
                let t = tensor(t, &tp)?;
                if let Some(prev) = tensors.get(&t.id) {
                    let shapes_differ =
                        !prev.unknown_shape && !t.unknown_shape && prev.shape != t.shape;
                    if shapes_differ || prev.dtype != t.dtype {
                        return Err(At {
                            span: Some(t.span.clone()),
                            message: format!(
                                "{tp}: tensor id {} is {} {:?} here but {} {:?} at {}",
                                t.id, t.dtype, t.shape, prev.dtype, prev.shape, prev.path
                            ),
                        });
                    }
                    if prev.unknown_shape && !t.unknown_shape {
                        tensors.insert(t.id, t.clone());
                    }
                } else {
                    tensors.insert(t.id, t.clone());
                }
                slot.push(t.id);
            }
        }
        let [inputs, outputs] = lists;
        ops.push(GOp {
            index: i,
            id,
            name,
            kind,
            attrs,
            inputs,
            outputs,
            span: o.span.clone(),
            kind_span: kv.span.clone(),
        });
    }
    // Producers: at most one per tensor.
    let mut producer: BTreeMap<u64, usize> = BTreeMap::new();
    for (k, op) in ops.iter().enumerate() {
        for &t in &op.outputs {
            if let Some(&p) = producer.get(&t) {
                return Err(op.error(format!(
                    "tensor id {t} is also an output of {}; a tensor has one producer",
                    ops[p].label()
                )));
            }
            producer.insert(t, k);
        }
    }
    // Topological order, keeping file order where it is free (Kahn's algorithm).
    let n = ops.len();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut available: BTreeSet<u64> = tensors
        .keys()
        .filter(|t| !producer.contains_key(t))
        .copied()
        .collect();
    while order.len() < n {
        let next =
            (0..n).find(|&k| !placed[k] && ops[k].inputs.iter().all(|t| available.contains(t)));
        let Some(k) = next else {
            let stuck = (0..n).find(|&k| !placed[k]).unwrap_or(0);
            return Err(ops[stuck].error(
                "the graph has a cycle: this op (directly or not) consumes its own output".into(),
            ));
        };
        placed[k] = true;
        available.extend(ops[k].outputs.iter().copied());
        order.push(k);
    }
    let ops: Vec<GOp> = order.into_iter().map(|k| ops[k].clone()).collect();
    super::infer::shapes(&ops, &mut tensors)?;
    let mut inputs = Vec::new();
    for op in &ops {
        for &t in &op.inputs {
            if !producer.contains_key(&t) && !inputs.contains(&t) {
                inputs.push(t);
            }
        }
    }
    let consumed: BTreeSet<u64> = ops
        .iter()
        .filter(|o| o.kind != "End")
        .flat_map(|o| o.inputs.iter().copied())
        .collect();
    let mut outputs: Vec<u64> = Vec::new();
    if let Some(ports) = doc.get("output_ports") {
        let items = ports
            .as_array()
            .ok_or_else(|| at(ports, "output_ports: must be a list of tensor ids".into()))?;
        for (k, p) in items.iter().enumerate() {
            let t = uint(p, &format!("output_ports[{k}]"), "a tensor id")?;
            if !tensors.contains_key(&t) {
                return Err(at(
                    p,
                    format!("output_ports[{k}]: no op uses or produces tensor id {t}"),
                ));
            }
            if !outputs.contains(&t) {
                outputs.push(t);
            }
        }
    } else {
        for op in &ops {
            let outs: Vec<u64> = if op.kind == "End" {
                op.inputs.clone()
            } else {
                op.outputs
                    .iter()
                    .filter(|t| !consumed.contains(t))
                    .copied()
                    .collect()
            };
            for t in outs {
                if !outputs.contains(&t) {
                    outputs.push(t);
                }
            }
        }
    }
    if let Some(ports) = doc.get("input_ports") {
        let items = ports
            .as_array()
            .ok_or_else(|| at(ports, "input_ports: must be a list of tensor ids".into()))?;
        for (k, p) in items.iter().enumerate() {
            let t = uint(p, &format!("input_ports[{k}]"), "a tensor id")?;
            if producer.contains_key(&t) {
                return Err(at(
                    p,
                    format!(
                        "input_ports[{k}]: tensor id {t} is produced by an op, so it is not a graph input"
                    ),
                ));
            }
        }
    }
    Ok(Graph {
        version: doc
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_string),
        ops,
        tensors,
        inputs,
        outputs,
    })
}
