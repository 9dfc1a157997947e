//! Machine descriptions: the tree of levels, memories, link rates, DRAM and compute.
//!
//! A machine is a list of levels from the root down. Each level has a fan-out
//! (`count` children per parent), may be addressable by layouts or not (an unaddressable
//! level folds into the addressable level below it: mncore2's `Group` makes the L2B
//! positions run 0..7 across the board), and may own a memory. The link of a level is
//! the port from that level's memory down to the memories of the next memory-bearing
//! level below it (the `L1B` link is L1BM → its 64 PEs' LMs).

use crate::dtype::DType;
use crate::energy::Energy;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

mod collective;
mod network;
mod validate;

pub use network::{Algorithm, Collective, HostLink, Network, Phase, Topology, collective};

/// A whole machine. Every number in it is a what-if knob (see [`crate::knobs`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Clock in GHz (cycles per nanosecond); used only to turn cycles into time.
    pub clock_ghz: f64,
    /// Bytes in one memory word of the leaf memory (MN-Core: a long word, 8 bytes).
    pub word_bytes: u64,
    /// Levels from the root down; the first is the root (count 1), the last holds the PEs.
    pub levels: Vec<Level>,
    /// Per link level (by level name): rates of the port from its memory to its children.
    pub links: BTreeMap<String, Link>,
    /// Per level above the DRAM level (by level name): the network joining its children
    /// (boards in a node, nodes in a zone). Empty for one board.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub networks: BTreeMap<String, Network>,
    pub dram: Dram,
    pub compute: Compute,
    /// Energy coefficients (`energy.…` knobs); empty when the file gives none.
    #[serde(default, skip_serializing_if = "Energy::is_empty")]
    pub energy: Energy,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    pub name: String,
    /// Fan-out: nodes of this level per node of the level above.
    pub count: u64,
    /// Whether layouts may name this level. An unaddressable level folds into the
    /// addressable level below it.
    #[serde(default = "yes")]
    pub addressable: bool,
    #[serde(default)]
    pub memory: Option<Memory>,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub name: String,
    pub bytes: u64,
    /// Local read/write bandwidth in bytes per cycle (copies inside the memory).
    /// 0 = two words per cycle.
    #[serde(default)]
    pub bytes_per_cycle: f64,
}

/// The four kinds of traffic a port carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransferKind {
    /// Down: every receiving child gets the same bytes (multicast).
    Broadcast,
    /// Down: children get different bytes.
    Distribute,
    /// Up: children's different bytes are collected.
    Gather,
    /// Up: children's partials are combined on the way.
    Reduce,
}

impl TransferKind {
    pub const ALL: [TransferKind; 4] = [
        TransferKind::Broadcast,
        TransferKind::Distribute,
        TransferKind::Gather,
        TransferKind::Reduce,
    ];
    pub fn name(self) -> &'static str {
        match self {
            TransferKind::Broadcast => "broadcast",
            TransferKind::Distribute => "distribute",
            TransferKind::Gather => "gather",
            TransferKind::Reduce => "reduce",
        }
    }
}

/// Rates of one link level, per transfer kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub broadcast: Rate,
    pub distribute: Rate,
    pub gather: Rate,
    pub reduce: Rate,
}

impl Link {
    pub fn rate(&self, kind: TransferKind) -> &Rate {
        match kind {
            TransferKind::Broadcast => &self.broadcast,
            TransferKind::Distribute => &self.distribute,
            TransferKind::Gather => &self.gather,
            TransferKind::Reduce => &self.reduce,
        }
    }
}

/// Port rates in bytes per cycle, and a latency in cycles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    /// Distinct bytes per cycle on the parent side of the port.
    pub parent: f64,
    /// Bytes per cycle into (or out of) each child.
    pub child: f64,
    /// Cycles from the first byte leaving to the first byte arriving.
    pub latency: u64,
}

/// Off-chip memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dram {
    /// The level whose every node owns one DRAM (mncore2: `Group`; else the root).
    pub level: String,
    /// Capacity of one DRAM.
    pub bytes: u64,
    /// Bandwidth of one DRAM in bytes per cycle, at full burst efficiency.
    pub bytes_per_cycle: f64,
    /// Bytes per burst: contiguous runs shorter than this waste bandwidth.
    pub burst_bytes: u64,
}

/// Compute rates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compute {
    /// Vector unit: FLOP per cycle per PE, per dtype.
    pub vector: BTreeMap<DType, f64>,
    pub matrix: MatrixUnit,
}

/// The matrix unit: one per node of `level`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixUnit {
    pub level: String,
    /// FLOP per cycle per unit, per dtype.
    pub flops: BTreeMap<DType, f64>,
    /// Tile the unit works on per dtype; operands are padded up to it.
    pub tile: BTreeMap<DType, Tile>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tile {
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

/// An addressable level as layouts see it: unaddressable levels above it folded in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrLevel {
    pub name: String,
    /// Positions among siblings as layouts address them (folded fan-out).
    pub fanout: u64,
    /// Index in `Machine::levels` of this level.
    pub level_index: usize,
    /// Indices in `Machine::levels` folded into this one (unaddressable ones above it,
    /// then itself), root-most first.
    pub folded: Vec<usize>,
}

impl Machine {
    /// The addressable levels, root-most first, with unaddressable levels folded into
    /// the addressable level below. An unaddressable level with no addressable level
    /// below it is an error caught by validation.
    pub fn addressable_levels(&self) -> Vec<AddrLevel> {
        (self.addressable_folds())
            .map(|(first, i, fanout)| AddrLevel {
                name: self.levels[i].name.clone(),
                fanout,
                level_index: i,
                folded: (first..=i).collect(),
            })
            .collect()
    }

    /// The names and folded fan-outs of the addressable levels, root-most first
    /// ([`Machine::addressable_levels`] without building them: binding a layout reads
    /// them for every layout it binds).
    pub fn addressable_fanouts(&self) -> impl Iterator<Item = (&str, u64)> {
        (self.addressable_folds()).map(|(_, i, fanout)| (self.levels[i].name.as_str(), fanout))
    }

    /// Per addressable level, root-most first: the first of the levels folded into it,
    /// its own index, and its folded fan-out (the product of those levels' counts).
    fn addressable_folds(&self) -> impl Iterator<Item = (usize, usize, u64)> {
        let (mut first, mut fold) = (0usize, 1u64);
        self.levels.iter().enumerate().filter_map(move |(i, l)| {
            fold = fold.saturating_mul(l.count);
            if !l.addressable {
                return None;
            }
            let out = (first, i, fold);
            (first, fold) = (i + 1, 1);
            Some(out)
        })
    }

    /// The names of the addressable levels, root-most first ([`Machine::addressable_levels`]
    /// without building them: a legality check reads them for every layout it checks).
    pub fn addressable_names(&self) -> impl Iterator<Item = &str> {
        self.levels
            .iter()
            .filter(|l| l.addressable)
            .map(|l| l.name.as_str())
    }

    /// How many levels are addressable ([`Machine::addressable_levels`]' length, without
    /// building them).
    pub fn addressable_count(&self) -> usize {
        self.levels.iter().filter(|l| l.addressable).count()
    }

    /// The position among the addressable levels of the one that level `i` folds into
    /// (the first addressable level at or below it), if any.
    pub fn addressable_of(&self, i: usize) -> Option<usize> {
        let at = (i..self.levels.len()).find(|&j| self.levels[j].addressable)?;
        Some(self.levels[..at].iter().filter(|l| l.addressable).count())
    }

    /// Index of a level by name.
    pub fn level_index(&self, name: &str) -> Option<usize> {
        self.levels.iter().position(|l| l.name == name)
    }

    /// Number of leaf nodes (PEs) in the whole machine.
    pub fn leaf_count(&self) -> u64 {
        self.levels
            .iter()
            .fold(1u64, |a, l| a.saturating_mul(l.count))
    }

    /// Number of nodes of level `i` in the whole machine.
    pub fn nodes_at(&self, i: usize) -> u64 {
        self.levels[..=i]
            .iter()
            .fold(1u64, |a, l| a.saturating_mul(l.count))
    }

    /// Bytes of the leaf (PE) memory.
    pub fn leaf_memory_bytes(&self) -> u64 {
        self.levels
            .last()
            .and_then(|l| l.memory.as_ref())
            .map_or(0, |m| m.bytes)
    }
}

/// A machine that cannot be loaded or is inconsistent. `line`/`column` point into the
/// machine's RON text when known; `path` names the offending field as a knob-style
/// dotted path (`links.L1B.distribute.parent`) when the error is about one field.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", render_error(self))]
pub struct MachineError {
    pub message: String,
    pub path: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
}

fn render_error(e: &MachineError) -> String {
    match (e.line, e.column) {
        (Some(l), Some(c)) => format!("{l}:{c}: {}", e.message),
        (Some(l), None) => format!("{l}: {}", e.message),
        _ => e.message.clone(),
    }
}

impl MachineError {
    /// An error with a message only.
    pub fn new(message: impl Into<String>) -> Self {
        MachineError {
            message: message.into(),
            path: None,
            line: None,
            column: None,
        }
    }

    /// An error about the field at `path`.
    pub fn at_path(path: impl Into<String>, message: impl Into<String>) -> Self {
        MachineError {
            path: Some(path.into()),
            ..MachineError::new(message)
        }
    }

    /// The same error, placed at `line:column` of the source text.
    pub fn with_position(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }
}

/// The most PEs a machine may have: per-PE state of larger machines does not fit a
/// workstation's memory.
pub const MAX_PES: u64 = 1 << 24;

/// The largest link latency, in cycles: latencies are summed over levels and multiplied
/// by chunk counts, which must not overflow.
pub const MAX_LATENCY: u64 = 1 << 32;

/// A number as messages show it: plain when readable (`128`, `0.75`), in exponent form
/// when tiny or huge (`1e-300`).
#[derive(Clone, Copy, Debug)]
pub struct Num(pub f64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if v == 0.0 || !v.is_finite() || (1e-4..1e16).contains(&v.abs()) {
            write!(f, "{v}")
        } else {
            write!(f, "{v:e}")
        }
    }
}

/// The smallest rate or clock a machine may have: below it, cycle counts of ordinary
/// tensors overflow what a report can hold exactly.
pub const MIN_RATE: f64 = 1e-6;

impl Machine {
    /// Number of matrix units in the whole machine (one per node of `compute.matrix.level`).
    pub fn matrix_units(&self) -> u64 {
        self.level_index(&self.compute.matrix.level)
            .map_or(0, |i| self.nodes_at(i))
    }

    /// The level a link at level `i` sends to: the next memory-bearing level below `i`;
    /// for a network, the level it joins (the one below `i`).
    pub fn link_target(&self, i: usize) -> Option<usize> {
        if self.network_at(i).is_some() {
            return (i + 1 < self.levels.len()).then_some(i + 1);
        }
        (i + 1..self.levels.len()).find(|&j| self.levels[j].memory.is_some())
    }

    /// The network of level `i`, if it has one.
    pub fn network_at(&self, i: usize) -> Option<&Network> {
        self.networks.get(&self.levels.get(i)?.name)
    }

    /// The link of level `i` as the tree charges it: its link, or its network's derived
    /// link ([`Network::tree_link`]) for the children it joins.
    pub fn link_at(&self, i: usize) -> Option<Cow<'_, Link>> {
        let level = self.levels.get(i)?;
        if let Some(l) = self.links.get(&level.name) {
            return Some(Cow::Borrowed(l));
        }
        let n = self.networks.get(&level.name)?;
        let children = self.levels.get(i + 1).map_or(1, |c| c.count);
        Some(Cow::Owned(n.tree_link(children)))
    }

    /// Whether the level named `name` has a link or a network.
    pub fn has_link(&self, name: &str) -> bool {
        self.links.contains_key(name) || self.networks.contains_key(name)
    }

    /// The host's link and the index of the network level it stands on: the deepest
    /// network that gives one (docs/model.md, the host); `None` where the program's
    /// inputs start in the boards' DRAMs (its `inputs` 0: the link carries nothing).
    pub fn host(&self) -> Option<(usize, &HostLink)> {
        (0..self.levels.len())
            .rev()
            .find_map(|i| Some((i, self.network_at(i)?.host.as_ref()?)))
            .filter(|(_, h)| h.inputs > 0)
    }

    /// Index of the level that owns the DRAM, if it names a level.
    pub fn dram_level_index(&self) -> Option<usize> {
        self.level_index(&self.dram.level)
    }
}
