//! The public MN-Core 2 rate table (references/mncore.md), reproduced by
//! `scenarios/rates_mncore2.ron`: each stage's cycles equal the table's figure, computed
//! here from the table (in long words, LW = 8 bytes), not from the machine file.

use mnsim_reports::{OpReport, Report};
use mnsim_sim::scenario;
use std::path::Path;

fn report() -> Report {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/rates_mncore2.ron");
    let (sc, src) = scenario::load(&path).expect("loads");
    let mut res = scenario::resolve(&sc, &src, None, &[], &Default::default()).expect("resolves");
    // The table is about each op's own figures: op after op.
    res.schedule = scenario::Schedule::Sequential;
    mnsim_sim::run::run(&res).expect("runs").report
}

fn stage(op: &OpReport, level: &str, direction: &str) -> (String, u64) {
    let s = op
        .stages
        .iter()
        .find(|s| s.level == level && s.direction == direction)
        .unwrap_or_else(|| {
            panic!(
                "op {} ({}) has no {level} {direction} stage",
                op.index, op.tensor
            )
        });
    (s.kind.clone(), s.cycles)
}

fn op<'a>(r: &'a Report, op: &str, tensor: &str) -> &'a OpReport {
    r.ops
        .iter()
        .find(|o| o.op == op && o.tensor == tensor)
        .expect("op present")
}

#[test]
fn l1bm_distribute_takes_n_over_64_and_broadcast_takes_n() {
    let r = report();
    let n = 4096; // LW per L1BM
    assert_eq!(
        stage(op(&r, "Load", "dist_l1"), "L1B", "down"),
        ("distribute".into(), n / 64)
    );
    assert_eq!(
        stage(op(&r, "Load", "bcast_l1"), "L1B", "down"),
        ("broadcast".into(), n)
    );
}

#[test]
fn l2bm_distribute_takes_n_over_64_and_broadcast_n_over_16() {
    let r = report();
    let n = 4096; // LW per L2BM
    assert_eq!(
        stage(op(&r, "Load", "dist_l2"), "L2B", "down"),
        ("distribute".into(), n / 64)
    );
    assert_eq!(
        stage(op(&r, "Load", "bcast_l2"), "L2B", "down"),
        ("broadcast".into(), n / 16)
    );
}

#[test]
fn reductions_match_the_table() {
    let r = report();
    // 16x1 reduce at the L1BM: 4 LW/cycle written for 4 distinct PEs of N LW each.
    let n = 64; // LW per PE
    assert_eq!(
        stage(op(&r, "Reduce", "red_l1"), "L1B", "up"),
        ("reduce".into(), n)
    );
    // L2BM reduce: 16 LW/cycle from each L1BM, N LW per L1BM.
    let n = 4096;
    assert_eq!(
        stage(op(&r, "Reduce", "red_l2"), "L2B", "up"),
        ("reduce".into(), n / 16)
    );
}

#[test]
fn latencies_and_pipelining_make_the_op_time() {
    // An op takes its slowest stage plus the latencies on its path (no chunking here).
    let r = report();
    for o in &r.ops {
        let slowest = o.stages.iter().map(|s| s.cycles).max().unwrap_or(0);
        let lat: u64 = o.stages.iter().map(|s| s.latency).sum();
        assert_eq!(o.cycles, slowest + lat, "op {} ({})", o.index, o.tensor);
        assert!(o.stages.iter().all(|s| s.chunks == 1));
    }
    // Ops run one after another.
    for w in r.ops.windows(2) {
        assert_eq!(w[0].end, w[1].start);
    }
    assert_eq!(r.total_cycles, r.ops.last().unwrap().end);
}
