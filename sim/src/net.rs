//! The tree network and its cycle model (docs/model.md).
//!
//! A transfer is described per PE by a [`PeFact`]: which data the PE holds (a key:
//! equal keys = identical bytes), how many LM bytes that is, and how many real
//! (unpadded) elements. Timing mode derives the facts in closed form from the layout;
//! functional mode counts them while it moves the bytes. [`cost`] then charges every
//! stage the same way in both modes:
//!
//! - at every port (a memory node to the memories of its children) it counts the
//!   **distinct** bytes the node sends (a copy for several children is sent once) and
//!   the bytes each child receives; port time = max(distinct / parent rate,
//!   max child bytes / child rate), with the rates of the port's kind;
//! - a stage's time is its slowest port; stages pipeline, so
//!   cycles = max(stage times, DRAM time) + Σ latencies on the path × chunks;
//! - a node whose buffer is smaller than what passes through it, or a layout with
//!   `Time` steps, cuts the transfer into chunks; each chunk pays the path latency.

use crate::ids::LevelId;
use crate::timeline::Resource;
use mnsim_arch::machine::{Link, Rate};
use mnsim_arch::{Machine, TransferKind};
use mnsim_reports::StageReport;

/// Marks a PE that takes no part in a transfer.
pub const NONE: u64 = u64::MAX;

/// What one PE contributes to (or receives from) a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeFact {
    /// Identity of the PE's data: equal keys hold identical bytes. [`NONE`] = no part.
    pub key: u64,
    /// Identity after combining over the reduced level (reduce stages); else `key`.
    pub reduced_key: u64,
    /// LM bytes of the PE's shard (whole words).
    pub bytes: u64,
    /// Real (unpadded) elements in the shard.
    pub valid: u64,
}

impl PeFact {
    pub const IDLE: PeFact = PeFact {
        key: NONE,
        reduced_key: NONE,
        bytes: 0,
        valid: 0,
    };
}

pub use crate::ids::Dir;

/// The memory chain of a machine: the levels data passes through, from the DRAM
/// level down to the PEs, and what each link connects.
#[derive(Clone, Debug)]
pub struct Topo {
    /// Physical level indices with a memory (or the DRAM), root-most first; the last is the leaf.
    pub chain: Vec<usize>,
    /// PEs under one node of each physical level.
    pub leaves_under: Vec<u64>,
    pub pes: u64,
}

impl Topo {
    pub fn new(m: &Machine) -> Topo {
        let d = m.level_index(&m.dram.level).unwrap_or(0);
        let chain: Vec<usize> = (d..m.levels.len())
            .filter(|&k| k == d || m.levels[k].memory.is_some())
            .collect();
        let pes = m.leaf_count();
        let leaves_under = (0..m.levels.len())
            .map(|k| pes / m.nodes_at(k).max(1))
            .collect();
        Topo {
            chain,
            leaves_under,
            pes,
        }
    }

    /// Index in `chain` of the memory level where data crossing addressable level
    /// `level_index` (a physical level index) must meet: the deepest chain level above it.
    pub fn meet_above(&self, level_index: usize) -> usize {
        self.chain
            .iter()
            .rposition(|&k| k < level_index)
            .unwrap_or(0)
    }
}

/// One stage of a transfer: the link from `chain[link]` to `chain[link + 1]`.
#[derive(Clone, Copy, Debug)]
pub struct StageSpec {
    pub link: usize,
    pub dir: Dir,
    /// Combine on the way up at this stage (the parent side counts reduced keys).
    pub reduce: bool,
    /// Use the second fact set (the destination of a relayout, the result of a reduce).
    pub second: bool,
}

/// Where a stage runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    /// The ports of `level`'s nodes to their children.
    Link { level: LevelId, dir: Dir },
    /// The DRAMs of `level` (read: `Down`, written: `Up`).
    Dram { level: LevelId, dir: Dir },
    /// A copy inside the LMs of the PEs (`level` is the leaf).
    LocalCopy { level: LevelId },
    /// A kernel on the compute units of `level` (the PE: vector unit; above: matrix unit).
    Compute { level: LevelId, leaf: bool },
}

impl Place {
    /// The resource a stage here occupies.
    pub fn resource(self) -> Resource {
        match self {
            Place::Link { level, dir } => Resource::Port { level, dir },
            Place::Dram { level, .. } => Resource::Dram { level },
            Place::LocalCopy { .. } => Resource::LocalMemory,
            Place::Compute { leaf: true, .. } => Resource::VectorUnit,
            Place::Compute { level, .. } => Resource::MatrixUnit { level },
        }
    }
}

/// What a stage does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StageKind {
    Transfer(TransferKind),
    Dram,
    Copy,
    Compute,
}

/// One pipelined stage of an op, typed; [`Stage::report`] turns it into the report model once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stage {
    pub place: Place,
    pub kind: StageKind,
    pub bytes: u64,
    pub child_bytes: u64,
    pub max_port_bytes: u64,
    pub max_child_bytes: u64,
    pub ports: u64,
    pub cycles: u64,
    pub latency: u64,
    pub chunks: u64,
}

impl Stage {
    /// The level's name as reports write it (`L1B`, `DRAM`, `PE`, `MAB`).
    pub fn level_name(&self, m: &Machine) -> String {
        let name = |l: LevelId| {
            m.levels
                .get(l.index())
                .map_or_else(|| "?".to_string(), |x| x.name.clone())
        };
        match self.place {
            Place::Link { level, .. } => name(level),
            Place::Dram { .. } => "DRAM".to_string(),
            Place::LocalCopy { level } | Place::Compute { level, .. } => name(level),
        }
    }

    /// The stage in the report model.
    pub fn report(&self, m: &Machine) -> StageReport {
        let (direction, kind) = match (self.place, self.kind) {
            (Place::Link { dir, .. } | Place::Dram { dir, .. }, StageKind::Transfer(k)) => {
                (dir.name(), k.name())
            }
            (Place::Link { dir, .. } | Place::Dram { dir, .. }, _) => (dir.name(), "dram"),
            (_, StageKind::Copy) => ("local", "copy"),
            (_, _) => ("local", "compute"),
        };
        StageReport {
            level: self.level_name(m),
            direction: direction.to_string(),
            kind: kind.to_string(),
            bytes: self.bytes,
            child_bytes: self.child_bytes,
            max_port_bytes: self.max_port_bytes,
            max_child_bytes: self.max_child_bytes,
            ports: self.ports,
            cycles: self.cycles,
            latency: self.latency,
            chunks: self.chunks,
        }
    }

    /// How ops name the stage that set their time (`L1B down distribute`, `DRAM`,
    /// `PE local copy`, `MAB local compute`).
    pub fn bottleneck_name(&self, m: &Machine) -> String {
        match self.place {
            Place::Dram { .. } => "DRAM".to_string(),
            _ => self.report(m).label(),
        }
    }
}

/// The result of charging a transfer.
#[derive(Clone, Debug, Default)]
pub struct Cost {
    pub stages: Vec<Stage>,
    pub cycles: u64,
    /// The cycle every PE that took part had its data ready, as runs of PEs
    /// `[first, end)` with one cycle, in PE order (a layout's PEs share a few runs).
    pub ready: Vec<(u64, u64, u64)>,
    /// Index in `stages` of the slowest stage.
    pub bottleneck: Option<usize>,
    /// Every stage's use of its link's ports, for port statistics.
    pub ports: Vec<PortUse>,
}

/// One stage's use of the ports of link `link` (`chain[link]` → its children): per
/// node of `chain[link]` that takes part, (node index, the port's cycles, the distinct
/// bytes it moved), in node order. Nodes no PE under them takes part in are left out.
#[derive(Clone, Debug)]
pub struct PortUse {
    pub link: usize,
    pub dir: Dir,
    pub nodes: Vec<(u64, u64, u64)>,
}

/// Per-PE facts of the PEs that take part in a transfer: (PE global index, fact), in PE
/// order, no fact with key [`NONE`]. A PE left out takes no part: the work is
/// proportional to the PEs a layout touches, not to the machine.
pub type Facts = Vec<(u64, PeFact)>;

/// The facts of a dense per-PE table (index = PE), without the PEs that take no part.
pub fn sparse(dense: &[PeFact]) -> Facts {
    dense
        .iter()
        .enumerate()
        .filter(|(_, f)| f.key != NONE)
        .map(|(p, f)| (p as u64, *f))
        .collect()
}

/// Splits facts sorted by PE into runs of equal `p / per` (the PEs under one node of a
/// level with `per` leaves under each node): (node index, its facts).
fn groups(f: &[(u64, PeFact)], per: u64) -> impl Iterator<Item = (u64, &[(u64, PeFact)])> {
    let per = per.max(1);
    let mut rest = f;
    std::iter::from_fn(move || {
        let first = rest.first()?.0 / per;
        // A node holds at most `per` PEs (distinct, in order): search only those.
        let end = (first + 1).saturating_mul(per);
        let window = rest.len().min(usize::try_from(per).unwrap_or(usize::MAX));
        let n = rest[..window].partition_point(|x| x.0 < end);
        let (g, r) = rest.split_at(n);
        rest = r;
        Some((first, g))
    })
}

fn rate_of(link: &Link, kind: TransferKind) -> &Rate {
    link.rate(kind)
}

fn cycles(bytes: u64, rate: f64) -> u64 {
    if bytes == 0 {
        0
    } else if rate <= 0.0 || !rate.is_finite() {
        u64::MAX / 4
    } else {
        (bytes as f64 / rate).ceil() as u64
    }
}

/// Sum of the values over the distinct keys (NONE skipped), and an order-independent
/// signature of the key set. Sorting a reused buffer: no hashing, no per-call clearing
/// of a large table.
fn distinct(buf: &mut Vec<(u64, u64)>, items: impl Iterator<Item = (u64, u64)>) -> (u64, u64) {
    let sig_of = |k: u64| k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
    let mut items = items.filter(|x| x.0 != NONE).peekable();
    let Some(first) = items.next() else {
        return (0, 0);
    };
    if items.peek().is_none() {
        // One PE (a child that is a PE): no sorting.
        return (first.1, sig_of(first.0));
    }
    buf.clear();
    buf.push(first);
    buf.extend(items);
    // Keys of a layout grow with the PE index: usually sorted already.
    if !buf.is_sorted() {
        buf.sort_unstable();
    }
    buf.dedup_by_key(|x| x.0);
    let sum = buf.iter().map(|x| x.1).sum();
    let sig = buf.iter().fold(0u64, |s, x| s.wrapping_add(sig_of(x.0)));
    (sum, sig)
}

/// One stage's times per node, for the PEs' ready cycles: the fact set it charges, the
/// PEs under one node, and (node, cycles) of every node that takes part, in node order.
struct Timer {
    set: usize,
    per: u64,
    nodes: Vec<(u64, u64)>,
}

/// Every PE that takes part (in a fact set some stage charges), with its slowest stage
/// plus the path latency, as runs of PEs `[first, end)` with one cycle, in PE order.
fn ready_runs(
    facts: [&[(u64, PeFact)]; 2],
    timers: &[Timer],
    local_bw: Option<f64>,
    lat: u64,
) -> Vec<(u64, u64, u64)> {
    let used = |set: usize| timers.iter().any(|t| t.set == set) || (set == 0 && local_bw.is_some());
    let a: &[(u64, PeFact)] = if used(0) { facts[0] } else { &[] };
    let b: &[(u64, PeFact)] = if used(1) { facts[1] } else { &[] };
    let (mut i, mut j) = (0usize, 0usize);
    let mut at = vec![0usize; timers.len()];
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    loop {
        let (pa, pb) = (a.get(i).map(|x| x.0), b.get(j).map(|x| x.0));
        let p = match (pa, pb) {
            (None, None) => break,
            (Some(x), None) | (None, Some(x)) => x,
            (Some(x), Some(y)) => x.min(y),
        };
        let inside = [pa == Some(p), pb == Some(p)];
        let mut t = 0u64;
        for (tm, c) in timers.iter().zip(&mut at) {
            if !inside[tm.set] {
                continue;
            }
            // Every PE of the set lies under a node of the list; PEs come in order.
            let n = p / tm.per.max(1);
            while tm.nodes.get(*c).is_some_and(|x| x.0 < n) {
                *c += 1;
            }
            t = t.max(tm.nodes.get(*c).map_or(0, |x| x.1));
        }
        if inside[0] {
            if let Some(bw) = local_bw {
                t = t.max(cycles(a[i].1.bytes, bw));
            }
            i += 1;
        }
        if inside[1] {
            j += 1;
        }
        let t = t.saturating_add(lat);
        match out.last_mut() {
            Some(r) if r.1 == p && r.2 == t => r.1 = p + 1,
            _ => out.push((p, p + 1, t)),
        }
    }
    out
}

/// Runs of PEs `[first, end)` with one cycle from (PE, cycle) pairs in PE order.
pub fn runs_of(pairs: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    for (p, t) in pairs {
        match out.last_mut() {
            Some(r) if r.1 == p && r.2 == t => r.1 = p + 1,
            _ => out.push((p, p + 1, t)),
        }
    }
    out
}

/// A stage at one end of a transfer (DRAM, a copy inside the LMs, a kernel's compute):
/// no link, so its parent and child figures are the same and it adds no latency.
pub fn endpoint_stage(
    place: Place,
    kind: StageKind,
    bytes: u64,
    most: u64,
    ports: u64,
    cycles: u64,
) -> Stage {
    Stage {
        place,
        kind,
        bytes,
        child_bytes: bytes,
        max_port_bytes: most,
        max_child_bytes: most,
        ports,
        cycles,
        latency: 0,
        chunks: 1,
    }
}

/// A DRAM access of a transfer.
#[derive(Clone, Copy, Debug)]
pub struct DramSpec {
    pub dir: Dir,
    pub elem_bytes: u64,
    /// Burst efficiency of the access pattern, 0 < eff ≤ 1.
    pub efficiency: f64,
    /// Use the second fact set.
    pub second: bool,
}

/// Everything [`cost`] needs besides the facts.
#[derive(Clone, Debug, Default)]
pub struct Route {
    pub stages: Vec<StageSpec>,
    pub dram: Option<DramSpec>,
    /// A copy inside each PE's LM (no network crossing): bytes per PE from the facts.
    pub local_copy: bool,
    /// Sequential steps (the layout's `Time` span): the transfer runs in this many chunks at least.
    pub steps: u64,
}

/// Charges a transfer. `facts[0]` and `facts[1]` are the facts of the PEs that take
/// part (the second set is used by stages marked `second`), in PE order.
pub fn cost(m: &Machine, topo: &Topo, route: &Route, facts: [&[(u64, PeFact)]; 2]) -> Cost {
    let mut out = Cost::default();
    // Per stage, its nodes' times: a PE's ready cycle is its slowest stage.
    let mut timers: Vec<Timer> = Vec::new();
    let mut local_bw = None;
    let mut latency = 0u64;
    let mut chunks = route.steps.max(1);
    let mut best: (u64, Option<Place>) = (0, None);
    let mut buf: Vec<(u64, u64)> = Vec::new();
    let mut child_sig: Vec<(u64, u64)> = Vec::new();

    for st in &route.stages {
        let f = facts[st.second as usize];
        let (k, c) = (topo.chain[st.link], topo.chain[st.link + 1]);
        let lk = topo.leaves_under[k];
        let lc = topo.leaves_under[c];
        let level = &m.levels[k];
        let Some(link) = m.links.get(&level.name) else {
            continue;
        };
        // First pass, per node that takes part: distinct bytes, most bytes to one child,
        // broadcast test.
        let mut per_node: Vec<(u64, u64, u64)> = Vec::new();
        let mut total_child = 0u64;
        let mut max_child_all = 0u64;
        let mut any_multi = false;
        let mut all_same = true;
        for (n, under) in groups(f, lk) {
            let parent_keys = under
                .iter()
                .map(|(_, x)| (if st.reduce { x.reduced_key } else { x.key }, x.bytes));
            let pd = distinct(&mut buf, parent_keys).0;
            // Children.
            child_sig.clear();
            let mut maxc = 0u64;
            for (_, child) in groups(under, lc) {
                let (b, sig) = distinct(&mut buf, child.iter().map(|(_, x)| (x.key, x.bytes)));
                if b > 0 {
                    child_sig.push((sig, b));
                }
                total_child += b;
                maxc = maxc.max(b);
            }
            max_child_all = max_child_all.max(maxc);
            if child_sig.len() > 1 {
                any_multi = true;
                if child_sig.iter().any(|s| *s != child_sig[0]) {
                    all_same = false;
                }
            }
            per_node.push((n, pd, maxc));
        }
        let kind = match (st.dir, st.reduce) {
            (Dir::Up, true) => TransferKind::Reduce,
            (Dir::Up, false) => TransferKind::Gather,
            (Dir::Down, _) if any_multi && all_same => TransferKind::Broadcast,
            (Dir::Down, _) => TransferKind::Distribute,
        };
        let rate = rate_of(link, kind);
        let mut stage_cycles = 0u64;
        let nodes: Vec<(u64, u64, u64)> = per_node
            .iter()
            .map(|&(n, pd, maxc)| {
                let t = cycles(pd, rate.parent).max(cycles(maxc, rate.child));
                stage_cycles = stage_cycles.max(t);
                (n, t, pd)
            })
            .collect();
        timers.push(Timer {
            set: st.second as usize,
            per: lk,
            nodes: nodes.iter().map(|&(n, t, _)| (n, t)).collect(),
        });
        // Chunks: an intermediate buffer smaller than what passes through it.
        let most = nodes.iter().map(|x| x.2).max().unwrap_or(0);
        if st.link > 0
            && let Some(mem) = &level.memory
            && mem.bytes > 0
        {
            chunks = chunks.max(most.div_ceil(mem.bytes));
        }
        latency += rate.latency;
        let place = Place::Link {
            level: LevelId::of(k),
            dir: st.dir,
        };
        if stage_cycles > best.0 || best.1.is_none() {
            best = (stage_cycles, Some(place));
        }
        out.stages.push(Stage {
            place,
            kind: StageKind::Transfer(kind),
            bytes: nodes.iter().map(|x| x.2).sum(),
            child_bytes: total_child,
            max_port_bytes: most,
            max_child_bytes: max_child_all,
            ports: nodes.iter().filter(|x| x.2 > 0).count() as u64,
            cycles: stage_cycles,
            latency: rate.latency,
            chunks: 1,
        });
        out.ports.push(PortUse {
            link: st.link,
            dir: st.dir,
            nodes,
        });
    }

    if route.local_copy {
        let f = facts[0];
        let mem = m.levels.last().and_then(|l| l.memory.as_ref());
        let bw = mem.map_or(0.0, |x| x.bytes_per_cycle);
        let bw = if bw > 0.0 {
            bw
        } else {
            2.0 * m.word_bytes as f64
        };
        let mut most = 0u64;
        let mut total = 0u64;
        let mut ports = 0u64;
        local_bw = Some(bw);
        for &(_, fact) in f {
            most = most.max(fact.bytes);
            total += fact.bytes;
            ports += 1;
        }
        let t = cycles(most, bw);
        let place = Place::LocalCopy {
            level: LevelId::of(m.levels.len().saturating_sub(1)),
        };
        if t > best.0 || best.1.is_none() {
            best = (t, Some(place));
        }
        out.stages.push(endpoint_stage(
            place,
            StageKind::Copy,
            total,
            most,
            ports,
            t,
        ));
    }

    if let Some(d) = route.dram {
        let f = facts[d.second as usize];
        let k = topo.chain[0];
        let lk = topo.leaves_under[k];
        let rate = m.dram.bytes_per_cycle * d.efficiency.clamp(1e-6, 1.0);
        let mut most = 0u64;
        let mut total = 0u64;
        let mut ports = 0u64;
        let mut t = 0u64;
        let mut times: Vec<(u64, u64)> = Vec::new();
        for (n, under) in groups(f, lk) {
            let b = distinct(
                &mut buf,
                under.iter().map(|(_, x)| (x.key, x.valid * d.elem_bytes)),
            )
            .0;
            let node_time = cycles(b, rate);
            times.push((n, node_time));
            t = t.max(node_time);
            most = most.max(b);
            total += b;
            ports += (b > 0) as u64;
        }
        timers.push(Timer {
            set: d.second as usize,
            per: lk,
            nodes: times,
        });
        let place = Place::Dram {
            level: LevelId::of(k),
            dir: d.dir,
        };
        if t > best.0 || best.1.is_none() {
            best = (t, Some(place));
        }
        out.stages.insert(
            if d.dir == Dir::Down {
                0
            } else {
                out.stages.len()
            },
            endpoint_stage(place, StageKind::Dram, total, most, ports, t),
        );
    }

    for s in &mut out.stages {
        s.chunks = chunks;
    }
    let lat = latency.saturating_mul(chunks);
    out.cycles = best.0.saturating_add(lat);
    out.bottleneck = best
        .1
        .and_then(|b| out.stages.iter().position(|s| s.place == b));
    out.ready = ready_runs(facts, &timers, local_bw, lat);
    out
}
