//! Plans from nothing: every layout `Any`, no hand plan. The planner's joint seeds
//! (layouts chosen together for each kernel's operands) give a plan that runs, near what
//! the machine allows: a plain GEMM and a MatMul followed by a Softmax
//! (`scenarios/studies/*_from_nothing.ron`).

use mnsim_sim::plan::{self, PlanOptions};
use mnsim_sim::scenario;
use std::collections::BTreeMap;
use std::path::Path;

/// Plans plan `auto` of a study with the default work budget and no time limit (the
/// same plan on any machine).
fn plan_study(file: &str) -> plan::Outcome {
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
    o.search.work_limit = Some(mnsim_sim::import::PLAN_WORK);
    plan::plan_with(&sc, &src, "auto", &[], &BTreeMap::new(), &o, &mut |_, _| {}).unwrap()
}

/// Group-down cycles when one of two operands of `small` and `large` bytes must reach
/// all 4 Groups of mncore2 whole and the other once (4 ports of 64 B/cycle): every
/// legal MatMul layout replicates `a` or `b` over the L2Bs, or leaves `c` partial over
/// them (then a Reduce across the Groups costs more still).
fn replicated_floor(small: u64, large: u64) -> u64 {
    (4 * small + large) / (4 * 64)
}

#[test]
fn a_gemm_from_nothing_runs_near_what_the_machine_allows() {
    let o = plan_study("gemm_from_nothing.ron");
    let b = &o.best[0];
    assert!(b.inserted.is_empty(), "{:?}", b.inserted);
    assert_eq!(b.layouts.len(), 3);
    // The bound (16,384 cycles: the three 2 MiB tensors once through the Group ports)
    // counts every byte once; a MatMul needs one of its operands on every Group.
    assert_eq!(o.bound_cycles, 16_384);
    let floor = replicated_floor(2 << 20, 2 << 20);
    assert_eq!(floor, 40_960);
    assert!(b.total_cycles >= floor, "{}", b.total_cycles);
    assert!(
        b.total_cycles * 10 <= floor * 14,
        "{} cycles, floor {floor}",
        b.total_cycles
    );
    assert!(b.total_cycles <= 4 * o.bound_cycles);
}

#[test]
fn a_matmul_and_softmax_from_nothing_runs_near_what_the_machine_allows() {
    let o = plan_study("matmul_softmax_from_nothing.ron");
    let b = &o.best[0];
    assert!(b.inserted.is_empty(), "{:?}", b.inserted);
    assert_eq!(b.layouts.len(), 4);
    assert_eq!(o.bound_cycles, 65_536);
    let floor = replicated_floor(8 << 20, 8 << 20);
    assert!(b.total_cycles >= floor, "{}", b.total_cycles);
    assert!(
        b.total_cycles * 10 <= floor * 16,
        "{} cycles, floor {floor}",
        b.total_cycles
    );
    assert!(b.total_cycles <= 4 * o.bound_cycles);
}

#[test]
fn a_plan_from_nothing_is_the_same_every_time() {
    let a = plan_study("gemm_from_nothing.ron");
    let b = plan_study("gemm_from_nothing.ron");
    assert_eq!(a.best[0].layouts, b.best[0].layouts);
    assert_eq!(a.best[0].total_cycles, b.best[0].total_cycles);
    assert_eq!(a.evaluated, b.evaluated);
}
