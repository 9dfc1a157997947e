//! Networks between boards (and between nodes): the links that join the children of a
//! level above the DRAM level (docs/model.md, many boards).
//!
//! A network is given on the level whose children it joins (`networks.Node` joins the
//! boards of a node). It has a topology, one link's rate per direction and one hop's
//! latency; the tree machinery charges it as a [`Link`] derived from those figures
//! ([`Network::tree_link`]), so a transfer that crosses boards goes up to the network
//! and down again like any crossing of the tree.

use super::{Link, Rate};
use serde::{Deserialize, Serialize};

/// How a network joins its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Topology {
    /// Each child has a link to its two neighbours (one, with two children).
    Ring,
    /// Each child has one link to a non-blocking switch.
    Switch,
    /// Each child has a link to every other child.
    FullyConnected,
}

impl Topology {
    pub const ALL: [Topology; 3] = [Topology::Ring, Topology::Switch, Topology::FullyConnected];

    pub fn name(self) -> &'static str {
        match self {
            Topology::Ring => "ring",
            Topology::Switch => "switch",
            Topology::FullyConnected => "fully connected",
        }
    }

    /// Links each of `children` children has into the network (at least 1).
    pub fn links_per_child(self, children: u64) -> u64 {
        match self {
            Topology::Ring => children.saturating_sub(1).min(2),
            Topology::Switch => 1,
            Topology::FullyConnected => children.saturating_sub(1),
        }
        .max(1)
    }

    /// Hops from a child to the farthest other child (at least 1).
    pub fn diameter(self, children: u64) -> u64 {
        match self {
            Topology::Ring => children / 2,
            Topology::Switch | Topology::FullyConnected => 1,
        }
        .max(1)
    }
}

/// The network joining the children of one level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    pub topology: Topology,
    /// Bytes per cycle of one link, in each direction.
    pub bytes_per_cycle: f64,
    /// Cycles from a byte leaving a child to it arriving one hop away.
    pub latency: u64,
}

impl Network {
    /// The network as the tree charges it, for `children` children: each child sends and
    /// receives on all its links at once (child rate = links per child × link rate), the
    /// network adds no limit of its own (parent rate = children × child rate), and a
    /// transfer waits the latency of the longest route (diameter × hop latency). The
    /// same figures for every kind: a network has no multicast or in-network reduction.
    pub fn tree_link(&self, children: u64) -> Link {
        let child = self.bytes_per_cycle * self.topology.links_per_child(children) as f64;
        let rate = Rate {
            parent: child * children.max(1) as f64,
            child,
            latency: self
                .latency
                .saturating_mul(self.topology.diameter(children)),
        };
        Link {
            broadcast: rate.clone(),
            distribute: rate.clone(),
            gather: rate.clone(),
            reduce: rate,
        }
    }
}

/// One phase of an all-reduce over a network (the reduce-scatter up, or the all-gather
/// down): `steps` steps, each moving `step_bytes` over a link of `rate` bytes per cycle
/// and waiting one hop's latency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    pub steps: u64,
    pub step_bytes: u64,
    pub rate: f64,
}

impl Phase {
    /// The phase's bandwidth term: steps × ⌈bytes a step ÷ rate⌉.
    pub fn cycles(&self) -> u64 {
        if self.step_bytes == 0 {
            return 0;
        }
        let step = (self.step_bytes as f64 / self.rate).ceil();
        let step = if step.is_finite() && step < (u64::MAX / 4) as f64 {
            step as u64
        } else {
            u64::MAX / 4
        };
        self.steps.saturating_mul(step)
    }
}

impl Network {
    /// A phase of the all-reduce of `bytes` held by each of `children` children, by the
    /// algorithm the topology runs: on a ring, `children − 1` steps of a `1/children`
    /// share to the next child at one link's rate; on a switch, one step in which each
    /// child sends its `children − 1` shares down its one link; fully connected, one step
    /// in which each share takes a link of its own. One child: nothing to do.
    pub fn all_reduce_phase(&self, bytes: u64, children: u64) -> Phase {
        let share = bytes.div_ceil(children.max(1));
        let others = children.saturating_sub(1);
        let (steps, step_bytes) = match self.topology {
            Topology::Ring => (others, share),
            Topology::Switch => (others.min(1), share.saturating_mul(others)),
            Topology::FullyConnected => (others.min(1), share),
        };
        Phase {
            steps,
            step_bytes: if steps == 0 { 0 } else { step_bytes },
            rate: self.bytes_per_cycle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_diameters() {
        assert_eq!(Topology::Ring.links_per_child(4), 2);
        assert_eq!(Topology::Ring.links_per_child(2), 1);
        assert_eq!(Topology::Ring.diameter(4), 2);
        assert_eq!(Topology::Ring.diameter(5), 2);
        assert_eq!(Topology::Switch.links_per_child(32), 1);
        assert_eq!(Topology::FullyConnected.links_per_child(4), 3);
        assert_eq!(Topology::FullyConnected.diameter(4), 1);
        for t in Topology::ALL {
            assert_eq!(t.links_per_child(1), 1);
            assert_eq!(t.diameter(1), 1);
        }
    }

    #[test]
    fn tree_link_of_a_ring() {
        let n = Network {
            topology: Topology::Ring,
            bytes_per_cycle: 10.0,
            latency: 100,
        };
        let l = n.tree_link(8);
        assert_eq!(l.gather.child, 20.0);
        assert_eq!(l.gather.parent, 160.0);
        assert_eq!(l.broadcast.latency, 400);
    }
}
