//! Each ONNX node by its op type: evaluated at import (shape computations, constants)
//! or lowered to kernels (`math`, `movement`, `conv`). Any other op type is an error
//! naming the node.

use super::lower::Bad;
use super::lower::{Ox, Val};
use super::model;
use super::proto::{AttributeProto, NodeProto, attribute_proto::AttributeType};
use crate::import::stablehlo::fold::Konst;
use mnsim_arch::DType;
use mnsim_kernels::{BinaryOp, Cmp, Eltwise, Kernel, ReduceKind, UnaryOp};
use std::collections::BTreeMap;

/// The op types mnsim imports (the message for any other lists them).
pub const SUPPORTED: &[&str] = &[
    "Abs",
    "Add",
    "And",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "Div",
    "Dropout",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "Flatten",
    "Gather",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "Identity",
    "LayerNormalization",
    "Less",
    "LessOrEqual",
    "Log",
    "MatMul",
    "Max",
    "MaxPool",
    "Min",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "Pow",
    "Range",
    "Reciprocal",
    "ReduceL2",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "Relu",
    "Reshape",
    "Shape",
    "Sigmoid",
    "Size",
    "Slice",
    "Softmax",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Tanh",
    "Transpose",
    "Trilu",
    "Unsqueeze",
    "Where",
];

/// A node's attributes by name.
pub(super) struct Attrs<'a>(pub(super) &'a [AttributeProto]);

impl Attrs<'_> {
    fn get(&self, name: &str) -> Option<&AttributeProto> {
        self.0.iter().find(|a| a.name.as_deref() == Some(name))
    }

    fn typed(&self, name: &str, t: AttributeType) -> Result<Option<&AttributeProto>, Bad> {
        match self.get(name) {
            None => Ok(None),
            Some(a) if a.ref_attr_name.is_some() => Err(format!(
                "attribute `{name}` refers to a function's attribute; mnsim reads graphs with functions inlined"
            ).into()),
            Some(a) if a.r#type.is_none_or(|x| x == t as i32) => Ok(Some(a)),
            Some(_) => Err(format!(
                "attribute `{name}` is not of type {}",
                t.as_str_name()
            ).into()),
        }
    }

    pub(super) fn int(&self, name: &str) -> Result<Option<i64>, Bad> {
        Ok(self.typed(name, AttributeType::Int)?.and_then(|a| a.i))
    }

    pub(super) fn int_or(&self, name: &str, d: i64) -> Result<i64, Bad> {
        Ok(self.int(name)?.unwrap_or(d))
    }

    pub(super) fn float_or(&self, name: &str, d: f64) -> Result<f64, Bad> {
        Ok(self
            .typed(name, AttributeType::Float)?
            .and_then(|a| a.f)
            .map_or(d, |f| f as f64))
    }

    pub(super) fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, Bad> {
        Ok(self
            .typed(name, AttributeType::Ints)?
            .map(|a| a.ints.clone()))
    }

    pub(super) fn string(&self, name: &str) -> Result<Option<String>, Bad> {
        Ok(self
            .typed(name, AttributeType::String)?
            .and_then(|a| a.s.as_ref())
            .map(|s| String::from_utf8_lossy(s).into_owned()))
    }
}

/// An axis given as ONNX does (negative counts from the end) for a rank-`rank` tensor.
pub(super) fn axis(a: i64, rank: usize, what: &str) -> Result<usize, Bad> {
    let r = rank as i64;
    let x = if a < 0 { a + r } else { a };
    if !(0..r.max(1)).contains(&x) {
        return Err(format!("{what} {a} is out of range for rank {rank}").into());
    }
    Ok(x as usize)
}

/// The values of a constant operand as integers (`what` names it in messages).
pub(super) fn ints_of(v: &Val, what: &str) -> Result<Vec<i64>, Bad> {
    match v {
        Val::C(k) => Ok(k.values()?.iter().map(|&x| x as i64).collect()),
        _ => Err(format!(
            "{what} is computed at run time; mnsim needs it known at import (a constant, or computed from shapes)"
        ).into()),
    }
}

/// The node's inputs: `None` for an omitted optional input (an empty name).
fn inputs(n: &NodeProto, env: &BTreeMap<String, Val>) -> Result<Vec<Option<Val>>, Bad> {
    n.input
        .iter()
        .map(|name| {
            if name.is_empty() {
                return Ok(None);
            }
            env.get(name).cloned().map(Some).ok_or_else(|| {
                Bad(format!("input `{name}` has no value: no earlier node computes it (or mnsim does not compute that output)"))
            })
        })
        .collect()
}

/// Input `i`, required.
pub(super) fn req<'v>(ins: &'v [Option<Val>], i: usize, op: &str) -> Result<&'v Val, Bad> {
    ins.get(i)
        .and_then(Option::as_ref)
        .ok_or_else(|| Bad(format!("{op} needs input {i}")))
}

/// The base of result names: the node's first output.
fn base_of(n: &NodeProto) -> String {
    n.output
        .first()
        .filter(|s| !s.is_empty())
        .or(n.name.as_ref())
        .cloned()
        .unwrap_or_else(|| "v".into())
}

/// Lowers one node: its output values.
pub(super) fn node(
    ox: &mut Ox,
    n: &NodeProto,
    env: &BTreeMap<String, Val>,
) -> Result<Vec<Val>, Bad> {
    if let Some(d) = n
        .domain
        .as_deref()
        .filter(|d| !d.is_empty() && *d != "ai.onnx")
    {
        return Err(format!(
            "the op is in domain `{d}`; mnsim imports the default ONNX domain (export with functions inlined)"
        ).into());
    }
    let op = n.op_type.as_deref().unwrap_or("");
    let a = Attrs(&n.attribute);
    let ins = inputs(n, env)?;
    let base = base_of(n);
    let b = base.as_str();
    use super::math::{binary, compare, unary};
    let one = |v: Val| Ok(vec![v]);
    match op {
        "Add" => one(binary(ox, b, BinaryOp::Add, &ins)?),
        "Sub" => one(binary(ox, b, BinaryOp::Sub, &ins)?),
        "Mul" => one(binary(ox, b, BinaryOp::Mul, &ins)?),
        "Div" => one(binary(ox, b, BinaryOp::Div, &ins)?),
        "Max" if ins.len() == 2 => one(binary(ox, b, BinaryOp::Max, &ins)?),
        "Min" if ins.len() == 2 => one(binary(ox, b, BinaryOp::Min, &ins)?),
        "Max" | "Min" => {
            Err(format!("{op} of {} inputs: mnsim imports it with two", ins.len()).into())
        }
        "Pow" => one(super::math::pow(ox, b, &ins)?),
        "Relu" => one(unary(ox, b, UnaryOp::Relu, req(&ins, 0, op)?)?),
        "Sigmoid" => one(unary(ox, b, UnaryOp::Sigmoid, req(&ins, 0, op)?)?),
        "Tanh" => one(unary(ox, b, UnaryOp::Tanh, req(&ins, 0, op)?)?),
        "Erf" => one(unary(ox, b, UnaryOp::Erf, req(&ins, 0, op)?)?),
        "Sqrt" => one(unary(ox, b, UnaryOp::Sqrt, req(&ins, 0, op)?)?),
        "Exp" => one(unary(ox, b, UnaryOp::Exp, req(&ins, 0, op)?)?),
        "Log" => one(unary(ox, b, UnaryOp::Log, req(&ins, 0, op)?)?),
        "Neg" => one(unary(ox, b, UnaryOp::Neg, req(&ins, 0, op)?)?),
        "Abs" => one(unary(ox, b, UnaryOp::Abs, req(&ins, 0, op)?)?),
        "Reciprocal" => one(unary(ox, b, UnaryOp::Recip, req(&ins, 0, op)?)?),
        "Gelu" => one(super::math::gelu(ox, b, &a, req(&ins, 0, op)?)?),
        "Equal" => one(compare(ox, b, Cmp::Equal, &ins)?),
        "Less" => one(compare(ox, b, Cmp::Less, &ins)?),
        "LessOrEqual" => one(compare(ox, b, Cmp::LessEqual, &ins)?),
        "Greater" => one(compare(ox, b, Cmp::Greater, &ins)?),
        "GreaterOrEqual" => one(compare(ox, b, Cmp::GreaterEqual, &ins)?),
        "Not" | "And" | "Or" => one(Val::C(logic(op, &ins)?)),
        "Where" => one(super::math::select(ox, b, &ins)?),
        "Identity" | "Dropout" => one(req(&ins, 0, op)?.clone()),
        "Cast" => one(super::math::cast(ox, b, &a, req(&ins, 0, op)?)?),
        "MatMul" => one(super::math::matmul(
            ox,
            b,
            req(&ins, 0, op)?,
            req(&ins, 1, op)?,
        )?),
        "Gemm" => one(super::math::gemm(ox, b, &a, &ins)?),
        "Softmax" => one(super::math::softmax(ox, b, &a, req(&ins, 0, op)?)?),
        "LayerNormalization" => one(super::math::layer_norm(ox, b, &a, &ins)?),
        "ReduceMean" => one(super::math::reduce(ox, b, ReduceKind::Mean, &a, &ins)?),
        "ReduceSum" => one(super::math::reduce(ox, b, ReduceKind::Add, &a, &ins)?),
        "ReduceMax" => one(super::math::reduce(ox, b, ReduceKind::Max, &a, &ins)?),
        "ReduceMin" => one(super::math::reduce(ox, b, ReduceKind::Min, &a, &ins)?),
        "ReduceProd" => one(super::math::reduce(ox, b, ReduceKind::Prod, &a, &ins)?),
        "ReduceL2" => one(super::math::reduce(ox, b, ReduceKind::L2, &a, &ins)?),
        "Constant" => one(Val::C(constant(&a)?)),
        "ConstantOfShape" => one(Val::C(constant_of_shape(&a, req(&ins, 0, op)?)?)),
        "Shape" => one(Val::C(shape(&a, req(&ins, 0, op)?)?)),
        "Size" => {
            let n = req(&ins, 0, op)?.dims().iter().product::<u64>();
            one(Val::C(Konst::splat(DType::S64, Vec::new(), n as f64)))
        }
        "Range" => one(Val::C(range(&ins)?)),
        "Reshape" => one(super::movement::reshape(ox, &a, &ins)?),
        "Flatten" => one(super::movement::flatten(ox, &a, req(&ins, 0, op)?)?),
        "Transpose" => one(super::movement::transpose(ox, &a, req(&ins, 0, op)?)?),
        "Unsqueeze" => one(super::movement::unsqueeze(ox, &a, &ins)?),
        "Squeeze" => one(super::movement::squeeze(ox, &a, &ins)?),
        "Slice" => one(super::movement::slice(ox, b, &ins)?),
        "Split" => super::movement::split(ox, b, &a, &ins, n.output.len()),
        "Concat" => one(super::movement::concat(ox, b, &a, &ins)?),
        "Gather" => one(super::movement::gather(ox, b, &a, &ins)?),
        "Expand" => one(super::movement::expand(&ins)?),
        "Trilu" => one(Val::C(super::movement::trilu(&a, &ins)?)),
        "Conv" => one(super::conv::conv(ox, b, &a, &ins)?),
        "BatchNormalization" => one(super::conv::batch_norm(ox, b, &a, &ins, n.output.len())?),
        "MaxPool" | "AveragePool" => one(super::conv::pool(ox, b, op, &a, &ins, n.output.len())?),
        "GlobalAveragePool" | "GlobalMaxPool" => one(super::conv::global_pool(ox, b, op, &ins)?),
        _ => Err(format!(
            "op type `{op}` is not supported; mnsim imports {}",
            SUPPORTED.join(", ")
        )
        .into()),
    }
}

/// `Not`, `And`, `Or` on constants (masks computed at import).
fn logic(op: &str, ins: &[Option<Val>]) -> Result<Konst, Bad> {
    let ks: Vec<&Konst> = ins
        .iter()
        .map(|v| match v {
            Some(Val::C(k)) => Ok(k),
            _ => Err(format!("{op} of a tensor computed at run time is not supported (only masks known at import)").into()),
        })
        .collect::<Result<_, Bad>>()?;
    let full = super::math::numpy(&ks.iter().map(|k| k.dims.clone()).collect::<Vec<_>>())?;
    let ks: Vec<Konst> = ks
        .iter()
        .map(|k| super::math::konst_to(k, &full))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&Konst> = ks.iter().collect();
    Ok(match op {
        "Not" => Konst::map(&refs, DType::Pred, |x| (x[0] == 0.0) as u8 as f64),
        "And" => Konst::map(&refs, DType::Pred, |x| {
            (x[0] != 0.0 && x[1] != 0.0) as u8 as f64
        }),
        _ => Konst::map(&refs, DType::Pred, |x| {
            (x[0] != 0.0 || x[1] != 0.0) as u8 as f64
        }),
    }?)
}

/// `Constant`: its `value` tensor or one of the `value_*` forms.
fn constant(a: &Attrs) -> Result<Konst, Bad> {
    if let Some(t) = a
        .typed("value", AttributeType::Tensor)?
        .and_then(|x| x.t.as_ref())
    {
        let h = model::held(t, true)?;
        return h.values.ok_or_else(|| {
            Bad(match h.external {
                Some(f) => format!(
                    "the constant's values are external data (`{f}`), which mnsim does not read"
                ),
                None => format!(
                    "the constant of shape {:?} is too large to evaluate at import",
                    h.dims
                ),
            })
        });
    }
    if let Some(f) = a
        .typed("value_float", AttributeType::Float)?
        .and_then(|x| x.f)
    {
        return Ok(Konst::splat(DType::F32, Vec::new(), f as f64));
    }
    if let Some(i) = a.int("value_int")? {
        return Ok(Konst::splat(DType::S64, Vec::new(), i as f64));
    }
    if let Some(x) = a.typed("value_floats", AttributeType::Floats)? {
        let v: Vec<f64> = x.floats.iter().map(|&f| f as f64).collect();
        return Ok(Konst {
            dtype: DType::F32,
            dims: vec![v.len() as u64],
            data: std::rc::Rc::new(v),
        });
    }
    if let Some(x) = a.ints("value_ints")? {
        let v: Vec<f64> = x.iter().map(|&f| f as f64).collect();
        return Ok(Konst {
            dtype: DType::S64,
            dims: vec![v.len() as u64],
            data: std::rc::Rc::new(v),
        });
    }
    Err("a `Constant` with no `value`, `value_float(s)` or `value_int(s)` (sparse and string constants are not supported)".into())
}

fn constant_of_shape(a: &Attrs, shape: &Val) -> Result<Konst, Bad> {
    let dims = ints_of(shape, "the shape")?;
    let dims: Vec<u64> = dims
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| format!("a negative dimension {d}")))
        .collect::<Result<_, _>>()?;
    let (dtype, v) = match a
        .typed("value", AttributeType::Tensor)?
        .and_then(|x| x.t.as_ref())
    {
        Some(t) => {
            let h = model::held(t, true)?;
            let k = h.values.ok_or("the fill value is not in the file")?;
            (k.dtype, k.get(0))
        }
        None => (DType::F32, 0.0),
    };
    Ok(Konst::splat(dtype, dims, v))
}

/// `Shape` (with `start` and `end`): the dims of a value, known at import.
fn shape(a: &Attrs, x: &Val) -> Result<Konst, Bad> {
    let d = x.dims();
    let r = d.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let s = clamp(a.int_or("start", 0)?);
    let e = clamp(a.int("end")?.unwrap_or(r));
    let v: Vec<f64> = d[s..e.max(s)].iter().map(|&x| x as f64).collect();
    Ok(Konst {
        dtype: DType::S64,
        dims: vec![v.len() as u64],
        data: std::rc::Rc::new(v),
    })
}

fn range(ins: &[Option<Val>]) -> Result<Konst, Bad> {
    let scalar = |i: usize, what: &str| -> Result<(f64, DType), Bad> {
        match ins.get(i).and_then(Option::as_ref) {
            Some(Val::C(k)) if k.dims.iter().product::<u64>() == 1 => Ok((k.get(0), k.dtype)),
            _ => Err(format!("Range's {what} must be a scalar known at import").into()),
        }
    };
    let ((s, dt), (l, _), (d, _)) = (
        scalar(0, "start")?,
        scalar(1, "limit")?,
        scalar(2, "delta")?,
    );
    if d == 0.0 {
        return Err("Range with delta 0".into());
    }
    let n = ((l - s) / d).ceil().max(0.0) as u64;
    let v: Vec<f64> = (0..n).map(|i| s + i as f64 * d).collect();
    Ok(Konst {
        dtype: dt,
        dims: vec![n],
        data: std::rc::Rc::new(v),
    })
}

/// The comparison kernel of `Equal`, `Less`, ... (for `math::compare`).
pub(super) fn cmp_kernel(c: Cmp) -> Kernel {
    Kernel::Eltwise(Eltwise::Compare(c))
}
