//! TensorLayouts on the shipped machine presets, through the public API: the worked
//! examples of docs/layout.md, the real mncore2 layouts, and a sweep of layout families on
//! every preset where the placement map, its inverse and the closed-form counts are
//! checked against brute force.

use mnsim_arch::layout::Placement;
use mnsim_arch::{DType, Machine, PRESETS, TensorLayout, preset};
use std::collections::{BTreeMap, BTreeSet, HashMap};

fn machine(name: &str) -> Machine {
    preset(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn bind(text: &str, m: &Machine, shape: &[u64], dtype: DType) -> TensorLayout {
    TensorLayout::parse(text, m, Some(shape), dtype)
        .unwrap_or_else(|e| panic!("{text} on {} {shape:?}: {e}", m.name))
}

/// A position per addressable level for `element_at`; replicated levels get `rep`.
fn cell_pos(p: &Placement, rep: u64) -> Vec<u64> {
    p.pos.iter().map(|x| x.unwrap_or(rep)).collect()
}

/// Every index of `shape`, row-major.
fn all_indices(shape: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![Vec::new()];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..n).map(move |k| {
                    let mut q = p.clone();
                    q.push(k);
                    q
                })
            })
            .collect();
    }
    out
}

fn assert_round_trip(l: &TensorLayout, m: &Machine, dtype: DType) {
    let text = l.canonical();
    let again = TensorLayout::parse(&text, m, Some(l.logical_shape()), dtype)
        .unwrap_or_else(|e| panic!("canonical {text} does not parse back: {e}"));
    assert_eq!(&again, l, "{text}");
    assert_eq!(again.canonical(), text);
    // The canonical form also binds without a shape: the pad prefix (or the groups)
    // carries it.
    let bare = TensorLayout::parse(&text, m, None, dtype).unwrap();
    assert_eq!(&bare, l, "{text} without --shape");
}

// ---- docs/layout.md worked examples -------------------------------------------------------

#[test]
fn spec_worked_examples_on_toy4() {
    let m = machine("toy4");
    // (layout, shape, element, PE (None = `*`), word, canonical, footprint, replicas)
    type Case<'a> = (
        &'a str,
        [u64; 2],
        [u64; 2],
        Option<u64>,
        u64,
        &'a str,
        u64,
        u64,
    );
    let cases: &[Case] = &[
        // Row 5 = PE 5/3 = 1, row-in-PE 5%3 = 2: word 2·8 + 3 = 19.
        (
            "((4_PE, 3:8), (8:1))",
            [12, 8],
            [5, 3],
            Some(1),
            19,
            "((4_PE:1, 3:8), (8:1))",
            24,
            1,
        ),
        // Row 5 = row-in-PE 5/4 = 1, PE 5%4 = 1: word 1·8 + 3 = 11.
        (
            "((3:8, 4_PE), (8:1))",
            [12, 8],
            [5, 3],
            Some(1),
            11,
            "((3:8, 4_PE:1), (8:1))",
            24,
            1,
        ),
        // Row 7 = (1, 1) of 2×6, column 5 = (1, 1) of 2×4: PE 1·2 + 1·1 = 3, word 1·4 + 1 = 5.
        (
            "((2_PE:2, 6:4), (2_PE:1, 4:1))",
            [12, 8],
            [7, 5],
            Some(3),
            5,
            "((2_PE:2, 6:4), (2_PE:1, 4:1))",
            24,
            1,
        ),
        // Padded to 12×7. Row 9 = row-in-PE 9/4 = 2, PE 9%4 = 1: word 2·7 + 6 = 20.
        (
            "(10,7)/((3:7, 4_PE), (7:1))",
            [10, 7],
            [9, 6],
            Some(1),
            20,
            "(10,7)/((3:7, 4_PE:1), (7:1))",
            21,
            1,
        ),
        // Every PE holds a copy: word 5·8 + 3 = 43.
        (
            "((12:8), (8:1); B@[PE])",
            [12, 8],
            [5, 3],
            None,
            43,
            "((12:8), (8:1); B@[PE])",
            96,
            4,
        ),
    ];
    for &(text, shape, idx, pe, word, canonical, footprint, replicas) in cases {
        let l = bind(text, &m, &shape, DType::F32);
        let p = l.place(&idx).unwrap();
        assert_eq!(p.pos, vec![pe], "{text}");
        assert_eq!((p.addr, p.w, p.t), (word, 0, 0), "{text}");
        assert_eq!(l.canonical(), canonical, "{text}");
        assert_eq!(l.footprint_words(), footprint, "{text}");
        assert_eq!(l.replicas(), replicas, "{text}");
        // The cell holds that element, on every replica.
        for rep in 0..4 {
            assert_eq!(
                l.element_at(&cell_pos(&p, rep), p.addr, p.w, p.t),
                Some(idx.to_vec()),
                "{text}"
            );
        }
        assert_round_trip(&l, &m, DType::F32);
    }
}

#[test]
fn spec_padded_example_counts_its_padding() {
    let m = machine("toy4");
    let l = bind("(10,7)/((3:7, 4_PE), (7:1))", &m, &[10, 7], DType::F32);
    assert_eq!(l.padded_shape(), &[12, 7]);
    assert_eq!(l.logical_shape(), &[10, 7]);
    assert_eq!((l.padding_elems(), l.padded_elems()), (14, 84));
    // Rows 10 and 11 are padding: row 10 = row-in-PE 2 on PE 2, word 14.
    let p = l.place_padded(&[10, 0]);
    assert_eq!((p.pos.clone(), p.addr), (vec![Some(2)], 14));
    assert_eq!(l.element_at(&[2], 14, 0, 0), None);
    assert_eq!(l.padded_element_at(&[2], 14, 0, 0), Some(vec![10, 0]));
    assert!(l.place(&[10, 0]).is_none());
}

#[test]
fn spec_worked_example_on_mncore1() {
    let m = machine("mncore1");
    let text = "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))";
    let l = bind(text, &m, &[1024, 512], DType::F32);
    // Row 1000 = 15·64 + 5·8 + 0: L2B 15, L1B 5, row-in-PE 0.
    // Column 300 = 9·32 + 3·4 + 0: MAB 9, column-in-PE 3, PE 0. Word 0·8 + 3 = 3.
    let p = l.place(&[1000, 300]).unwrap();
    assert_eq!(p.pos, vec![Some(15), Some(5), Some(9), Some(0)]);
    assert_eq!((p.addr, p.w, p.t), (3, 0, 0));
    assert_eq!(l.element_at(&[15, 5, 9, 0], 3, 0, 0), Some(vec![1000, 300]));
    // Row 1023 = 15·64 + 7·8 + 7, column 511 = 15·32 + 7·4 + 3: word 7·8 + 7 = 63.
    let p = l.place(&[1023, 511]).unwrap();
    assert_eq!(p.pos, vec![Some(15), Some(7), Some(15), Some(3)]);
    assert_eq!(p.addr, 63);
    // Row 77 = 1·64 + 1·8 + 5, column 130 = 4·32 + 0·4 + 2: word 5·8 + 0 = 40.
    let p = l.place(&[77, 130]).unwrap();
    assert_eq!(p.pos, vec![Some(1), Some(1), Some(4), Some(2)]);
    assert_eq!(p.addr, 40);

    assert_eq!(
        l.canonical(),
        "((16_L2B:1, 8_L1B:1, 8:8), (16_MAB:1, 8:1, 4_PE:1))"
    );
    assert_round_trip(&l, &m, DType::F32);
    assert_eq!(l.footprint_words(), 64);
    assert_eq!(l.replicas(), 1);
    assert_eq!(l.padding_elems(), 0);
}

#[test]
fn mncore1_example_level_stats() {
    let m = machine("mncore1");
    let l = bind(
        "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))",
        &m,
        &[1024, 512],
        DType::F32,
    );
    let st = l.level_stats();
    let got: Vec<(&str, u64, u64, u64, bool)> = st
        .iter()
        .map(|s| (s.name.as_str(), s.fanout, s.used, s.idle, s.replicated))
        .collect();
    assert_eq!(
        got,
        vec![
            ("L2B", 16, 16, 0, false),
            ("L1B", 8, 8, 0, false),
            ("MAB", 16, 16, 0, false),
            ("PE", 4, 4, 0, false),
        ]
    );
    // 1024×512 over 8192 PEs: 64 elements in 64 words each (f32: one per 8-byte word).
    assert_eq!(l.elems_per_pe(), 64);
    assert_eq!(l.words_per_pe(), 64);
    assert_eq!(l.words_per_step(), 64);
    assert_eq!(l.time_steps(), 1);
    assert_eq!(l.pes_used(), 8192);
    assert_eq!(l.distinct_shards(), 8192);
    let nodes: Vec<u64> = st.iter().map(|s| s.nodes_used).collect();
    assert_eq!(nodes, vec![16, 128, 2048, 8192]);
    let elems: Vec<u64> = st.iter().map(|s| s.elems_per_node).collect();
    assert_eq!(elems, vec![32768, 4096, 256, 64]);
    let words: Vec<u64> = st.iter().map(|s| s.words_per_node).collect();
    assert_eq!(words, vec![32768, 4096, 256, 64]);
}

// ---- The real mncore2 layouts of references/mncore.md --------------------------------

#[test]
fn mncore2_replicated_vector() {
    let m = machine("mncore2");
    let l = bind(
        "((4_PE:1, 16:1, 2_W:1)) B@[MAB,L1B,L2B]",
        &m,
        &[128],
        DType::F32,
    );
    assert_eq!(l.canonical(), "((4_PE:1, 16:1, 2_W:1); B@[L2B,L1B,MAB])");
    assert_round_trip(&l, &m, DType::F32);
    // 128 f32 = 4 PE × 16 LW × 2 per LW; copies on every MAB, L1B and L2B.
    assert_eq!(l.footprint_words(), 16);
    assert_eq!(l.slots(), 2);
    assert_eq!(l.replicas(), 8 * 8 * 16);
    assert_eq!(l.pes_used(), 4096);
    assert_eq!(l.distinct_shards(), 4);
    assert_eq!((l.elems_per_pe(), l.words_per_pe()), (32, 16));
    let rep: Vec<bool> = l.levels().iter().map(|x| x.replicated).collect();
    assert_eq!(rep, vec![true, true, true, false]);
    // Element i: PE i/32, word (i/2)%16, slot i%2.
    for (i, pe, addr, w) in [(0, 0, 0, 0), (37, 1, 2, 1), (64, 2, 0, 0), (127, 3, 15, 1)] {
        let p = l.place(&[i]).unwrap();
        assert_eq!(p.pos, vec![None, None, None, Some(pe)], "element {i}");
        assert_eq!((p.addr, p.w, p.t), (addr, w, 0), "element {i}");
        // Any replica: L2B 7, L1B 3, MAB 12.
        assert_eq!(l.element_at(&[7, 3, 12, pe], addr, w, 0), Some(vec![i]));
    }
    // As f16 the word has 4 slots: only half of each is used.
    let h = bind(
        "((4_PE:1, 16:1, 2_W:1)) B@[MAB,L1B,L2B]",
        &m,
        &[128],
        DType::F16,
    );
    assert_eq!(h.slots(), 4);
    assert_eq!(h.element_at(&[0, 0, 0, 0], 0, 2, 0), None);
}

#[test]
fn mncore2_matrix_over_l2b_l1b_pe() {
    let m = machine("mncore2");
    let text = "(256,16)/((8_L2B:1, 4:2, 8_L1B:1), (2:1, 4_PE:1, 2_W:1); B@[MAB])";
    let l = bind(text, &m, &[256, 16], DType::F32);
    // The pad prefix equals the group products: no padding, so canonical drops it.
    assert_eq!(
        l.canonical(),
        "((8_L2B:1, 4:2, 8_L1B:1), (2:1, 4_PE:1, 2_W:1); B@[MAB])"
    );
    assert_round_trip(&l, &m, DType::F32);
    assert_eq!(l.padding_elems(), 0);
    // Words: 3·2 + 1·1 + 1 = 8 per PE, two f32 per LW.
    assert_eq!(l.footprint_words(), 8);
    assert_eq!((l.elems_per_pe(), l.words_per_pe()), (16, 8));
    // Group folds into L2B: 8 positions across the board, all used.
    let st = l.level_stats();
    let got: Vec<(&str, u64, u64, bool)> = st
        .iter()
        .map(|s| (s.name.as_str(), s.fanout, s.used, s.replicated))
        .collect();
    assert_eq!(
        got,
        vec![
            ("L2B", 8, 8, false),
            ("L1B", 8, 8, false),
            ("MAB", 16, 16, true),
            ("PE", 4, 4, false),
        ]
    );
    assert_eq!(l.replicas(), 16);
    assert_eq!(l.distinct_shards(), 256);
    assert_eq!(l.pes_used(), 4096);
    // Row r: L2B r/32, word-row (r/8)%4, L1B r%8. Column c: word-col c/8, PE (c/2)%4,
    // slot c%2. Word = word-row·2 + word-col.
    //   (200,13): L2B 6, word-row 1, L1B 0; word-col 1, PE 2, slot 1 -> word 3.
    //   (255,15): L2B 7, word-row 3, L1B 7; word-col 1, PE 3, slot 1 -> word 7.
    //   (9,4):    L2B 0, word-row 1, L1B 1; word-col 0, PE 2, slot 0 -> word 2.
    for (idx, l2b, l1b, pe, addr, w) in [
        ([200, 13], 6, 0, 2, 3, 1),
        ([255, 15], 7, 7, 3, 7, 1),
        ([9, 4], 0, 1, 2, 2, 0),
        ([0, 0], 0, 0, 0, 0, 0),
    ] {
        let p = l.place(&idx).unwrap();
        assert_eq!(p.pos, vec![Some(l2b), Some(l1b), None, Some(pe)], "{idx:?}");
        assert_eq!((p.addr, p.w, p.t), (addr, w, 0), "{idx:?}");
        for mab in [0, 15] {
            assert_eq!(
                l.element_at(&[l2b, l1b, mab, pe], addr, w, 0),
                Some(idx.to_vec())
            );
        }
    }
    // B@ after the groups means the same.
    let outside = bind(
        "((8_L2B:1, 4:2, 8_L1B:1), (2:1, 4_PE:1, 2_W:1)) B@[MAB]",
        &m,
        &[256, 16],
        DType::F32,
    );
    assert_eq!(outside, l);
}

// ---- Sweep: layout families on every preset ---------------------------------------

/// A family member: (what, layout, logical shape, dtype).
type Member = (&'static str, String, Vec<u64>, DType);

/// Layouts of several kinds written for machine `m`, spanning all its addressable levels.
fn family(m: &Machine) -> Vec<Member> {
    let addr = m.addressable_levels();
    let split = |names: &[(String, u64)]| -> String {
        names
            .iter()
            .map(|(n, f)| format!("{f}_{n}, "))
            .collect::<String>()
    };
    let all: Vec<(String, u64)> = addr.iter().map(|a| (a.name.clone(), a.fanout)).collect();
    let pes: u64 = all.iter().map(|x| x.1).product();
    let lowest = all.last().unwrap().clone();
    let above = &all[..all.len() - 1];
    let lv = split(&all);
    let mut out: Vec<Member> = vec![
        (
            "row-split",
            format!("(({lv}3:8), (8:1))"),
            vec![pes * 3, 8],
            DType::F32,
        ),
        (
            "column-split",
            format!("((3:8), ({lv}8:1))"),
            vec![3, pes * 8],
            DType::F32,
        ),
        (
            "column-split, memory-major",
            format!("((3:16), (2:8, {lv}8:1))"),
            vec![3, 2 * pes * 8],
            DType::F32,
        ),
        (
            "padded",
            format!("({},5)/(({lv}3:6), (6:1))", pes * 3 - 2),
            vec![pes * 3 - 2, 5],
            DType::F32,
        ),
        (
            "replicated above the lowest level",
            format!("((3:8, {}_{}), (8:1))", lowest.1, lowest.0),
            vec![3 * lowest.1, 8],
            DType::F32,
        ),
        (
            "fully replicated",
            "((5:3), (3:1))".to_string(),
            vec![5, 3],
            DType::F32,
        ),
        (
            "idle positions",
            format!("((1_{}, 3:4), (2_{}, 4:1))", lowest.0, all[0].0),
            vec![3, 8],
            DType::F32,
        ),
        (
            "W-packed, all slots",
            format!("(({lv}2:2), (2:1, {}_W))", m.word_bytes / 2),
            vec![pes * 2, 2 * (m.word_bytes / 2)],
            DType::F16,
        ),
        (
            "W-packed, f32",
            format!(
                "(({lv}2:4), (4:1, {}_W))",
                m.word_bytes / DType::F32.bytes()
            ),
            vec![pes * 2, 4 * (m.word_bytes / DType::F32.bytes())],
            DType::F32,
        ),
        (
            "Time-stepped",
            format!("((2_Time, {lv}3:8), (8:1))"),
            vec![2 * pes * 3, 8],
            DType::F32,
        ),
        (
            "Time-stepped, interleaved, padded",
            format!(
                "({},7)/((3:8, {lv}2_Time:1), (2_Time:2, 4:1))",
                3 * pes * 2 - 1
            ),
            vec![3 * pes * 2 - 1, 7],
            DType::F32,
        ),
        (
            "level split over two axes",
            format!(
                "(({}_{}:2, 3:4), (2_{}:1, 4:1))",
                lowest.1 / 2,
                lowest.0,
                lowest.0
            ),
            vec![3 * lowest.1 / 2, 8],
            DType::F32,
        ),
    ];
    if !above.is_empty() {
        out.push((
            "upper levels only, lowest replicated",
            format!("(({}4:2), (2:1))", split(above)),
            vec![4 * pes / lowest.1, 2],
            DType::F32,
        ));
        out.push((
            "levels in reverse order",
            format!(
                "(({}, 2:4), (4:1))",
                all.iter()
                    .rev()
                    .map(|(n, f)| format!("{f}_{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            vec![2 * pes, 4],
            DType::F32,
        ));
    }
    // W-packed f16 on mncore2 explicitly: an 8-byte LW holds 4 halves.
    if m.name == "mncore2" {
        out.push((
            "mncore2 f16, 4 per LW",
            "((8_L2B, 8_L1B, 2:4), (16_MAB, 4_PE, 4:1, 4_W))".to_string(),
            vec![128, 1024],
            DType::F16,
        ));
    }
    out
}

/// The family is checked element by element, so presets of more than 2^15 PEs (the MN-3
/// zone: 2^20) are left out; their levels are the MN-3 node's, which is checked.
#[test]
fn family_sweep_on_every_preset() {
    for name in PRESETS {
        let m = machine(name);
        if m.leaf_count() > 1 << 15 {
            continue;
        }
        let members = family(&m);
        assert!(members.len() >= 12);
        for (what, text, shape, dtype) in members {
            let ctx = format!("{name}, {what}: {text} {shape:?} {dtype}");
            let l = TensorLayout::parse(&text, &m, Some(&shape), dtype)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            check_against_brute_force(&l, &ctx);
            assert_round_trip(&l, &m, dtype);
        }
    }
}

/// The split positions of one PE (`None` for replicated levels).
type Shard = Vec<Option<u64>>;

/// Places every padded element and checks the map, its inverse and every closed-form
/// count against what the enumeration finds.
fn check_against_brute_force(l: &TensorLayout, ctx: &str) {
    let nlev = l.levels().len();
    let logical = l.logical_shape().to_vec();
    // Per shard (split positions): padded elements, distinct (word, step), max word.
    let mut per_pe: HashMap<Shard, (u64, BTreeSet<(u64, u64)>)> = HashMap::new();
    // Per node of each level (positions down to it): padded elements.
    let mut per_node: Vec<HashMap<Shard, u64>> = vec![HashMap::new(); nlev];
    let mut positions: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); nlev];
    let (mut max_addr, mut max_t) = (0u64, 0u64);
    let mut logical_seen = 0u64;
    for idx in all_indices(l.padded_shape()) {
        let p = l.place_padded(&idx);
        let is_logical = idx.iter().zip(&logical).all(|(i, n)| i < n);
        assert!(p.w < l.slots(), "{ctx}: {idx:?} slot {}", p.w);
        max_addr = max_addr.max(p.addr);
        max_t = max_t.max(p.t);
        // The inverse: every replica of the cell gives the element back (so no two
        // elements share a cell).
        let reps: &[u64] = if l.replicas() > 1 { &[0, 1] } else { &[0] };
        for &rep in reps {
            let pos: Vec<u64> = p
                .pos
                .iter()
                .zip(l.levels())
                .map(|(x, lv)| x.unwrap_or(if rep == 0 { 0 } else { lv.fanout - 1 }))
                .collect();
            let back = l.element_at(&pos, p.addr, p.w, p.t);
            if is_logical {
                assert_eq!(back.as_deref(), Some(idx.as_slice()), "{ctx}: {idx:?}");
            } else {
                assert_eq!(back, None, "{ctx}: padding {idx:?}");
            }
            assert_eq!(
                l.padded_element_at(&pos, p.addr, p.w, p.t).as_deref(),
                Some(idx.as_slice()),
                "{ctx}: {idx:?}"
            );
        }
        if is_logical {
            logical_seen += 1;
            assert_eq!(l.place(&idx).as_ref(), Some(&p), "{ctx}: {idx:?}");
        } else {
            assert_eq!(l.place(&idx), None, "{ctx}: {idx:?}");
        }
        let e = per_pe.entry(p.pos.clone()).or_default();
        e.0 += 1;
        e.1.insert((p.addr, p.t));
        for i in 0..nlev {
            *per_node[i].entry(p.pos[..=i].to_vec()).or_default() += 1;
            if let Some(x) = p.pos[i] {
                positions[i].insert(x);
            }
        }
    }
    assert_eq!(logical_seen, l.logical_elems(), "{ctx}");
    assert_eq!(max_addr + 1, l.footprint_words(), "{ctx}");
    assert_eq!(max_t + 1, l.time_span(), "{ctx}");
    for (pos, (elems, words)) in &per_pe {
        assert_eq!(*elems, l.elems_per_pe(), "{ctx}: elements on {pos:?}");
        assert_eq!(
            words.len() as u64,
            l.words_per_pe(),
            "{ctx}: words on {pos:?}"
        );
        let steps: BTreeSet<u64> = words.iter().map(|w| w.1).collect();
        assert_eq!(steps.len() as u64, l.time_steps(), "{ctx}");
    }
    assert_eq!(per_pe.len() as u64, l.distinct_shards(), "{ctx}");
    let stats = l.level_stats();
    let mut nodes = 1u64;
    for i in 0..nlev {
        let s = &stats[i];
        for (key, n) in &per_node[i] {
            assert_eq!(*n, s.elems_per_node, "{ctx}: level {} node {key:?}", s.name);
        }
        assert_eq!(
            s.words_per_node,
            s.elems_per_node / l.elems_per_pe() * l.words_per_pe(),
            "{ctx}: level {}",
            s.name
        );
        if s.replicated {
            assert_eq!(s.used, s.fanout, "{ctx}");
            assert!(positions[i].is_empty());
        } else {
            let seen: Vec<u64> = positions[i].iter().copied().collect();
            assert_eq!(seen, l.used_positions(i), "{ctx}: level {}", s.name);
            assert_eq!(seen.len() as u64, s.used, "{ctx}: level {}", s.name);
        }
        assert_eq!(s.idle, s.fanout - s.used, "{ctx}");
        nodes *= s.used;
        assert_eq!(s.nodes_used, nodes, "{ctx}: level {}", s.name);
    }
    assert_eq!(nodes, l.pes_used(), "{ctx}");
    assert_eq!(
        l.pes_used(),
        l.distinct_shards() * l.replicas(),
        "{ctx}: PEs = shards × copies"
    );
    // Cells no element maps to are empty.
    let some_pe: Vec<u64> = per_pe
        .keys()
        .next()
        .unwrap()
        .iter()
        .map(|x| x.unwrap_or(0))
        .collect();
    assert_eq!(
        l.element_at(&some_pe, l.footprint_words(), 0, 0),
        None,
        "{ctx}"
    );
    assert_eq!(l.element_at(&some_pe, 0, l.slots(), 0), None, "{ctx}");
}

#[test]
fn family_closed_forms_by_hand() {
    // A few members checked against numbers worked out by hand, so the sweep is not
    // only self-consistent.
    let m = machine("mncore2");
    let fam: BTreeMap<&str, (String, Vec<u64>, DType)> = family(&m)
        .into_iter()
        .map(|(w, t, s, d)| (w, (t, s, d)))
        .collect();
    let get = |w: &str| {
        let (t, s, d) = &fam[w];
        bind(t, &m, s, *d)
    };
    // 4096 PEs × 3 rows × 8 columns, one f32 per LW.
    let l = get("row-split");
    assert_eq!(
        (l.elems_per_pe(), l.words_per_pe(), l.pes_used()),
        (24, 24, 4096)
    );
    // f16: 4 per LW, 2 rows × 2 LW per PE.
    let l = get("W-packed, all slots");
    assert_eq!((l.slots(), l.elems_per_pe(), l.words_per_pe()), (4, 16, 4));
    // Two steps of 3×8 words each.
    let l = get("Time-stepped");
    assert_eq!(
        (l.elems_per_pe(), l.words_per_step(), l.time_steps()),
        (48, 24, 2)
    );
    assert_eq!((l.words_per_pe(), l.footprint_words()), (48, 24));
    // The groups hold 3·4096·2 rows × 2·4 columns; the logical shape is one row and
    // one column short. Words: 2·8 + 3 + 1 = 20 per step, 2 steps.
    let l = get("Time-stepped, interleaved, padded");
    assert_eq!(l.padded_shape(), &[3 * 4096 * 2, 8]);
    assert_eq!(l.padding_elems(), 3 * 4096 * 2 * 8 - (3 * 4096 * 2 - 1) * 7);
    assert_eq!(
        (l.footprint_words(), l.time_steps(), l.words_per_pe()),
        (20, 4, 48)
    );
    // Only PE 0 of every MAB and L2B 0, 1 hold data: 2 × 8 × 16 × 1 PEs.
    let l = get("idle positions");
    let used: Vec<u64> = l.levels().iter().map(|x| x.used).collect();
    assert_eq!(used, vec![2, 8, 16, 1]);
    assert_eq!(l.pes_used(), 256);
    assert_eq!(l.replicas(), 8 * 16);
    // The explicit f16 layout: rows 8·8·2, columns 16·4·4·4. Row 127 = 7·16 + 7·2 + 1,
    // column 1023 = 15·64 + 3·16 + 3·4 + 3: word 1·4 + 3 = 7, slot 3.
    let l = get("mncore2 f16, 4 per LW");
    assert_eq!((l.elems_per_pe(), l.words_per_pe()), (32, 8));
    let p = l.place(&[127, 1023]).unwrap();
    assert_eq!(p.pos, vec![Some(7), Some(7), Some(15), Some(3)]);
    assert_eq!((p.addr, p.w), (7, 3));
}

/// `B@[8_L2B:1]`, as MN-Core programmers write it: size and stride inside `B@`. At the
/// level's fan-out it is `B@[L2B]`; above it, an error; below it (mncore1's 16 L2B),
/// replicating over part of a level is refused with a message saying how to write it.
#[test]
fn broadcast_with_size_and_stride() {
    let text = "((16:1),(8_MAB:2,8_L1B:1,2_MAB:1,4_PE:1,2_W:1); B@[8_L2B:1])";
    let m2 = machine("mncore2");
    let l = bind(text, &m2, &[16, 1024], DType::F32);
    let plain = bind(
        "((16:1),(8_MAB:2,8_L1B:1,2_MAB:1,4_PE:1,2_W:1); B@[L2B])",
        &m2,
        &[16, 1024],
        DType::F32,
    );
    assert_eq!(l, plain);
    assert!(l.levels()[0].replicated);
    assert_round_trip(&l, &m2, DType::F32);
    let e =
        TensorLayout::parse(&text.replace("8_L2B", "9_L2B"), &m2, None, DType::F32).unwrap_err();
    assert!(
        e.to_string()
            .contains("replicates over 9 L2B positions, but L2B has only 8"),
        "{e}"
    );
    assert_eq!(e.span, 51..58, "points at `9_L2B:1`");
    let m1 = machine("mncore1");
    let e = TensorLayout::parse(text, &m1, None, DType::F32).unwrap_err();
    assert!(e.to_string().contains("8 of the 16 L2B positions"), "{e}");
    assert!(e.to_string().contains("B@[16_L2B:1]"), "{e}");
    // On mncore1 the whole level written with its size is accepted.
    let l1 = bind(
        &text.replace("8_L2B", "16_L2B"),
        &m1,
        &[16, 1024],
        DType::F32,
    );
    assert!(l1.levels()[0].replicated);
    for bad in ["((4):B@[0_PE])", "((4); B@[4PE])", "((4); B@[4_PE:])"] {
        assert!(TensorLayout::parse(bad, &machine("toy4"), None, DType::F32).is_err());
    }
}

#[test]
fn a_level_name_in_the_wrong_case_gets_a_suggestion() {
    let toy = machine("toy4");
    for (text, want) in [
        ("((4_time, 3:8), (8:1))", "did you mean `Time`?"),
        ("((4_pe, 3:8), (8:1))", "did you mean `PE`?"),
        ("((3:8), (8:1), (2_w))", "did you mean `W`?"),
    ] {
        let e = TensorLayout::parse(text, &toy, None, DType::F32).unwrap_err();
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
}

/// A layout's hash follows equality: texts that bind to the same layout (written
/// differently) hash the same, and layouts that differ in any part (a level, a stride,
/// the dtype) compare unequal. Tables keyed by layouts (the engine's Load memo) rely on it.
#[test]
fn equal_layouts_hash_equal() {
    use std::hash::{BuildHasher, RandomState};
    let m = machine("toy4");
    let s = RandomState::new();
    let a = bind("((8), (4_PE))", &m, &[8, 4], DType::F32);
    let b = bind(&a.canonical(), &m, &[8, 4], DType::F32);
    assert_eq!(a, b);
    assert_eq!(s.hash_one(&a), s.hash_one(&b));
    let others = [
        bind("((4_PE, 2), (4))", &m, &[8, 4], DType::F32),
        bind("((2, 4_PE), (4))", &m, &[8, 4], DType::F32),
        bind("((8), (4_PE))", &m, &[8, 4], DType::F16),
    ];
    // Those of one machine that differ hash apart too (the hash reads their shape,
    // sub-axes, replicated levels and dtype): a planner's table of candidates relies on it
    // for its speed.
    for (i, x) in others.iter().enumerate() {
        assert_ne!(&a, x, "{i}");
        assert_ne!(s.hash_one(&a), s.hash_one(x), "{i}");
        for y in &others[i + 1..] {
            assert_ne!(x, y);
            assert_ne!(s.hash_one(x), s.hash_one(y));
        }
    }
}
