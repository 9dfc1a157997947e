//! Typed ids: a level of the machine, a direction on the tree, a region of LM.
//!
//! Each index space has its own type, so a level index is never taken for a PE or a
//! node index by mistake.

use serde::{Deserialize, Serialize};

/// A physical level of the machine: an index into `Machine::levels`, root first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LevelId(pub u16);

impl LevelId {
    /// The index into `Machine::levels`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
    /// The level at `Machine::levels[i]`.
    pub fn of(i: usize) -> LevelId {
        LevelId(u16::try_from(i).unwrap_or(u16::MAX))
    }
}

/// A PE: its index among all PEs of the machine, in tree order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PeId(pub u64);

/// A direction of traffic on the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Dir {
    /// From a memory towards the PEs.
    Down,
    /// From the PEs towards a memory.
    Up,
}

impl Dir {
    /// `down` or `up`, as reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Down => "down",
            Dir::Up => "up",
        }
    }
}

/// One allocation of LM: a tensor's region from the op that writes it to the op after
/// which it is freed. Every allocation gets a new id, so a region reused by another
/// tensor is a different `RegionId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RegionId(pub u32);
