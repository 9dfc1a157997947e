//! Unit and property tests of the layout algebra on hand-built machine trees.
//! (Tests against the shipped presets live in `arch/tests/layout.rs`.)

#![allow(clippy::type_complexity)]

use super::*;
use crate::machine::{Compute, Dram, Level, Link, Machine, MatrixUnit, Memory, Rate};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A machine with the given (name, count, addressable) levels below a root.
pub(crate) fn tree(levels: &[(&str, u64, bool)], word_bytes: u64, lm_bytes: u64) -> Machine {
    let r = Rate {
        parent: 8.0,
        child: 8.0,
        latency: 1,
    };
    let link = Link {
        broadcast: r.clone(),
        distribute: r.clone(),
        gather: r.clone(),
        reduce: r,
    };
    let mut lv = vec![Level {
        name: "Board".into(),
        count: 1,
        addressable: false,
        memory: None,
    }];
    for (i, &(n, c, a)) in levels.iter().enumerate() {
        let memory = (i + 1 == levels.len()).then(|| Memory {
            name: "LM".into(),
            bytes: lm_bytes,
            bytes_per_cycle: 0.0,
        });
        lv.push(Level {
            name: n.into(),
            count: c,
            addressable: a,
            memory,
        });
    }
    Machine {
        name: "test".into(),
        description: String::new(),
        clock_ghz: 1.0,
        word_bytes,
        levels: lv,
        links: BTreeMap::from([("Board".to_string(), link)]),
        networks: BTreeMap::new(),
        dram: Dram {
            level: "Board".into(),
            bytes: 1 << 30,
            bytes_per_cycle: 64.0,
            burst_bytes: 64,
        },
        compute: Compute {
            vector: BTreeMap::new(),
            matrix: MatrixUnit {
                level: "PE".into(),
                flops: BTreeMap::new(),
                tile: BTreeMap::new(),
            },
        },
        energy: Default::default(),
    }
}

fn toy4() -> Machine {
    tree(&[("PE", 4, true)], 4, 64 * 1024)
}
fn mncore1_tree() -> Machine {
    tree(
        &[
            ("L2B", 16, true),
            ("L1B", 8, true),
            ("MAB", 16, true),
            ("PE", 4, true),
        ],
        8,
        32 * 1024,
    )
}
fn mncore2_tree() -> Machine {
    tree(
        &[
            ("Group", 4, false),
            ("L2B", 2, true),
            ("L1B", 8, true),
            ("MAB", 16, true),
            ("PE", 4, true),
        ],
        8,
        32 * 1024,
    )
}

fn bind(text: &str, m: &Machine, shape: &[u64]) -> TensorLayout {
    TensorLayout::parse(text, m, Some(shape), DType::F32).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn err(text: &str, m: &Machine, shape: Option<&[u64]>) -> LayoutError {
    match TensorLayout::parse(text, m, shape, DType::F32) {
        Ok(l) => panic!("{text} should be rejected, got {l}"),
        Err(e) => e,
    }
}

#[test]
fn spec_worked_examples_toy4() {
    let m = toy4();
    let cases: &[(&str, [u64; 2], [u64; 2], Option<u64>, u64)] = &[
        ("((4_PE, 3:8), (8:1))", [12, 8], [5, 3], Some(1), 19),
        ("((3:8, 4_PE), (8:1))", [12, 8], [5, 3], Some(1), 11),
        (
            "((2_PE:2, 6:4), (2_PE:1, 4:1))",
            [12, 8],
            [7, 5],
            Some(3),
            5,
        ),
        ("(10,7)/((3:7, 4_PE), (7:1))", [10, 7], [9, 6], Some(1), 20),
        ("((12:8), (8:1); B@[PE])", [12, 8], [5, 3], None, 43),
    ];
    for (text, shape, idx, pe, word) in cases {
        let l = bind(text, &m, shape);
        let p = l.place(idx).unwrap();
        assert_eq!(p.pos, vec![*pe], "{text}");
        assert_eq!(p.addr, *word, "{text}");
        assert_eq!((p.w, p.t), (0, 0));
    }
}

#[test]
fn spec_worked_example_mncore1() {
    let m = mncore1_tree();
    let l = bind(
        "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))",
        &m,
        &[1024, 512],
    );
    let p = l.place(&[1000, 300]).unwrap();
    assert_eq!(p.pos, vec![Some(15), Some(5), Some(9), Some(0)]);
    assert_eq!(p.addr, 3);
    assert_eq!(l.footprint_words(), 64);
    assert_eq!(l.pes_used(), 8192);
}

#[test]
fn omitted_strides_are_compact_row_major_in_order_of_appearance() {
    let m = toy4();
    let a = bind("((2_PE, 6), (2_PE, 4))", &m, &[12, 8]);
    let b = bind("((2_PE:2, 6:4), (2_PE:1, 4:1))", &m, &[12, 8]);
    assert_eq!(a, b);
    assert_eq!(
        a.canonical(),
        "((2_PE:2, 6:4), (2_PE:1, 4:1)); B@[]".replace("; B@[]", "")
    );
}

#[test]
fn mncore2_real_layouts() {
    let m = mncore2_tree();
    let v = bind("((4_PE:1, 16:1, 2_W:1)) B@[MAB,L1B,L2B]", &m, &[128]);
    assert_eq!(v.canonical(), "((4_PE:1, 16:1, 2_W:1); B@[L2B,L1B,MAB])");
    assert_eq!(v.replicas(), 8 * 8 * 16);
    let p = v.place(&[127]).unwrap();
    assert_eq!(p.pos, vec![None, None, None, Some(3)]);
    assert_eq!((p.addr, p.w), (15, 1));
    let w = bind(
        "(256,16)/((8_L2B:1, 4:2, 8_L1B:1), (2:1, 4_PE:1, 2_W:1); B@[MAB])",
        &m,
        &[256, 16],
    );
    assert_eq!(
        w.canonical(),
        "((8_L2B:1, 4:2, 8_L1B:1), (2:1, 4_PE:1, 2_W:1); B@[MAB])"
    );
    assert_eq!(w.footprint_words(), 8);
    // Group folds into L2B: positions run 0..7 across the board.
    assert_eq!(w.levels()[0].fanout, 8);
}

#[test]
fn canonical_round_trips() {
    let m = toy4();
    for (text, shape) in [
        ("(10,7)/((3:7, 4_PE), (7:1))", vec![10, 7]),
        ("((12:8), (8:1); B@[PE])", vec![12, 8]),
        ("((12:8), (8:1))", vec![12, 8]),
        ("((2_Time, 3, 4_PE), (8))", vec![24, 8]),
    ] {
        let l = bind(text, &m, &shape);
        let again = TensorLayout::parse(&l.canonical(), &m, Some(&shape), DType::F32).unwrap();
        assert_eq!(l, again, "{text} -> {}", l.canonical());
    }
}

#[test]
fn every_error_has_a_pointed_message() {
    let m = toy4();
    let m2 = mncore2_tree();
    // (layout, shape, machine, message fragment, offset)
    let cases: &[(&str, Option<&[u64]>, &Machine, &str, usize)] = &[
        ("((4_PX, 3:8), (8:1))", None, &m, "unknown level `PX`", 2),
        ("((4_pe, 3:8), (8:1))", None, &m, "did you mean `PE`", 2),
        ("((4_Group, 3:8), (8:1))", None, &m2, "not addressable", 2),
        (
            "((8_PE, 3:8), (8:1))",
            None,
            &m,
            "reach(es) PE position 7, but PE has only 4",
            2,
        ),
        ("((2_PE:4, 3:8), (8:1))", None, &m, "PE position 4", 2),
        (
            "((2_PE:1, 6:4), (2_PE:1, 4:1))",
            None,
            &m,
            "reach the same PE position",
            2,
        ),
        (
            "((4_PE, 3:8), (8:2))",
            None,
            &m,
            "share a (PE, word, slot, step) cell",
            8,
        ),
        ("((4_PE, 3:1), (8:1))", None, &m, "overlap", 8),
        (
            "((4_PE, 3:8), (8:1))",
            Some(&[13, 8]),
            &m,
            "axis 0 has 13 elements but its group (4_PE, 3:8) holds 12",
            1,
        ),
        ("((4_PE, 3:8), (8:1))", Some(&[12, 8, 1]), &m, "rank 3", 0),
        (
            "((4_PE, 3:8), (8:1))",
            None,
            &tree(&[("PE", 4, true)], 4, 64),
            "LM footprint of 24 words (96 bytes)",
            8,
        ),
        (
            "((4_PE, 3:8), (8:1)",
            None,
            &m,
            "expected `)`, found end of input",
            19,
        ),
        (
            "((4_PE, 3:8), (8:1)) x",
            None,
            &m,
            "expected `B@[`, found `x`",
            21,
        ),
        ("((4_PE, 3:), (8:1))", None, &m, "expected a stride", 10),
        ("((4_PE, 0:8), (8:1))", None, &m, "at least 1", 8),
        (
            "((4_PE, 3:8), (8))",
            None,
            &m,
            "all given or all omitted",
            15,
        ),
        (
            "((4_PE, 3:8), (8:1); B@[PE])",
            None,
            &m,
            "already splits it",
            24,
        ),
        (
            "((4_PE, 3:8), (8:1); B@[W])",
            None,
            &m,
            "cannot be broadcast",
            24,
        ),
        (
            "((12:8), (8:1); B@[PE]) B@[PE]",
            None,
            &m,
            "named twice",
            27,
        ),
        (
            "(10,7)/((3:7, 4_PE), (7:1))",
            Some(&[10, 8]),
            &m,
            "disagrees",
            0,
        ),
        (
            "(13,7)/((3:7, 4_PE), (7:1))",
            None,
            &m,
            "axis 0 has 13 elements",
            8,
        ),
        ("((4_PE, 3:8, 4_W), (8:1))", None, &m, "holds 1 f32", 13),
        (
            "((4_PE, 99999999999999999999:8), (8:1))",
            None,
            &m,
            "too large",
            8,
        ),
        ("", None, &m, "empty layout", 0),
        (
            "((4_PE, 3:8) (8:1))",
            None,
            &m,
            "expected `)`, found `(`",
            13,
        ),
        (
            "((4_PE, 3:8), (8:1)) B@[MAB]",
            None,
            &m,
            "unknown level `MAB`",
            24,
        ),
        (
            "((4_PE, 3:8), (8:1)) B@[MAB",
            None,
            &m,
            "expected `]`, found end of input",
            27,
        ),
    ];
    for (text, shape, mach, frag, off) in cases {
        let e = err(text, mach, *shape);
        assert!(
            e.message.contains(frag),
            "{text}: `{}` lacks `{frag}`",
            e.message
        );
        assert_eq!(e.offset(), *off, "{text}: {e}");
        assert!(e.to_string().contains(&format!("at byte {off}")));
    }
}

#[test]
fn f64_does_not_fit_a_four_byte_word() {
    let e = TensorLayout::parse("((4_PE, 3:8), (8:1))", &toy4(), None, DType::F64).unwrap_err();
    assert!(e.message.contains("do not fit a 4-byte word"), "{e}");
}

#[test]
fn irregular_but_injective_strides_are_accepted_and_inverted() {
    // Sizes (2,3) strides (3,2): values 0,2,4,3,5,7 — injective, not nested.
    let l = bind("((2:3, 3:2), (4_PE))", &toy4(), &[6, 4]);
    let mut seen = HashSet::new();
    for i in 0..6 {
        for j in 0..4 {
            let p = l.place(&[i, j]).unwrap();
            assert!(seen.insert((p.pos.clone(), p.addr)));
            let pos: Vec<u64> = p.pos.iter().map(|x| x.unwrap_or(0)).collect();
            assert_eq!(l.element_at(&pos, p.addr, p.w, p.t), Some(vec![i, j]));
        }
    }
    assert_eq!(l.element_at(&[0], 1, 0, 0), None);
}

#[test]
fn idle_positions_and_padding_are_counted() {
    let m = mncore2_tree();
    let l =
        TensorLayout::parse("(10,7)/((2_L1B, 6:8), (1_PE, 8:1))", &m, None, DType::F32).unwrap();
    let st = l.level_stats();
    assert_eq!(st[1].name, "L1B");
    assert_eq!((st[1].used, st[1].idle), (2, 6));
    assert_eq!((st[3].used, st[3].idle), (1, 3));
    assert_eq!(l.padding_elems(), 12 * 8 - 70);
    assert_eq!(l.used_positions(1), vec![0, 1]);
    assert_eq!(l.used_positions(3), vec![0]);
}

// ---- Properties on random layouts ------------------------------------------------

/// A random layout over a random tree: (machine, text, shape).
pub(crate) fn arb_layout() -> impl Strategy<Value = (Machine, String, Vec<u64>)> {
    // Machine: 1-3 addressable levels with fanouts 2..=8, an unaddressable one sometimes.
    let mach = (
        prop::collection::vec(2u64..=8, 1..=3),
        any::<bool>(),
        1u64..=3,
    );
    mach.prop_flat_map(|(fan, fold, slots_log)| {
        let nlev = fan.len();
        // Each sub-axis: (group 0..rank, kind 0 mem / 1 level / 2 W / 3 Time, level idx, size)
        let subs = prop::collection::vec((0usize..3, 0u8..4, 0usize..nlev, 1u64..=4), 1..=7);
        (
            Just(fan),
            Just(fold),
            Just(slots_log),
            subs,
            1usize..=3,
            any::<bool>(),
            any::<u64>(),
        )
    })
    .prop_filter_map(
        "valid layout",
        |(fan, fold, slots_log, subs, rank, explicit, seed)| {
            let mut names: Vec<(String, u64, bool)> = Vec::new();
            if fold {
                names.push(("G".into(), 2, false));
            }
            for (i, f) in fan.iter().enumerate() {
                names.push((format!("L{i}"), *f, true));
            }
            let lv: Vec<(&str, u64, bool)> =
                names.iter().map(|(n, c, a)| (n.as_str(), *c, *a)).collect();
            let word = 1u64 << slots_log; // f16-ish: element bytes 1 (u8) below
            let m = tree(&lv, word, 1 << 20);
            let mut groups: Vec<Vec<String>> = vec![Vec::new(); rank];
            let mut level_budget: Vec<u64> =
                fan.iter().map(|&f| f * if fold { 2 } else { 1 }).collect();
            if fold {
                level_budget[0] = fan[0] * 2;
            }
            let mut w_budget = 1u64 << slots_log;
            for (g, kind, li, size) in subs {
                let g = g % rank;
                let s = match kind {
                    1 if level_budget[li].is_multiple_of(size) => {
                        level_budget[li] /= size;
                        format!("{size}_L{li}")
                    }
                    2 if w_budget.is_multiple_of(size) && size <= w_budget => {
                        w_budget /= size;
                        format!("{size}_W")
                    }
                    3 => format!("{size}_Time"),
                    _ => format!("{size}"),
                };
                groups[g].push(s);
            }
            for g in groups.iter_mut() {
                if g.is_empty() {
                    g.push("1".into());
                }
            }
            let shape: Vec<u64> = groups
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|s| s.split(['_', ':']).next().unwrap().parse::<u64>().unwrap())
                        .product()
                })
                .collect();
            // Some padding.
            let logical: Vec<u64> = shape
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    if (seed >> i) & 1 == 1 && n > 1 {
                        n - 1
                    } else {
                        n
                    }
                })
                .collect();
            let pad = if logical != shape {
                format!(
                    "({})/",
                    logical
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                )
            } else {
                String::new()
            };
            let body: Vec<String> = groups
                .iter()
                .map(|g| format!("({})", g.join(", ")))
                .collect();
            // Sometimes name the replicated levels in B@ (inside or after the parentheses).
            let full: Vec<u64> = fan
                .iter()
                .enumerate()
                .map(|(i, &f)| if fold && i == 0 { f * 2 } else { f })
                .collect();
            let rep: Vec<String> = (0..fan.len())
                .filter(|&i| level_budget[i] == full[i])
                .map(|i| format!("L{i}"))
                .collect();
            let bcast = if explicit && !rep.is_empty() {
                format!("; B@[{}]", rep.join(","))
            } else {
                String::new()
            };
            let text = format!("{pad}({}{bcast})", body.join(", "));
            let l = TensorLayout::parse(&text, &m, None, DType::U8).ok()?;
            let _ = l;
            Some((m, text, logical))
        },
    )
}

pub(crate) fn all_indices(shape: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|p| (0..n).map(move |i| [p.clone(), vec![i]].concat()))
            .collect();
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn canonical_print_parses_back((m, text, shape) in arb_layout()) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        let again = TensorLayout::parse(&l.canonical(), &m, Some(&shape), DType::U8).unwrap();
        prop_assert_eq!(&l, &again);
        prop_assert_eq!(l.canonical(), again.canonical());
    }

    #[test]
    fn placement_is_injective_and_inverted((m, text, shape) in arb_layout()) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        let mut cells = HashSet::new();
        for idx in all_indices(&shape) {
            let p = l.place(&idx).unwrap();
            prop_assert!(p.addr < l.footprint_words());
            prop_assert!(p.w < l.slots());
            prop_assert!(p.t < l.time_span());
            // Each split level's position is within its fan-out.
            for (lv, pos) in l.levels().iter().zip(&p.pos) {
                prop_assert_eq!(pos.is_none(), lv.replicated);
                if let Some(x) = pos { prop_assert!(*x < lv.fanout); }
            }
            prop_assert!(cells.insert((p.pos.clone(), p.addr, p.w, p.t)), "collision at {:?}", idx);
            // The inverse, at every replica position (replicated levels: any position).
            let pos: Vec<u64> = p.pos.iter().zip(l.levels()).map(|(x, lv)| x.unwrap_or(lv.fanout - 1)).collect();
            prop_assert_eq!(l.element_at(&pos, p.addr, p.w, p.t), Some(idx.clone()));
        }
    }

    #[test]
    fn every_cell_holds_at_most_one_element_and_inverse_agrees((m, text, shape) in arb_layout()) {
        // Walk every cell of the machine (for small trees) and check: the elements found
        // cover the logical tensor exactly once per replica.
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        let positions: Vec<u64> = l.levels().iter().map(|lv| lv.fanout).collect();
        let cells = positions.iter().product::<u64>() * l.footprint_words() * l.slots() * l.time_span();
        prop_assume!(cells <= 200_000);
        let mut count: BTreeMap<Vec<u64>, u64> = BTreeMap::new();
        let mut pos = vec![0u64; positions.len()];
        loop {
            for addr in 0..l.footprint_words() {
                for w in 0..l.slots() {
                    for t in 0..l.time_span() {
                        if let Some(e) = l.element_at(&pos, addr, w, t) {
                            let p = l.place(&e).unwrap();
                            prop_assert_eq!((p.addr, p.w, p.t), (addr, w, t));
                            *count.entry(e).or_default() += 1;
                        }
                    }
                }
            }
            // next position (odometer)
            let mut i = pos.len();
            loop {
                if i == 0 { break; }
                i -= 1;
                pos[i] += 1;
                if pos[i] < positions[i] { break; }
                pos[i] = 0;
                if i == 0 { i = usize::MAX; break; }
            }
            if i == usize::MAX || pos.is_empty() { break; }
        }
        prop_assert_eq!(count.len() as u64, l.logical_elems());
        for (_, c) in count { prop_assert_eq!(c, l.replicas()); }
    }

    #[test]
    fn closed_form_counts_equal_enumeration((m, text, shape) in arb_layout()) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        let padded = l.padded_shape().to_vec();
        // Per PE shard (key: split positions), collect padded elements and words.
        let mut per_pe: BTreeMap<Vec<Option<u64>>, (u64, BTreeSet<(u64, u64)>)> = BTreeMap::new();
        let nlev = l.levels().len();
        let mut per_level: Vec<BTreeMap<Vec<Option<u64>>, BTreeSet<Vec<u64>>>> = vec![BTreeMap::new(); nlev];
        let mut positions: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); nlev];
        for idx in all_indices(&padded) {
            let p = l.place_padded(&idx);
            let e = per_pe.entry(p.pos.clone()).or_default();
            e.0 += 1;
            e.1.insert((p.addr, p.t));
            for i in 0..nlev {
                per_level[i].entry(p.pos[..=i].to_vec()).or_default().insert(idx.clone());
                if let Some(x) = p.pos[i] { positions[i].insert(x); }
            }
        }
        for (elems, words) in per_pe.values() {
            prop_assert_eq!(*elems, l.elems_per_pe());
            prop_assert_eq!(words.len() as u64, l.words_per_pe());
        }
        prop_assert_eq!(per_pe.len() as u64, l.distinct_shards());
        let stats = l.level_stats();
        for i in 0..nlev {
            for set in per_level[i].values() {
                prop_assert_eq!(set.len() as u64, stats[i].elems_per_node);
            }
            if !stats[i].replicated {
                prop_assert_eq!(positions[i].iter().copied().collect::<Vec<_>>(), l.used_positions(i));
                prop_assert_eq!(positions[i].len() as u64, stats[i].used);
            }
        }
        prop_assert_eq!(l.padded_elems() - l.logical_elems(), l.padding_elems());
    }
}

/// A small deterministic generator (xorshift64*), so the no-panic sweep is reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn no_panic_on_100k_random_and_mutated_layouts() {
    let machines = [toy4(), mncore1_tree(), mncore2_tree()];
    let seeds = [
        "((4_PE, 3:8), (8:1))",
        "((2_PE:2, 6:4), (2_PE:1, 4:1))",
        "(10,7)/((3:7, 4_PE), (7:1))",
        "((12:8), (8:1); B@[PE])",
        "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))",
        "((4_PE:1, 16:1, 2_W:1)) B@[MAB,L1B,L2B]",
        "(256,16)/((8_L2B:1, 4:2, 8_L1B:1), (2:1, 4_PE:1, 2_W:1); B@[MAB])",
        "((2_Time:1, 3:8, 4_PE:1), (8:1))",
    ];
    let alphabet: &[u8] = b"()[],;:/_@B0123456789 PEWTimeL12MABx\xff-";
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut accepted = 0;
    for i in 0..100_000 {
        let mut bytes: Vec<u8> = if i % 10 == 0 {
            (0..rng.below(40))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect()
        } else {
            seeds[rng.below(seeds.len())].as_bytes().to_vec()
        };
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(bytes.len() + 1);
            match rng.below(4) {
                0 if at < bytes.len() => {
                    bytes.remove(at);
                }
                1 => bytes.insert(at, alphabet[rng.below(alphabet.len())]),
                2 if at < bytes.len() => bytes[at] = alphabet[rng.below(alphabet.len())],
                _ => bytes.insert(at, b"9999999999"[rng.below(10)]),
            }
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let m = &machines[rng.below(machines.len())];
        let dtype = [DType::F32, DType::F16, DType::F64, DType::U8][rng.below(4)];
        let shape: Option<Vec<u64>> = match rng.below(3) {
            0 => None,
            1 => Some(vec![12, 8]),
            _ => Some(
                (0..1 + rng.below(3))
                    .map(|_| rng.below(2000) as u64)
                    .collect(),
            ),
        };
        let r = std::panic::catch_unwind(|| {
            if let Ok(l) = TensorLayout::parse(&text, m, shape.as_deref(), dtype) {
                // Exercise the accepted layout a little.
                let _ = l.canonical();
                let _ = l.level_stats();
                let idx: Vec<u64> = l
                    .logical_shape()
                    .iter()
                    .map(|&n| n.saturating_sub(1))
                    .collect();
                if let Some(p) = l.place(&idx) {
                    let pos: Vec<u64> = p.pos.iter().map(|x| x.unwrap_or(0)).collect();
                    assert_eq!(l.element_at(&pos, p.addr, p.w, p.t), Some(idx));
                }
                true
            } else {
                false
            }
        });
        match r {
            Ok(ok) => accepted += ok as u32,
            Err(_) => panic!("panicked on {text:?} with shape {shape:?} on {}", m.name),
        }
    }
    // The sweep must reach the accepting paths too, not only the error paths.
    eprintln!("accepted {accepted} of 100000");
    assert!(accepted > 1000, "only {accepted} accepted");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn shard_walk_matches_the_placement_map((m, text, shape) in arb_layout()) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        // Every used PE: its shard walk yields exactly the padded elements placed there.
        let mut seen = 0u64;
        let fan: Vec<u64> = l.levels().iter().map(|x| x.fanout).collect();
        let total: u64 = fan.iter().product();
        for flat in 0..total {
            let mut rem = flat;
            let mut pos = vec![0u64; fan.len()];
            for i in (0..fan.len()).rev() { pos[i] = rem % fan[i]; rem /= fan[i]; }
            let Some(sh) = l.shard(&pos) else { continue };
            let mut n = 0u64;
            let mut valid = 0u64;
            sh.for_each(|idx, addr, w, t| {
                if idx.iter().zip(&shape).all(|(i, d)| i < d) { valid += 1; }
                let p = l.place_padded(idx);
                for (i, x) in p.pos.iter().enumerate() {
                    if let Some(x) = x { assert_eq!(*x, pos[i]); }
                }
                assert_eq!((p.addr, p.w, p.t), (addr, w, t));
                n += 1;
            });
            prop_assert_eq!(n, sh.len());
            prop_assert_eq!(valid, sh.valid_elems(&shape));
            seen += n;
        }
        prop_assert_eq!(seen, l.padded_elems() * l.replicas());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn axis_tables_agree_with_place((m, text, shape) in arb_layout()) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        let t = l.axis_tables();
        let mut out = vec![0u64; t.width()];
        let n = l.levels().len();
        for idx in all_indices(l.padded_shape()) {
            let p = l.place_padded(&idx);
            t.locate(&idx, &mut out);
            for (i, pos) in p.pos.iter().enumerate() {
                prop_assert_eq!(pos.unwrap_or(0), out[i]);
            }
            prop_assert_eq!((p.addr, p.w, p.t), (out[n], out[n + 1], out[n + 2]));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    #[test]
    fn linear_walk_matches_the_plain_walk((m, text, shape) in arb_layout(), wseed in any::<u64>()) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        let weights: Vec<u64> = (0..shape.len()).map(|g| (wseed >> (g * 8)) & 0xff).collect();
        let limits: Vec<u64> = shape.iter().enumerate().map(|(g, &n)| n.saturating_sub((wseed >> (g + 40)) & 1)).collect();
        let fan: Vec<u64> = l.levels().iter().map(|x| x.fanout).collect();
        let total: u64 = fan.iter().product();
        for flat in 0..total.min(64) {
            let mut rem = flat;
            let mut pos = vec![0u64; fan.len()];
            for i in (0..fan.len()).rev() { pos[i] = rem % fan[i]; rem /= fan[i]; }
            let Some(sh) = l.shard(&pos) else { continue };
            let mut plain = Vec::new();
            sh.for_each(|idx, a, w, t| {
                let lin: u64 = idx.iter().zip(&weights).map(|(i, w)| i * w).sum();
                let ok = idx.iter().zip(&limits).all(|(i, n)| i < n);
                plain.push((ok, lin, a, w, t));
            });
            let mut fast = Vec::new();
            sh.for_each_linear(&weights, &limits, |ok, lin, a, w, t| fast.push((ok, lin, a, w, t)));
            prop_assert_eq!(plain, fast);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// The closed-form loop nest of a shard holds exactly the cells of the per-element
    /// walk (the same linear offsets, words, slots and steps, in the same order) when
    /// every cell lies within the limits, and is refused when one does not.
    #[test]
    fn nest_matches_the_plain_walk((m, text, shape) in arb_layout(), wseed in any::<u64>(), cut in any::<bool>()) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        let weights: Vec<u64> = (0..shape.len()).map(|g| (wseed >> (g * 8)) & 0xff).collect();
        // Limits at the padded shape (every cell valid) or at the logical shape, lowered
        // on some axes.
        let limits: Vec<u64> = if cut {
            shape.iter().enumerate().map(|(g, &n)| n.saturating_sub((wseed >> (g + 40)) & 1)).collect()
        } else {
            l.padded_shape().to_vec()
        };
        let fan: Vec<u64> = l.levels().iter().map(|x| x.fanout).collect();
        let total: u64 = fan.iter().product();
        for flat in 0..total.min(64) {
            let mut rem = flat;
            let mut pos = vec![0u64; fan.len()];
            for i in (0..fan.len()).rev() { pos[i] = rem % fan[i]; rem /= fan[i]; }
            let Some(sh) = l.shard(&pos) else { continue };
            let mut plain = Vec::new();
            let mut all_ok = true;
            sh.for_each(|idx, a, w, t| {
                let lin: u64 = idx.iter().zip(&weights).map(|(i, w)| i * w).sum();
                all_ok &= idx.iter().zip(&limits).all(|(i, n)| i < n);
                plain.push(Cell { lin, addr: a, w, t });
            });
            let nest = sh.nest(&weights, &limits);
            prop_assert_eq!(nest.is_some(), all_ok, "{} at {:?}", text, pos);
            let Some(nest) = nest else { continue };
            let mut closed = Vec::new();
            nest.for_each_cell(|c| closed.push(c));
            prop_assert_eq!(nest.cells(), closed.len() as u64);
            prop_assert_eq!(nest.words(), plain.iter().filter(|c| c.w == 0).count() as u64);
            prop_assert_eq!(closed, plain);
        }
    }
}

proptest! {
    /// The members of each class are its sub-axes in order of appearance (group by
    /// group), as a scan of every class in turn finds them; classes past the count
    /// have none.
    #[test]
    fn members_are_each_class_in_order(
        groups in proptest::collection::vec(
            proptest::collection::vec(0usize..9, 0..6),
            0..5,
        ),
        classes in 3usize..8,
    ) {
        let groups: Vec<Vec<SubAxis>> = (groups.iter())
            .map(|g| {
                (g.iter())
                    .map(|&c| SubAxis { size: 2, class: super::classes::class_at(c), stride: 1 })
                    .collect()
            })
            .collect();
        let m = super::classes::Members::new(&groups, classes);
        prop_assert_eq!(m.classes(), classes);
        let mut all = Vec::new();
        for c in 0..classes {
            let want: Vec<(usize, usize)> = (groups.iter().enumerate())
                .flat_map(|(g, axes)| {
                    (axes.iter().enumerate())
                        .filter(|(_, a)| a.class == super::classes::class_at(c))
                        .map(move |(k, _)| (g, k))
                })
                .collect();
            prop_assert_eq!(m.of(c), &want[..]);
            all.extend(want);
        }
        prop_assert_eq!(&m.subs, &all);
    }
}

/// A nested class inverts by greedy division whether its order is kept in place (a
/// few sub-axes) or in a vector (many): every value back to its digits.
#[test]
fn nested_classes_invert_with_few_and_many_sub_axes() {
    for n in [4usize, 22, 23, 30] {
        // Sub-axis k of size 2 and stride 2^(n-1-k): binary digits, most significant first.
        let axes: Vec<SubAxis> = (0..n)
            .map(|k| SubAxis {
                size: 2,
                class: Class::Mem,
                stride: 1 << (n - 1 - k),
            })
            .collect();
        let inv = super::inverse::build_inverse(&axes, 1 << n).expect("nested");
        let many = matches!(
            &inv,
            super::inverse::Inverse::Greedy(super::inverse::Order::Many(_))
        );
        assert_eq!(many, n > 22, "{n} sub-axes");
        for value in [0u64, 1, (1 << n) - 1, 0b1011 << (n - 4)] {
            let digits = super::inverse::invert(&inv, &axes, value).expect("in range");
            let back: u64 = (digits.iter().zip(&axes)).map(|(d, a)| d * a.stride).sum();
            assert_eq!(back, value, "{n} sub-axes, value {value}");
        }
        assert!(super::inverse::invert(&inv, &axes, 1 << n).is_none());
    }
}
