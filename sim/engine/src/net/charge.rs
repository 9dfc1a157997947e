//! The charge of a route, shared by both sources of node figures (per-PE facts, the
//! reference, and per-level choices in closed form): stage by stage, each stage's
//! slowest port, the DRAM, a copy inside the LMs, pipelining, chunks and latencies.

use super::{
    Cost, Dir, DramSpec, NodeStat, PeFact, Place, PortUse, Product, Route, Stage, StageKind,
    StageNodes, StageSpec, Topo, cycles, endpoint_stage, pes, rate_of,
};
use crate::ids::LevelId;
use mnsim_arch::{Machine, TransferKind};

/// Where a route's node figures come from.
pub(super) enum Source<'a> {
    /// Per-PE facts (the reference; every node listed, with the PEs' ready cycles).
    Pes([&'a [(u64, PeFact)]; 2]),
    /// Per-level choices (classes of nodes; no per-node lists, no ready cycles).
    Product([&'a Product; 2]),
}

impl Source<'_> {
    fn link(&self, st: &StageSpec, per: u64, child: u64) -> Option<StageNodes> {
        match self {
            Source::Pes(f) => Some(pes::link(f[st.second as usize], st, per, child)),
            Source::Product(p) => p[st.second as usize].link(per, child, st.reduce),
        }
    }

    fn dram(&self, d: &DramSpec, per: u64) -> Option<Vec<NodeStat>> {
        match self {
            Source::Pes(f) => Some(pes::dram(f[d.second as usize], per, d.elem_bytes)),
            Source::Product(p) => p[d.second as usize].dram(per, d.elem_bytes),
        }
    }

    /// A copy inside the LMs: (most bytes of one PE, bytes in all, PEs).
    fn local(&self) -> (u64, u64, u64) {
        match self {
            Source::Pes(f) => f[0].iter().fold((0, 0, 0), |(most, total, n), (_, x)| {
                (most.max(x.bytes), total + x.bytes, n + 1)
            }),
            Source::Product(p) => {
                let n = p[0].pes();
                let most = if n > 0 { p[0].bytes } else { 0 };
                (most, p[0].bytes.saturating_mul(n), n)
            }
        }
    }
}

/// A route being charged, stage by stage.
struct Charge<'a> {
    m: &'a Machine,
    topo: &'a Topo,
    src: &'a Source<'a>,
    /// Whether nodes are listed one by one (per-PE facts): ports and timers are kept.
    per_node: bool,
    out: Cost,
    /// Per stage, its nodes' times: a PE's ready cycle is its slowest stage.
    timers: Vec<pes::Timer>,
    local_bw: Option<f64>,
    latency: u64,
    chunks: u64,
    /// The slowest stage so far (the first of equals).
    best: (u64, Option<Place>),
    /// The chain link of a network a Reduce combines over (its route reduces there): its
    /// stages are the all-reduce's two phases, the second after the first.
    allreduce: Option<usize>,
    /// The all-reduce's first phase (the reduce-scatter up), once charged.
    scattered: u64,
}

impl Charge<'_> {
    fn offer(&mut self, t: u64, place: Place) {
        if t > self.best.0 || self.best.1.is_none() {
            self.best = (t, Some(place));
        }
    }

    /// A stage over the link from `chain[st.link]` to its children.
    fn link(&mut self, st: &StageSpec) -> Option<()> {
        let (m, topo) = (self.m, self.topo);
        let (k, c) = (topo.chain[st.link], topo.link_children(m, st.link));
        let level = &m.levels[k];
        let Some(link) = m.link_at(k) else {
            return Some(());
        };
        let sn: StageNodes = self
            .src
            .link(st, topo.leaves_under[k], topo.leaves_under[c])?;
        let kind = match (st.dir, st.reduce) {
            (Dir::Up, true) => TransferKind::Reduce,
            (Dir::Up, false) => TransferKind::Gather,
            (Dir::Down, _) if sn.any_multi && sn.all_same => TransferKind::Broadcast,
            (Dir::Down, _) => TransferKind::Distribute,
        };
        let rate = rate_of(&link, kind);
        let children = m.levels.get(c).map_or(1, |l| l.count);
        let collective = m.network_at(k).filter(|_| self.allreduce == Some(st.link));
        let time = |x: &NodeStat| match collective {
            Some(n) => n.all_reduce_phase(x.max_child, children).cycles(),
            None => cycles(x.bytes, rate.parent).max(cycles(x.max_child, rate.child)),
        };
        let stage_cycles = sn.nodes.iter().map(time).max().unwrap_or(0);
        let most = sn.nodes.iter().map(|x| x.bytes).max().unwrap_or(0);
        if self.per_node {
            // An all-gather's data is ready after the reduce-scatter before it.
            let after = match (collective, st.dir) {
                (Some(_), Dir::Down) => self.scattered,
                _ => 0,
            };
            self.timers.push(pes::Timer {
                set: st.second as usize,
                per: topo.leaves_under[k],
                nodes: (sn.nodes.iter())
                    .map(|x| (x.n, time(x).saturating_add(after)))
                    .collect(),
            });
            self.out.ports.push(PortUse {
                link: st.link,
                dir: st.dir,
                nodes: sn.nodes.iter().map(|x| (x.n, time(x), x.bytes)).collect(),
            });
        }
        // Chunks: an intermediate buffer smaller than what passes through it.
        if st.link > topo.dram_at
            && let Some(mem) = &level.memory
            && mem.bytes > 0
        {
            self.chunks = self.chunks.max(most.div_ceil(mem.bytes));
        }
        // An all-reduce's phase: its steps each wait a hop; what crosses the links is
        // each child's other shares; the all-gather starts when the reduce-scatter ends.
        let (latency, child_bytes, ends) = match collective {
            Some(n) => {
                let phase = |x: &NodeStat| n.all_reduce_phase(x.max_child, children);
                let sent = |x: &NodeStat| {
                    (x.max_child.div_ceil(children.max(1)))
                        .saturating_mul(children.saturating_sub(1))
                        .saturating_mul(children)
                        .saturating_mul(x.count)
                };
                let steps = sn.nodes.iter().map(|x| phase(x).steps).max().unwrap_or(0);
                let ends = match st.dir {
                    Dir::Up => {
                        self.scattered = stage_cycles;
                        stage_cycles
                    }
                    Dir::Down => self.scattered.saturating_add(stage_cycles),
                };
                (
                    n.latency.saturating_mul(steps),
                    sn.nodes.iter().map(sent).sum(),
                    ends,
                )
            }
            None => (rate.latency, sn.total_child, stage_cycles),
        };
        self.latency += latency;
        let place = Place::Link {
            level: LevelId::of(k),
            dir: st.dir,
        };
        self.offer(ends, place);
        self.out.stages.push(Stage {
            place,
            kind: StageKind::Transfer(kind),
            bytes: sn
                .nodes
                .iter()
                .map(|x| x.bytes.saturating_mul(x.count))
                .sum(),
            child_bytes,
            max_port_bytes: most,
            max_child_bytes: sn.max_child,
            ports: sn
                .nodes
                .iter()
                .filter(|x| x.bytes > 0)
                .map(|x| x.count)
                .sum(),
            cycles: stage_cycles,
            latency,
            chunks: 1,
        });
        Some(())
    }

    /// A copy inside each PE's LM.
    fn local(&mut self) {
        let m = self.m;
        let mem = m.levels.last().and_then(|l| l.memory.as_ref());
        let bw = mem.map_or(0.0, |x| x.bytes_per_cycle);
        let bw = if bw > 0.0 {
            bw
        } else {
            2.0 * m.word_bytes as f64
        };
        self.local_bw = Some(bw);
        let (most, total, ports) = self.src.local();
        let t = cycles(most, bw);
        let place = Place::LocalCopy {
            level: LevelId::of(m.levels.len().saturating_sub(1)),
        };
        self.offer(t, place);
        self.out.stages.push(endpoint_stage(
            place,
            StageKind::Copy,
            total,
            most,
            ports,
            t,
        ));
    }

    /// The DRAM access, first on the way down, last on the way up.
    fn dram(&mut self, d: &DramSpec) -> Option<()> {
        let k = self.topo.chain[self.topo.dram_at];
        let rate = self.m.dram.bytes_per_cycle * d.efficiency.clamp(1e-6, 1.0);
        let nodes = self.src.dram(d, self.topo.leaves_under[k])?;
        let t = nodes
            .iter()
            .map(|x| cycles(x.bytes, rate))
            .max()
            .unwrap_or(0);
        let most = nodes.iter().map(|x| x.bytes).max().unwrap_or(0);
        let total = nodes.iter().map(|x| x.bytes.saturating_mul(x.count)).sum();
        let ports = nodes.iter().filter(|x| x.bytes > 0).map(|x| x.count).sum();
        if self.per_node {
            self.timers.push(pes::Timer {
                set: d.second as usize,
                per: self.topo.leaves_under[k],
                nodes: nodes.iter().map(|x| (x.n, cycles(x.bytes, rate))).collect(),
            });
        }
        let place = Place::Dram {
            level: LevelId::of(k),
            dir: d.dir,
        };
        self.offer(t, place);
        let at = if d.dir == Dir::Down {
            0
        } else {
            self.out.stages.len()
        };
        let stage = endpoint_stage(place, StageKind::Dram, total, most, ports, t);
        self.out.stages.insert(at, stage);
        Some(())
    }
}

/// The charge shared by both sources: the cost (ready cycles left empty), the per-node
/// timers of the per-PE source, the local copy's bandwidth and the path latency.
pub(super) fn charge(
    m: &Machine,
    topo: &Topo,
    route: &Route,
    src: &Source<'_>,
) -> Option<(Cost, Vec<pes::Timer>, Option<f64>, u64)> {
    let mut c = Charge {
        m,
        topo,
        src,
        per_node: matches!(src, Source::Pes(_)),
        out: Cost::default(),
        timers: Vec::new(),
        local_bw: None,
        latency: 0,
        chunks: route.steps.max(1),
        best: (0, None),
        allreduce: (route.stages.iter())
            .find(|s| s.dir == Dir::Up && s.reduce && m.network_at(topo.chain[s.link]).is_some())
            .map(|s| s.link),
        scattered: 0,
    };
    for st in &route.stages {
        c.link(st)?;
    }
    if route.local_copy {
        c.local();
    }
    if let Some(d) = &route.dram {
        c.dram(d)?;
    }
    let mut out = c.out;
    for s in &mut out.stages {
        s.chunks = c.chunks;
    }
    let lat = c.latency.saturating_mul(c.chunks);
    out.cycles = c.best.0.saturating_add(lat);
    out.bottleneck = (c.best.1).and_then(|b| out.stages.iter().position(|s| s.place == b));
    Some((out, c.timers, c.local_bw, lat))
}
