//! A transfer's facts in closed form: node figures from the layout's per-level choices,
//! in work proportional to the levels' fan-outs, not to the PEs.
//!
//! The PEs a closed-form layout touches are the cartesian product of the positions each
//! layout level lets take part, and a PE's key is the mixed-radix number of one digit
//! per level (`engine::facts`). A node of the tree covers a contiguous range of PEs: the
//! levels above it are fixed, the levels below it free, and one level may be split
//! between the two (the node holds `lo` consecutive positions of it). So a node's
//! distinct bytes are its bytes per PE times the product, over the levels, of the
//! distinct digits among the positions it holds; nodes that differ only in the
//! positions of fixed levels have the same figures, and one class stands for them all.
//! [`super::cost_product`] charges a route from these classes as [`super::cost`] does
//! from per-PE facts, and a test compares the two on random layouts.

use super::{NodeStat, StageNodes};

/// A position that takes part: (position, key digit, reduced-key digit).
pub type Position = (u64, u64, u64);

/// One layout level of a [`Product`]: its fan-out and the positions that take part, in
/// position order, each with its key digit and its reduced-key digit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choices {
    pub fanout: u64,
    /// (position, key digit, reduced-key digit); digits are below the fan-out.
    pub positions: Vec<Position>,
}

/// The facts of a transfer's PEs as a product of per-level choices (root-most level
/// first): every PE of the product takes part, with `bytes` of LM and, when every shard
/// is whole, `valid` real elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Product {
    pub levels: Vec<Choices>,
    /// LM bytes of every PE's shard.
    pub bytes: u64,
    /// Real elements of every PE's shard, when they are all the same (no padding);
    /// `None` when they vary, and a DRAM stage must then be charged per PE.
    pub valid: Option<u64>,
}

/// Which digit of a position a count reads.
#[derive(Clone, Copy)]
enum Digit {
    Key,
    Reduced,
}

/// The digit `d` of a position.
fn digit(x: &Position, d: Digit) -> u64 {
    match d {
        Digit::Key => x.1,
        Digit::Reduced => x.2,
    }
}

/// The distinct digits among `positions`: counted in one pass when they do not decrease
/// (a split level's digits are its positions, a replicated level's all 0), else sorted.
fn distinct(positions: &[Position], d: Digit) -> u64 {
    if positions
        .windows(2)
        .all(|w| digit(&w[0], d) <= digit(&w[1], d))
    {
        let steps = positions
            .windows(2)
            .filter(|w| digit(&w[0], d) != digit(&w[1], d))
            .count();
        return (!positions.is_empty()) as u64 + steps as u64;
    }
    let mut v: Vec<u64> = positions.iter().map(|x| digit(x, d)).collect();
    v.sort_unstable();
    v.dedup();
    v.len() as u64
}

/// Whether two runs of positions have the same set of key digits: walked in step where
/// both runs' digits do not decrease (a split level's), else sorted.
fn same_digits(a: &[Position], b: &[Position]) -> bool {
    let rising = |s: &[Position]| s.windows(2).all(|w| w[0].1 <= w[1].1);
    if rising(a) && rising(b) {
        let mut x = a.iter().map(|p| p.1);
        let mut y = b.iter().map(|p| p.1);
        let (mut px, mut py) = (None, None);
        loop {
            let nx = x.by_ref().find(|&d| Some(d) != px);
            let ny = y.by_ref().find(|&d| Some(d) != py);
            if nx != ny {
                return false;
            }
            if nx.is_none() {
                return true;
            }
            (px, py) = (nx, ny);
        }
    }
    let set = |s: &[Position]| {
        let mut v: Vec<u64> = s.iter().map(|x| x.1).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    set(a) == set(b)
}

/// The prefixes a node's children are under (see [`Product::link`]): how many, and
/// whether they are all one.
#[derive(Clone, Copy)]
struct Prefixes {
    count: u64,
    alike: bool,
}

/// Adds to `out` the children of a node that stands for `many` alike: under each of
/// `prefixes` (in order) the runs `kids`, each with the bytes it receives. Returns the
/// most bytes a child receives.
fn children(
    out: &mut StageNodes,
    prefixes: Prefixes,
    kids: &[(&[Position], u64)],
    many: u64,
) -> u64 {
    if prefixes.count == 0 {
        return 0;
    }
    let maxc = kids.iter().map(|k| k.1).max().unwrap_or(0);
    // The children that receive bytes are (prefix, run) for every prefix and every such
    // run; they all receive the same data when they share the first's prefix and digits.
    let mut sending = (kids.iter().filter(|k| k.1 > 0)).map(|k| k.0);
    if let Some(r0) = sending.next() {
        let more = sending.clone().next().is_some();
        if prefixes.count > 1 || more {
            out.any_multi = true;
            if !prefixes.alike || sending.any(|r| !same_digits(r, r0)) {
                out.all_same = false;
            }
        }
    }
    let sum = (kids.iter().map(|k| k.1))
        .fold(0, u64::saturating_add)
        .saturating_mul(prefixes.count);
    out.total_child = out.total_child.saturating_add(sum.saturating_mul(many));
    out.max_child = out.max_child.max(maxc);
    maxc
}

/// Where nodes with `per` PEs under each cut the levels: (the level they split, how many
/// consecutive positions of it one node holds). `None` if `per` does not fall on the
/// levels' positions.
fn cut(levels: &[Choices], per: u64) -> Option<(usize, u64)> {
    let per = per.max(1);
    let mut under = 1u64;
    for i in (0..levels.len()).rev() {
        let fan = levels[i].fanout.max(1);
        let above = under.checked_mul(fan)?;
        if above <= per {
            if i == 0 {
                // One node holds every PE.
                return Some((0, fan));
            }
            under = above;
            continue;
        }
        if !per.is_multiple_of(under) {
            return None;
        }
        let lo = per / under;
        return fan.is_multiple_of(lo).then_some((i, lo));
    }
    None
}

impl Product {
    /// The PEs that take part.
    pub fn pes(&self) -> u64 {
        self.above(self.levels.len())
    }

    /// The positions of level `i` a node holding the `lo` positions from `hi · lo` has
    /// (positions are in order: a run of them).
    fn held(&self, i: usize, lo: u64, hi: u64) -> &[Position] {
        let all = &self.levels[i].positions;
        let from = all.partition_point(|x| x.0 < hi.saturating_mul(lo));
        let to = all.partition_point(|x| x.0 < hi.saturating_add(1).saturating_mul(lo));
        &all[from..to]
    }

    /// Distinct digits of the levels below `i` (all their positions).
    fn below(&self, i: usize, d: Digit) -> u64 {
        self.levels[i + 1..]
            .iter()
            .map(|l| distinct(&l.positions, d))
            .fold(1u64, u64::saturating_mul)
    }

    /// How many nodes cut at level `i` share each class: the nodes differ above `i` only
    /// in the positions taking part there, and have the same figures.
    fn above(&self, i: usize) -> u64 {
        self.levels[..i]
            .iter()
            .fold(1u64, |a, l| a.saturating_mul(l.positions.len() as u64))
    }

    /// Node classes of nodes with `per` PEs under each: per class, (the range `hi` of
    /// the cut level, distinct digits of `d`, how many nodes). `None` if `per` does not
    /// fall on the levels.
    fn classes(&self, per: u64, d: Digit) -> Option<Vec<(u64, u64, u64)>> {
        let (i, lo) = cut(&self.levels, per)?;
        let many = self.above(i);
        let rest = self.below(i, d);
        let fan = self.levels[i].fanout.max(1);
        let mut out = Vec::new();
        if many == 0 || rest == 0 {
            return Some(out);
        }
        for hi in 0..fan / lo {
            let n = distinct(self.held(i, lo, hi), d);
            if n > 0 {
                out.push((hi, n.saturating_mul(rest), many));
            }
        }
        Some(out)
    }

    /// The prefixes of the children of the node holding the `lo` positions from
    /// `hi · lo` of level `i`, cut at level `j` > `i`: the key digits of their positions
    /// at the levels from `i` to `j`, mixed radix, in the order of the positions.
    fn prefixes(&self, i: usize, (lo, hi): (u64, u64), j: usize) -> Prefixes {
        let held = self.held(i, lo, hi);
        let mids = &self.levels[i + 1..j];
        let count = (mids.iter()).fold(held.len() as u64, |a, l| {
            a.saturating_mul(l.positions.len() as u64)
        });
        let one = |s: &[Position]| s.iter().all(|x| x.1 == s[0].1);
        if one(held) && mids.iter().all(|l| one(&l.positions)) {
            return Prefixes { count, alike: true };
        }
        // Digits below their fan-outs and no overflow: distinct digits give distinct
        // prefixes, and some level has two.
        let top = held.iter().map(|x| x.1).max().unwrap_or(0);
        let fits = mids.iter().try_fold(top, |p, l| {
            let d = l.positions.iter().map(|x| x.1).max().unwrap_or(0);
            (d < l.fanout).then_some(())?;
            p.checked_mul(l.fanout)?.checked_add(d)
        });
        if fits.is_some() {
            return Prefixes {
                count,
                alike: false,
            };
        }
        let mut all: Vec<u64> = held.iter().map(|x| x.1).collect();
        for l in mids {
            all = (all.iter())
                .flat_map(|&p| {
                    let f = l.fanout;
                    (l.positions.iter()).map(move |x| p.saturating_mul(f).saturating_add(x.1))
                })
                .collect();
        }
        Prefixes {
            count: all.len() as u64,
            alike: all.iter().all(|&p| Some(&p) == all.first()),
        }
    }

    /// A link stage's nodes: each node of `per` PEs sends its distinct bytes (by reduced
    /// keys when `reduce`) to its children of `child` PEs, each of which receives its
    /// own distinct bytes.
    pub(super) fn link(&self, per: u64, child: u64, reduce: bool) -> Option<StageNodes> {
        let parent = if reduce { Digit::Reduced } else { Digit::Key };
        let (i, lo) = cut(&self.levels, per)?;
        let (j, lo2) = cut(&self.levels, child)?;
        if j < i || (j == i && !lo.is_multiple_of(lo2)) {
            return None;
        }
        let mut out = StageNodes::empty();
        let classes = self.classes(per, parent)?;
        let below_j = self.below(j, Digit::Key);
        // A child's run of level `j`'s positions and the bytes it receives (none when
        // it holds no position).
        let kid = |hi2: u64| -> Option<(&[Position], u64)> {
            let run = self.held(j, lo2, hi2);
            if run.is_empty() || below_j == 0 {
                return None;
            }
            let b = distinct(run, Digit::Key)
                .saturating_mul(below_j)
                .saturating_mul(self.bytes);
            Some((run, b))
        };
        // Below level `i`, every node's children hold the same runs of level `j` (one
        // per `hi2`), once per prefix of fixed digits of the levels from `i` to `j`.
        let fan2 = self.levels[j].fanout.max(1);
        let runs: Vec<(&[Position], u64)> = if j == i {
            Vec::new()
        } else {
            (0..fan2 / lo2).filter_map(kid).collect()
        };
        let mut own: Vec<(&[Position], u64)> = Vec::new();
        for (hi, pd, many) in classes {
            // The node's children: per prefix (the key digits of their positions at the
            // levels from `i` to `j`, mixed radix; one prefix, 0, when `j == i`) the runs.
            let prefixes = if j == i {
                own.clear();
                own.extend((hi * (lo / lo2)..(hi + 1) * (lo / lo2)).filter_map(kid));
                Prefixes {
                    count: 1,
                    alike: true,
                }
            } else {
                self.prefixes(i, (lo, hi), j)
            };
            let kids = if j == i { &own } else { &runs };
            let max_child = children(&mut out, prefixes, kids, many);
            out.nodes.push(NodeStat {
                n: 0,
                bytes: pd.saturating_mul(self.bytes),
                max_child,
                count: many,
            });
        }
        Some(out)
    }

    /// A DRAM stage's nodes of `per` PEs each: the real bytes of their distinct shards.
    /// `None` when the shards' real elements vary.
    pub(super) fn dram(&self, per: u64, elem_bytes: u64) -> Option<Vec<NodeStat>> {
        let valid = self.valid?;
        let each = valid.saturating_mul(elem_bytes);
        Some(
            self.classes(per, Digit::Key)?
                .into_iter()
                .map(|(_, n, many)| NodeStat {
                    n: 0,
                    bytes: n.saturating_mul(each),
                    max_child: 0,
                    count: many,
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{Dir, DramSpec, PeFact, Route, StageSpec, Topo};

    fn level(fanout: u64, used: &[u64], key: bool) -> Choices {
        Choices {
            fanout,
            positions: used
                .iter()
                .map(|&p| (p, if key { p } else { 0 }, if key { p } else { 0 }))
                .collect(),
        }
    }

    #[test]
    fn nodes_cut_the_levels_where_their_pes_fall() {
        // Levels of 8, 8, 16, 4 PEs (4096): a node of 1024 PEs holds 2 positions of the
        // first level; one of 512, one position of it; one of 64, one position of the
        // second; one of 2, half a PE level.
        let l = [8u64, 8, 16, 4].map(|f| level(f, &[0], true));
        assert_eq!(cut(&l, 1024), Some((0, 2)));
        assert_eq!(cut(&l, 512), Some((0, 1)));
        assert_eq!(cut(&l, 64), Some((1, 1)));
        assert_eq!(cut(&l, 2), Some((3, 2)));
        assert_eq!(cut(&l, 1), Some((3, 1)));
        assert_eq!(cut(&l, 4096), Some((0, 8)));
        assert_eq!(cut(&l, 8192), Some((0, 8)));
        // 3 PEs do not fall on the positions.
        assert_eq!(cut(&l, 3), None);
    }

    #[test]
    fn a_node_sends_the_distinct_digits_below_it() {
        // Two levels of 4: split over the first (all used), replicated over the second.
        let p = Product {
            levels: vec![
                level(4, &[0, 1, 2, 3], true),
                level(4, &[0, 1, 2, 3], false),
            ],
            bytes: 10,
            valid: Some(5),
        };
        // The root (16 PEs) holds 4 distinct shards; each child (4 PEs) one, the same for
        // its four PEs: a broadcast below the children, a distribute to them.
        let root = p.link(16, 4, false).unwrap();
        assert_eq!(root.nodes.len(), 1);
        assert_eq!((root.nodes[0].bytes, root.nodes[0].max_child), (40, 10));
        assert_eq!(root.total_child, 40);
        assert!(root.any_multi && !root.all_same);
        let mid = p.link(4, 1, false).unwrap();
        let each: Vec<(u64, u64, u64)> = mid
            .nodes
            .iter()
            .map(|n| (n.bytes, n.max_child, n.count))
            .collect();
        assert_eq!(each, [(10, 10, 1); 4]);
        assert_eq!(mid.total_child, 160);
        assert!(mid.any_multi && mid.all_same);
        let dram = p.dram(8, 2).unwrap();
        assert_eq!(
            dram.iter().map(|n| (n.bytes, n.count)).collect::<Vec<_>>(),
            [(20, 1), (20, 1)]
        );
    }

    /// Random numbers for the property below.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
    }

    /// A random product over a machine's addressable levels: each level split over some
    /// of its positions, replicated (all, or the first replica only), or partial; one
    /// level may be skipped in the reduced keys.
    fn random_product(m: &mnsim_arch::Machine, rng: &mut Rng, valid: bool) -> Product {
        let levels = m.addressable_levels();
        let skip = (rng.below(3) == 0).then(|| rng.below(levels.len() as u64) as usize);
        let levels = levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let f = l.fanout;
                let take = |p: u64, keyed: bool| {
                    let d = if keyed { p } else { 0 };
                    (p, d, if skip == Some(i) { 0 } else { d })
                };
                let positions = match rng.below(4) {
                    // Split over a prefix of the positions (or every other one).
                    0 => {
                        let n = 1 + rng.below(f);
                        let step = 1 + rng.below(2);
                        (0..f)
                            .filter(|p| p % step == 0)
                            .take(n as usize)
                            .map(|p| take(p, true))
                            .collect()
                    }
                    1 => (0..f).map(|p| take(p, false)).collect(),
                    2 => vec![take(0, false)],
                    _ => (0..f).map(|p| take(p, true)).collect(),
                };
                Choices {
                    fanout: f,
                    positions,
                }
            })
            .collect();
        Product {
            levels,
            bytes: 1 + rng.below(5000),
            valid: valid.then(|| rng.below(2000)),
        }
    }

    /// The per-PE facts a product stands for, in PE order.
    fn expand(p: &Product) -> Vec<(u64, PeFact)> {
        let mut out: Vec<(u64, PeFact)> = vec![(
            0,
            PeFact {
                key: 0,
                reduced_key: 0,
                bytes: p.bytes,
                valid: p.valid.unwrap_or(0),
            },
        )];
        for l in &p.levels {
            out = out
                .iter()
                .flat_map(|&(pe, f)| {
                    l.positions.iter().map(move |&(q, d, r)| {
                        (
                            pe * l.fanout + q,
                            PeFact {
                                key: f.key * l.fanout + d,
                                reduced_key: f.reduced_key * l.fanout + r,
                                ..f
                            },
                        )
                    })
                })
                .collect();
        }
        out
    }

    /// A random route over a machine's memory chain: down from DRAM, up to DRAM, up and
    /// down through a meeting level (reducing there or not), or a copy inside the LMs.
    fn random_route(topo: &Topo, rng: &mut Rng) -> Route {
        let (n, d) = (topo.chain.len(), topo.dram_at);
        let link = |link: usize, dir: Dir, reduce: bool, second: bool| StageSpec {
            link,
            dir,
            reduce,
            second,
        };
        let dram = |dir: Dir, rng: &mut Rng| DramSpec {
            dir,
            elem_bytes: [1, 2, 4][rng.below(3) as usize],
            efficiency: [1.0, 0.5, 0.125][rng.below(3) as usize],
            second: rng.below(2) == 0,
            host: None,
        };
        let steps = 1 + rng.below(4);
        match rng.below(4) {
            0 => Route {
                stages: (d..n - 1)
                    .map(|l| link(l, Dir::Down, false, false))
                    .collect(),
                dram: Some(dram(Dir::Down, rng)),
                local_copy: false,
                steps,
            },
            1 => Route {
                stages: (d..n - 1)
                    .rev()
                    .map(|l| link(l, Dir::Up, false, false))
                    .collect(),
                dram: Some(dram(Dir::Up, rng)),
                local_copy: false,
                steps,
            },
            2 => {
                let meet = rng.below(n as u64 - 1) as usize;
                let reduce = rng.below(2) == 0;
                let mut stages: Vec<StageSpec> = (meet..n - 1)
                    .rev()
                    .map(|l| link(l, Dir::Up, reduce && l == meet, false))
                    .collect();
                stages.extend((meet..n - 1).map(|l| link(l, Dir::Down, false, true)));
                Route {
                    stages,
                    dram: None,
                    local_copy: false,
                    steps,
                }
            }
            _ => Route {
                stages: Vec::new(),
                dram: None,
                local_copy: true,
                steps,
            },
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

        /// Two runs have the same digits exactly when their sets of key digits are equal,
        /// rising or not.
        #[test]
        fn same_digits_compares_the_sets(
            a in proptest::collection::vec(0u64..5, 0..7),
            b in proptest::collection::vec(0u64..5, 0..7),
            sort in proptest::bool::ANY,
        ) {
            let run = |v: &[u64]| {
                let mut v = v.to_vec();
                if sort {
                    v.sort_unstable();
                }
                v.iter().enumerate().map(|(k, &d)| (k as u64, d, 0)).collect::<Vec<Position>>()
            };
            let set = |v: &[u64]| v.iter().copied().collect::<std::collections::BTreeSet<u64>>();
            proptest::prop_assert_eq!(same_digits(&run(&a), &run(&b)), set(&a) == set(&b));
        }

        /// The closed form charges what the per-PE facts it stands for charge: the same
        /// stages (bytes, ports, cycles, kinds), cycles and slowest stage, on random
        /// products and routes of every preset of at most one node, some with what-if
        /// fan-outs.
        #[test]
        fn the_closed_form_charges_as_the_per_pe_facts(seed in proptest::prelude::any::<u64>()) {
            let mut rng = Rng(seed);
            let presets = ["mncore2", "mncore1", "toy4", "mn3_node", "mncore2_server"];
            let preset = presets[rng.below(5) as usize];
            let mut m = mnsim_arch::preset(preset).unwrap();
            if preset != "toy4" && rng.below(2) == 0 {
                mnsim_arch::set_knob(&mut m, "levels.MAB.count", 2.0).unwrap();
                mnsim_arch::set_knob(&mut m, "levels.L1B.count", 4.0).unwrap();
            }
            let topo = Topo::new(&m);
            let a = random_product(&m, &mut rng, true);
            let b = if rng.below(2) == 0 { a.clone() } else { random_product(&m, &mut rng, true) };
            let route = random_route(&topo, &mut rng);
            let (fa, fb) = (expand(&a), expand(&b));
            let reference = super::super::cost(&m, &topo, &route, [&fa, &fb]);
            let closed = super::super::cost_product(&m, &topo, &route, [&a, &b]);
            let closed = closed.expect("products over the addressable levels charge in closed form");
            proptest::prop_assert_eq!(&closed.stages, &reference.stages);
            proptest::prop_assert_eq!(closed.cycles, reference.cycles);
            proptest::prop_assert_eq!(closed.bottleneck, reference.bottleneck);
        }
    }

    #[test]
    fn a_dram_stage_over_padded_shards_is_left_to_the_per_pe_facts() {
        let m = mnsim_arch::preset("toy4").unwrap();
        let topo = Topo::new(&m);
        let mut rng = Rng(7);
        let p = random_product(&m, &mut rng, false);
        let route = Route {
            stages: Vec::new(),
            dram: Some(DramSpec {
                dir: Dir::Down,
                elem_bytes: 4,
                efficiency: 1.0,
                second: false,
                host: None,
            }),
            local_copy: false,
            steps: 1,
        };
        assert!(super::super::cost_product(&m, &topo, &route, [&p, &p]).is_none());
    }
}
