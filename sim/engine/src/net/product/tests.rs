//! Tests of the per-node cost of a product of levels: the cuts of levels by nodes, the
//! distinct digits a node sends, and random products against their expansion PE by PE.

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
            algorithm: None,
        },
        1 => Route {
            stages: (d..n - 1)
                .rev()
                .map(|l| link(l, Dir::Up, false, false))
                .collect(),
            dram: Some(dram(Dir::Up, rng)),
            local_copy: false,
            steps,
            algorithm: None,
        },
        2 => {
            let meet = rng.below(n as u64 - 1) as usize;
            let reduce = rng.below(2) == 0;
            let mut stages: Vec<StageSpec> = (meet..n - 1)
                .rev()
                .map(|l| link(l, Dir::Up, reduce && l == meet, false))
                .collect();
            stages.extend((meet..n - 1).map(|l| link(l, Dir::Down, false, true)));
            // The op's own algorithm, or the network's.
            let algorithm = [None]
                .into_iter()
                .chain(mnsim_arch::machine::Algorithm::ALL.map(Some))
                .nth(rng.below(4) as usize)
                .flatten();
            Route {
                stages,
                dram: None,
                local_copy: false,
                steps,
                algorithm,
            }
        }
        _ => Route {
            stages: Vec::new(),
            dram: None,
            local_copy: true,
            steps,
            algorithm: None,
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
        algorithm: None,
    };
    assert!(super::super::cost_product(&m, &topo, &route, [&p, &p]).is_none());
}
