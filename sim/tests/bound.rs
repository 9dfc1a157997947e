//! The bound (docs/model.md, the bound) and what a run waited on.
//!
//! - property: no run of a random program (random presets and knobs, shapes, layouts
//!   from the planner's candidates and `Time`-stepped streams, both schedules) takes
//!   fewer cycles than its bound, op by op and in total;
//! - worked by hand: a Load on toy4 (the bound is reached), an fp16 matmul at the
//!   matrix units' peak on mncore2;
//! - what layout legality forces a matrix product to move: a 256³ fp16 GEMM on mncore2
//!   under every kind of legal layout (`a` or `b` on every Group, `c` partial over the
//!   L2Bs) holds the Group down ports at least the bound, which is one operand on every
//!   Group;
//! - a streamed 2048² fp16 MatMul + Softmax on mncore2: the MatMul waited on the L1B
//!   down ports (its B's broadcast), and the run's bottleneck is them, not the MAB.

mod common;

use mnsim_reports::Report;
use mnsim_sim::scenario::{self, Scenario, Schedule, Source};

/// A scenario text parsed, under `schedule`, with its source.
fn parsed(text: &str, schedule: Schedule) -> Result<(Scenario, Source), String> {
    let mut sc = scenario::parse(text, "t.ron").map_err(|e| format!("{e:?}"))?;
    sc.schedule = schedule;
    let src = Source {
        path: "t.ron".into(),
        text: text.into(),
    };
    Ok((sc, src))
}

/// Every plan of a scenario text, run under `schedule` in timing mode.
fn run(text: &str, schedule: Schedule) -> Result<Vec<Report>, String> {
    let (sc, src) = parsed(text, schedule)?;
    let mut out = Vec::new();
    for plan in scenario::plans_to_run(&sc) {
        let mut res = scenario::resolve(&sc, &src, plan.as_deref(), &[], &Default::default())
            .map_err(|e| format!("{e:?}"))?;
        res.mode = scenario::Mode::Timing;
        let r = mnsim_sim::run::run(&res).map_err(|e| e.to_string())?;
        out.push(r.report);
    }
    Ok(out)
}

fn assert_within_bound(r: &Report, what: &str) {
    assert!(r.bound_cycles > 0, "{what}: no bound");
    assert!(
        r.total_cycles >= r.bound_cycles,
        "{what}: run {} < bound {} ({})",
        r.total_cycles,
        r.bound_cycles,
        r.bound_resource
    );
    for o in &r.ops {
        assert!(
            o.cycles >= o.bound_cycles,
            "{what}: op {} {} {}: {} cycles < bound {} ({})",
            o.index,
            o.op,
            o.tensor,
            o.cycles,
            o.bound_cycles,
            o.bound_resource
        );
    }
}

#[test]
fn a_load_on_toy4_by_hand() {
    // f32[16,32] = 2,048 bytes. DRAM 16 B/cycle: 128 cycles. The Board link at its
    // fastest (distribute: 16 B/cycle at the parent, 4 B/cycle into each of 4 PEs):
    // 2,048/16 = 2,048/(4·4) = 128. One chunk (512 bytes a PE, LM 4 KiB), latency 2:
    // 130, set by the DRAM (the first of the equal resources). Distributing rows over
    // the 4 PEs reaches it.
    let text = r#"Scenario(name: "load", machine: Preset("toy4"), mode: Timing,
        tensors: {"x": (dtype: F32, shape: "f32[16,32]", init: Random(seed: 1))},
        program: [Load(tensor: "x", layout: "((4_PE, 4), (32))")])"#;
    for s in [Schedule::Sequential, Schedule::Overlapped] {
        let r = &run(text, s).unwrap()[0];
        assert_eq!((r.bound_cycles, r.bound_resource.as_str()), (130, "DRAM"));
        assert_eq!(r.ops[0].bound_cycles, 130);
        assert_eq!(r.total_cycles, 130, "the distribute reaches the bound");
    }
    // Broadcast to every PE: each PE receives all 2,048 bytes at 4 B/cycle: 512 + 2.
    let bcast = text.replace("((4_PE, 4), (32))", "((16), (32); B@[PE])");
    let r = &run(&bcast, Schedule::Overlapped).unwrap()[0];
    assert_eq!((r.bound_cycles, r.total_cycles), (130, 514));
}

#[test]
fn a_matmul_at_the_matrix_units_peak() {
    // 512×128 by 128×512 fp16 on mncore2: 2·512·512·128 = 2^26 FLOP over 1,024 MABs ×
    // 512 FLOP/cycle: 128 cycles on the MAB compute. Rows over L2B × MAB × PE (4 a
    // MAB), columns over L1B, B replicated over L2B, MAB and PE: each MAB works 1 × 4 × 8
    // tiles of 4×16×16 at 4 cycles each = 128: the peak.
    let text = r#"Scenario(name: "peak", machine: Preset("mncore2"), mode: Timing,
        tensors: {
            "a": (dtype: F16, shape: "f16[512,128]", init: Random(seed: 1)),
            "b": (dtype: F16, shape: "f16[128,512]", init: Random(seed: 2)),
            "c": (dtype: F16, shape: "f16[512,512]"),
        },
        program: [
            Load(tensor: "a", layout: "((8_L2B, 16_MAB, 4_PE), (32, 4_W); B@[L1B])"),
            Load(tensor: "b", layout: "((128), (8_L1B, 16, 4_W); B@[L2B,MAB,PE])"),
            MatMul(a: "a", b: "b", out: "c", layout: "((8_L2B, 16_MAB, 4_PE), (8_L1B, 16, 4_W))"),
        ])"#;
    let r = &run(text, Schedule::Overlapped).unwrap()[0];
    let mm = &r.ops[2];
    assert_eq!(mm.flops, Some(1 << 26));
    assert_eq!(
        (mm.bound_cycles, mm.bound_resource.as_str()),
        (128, "MAB compute")
    );
    assert_eq!(mm.cycles, 128, "the layout reaches the peak");
    assert_within_bound(r, "peak");
}

/// A 2048² fp16 MatMul whose B streams over K in 1,024 steps, broadcast to every PE,
/// followed by a Softmax of its rows.
const STREAMED: &str = r#"Scenario(name: "streamed", machine: Preset("mncore2"), mode: Timing,
    tensors: {
        "a": (dtype: F16, shape: "f16[2048,2048]", init: Random(seed: 1)),
        "b": (dtype: F16, shape: "f16[2048,2048]", init: Random(seed: 2)),
        "c": (dtype: F16, shape: "f16[2048,2048]"),
        "p": (dtype: F16, shape: "f16[2048,2048]"),
    },
    program: [
        Load(tensor: "a", layout: "((8_L2B, 8_L1B, 16_MAB, 2_PE), (512, 4_W))"),
        Load(tensor: "b", layout: "((1024_Time, 2), (512, 4_W); B@[L2B,L1B,MAB,PE])"),
        MatMul(a: "a", b: "b", out: "c", layout: "((8_L2B, 8_L1B, 16_MAB, 2_PE), (512, 4_W))"),
        Softmax(input: "c", axis: 1, out: "p"),
        Store(tensor: "p"),
    ])"#;

#[test]
fn a_streamed_matmul_waits_on_the_l1b_down_ports() {
    let r = &run(STREAMED, Schedule::Overlapped).unwrap()[0];
    assert_within_bound(r, "streamed");
    let mm = &r.ops[2];
    let w = mm.waited_on.as_ref().expect("the matmul waited");
    assert_eq!((w.reason.as_str(), w.op), ("stream", Some(1)), "{w:?}");
    assert_eq!(w.resource.as_deref(), Some("L1B down"), "{w:?}");
    let b = r.bottleneck.as_ref().expect("a bottleneck");
    assert_eq!(b.resource, "L1B down", "{b:?}");
    let l1b = r.resources.iter().find(|x| x.name == "L1B down").unwrap();
    let mab = r
        .resources
        .iter()
        .find(|x| x.name == "MAB compute")
        .unwrap();
    assert_eq!(b.busy_cycles, l1b.busy_cycles);
    assert!(l1b.busy_cycles > mab.busy_cycles, "{l1b:?} {mab:?}");
    assert!((b.share - l1b.utilisation).abs() < 1e-12);
    assert_eq!(r.bottleneck_name(), Some("L1B down"));
}

/// A 256³ fp16 GEMM on mncore2, a plan for each kind of legal layout at the L2Bs.
const GEMM: &str = r#"Scenario(
    name: "gemm 256, every kind of layout",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "a": (dtype: F16, shape: "f16[256,256]", init: Random(seed: 1)),
        "b": (dtype: F16, shape: "f16[256,256]", init: Random(seed: 2)),
        "c": (dtype: F16, shape: "f16[256,256]"),
    },
    program: [
        Load(tensor: "a", layout: "$a"),
        Load(tensor: "b", layout: "$b"),
        MatMul(a: "a", b: "b", out: "c", layout: "$c"),
        Store(tensor: "c"),
    ],
    plans: {
        // `a` on every L2B (the output splits N over them), packed.
        "a_everywhere": {
            "a": "((8_L1B, 16_MAB, 2), (4_PE, 16, 4_W); B@[L2B])",
            "b": "((4_PE, 64), (8_L2B, 8, 4_W); B@[L1B,MAB])",
            "c": "((8_L1B, 16_MAB, 2), (8_L2B, 8, 4_W); B@[PE])",
        },
        // `b` on every L2B (the output splits M over them), packed.
        "b_everywhere": {
            "a": "((8_L2B, 16_MAB, 2), (4_PE, 16, 4_W); B@[L1B])",
            "b": "((4_PE, 64), (8_L1B, 8, 4_W); B@[L2B,MAB])",
            "c": "((8_L2B, 16_MAB, 2), (8_L1B, 8, 4_W); B@[PE])",
        },
        // `a` on every L2B, unpacked (an f16 a word).
        "a_unpacked": {
            "a": "((8_L1B, 16_MAB, 2), (4_PE, 64); B@[L2B])",
            "b": "((4_PE, 64), (8_L2B, 32); B@[L1B,MAB])",
            "c": "((8_L1B, 16_MAB, 2), (8_L2B, 32); B@[PE])",
        },
        // K over the L2Bs: `c` partial over them, reduced across the Groups.
        "c_partial": {
            "a": "((8_L1B, 16_MAB, 2), (8_L2B, 4_PE, 2, 4_W))",
            "b": "((8_L2B, 4_PE, 8), (64, 4_W); B@[L1B,MAB])",
            "c": "((8_L1B, 16_MAB, 2), (64, 4_W); B@[L2B,PE])",
        },
        "c_partial_unpacked": {
            "a": "((8_L1B, 16_MAB, 2), (8_L2B, 4_PE, 8))",
            "b": "((8_L2B, 4_PE, 8), (256); B@[L1B,MAB])",
            "c": "((8_L1B, 16_MAB, 2), (256); B@[L2B,PE])",
        },
    },
    auto_reduce: true,
)"#;

#[test]
fn a_matmul_moves_one_operand_to_every_group_whatever_its_layout() {
    // |a| = |b| = |c| = 256² × 2 B = 128 KiB. Over the 4 Group down ports (64 B/cycle
    // each): `a` on every Group and `b` once is 5 × 128 KiB / 256 = 2,560 cycles; `c`
    // partial over the L2Bs is (128 + 128 + 4 × 128) KiB / 256 = 3,072 (its Reduce
    // sends the sum down every Group port); every byte once would be 1,024.
    let floor = (4 * (128 << 10) + (128 << 10)) / (4 * 64);
    assert_eq!(floor, 2_560);
    let mut ran = 0;
    for s in [Schedule::Sequential, Schedule::Overlapped] {
        for r in run(GEMM, s).unwrap() {
            let plan = r.plan.clone().unwrap_or_default();
            assert_within_bound(&r, &format!("{plan} {s:?}"));
            assert_eq!(r.bound_cycles, floor, "{plan}");
            assert_eq!(r.bound_resource, "Group down");
            let down = r.resources.iter().find(|x| x.name == "Group down").unwrap();
            assert!(
                down.busy_cycles >= floor,
                "{plan}: Group down busy {}",
                down.busy_cycles
            );
            ran += 1;
        }
    }
    assert_eq!(ran, 10);
}

/// A batched `[4,8,32,256] · [256,64]` f32 GeneralMatMul (the shapes of oneDNN's
/// `matmul_2d_4d`, smaller) with every layout left to the planner: the 2-D operand lacks
/// the batch axes, so a layout that splits them over the L2Bs replicates it there, and
/// the bound counts one operand on every Group. Every plan the planner confirms with a
/// timing run (its best few, under both schedules) runs within it.
#[test]
fn a_batched_matmul_moves_one_operand_to_every_group_whatever_its_layout() {
    let text = r#"Scenario(
    name: "batched matmul, every layout left to the planner",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "a": (dtype: F32, shape: "f32[4,8,32,256]", init: Random(seed: 1)),
        "b": (dtype: F32, shape: "f32[256,64]", init: Random(seed: 2)),
        "c": (dtype: F32, shape: "f32[4,8,32,64]"),
    },
    program: [
        Load(tensor: "a", layout: "$a"),
        Load(tensor: "b", layout: "$b"),
        GeneralMatMul(a: "a", b: "b", out: "c", transpose_a: false, transpose_b: false, layout: "$c"),
        Store(tensor: "c"),
    ],
    plans: { "auto": {"a": Any, "b": Any, "c": Any} },
    auto_reduce: true,
)"#;
    // |a| = 1 MiB, |b| = 64 KiB, |c| = 256 KiB over 4 Group ports of 64 B/cycle: `b` on
    // every Group and `a` once is 1,280 KiB, 5,120 cycles; `a` on every Group 4,160 KiB;
    // `c` partial 2,112 KiB; all under one Group 4,352 KiB. Every byte once down would
    // be 1,088 KiB (4,352 cycles); the Store's 256 KiB up is 1,024.
    let floor = ((1 << 20) + 4 * (64 << 10)) / (4 * 64);
    assert_eq!(floor, 5_120);
    for schedule in [Schedule::Sequential, Schedule::Overlapped] {
        let (sc, src) = parsed(text, schedule).unwrap();
        let mut o = mnsim_sim::plan::PlanOptions::default();
        o.search.time_limit = None;
        o.search.work_limit = Some(100_000);
        let out = mnsim_sim::plan::plan_with(
            &sc,
            &src,
            "auto",
            &[],
            &Default::default(),
            &o,
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(
            (out.bound_cycles, out.bound_resource.as_str()),
            (floor, "Group down")
        );
        assert!(!out.best.is_empty());
        for b in &out.best {
            assert!(
                b.total_cycles >= floor,
                "{schedule:?}: {} cycles < bound {floor}: {:?}",
                b.total_cycles,
                b.layouts
            );
        }
    }
}

/// A product left partial over the L2Bs and freed unread needs no Reduce across the
/// Groups: the legality term does not count one (an earlier Store of the tensor is no
/// reader of the product). `a` 2 MiB, `b` 512 KiB, `c` 32 KiB in f16.
#[test]
fn a_partial_product_freed_unread_is_not_charged_a_reduce() {
    let text = r#"Scenario(
    name: "a partial product freed unread",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "a": (dtype: F16, shape: "f16[256,4096]", init: Random(seed: 1)),
        "b": (dtype: F16, shape: "f16[4096,64]", init: Random(seed: 2)),
        "c": (dtype: F16, shape: "f16[256,64]", init: Random(seed: 3)),
    },
    program: [
        Load(tensor: "c", layout: "((8_L2B, 16_MAB, 2), (4_PE, 4, 4_W); B@[L1B])"),
        Store(tensor: "c"),
        Load(tensor: "a", layout: "((8_L1B, 16_MAB, 2), (8_L2B, 4_PE, 32, 4_W))"),
        Load(tensor: "b", layout: "((8_L2B, 4_PE, 128), (16, 4_W); B@[L1B,MAB])"),
        MatMul(a: "a", b: "b", out: "c", layout: "((8_L1B, 16_MAB, 2), (16, 4_W); B@[L2B,PE])"),
        Free(tensor: "c"),
    ],
)"#;
    // The three Loads through the 4 Group ports of 64 B/cycle: (32 + 2,048 + 512) KiB
    // / 256 = 10,368 cycles. Had the partial `c` been reduced, its sum would go down
    // every Group port: (2,048 + 512 + 4 × 32) KiB / 256 = 10,752.
    let loads = ((32 << 10) + (2 << 20) + (512 << 10)) / (4 * 64);
    assert_eq!(loads, 10_368);
    for s in [Schedule::Sequential, Schedule::Overlapped] {
        let r = &run(text, s).unwrap()[0];
        assert_within_bound(r, &format!("{s:?}"));
        assert_eq!(r.bound_cycles, loads);
    }
}

// ---------------------------------------------------------------------------------
// Random programs

#[test]
fn no_random_program_runs_below_its_bound() {
    let cases: u64 = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(160);
    let mut ran = 0u64;
    let mut streamed = 0u64;
    let mut kinds: std::collections::BTreeSet<String> = Default::default();
    for seed in 0..cases {
        let text = common::random::program(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for s in [Schedule::Sequential, Schedule::Overlapped] {
            // A program whose kernel is illegal for its layouts, or that overflows LM,
            // is refused: it has no cycles to compare.
            let Ok(reports) = run(&text, s) else {
                continue;
            };
            for r in &reports {
                assert_within_bound(r, &format!("{s:?}\n{text}"));
                ran += 1;
                streamed += u64::from(!r.streams.is_empty());
                kinds.extend(r.ops.iter().map(|o| o.op.clone()));
            }
        }
    }
    assert!(ran >= cases / 2, "only {ran} of {} runs ran", 2 * cases);
    assert!(streamed >= cases / 10, "only {streamed} runs streamed");
    for k in [
        "Load",
        "Store",
        "Relayout",
        "Reduce",
        "MatMul",
        "Softmax",
        "ReduceAxes",
    ] {
        assert!(kinds.contains(k), "no {k} ran: {kinds:?}");
    }
}

#[test]
fn every_shipped_scenario_runs_within_its_bound() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for s in [Schedule::Sequential, Schedule::Overlapped] {
            if let Ok(reports) = run(&text, s) {
                for r in &reports {
                    assert_within_bound(r, &format!("{} {s:?}", f.display()));
                }
            }
        }
    }
}
