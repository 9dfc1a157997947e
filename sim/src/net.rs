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
    /// (PE global index, cycle its data was ready) for every PE that took part.
    pub ready: Vec<(u64, u64)>,
    /// Index in `stages` of the slowest stage.
    pub bottleneck: Option<usize>,
    /// Every stage's use of its link's ports, for port statistics.
    pub ports: Vec<PortUse>,
}

/// One stage's use of the ports of link `link` (`chain[link]` → its children): per
/// node of `chain[link]`, the port's cycles and the distinct bytes it moved.
#[derive(Clone, Debug)]
pub struct PortUse {
    pub link: usize,
    pub dir: Dir,
    pub cycles: Vec<u64>,
    pub bytes: Vec<u64>,
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
    buf.clear();
    buf.extend(items.filter(|x| x.0 != NONE));
    buf.sort_unstable();
    buf.dedup_by_key(|x| x.0);
    let sum = buf.iter().map(|x| x.1).sum();
    let sig = buf.iter().fold(0u64, |s, x| {
        s.wrapping_add(x.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D)
    });
    (sum, sig)
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

/// Charges a transfer. `facts[0]` and `facts[1]` are per-PE facts (the second set is
/// used by stages marked `second`), indexed by PE global index.
pub fn cost(m: &Machine, topo: &Topo, route: &Route, facts: [&[PeFact]; 2]) -> Cost {
    let mut out = Cost::default();
    // Per PE: max port time along its path (per fact set it takes part in).
    let mut pe_time = vec![0u64; topo.pes as usize];
    let mut takes_part = vec![false; topo.pes as usize];
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
        let nk = topo.pes / lk;
        let per = (lk / lc) as usize;
        // First pass: per node distinct bytes, per child bytes, broadcast test.
        let mut pd = vec![0u64; nk as usize];
        let mut maxc = vec![0u64; nk as usize];
        let mut total_child = 0u64;
        let mut max_child_all = 0u64;
        let mut any_multi = false;
        let mut all_same = true;
        for n in 0..nk {
            let base = n * lk;
            let under = &f[base as usize..(base + lk) as usize];
            let parent_keys = under
                .iter()
                .map(|x| (if st.reduce { x.reduced_key } else { x.key }, x.bytes));
            pd[n as usize] = distinct(&mut buf, parent_keys).0;
            // Children.
            child_sig.clear();
            for ci in 0..per as u64 {
                let cb = (base + ci * lc) as usize;
                let child = f[cb..cb + lc as usize].iter().map(|x| (x.key, x.bytes));
                let (b, sig) = distinct(&mut buf, child);
                if b > 0 {
                    child_sig.push((sig, b));
                }
                total_child += b;
                maxc[n as usize] = maxc[n as usize].max(b);
            }
            max_child_all = max_child_all.max(maxc[n as usize]);
            if child_sig.len() > 1 {
                any_multi = true;
                if child_sig.iter().any(|s| *s != child_sig[0]) {
                    all_same = false;
                }
            }
        }
        let kind = match (st.dir, st.reduce) {
            (Dir::Up, true) => TransferKind::Reduce,
            (Dir::Up, false) => TransferKind::Gather,
            (Dir::Down, _) if any_multi && all_same => TransferKind::Broadcast,
            (Dir::Down, _) => TransferKind::Distribute,
        };
        let rate = rate_of(link, kind);
        let mut stage_cycles = 0u64;
        let mut node_time = vec![0u64; nk as usize];
        for n in 0..nk as usize {
            let t = cycles(pd[n], rate.parent).max(cycles(maxc[n], rate.child));
            node_time[n] = t;
            stage_cycles = stage_cycles.max(t);
        }
        for p in 0..topo.pes as usize {
            let fact = f[p];
            if fact.key != NONE {
                takes_part[p] = true;
                pe_time[p] = pe_time[p].max(node_time[p / lk as usize]);
            }
        }
        // Chunks: an intermediate buffer smaller than what passes through it.
        if st.link > 0
            && let Some(mem) = &level.memory
            && mem.bytes > 0
        {
            let most = pd.iter().copied().max().unwrap_or(0);
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
        out.ports.push(PortUse {
            link: st.link,
            dir: st.dir,
            cycles: node_time,
            bytes: pd.clone(),
        });
        out.stages.push(Stage {
            place,
            kind: StageKind::Transfer(kind),
            bytes: pd.iter().sum(),
            child_bytes: total_child,
            max_port_bytes: pd.iter().copied().max().unwrap_or(0),
            max_child_bytes: max_child_all,
            ports: pd.iter().filter(|&&b| b > 0).count() as u64,
            cycles: stage_cycles,
            latency: rate.latency,
            chunks: 1,
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
        for (p, fact) in f.iter().enumerate() {
            if fact.key != NONE {
                let t = cycles(fact.bytes, bw);
                pe_time[p] = pe_time[p].max(t);
                takes_part[p] = true;
                most = most.max(fact.bytes);
                total += fact.bytes;
                ports += 1;
            }
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
        let nk = topo.pes / lk;
        let rate = m.dram.bytes_per_cycle * d.efficiency.clamp(1e-6, 1.0);
        let mut most = 0u64;
        let mut total = 0u64;
        let mut ports = 0u64;
        let mut node_time = vec![0u64; nk as usize];
        for n in 0..nk {
            let under = &f[(n * lk) as usize..((n + 1) * lk) as usize];
            let b = distinct(
                &mut buf,
                under.iter().map(|x| (x.key, x.valid * d.elem_bytes)),
            )
            .0;
            node_time[n as usize] = cycles(b, rate);
            most = most.max(b);
            total += b;
            ports += (b > 0) as u64;
        }
        for p in 0..topo.pes as usize {
            if f[p].key != NONE {
                takes_part[p] = true;
                pe_time[p] = pe_time[p].max(node_time[p / lk as usize]);
            }
        }
        let t = node_time.iter().copied().max().unwrap_or(0);
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
    out.ready = (0..topo.pes)
        .filter(|&p| takes_part[p as usize])
        .map(|p| (p, pe_time[p as usize].saturating_add(lat)))
        .collect();
    out
}
