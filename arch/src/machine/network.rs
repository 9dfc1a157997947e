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

pub use super::collective::{Algorithm, Collective, Phase, collective};

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

    /// The algorithm its collectives run unless the machine names one: ring on a ring,
    /// direct on a switch and fully connected (one step; the fewest latencies, and on a
    /// switch the same bytes over the one link as a ring).
    pub fn default_algorithm(self) -> Algorithm {
        match self {
            Topology::Ring => Algorithm::Ring,
            Topology::Switch | Topology::FullyConnected => Algorithm::Direct,
        }
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
    /// The algorithm of its collectives (ring, tree, direct); unset, the topology's
    /// default. A knob: `networks.<LEVEL>.algorithm=ring|tree|direct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<Algorithm>,
    /// The host's link to each child (a board's PCIe): where a program's inputs come
    /// from (docs/model.md, the host). Unset: inputs start in the boards' DRAMs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostLink>,
}

/// A host's link to each child of its network (a board's PCIe slot): one link per child,
/// rates per direction, a latency. Its energy is the network level's link energy
/// (`energy.links.<LEVEL>`): the same PCIe links carry both.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLink {
    /// Bytes per cycle from the host to one child.
    pub down_bytes_per_cycle: f64,
    /// Bytes per cycle from one child to the host.
    pub up_bytes_per_cycle: f64,
    /// Cycles from the host to a child.
    pub latency: u64,
    /// Where a program's inputs start: 1 on the host (each comes over this link with its
    /// first Load), 0 in the boards' DRAMs (loaded before the run, as a server keeps a
    /// model's weights between steps; the link then carries nothing). A knob
    /// (`networks.<LEVEL>.host.inputs`); 1 when not given.
    #[serde(default = "one")]
    pub inputs: u64,
}

fn one() -> u64 {
    1
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

impl Network {
    /// The algorithm its collectives run: the one the machine gives, else the
    /// topology's default ([`Topology::default_algorithm`]).
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
            .unwrap_or_else(|| self.topology.default_algorithm())
    }

    /// The phases of collective `c` over `children` children by the network's
    /// algorithm ([`collective`]): `bytes` is each child's share (all-gather,
    /// reduce-scatter), the whole vector on each child (all-reduce) or the root's data
    /// (broadcast).
    pub fn collective(&self, c: Collective, bytes: u64, children: u64) -> Vec<Phase> {
        self.collective_by(self.algorithm(), c, bytes, children)
    }

    /// [`Network::collective`] run as `algorithm` (an op's own choice, docs/model.md).
    pub fn collective_by(
        &self,
        algorithm: Algorithm,
        c: Collective,
        bytes: u64,
        children: u64,
    ) -> Vec<Phase> {
        collective(
            self.topology,
            algorithm,
            c,
            bytes,
            children,
            self.bytes_per_cycle,
        )
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
            algorithm: None,
            host: None,
        };
        let l = n.tree_link(8);
        assert_eq!(l.gather.child, 20.0);
        assert_eq!(l.gather.parent, 160.0);
        assert_eq!(l.broadcast.latency, 400);
    }
}
