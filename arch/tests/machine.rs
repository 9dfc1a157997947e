//! Machine presets, validation, knobs and description through the public API.

use mnsim_arch::machine::{Level, Link, Memory, Rate, Tile};
use mnsim_arch::{
    DType, KnobError, Machine, PRESETS, TransferKind, describe, from_ron, get_knob, knob_paths,
    parse_assignment, parse_sweep, peak_flops_per_cycle, preset, preset_source, set_knob,
};

fn mncore2() -> Machine {
    preset("mncore2").unwrap()
}

#[test]
fn presets_load_and_validate() {
    for name in PRESETS {
        let m = preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.name, *name);
        m.validate().unwrap();
        assert!(!describe(&m).is_empty());
    }
    let e = preset("mncore3").unwrap_err();
    assert!(e.to_string().contains("unknown machine 'mncore3'"), "{e}");
    assert!(
        e.to_string()
            .contains("did you mean 'mncore2' or 'mncore1'?"),
        "{e}"
    );
}

#[test]
fn mncore2_shape() {
    let m = mncore2();
    assert_eq!(m.leaf_count(), 4096);
    assert_eq!(m.matrix_units(), 1024);
    assert_eq!(m.word_bytes, 8);
    let addr: Vec<(String, u64)> = m
        .addressable_levels()
        .into_iter()
        .map(|a| (a.name, a.fanout))
        .collect();
    let want: Vec<(String, u64)> = [("L2B", 8), ("L1B", 8), ("MAB", 16), ("PE", 4)]
        .iter()
        .map(|&(n, f)| (n.to_string(), f))
        .collect();
    assert_eq!(addr, want);
    assert_eq!(m.leaf_memory_bytes(), 32 * 1024);
    assert_eq!(m.dram.level, "Group");
    assert_eq!(m.dram.bytes, 4 << 30);
    // 128 GB/s at 0.75 GHz.
    assert!((m.dram.bytes_per_cycle * m.clock_ghz - 128.0).abs() < 1e-9);
}

#[test]
fn mncore1_shape() {
    let m = preset("mncore1").unwrap();
    assert_eq!(m.leaf_count(), 8192);
    assert_eq!(m.matrix_units(), 2048);
    let addr = m.addressable_levels();
    assert_eq!(addr[0].name, "L2B");
    assert_eq!(addr[0].fanout, 16);
    assert_eq!(m.dram.level, "Board");
}

#[test]
fn toy4_shape() {
    let m = preset("toy4").unwrap();
    assert_eq!(m.leaf_count(), 4);
    assert_eq!(m.word_bytes, 4);
    let addr = m.addressable_levels();
    assert_eq!(addr.len(), 1);
    assert_eq!((addr[0].name.as_str(), addr[0].fanout), ("PE", 4));
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    ((got - want) / want).abs() <= rel
}

#[test]
fn peaks() {
    let m2 = mncore2();
    assert_eq!(peak_flops_per_cycle(&m2, DType::F16), 524_288.0);
    let tf = |m: &Machine, d| peak_flops_per_cycle(m, d) * m.clock_ghz / 1000.0;
    assert!(close(tf(&m2, DType::F16), 393.0, 0.005));
    assert!(close(tf(&m2, DType::F32), 49.0, 0.005));
    assert!(close(tf(&m2, DType::F64), 12.0, 0.03)); // public figure is rounded: 12.3
    let m1 = preset("mncore1").unwrap();
    assert!(close(tf(&m1, DType::F16), 524.0, 0.005));
    assert!(close(tf(&m1, DType::F32), 131.0, 0.005));
    assert!(close(tf(&m1, DType::F64), 32.8, 0.005));
    // No matrix F64 on toy4: falls back to the vector unit.
    let t = preset("toy4").unwrap();
    assert_eq!(peak_flops_per_cycle(&t, DType::F64), 4.0);
    // s8: the assumed matrix rate (as f16: 16 FLOP/cycle × 4 PE); no rate at all for pred.
    assert_eq!(peak_flops_per_cycle(&t, DType::S8), 64.0);
    assert_eq!(peak_flops_per_cycle(&t, DType::Pred), 0.0);
}

#[test]
fn tiles_take_whole_cycles() {
    for name in PRESETS {
        let m = preset(name).unwrap();
        for (d, t) in &m.compute.matrix.tile {
            let cycles = 2.0 * (t.m * t.n * t.k) as f64 / m.compute.matrix.flops[d];
            assert_eq!(cycles.fract(), 0.0, "{name} {d}");
            assert!(cycles >= 1.0, "{name} {d}");
        }
    }
}

/// Port time of docs/model.md: max(distinct bytes / parent rate, max child bytes / child rate).
fn port_cycles(r: &Rate, distinct: f64, per_child: f64) -> f64 {
    (distinct / r.parent).max(per_child / r.child)
}

#[test]
fn l1b_rates_reproduce_public_table() {
    let m = mncore2();
    let l1b = &m.links["L1B"];
    assert_eq!(l1b.distribute.parent, 64.0 * 8.0);
    assert_eq!(l1b.broadcast.parent, 8.0);
    assert_eq!(l1b.broadcast.child, 8.0);
    let n = 4096.0;
    let lw = 8.0;
    // Distribute N LW over 64 PEs: N*8 distinct bytes, N/64 LW per PE.
    let d = port_cycles(&l1b.distribute, n * lw, n / 64.0 * lw);
    assert_eq!(d, n / 64.0);
    // Broadcast N LW: N*8 distinct bytes, all N LW into every PE.
    let b = port_cycles(&l1b.broadcast, n * lw, n * lw);
    assert_eq!(b, n);
}

#[test]
fn links_sit_on_memory_levels() {
    let m = mncore2();
    let keys: Vec<&str> = m.links.keys().map(String::as_str).collect();
    assert_eq!(keys, ["Group", "L1B", "L2B"]);
    let l1b = m.level_index("L1B").unwrap();
    assert_eq!(m.link_target(l1b), m.level_index("PE"));
    let m1 = preset("mncore1").unwrap();
    assert!(m1.links.contains_key("Board"));
}

// ---- validation -------------------------------------------------------------------

fn invalid(f: impl FnOnce(&mut Machine)) -> String {
    let mut m = mncore2();
    f(&mut m);
    m.validate().unwrap_err().to_string()
}

fn rate(x: f64) -> Rate {
    Rate {
        parent: x,
        child: x,
        latency: 1,
    }
}

fn link(x: f64) -> Link {
    Link {
        broadcast: rate(x),
        distribute: rate(x),
        gather: rate(x),
        reduce: rate(x),
    }
}

/// A change to a valid machine that should make it invalid.
type Mutation = Box<dyn FnOnce(&mut Machine)>;

#[test]
fn validation_messages() {
    let cases: Vec<(Mutation, &str)> = vec![
        (Box::new(|m| m.levels.clear()), "the machine has no levels"),
        (
            Box::new(|m| m.levels[0].count = 2),
            "the root level 'Board' has count 2; the root must have count 1",
        ),
        (
            Box::new(|m| m.levels[4].count = 0),
            "level 'MAB' has count 0",
        ),
        (
            Box::new(|m| m.levels[3].name = "L2B".into()),
            "duplicate level name 'L2B'",
        ),
        (
            Box::new(|m| m.levels[2].name = "L2.B".into()),
            "level name 'L2.B' is not a plain name",
        ),
        (
            Box::new(|m| m.levels[5].memory = None),
            "the leaf level 'PE' has no memory",
        ),
        (
            Box::new(|m| m.levels[5].addressable = false),
            "level 'PE' is not addressable and has no addressable level below it",
        ),
        (
            Box::new(|m| {
                m.links.insert("L3B".into(), link(8.0));
            }),
            "link 'L3B' names no level of the machine",
        ),
        (
            Box::new(|m| {
                m.links.insert("MAB".into(), link(8.0));
            }),
            "link 'MAB': level 'MAB' has no memory and no DRAM to send from",
        ),
        (
            Box::new(|m| {
                m.links.insert("PE".into(), link(8.0));
            }),
            "link 'PE': no memory-bearing level below 'PE' to send to",
        ),
        (
            Box::new(|m| {
                m.links.remove("L2B");
            }),
            "level 'L2B' has memory 'L2BM' and memory-bearing level 'L1B' below it, but no link",
        ),
        (
            Box::new(|m| {
                // Move the DRAM to the board, which has no memory: it then needs a link.
                m.dram.level = "Board".into();
            }),
            "level 'Board' has the DRAM and memory-bearing level 'Group' below it, but no link",
        ),
        (
            Box::new(|m| m.links.get_mut("L1B").unwrap().distribute.parent = 0.0),
            "link 'L1B' distribute parent rate must be a positive number of bytes per cycle (at least 1e-6), got 0",
        ),
        (
            Box::new(|m| m.links.get_mut("L2B").unwrap().reduce.child = f64::NAN),
            "link 'L2B' reduce child rate must be a positive number of bytes per cycle (at least 1e-6), got NaN",
        ),
        (
            Box::new(|m| m.links.get_mut("Group").unwrap().gather.parent = -1.0),
            "link 'Group' gather parent rate must be a positive",
        ),
        (Box::new(|m| m.word_bytes = 0), "word_bytes is 0"),
        (
            Box::new(|m| m.clock_ghz = 0.0),
            "clock_ghz must be a positive number (at least 1e-6), got 0",
        ),
        (
            Box::new(|m| m.clock_ghz = -0.5),
            "clock_ghz must be a positive number (at least 1e-6), got -0.5",
        ),
        (
            Box::new(|m| m.dram.level = "Chip".into()),
            "dram.level 'Chip' is not a level of the machine (levels: Board, Group, L2B, L1B, MAB, PE)",
        ),
        (
            Box::new(|m| m.dram.level = "PE".into()),
            "dram.level 'PE' is the leaf level",
        ),
        (
            Box::new(|m| m.dram.bytes_per_cycle = f64::INFINITY),
            "dram.bytes_per_cycle must be a positive number (at least 1e-6), got inf",
        ),
        (
            Box::new(|m| m.dram.burst_bytes = 0),
            "dram.burst_bytes is 0",
        ),
        (Box::new(|m| m.dram.bytes = 0), "dram.bytes is 0"),
        (
            Box::new(|m| m.compute.matrix.level = "Mab".into()),
            "compute.matrix.level 'Mab' is not a level of the machine",
        ),
        (
            Box::new(|m| {
                m.compute.vector.insert(DType::F32, 0.0);
            }),
            "compute.vector.F32 must be a positive FLOP/cycle figure (at least 1e-6), got 0",
        ),
        (
            Box::new(|m| {
                m.compute.matrix.flops.insert(DType::F16, f64::NAN);
            }),
            "compute.matrix.flops.F16 must be a positive FLOP/cycle figure (at least 1e-6), got NaN",
        ),
        (
            Box::new(|m| {
                m.compute.matrix.tile.remove(&DType::F32);
            }),
            "compute.matrix.flops has F32 but compute.matrix.tile has no F32 tile",
        ),
        (
            Box::new(|m| {
                m.compute
                    .matrix
                    .tile
                    .insert(DType::S16, Tile { m: 1, n: 1, k: 1 });
            }),
            "compute.matrix.tile has S16 but compute.matrix.flops has no S16 rate",
        ),
        (
            Box::new(|m| m.compute.matrix.tile.get_mut(&DType::F16).unwrap().k = 0),
            "compute.matrix.tile.F16.k is 0",
        ),
        (
            Box::new(|m| m.levels[2].memory.as_mut().unwrap().bytes = 0),
            "memory 'L2BM' of level 'L2B' has 0 bytes",
        ),
        (
            Box::new(|m| {
                for l in &mut m.levels[1..] {
                    l.count = 1 << 20;
                }
            }),
            "overflows 64 bits",
        ),
        // An energy coefficient so large that a run's joules or watts would overflow.
        (
            Box::new(|m| m.energy.dram.read_pj_per_byte = 1e308),
            "energy.dram.read_pj_per_byte must be a number from 0 to 1e12, got 1e308",
        ),
        (
            Box::new(|m| {
                m.energy.static_w_per_node.insert("PE".into(), 2e12);
            }),
            "energy.static_w_per_node.PE must be a number from 0 to 1e12, got 2000000000000",
        ),
    ];
    for (mutate, want) in cases {
        let got = invalid(mutate);
        assert!(got.contains(want), "expected '{want}' in '{got}'");
    }
}

#[test]
fn unaddressable_chain_folds_into_the_next_addressable_level() {
    let mut m = mncore2();
    m.levels[4].addressable = false; // MAB folds into PE: 16 x 4 = 64 PE positions
    m.validate().unwrap();
    let addr = m.addressable_levels();
    assert_eq!(addr.last().unwrap().fanout, 64);
    // A new memory-less level with no link needs is fine; one with memory needs a link.
    m.levels.insert(
        5,
        Level {
            name: "Half".into(),
            count: 1,
            addressable: true,
            memory: Some(Memory {
                name: "HM".into(),
                bytes: 1024,
                bytes_per_cycle: 0.0,
            }),
        },
    );
    let e = m.validate().unwrap_err().to_string();
    assert!(e.contains("level 'Half' has memory 'HM'"), "{e}");
}

#[test]
fn validation_errors_name_their_field() {
    let mut m = mncore2();
    m.links.get_mut("L1B").unwrap().distribute.parent = 0.0;
    let e = m.validate().unwrap_err();
    assert_eq!(e.path.as_deref(), Some("links.L1B.distribute.parent"));
    assert_eq!(e.line, None);
}

// ---- RON ----------------------------------------------------------------------------

#[test]
fn ron_typo_has_line_and_column() {
    let text = preset_source("mncore2").unwrap();
    let bad = text.replacen(
        "distribute: (parent: 512.0",
        "distribute: (parnet: 512.0",
        1,
    );
    let e = from_ron(&bad).unwrap_err();
    let line = bad
        .lines()
        .position(|l| l.contains("parnet"))
        .map(|i| i + 1)
        .unwrap();
    assert_eq!(e.line, Some(line), "{e}");
    assert!(e.column.is_some(), "{e}");
    let s = e.to_string();
    assert!(s.starts_with(&format!("{line}:")), "{s}");
    assert!(s.contains("did you mean `parent`?"), "{s}");

    // A syntax error: a missing comma.
    let bad = text.replacen("word_bytes: 8,", "word_bytes: 8", 1);
    let e = from_ron(&bad).unwrap_err();
    assert!(e.line.is_some() && e.column.is_some(), "{e}");
}

#[test]
fn ron_validation_error_points_at_the_field() {
    let text = preset_source("mncore2").unwrap();
    let bad = text.replacen("(name: \"MAB\", count: 16)", "(name: \"MAB\", count: 0)", 1);
    let e = from_ron(&bad).unwrap_err();
    let (line, text_line) = bad
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("count: 0"))
        .unwrap();
    assert_eq!(e.line, Some(line + 1), "{e}");
    assert_eq!(e.column, Some(text_line.find("count").unwrap() + 1), "{e}");
    assert!(e.message.contains("level 'MAB' has count 0"), "{e}");
}

#[test]
fn ron_accepts_explicit_some_and_round_trips() {
    let text = preset_source("toy4").unwrap();
    let explicit = text.replacen(
        "memory: (name: \"LM\", bytes: 4096)",
        "memory: Some((name: \"LM\", bytes: 4096))",
        1,
    );
    assert_eq!(from_ron(&explicit).unwrap(), preset("toy4").unwrap());
    for name in PRESETS {
        let m = preset(name).unwrap();
        let again = from_ron(&ron::to_string(&m).unwrap()).unwrap();
        assert_eq!(again, m);
    }
}

/// A small deterministic generator (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn mutated_ron_never_panics() {
    const ALPHABET: &[u8] = b"(){}[]:,.\"'/*-+_0123456789eE aZ\nSome";
    let sources: Vec<&str> = PRESETS.iter().map(|n| preset_source(n).unwrap()).collect();
    let mut rng = Rng(0x5EED);
    let mut accepted = 0;
    for i in 0..20_000 {
        let mut bytes = sources[i % sources.len()].as_bytes().to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len() + 1);
            let b = if rng.below(8) == 0 {
                (rng.next() & 0xFF) as u8
            } else {
                ALPHABET[rng.below(ALPHABET.len())]
            };
            match rng.below(3) {
                0 => bytes.insert(at, b),
                1 if at < bytes.len() => {
                    bytes.remove(at);
                }
                _ if at < bytes.len() => bytes[at] = b,
                _ => bytes.push(b),
            }
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let r = std::panic::catch_unwind(|| from_ron(&text));
        match r {
            Ok(Ok(m)) => {
                accepted += 1;
                m.validate().unwrap();
                let _ = describe(&m);
            }
            Ok(Err(e)) => assert!(!e.message.is_empty()),
            Err(_) => panic!("from_ron panicked on mutation {i}:\n{text}"),
        }
    }
    // Most mutations land in comments or digits and still parse.
    assert!(accepted > 0);
}

// ---- knobs --------------------------------------------------------------------------

#[test]
fn knob_paths_cover_the_documented_families() {
    let m = mncore2();
    let paths = knob_paths(&m);
    for p in [
        "levels.PE.count",
        "levels.L1B.memory.bytes",
        "links.L1B.distribute.parent",
        "links.Group.reduce.child",
        "links.L2B.broadcast.latency",
        "dram.bytes",
        "dram.bytes_per_cycle",
        "dram.burst_bytes",
        "clock_ghz",
        "word_bytes",
        "compute.vector.F32",
        "compute.matrix.flops.BF16",
        "compute.matrix.tile.F16.k",
    ] {
        assert!(paths.iter().any(|x| x == p), "missing {p}");
    }
    assert!(!paths.iter().any(|p| p == "levels.MAB.memory.bytes"));
    assert_eq!(get_knob(&m, "links.L1B.distribute.parent").unwrap(), 512.0);
    assert_eq!(get_knob(&m, "levels.Group.count").unwrap(), 4.0);
}

#[test]
fn every_knob_round_trips() {
    for name in PRESETS {
        let base = preset(name).unwrap();
        for path in knob_paths(&base) {
            let mut m = base.clone();
            let cur = get_knob(&m, &path).unwrap();
            let root_count = path == format!("levels.{}.count", base.levels[0].name);
            // A network's algorithm is a code (0 default, 1 ring, 2 tree, 3 direct).
            let want = if root_count {
                1.0
            } else if path.ends_with(".algorithm") {
                2.0
            } else if path.ends_with(".host.inputs") {
                // Where the inputs start: 1 (the host) or 0 (the boards' DRAMs).
                1.0 - cur
            } else {
                (cur * 2.0).round()
            };
            set_knob(&mut m, &path, want).unwrap_or_else(|e| panic!("{name} {path}: {e}"));
            assert_eq!(get_knob(&m, &path).unwrap(), want, "{name} {path}");
            if !root_count {
                assert_ne!(m, base, "{name} {path}");
            }
            // Only that knob changed.
            for other in knob_paths(&base) {
                if other != path {
                    assert_eq!(
                        get_knob(&m, &other).unwrap(),
                        get_knob(&base, &other).unwrap(),
                        "{name}: setting {path} changed {other}"
                    );
                }
            }
        }
    }
}

#[test]
fn knob_changes_reach_the_machine() {
    let mut m = mncore2();
    set_knob(&mut m, "links.L1B.distribute.parent", 128.0).unwrap();
    assert_eq!(m.links["L1B"].rate(TransferKind::Distribute).parent, 128.0);
    set_knob(&mut m, "levels.MAB.count", 8.0).unwrap();
    assert_eq!(m.leaf_count(), 2048);
    set_knob(&mut m, "compute.matrix.tile.F16.n", 8.0).unwrap();
    assert_eq!(m.compute.matrix.tile[&DType::F16].n, 8);
    set_knob(&mut m, "clock_ghz", 1.5).unwrap();
    assert_eq!(m.clock_ghz, 1.5);
}

#[test]
fn unknown_knob_suggests() {
    let mut m = mncore2();
    let e = set_knob(&mut m, "links.L1B.distribute.parnet", 1.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown knob 'links.L1B.distribute.parnet'; did you mean 'links.L1B.distribute.parent'?"
    );
    // Case-insensitive match on the level name.
    let e = get_knob(&m, "levels.pe.count").unwrap_err();
    match &e {
        KnobError::Unknown { suggestions, .. } => {
            assert_eq!(suggestions, &vec!["levels.PE.count".to_string()])
        }
        other => panic!("{other}"),
    }
    // A section rather than a number: suggests the paths under it.
    let e = get_knob(&m, "links.L1B.gather").unwrap_err();
    assert!(e.to_string().contains("'links.L1B.gather.child'"), "{e}");
    // Nothing close: lists the families.
    let e = get_knob(&m, "frobnicate.everything.now").unwrap_err();
    assert!(
        e.to_string().contains("knobs are levels.<LEVEL>.count"),
        "{e}"
    );
    // At most three suggestions.
    let e = get_knob(&m, "dram.byte").unwrap_err();
    if let KnobError::Unknown { suggestions, .. } = e {
        assert!(!suggestions.is_empty() && suggestions.len() <= 3);
        assert_eq!(suggestions[0], "dram.bytes");
    }
}

#[test]
fn integer_knob_rejects_fractions_and_bad_values() {
    let mut m = mncore2();
    let before = m.clone();
    let e = set_knob(&mut m, "levels.PE.count", 1.5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "knob 'levels.PE.count' takes a non-negative whole number, got 1.5"
    );
    assert!(set_knob(&mut m, "levels.PE.count", -4.0).is_err());
    assert!(set_knob(&mut m, "dram.bytes", 1e30).is_err());
    let e = set_knob(&mut m, "clock_ghz", f64::NAN).unwrap_err();
    assert!(
        e.to_string().contains("takes a positive finite number"),
        "{e}"
    );
    assert_eq!(m, before);
}

#[test]
fn invalidating_knob_is_refused_and_leaves_machine_unchanged() {
    let mut m = mncore2();
    let before = m.clone();
    let e = set_knob(&mut m, "levels.L1B.count", 0.0).unwrap_err();
    assert!(matches!(e, KnobError::Invalid { .. }));
    assert!(
        e.to_string().contains(
            "setting 'levels.L1B.count' to 0 makes the machine invalid: level 'L1B' has count 0"
        ),
        "{e}"
    );
    assert_eq!(m, before);
    assert!(set_knob(&mut m, "links.L2B.reduce.parent", -1.0).is_err());
    assert!(set_knob(&mut m, "levels.Board.count", 2.0).is_err());
    assert_eq!(m, before);
}

#[test]
fn assignments_and_sweeps() {
    assert_eq!(
        parse_assignment("links.L1B.distribute.parent=128").unwrap(),
        ("links.L1B.distribute.parent".to_string(), 128.0)
    );
    assert_eq!(
        parse_sweep("k=1,2,4").unwrap(),
        ("k".to_string(), vec![1.0, 2.0, 4.0])
    );
    assert_eq!(parse_sweep("clock_ghz=0.75").unwrap().1, vec![0.75]);
    assert!(parse_assignment("links.L1B.distribute.parent").is_err());
    assert!(
        parse_assignment("k=abc")
            .unwrap_err()
            .to_string()
            .contains("'abc'")
    );
    assert!(parse_sweep("k=1,x").is_err());
}

// ---- description ---------------------------------------------------------------------

#[test]
fn description_mentions_everything() {
    let s = describe(&mncore2());
    for want in [
        "mncore2",
        "Group x4 (4 nodes): PDM 4 MiB (524288 words); folds into L2B",
        "L2B x2 (8 nodes): L2BM 256 KiB (32768 words); addressable, fan-out 8 (Board, Group folded in)",
        "PE x4 (4096 nodes): LM 32 KiB (4096 words); addressable, fan-out 4",
        "L1B: L1BM -> 64 x LM (PE nodes)",
        "Group: PDM + DRAM -> 2 x L2BM (L2B nodes)",
        "DRAM: one per Group (4 in all): 4 GiB each, 16 GiB total",
        "PEs 4096; local memory 32 KiB each, 128 MiB total",
        "matrix units 1024 (one per MAB)",
        "f16   matrix 524288 (393.22 TFLOPS)",
    ] {
        assert!(s.contains(want), "missing '{want}' in:\n{s}");
    }
}

/// Every rate and size knob refuses zero, negatives, NaN, infinities and rates too small
/// to count; memories refuse less than one word; the message names the knob.
#[test]
fn rate_and_size_knobs_refuse_unusable_values() {
    let m0 = mncore2();
    let rates = [
        "links.L1B.distribute.parent",
        "links.L2B.broadcast.child",
        "dram.bytes_per_cycle",
        "levels.PE.memory.bytes_per_cycle",
        "clock_ghz",
        "compute.vector.F32",
        "compute.matrix.flops.F16",
    ];
    for k in rates {
        for v in [
            0.0,
            -5.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-300,
        ] {
            let mut m = m0.clone();
            let e = set_knob(&mut m, k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{k}={v}: {e}");
            assert_eq!(m, m0);
        }
    }
    for k in [
        "levels.PE.memory.bytes",
        "levels.L1B.memory.bytes",
        "dram.bytes",
        "dram.burst_bytes",
        "levels.MAB.count",
        "word_bytes",
        "compute.matrix.tile.F16.m",
    ] {
        for v in [0.0, -1.0, 0.5, f64::NAN, f64::INFINITY] {
            let mut m = m0.clone();
            let e = set_knob(&mut m, k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{k}={v}: {e}");
        }
    }
    let mut m = m0.clone();
    let e = set_knob(&mut m, "levels.L1B.memory.bytes", 7.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("less than one 8-byte word"), "{e}");
    let e = set_knob(&mut m, "links.L1B.distribute.latency", 1e12)
        .unwrap_err()
        .to_string();
    assert!(e.contains("above the limit"), "{e}");
    let e = set_knob(&mut m, "levels.PE.count", 1e6)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most 16777216"), "{e}");
}
