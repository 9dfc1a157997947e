//! The machine as an ECS world: one entity per node of the tree.
//!
//! Every node (board, groups, L2B, L1B, MAB, PE) is an entity with a [`Node`] and a
//! `ChildOf` relation to its parent. Memory-bearing nodes carry a [`Buffer`]; PEs carry
//! their addressable position ([`Pe`]), their local memory ([`Lm`], a real byte buffer
//! in functional mode) and their data-ready cycle ([`Ready`]). Nodes on the network
//! chain carry [`PortStats`]. The clock is a resource.
//!
//! The timeline's resources keep their busy state here: every node with a link carries
//! its ports' [`PortDown`] and [`PortUp`], the DRAM nodes a [`DramPort`], the nodes of
//! a matrix unit's level a [`MatrixUnit`], every PE a [`VectorUnit`] and an [`LmPort`].
//! [`WorldBusy`] reads and writes them through queries when a run places an op.

use crate::ids::Dir;
use crate::timeline::{Busy, Resource};
use bevy_ecs::prelude::*;
use mnsim_arch::Machine;

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

/// The cycle at which the PE's data of the latest transfer was ready.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ready(pub u64);

/// Traffic through a node's port to its children, summed over the run.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    pub bytes_down: u64,
    pub bytes_up: u64,
    pub busy_cycles: u64,
}

/// When a resource of a node is free again, how long it was busy, and the op that held it last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    pub free_at: u64,
    pub busy_cycles: u64,
    pub holder: Option<usize>,
}

macro_rules! occupancy {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name(pub Occupancy);
        impl AsMut<Occupancy> for $name {
            fn as_mut(&mut self) -> &mut Occupancy {
                &mut self.0
            }
        }
        impl AsRef<Occupancy> for $name {
            fn as_ref(&self) -> &Occupancy {
                &self.0
            }
        }
    )*};
}

occupancy!(
    /// A node's ports to its children, downwards.
    PortDown,
    /// A node's ports to its children, upwards.
    PortUp,
    /// A DRAM node's DRAM.
    DramPort,
    /// A node's matrix unit.
    MatrixUnit,
    /// A PE's vector unit.
    VectorUnit,
    /// A PE's LM bandwidth (copies inside LM).
    LmPort,
);

/// The timeline's view of the world: resource state on the nodes' components.
pub struct WorldBusy<'w> {
    sw: &'w mut SimWorld,
}

impl<'w> WorldBusy<'w> {
    pub fn new(sw: &'w mut SimWorld) -> WorldBusy<'w> {
        WorldBusy { sw }
    }

    fn entities(&self, r: Resource) -> &[Entity] {
        let level = match r {
            Resource::Dram { level }
            | Resource::Port { level, .. }
            | Resource::MatrixUnit { level } => level.index(),
            Resource::LocalMemory | Resource::VectorUnit => self.sw.nodes.len().saturating_sub(1),
        };
        self.sw.nodes.get(level).map_or(&[], |v| v.as_slice())
    }

    fn latest<C: Component + AsRef<Occupancy>>(&mut self, r: Resource) -> (u64, Option<usize>) {
        let ids = self.entities(r);
        let w = &self.sw.world;
        ids.iter()
            .filter_map(|&e| w.get::<C>(e).map(|c| *c.as_ref()))
            .max_by_key(|o| o.free_at)
            .map_or((0, None), |o| (o.free_at, o.holder))
    }

    fn occupy<C>(&mut self, r: Resource, task: usize, start: u64, cycles: u64)
    where
        C: Component<Mutability = bevy_ecs::component::Mutable> + AsMut<Occupancy> + Default,
    {
        let ids = self.entities(r).to_vec();
        let until = start.saturating_add(cycles);
        for e in ids {
            // A node meets the resource the first time it is used.
            let mut ent = self.sw.world.entity_mut(e);
            if !ent.contains::<C>() {
                ent.insert(C::default());
            }
            if let Some(mut c) = ent.get_mut::<C>() {
                let o = c.as_mut().as_mut();
                o.busy_cycles = o.busy_cycles.saturating_add(cycles);
                if until >= o.free_at {
                    o.free_at = until;
                    o.holder = Some(task);
                }
            }
        }
    }
}

impl Busy for WorldBusy<'_> {
    fn free_at(&mut self, r: Resource) -> (u64, Option<usize>) {
        match r {
            Resource::Dram { .. } => self.latest::<DramPort>(r),
            Resource::Port { dir: Dir::Down, .. } => self.latest::<PortDown>(r),
            Resource::Port { dir: Dir::Up, .. } => self.latest::<PortUp>(r),
            Resource::LocalMemory => self.latest::<LmPort>(r),
            Resource::MatrixUnit { .. } => self.latest::<MatrixUnit>(r),
            Resource::VectorUnit => self.latest::<VectorUnit>(r),
        }
    }

    fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64) {
        match r {
            Resource::Dram { .. } => self.occupy::<DramPort>(r, task, start, cycles),
            Resource::Port { dir: Dir::Down, .. } => {
                self.occupy::<PortDown>(r, task, start, cycles)
            }
            Resource::Port { dir: Dir::Up, .. } => self.occupy::<PortUp>(r, task, start, cycles),
            Resource::LocalMemory => self.occupy::<LmPort>(r, task, start, cycles),
            Resource::MatrixUnit { .. } => self.occupy::<MatrixUnit>(r, task, start, cycles),
            Resource::VectorUnit => self.occupy::<VectorUnit>(r, task, start, cycles),
        }
    }
}

/// The simulated clock, in cycles.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock(pub u64);

/// The world and the entity handles of its nodes, by level, in tree order.
pub struct SimWorld {
    pub world: World,
    /// `nodes[level][index]`.
    pub nodes: Vec<Vec<Entity>>,
}

impl SimWorld {
    /// Forgets every resource's busy state: the next op meets an idle machine.
    pub fn clear_busy(&mut self) {
        for e in self.nodes.iter().flatten().copied().collect::<Vec<_>>() {
            self.world
                .entity_mut(e)
                .remove::<(PortDown, PortUp, DramPort, MatrixUnit, VectorUnit, LmPort)>();
        }
    }

    /// Builds the world for a machine. Nodes are spawned level by level in tree order,
    /// so the node of level `k` above PE `p` is `p / (leaves under one level-k node)`.
    pub fn build(m: &Machine) -> SimWorld {
        let mut world = World::new();
        world.insert_resource(Clock(0));
        let addr = m.addressable_levels();
        let leaf = m.levels.len() - 1;
        let mut nodes: Vec<Vec<Entity>> = Vec::with_capacity(m.levels.len());
        for (k, level) in m.levels.iter().enumerate() {
            let count = m.nodes_at(k);
            let buffer = level.memory.as_ref().map(|mem| Buffer { bytes: mem.bytes });
            let has_link = m.links.contains_key(&level.name);
            let parents = nodes.last().cloned();
            let per_parent = level.count;
            let ids: Vec<Entity> = if k == leaf {
                let fan: Vec<u64> = addr.iter().map(|a| a.fanout).collect();
                let pe = move |i: u64| {
                    let mut pos = vec![0u64; fan.len()];
                    let mut rem = i;
                    for j in (0..fan.len()).rev() {
                        pos[j] = rem % fan[j];
                        rem /= fan[j];
                    }
                    (
                        Node {
                            level: k as u16,
                            index: i,
                        },
                        Pe { global: i, pos },
                        Lm::default(),
                        Ready(0),
                    )
                };
                match &parents {
                    Some(p) => world
                        .spawn_batch(
                            (0..count).map(|i| (pe(i), ChildOf(p[(i / per_parent) as usize]))),
                        )
                        .collect(),
                    None => world.spawn_batch((0..count).map(pe)).collect(),
                }
            } else {
                (0..count)
                    .map(|i| {
                        let mut e = world.spawn(Node {
                            level: k as u16,
                            index: i,
                        });
                        if let Some(p) = &parents {
                            e.insert(ChildOf(p[(i / per_parent) as usize]));
                        }
                        if let Some(b) = buffer {
                            e.insert(b);
                        }
                        if has_link {
                            e.insert(PortStats::default());
                        }
                        e.id()
                    })
                    .collect()
            };
            nodes.push(ids);
        }
        SimWorld { world, nodes }
    }

    /// The PE entities in global order.
    pub fn pes(&self) -> &[Entity] {
        self.nodes.last().map_or(&[], |v| v.as_slice())
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
        let mut w = SimWorld::build(&m);
        assert_eq!(w.pes().len(), 8192);
        assert_eq!(w.nodes[1].len(), 16); // L2B
        assert_eq!(w.nodes[3].len(), 2048); // MAB
        // PE 8191 is the last PE of the last MAB of the last L1B of the last L2B.
        let pe = w.pes()[8191];
        let p = w.world.get::<Pe>(pe).unwrap().clone();
        assert_eq!(p.pos, vec![15, 7, 15, 3]);
        let mab = w.world.get::<ChildOf>(pe).unwrap().parent();
        assert_eq!(w.world.get::<Node>(mab).unwrap().index, 2047);
        let mut q = w.world.query::<(&Node, &Buffer)>();
        assert_eq!(q.iter(&w.world).count(), 16 + 128); // L2BM and L1BM; PEs have an Lm
        let mut children = w.world.query::<&Children>();
        let l1b = w.nodes[2][0];
        assert_eq!(children.get(&w.world, l1b).unwrap().len(), 16);
    }

    #[test]
    fn mncore2_group_folds_into_l2b_positions() {
        let m = mnsim_arch::preset("mncore2").unwrap();
        let w = SimWorld::build(&m);
        assert_eq!(w.pes().len(), 4096);
        // PE 4095: L2B position 7 = Group 3, L2B 1.
        let p = w.world.get::<Pe>(w.pes()[4095]).unwrap();
        assert_eq!(p.pos, vec![7, 7, 15, 3]);
    }

    #[test]
    fn a_what_if_machine_of_100k_pes_builds() {
        let mut m = mnsim_arch::preset("mncore2").unwrap();
        mnsim_arch::set_knob(&mut m, "levels.MAB.count", 400.0).unwrap();
        let w = SimWorld::build(&m);
        assert_eq!(w.pes().len(), 4 * 2 * 8 * 400 * 4);
    }
}
