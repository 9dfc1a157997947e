//! Plans from nothing: every layout `Any`, no hand plan. The planner's joint seeds
//! (layouts chosen together for each kernel's operands) give a plan that runs, near what
//! the machine allows: a plain GEMM and a MatMul followed by a Softmax
//! (`scenarios/studies/*_from_nothing.ron`); and real graphs whose default layouts a
//! search of single-variable moves never left: the gated MLP, a MatMul with a bias.

mod common;

use mnsim_sim::import;
use mnsim_sim::plan::{self, PlanOptions};
use mnsim_sim::scenario;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Plans plan `auto` of a study with the default work budget and no time limit (the
/// same plan on any machine).
fn plan_study(file: &str) -> plan::Outcome {
    plan_study_within(file, mnsim_sim::import::PLAN_WORK)
}

/// [`plan_study`] within a work budget of `work`.
fn plan_study_within(file: &str, work: u64) -> plan::Outcome {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/studies")
        .join(file);
    let (sc, src) = scenario::load(&path).unwrap();
    assert!(
        sc.plans.len() == 1
            && sc.plans["auto"]
                .values()
                .all(|v| *v == scenario::PlanValue::Any),
        "{file}: one plan, every variable Any"
    );
    let mut o = PlanOptions::default();
    o.search.time_limit = None;
    o.search.work_limit = Some(work);
    plan::plan_with(&sc, &src, "auto", &[], &BTreeMap::new(), &o, &mut |_, _| {}).unwrap()
}

/// Group-down cycles when one of two operands of `small` and `large` bytes must reach
/// all 4 Groups of mncore2 whole and the other once (4 ports of 64 B/cycle): every
/// legal MatMul layout replicates `a` or `b` over the L2Bs, or leaves `c` partial over
/// them (then a Reduce across the Groups sends `c` down every Group port, which costs
/// more still when `c` is as large). The bound counts it (docs/model.md, the bound).
fn replicated_floor(small: u64, large: u64) -> u64 {
    (4 * small + large) / (4 * 64)
}

#[test]
fn a_gemm_from_nothing_runs_near_what_the_machine_allows() {
    let o = plan_study("gemm_from_nothing.ron");
    let b = &o.best[0];
    assert!(b.inserted.is_empty(), "{:?}", b.inserted);
    assert_eq!(b.layouts.len(), 3);
    // The bound is what layout legality forces through the Group ports: one operand
    // on every Group (40,960 cycles; every byte once would be 16,384).
    let floor = replicated_floor(2 << 20, 2 << 20);
    assert_eq!(floor, 40_960);
    assert_eq!(o.bound_cycles, floor);
    assert_eq!(o.bound_resource, "Group down");
    assert!(b.total_cycles >= floor, "{}", b.total_cycles);
    // Streamed (the search's best tried in `Time` steps): the Store overlaps the rest.
    assert!(
        b.total_cycles * 10 <= floor * 11,
        "{} cycles, bound {floor}",
        b.total_cycles
    );
}

#[test]
fn a_matmul_and_softmax_from_nothing_runs_near_what_the_machine_allows() {
    let o = plan_study("matmul_softmax_from_nothing.ron");
    let b = &o.best[0];
    // A block's spread pass (docs/planner.md) lays the scores out for the MatMul and
    // relayouts them once for the Softmax: at most that one Relayout, inside the total.
    assert!(b.inserted.len() <= 1, "{:?}", b.inserted);
    let relayouts: u64 = b.inserted.iter().map(|i| i.cycles).sum();
    assert!(relayouts < b.total_cycles, "{:?}", b.inserted);
    assert_eq!(b.layouts.len(), 4);
    let floor = replicated_floor(8 << 20, 8 << 20);
    assert_eq!(o.bound_cycles, floor);
    assert!(b.total_cycles >= floor, "{}", b.total_cycles);
    assert!(
        b.total_cycles * 10 <= floor * 15,
        "{} cycles, bound {floor}",
        b.total_cycles
    );
}

#[test]
fn the_peak_matmul_from_nothing_runs_at_two_fifths_of_peak() {
    // 8192³ fp16: three 128 MiB operands, 128 MiB of LM in all. The hand plan
    // (`scenarios/peak_matmul_fp16.ron`) runs at 30.6% of the matrix units' peak.
    let o = plan_study("peak_matmul_from_nothing.ron");
    let b = &o.best[0];
    let flop = 2u64 * 8192 * 8192 * 8192;
    let peak = 524_288u64;
    // One operand on every Group (2,621,440 cycles) weighs more than the matrix units'
    // peak (2,097,152).
    let floor = replicated_floor(128 << 20, 128 << 20);
    assert!(floor > flop / peak);
    assert_eq!(o.bound_cycles, floor);
    assert!(b.total_cycles <= 2 * o.bound_cycles, "{}", b.total_cycles);
    assert!(
        flop * 10 >= b.total_cycles * peak * 4,
        "{} cycles: {:.1}% of peak",
        b.total_cycles,
        flop as f64 / b.total_cycles as f64 / peak as f64 * 100.0
    );
    assert!(b.total_cycles >= o.bound_cycles);
}

#[test]
fn a_plan_from_nothing_is_the_same_with_the_machine_idle_and_busy() {
    // A budget the search spends (within `run`'s, it ends its descent first), so that
    // the work budget is what stops it.
    const WORK: u64 = 20_000;
    let quiet = plan_study_within("gemm_from_nothing.ron", WORK);
    // Every core spinning while the same program is planned again.
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..std::thread::available_parallelism().map_or(2, |n| n.get()))
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                x
            })
        })
        .collect();
    let busy = plan_study_within("gemm_from_nothing.ron", WORK);
    stop.store(true, Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    assert_eq!(busy.best[0].layouts, quiet.best[0].layouts);
    assert_eq!(busy.best[0].total_cycles, quiet.best[0].total_cycles);
    assert_eq!(busy.evaluated, quiet.evaluated);
    assert!(!busy.timed_out && busy.work_spent);
}

/// The timing run's cycles and the bound of an imported graph planned as `mnsim run
/// G.json` plans it.
fn run_graph(path: &Path) -> (u64, u64) {
    let r = common::graphs::plan_and_run(path);
    (r.total_cycles, r.bound_cycles)
}

#[test]
fn the_gated_mlp_deals_its_weights_out_and_runs_near_its_bound() {
    // Its default layouts broadcast two of the three 224 MiB weights to every PE
    // (75,971,520 cycles); planned from single-variable moves it stayed near them.
    let (cycles, bound) = run_graph(&common::graphs::dir().join("gated-mlp-f32.json"));
    assert!(cycles <= 3_500_000, "{cycles} cycles");
    assert!(cycles * 10 <= bound * 11, "{cycles} cycles, bound {bound}");
}

#[test]
fn a_matmul_with_a_bias_leaves_its_default_layouts() {
    // `[384,4096]×[4096,1024]` f32 with a bias and a clip: 6,516,836 cycles on its
    // default layouts.
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/workloads/onednn/pattern/f32");
    let (cycles, bound) = run_graph(&dir.join("matmul_bias_post_ops_clip_fusion.json"));
    assert!(cycles <= 250_000, "{cycles} cycles");
    assert!(cycles >= bound);
}

/// A chain of `n` ReLUs on one `[64, 1024]` f32 tensor shape, every layout `Any`.
fn relu_chain(n: usize) -> (scenario::Scenario, scenario::Source) {
    let mut tensors =
        String::from("\"x0\": (dtype: F32, shape: \"f32[64,1024]\", init: Random(seed: 0)),");
    let mut program = String::from("Load(tensor: \"x0\", layout: \"$x0\"),");
    let mut vars = String::from("\"x0\": Any,");
    for i in 1..=n {
        tensors += &format!("\"x{i}\": (dtype: F32, shape: \"f32[64,1024]\"),");
        program += &format!(
            "Unary(op: Relu, input: \"x{}\", out: \"x{i}\", layout: \"$x{i}\"), Free(tensor: \"x{}\"),",
            i - 1,
            i - 1
        );
        vars += &format!("\"x{i}\": Any,");
    }
    program += &format!("Store(tensor: \"x{n}\"),");
    let text = format!(
        "Scenario(name: \"relus\", machine: Preset(\"mncore2\"), tensors: {{{tensors}}}, \
         program: [{program}], plans: {{\"auto\": {{{vars}}}}})"
    );
    let sc = scenario::parse(&text, "relus.ron").unwrap();
    let src = scenario::Source {
        path: "relus.ron".into(),
        text,
    };
    (sc, src)
}

#[test]
fn memory_is_bounded_by_the_work_not_by_the_variables() {
    // Tensors of one shape share their candidate layouts: 20 times the variables, the
    // same layouts interned.
    let count = |n: usize| {
        let (sc, src) = relu_chain(n);
        let res = scenario::resolve(&sc, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
        let m = plan::model::Model::new(&res, plan::candidates::Space::default()).unwrap();
        assert_eq!(m.vars.len(), n + 1);
        m.layout_count()
    };
    let (few, many) = (count(10), count(200));
    assert!(few > 100, "{few} layouts");
    assert_eq!(few, many);
    // A long chain plans (under the default work budget) to a plan that runs.
    let (sc, src) = relu_chain(300);
    let mut o = PlanOptions::default();
    o.search.time_limit = None;
    o.search.work_limit = Some(import::PLAN_WORK);
    let out = plan::plan_with(&sc, &src, "auto", &[], &BTreeMap::new(), &o, &mut |_, _| {});
    let out = out.unwrap();
    assert!(out.best[0].total_cycles >= out.bound_cycles);
}
