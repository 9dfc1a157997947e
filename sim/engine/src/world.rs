//! The machine as an ECS world: one entity per level, and one per node of the tree
//! that a run touches.
//!
//! Every level is an entity with a [`Level`]; the timeline's resources are per level
//! (an op holds a level's ports, DRAMs or compute units on every node of it at once),
//! so their busy state lives there: a [`LevelBusy`], the timeline's one busy table
//! ([`BusyTable`], the same the pure schedule uses). [`WorldBusy`] routes a resource to
//! its level's table when a run places an op.
//!
//! The PE level's entity carries the PEs' data-ready cycles ([`Ready`], runs of PEs
//! with one cycle).
//!
//! A node (board, groups, L2B, L1B, MAB, PE) is an entity with a [`Node`] and a
//! `ChildOf` relation to its parent. Memory-bearing nodes carry a [`Buffer`]; PEs carry
//! their addressable position ([`Pe`]) and their local memory ([`Lm`], a real byte
//! buffer). Nodes on the network chain carry [`PortStats`]. The clock is a resource.
//!
//! [`Nodes::All`] spawns every node up front (functional mode: every PE has an LM).
//! [`Nodes::Touched`] (timing mode) spawns a node, with its ancestors, the first time
//! an op's data passes through its port: a what-if machine of 10^6 PEs keeps state
//! for the nodes its layouts touch and one entity per level.

use crate::timeline::{Booking, Busy, BusyTable, Resource, Train};
use bevy_ecs::prelude::*;
use mnsim_arch::Machine;
use std::collections::BTreeMap;

/// A node of the tree.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// Index in `Machine::levels`.
    pub level: u16,
    /// Index of this node among all nodes of its level, in tree order.
    pub index: u64,
}

/// A memory of a middle node (PDM, L2BM, L1BM): its capacity.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub bytes: u64,
}

/// A processing element: its index among all PEs and its position at every
/// addressable level (root-most first).
#[derive(Component, Clone, Debug, PartialEq, Eq)]
pub struct Pe {
    pub global: u64,
    pub pos: Vec<u64>,
}

/// A PE's local memory. In functional mode `data` holds the words in use (it grows
/// with the allocator's high-water mark); in timing mode it stays empty.
#[derive(Component, Clone, Debug, Default)]
pub struct Lm {
    pub data: Vec<u8>,
}

/// The cycle at which each PE's data of the latest transfer that involved it was ready,
/// on the PE level's entity: runs of PEs `[first, end)` with one cycle, in PE order. PEs
/// a layout spreads evenly share a run, so a machine of 10^6 PEs keeps a few runs.
#[derive(Component, Clone, Debug, Default, PartialEq, Eq)]
pub struct Ready {
    pub runs: Vec<(u64, u64, u64)>,
}

impl Ready {
    /// The ready cycle of PE `p`, if a transfer has involved it.
    pub fn of(&self, p: u64) -> Option<u64> {
        let i = self.runs.partition_point(|r| r.1 <= p);
        self.runs.get(i).filter(|r| r.0 <= p).map(|r| r.2)
    }

    /// Records the ready cycles of the PEs of a transfer, runs `[first, end)` of a
    /// cycle after `start`, in PE order: those PEs take the new cycles, the others keep
    /// theirs.
    pub fn record(&mut self, ready: &[(u64, u64, u64)], start: u64) {
        let new: Vec<(u64, u64, u64)> = ready
            .iter()
            .map(|&(a, b, c)| (a, b, start.saturating_add(c)))
            .collect();
        if new.is_empty() {
            return;
        }
        // What the new runs leave of the old ones, then both, in PE order.
        let mut out: Vec<(u64, u64, u64)> = Vec::with_capacity(self.runs.len() + new.len());
        for &(a, b, c) in &self.runs {
            let mut from = a;
            let first = new.partition_point(|r| r.1 <= a);
            for r in new[first..].iter().take_while(|r| r.0 < b) {
                if r.0 > from {
                    out.push((from, r.0, c));
                }
                from = from.max(r.1);
            }
            if from < b {
                out.push((from, b, c));
            }
        }
        out.extend(new);
        out.sort_unstable();
        self.runs.clear();
        for r in out {
            match self.runs.last_mut() {
                Some(l) if l.1 == r.0 && l.2 == r.2 => l.1 = r.1,
                _ => self.runs.push(r),
            }
        }
    }
}

/// Traffic through a node's port to its children, summed over the run.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    pub bytes_down: u64,
    pub bytes_up: u64,
    pub busy_cycles: u64,
}

/// The busy state of a level's resources (its ports per direction, its DRAMs, its
/// matrix units; on the PE level also the vector units and the LM bandwidth): the
/// timeline's one [`BusyTable`], on the level's entity.
#[derive(Component, Clone, Debug, Default)]
pub struct LevelBusy(pub BusyTable);

/// The timeline's view of the world: resource state on the level entities' [`LevelBusy`].
pub struct WorldBusy<'w> {
    sw: &'w mut SimWorld,
}

impl<'w> WorldBusy<'w> {
    pub fn new(sw: &'w mut SimWorld) -> WorldBusy<'w> {
        WorldBusy { sw }
    }

    /// The entity of the level whose resource `r` is.
    fn entity(&self, r: Resource) -> Option<Entity> {
        self.sw
            .levels
            .get(level_of(r, self.sw.levels.len()))
            .copied()
    }
}

/// The level (index) whose entity holds resource `r`'s busy state, of `levels`.
fn level_of(r: Resource, levels: usize) -> usize {
    match r {
        Resource::Dram { level }
        | Resource::Port { level, .. }
        | Resource::MatrixUnit { level } => level.index(),
        Resource::LocalMemory | Resource::VectorUnit => levels.saturating_sub(1),
    }
}

impl Busy for WorldBusy<'_> {
    fn earliest(&mut self, r: Resource, at: u64, cycles: u64) -> (u64, Option<usize>) {
        self.entity(r)
            .and_then(|e| self.sw.world.get::<LevelBusy>(e))
            .map_or((at, None), |b| b.0.earliest(r, at, cycles))
    }

    fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64) {
        let Some(e) = self.entity(r) else { return };
        if let Some(mut b) = self.sw.world.get_mut::<LevelBusy>(e) {
            b.0.hold(r, task, start, cycles);
        }
    }

    fn last_end(&mut self, r: Resource) -> u64 {
        self.entity(r)
            .and_then(|e| self.sw.world.get::<LevelBusy>(e))
            .map_or(0, |b| b.0.free_at(r).0)
    }

    fn hold_train(&mut self, r: Resource, task: usize, train: Train<'_>) {
        let Some(e) = self.entity(r) else { return };
        if let Some(mut b) = self.sw.world.get_mut::<LevelBusy>(e) {
            b.0.hold_train(r, task, train);
        }
    }
}

/// The simulated clock, in cycles.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock(pub u64);

/// A level of the tree: the entity that holds its resources' busy state.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// Index in `Machine::levels`.
    pub level: u16,
    /// Nodes of the level in the whole machine.
    pub nodes: u64,
}

/// Which nodes a world spawns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nodes {
    /// Every node, when the world is built (functional mode).
    All,
    /// A node (and its ancestors) when a run first touches it (timing mode).
    Touched,
}

/// How to spawn a node of each level.
#[derive(Clone, Debug)]
struct LevelSpec {
    /// Children per parent.
    per_parent: u64,
    buffer: Option<Buffer>,
    has_link: bool,
}

/// The world, its level entities, and the entities of its nodes by level and index.
pub struct SimWorld {
    pub world: World,
    /// `levels[level]`: the entity of each level, root first.
    pub levels: Vec<Entity>,
    /// `nodes[level]`: index in tree order → entity, for the nodes spawned.
    nodes: Vec<BTreeMap<u64, Entity>>,
    specs: Vec<LevelSpec>,
    /// Fan-out of each addressable level: a PE's position from its index.
    fanouts: Vec<u64>,
}

impl SimWorld {
    /// Forgets every resource's busy state: the next op meets an idle machine.
    pub fn clear_busy(&mut self) {
        for &e in &self.levels {
            // A level nothing booked is left as it is (a measurement touches few).
            let booked = (self.world.get::<LevelBusy>(e)).is_some_and(|b| !b.0.is_empty());
            if booked && let Some(mut b) = self.world.get_mut::<LevelBusy>(e) {
                b.0.reset();
            }
        }
    }

    /// Keeps every booking of every resource from now on ([`SimWorld::bookings`]).
    pub fn log_bookings(&mut self) {
        for &e in &self.levels {
            if let Some(mut b) = self.world.get_mut::<LevelBusy>(e) {
                b.0.log();
            }
        }
    }

    /// Every booking logged, level by level.
    pub fn bookings(&self) -> Vec<Booking> {
        self.levels
            .iter()
            .filter_map(|&e| self.world.get::<LevelBusy>(e))
            .flat_map(|b| b.0.bookings().iter().copied())
            .collect()
    }

    /// Builds the world for a machine: every node ([`Nodes::All`]) or none until touched.
    /// Nodes are numbered level by level in tree order, so the node of level `k` above PE
    /// `p` is `p / (leaves under one level-k node)`.
    pub fn build(m: &Machine, which: Nodes) -> SimWorld {
        let mut world = World::new();
        world.insert_resource(Clock(0));
        let levels = (0..m.levels.len())
            .map(|k| {
                let level = Level {
                    level: k as u16,
                    nodes: m.nodes_at(k),
                };
                let busy = LevelBusy::default();
                if k + 1 == m.levels.len() {
                    world.spawn((level, busy, Ready::default())).id()
                } else {
                    world.spawn((level, busy)).id()
                }
            })
            .collect();
        let specs = m
            .levels
            .iter()
            .map(|level| LevelSpec {
                per_parent: level.count.max(1),
                buffer: level.memory.as_ref().map(|mem| Buffer { bytes: mem.bytes }),
                has_link: m.has_link(&level.name),
            })
            .collect();
        let mut sw = SimWorld {
            world,
            levels,
            nodes: vec![BTreeMap::new(); m.levels.len()],
            specs,
            fanouts: m.addressable_levels().iter().map(|a| a.fanout).collect(),
        };
        if which == Nodes::All {
            for k in 0..m.levels.len() {
                for i in 0..m.nodes_at(k) {
                    sw.node(k, i);
                }
            }
        }
        sw
    }

    /// The entity of node `index` of level `level`, spawned (with its ancestors) if it is
    /// not yet.
    pub fn node(&mut self, level: usize, index: u64) -> Entity {
        if let Some(&e) = self.nodes[level].get(&index) {
            return e;
        }
        let parent =
            (level > 0).then(|| self.node(level - 1, index / self.specs[level].per_parent));
        let spec = &self.specs[level];
        let node = Node {
            level: level as u16,
            index,
        };
        // One bundle per kind of node: a single archetype move per spawn.
        let mut e = if level + 1 == self.specs.len() {
            let mut pos = vec![0u64; self.fanouts.len()];
            let mut rem = index;
            for j in (0..self.fanouts.len()).rev() {
                pos[j] = rem % self.fanouts[j].max(1);
                rem /= self.fanouts[j].max(1);
            }
            let pe = (node, Pe { global: index, pos }, Lm::default());
            match parent {
                Some(p) => self.world.spawn((pe, ChildOf(p))),
                None => self.world.spawn(pe),
            }
        } else {
            match parent {
                Some(p) => self.world.spawn((node, ChildOf(p))),
                None => self.world.spawn(node),
            }
        };
        if level + 1 < self.specs.len() {
            if let Some(b) = spec.buffer {
                e.insert(b);
            }
            if spec.has_link {
                e.insert(PortStats::default());
            }
        }
        let id = e.id();
        self.nodes[level].insert(index, id);
        id
    }

    /// The node's entity if it has been spawned.
    pub fn get_node(&self, level: usize, index: u64) -> Option<Entity> {
        self.nodes.get(level)?.get(&index).copied()
    }

    /// The spawned nodes of a level, in tree order: (index, entity).
    pub fn nodes(&self, level: usize) -> impl Iterator<Item = (u64, Entity)> + '_ {
        self.nodes
            .get(level)
            .into_iter()
            .flat_map(|m| m.iter().map(|(&i, &e)| (i, e)))
    }

    /// The spawned PE entities in global order.
    pub fn pes(&self) -> impl Iterator<Item = Entity> + '_ {
        self.nodes(self.levels.len().saturating_sub(1))
            .map(|(_, e)| e)
    }

    pub fn clock(&self) -> u64 {
        self.world.resource::<Clock>().0
    }

    pub fn set_clock(&mut self, c: u64) {
        self.world.resource_mut::<Clock>().0 = c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mncore1_tree_has_every_node_and_relation() {
        let m = mnsim_arch::preset("mncore1").unwrap();
        let mut w = SimWorld::build(&m, Nodes::All);
        assert_eq!(w.pes().count(), 8192);
        assert_eq!(w.nodes(1).count(), 16); // L2B
        assert_eq!(w.nodes(3).count(), 2048); // MAB
        // PE 8191 is the last PE of the last MAB of the last L1B of the last L2B.
        let pe = w.get_node(4, 8191).unwrap();
        let p = w.world.get::<Pe>(pe).unwrap().clone();
        assert_eq!(p.pos, vec![15, 7, 15, 3]);
        let mab = w.world.get::<ChildOf>(pe).unwrap().parent();
        assert_eq!(w.world.get::<Node>(mab).unwrap().index, 2047);
        let mut q = w.world.query::<(&Node, &Buffer)>();
        assert_eq!(q.iter(&w.world).count(), 16 + 128); // L2BM and L1BM; PEs have an Lm
        let mut children = w.world.query::<&Children>();
        let l1b = w.get_node(2, 0).unwrap();
        assert_eq!(children.get(&w.world, l1b).unwrap().len(), 16);
        let mut levels = w.world.query::<&Level>();
        assert_eq!(levels.iter(&w.world).count(), 5);
    }

    #[test]
    fn mncore2_group_folds_into_l2b_positions() {
        let m = mnsim_arch::preset("mncore2").unwrap();
        let w = SimWorld::build(&m, Nodes::All);
        assert_eq!(w.pes().count(), 4096);
        // PE 4095: L2B position 7 = Group 3, L2B 1.
        let p = w.world.get::<Pe>(w.pes().last().unwrap()).unwrap();
        assert_eq!(p.pos, vec![7, 7, 15, 3]);
    }

    #[test]
    fn a_touched_world_spawns_a_node_with_its_ancestors_only() {
        // 4 Groups × 2 L2B × 64 L1B × 512 MAB × 4 PE = 2^20 PEs.
        let mut m = mnsim_arch::preset("mncore2").unwrap();
        mnsim_arch::set_knob(&mut m, "levels.L1B.count", 64.0).unwrap();
        mnsim_arch::set_knob(&mut m, "levels.MAB.count", 512.0).unwrap();
        let mut w = SimWorld::build(&m, Nodes::Touched);
        assert_eq!(w.pes().count(), 0);
        let last = (1u64 << 20) - 1;
        let pe = w.node(5, last);
        assert_eq!(w.node(5, last), pe, "a node is spawned once");
        let p = w.world.get::<Pe>(pe).unwrap();
        assert_eq!(p.pos, vec![7, 63, 511, 3]);
        // Its chain up to the board, one node per level, and nothing else.
        let mut q = w.world.query::<&Node>();
        assert_eq!(q.iter(&w.world).count(), 6);
        let mab = w.world.get::<ChildOf>(pe).unwrap().parent();
        assert_eq!(w.world.get::<Node>(mab).unwrap().index, last / 4);
        assert_eq!(w.get_node(4, last / 4), Some(mab));
        // A sibling PE shares the ancestors.
        w.node(5, last - 1);
        assert_eq!(q.iter(&w.world).count(), 7);
    }

    #[test]
    fn ready_runs_keep_the_latest_cycle_of_every_pe() {
        // Against a dense table, over random overlapping transfers.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut ready = Ready::default();
        let mut dense: Vec<Option<u64>> = vec![None; 64];
        for _ in 0..200 {
            let (a, len, step) = (rnd(64), 1 + rnd(16), 1 + rnd(3));
            let c = rnd(4);
            let pes: Vec<(u64, u64)> = (0..len)
                .map(|k| a + k * step)
                .filter(|&p| p < 64)
                .map(|p| (p, c + p / 8))
                .collect();
            for &(p, c) in &pes {
                dense[p as usize] = Some(c);
            }
            ready.record(&crate::net::runs_of(pes.into_iter()), 0);
            for p in 0..64 {
                assert_eq!(ready.of(p), dense[p as usize], "PE {p}");
            }
            assert!(ready.runs.windows(2).all(|w| w[0].1 <= w[1].0));
        }
        assert!(ready.runs.len() < 64, "equal neighbours share a run");
    }
}
