//! Reading a oneDNN Graph JSON document into ops and logical tensors, checking
//! everything the import relies on and pointing at the place when something is off.

use super::connections;
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

/// An id (of a tensor or an op): oneDNN's ids are `size_t`, so any integer from 0 to
/// 2^64 - 1.
pub(super) fn uint(v: &Value, path: &str, what: &str) -> Result<u64, At> {
    v.as_u64().ok_or_else(|| {
        let found = match &v.kind {
            Kind::Number(t) => t.clone(),
            Kind::Null | Kind::Bool(_) | Kind::Str(_) | Kind::Array(_) | Kind::Object(_) => {
                v.what().to_string()
            }
        };
        at(
            v,
            format!(
                "{path}: {what} must be an integer from 0 to 2^64 - 1 ({}), found {found}",
                u64::MAX
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
    let list = op_list(doc)?;
    let mut tensors: BTreeMap<u64, Tensor> = BTreeMap::new();
    let mut ops = Vec::with_capacity(list.len());
    let mut ids = BTreeSet::new();
    for (i, o) in list.iter().enumerate() {
        ops.push(read_op(i, o, &mut ids, &mut tensors)?);
    }
    let producer = connections::producers(&ops)?;
    let ops = connections::topological_order(&ops, &tensors, &producer)?;
    super::infer::shapes(&ops, &mut tensors)?;
    let inputs = connections::graph_inputs(&ops, &producer);
    let outputs = connections::graph_outputs(doc, &ops, &tensors)?;
    connections::check_input_ports(doc, &producer)?;
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

/// The document's `graph` list of ops, checked to be a non-empty list in an object.
fn op_list(doc: &Value) -> Result<&[Value], At> {
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
    Ok(list)
}

/// The op `graph[i]`, its id checked against `ids` and its tensors recorded in `tensors`.
fn read_op(
    i: usize,
    o: &Value,
    ids: &mut BTreeSet<u64>,
    tensors: &mut BTreeMap<u64, Tensor>,
) -> Result<GOp, At> {
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
    let attrs = op_attrs(o, &path)?;
    let inputs = op_tensors(o, &path, "inputs", tensors)?;
    let outputs = op_tensors(o, &path, "outputs", tensors)?;
    Ok(GOp {
        index: i,
        id,
        name,
        kind,
        attrs,
        inputs,
        outputs,
        span: o.span.clone(),
        kind_span: kv.span.clone(),
    })
}

/// An op's `attrs` by name, each the value of its `{"type": ..., "value": ...}` (or bare).
fn op_attrs(o: &Value, path: &str) -> Result<BTreeMap<String, Value>, At> {
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
    Ok(attrs)
}

/// The ids of an op's `inputs` or `outputs` (`key`), each tensor recorded in `tensors`.
fn op_tensors(
    o: &Value,
    path: &str,
    key: &str,
    tensors: &mut BTreeMap<u64, Tensor>,
) -> Result<Vec<u64>, At> {
    let lv = field(o, key, path)?;
    let items = lv.as_array().ok_or_else(|| {
        at(
            lv,
            format!("{path}.{key}: must be a list of logical tensors"),
        )
    })?;
    let mut ids = Vec::new();
    for (k, t) in items.iter().enumerate() {
        let tp = format!("{path}.{key}[{k}]");
        let t = tensor(t, &tp)?;
        let id = t.id;
        record_tensor(tensors, t, &tp)?;
        ids.push(id);
    }
    Ok(ids)
}

/// Records the tensor described at `tp`, which must agree with any earlier description
/// of its id (a known shape replaces one to be inferred).
fn record_tensor(tensors: &mut BTreeMap<u64, Tensor>, t: Tensor, tp: &str) -> Result<(), At> {
    if let Some(prev) = tensors.get(&t.id) {
        let shapes_differ = !prev.unknown_shape && !t.unknown_shape && prev.shape != t.shape;
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
            tensors.insert(t.id, t);
        }
    } else {
        tensors.insert(t.id, t);
    }
    Ok(())
}
