//! Every shipped scenario, every plan, in timing mode: the totals are pinned by snapshot
//! (a change in cycles is a visible diff in `sim/tests/snapshots/`), and the peak
//! matmul reaches its machine's peak without ever exceeding it.
//! (Both modes and `verify` for the functional scenarios: `sim/tests/transfers.rs`.)

use mnsim_reports::Report;
use mnsim_sim::scenario::{self, Mode, Schedule};
use std::fmt::Write as _;
use std::path::Path;

fn run_timing(file: &str) -> Vec<Report> {
    run_under(file, Schedule::Sequential)
}

fn run_under(file: &str, schedule: Schedule) -> Vec<Report> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    let (sc, src) = scenario::load(&path).unwrap_or_else(|e| panic!("{file}: {e:?}"));
    scenario::plans_to_run(&sc)
        .into_iter()
        // Plans with `Any` variables wait for the planner (tested below).
        .filter(|p| {
            p.as_ref()
                .is_none_or(|p| sc.plans[p].values().all(|v| *v != scenario::PlanValue::Any))
        })
        .map(|plan| {
            let mut res = scenario::resolve(&sc, &src, plan.as_deref(), &[], &Default::default())
                .unwrap_or_else(|e| panic!("{file} {plan:?}: {e:?}"));
            res.mode = Mode::Timing;
            res.schedule = schedule;
            mnsim_sim::run::run(&res)
                .unwrap_or_else(|e| panic!("{file} {plan:?}: {e}"))
                .report
        })
        .collect()
}

/// The totals a reader of report.json would compare: per plan, total cycles and per op
/// its cycles, bottleneck and (where it computes) FLOP.
fn totals(reports: &[Report]) -> String {
    let mut s = String::new();
    for r in reports {
        let _ = writeln!(
            s,
            "plan {}: {} cycles",
            r.plan.as_deref().unwrap_or("-"),
            r.total_cycles
        );
        // Numbered by row (the report's `index` is the op's place in the program).
        for (i, o) in r.ops.iter().enumerate() {
            let flops = o.flops.map(|f| format!(", {f} FLOP")).unwrap_or_default();
            let _ = writeln!(
                s,
                "  {} {} {}: {} cycles ({}){flops}",
                i, o.op, o.tensor, o.cycles, o.bottleneck
            );
        }
    }
    s
}

/// Under the overlapped schedule: every op's start and end besides its cycles, and the
/// cycles hidden behind other ops.
fn overlapped_totals(reports: &[Report]) -> String {
    let mut s = String::new();
    for r in reports {
        let _ = writeln!(
            s,
            "plan {}: {} cycles overlapped, {} hidden",
            r.plan.as_deref().unwrap_or("-"),
            r.total_cycles,
            r.hidden_cycles()
        );
        for (i, o) in r.ops.iter().enumerate() {
            let _ = writeln!(
                s,
                "  {} {} {}: {}..{} ({} cycles, {} exposed)",
                i, o.op, o.tensor, o.start, o.end, o.cycles, o.exposed_cycles
            );
        }
    }
    s
}

/// The sequential snapshot (the figures op after op: they predate the timeline and
/// must not change) and the overlapped one beside it.
macro_rules! pinned {
    ($name:ident, $overlapped:ident, $file:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(totals(&run_timing($file)));
        }
        #[test]
        fn $overlapped() {
            insta::assert_snapshot!(overlapped_totals(&run_under($file, Schedule::Overlapped)));
        }
    };
}

pinned!(
    transfer_blog_1024x512,
    transfer_blog_1024x512_overlapped,
    "transfer_blog_1024x512.ron"
);
pinned!(rates_mncore2, rates_mncore2_overlapped, "rates_mncore2.ron");
pinned!(blog_12x8, blog_12x8_overlapped, "blog_12x8.ron");
pinned!(blog_1024x512, blog_1024x512_overlapped, "blog_1024x512.ron");
pinned!(mlp_block, mlp_block_overlapped, "mlp_block.ron");
pinned!(
    attention_block,
    attention_block_overlapped,
    "attention_block.ron"
);
pinned!(layernorm, layernorm_overlapped, "layernorm.ron");
pinned!(
    peak_matmul_fp16,
    peak_matmul_fp16_overlapped,
    "peak_matmul_fp16.ron"
);
pinned!(
    plan_layernorm,
    plan_layernorm_overlapped,
    "plan_layernorm.ron"
);
pinned!(prefetch, prefetch_overlapped, "prefetch.ron");
pinned!(double_buffer, double_buffer_overlapped, "double_buffer.ron");
pinned!(boards_matmul, boards_matmul_overlapped, "boards_matmul.ron");

#[test]
fn the_next_weights_load_behind_the_matmul_only_where_lm_has_room() {
    let seq = run_under("prefetch.ron", Schedule::Sequential);
    let ovl = run_under("prefetch.ron", Schedule::Overlapped);
    let plan = |rs: &[Report], p: &str| -> Report {
        rs.iter()
            .find(|r| r.plan.as_deref() == Some(p))
            .cloned()
            .unwrap()
    };
    let op = |r: &Report, name: &str, t: &str| -> (u64, u64) {
        let o = r
            .ops
            .iter()
            .find(|o| o.op == name && o.tensor == t)
            .unwrap();
        (o.start, o.end)
    };
    // Op after op, the two plans cost the same.
    assert_eq!(
        plan(&seq, "room").total_cycles,
        plan(&seq, "no_room").total_cycles
    );
    let (room, tight) = (plan(&ovl, "room"), plan(&ovl, "no_room"));
    // With room, W2 loads while the first matmul runs.
    let (mm_start, mm_end) = op(&room, "MatMul", "h1");
    let (w2_start, _) = op(&room, "Load", "w2");
    assert!(w2_start < mm_end && w2_start >= mm_start, "{room:#?}");
    // Without, it waits for the matmul to stop reading W1's space.
    assert_eq!(op(&tight, "Load", "w2").0, op(&tight, "MatMul", "h1").1);
    assert!(room.total_cycles < tight.total_cycles);
    assert!(tight.total_cycles < plan(&seq, "no_room").total_cycles);
}

#[test]
fn every_shipped_scenario_is_pinned() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let src = include_str!("scenarios.rs");
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".ron") {
            assert!(
                src.contains(&format!("\"{name}\"")),
                "{name} has no snapshot test here"
            );
        }
    }
}

#[test]
fn the_peak_matmul_reaches_but_never_exceeds_the_fp16_peak() {
    let peak = 524_288.0; // mncore2: 1024 MAB x 512 FP16 FLOP per cycle
    let r = &run_timing("peak_matmul_fp16.ron")[0];
    let mm = r.ops.iter().find(|o| o.op == "MatMul").expect("a MatMul");
    // The matrix units' own cycles (the op also pays for the slices of `a` it needs
    // again: see the streams test below).
    let compute = mm
        .stages
        .iter()
        .find(|s| s.kind == "compute")
        .expect("a compute stage")
        .cycles;
    let rate = mm.flops.expect("flops") as f64 / compute as f64;
    assert!(
        rate >= 0.9 * peak,
        "{rate} FLOP/cycle is below 90% of {peak}"
    );
    assert!(rate <= peak, "{rate} FLOP/cycle exceeds the peak {peak}");
    assert_eq!(mm.flops, Some(2 * 8192u64.pow(3)));
}
