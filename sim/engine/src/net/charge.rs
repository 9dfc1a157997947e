//! The charge of a route, shared by both sources of node figures (per-PE facts, the
//! reference, and per-level choices in closed form): stage by stage, each stage's
//! slowest port, the DRAM, a copy inside the LMs, pipelining, chunks and latencies.

use super::{
    Cost, Dir, DramSpec, NodeStat, PeFact, Place, PortUse, Product, Route, Stage, StageKind,
    StageNodes, StageSpec, Topo, cycles, endpoint_stage, pes, rate_of,
};
use crate::ids::LevelId;
use mnsim_arch::machine::{Algorithm, Collective, Network, Phase};
use mnsim_arch::{Machine, TransferKind};

/// The collectives the engine runs on a network (docs/model.md, many boards).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NetCollective {
    /// A Reduce over the network's children: reduce-scatter up, all-gather down.
    AllReduce,
    /// A crossing whose stage down brings every child the same data.
    AllGather,
}

/// The networks of `route` that run a collective: the first network a Reduce combines
/// over (an all-reduce); each network a crossing goes up and comes down a broadcast
/// (an all-gather). `None` if the source cannot give a stage's nodes.
fn collectives(
    m: &Machine,
    topo: &Topo,
    route: &Route,
    src: &Source<'_>,
) -> Option<Vec<(usize, NetCollective)>> {
    let net = |s: &StageSpec| m.network_at(topo.chain[s.link]).is_some();
    let mut out = Vec::new();
    if let Some(s) = (route.stages.iter()).find(|s| s.dir == Dir::Up && s.reduce && net(s)) {
        out.push((s.link, NetCollective::AllReduce));
    }
    for up in route
        .stages
        .iter()
        .filter(|s| s.dir == Dir::Up && !s.reduce && net(s))
    {
        let Some(down) = (route.stages.iter()).find(|s| s.dir == Dir::Down && s.link == up.link)
        else {
            continue;
        };
        let (k, c) = (topo.chain[down.link], topo.link_children(m, down.link));
        let sn = src.link(down, topo.leaves_under[k], topo.leaves_under[c])?;
        if sn.any_multi && sn.all_same && !out.iter().any(|(l, _)| *l == up.link) {
            out.push((up.link, NetCollective::AllGather));
        }
    }
    Some(out)
}

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

/// What a stage over a link moves: up, a Reduce's partial sums or a gather; down, a
/// broadcast where every node that sends to several children sends them the same data,
/// else a distribution.
fn transfer_kind(st: &StageSpec, sn: &StageNodes) -> TransferKind {
    match (st.dir, st.reduce) {
        (Dir::Up, true) => TransferKind::Reduce,
        (Dir::Up, false) => TransferKind::Gather,
        (Dir::Down, _) if sn.any_multi && sn.all_same => TransferKind::Broadcast,
        (Dir::Down, _) => TransferKind::Distribute,
    }
}

/// A collective run on the network of a stage's link, over its `children`.
struct OnNetwork<'a> {
    net: &'a Network,
    kind: NetCollective,
    children: u64,
    /// The op's own algorithm ([`Route::algorithm`]), else the network's.
    algorithm: Algorithm,
}

impl OnNetwork<'_> {
    /// The phase the collective runs on a stage's ports going `dir`, from a node's
    /// figures: an all-reduce's reduce-scatter up and all-gather down; an all-gather's
    /// steps on the stage down (the shares leave in them, so the stage up runs none).
    fn phase(&self, dir: Dir, x: &NodeStat) -> Phase {
        let children = self.children;
        let run = |c, bytes| self.net.collective_by(self.algorithm, c, bytes, children);
        match (self.kind, dir) {
            (NetCollective::AllReduce, Dir::Up) => run(Collective::AllReduce, x.max_child)[0],
            (NetCollective::AllReduce, Dir::Down) => run(Collective::AllReduce, x.max_child)[1],
            (NetCollective::AllGather, Dir::Up) => Phase::default(),
            (NetCollective::AllGather, Dir::Down) => {
                run(Collective::AllGather, x.max_child.div_ceil(children.max(1)))[0]
            }
        }
    }
}

/// The stage a transfer over a link charges at `place`, taking `cycles` and `latency`:
/// the bytes its nodes send, `child_bytes` crossing to the children, the most one port
/// sends (`max_port_bytes`), and its ports.
fn transfer_stage(
    place: Place,
    kind: TransferKind,
    sn: &StageNodes,
    (cycles, latency): (u64, u64),
    (child_bytes, max_port_bytes): (u64, u64),
) -> Stage {
    Stage {
        place,
        kind: StageKind::Transfer(kind),
        bytes: sn
            .nodes
            .iter()
            .map(|x| x.bytes.saturating_mul(x.count))
            .sum(),
        child_bytes,
        max_port_bytes,
        max_child_bytes: sn.max_child,
        ports: sn
            .nodes
            .iter()
            .filter(|x| x.bytes > 0)
            .map(|x| x.count)
            .sum(),
        cycles,
        latency,
        chunks: 1,
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
    /// The chain links of networks that run a collective, and which: a Reduce's network
    /// is an all-reduce (its stages the two phases, the second after the first); a
    /// crossing that brings every board the same data is an all-gather.
    collectives: Vec<(usize, NetCollective)>,
    /// An all-reduce's first phase (the reduce-scatter up), once charged.
    scattered: u64,
    /// The op's own collective algorithm ([`Route::algorithm`]).
    algorithm: Option<Algorithm>,
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
        let kind = transfer_kind(st, &sn);
        let rate = rate_of(&link, kind);
        let collective = (self.collectives.iter())
            .find(|(l, _)| *l == st.link)
            .and_then(|&(_, coll)| {
                let net = m.network_at(k)?;
                Some(OnNetwork {
                    net,
                    kind: coll,
                    children: m.levels.get(c).map_or(1, |l| l.count),
                    algorithm: self.algorithm.unwrap_or_else(|| net.algorithm()),
                })
            });
        if let Some(n) = &collective
            && !self.out.collectives.iter().any(|(l, _)| l.index() == k)
        {
            self.out.collectives.push((LevelId::of(k), n.algorithm));
        }
        // The phase a collective runs on this stage's ports, from a node's figures.
        let phase = |x: &NodeStat| collective.as_ref().map(|n| n.phase(st.dir, x));
        let time = |x: &NodeStat| match phase(x) {
            Some(p) => p.cycles,
            None => cycles(x.bytes, rate.parent).max(cycles(x.max_child, rate.child)),
        };
        let stage_cycles = sn.nodes.iter().map(time).max().unwrap_or(0);
        let most = sn.nodes.iter().map(|x| x.bytes).max().unwrap_or(0);
        // An all-reduce's all-gather starts when its reduce-scatter ends.
        let after = match (&collective, st.dir) {
            (Some(n), Dir::Down) if n.kind == NetCollective::AllReduce => self.scattered,
            _ => 0,
        };
        if self.per_node {
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
        // A collective's phase: its steps each wait their hops; what crosses the links
        // is what each child sends.
        let (latency, child_bytes, ends) = match &collective {
            Some(n) => {
                let hops = sn.nodes.iter().filter_map(|x| phase(x).map(|p| p.hops));
                let sent = |x: &NodeStat| {
                    phase(x).map_or(0, |p| {
                        (p.sent).saturating_mul(n.children).saturating_mul(x.count)
                    })
                };
                if st.dir == Dir::Up {
                    self.scattered = stage_cycles;
                }
                (
                    n.net.latency.saturating_mul(hops.max().unwrap_or(0)),
                    sn.nodes.iter().map(sent).sum(),
                    after.saturating_add(stage_cycles),
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
        let bytes = (child_bytes, most);
        let stage = transfer_stage(place, kind, &sn, (stage_cycles, latency), bytes);
        self.out.stages.push(stage);
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
        if let (Some(distinct), Dir::Down) = (d.host, d.dir) {
            self.host(distinct, total);
        }
        Some(())
    }

    /// A program input's bytes coming from the host into the boards' DRAMs, before them
    /// on the way down (docs/model.md, the host): each board's part (`total` bytes the
    /// DRAMs read, evenly over the boards) down its own host link; an input the boards
    /// hold copies of (their parts add up to more than its `distinct` bytes) goes once to
    /// one board of each host, then by the network's broadcast to the others.
    fn host(&mut self, distinct: u64, total: u64) {
        let m = self.m;
        let Some((hl, h)) = m.host() else {
            return;
        };
        let Some(net) = m.network_at(hl) else {
            return;
        };
        let boards = m.nodes_at(hl + 1).max(1);
        let per_host = m.levels.get(hl + 1).map_or(1, |l| l.count).max(1);
        let board = total.div_ceil(boards);
        let copies = board.saturating_mul(boards) > distinct && per_host > 1;
        let mut t = cycles(board, h.down_bytes_per_cycle);
        let mut latency = h.latency;
        if copies {
            let b = net.collective(Collective::Broadcast, board, per_host)[0];
            t = t.saturating_add(b.cycles);
            latency = latency.saturating_add(b.hops.saturating_mul(net.latency));
        }
        self.latency += latency;
        let place = Place::Link {
            level: LevelId::of(hl),
            dir: Dir::Down,
        };
        if self.per_node {
            self.timers.push(pes::Timer {
                set: 0,
                per: self.topo.leaves_under[hl + 1],
                nodes: (0..boards).map(|n| (n, t)).collect(),
            });
        }
        self.offer(t, place);
        let kind = if copies {
            TransferKind::Broadcast
        } else {
            TransferKind::Distribute
        };
        let received = board.saturating_mul(boards);
        let mut stage = endpoint_stage(
            place,
            StageKind::Transfer(kind),
            received,
            board,
            m.nodes_at(hl),
            t,
        );
        stage.latency = latency;
        self.out.stages.insert(0, stage);
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
        collectives: collectives(m, topo, route, src)?,
        scattered: 0,
        algorithm: route.algorithm,
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
