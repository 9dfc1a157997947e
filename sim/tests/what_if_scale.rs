//! What-if machines of 2^20 PEs in timing mode: the run keeps state for the nodes its
//! layouts touch (and one entity per level), and charges the same cycles the model gives
//! on the shipped machine. Time and memory are measured by `scripts/peak_rss.sh`, not here.

use mnsim_reports::Report;
use mnsim_sim::scenario;
use mnsim_sim::world::Node;
use std::path::Path;

/// mncore2 with 64 L1Bs per L2B and 512 MABs per L1B: 4 × 2 × 64 × 512 × 4 = 2^20 PEs.
const BIG: [(&str, f64); 2] = [("levels.L1B.count", 64.0), ("levels.MAB.count", 512.0)];

fn run(file: &str, sets: &[(&str, f64)], schedule: scenario::Schedule) -> (Report, usize, u64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    let (sc, src) = scenario::load(&path).expect("loads");
    let sets: Vec<(String, f64)> = sets.iter().map(|&(k, v)| (k.to_string(), v)).collect();
    let mut res = scenario::resolve(&sc, &src, None, &sets, &Default::default()).expect("resolves");
    res.schedule = schedule;
    let pes = res.machine.leaf_count();
    let mut out = mnsim_sim::run::run(&res).expect("runs");
    let mut q = out.engine.state.sw.world.query::<&Node>();
    let nodes = q.iter(&out.engine.state.sw.world).count();
    (out.report, nodes, pes)
}

/// A stage's level, direction, kind and cycles.
type StageCycles = (String, String, String, u64);

/// Every op's cycles and every stage's.
fn cycles(r: &Report) -> Vec<(u64, Vec<StageCycles>)> {
    r.ops
        .iter()
        .map(|o| {
            let st = o.stages.iter().map(|s| {
                (
                    s.level.clone(),
                    s.direction.clone(),
                    s.kind.clone(),
                    s.cycles,
                )
            });
            (o.cycles, st.collect())
        })
        .collect()
}

#[test]
fn the_rate_table_on_2_20_pes_charges_what_it_charges_on_mncore2() {
    // Its layouts name their fan-outs (`8_L1B`, `16_MAB`) or replicate: every L1BM and
    // L2BM they touch moves what it moves on mncore2, so every stage takes as long.
    for schedule in [
        scenario::Schedule::Sequential,
        scenario::Schedule::Overlapped,
    ] {
        let (small, _, _) = run("rates_mncore2.ron", &[], schedule);
        let (big, nodes, pes) = run("rates_mncore2.ron", &BIG, schedule);
        assert_eq!(pes, 1 << 20);
        assert_eq!(cycles(&big), cycles(&small), "{schedule:?}");
        assert_eq!(big.total_cycles, small.total_cycles);
        // Nodes spawned: the chain nodes data passed through (Group, L2B, L1B and their
        // ancestors), not the 2^20 PEs or the 2^18 MABs.
        assert!(nodes <= 1 + 4 + 8 + 512, "{nodes} node entities");
    }
}

#[test]
fn a_matrix_over_every_one_of_2_20_pes_is_charged_by_the_model() {
    let (r, nodes, pes) = run(
        "studies/what_if_1m_pes.ron",
        &[],
        scenario::Schedule::Overlapped,
    );
    assert_eq!(pes, 1 << 20);
    assert!(nodes <= 1 + 4 + 8 + 512, "{nodes} node entities");
    let m = mnsim_arch::preset("mncore2").unwrap();
    let bytes = 8192u64 * 4096 * 4;
    let load = &r.ops[0];
    assert_eq!((load.op.as_str(), load.tensor.as_str()), ("Load", "x"));
    // Each Group's port distributes its quarter of x at the link's parent rate.
    let group = load
        .stages
        .iter()
        .find(|s| s.level == "Group")
        .expect("Group stage");
    let rate = m.links["Group"].distribute.parent;
    assert_eq!(group.bytes, bytes);
    assert_eq!(group.cycles, ((bytes / 4) as f64 / rate).ceil() as u64);
    assert_eq!(load.bottleneck, "Group down distribute");
    // The kernels run on every PE: 8 elements each, one FLOP per element.
    let add = &r.ops[2];
    assert_eq!(add.flops, Some(8192 * 4096));
    let ready = add.ready_cycles.as_ref().expect("ready cycles");
    assert_eq!(ready.count, 1 << 20);
    assert_eq!(r.ops.last().map(|o| o.op.as_str()), Some("Store"));
}
