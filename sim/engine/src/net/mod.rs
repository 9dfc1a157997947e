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
use mnsim_arch::machine::{Algorithm, Link, Rate};
use mnsim_arch::{Machine, TransferKind};
use mnsim_reports::StageReport;

mod charge;
mod pes;
mod product;

use charge::{Source, charge};

pub use product::{Choices, Product};

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

/// The memory chain of a machine: the levels data passes through, from the networks
/// between boards (if any) and the DRAM level down to the PEs, and what each link connects.
#[derive(Clone, Debug)]
pub struct Topo {
    /// Physical level indices with a network above the DRAM level, then the DRAM level,
    /// then every level with a memory, root-most first; the last is the leaf.
    pub chain: Vec<usize>,
    /// Index in `chain` of the DRAM level (0 unless networks stand above it): Loads and
    /// Stores run from here down; crossings of boards meet above it.
    pub dram_at: usize,
    /// PEs under one node of each physical level.
    pub leaves_under: Vec<u64>,
    pub pes: u64,
}

impl Topo {
    pub fn new(m: &Machine) -> Topo {
        let d = m.level_index(&m.dram.level).unwrap_or(0);
        let chain: Vec<usize> = (0..d)
            .filter(|&k| m.network_at(k).is_some())
            .chain((d..m.levels.len()).filter(|&k| k == d || m.levels[k].memory.is_some()))
            .collect();
        let dram_at = chain.iter().position(|&k| k == d).unwrap_or(0);
        let pes = m.leaf_count();
        let leaves_under = (0..m.levels.len())
            .map(|k| pes / m.nodes_at(k).max(1))
            .collect();
        Topo {
            chain,
            dram_at,
            leaves_under,
            pes,
        }
    }

    /// The level whose nodes are the children of chain link `link`: the next chain level,
    /// or for a network the level it joins (mncore2_server's Server network joins
    /// Boards, not the Groups that hold the DRAMs).
    pub fn link_children(&self, m: &Machine, link: usize) -> usize {
        let k = self.chain[link];
        if m.network_at(k).is_some() {
            k + 1
        } else {
            self.chain[link + 1]
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
    /// What the same transfer costs done again, where that differs: a program input's
    /// first Load brings it from the host, and a slice of it sent again comes from the
    /// boards' DRAMs (docs/model.md, the host). `None`: the same as the first time.
    pub again: Option<Box<Again>>,
    /// The networks on which the transfer ran a collective (each network's level), and
    /// the algorithm each ran (docs/model.md, many boards); empty when it crossed none.
    pub collectives: Vec<(LevelId, Algorithm)>,
}

/// A transfer's charge done again ([`Cost::again`]).
#[derive(Clone, Debug, Default)]
pub struct Again {
    pub stages: Vec<Stage>,
    pub cycles: u64,
}

impl Again {
    /// The stages and cycles of `c`, as its transfer's charge done again.
    pub fn of(c: Cost) -> Box<Again> {
        Box::new(Again {
            stages: c.stages,
            cycles: c.cycles,
        })
    }
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
    /// A program input's first Load on a machine with a host (docs/model.md, the host):
    /// its distinct bytes, which come over the host's links into the boards' DRAMs.
    pub host: Option<u64>,
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
    /// The algorithm of the collectives it runs on networks (an op's own choice,
    /// docs/model.md, many boards); `None`: each network's own.
    pub algorithm: Option<Algorithm>,
}

/// One node of a stage, or a class of `count` nodes with the same figures (node index
/// `n` is the first's, and only meaningful for a single node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NodeStat {
    pub n: u64,
    /// Distinct bytes through the node's port.
    pub bytes: u64,
    /// The most bytes one of its children receives.
    pub max_child: u64,
    pub count: u64,
}

/// A link stage's nodes and what its children receive.
#[derive(Clone, Debug)]
pub(crate) struct StageNodes {
    pub nodes: Vec<NodeStat>,
    /// Bytes every child receives, summed.
    pub total_child: u64,
    pub max_child: u64,
    /// Some node sends to several children.
    pub any_multi: bool,
    /// Every node that sends to several children sends them all the same data.
    pub all_same: bool,
}

impl StageNodes {
    /// No node yet (every node so far sends its children the same data).
    pub(crate) fn empty() -> StageNodes {
        StageNodes {
            nodes: Vec::new(),
            total_child: 0,
            max_child: 0,
            any_multi: false,
            all_same: true,
        }
    }
}

/// Charges a transfer. `facts[0]` and `facts[1]` are the facts of the PEs that take
/// part (the second set is used by stages marked `second`), in PE order.
pub fn cost(m: &Machine, topo: &Topo, route: &Route, facts: [&[(u64, PeFact)]; 2]) -> Cost {
    let (mut out, timers, local_bw, lat) =
        charge(m, topo, route, &Source::Pes(facts)).expect("per-PE facts charge every stage");
    out.ready = pes::ready_runs(facts, &timers, local_bw, lat);
    out
}

/// Charges a transfer whose fact sets are products of per-level choices, in closed
/// form: the same cycles and stages as [`cost`] on the facts they stand for, without
/// per-node port lists or the PEs' ready cycles (`ports` and `ready` are empty). `None`
/// where the closed form does not apply (nodes that do not fall on the levels'
/// positions, a DRAM stage over shards of varying real elements).
pub fn cost_product(m: &Machine, topo: &Topo, route: &Route, facts: [&Product; 2]) -> Option<Cost> {
    if facts.iter().any(|p| {
        p.levels
            .iter()
            .fold(1u64, |a, l| a.saturating_mul(l.fanout))
            != topo.pes
    }) {
        return None;
    }
    charge(m, topo, route, &Source::Product(facts)).map(|c| c.0)
}
