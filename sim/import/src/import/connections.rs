//! How the ops of a read oneDNN graph connect: the producer of each tensor, the ops in
//! an order where producers come first, and the graph's inputs and outputs (checking
//! the document's `input_ports` and `output_ports`).

use super::graph::{At, GOp, Tensor, at, uint};
use super::json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The op (index into `ops`) producing each produced tensor: at most one per tensor.
pub(super) fn producers(ops: &[GOp]) -> Result<BTreeMap<u64, usize>, At> {
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
    Ok(producer)
}

/// The ops in topological order, keeping file order where it is free (Kahn's algorithm).
pub(super) fn topological_order(
    ops: &[GOp],
    tensors: &BTreeMap<u64, Tensor>,
    producer: &BTreeMap<u64, usize>,
) -> Result<Vec<GOp>, At> {
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
    Ok(order.into_iter().map(|k| ops[k].clone()).collect())
}

/// The tensors no op produces, in order of first use.
pub(super) fn graph_inputs(ops: &[GOp], producer: &BTreeMap<u64, usize>) -> Vec<u64> {
    let mut inputs = Vec::new();
    for op in ops {
        for &t in &op.inputs {
            if !producer.contains_key(&t) && !inputs.contains(&t) {
                inputs.push(t);
            }
        }
    }
    inputs
}

/// The graph's outputs: the document's `output_ports`, else those found from the ops.
pub(super) fn graph_outputs(
    doc: &Value,
    ops: &[GOp],
    tensors: &BTreeMap<u64, Tensor>,
) -> Result<Vec<u64>, At> {
    let Some(ports) = doc.get("output_ports") else {
        return Ok(unconsumed_outputs(ops));
    };
    let items = ports
        .as_array()
        .ok_or_else(|| at(ports, "output_ports: must be a list of tensor ids".into()))?;
    // Nothing stored, nothing computed: refused rather than guessed (docs/import.md).
    if items.is_empty() {
        return Err(at(
            ports,
            "output_ports: the list is empty, so the graph would compute and store nothing; \
             list the tensor ids to store, or leave out `output_ports` to store the tensors \
             no op consumes"
                .into(),
        ));
    }
    let mut outputs: Vec<u64> = Vec::new();
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
    Ok(outputs)
}

/// The produced tensors that no op other than `End` consumes, and the inputs of `End`
/// ops, in op order.
fn unconsumed_outputs(ops: &[GOp]) -> Vec<u64> {
    let consumed: BTreeSet<u64> = ops
        .iter()
        .filter(|o| o.kind != "End")
        .flat_map(|o| o.inputs.iter().copied())
        .collect();
    let mut outputs: Vec<u64> = Vec::new();
    for op in ops {
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
    outputs
}

/// Checks the document's `input_ports`, if any: tensor ids no op produces.
pub(super) fn check_input_ports(doc: &Value, producer: &BTreeMap<u64, usize>) -> Result<(), At> {
    let Some(ports) = doc.get("input_ports") else {
        return Ok(());
    };
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
    Ok(())
}
