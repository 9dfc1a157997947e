//! A bound layout's accessors (shapes, levels, word geometry) and its closed-form
//! counts: per PE, per level (`level_stats`) and the used positions of a level.

use crate::dtype::DType;
use crate::layout::{Class, LevelUse, SubAxis, TensorLayout};

/// Closed-form per-level figures (no element enumeration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelStat {
    pub name: String,
    pub fanout: u64,
    pub replicated: bool,
    /// Positions among siblings that hold data.
    pub used: u64,
    /// Positions among siblings that hold nothing (`fanout - used`).
    pub idle: u64,
    /// Distinct (padded) elements under one used node of this level, all time steps.
    pub elems_per_node: u64,
    /// Distinct LM words under one used node of this level, all time steps.
    pub words_per_node: u64,
    /// Used nodes of this level in the whole (addressable) tree.
    pub nodes_used: u64,
}

impl TensorLayout {
    /// The logical (unpadded) shape.
    pub fn logical_shape(&self) -> &[u64] {
        &self.logical
    }
    /// The padded shape (group products).
    pub fn padded_shape(&self) -> &[u64] {
        &self.padded
    }
    /// Resolved sub-axes per group.
    pub fn groups(&self) -> &[Vec<SubAxis>] {
        &self.groups
    }
    /// Use of every addressable level, root-most first.
    pub fn levels(&self) -> &[LevelUse] {
        &self.levels
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn word_bytes(&self) -> u64 {
        self.word_bytes
    }
    /// Element slots in one word.
    pub fn slots(&self) -> u64 {
        self.slots
    }
    /// LM words one PE's shard spans (max address + 1).
    pub fn footprint_words(&self) -> u64 {
        self.footprint_words
    }

    fn class_product(&self, want: impl Fn(Class) -> bool) -> u64 {
        self.groups
            .iter()
            .flatten()
            .filter(|s| want(s.class))
            .fold(1u64, |a, s| a.saturating_mul(s.size))
    }

    /// Words a PE holds per time step (distinct addresses used).
    pub fn words_per_step(&self) -> u64 {
        self.class_product(|c| c == Class::Mem)
    }
    /// Distinct time steps.
    pub fn time_steps(&self) -> u64 {
        self.class_product(|c| c == Class::Time)
    }
    /// Time steps the layout spans (max step + 1): steps run in sequence.
    pub fn time_span(&self) -> u64 {
        self.time_span
    }
    /// Padded elements one used PE holds over all time steps.
    pub fn elems_per_pe(&self) -> u64 {
        self.class_product(|c| !matches!(c, Class::Level(_)))
    }
    /// Words one used PE holds over all time steps.
    pub fn words_per_pe(&self) -> u64 {
        self.words_per_step().saturating_mul(self.time_steps())
    }
    /// Logical elements.
    pub fn logical_elems(&self) -> u64 {
        self.logical.iter().fold(1u64, |a, &b| a.saturating_mul(b))
    }
    /// Padded elements (one replica).
    pub fn padded_elems(&self) -> u64 {
        self.padded.iter().fold(1u64, |a, &b| a.saturating_mul(b))
    }
    /// Padding positions (one replica).
    pub fn padding_elems(&self) -> u64 {
        self.padded_elems() - self.logical_elems()
    }
    /// Copies of every element (product of replicated fan-outs).
    pub fn replicas(&self) -> u64 {
        self.levels
            .iter()
            .filter(|l| l.replicated)
            .fold(1u64, |a, l| a.saturating_mul(l.fanout))
    }
    /// PEs that hold data, in the whole addressable tree.
    pub fn pes_used(&self) -> u64 {
        self.levels
            .iter()
            .fold(1u64, |a, l| a.saturating_mul(l.used))
    }
    /// Distinct shards (PEs holding different data).
    pub fn distinct_shards(&self) -> u64 {
        self.levels
            .iter()
            .filter(|l| !l.replicated)
            .fold(1u64, |a, l| a.saturating_mul(l.used))
    }

    /// Per-level closed-form figures, root-most first.
    pub fn level_stats(&self) -> Vec<LevelStat> {
        let n = self.levels.len();
        let mut out = Vec::with_capacity(n);
        let mut nodes_used = 1u64;
        for (i, l) in self.levels.iter().enumerate() {
            nodes_used = nodes_used.saturating_mul(l.used);
            // Distinct data under one node: the split levels strictly below it.
            let below = self.levels[i + 1..]
                .iter()
                .filter(|b| !b.replicated)
                .fold(1u64, |a, b| a.saturating_mul(b.used));
            out.push(LevelStat {
                name: l.name.to_string(),
                fanout: l.fanout,
                replicated: l.replicated,
                used: l.used,
                idle: l.fanout - l.used.min(l.fanout),
                elems_per_node: below.saturating_mul(self.elems_per_pe()),
                words_per_node: below.saturating_mul(self.words_per_pe()),
                nodes_used,
            });
        }
        out
    }

    /// The positions of addressable level `i` that hold data, ascending.
    /// Enumerates at most the level's fan-out.
    pub fn used_positions(&self, i: usize) -> Vec<u64> {
        let l = &self.levels[i];
        if l.replicated {
            return (0..l.fanout).collect();
        }
        let axes: Vec<SubAxis> = self
            .groups
            .iter()
            .flatten()
            .filter(|s| s.class == Class::Level(i))
            .copied()
            .collect();
        let mut out = vec![0u64];
        for a in axes {
            out = out
                .iter()
                .flat_map(|&b| (0..a.size).map(move |k| b + k * a.stride))
                .collect();
        }
        out.sort_unstable();
        out
    }
}
