//! Shapes a oneDNN file leaves to be inferred: a tensor whose dimensions are written as
//! −2^63 (`DNNL_GRAPH_UNKNOWN_DIM`) gets the shape its producing op gives, in producer
//! order (docs/import.md). Elementwise kinds give their inputs' numpy broadcast, the
//! shape-keeping kinds their first input's, MatMul its product's; any other producer,
//! or a graph input of unknown shape, is an error naming the tensor.

use super::graph::{At, GOp, Tensor};
use std::collections::BTreeMap;

/// Kinds whose output has the numpy broadcast of their inputs' shapes.
const BROADCAST: [&str; 11] = [
    "Add",
    "Subtract",
    "Multiply",
    "Divide",
    "Maximum",
    "Minimum",
    "Select",
    "GreaterEqual",
    "Greater",
    "LessEqual",
    "Less",
];

/// Kinds whose (first) output has the shape of their first input.
const SAME: [&str; 30] = [
    "SoftMax",
    "LogSoftmax",
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
    "HardSigmoid",
    "Mish",
    "LeakyReLU",
    "BiasAdd",
    "Reorder",
    "TypeCast",
    "Quantize",
    "Dequantize",
    "DynamicQuantize",
    "DynamicDequantize",
    "Dropout",
    "RMSNorm",
    "GroupNorm",
];

/// Fills in every tensor of unknown shape from its producer.
pub(super) fn shapes(ops: &[GOp], tensors: &mut BTreeMap<u64, Tensor>) -> Result<(), At> {
    if !tensors.values().any(|t| t.unknown_shape) {
        return Ok(());
    }
    for op in ops {
        let missing: Vec<u64> = op
            .outputs
            .iter()
            .filter(|t| tensors.get(t).is_some_and(|t| t.unknown_shape))
            .copied()
            .collect();
        if missing.is_empty() {
            continue;
        }
        let mut ins: Vec<Vec<u64>> = Vec::new();
        for t in &op.inputs {
            match tensors.get(t) {
                Some(x) if !x.unknown_shape => ins.push(x.shape.clone()),
                _ => {
                    return Err(op.error(format!(
                        "input tensor id {t} has dimensions to be inferred (−2^63) that no op before it gives; \
                         give its shape"
                    )));
                }
            }
        }
        let shape = infer(op, &ins)?;
        // Only the first output of a multi-output kind has the inferred shape.
        let first = op.outputs.first().copied();
        for t in missing {
            if Some(t) != first {
                return Err(op.error(format!(
                    "output tensor id {t} has dimensions to be inferred (−2^63); mnsim infers only an op's first output"
                )));
            }
            if let Some(x) = tensors.get_mut(&t) {
                x.shape = shape.clone();
                x.unknown_shape = false;
            }
        }
    }
    if let Some(t) = tensors.values().find(|t| t.unknown_shape) {
        return Err(At {
            span: Some(t.span.clone()),
            message: format!(
                "{}: tensor id {} has dimensions to be inferred (−2^63), but no op produces it; give its shape",
                t.path, t.id
            ),
        });
    }
    Ok(())
}

/// The output shape of `op` on inputs of shapes `ins`.
fn infer(op: &GOp, ins: &[Vec<u64>]) -> Result<Vec<u64>, At> {
    let k = op.kind.as_str();
    let cannot = |why: &str| {
        op.error(format!(
            "its output has dimensions to be inferred (−2^63), {why}; give the output's shape"
        ))
    };
    if BROADCAST.contains(&k) {
        let mut acc: Vec<u64> = Vec::new();
        for s in ins {
            acc = mnsim_kernels::broadcast(&acc, s)
                .ok_or_else(|| cannot("but its inputs' shapes do not broadcast"))?;
        }
        return Ok(acc);
    }
    if SAME.contains(&k) {
        return ins
            .first()
            .cloned()
            .ok_or_else(|| cannot("but the op has no input"));
    }
    if k == "MatMul" {
        let (Some(a), Some(b)) = (ins.first(), ins.get(1)) else {
            return Err(cannot("but the MatMul has fewer than two inputs"));
        };
        let ta = op.attr_bool("transpose_a")?.unwrap_or(false);
        let tb = op.attr_bool("transpose_b")?.unwrap_or(false);
        // Rank-1 operands follow numpy: a vector `a` is a row, a vector `b` a column,
        // and the added axis is dropped from the result.
        let a2 = if a.len() == 1 {
            vec![1, a[0]]
        } else {
            a.clone()
        };
        let b2 = if b.len() == 1 {
            vec![b[0], 1]
        } else {
            b.clone()
        };
        let g = mnsim_kernels::gemm(ta, tb, &a2, &b2).map_err(|e| cannot(&e.message))?;
        let mut out = g.out;
        let r = out.len();
        match (a.len() == 1, b.len() == 1) {
            (true, true) => {
                out.truncate(r - 2);
            }
            (true, false) => {
                out.remove(r - 2);
            }
            (false, true) => {
                out.pop();
            }
            (false, false) => {}
        }
        return Ok(out);
    }
    Err(cannot(&format!("which mnsim cannot infer for a `{k}`")))
}
