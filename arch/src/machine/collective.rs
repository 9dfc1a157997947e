//! Collectives over a network (docs/model.md, many boards): broadcast, all-gather,
//! reduce-scatter and all-reduce, each run as a ring, a tree or direct, costed by the
//! α–β model: every step waits its hops' latency and moves the bytes of its busiest
//! link at one link's rate, so alone a collective takes Σ over its steps of
//! (hops × latency + ⌈busiest link's bytes ÷ rate⌉).

use super::network::Topology;
use serde::{Deserialize, Serialize};

/// How a collective's messages flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    /// Around a ring of the children: each step every child sends to the next.
    Ring,
    /// A binomial tree, recursive halving and doubling: step `k` pairs children `2^k`
    /// apart.
    Tree,
    /// One step: every child sends to every other at once, on all its links.
    Direct,
}

impl Algorithm {
    pub const ALL: [Algorithm; 3] = [Algorithm::Ring, Algorithm::Tree, Algorithm::Direct];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::Direct => "direct",
        }
    }

    /// The knob's value (`networks.<LEVEL>.algorithm`): 1 ring, 2 tree, 3 direct.
    pub fn code(self) -> u64 {
        match self {
            Algorithm::Ring => 1,
            Algorithm::Tree => 2,
            Algorithm::Direct => 3,
        }
    }

    /// The algorithm of knob value `code`; 0 is the topology's default (`None`).
    pub fn from_code(code: u64) -> Option<Option<Algorithm>> {
        match code {
            0 => Some(None),
            1 => Some(Some(Algorithm::Ring)),
            2 => Some(Some(Algorithm::Tree)),
            3 => Some(Some(Algorithm::Direct)),
            _ => None,
        }
    }

    /// The algorithm named `name` exactly as [`Algorithm::name`] writes it (`ring`,
    /// `tree`, `direct`): what a scenario's op names (`algorithm: "tree"`).
    pub fn named(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The knob value a name stands for (`default`, `ring`, `tree`, `direct`, any case).
    pub fn code_of_name(name: &str) -> Option<u64> {
        match name.trim().to_ascii_lowercase().as_str() {
            "default" => Some(0),
            "ring" => Some(1),
            "tree" => Some(2),
            "direct" => Some(3),
            _ => None,
        }
    }
}

/// What a collective does, with `P` children.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Collective {
    /// One child's bytes to every other.
    Broadcast,
    /// Each child's share to every child.
    AllGather,
    /// Each child ends with its share of the sum of every child's vector.
    ReduceScatter,
    /// Every child ends with the sum: a reduce-scatter, then an all-gather.
    AllReduce,
}

impl Collective {
    pub fn name(self) -> &'static str {
        match self {
            Collective::Broadcast => "broadcast",
            Collective::AllGather => "all-gather",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::AllReduce => "all-reduce",
        }
    }
}

/// One phase of a collective (an all-reduce has two: the reduce-scatter, the
/// all-gather): its steps, run one after the other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phase {
    pub steps: u64,
    /// Σ over the steps of the hops a step waits (its farthest message): the phase's
    /// latency is `hops ×` the hop latency.
    pub hops: u64,
    /// Σ over the steps of ⌈the busiest link's bytes ÷ the link rate⌉.
    pub cycles: u64,
    /// Bytes each child sends into the network over the phase (before forwarding).
    pub sent: u64,
    /// Bytes the busiest link of a child carries over the phase.
    pub link_bytes: u64,
}

impl Phase {
    /// The phase alone: `cycles + hops × latency`.
    pub fn alone(&self, latency: u64) -> u64 {
        self.cycles
            .saturating_add(self.hops.saturating_mul(latency))
    }
}

/// Hops from a child to the one `j` positions after it (ring: the shorter way).
fn hops(topology: Topology, children: u64, j: u64) -> u64 {
    match topology {
        Topology::Ring => j.min(children.saturating_sub(j)).max(1),
        Topology::Switch | Topology::FullyConnected => 1,
    }
}

/// ⌈bytes ÷ rate⌉, saturating.
fn over(bytes: u64, rate: f64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    let c = (bytes as f64 / rate).ceil();
    if c.is_finite() && c < (u64::MAX / 4) as f64 {
        c as u64
    } else {
        u64::MAX / 4
    }
}

/// Adds to `p` one step in which each child sends `msgs` (bytes, to the child `j`
/// positions on) spread over `links` of its links: a message `h` hops away crosses `h`
/// links (forwarded by the children between), so the busiest link carries
/// ⌈Σ bytes × hops ÷ links⌉; the step waits its farthest message's hops.
fn step(p: &mut Phase, t: Topology, children: u64, links: u64, msgs: &[(u64, u64)], rate: f64) {
    let mut load: u64 = 0;
    let mut far = 0;
    let mut sent: u64 = 0;
    for &(bytes, j) in msgs {
        let h = hops(t, children, j);
        load = load.saturating_add(bytes.saturating_mul(h));
        far = far.max(h);
        sent = sent.saturating_add(bytes);
    }
    let load = load.div_ceil(links.max(1));
    p.steps += 1;
    p.hops = p.hops.saturating_add(far);
    p.cycles = p.cycles.saturating_add(over(load, rate));
    p.sent = p.sent.saturating_add(sent);
    p.link_bytes = p.link_bytes.saturating_add(load);
}

/// Repeats a step `n` times (the ring's identical steps, without a loop over them).
fn steps(p: &mut Phase, n: u64, one: Phase) {
    p.steps = p.steps.saturating_add(n.saturating_mul(one.steps));
    p.hops = p.hops.saturating_add(n.saturating_mul(one.hops));
    p.cycles = p.cycles.saturating_add(n.saturating_mul(one.cycles));
    p.sent = p.sent.saturating_add(n.saturating_mul(one.sent));
    p.link_bytes = p
        .link_bytes
        .saturating_add(n.saturating_mul(one.link_bytes));
}

/// ⌈log2 n⌉.
fn log2_ceil(n: u64) -> u64 {
    if n <= 1 {
        0
    } else {
        u64::from(64 - (n - 1).leading_zeros())
    }
}

/// The phases of collective `c` over `children` children joined by `topology` at
/// `rate` bytes per cycle a link, run as `algorithm` (docs/model.md gives the table).
/// `bytes` is each child's share for an all-gather or reduce-scatter, the vector each
/// child holds for an all-reduce (its share is `⌈bytes ÷ P⌉`), the root's bytes for a
/// broadcast. One child: no phase does anything.
///
/// - ring: a share a step to the next child; all-gather and reduce-scatter `P − 1`
///   steps; a broadcast pipelines `P` segments of `⌈n/P⌉` down the chain,
///   `2(P − 1)` steps. One link.
/// - tree: step `k` of `⌈log2 P⌉` pairs children `2^k` apart; an all-gather (recursive
///   doubling) sends `min(2^k, P − 2^k)` shares in step `k`, a reduce-scatter
///   (recursive halving) the same steps in reverse; a broadcast (binomial) sends all
///   `n` each step. One link.
/// - direct: one step: each child sends its share to every other (broadcast: the root
///   sends `n` to every other), spread over all its links.
pub fn collective(
    topology: Topology,
    algorithm: Algorithm,
    c: Collective,
    bytes: u64,
    children: u64,
    rate: f64,
) -> Vec<Phase> {
    let p = children.max(1);
    if c == Collective::AllReduce {
        let share = bytes.div_ceil(p);
        return vec![
            collective(
                topology,
                algorithm,
                Collective::ReduceScatter,
                share,
                p,
                rate,
            )[0],
            collective(topology, algorithm, Collective::AllGather, share, p, rate)[0],
        ];
    }
    let mut ph = Phase::default();
    if p <= 1 || bytes == 0 {
        return vec![ph];
    }
    let all = topology.links_per_child(p);
    let bcast = c == Collective::Broadcast;
    match algorithm {
        Algorithm::Ring => {
            let (n, each) = if bcast {
                (2 * (p - 1), bytes.div_ceil(p))
            } else {
                (p - 1, bytes)
            };
            let mut one = Phase::default();
            step(&mut one, topology, p, 1, &[(each, 1)], rate);
            steps(&mut ph, n, one);
        }
        Algorithm::Tree => {
            let k = log2_ceil(p);
            let order: Vec<u64> = match c {
                Collective::ReduceScatter => (0..k).rev().collect(),
                Collective::AllGather | Collective::Broadcast | Collective::AllReduce => {
                    (0..k).collect()
                }
            };
            for i in order {
                let d = 1u64 << i;
                let b = if bcast {
                    bytes
                } else {
                    d.min(p - d).saturating_mul(bytes)
                };
                step(&mut ph, topology, p, 1, &[(b, d)], rate);
            }
        }
        Algorithm::Direct => {
            let msgs: Vec<(u64, u64)> = (1..p).map(|j| (bytes, j)).collect();
            step(&mut ph, topology, p, all, &msgs, rate);
        }
    }
    vec![ph]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_examples() {
        // 4 children of a switch, 1,000 B each share, 10 B/cycle.
        let ag = |a| collective(Topology::Switch, a, Collective::AllGather, 1000, 4, 10.0)[0];
        let r = ag(Algorithm::Ring);
        assert_eq!((r.steps, r.hops, r.cycles), (3, 3, 300));
        let t = ag(Algorithm::Tree);
        // Steps of 1 and 2 shares.
        assert_eq!((t.steps, t.hops, t.cycles), (2, 2, 300));
        let d = ag(Algorithm::Direct);
        assert_eq!((d.steps, d.hops, d.cycles), (1, 1, 300));
        // A ring of 8: direct sends 7 shares 1+2+3+4+3+2+1 = 16 hops over 2 links.
        let d = collective(
            Topology::Ring,
            Algorithm::Direct,
            Collective::AllGather,
            10,
            8,
            1.0,
        )[0];
        assert_eq!((d.hops, d.cycles), (4, 80));
        // A tree broadcast over 5: 3 steps of all n, partners 1, 2, 4 (1 on the ring) apart.
        let b = collective(
            Topology::Ring,
            Algorithm::Tree,
            Collective::Broadcast,
            7,
            5,
            1.0,
        )[0];
        assert_eq!((b.steps, b.hops, b.cycles), (3, 1 + 2 + 1, 7 + 14 + 7));
        // An all-reduce is two phases; one child does nothing.
        assert_eq!(
            collective(
                Topology::Ring,
                Algorithm::Ring,
                Collective::AllReduce,
                8,
                4,
                1.0
            )
            .len(),
            2
        );
        let none = collective(
            Topology::Ring,
            Algorithm::Tree,
            Collective::AllReduce,
            8,
            1,
            1.0,
        );
        assert!(none.iter().all(|p| p.alone(100) == 0));
    }

    #[test]
    fn knob_codes_round_trip() {
        for a in Algorithm::ALL {
            assert_eq!(Algorithm::from_code(a.code()), Some(Some(a)));
            assert_eq!(Algorithm::code_of_name(a.name()), Some(a.code()));
        }
        assert_eq!(Algorithm::from_code(0), Some(None));
        assert_eq!(Algorithm::from_code(4), None);
        assert_eq!(Algorithm::code_of_name("Tree"), Some(2));
        assert_eq!(Algorithm::code_of_name("mesh"), None);
        for a in Algorithm::ALL {
            assert_eq!(Algorithm::named(a.name()), Some(a));
        }
        assert_eq!(Algorithm::named("Tree"), None);
        assert_eq!(Algorithm::named("default"), None);
    }
}
