//! The run-level terms of matrix products: what LM capacity forces a contraction to read
//! again, and what layout legality forces a matrix product to move through the DRAM
//! level's ports.

use super::bytes_of;
use super::view::{View, over};
use crate::ids::Dir;
use crate::program::{EntityRef as _, OpId, OpKind, Program, TensorId};
use crate::timeline::Resource;
use mnsim_kernels::Kernel;

/// What LM capacity forces contractions to move: for a MatMul whose operands are
/// both loaded from DRAM and read by it alone, the DRAMs move at least
/// `W / (2√2 · √S) − S` elements (Irony, Toledo and Tiskin, 2004: `W` multiply-adds,
/// `S` the elements all the LMs hold together), whatever the layouts.
pub(super) fn capacity(p: &Program, v: &View) -> Vec<(Resource, u64)> {
    // Per tensor: how many ops read it, and whether a Load loads it.
    let mut readers = vec![0usize; p.tensors.len()];
    let mut loaded = vec![false; p.tensors.len()];
    for id in p.ops.keys() {
        for t in p.inputs(id) {
            readers[t.index()] += 1;
        }
        if let OpKind::Load { tensor } = &p.ops[id].kind {
            loaded[tensor.index()] = true;
        }
    }
    let lm = u128::from(v.m.leaf_memory_bytes()).saturating_mul(u128::from(v.pes));
    let mut most = 0u64;
    for o in p.ops.values() {
        let OpKind::Kernel {
            kernel: k,
            inputs,
            out,
        } = &o.kind
        else {
            continue;
        };
        // The DRAM traffic bound of a contraction's blocking (a convolution reuses its
        // input across the window as well, so it is left out).
        let shapes: Vec<&[u64]> = (inputs.iter())
            .map(|&t| p.tensors[t].dims_at_bound.as_slice())
            .collect();
        let windowed = k
            .with_family(|f| f.window_map(&shapes))
            .ok()
            .flatten()
            .is_some();
        if !k.is_matmul()
            || windowed
            || !inputs
                .iter()
                .all(|t| loaded[t.index()] && readers[t.index()] == 1)
        {
            continue;
        }
        let (Some(&a), Some(flops)) = (inputs.first(), matmul_flops(p, k, inputs, *out)) else {
            continue;
        };
        let a = &p.tensors[a];
        let eb = u128::from(a.dtype.bytes().max(1));
        let s = (lm / eb) as f64;
        let w = (flops / 2) as f64;
        let q = w / (2.0 * std::f64::consts::SQRT_2 * s.sqrt()) - s;
        if q > 0.0 {
            let bytes = (q * eb as f64) as u128;
            most = most.max(over(bytes, v.m.dram.bytes_per_cycle * v.drams as f64));
        }
    }
    if most > 0 {
        vec![(Resource::Dram { level: v.dram }, most)]
    } else {
        Vec::new()
    }
}

/// What layout legality forces a matrix product to move through the DRAM level's down
/// ports, where the DRAM level has several nodes (mncore2's 4 Groups) above the
/// root-most addressable level `X`. At `X`, every legal layout of `c = a·b` with one
/// operand 2-D (the other may carry batch axes, which the 2-D one lacks as it lacks the
/// other's `M` or `N`; `docs/kernels.md`, the per-level rule) either replicates over `X`
/// the operand that lacks an output axis split there (`a` for `N`, `b` for `M` or a
/// batch axis of `a`), or leaves `c` partial over `X` (only `K` is split there), or
/// holds everything under one node of `X`. Bytes reach a node's subtree only through
/// its down port, so over the `D` ports: `D·|a| + |b|`, `|a| + D·|b|`, or `|a| + |b| +
/// D·|c|` (a partial `c` must be reduced over `X` before anything but a Free reads it,
/// and a Reduce leaves the result on every node of `X`; counted where the next op to
/// touch `c` reads it whole), or `|a| + |b|` on one port alone; at least the least of
/// these. Only for operands that come from DRAM alone (written by Loads and moved in
/// place, never computed on the chip).
pub(super) fn replication(p: &Program, v: &View) -> Option<(Resource, u64)> {
    let first = v
        .links
        .first()
        .filter(|l| l.level == v.dram && l.parents > 1)?;
    let top = v.m.addressable_levels().first()?.level_index;
    if top <= v.dram.index() {
        return None;
    }
    let from_dram = |t: TensorId| {
        let mut loaded = false;
        for id in p.ops.keys() {
            if p.output(id) != Some(t) {
                continue;
            }
            match &p.ops[id].kind {
                OpKind::Load { .. } => loaded = true,
                // Moved in place: the same bytes.
                OpKind::Relayout { out: None, .. } | OpKind::Broadcast { out: None, .. } => {}
                // Made on the chip (a copy of another tensor, a sum, a kernel's result).
                OpKind::Relayout { out: Some(_), .. }
                | OpKind::Broadcast { out: Some(_), .. }
                | OpKind::Reduce { .. }
                | OpKind::Gather { .. }
                | OpKind::Kernel { .. } => return false,
                // No output.
                OpKind::Store { .. } | OpKind::Free { .. } => {}
            }
        }
        loaded
    };
    // Whether the first op after `at` that touches `t` reads it whole (a Store, a
    // kernel, a move: a partial `t` must be reduced before it), not a Free, a Reduce
    // (perhaps over another level), a Broadcast or an op that writes `t` anew.
    let read_after = |at: OpId, t: TensorId| {
        let next = (p.ops.keys().skip_while(|&id| id != at).skip(1))
            .find(|&id| p.inputs(id).contains(&t) || p.output(id) == Some(t));
        next.is_some_and(|id| {
            p.output(id) != Some(t)
                && matches!(
                    p.ops[id].kind,
                    OpKind::Store { .. } | OpKind::Kernel { .. } | OpKind::Relayout { .. }
                )
        })
    };
    let d = u128::from(first.parents);
    let mut most = 0u64;
    for (id, o) in p.ops.iter() {
        let OpKind::Kernel {
            kernel: Kernel::MatMul | Kernel::GeneralMatMul { .. },
            inputs,
            out,
        } = &o.kind
        else {
            continue;
        };
        let (&[a, b], c) = (inputs.as_slice(), *out) else {
            continue;
        };
        // One operand 2-D: every output axis but its own comes from the other alone
        // (batch axes included), so the four ways above are all there are.
        let rank = |t: TensorId| p.tensors[t].runtime_dims.len();
        let (ra, rb) = (rank(a), rank(b));
        let one_2d = (ra == 2 && rb >= 2) || (rb == 2 && ra >= 2);
        if a == b || !one_2d || !from_dram(a) || !from_dram(b) {
            continue;
        }
        let (ba, bb) = (bytes_of(p, a), bytes_of(p, b));
        let bc = if read_after(id, c) { bytes_of(p, c) } else { 0 };
        let options = [
            d.saturating_mul(ba).saturating_add(bb),
            ba.saturating_add(d.saturating_mul(bb)),
            ba.saturating_add(bb).saturating_add(d.saturating_mul(bc)),
            // One node of `X`: one port carries both, as `D` ports carrying as much.
            d.saturating_mul(ba.saturating_add(bb)),
        ];
        let least = options.into_iter().min().unwrap_or(0);
        most = most.max(View::stage(first, Dir::Down, least));
    }
    (most > 0).then_some((
        Resource::Port {
            level: first.level,
            dir: Dir::Down,
        },
        most,
    ))
}

/// Useful FLOP of a contraction (2 per multiply-add) at run-time shapes.
fn matmul_flops(p: &Program, k: &Kernel, inputs: &[TensorId], out: TensorId) -> Option<u128> {
    let dims: Vec<&[u64]> = (inputs.iter())
        .map(|&t| p.tensors[t].runtime_dims.as_slice())
        .collect();
    let o = &p.tensors[out];
    let ka = mnsim_kernels::shape::contracted_axis_a(k, dims[0], dims.get(1)?)?;
    let n = o
        .runtime_dims
        .iter()
        .fold(1u128, |a, &x| a.saturating_mul(u128::from(x)));
    Some(
        2u128
            .saturating_mul(n)
            .saturating_mul(u128::from(*dims[0].get(ka)?)),
    )
}
