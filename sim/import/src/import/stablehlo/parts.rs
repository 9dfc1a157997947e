//! Where each step sits in the model (`scenario::Place`), told from the steps alone:
//!
//! - **Layers**: an unrolled `while`'s iterations (set while lowering); otherwise the
//!   longest run of a block of steps the program repeats back to back, at least twice
//!   (the same kernels on the same shapes: JAX's unrolled layers), its phase chosen
//!   where the fewest computed tensors cross the boundary (the residual stream alone).
//! - **Parts**, once layers are known: the steps before the first layer are the
//!   embedding; after the last, a norm up to the first matrix product, then the head
//!   (and before it, what makes the head's weight from nothing the model computed: a
//!   tied head's transpose of the embedding table).
//!   Inside a layer, the residual stream is the tensor from outside it that an `Add`
//!   of the layer reads; each `Add` that carries it on closes a branch: the steps it
//!   depends on inside the layer (not in an earlier branch). A branch's steps before
//!   its first matrix product are a norm; the rest, and the `Add`, are attention when
//!   the branch multiplies two computed tensors (scores, context), else the MLP.
//!
//! What the rules cannot tell stays unknown; nothing in a run depends on it.

use crate::import::lower::{Action, Decl, Step};
use crate::scenario::Part;
use mnsim_kernels::{BinaryOp, Kernel, UnaryOp};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

/// The fewest steps a repeated block (a layer) has.
const MIN_LAYER: usize = 8;

/// Sets every step's place: layers found where no `while` gave them, then parts.
pub(super) fn place(steps: &mut [Step], decls: &[Decl]) {
    let dims: BTreeMap<&str, &[u64]> = decls
        .iter()
        .map(|d| (d.name.as_str(), d.dims.as_slice()))
        .collect();
    if steps.iter().all(|s| s.place.layer.is_none())
        && let Some((start, period, count)) = repeated(steps, &dims)
    {
        for (k, s) in steps[start..start + period * count].iter_mut().enumerate() {
            s.place.layer = Some((k / period) as u32);
        }
    }
    let Some(first) = steps.iter().position(|s| s.place.layer.is_some()) else {
        return;
    };
    let last = steps
        .iter()
        .rposition(|s| s.place.layer.is_some())
        .unwrap_or(first);
    for s in &mut steps[..first] {
        s.place.part = Some(Part::Embedding);
    }
    let head = head_weights(steps, last + 1);
    let tail = &mut steps[last + 1..];
    let head_from = tail.iter().position(is_matmul).unwrap_or(tail.len());
    for (k, s) in tail.iter_mut().enumerate() {
        s.place.part = Some(if k < head_from && !head.contains(&k) {
            Part::Norm
        } else {
            Part::Head
        });
    }
    let mut lo = first;
    while lo <= last {
        let layer = steps[lo].place.layer;
        let hi = (lo..=last)
            .find(|&k| steps[k].place.layer != layer)
            .unwrap_or(last + 1);
        layer_parts(&mut steps[lo..hi]);
        lo = hi;
    }
}

/// The steps after the last layer (from `tail`, as indices into the tail) that make the
/// head's weight operand: what its first matrix product reads, back through the steps
/// that read nothing the model computed (a tied head's transpose of the embedding
/// table), so that they count with the head, not with the final norm before it.
fn head_weights(steps: &[Step], tail: usize) -> BTreeSet<usize> {
    let before: BTreeSet<&str> = steps[..tail].iter().map(|s| s.out.as_str()).collect();
    let tail = &steps[tail..];
    let made: BTreeMap<&str, usize> = (tail.iter().enumerate())
        .map(|(k, s)| (s.out.as_str(), k))
        .collect();
    let Some(mm) = tail.iter().position(is_matmul) else {
        return BTreeSet::new();
    };
    // Steps that read, directly or not, a tensor the steps before the tail computed
    // (arguments and constants are no step's output).
    let mut computed = vec![false; tail.len()];
    for k in 0..mm {
        computed[k] = tail[k].inputs.iter().any(|n| match made.get(n.as_str()) {
            Some(&j) => computed[j],
            None => before.contains(n.as_str()),
        });
    }
    let mut out = BTreeSet::new();
    let mut todo: Vec<usize> = (tail[mm].inputs.iter())
        .filter_map(|n| made.get(n.as_str()).copied())
        .filter(|&j| !computed[j])
        .collect();
    while let Some(k) = todo.pop() {
        if out.insert(k) {
            todo.extend(
                (tail[k].inputs.iter())
                    .filter_map(|n| made.get(n.as_str()).copied())
                    .filter(|&j| !computed[j]),
            );
        }
    }
    out
}

fn is_matmul(s: &Step) -> bool {
    matches!(
        s.action,
        Action::Kernel(Kernel::MatMul | Kernel::BatchMatMul | Kernel::GeneralMatMul { .. })
    )
}

fn is_add(s: &Step) -> bool {
    !s.cast && s.action == Action::Kernel(Kernel::Binary(BinaryOp::Add))
}

/// The parts of one layer's steps (see the module's comment).
fn layer_parts(steps: &mut [Step]) {
    let made: BTreeMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(k, s)| (s.out.as_str(), k))
        .collect();
    // The residual stream entering the layer: what its first step reads from outside
    // it, and an Add of the layer reads too.
    let added: BTreeSet<&str> = (steps.iter().filter(|s| is_add(s)))
        .flat_map(|s| s.inputs.iter().map(String::as_str))
        .collect();
    // Of the tensors from outside the layer an Add reads, the one read first.
    let entering = steps.iter().find_map(|s| {
        s.inputs
            .iter()
            .find(|n| !made.contains_key(n.as_str()) && added.contains(n.as_str()))
            .cloned()
    });
    let Some(mut stream) = entering else {
        return;
    };
    // Weights: gathered from DRAM, or views of what is (a layer's slice reshaped).
    let mut weight = vec![false; steps.len()];
    for k in 0..steps.len() {
        weight[k] = match &steps[k].action {
            Action::Gather { .. } => true,
            Action::Kernel(
                Kernel::Reshape { .. } | Kernel::Transpose { .. } | Kernel::Unary(UnaryOp::Copy),
            ) => steps[k]
                .inputs
                .iter()
                .all(|n| made.get(n.as_str()).is_some_and(|&j| weight[j])),
            Action::Kernel(_) => false,
        };
    }
    let activation = |n: &str, inside: &BTreeSet<usize>| {
        made.get(n)
            .is_some_and(|j| inside.contains(j) && !weight[*j])
    };
    let mut part: Vec<Option<Part>> = vec![None; steps.len()];
    let mut taken = vec![false; steps.len()];
    let mut last_part = None;
    for a in 0..steps.len() {
        if !is_add(&steps[a]) || !steps[a].inputs.contains(&stream) {
            continue;
        }
        let other = steps[a]
            .inputs
            .iter()
            .find(|n| *n != &stream)
            .cloned()
            .unwrap_or_default();
        if !made.contains_key(other.as_str()) {
            // A bias added to the stream: the stream goes on, in the branch's part.
            part[a] = last_part;
            taken[a] = true;
            stream = steps[a].out.clone();
            continue;
        }
        // The branch: what the Add's other operand depends on inside the layer.
        let mut branch = BTreeSet::new();
        let mut todo: Vec<usize> = made.get(other.as_str()).copied().into_iter().collect();
        while let Some(k) = todo.pop() {
            if taken[k] || !branch.insert(k) {
                continue;
            }
            for n in &steps[k].inputs {
                if let Some(&j) = made.get(n.as_str())
                    && steps[j].out != stream
                {
                    todo.push(j);
                }
            }
        }
        // Attention multiplies two activations (scores, context); an MLP multiplies
        // activations by weights only.
        let mixes = branch.iter().any(|&k| {
            is_matmul(&steps[k]) && steps[k].inputs.iter().all(|n| activation(n, &branch))
        });
        let main = if mixes { Part::Attention } else { Part::Mlp };
        let first_mm = branch.iter().copied().find(|&k| is_matmul(&steps[k]));
        for &k in &branch {
            part[k] = Some(if first_mm.is_some_and(|m| k < m) && !weight[k] {
                Part::Norm
            } else {
                main
            });
            taken[k] = true;
        }
        part[a] = Some(main);
        taken[a] = true;
        last_part = Some(main);
        stream = steps[a].out.clone();
    }
    // A weight is in the part of the step that first reads it (a norm's scale too).
    for k in (0..steps.len()).rev() {
        if weight[k] {
            let out = &steps[k].out;
            let first = (k + 1..steps.len()).find(|&j| steps[j].inputs.contains(out));
            part[k] = first.and_then(|j| part[j]).or(part[k]);
        }
    }
    for (s, p) in steps.iter_mut().zip(part) {
        s.place.part = p;
    }
}

/// A step's shape-level identity: its kernel (or a gather), its operands' and
/// result's dims and dtype; names aside.
fn signature(s: &Step, dims: &BTreeMap<&str, &[u64]>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match &s.action {
        Action::Kernel(k) => format!("{k:?}").hash(&mut h),
        Action::Gather { .. } => "gather".hash(&mut h),
    }
    s.cast.hash(&mut h);
    for n in s.inputs.iter().chain([&s.out]) {
        dims.get(n.as_str()).hash(&mut h);
    }
    h.finish()
}

/// The longest block of at least [`MIN_LAYER`] steps repeated back to back at least
/// twice: its first step, its length and its count.
fn repeated(steps: &[Step], dims: &BTreeMap<&str, &[u64]>) -> Option<(usize, usize, usize)> {
    let sig: Vec<u64> = steps.iter().map(|s| signature(s, dims)).collect();
    let n = sig.len();
    // Per period, the longest run of steps equal to the step a period later.
    let mut best: Option<(usize, usize, usize)> = None;
    for p in MIN_LAYER..=n / 2 {
        let (mut run, mut at) = (0usize, 0usize);
        let mut longest = (0usize, 0usize);
        for i in 0..n - p {
            if sig[i] == sig[i + p] {
                if run == 0 {
                    at = i;
                }
                run += 1;
                if run > longest.0 {
                    longest = (run, at);
                }
            } else {
                run = 0;
            }
        }
        let (run, at) = longest;
        let count = (run + p) / p;
        if count < 2 {
            continue;
        }
        if best.is_none_or(|(_, bp, bc)| count * p > bp * bc) {
            best = Some((at, p, count));
        }
    }
    let (at, p, count) = best?;
    let total = (at..n - p).take_while(|&i| sig[i] == sig[i + p]).count() + p;
    // The phase where the fewest computed tensors cross into the first layer.
    let made: BTreeMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(k, s)| (s.out.as_str(), k))
        .collect();
    let crossing = |b: usize| -> usize {
        let mut seen = BTreeSet::new();
        for s in &steps[b..] {
            for x in &s.inputs {
                if made.get(x.as_str()).is_some_and(|&k| k < b) {
                    seen.insert(x.as_str());
                }
            }
        }
        seen.len()
    };
    let phase = (0..=total - count * p)
        .min_by_key(|&j| (crossing(at + j), j))
        .unwrap_or(0);
    Some((at + phase, p, count))
}
