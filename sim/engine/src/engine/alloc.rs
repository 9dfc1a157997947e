//! LM allocation: one allocator serves every PE (SIMD). Every allocation is a new
//! region id, so the timeline can tell a region's users from a later tenant's.
//!
//! Invariant: the words charged never exceed the PE's LM (`Engine::allocate` checks
//! before allocating); a freed region's space is reused in time only after its last
//! user has ended — the allocator reports frees to the op's task, and the timeline
//! enforces it.

use crate::ids::RegionId;
use std::collections::BTreeMap;

/// LM regions in use: first fit over word ranges (the same on every PE: SIMD).
#[derive(Clone, Debug, Default)]
pub(super) struct Alloc {
    /// offset → (words, resident footprint charged against LM, region id).
    pub(super) used: BTreeMap<u64, (u64, u64, RegionId)>,
    pub(super) high_water: u64,
    pub(super) next: u32,
    /// Words charged for tensors placed outside the allocator (the planner's measuring
    /// engine places an op's inputs so): counted against LM, at no address.
    pub(super) placed: u64,
}

impl Alloc {
    pub(super) fn charged(&self) -> u64 {
        (self.used.values().map(|&(_, c, _)| c)).fold(self.placed, u64::saturating_add)
    }
    pub(super) fn alloc(&mut self, words: u64, charge: u64) -> (u64, RegionId) {
        let mut at = 0u64;
        for (&o, &(w, _, _)) in &self.used {
            if o >= at + words {
                break;
            }
            at = at.max(o + w);
        }
        let region = RegionId(self.next);
        self.next = self.next.saturating_add(1);
        self.used.insert(at, (words, charge, region));
        self.high_water = self.high_water.max(at + words);
        (at, region)
    }
    /// A new region id, without allocating.
    pub(super) fn fresh(&mut self) -> RegionId {
        let region = RegionId(self.next);
        self.next = self.next.saturating_add(1);
        region
    }

    /// Charges region `region` `charge` words from now on (a stream giving back a slice).
    pub(super) fn recharge(&mut self, region: RegionId, charge: u64) {
        if let Some(u) = self.used.values_mut().find(|u| u.2 == region) {
            u.1 = charge;
        }
    }

    /// Whether `region` is allocated.
    pub(super) fn holds(&self, region: RegionId) -> bool {
        self.used.values().any(|u| u.2 == region)
    }

    /// Frees the region at `offset`: its id and the words it was charged.
    pub(super) fn free(&mut self, offset: u64) -> Option<(RegionId, u64)> {
        self.used.remove(&offset).map(|(_, c, r)| (r, c))
    }
}

/// Regions freed while an op runs, for its task: before its own allocation (their space
/// is not charged to it) or after (charged to it, released when it ends).
#[derive(Clone, Debug, Default)]
pub(super) struct Frees {
    pub(super) before: Vec<(RegionId, u64)>,
    pub(super) after: Vec<(RegionId, u64)>,
    /// The op has allocated its output: later frees come after it.
    pub(super) allocated: bool,
    /// LM words charged while the op runs.
    pub(super) lm_words: u64,
}
