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
//! capacity forces a contraction to read again (the Irony–Toledo–Tiskin lower bound).
//!
//! It depends only on the machine, the kernels and the resolved program (shapes,
//! dtypes, ops), never on a layout or on the engine, so the planner and the reports
//! share it.

use crate::ids::{Dir, LevelId};
use crate::net::Topo;
use crate::program::{OpKind, Program};
use crate::scenario::Resolved;
use crate::timeline::{Resource, describe};
use mnsim_arch::{DType, Machine, TransferKind};
use mnsim_kernels::Kernel;
use mnsim_reports::{OpReport, Report};
use std::collections::BTreeMap;

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

/// The bound of a program: per op (in `Resolved::ops` order) and for the run.
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

    /// Brings `bounds` (one per op of a run) level with the run's ops `ops`: the ops added
    /// since the last call (by program op `next - 1`) get that op's bound, the tree Reduces
    /// the run inserted after it a Reduce's of their tensor.
    pub fn extend(&self, bounds: &mut Vec<OpBound>, ops: &[OpReport], res: &Resolved, next: usize) {
        let mut first = true;
        while let Some(op) = ops.get(bounds.len()) {
            let b = match (first, next.checked_sub(1).and_then(|i| self.ops.get(i))) {
                (true, Some(b)) => b.clone(),
                _ => reduce(&res.machine, bytes_of(res, &op.tensor)),
            };
            first = false;
            bounds.push(b);
        }
    }
}

/// `ceil(bytes / rate)`, 0 for no bytes; saturating.
fn over(bytes: u128, rate: f64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    if !(rate.is_finite() && rate > 0.0) {
        return u64::MAX / 4;
    }
    let c = (bytes as f64 / rate).ceil();
    if c >= u64::MAX as f64 {
        u64::MAX / 4
    } else {
        c as u64
    }
}

/// One link level of the memory chain as the bound sees it.
struct LinkView {
    level: LevelId,
    parents: u64,
    children: u64,
    /// A middle memory (not the DRAM level's): its bytes.
    buffer: Option<u64>,
    /// Per direction: the fastest parent rate, fastest child rate, least latency.
    down: (f64, f64, u64),
    up: (f64, f64, u64),
}

/// The machine's chain of links, the DRAMs and the PEs.
struct View<'a> {
    m: &'a Machine,
    links: Vec<LinkView>,
    dram: LevelId,
    drams: u64,
    pes: u64,
}

impl<'a> View<'a> {
    fn new(m: &'a Machine) -> View<'a> {
        let topo = Topo::new(m);
        let fastest = |l: &mnsim_arch::machine::Link, kinds: [TransferKind; 2]| {
            let r = kinds.map(|k| l.rate(k));
            (
                r[0].parent.max(r[1].parent),
                r[0].child.max(r[1].child),
                r[0].latency.min(r[1].latency),
            )
        };
        let links = (0..topo.chain.len().saturating_sub(1))
            .filter_map(|i| {
                let (k, c) = (topo.chain[i], topo.chain[i + 1]);
                let level = &m.levels[k];
                let link = m.links.get(&level.name)?;
                Some(LinkView {
                    level: LevelId::of(k),
                    parents: m.nodes_at(k).max(1),
                    children: m.nodes_at(c).max(1),
                    buffer: (i > 0)
                        .then(|| level.memory.as_ref().map(|x| x.bytes))
                        .flatten()
                        .filter(|&b| b > 0),
                    down: fastest(link, [TransferKind::Broadcast, TransferKind::Distribute]),
                    up: fastest(link, [TransferKind::Gather, TransferKind::Reduce]),
                })
            })
            .collect();
        let d = topo.chain.first().copied().unwrap_or(0);
        View {
            m,
            links,
            dram: LevelId::of(d),
            drams: m.nodes_at(d).max(1),
            pes: m.leaf_count().max(1),
        }
    }

    /// Chunks every layout cuts a transfer of `bytes` into: a slice must fit a PE's LM
    /// (`Time` steps), and a middle memory passes at most its size per chunk.
    fn chunks(&self, bytes: u128) -> u64 {
        let lm = u128::from(self.m.leaf_memory_bytes().max(1));
        let per_pe = bytes.div_ceil(u128::from(self.pes));
        let mut c = per_pe.div_ceil(lm).max(1);
        for l in &self.links {
            if let Some(b) = l.buffer {
                let most = bytes.div_ceil(u128::from(l.parents));
                c = c.max(most.div_ceil(u128::from(b)));
            }
        }
        u64::try_from(c).unwrap_or(u64::MAX / 4)
    }

    /// A stage of `bytes` through link `l` in `dir`: the slowest port is at least the
    /// even share of the parent side, and of the child side, at the fastest rates.
    fn stage(l: &LinkView, dir: Dir, bytes: u128) -> u64 {
        let (p, c, _) = match dir {
            Dir::Down => l.down,
            Dir::Up => l.up,
        };
        over(bytes, p * l.parents as f64).max(over(bytes, c * l.children as f64))
    }

    /// A Load (`Down`) or Store (`Up`) of `bytes` (real elements × element bytes).
    fn dram_transfer(&self, dir: Dir, bytes: u128) -> Parts {
        let mut holds = vec![(
            Resource::Dram { level: self.dram },
            over(bytes, self.m.dram.bytes_per_cycle * self.drams as f64),
        )];
        let mut latency = 0u64;
        for l in &self.links {
            holds.push((
                Resource::Port {
                    level: l.level,
                    dir,
                },
                Self::stage(l, dir, bytes),
            ));
            latency = latency.saturating_add(match dir {
                Dir::Down => l.down.2,
                Dir::Up => l.up.2,
            });
        }
        Parts {
            holds,
            latency: latency.saturating_mul(self.chunks(bytes)),
        }
    }

    /// Up to the memory above the PEs and down again (the least a crossing Relayout or
    /// a Reduce does): the lowest link, both ways.
    fn lowest_crossing(&self, bytes: u128) -> Option<Parts> {
        let l = self.links.last()?;
        Some(Parts {
            holds: vec![
                (
                    Resource::Port {
                        level: l.level,
                        dir: Dir::Up,
                    },
                    Self::stage(l, Dir::Up, bytes),
                ),
                (
                    Resource::Port {
                        level: l.level,
                        dir: Dir::Down,
                    },
                    Self::stage(l, Dir::Down, bytes),
                ),
            ],
            latency: l.up.2.saturating_add(l.down.2),
        })
    }

    /// A copy inside every LM: at least the even share of the bytes per PE.
    fn local_copy(&self, bytes: u128) -> Parts {
        let bw = self
            .m
            .levels
            .last()
            .and_then(|l| l.memory.as_ref())
            .map_or(0.0, |x| x.bytes_per_cycle);
        let bw = if bw > 0.0 {
            bw
        } else {
            2.0 * self.m.word_bytes as f64
        };
        Parts {
            holds: vec![(Resource::LocalMemory, over(bytes, bw * self.pes as f64))],
            latency: 0,
        }
    }

    /// A Relayout: the cheaper of a copy inside LM and the least crossing. Which one a
    /// layout takes is not fixed, so no resource is certain to be held.
    fn relayout(&self, bytes: u128) -> OpBound {
        let copy = self.local_copy(bytes).bound(self.m, false);
        match self.lowest_crossing(bytes) {
            Some(c) => {
                let cross = c.bound(self.m, false);
                if cross.cycles < copy.cycles {
                    cross
                } else {
                    copy
                }
            }
            None => copy,
        }
    }

    /// A kernel: its useful FLOP over the peak of the unit that runs it.
    fn kernel(
        &self,
        k: &Kernel,
        inputs: &[&[u64]],
        in_dtypes: &[DType],
        out: DType,
    ) -> Option<Parts> {
        // The rates of the compute dtype, or of the type it is promoted to (docs/kernels.md,
        // precision), as the kernel's cost takes them.
        let out = mnsim_kernels::precision::compute_dtype(k, in_dtypes, out);
        let out_rt = mnsim_kernels::output_shape(k, inputs).ok()?;
        let numel = |d: &[u64]| {
            d.iter()
                .fold(1u128, |a, &x| a.saturating_mul(u128::from(x)))
        };
        let m = self.m;
        let (useful, resource, peak) = if k.is_matmul() {
            let ka = match k {
                Kernel::GeneralMatMul {
                    transpose_a,
                    transpose_b,
                } => {
                    mnsim_kernels::shape::gemm(*transpose_a, *transpose_b, inputs[0], inputs[1])
                        .ok()?
                        .k_axis_a
                }
                _ => inputs[0].len().checked_sub(1)?,
            };
            let useful = match k {
                // A convolution's multiply-adds: 2·N·O·Π output·C/g·Π window.
                Kernel::Conv(c) => c.flops(inputs).ok()?,
                _ => {
                    let kk = u128::from(*inputs[0].get(ka)?);
                    2u128.saturating_mul(numel(&out_rt)).saturating_mul(kk)
                }
            };
            match mnsim_kernels::precision::matrix_rate(m, out) {
                Some((_, f, _)) => {
                    let addr = m.addressable_levels();
                    let li = m.level_index(&m.compute.matrix.level)?;
                    let unit = addr
                        .iter()
                        .find(|a| a.folded.contains(&li))
                        .map_or(li, |a| a.level_index);
                    (
                        useful,
                        Resource::MatrixUnit {
                            level: LevelId::of(unit),
                        },
                        f * m.nodes_at(unit) as f64,
                    )
                }
                None => (
                    useful,
                    Resource::VectorUnit,
                    mnsim_kernels::precision::vector_rate(m, out)?.1 * self.pes as f64,
                ),
            }
        } else {
            let (fin, fout) = k.flops_per_element();
            // Data movement (docs/kernels.md) reports 0 useful FLOP: no compute bound.
            let (fin, fout) = if k.moves_data() { (0, 0) } else { (fin, fout) };
            let useful = numel(inputs[0])
                .saturating_mul(u128::from(fin))
                .saturating_add(numel(&out_rt).saturating_mul(u128::from(fout)));
            (
                useful,
                Resource::VectorUnit,
                mnsim_kernels::precision::vector_rate(m, k.rate_dtype(in_dtypes, out))?.1
                    * self.pes as f64,
            )
        };
        Some(Parts {
            holds: vec![(resource, over(useful, peak))],
            latency: 0,
        })
    }
}

/// Compulsory holds and the path's latency of one way to run an op.
struct Parts {
    holds: Vec<(Resource, u64)>,
    latency: u64,
}

impl Parts {
    /// The op's bound: the slowest hold plus the latency (the cost model's
    /// `max(stage times) + Σ latencies × chunks`). `certain`: every layout holds these
    /// resources (else the holds are left out of the run's sums).
    fn bound(self, m: &Machine, certain: bool) -> OpBound {
        let top = self
            .holds
            .iter()
            .enumerate()
            .max_by_key(|&(i, h)| (h.1, std::cmp::Reverse(i)))
            .map(|(_, h)| *h);
        let slowest = top.map_or(0, |h| h.1);
        let resource = match top {
            Some((r, c)) if c > 0 => describe(r, m).0,
            _ if self.latency > 0 => "latency".to_string(),
            _ => String::new(),
        };
        OpBound {
            cycles: slowest.saturating_add(self.latency),
            resource,
            holds: if certain { self.holds } else { Vec::new() },
        }
    }
}

/// Real bytes of a tensor: its run-time elements × its element bytes.
fn bytes_of(res: &Resolved, tensor: &str) -> u128 {
    res.tensors.get(tensor).map_or(0, |t| {
        t.runtime_dims
            .iter()
            .fold(u128::from(t.dtype.bytes()), |a, &x| {
                a.saturating_mul(u128::from(x))
            })
    })
}

/// The bound of a tree Reduce of `bytes` (one the run inserts after a kernel, or a
/// program's `Reduce`): up over the lowest link and down again, at the least.
pub fn reduce(m: &Machine, bytes: u128) -> OpBound {
    let v = View::new(m);
    v.lowest_crossing(bytes)
        .map_or_else(OpBound::default, |p| p.bound(m, true))
}

/// The bound of every op of `res` and of the run.
pub fn program(res: &Resolved) -> Bound {
    let m = &res.machine;
    let v = View::new(m);
    // Resolution declared every tensor an op names, so lowering holds; were it to fail,
    // every op's bound is 0 (still a bound).
    let p = crate::program::lower(res).ok();
    let mut ops = Vec::with_capacity(res.ops.len());
    for (p, o) in p.iter().flat_map(|p| p.ops.values().map(move |o| (p, o))) {
        let bytes = |t| bytes_of(res, p.name(t));
        let b = match &o.kind {
            OpKind::Load { tensor } => v.dram_transfer(Dir::Down, bytes(*tensor)).bound(m, true),
            OpKind::Store { tensor } => v.dram_transfer(Dir::Up, bytes(*tensor)).bound(m, true),
            OpKind::Broadcast { tensor, .. } => {
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
            OpKind::Reduce { tensor, .. } => reduce(m, bytes(*tensor)),
            OpKind::Free { .. } => OpBound::default(),
            OpKind::Kernel {
                kernel,
                inputs,
                out,
            } => kernel_bound(res, &v, kernel, &names(p, inputs), p.name(*out)),
        };
        ops.push(b);
    }
    ops.resize(res.ops.len(), OpBound::default());
    let mut extra = p.as_ref().map_or_else(Vec::new, |p| capacity(res, p, &v));
    extra.extend(p.as_ref().and_then(|p| replication(res, p, &v)));
    let (cycles, resource) = combine(m, &ops, &extra);
    Bound {
        ops,
        extra,
        cycles,
        resource,
    }
}

fn names<'a>(p: &'a Program, ts: &[crate::program::TensorId]) -> Vec<&'a str> {
    ts.iter().map(|t| p.name(*t)).collect()
}

fn kernel_bound(res: &Resolved, v: &View, k: &Kernel, inputs: &[&str], out: &str) -> OpBound {
    let dims: Option<Vec<&[u64]>> = inputs
        .iter()
        .map(|n| res.tensors.get(*n).map(|t| t.runtime_dims.as_slice()))
        .collect();
    let dtypes: Option<Vec<DType>> = inputs
        .iter()
        .map(|n| res.tensors.get(*n).map(|t| t.dtype))
        .collect();
    let (Some(dims), Some(dtypes), Some(o)) = (dims, dtypes, res.tensors.get(out)) else {
        return OpBound::default();
    };
    v.kernel(k, &dims, &dtypes, o.dtype)
        .map_or_else(OpBound::default, |p| p.bound(v.m, true))
}

/// What LM capacity forces contractions to move: for a MatMul whose operands are
/// both loaded from DRAM and read by it alone, the DRAMs move at least
/// `W / (2√2 · √S) − S` elements (Irony, Toledo and Tiskin, 2004: `W` multiply-adds,
/// `S` the elements all the LMs hold together), whatever the layouts.
fn capacity(res: &Resolved, p: &Program, v: &View) -> Vec<(Resource, u64)> {
    let mut readers: BTreeMap<&str, usize> = BTreeMap::new();
    let mut loaded: Vec<&str> = Vec::new();
    for id in p.ops.keys() {
        for t in p.inputs(id) {
            *readers.entry(p.name(t)).or_default() += 1;
        }
        if let OpKind::Load { tensor } = &p.ops[id].kind {
            loaded.push(p.name(*tensor));
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
        let (inputs, out) = (names(p, inputs), p.name(*out));
        // The DRAM traffic bound of a contraction's blocking (a convolution reuses its
        // input across the window as well, so it is left out).
        if !k.is_matmul()
            || matches!(k, Kernel::Conv(_))
            || !inputs
                .iter()
                .all(|n| loaded.contains(n) && readers.get(n) == Some(&1))
        {
            continue;
        }
        let (Some(a), Some(flops)) = (
            res.tensors.get(inputs[0]),
            matmul_flops(res, k, &inputs, out),
        ) else {
            continue;
        };
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
/// root-most addressable level `X`. At `X`, every legal layout of a 2-D `c = a·b`
/// (`docs/kernels.md`, the per-level rule) either replicates `a` over `X` (the output
/// splits `N` there, or nothing), or replicates `b` (it splits `M`), or leaves `c`
/// partial over `X` (only `K` is split there), or holds everything under one node of
/// `X`. Bytes reach a node's subtree only through its down port, so over the `D` ports:
/// `D·|a| + |b|`, `|a| + D·|b|`, or `|a| + |b| + D·|c|` (a partial `c` must be reduced
/// over `X` before anything but a Free reads it, and a Reduce leaves the result on every
/// node of `X`), or `|a| + |b|` on one port alone; at least the least of these. Only
/// for operands that come from DRAM alone (written by Loads and moved in place, never
/// computed on the chip).
fn replication(res: &Resolved, p: &Program, v: &View) -> Option<(Resource, u64)> {
    let first = v
        .links
        .first()
        .filter(|l| l.level == v.dram && l.parents > 1)?;
    let top = v.m.addressable_levels().first()?.level_index;
    if top <= v.dram.index() {
        return None;
    }
    let from_dram = |t: crate::program::TensorId| {
        let mut loaded = false;
        for id in p.ops.keys() {
            if p.output(id) != Some(t) {
                continue;
            }
            match &p.ops[id].kind {
                OpKind::Load { .. } => loaded = true,
                OpKind::Relayout { out: None, .. } | OpKind::Broadcast { out: None, .. } => {}
                _ => return false,
            }
        }
        loaded
    };
    // Whether something must read `t` whole (a partial `t` must be reduced first).
    let read = |t: crate::program::TensorId| {
        p.ops.keys().any(|id| {
            p.inputs(id).contains(&t)
                && !matches!(
                    p.ops[id].kind,
                    OpKind::Free { .. } | OpKind::Reduce { .. } | OpKind::Broadcast { .. }
                )
        })
    };
    let d = u128::from(first.parents);
    let mut most = 0u64;
    for o in p.ops.values() {
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
        let two_d = [a, b].iter().all(|&t| {
            res.tensors
                .get(p.name(t))
                .is_some_and(|x| x.runtime_dims.len() == 2)
        });
        if a == b || !two_d || !from_dram(a) || !from_dram(b) {
            continue;
        }
        let (ba, bb) = (bytes_of(res, p.name(a)), bytes_of(res, p.name(b)));
        let bc = if read(c) { bytes_of(res, p.name(c)) } else { 0 };
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
fn matmul_flops(res: &Resolved, k: &Kernel, inputs: &[&str], out: &str) -> Option<u128> {
    let dims: Vec<&[u64]> = inputs
        .iter()
        .map(|n| res.tensors.get(*n).map(|t| t.runtime_dims.as_slice()))
        .collect::<Option<_>>()?;
    let o = res.tensors.get(out)?;
    let ka = match k {
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => {
            mnsim_kernels::shape::gemm(*transpose_a, *transpose_b, dims[0], dims[1])
                .ok()?
                .k_axis_a
        }
        _ => dims[0].len().checked_sub(1)?,
    };
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

/// The run's bound from its ops' bounds: the largest op bound, and every resource's
/// holds summed over the ops (or a larger `extra` lower bound of its own). Returns the
/// cycles and what sets them (a resource, or `op N` when one op's bound does).
pub fn combine(m: &Machine, ops: &[OpBound], extra: &[(Resource, u64)]) -> (u64, String) {
    let mut sums: Vec<(Resource, u64)> = Vec::new();
    for (r, c) in ops.iter().flat_map(|o| o.holds.iter()) {
        match sums.iter_mut().find(|s| s.0 == *r) {
            Some(s) => s.1 = s.1.saturating_add(*c),
            None => sums.push((*r, *c)),
        }
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
