//! The bound (docs/model.md, the bound): the fewest cycles any layout could give an op,
//! and a run, on this machine under this model.
//!
//! An op's bound is the largest of its resources' compulsory work over their best
//! rates (every byte a Load or Store must move through the DRAMs and each link level,
//! spread evenly over every node at the level's fastest rate; a kernel's FLOP over the
//! peak of the unit that runs it), plus the latency of one pass through its path (the
//! fastest kind's latency of every link it must cross, once per chunk it must be cut
//! into). A run's bound is the largest of its ops' bounds, of each resource's compulsory
//! work summed over the ops (a resource serves one op at a time), and of what LM
//! capacity and layout legality force a contraction to move ([`contraction`]).
//!
//! - this module: the bounds' types, every op's bound, the program's and the run's;
//! - [`view`]: the machine as the bound sees it (the chain of links, the DRAMs, the
//!   PEs) and the compulsory holds of one way to run an op;
//! - [`contraction`]: the run-level terms of matrix products (LM capacity, legality).
//!
//! It depends only on the machine, the kernels and the resolved program (shapes,
//! dtypes, ops), never on a layout or on the engine, so the planner and the reports
//! share it.

mod contraction;
mod view;

use crate::ids::Dir;
use crate::program::{EntityRef as _, OpId, OpKind, Program, TensorId};
use crate::timeline::{Resource, describe};
use contraction::{capacity, replication};
use mnsim_arch::{DType, Machine};
use mnsim_kernels::Kernel;
use mnsim_reports::Report;
use view::View;

/// The bound of one op: its cycles, the resource that sets them, and the least each
/// resource must be held (what the run's bound sums).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpBound {
    pub cycles: u64,
    /// Named as the report's `resources` name them (`DRAM`, `L1B down`, `MAB compute`),
    /// or `latency` when only the path's latency is compulsory; empty for an op that
    /// need not take any cycle (a `Free`).
    pub resource: String,
    /// Resources every layout holds, with the fewest cycles it holds them.
    pub holds: Vec<(Resource, u64)>,
}

/// The bound of a program: per op (in the program's order) and for the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bound {
    pub ops: Vec<OpBound>,
    /// Lower bounds on a resource's busy cycles over the whole run that no single op
    /// carries (what LM capacity forces a contraction to read again).
    pub extra: Vec<(Resource, u64)>,
    pub cycles: u64,
    pub resource: String,
}

impl Bound {
    /// Writes the bounds into a run's report: per op (`bounds`, one per op of the run)
    /// and the run's, which is the program's (whatever the layouts, so the Reduces a
    /// layout makes the run insert are not in it: they only add cycles).
    pub fn annotate(&self, report: &mut Report, bounds: &[OpBound]) {
        for (o, b) in report.ops.iter_mut().zip(bounds) {
            o.bound_cycles = b.cycles;
            o.bound_resource = b.resource.clone();
        }
        report.bound_cycles = self.cycles;
        report.bound_resource = self.resource.clone();
    }

    /// Brings `bounds` (one per op of a run) level with the run's `ops`: the ops added
    /// since the last call (by op `next - 1` of `p`) get that op's bound, the tree
    /// Reduces the run inserted after it a Reduce's of its output (over the network its
    /// report shows it reducing on, if any).
    pub fn extend(
        &self,
        bounds: &mut Vec<OpBound>,
        reports: &[mnsim_reports::OpReport],
        m: &Machine,
        p: &Program,
        next: usize,
    ) {
        let ops = reports.len();
        let mut first = true;
        let last = next.checked_sub(1);
        while bounds.len() < ops {
            let b = match (first, last.and_then(|i| self.ops.get(i))) {
                (true, Some(b)) => b.clone(),
                _ => {
                    let out = last.and_then(|i| p.output(OpId::new(i)));
                    let net = reports.get(bounds.len()).and_then(|o| {
                        (o.stages.iter())
                            .filter(|s| s.kind == "reduce")
                            .filter_map(|s| m.level_index(&s.level))
                            .find(|&k| m.network_at(k).is_some())
                    });
                    reduce_over(m, out.map_or(0, |t| bytes_of(p, t)), net.map(|k| k + 1))
                }
            };
            first = false;
            bounds.push(b);
        }
    }
}

/// Real bytes of a tensor: its run-time elements × its element bytes.
fn bytes_of(p: &Program, t: TensorId) -> u128 {
    let t = &p.tensors[t];
    t.runtime_dims
        .iter()
        .fold(u128::from(t.dtype.bytes()), |a, &x| {
            a.saturating_mul(u128::from(x))
        })
}

/// The bound of a tree Reduce of `bytes` (one the run inserts after a kernel, or a
/// program's `Reduce`): up over the lowest link and down again, at the least.
pub fn reduce(m: &Machine, bytes: u128) -> OpBound {
    reduce_over(m, bytes, None)
}

/// The bound of a Reduce of `bytes` over the level of index `level` (if known): the tree
/// Reduce's, and where the level meets at a network the all-reduce's compulsory bytes
/// on it (`View::network_reduce`).
pub fn reduce_over(m: &Machine, bytes: u128, level: Option<usize>) -> OpBound {
    let v = View::new(m);
    let net = level.and_then(|l| v.network_reduce(bytes, l));
    match v.lowest_crossing(bytes) {
        Some(p) => p.with(net).bound(m, true),
        None if net.is_some() => view::Parts::default().with(net).bound(m, true),
        None => OpBound::default(),
    }
}

/// The bound of every op of program `p` on machine `m`, and of the run.
pub fn program(m: &Machine, p: &Program) -> Bound {
    let v = View::new(m);
    let mut ops = Vec::with_capacity(p.ops.len());
    // Inputs already brought from the host by a first Load.
    let mut brought = std::collections::BTreeSet::new();
    for o in p.ops.values() {
        let bytes = |t| bytes_of(p, t);
        let b = match &o.kind {
            OpKind::Load { tensor } => {
                let first = p.tensors[*tensor].init.is_some() && brought.insert(*tensor);
                let host = first.then(|| v.host_load(bytes(*tensor))).flatten();
                (v.dram_transfer(Dir::Down, bytes(*tensor)))
                    .with(host)
                    .bound(m, true)
            }
            // The gathered rows' bytes down from DRAM, as a Load of the result.
            OpKind::Gather { out, .. } => v.dram_transfer(Dir::Down, bytes(*out)).bound(m, true),
            OpKind::Store { tensor } => v.dram_transfer(Dir::Up, bytes(*tensor)).bound(m, true),
            OpKind::Broadcast { tensor, .. } => {
                // As a Load it brings an input from the host (not counted: it may be a
                // Relayout); a later Load does not.
                brought.insert(*tensor);
                // A Load when the tensor is not in LM, a Relayout when it is.
                let bytes = bytes(*tensor);
                let load = v.dram_transfer(Dir::Down, bytes).bound(m, false);
                let moved = v.relayout(bytes);
                if load.cycles < moved.cycles {
                    load
                } else {
                    moved
                }
            }
            OpKind::Relayout { tensor, .. } => v.relayout(bytes(*tensor)),
            OpKind::Reduce { tensor, level, .. } => {
                reduce_over(m, bytes(*tensor), Some(level.index()))
            }
            OpKind::Free { .. } => OpBound::default(),
            OpKind::Kernel {
                kernel,
                inputs,
                out,
            } => kernel_bound(p, &v, kernel, inputs, *out),
        };
        ops.push(b);
    }
    let mut extra = capacity(p, &v);
    extra.extend(replication(p, &v));
    let (cycles, resource) = combine(m, &ops, &extra);
    Bound {
        ops,
        extra,
        cycles,
        resource,
    }
}

fn kernel_bound(p: &Program, v: &View, k: &Kernel, inputs: &[TensorId], out: TensorId) -> OpBound {
    let dims: Vec<&[u64]> = (inputs.iter())
        .map(|&t| p.tensors[t].runtime_dims.as_slice())
        .collect();
    let dtypes: Vec<DType> = inputs.iter().map(|&t| p.tensors[t].dtype).collect();
    v.kernel(k, &dims, &dtypes, p.tensors[out].dtype)
        .map_or_else(OpBound::default, |b| b.bound(v.m, true))
}

/// The run's bound from its ops' bounds: the largest op bound, and every resource's
/// holds summed over the ops (or a larger `extra` lower bound of its own). Returns the
/// cycles and what sets them (a resource, or `op N` when one op's bound does).
pub fn combine(m: &Machine, ops: &[OpBound], extra: &[(Resource, u64)]) -> (u64, String) {
    let mut sums: Vec<(Resource, u64)> = Vec::new();
    for &(r, c) in ops.iter().flat_map(|o| o.holds.iter()) {
        crate::timeline::tally(&mut sums, r, c);
    }
    for (r, c) in extra {
        match sums.iter_mut().find(|s| s.0 == *r) {
            Some(s) => s.1 = s.1.max(*c),
            None => sums.push((*r, *c)),
        }
    }
    let mut best = (0u64, String::new());
    for (r, c) in &sums {
        if *c > best.0 {
            best = (*c, describe(*r, m).0);
        }
    }
    for o in ops {
        if o.cycles > best.0 {
            best = (o.cycles, o.resource.clone());
        }
    }
    best
}
