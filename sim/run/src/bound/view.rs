//! The machine as the bound sees it: the chain of links from the DRAMs to the PEs at
//! their fastest rates, and the compulsory holds and latency of one way to run an op.

use super::OpBound;
use crate::ids::{Dir, LevelId};
use crate::net::Topo;
use crate::timeline::{Resource, describe};
use mnsim_arch::{DType, Machine, TransferKind};
use mnsim_kernels::Kernel;

/// `ceil(bytes / rate)`, 0 for no bytes; saturating.
pub(super) fn over(bytes: u128, rate: f64) -> u64 {
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
pub(super) struct LinkView {
    pub(super) level: LevelId,
    pub(super) parents: u64,
    children: u64,
    /// A middle memory (not the DRAM level's): its bytes.
    buffer: Option<u64>,
    /// Per direction: the fastest parent rate, fastest child rate, least latency.
    down: (f64, f64, u64),
    up: (f64, f64, u64),
}

/// The machine's chain of links, the DRAMs and the PEs.
pub(super) struct View<'a> {
    pub(super) m: &'a Machine,
    pub(super) links: Vec<LinkView>,
    pub(super) dram: LevelId,
    pub(super) drams: u64,
    pub(super) pes: u64,
}

impl<'a> View<'a> {
    pub(super) fn new(m: &'a Machine) -> View<'a> {
        let topo = Topo::new(m);
        let fastest = |l: &mnsim_arch::machine::Link, kinds: [TransferKind; 2]| {
            let r = kinds.map(|k| l.rate(k));
            (
                r[0].parent.max(r[1].parent),
                r[0].child.max(r[1].child),
                r[0].latency.min(r[1].latency),
            )
        };
        // The chain from the DRAMs down (the networks between boards count where a
        // Reduce combines on one or an input comes from the host: `network_reduce`,
        // `host_load`).
        let links = (topo.dram_at..topo.chain.len().saturating_sub(1))
            .filter_map(|i| {
                let (k, c) = (topo.chain[i], topo.chain[i + 1]);
                let level = &m.levels[k];
                let link = m.links.get(&level.name)?;
                Some(LinkView {
                    level: LevelId::of(k),
                    parents: m.nodes_at(k).max(1),
                    children: m.nodes_at(c).max(1),
                    buffer: (i > topo.dram_at)
                        .then(|| level.memory.as_ref().map(|x| x.bytes))
                        .flatten()
                        .filter(|&b| b > 0),
                    down: fastest(link, [TransferKind::Broadcast, TransferKind::Distribute]),
                    up: fastest(link, [TransferKind::Gather, TransferKind::Reduce]),
                })
            })
            .collect();
        let d = topo.chain.get(topo.dram_at).copied().unwrap_or(0);
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
    pub(super) fn stage(l: &LinkView, dir: Dir, bytes: u128) -> u64 {
        let (p, c, _) = match dir {
            Dir::Down => l.down,
            Dir::Up => l.up,
        };
        over(bytes, p * l.parents as f64).max(over(bytes, c * l.children as f64))
    }

    /// A Load (`Down`) or Store (`Up`) of `bytes` (real elements × element bytes).
    pub(super) fn dram_transfer(&self, dir: Dir, bytes: u128) -> Parts {
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
    pub(super) fn lowest_crossing(&self, bytes: u128) -> Option<Parts> {
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

    /// The network a Reduce over level `level` (a level index) combines on, if it meets
    /// at one: what every all-reduce must move there, whatever its algorithm
    /// (docs/model.md, many boards). Each network node's children hold at least the
    /// tensor's `bytes` spread over the network's nodes, `n`; every child must receive
    /// at least the other children's part of it, `(P − 1)·n/P`, on its links at once
    /// (`L × β`), and wait a hop.
    pub(super) fn network_reduce(&self, bytes: u128, level: usize) -> Option<(Resource, u64, u64)> {
        let topo = Topo::new(self.m);
        let k = *topo.chain.get(topo.meet_above(level))?;
        let net = self.m.network_at(k)?;
        let p = self.m.levels.get(k + 1)?.count.max(1);
        if p < 2 || bytes == 0 {
            return None;
        }
        let n = bytes / u128::from(self.m.nodes_at(k).max(1));
        let must = n.saturating_mul(u128::from(p - 1)) / u128::from(p);
        let rate = net.bytes_per_cycle * net.topology.links_per_child(p) as f64;
        Some((
            Resource::Port {
                level: LevelId::of(k),
                dir: Dir::Up,
            },
            over(must, rate),
            net.latency,
        ))
    }

    /// What a program input's first Load must bring from the host (docs/model.md, the
    /// host): its bytes over all the host links at once, and the host's latency.
    pub(super) fn host_load(&self, bytes: u128) -> Option<(Resource, u64, u64)> {
        let (hl, h) = self.m.host()?;
        if bytes == 0 {
            return None;
        }
        let links = self.m.nodes_at(hl + 1).max(1) as f64;
        Some((
            Resource::Port {
                level: LevelId::of(hl),
                dir: Dir::Down,
            },
            over(bytes, h.down_bytes_per_cycle * links),
            h.latency,
        ))
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
    pub(super) fn relayout(&self, bytes: u128) -> OpBound {
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
    pub(super) fn kernel(
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
            // A convolution's multiply-adds, or 2 · output · contracted length.
            let useful = k.with_family(|f| f.matrix_flops(inputs, numel(&out_rt)))?;
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
#[derive(Default)]
pub(super) struct Parts {
    holds: Vec<(Resource, u64)>,
    latency: u64,
}

impl Parts {
    /// These holds and one more, with its latency added.
    pub(super) fn with(mut self, extra: Option<(Resource, u64, u64)>) -> Parts {
        if let Some((r, c, lat)) = extra {
            self.holds.push((r, c));
            self.latency = self.latency.saturating_add(lat);
        }
        self
    }

    /// The op's bound: the slowest hold plus the latency (the cost model's
    /// `max(stage times) + Σ latencies × chunks`). `certain`: every layout holds these
    /// resources (else the holds are left out of the run's sums).
    pub(super) fn bound(self, m: &Machine, certain: bool) -> OpBound {
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
