//! A whole model's report by part and by layer (docs/import.md, places): the rows sum
//! the ops the import placed, every view shows them, and a scenario without places
//! shows none.

use mnsim_reports::places::PlaceTotal;
use mnsim_sim::scenario::{self, Mode};
use std::collections::BTreeMap;
use std::path::Path;

fn run(path: &Path, plan: &str) -> mnsim_reports::Report {
    let (sc, src) = mnsim_sim::load::load(path).unwrap();
    let mut res = scenario::resolve(&sc, &src, Some(plan), &[], &BTreeMap::new()).unwrap();
    res.mode = Mode::Timing;
    mnsim_sim::run::run(&res).unwrap().report
}

#[test]
fn gpt2_decode_reports_its_parts_and_layers() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/workloads/models/gpt2_small_decode_kv1024_f32.mlir");
    let r = run(&path, "default");
    let parts: Vec<&PlaceTotal> = r.places.iter().filter(|t| t.by == "part").collect();
    let layers: Vec<&PlaceTotal> = r.places.iter().filter(|t| t.by == "layer").collect();
    let names: Vec<String> = parts.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["embedding", "norm", "attention", "mlp", "head"]);
    assert_eq!(
        layers.iter().map(|t| t.layer.unwrap()).collect::<Vec<_>>(),
        (0..12).collect::<Vec<_>>()
    );
    // Each row is the sum of its ops, as the report lists them.
    for t in &r.places {
        let ops: Vec<_> = (r.ops.iter())
            .filter(|o| match &t.part {
                Some(p) => o.part.as_ref() == Some(p),
                None => o.layer == t.layer,
            })
            .collect();
        assert_eq!(t.ops, ops.len() as u64, "{}", t.name());
        assert_eq!(
            t.exposed_cycles,
            ops.iter().map(|o| o.exposed_cycles).sum::<u64>()
        );
        assert_eq!(
            t.bound_cycles,
            ops.iter().map(|o| o.bound_cycles).sum::<u64>()
        );
        let j: f64 = ops.iter().map(|o| o.energy_j).sum();
        assert!((t.energy_j - j).abs() <= 1e-9 * j.max(1.0), "{}", t.name());
        assert!(t.ops > 0 && t.exposed_cycles <= r.total_cycles);
    }
    // The parts hold every placed op once: with the unplaced ones, the run's exposed cycles.
    let unplaced: u64 = (r.ops.iter())
        .filter(|o| o.part.is_none())
        .map(|o| o.exposed_cycles)
        .sum();
    let all: u64 = r.ops.iter().map(|o| o.exposed_cycles).sum();
    assert_eq!(
        parts.iter().map(|t| t.exposed_cycles).sum::<u64>() + unplaced,
        all
    );
    // Identical layers cost about alike.
    let (lo, hi) = (layers.iter().map(|t| t.exposed_cycles))
        .fold((u64::MAX, 0), |(a, b), c| (a.min(c), b.max(c)));
    assert!(hi < 2 * lo, "{lo}..{hi}");
    // Every view shows them; report.json carries them.
    let text = mnsim_reports::terminal(&r, false);
    assert!(text.contains("by part") && text.contains("by layer"));
    assert!(text.contains("  attention ") && text.contains("  layer 11 "));
    let html = mnsim_reports::html(&r);
    assert!(html.contains("id=\"by-part\"") && html.contains("id=\"by-layer\""));
    let md = mnsim_reports::markdown(&r);
    assert!(md.contains("## By part"), "{md}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["places"].as_array().unwrap().len(), 17);
}

#[test]
fn a_scenario_without_places_shows_none() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/mlp_block.ron");
    let (sc, _) = mnsim_sim::load::load(&path).unwrap();
    let plan = scenario::plans_to_run(&sc)[0].clone().unwrap();
    let r = run(&path, &plan);
    assert!(r.places.is_empty());
    assert!(!mnsim_reports::terminal(&r, false).contains("by part"));
    assert!(serde_json::to_value(&r).unwrap().get("places").is_none());
}
