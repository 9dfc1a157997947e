//! The planner's model: assignments of layouts evaluated per second on the attention
//! block with `q` and `kT` left to the planner (the scenario is resolved once, outside
//! the measurement).
//!
//! - `plan/evaluate/warm`: 1,000 assignments whose op costs are all in the memo (the
//!   search's steady state: a changed variable re-costs only the ops it touches, and
//!   those were measured before);
//! - `plan/evaluate/cold`: 64 assignments that each change one variable to a candidate
//!   never seen, with the memo emptied first: every changed op is measured by the
//!   engine.
//! - `plan/evaluate/bounded`: the warm assignments against a cutoff none of them beats
//!   (the least of their keys), as a search asks (`Model::evaluate_below`): those its
//!   busiest resource, or how far it got, proves no better are decided without placing
//!   their tasks, the others placed.
//! - `plan/from_nothing/*`: the whole planning of `scenarios/studies/*_from_nothing.ron`
//!   (every layout `Any`, no hand plan; joint seeds, search and confirming runs) under
//!   the default work budget.
//! - `plan/layers/*`: GPT-2 small's prefill (`scenarios/workloads/models/`, 2,188 ops,
//!   12 layers) under its `default_split` plan, every layer laid out as its first like
//!   one, and that plan with one variable of the first layer the search moves set to
//!   another layout, evaluated in turn (each placed again from that variable's first op
//!   on): `skipped` walks two of the run of like layers and charges the rest as copies
//!   of the second (docs/planner.md, identical layers walked twice), `whole` walks every
//!   op.
//! - `plan/graph/*`: what `mnsim run G.json` does before it runs a graph of
//!   `scenarios/workloads/graphs`: plan `auto` seeded by the import's `default` and
//!   `default_split` plans under the import's work budget (`import::plan_auto`), the
//!   import itself outside the measurement. Its throughput is in evaluations: the
//!   assignments one planning evaluates (`evaluated` of `mnsim plan G.json --json`,
//!   whose options these are), counted by a planning before the measurement.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mnsim_sim::plan::candidates::Space;
use mnsim_sim::plan::model::{LayoutId, Model};
use mnsim_sim::program::EntityRef as _;
use mnsim_sim::scenario::{self, PlanValue};
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

fn model() -> Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/attention_block.ron");
    let (mut sc, src) = scenario::load(&path).unwrap();
    let mut auto = sc.plans["rows"].clone();
    auto.insert("q".into(), PlanValue::Any);
    auto.insert("kt".into(), PlanValue::Any);
    sc.plans.insert("auto".into(), auto);
    let res = scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default()).unwrap();
    Model::new(&res, Space::default()).unwrap()
}

/// `n` assignments: q walks its candidates, kT its own at a different pace.
fn picks(m: &Model, n: usize) -> Vec<Vec<LayoutId>> {
    let (q, k) = (&m.vars[0].candidates, &m.vars[1].candidates);
    (0..n)
        .map(|i| vec![q[i % q.len()], k[(i / 32) % k.len()]])
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan/evaluate");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    let mut m = model();
    let warm = picks(&m, 1000);
    for p in &warm {
        m.evaluate(p);
    }
    g.throughput(Throughput::Elements(warm.len() as u64));
    g.bench_function("warm", |b| {
        b.iter(|| {
            for p in &warm {
                black_box(m.evaluate(black_box(p)));
            }
        })
    });
    // A cutoff no assignment is below: the least key of them all.
    let best = (warm.iter().map(|p| m.evaluate(p).key())).min().unwrap();
    g.bench_function("bounded", |b| {
        b.iter(|| {
            for p in &warm {
                black_box(m.evaluate_below(black_box(p), Some(best)));
            }
        })
    });
    let cold = picks(&m, 64);
    g.throughput(Throughput::Elements(cold.len() as u64));
    g.bench_function("cold", |b| {
        b.iter(|| {
            m.clear_memo();
            for p in &cold {
                black_box(m.evaluate(black_box(p)));
            }
        })
    });
    g.finish();
}

/// Plan `auto` of `sc` as `mnsim plan` does it: no time limit, the default work budget.
fn plan_as_cli(sc: &scenario::Scenario, src: &scenario::Source) -> mnsim_sim::plan::Outcome {
    let mut o = mnsim_sim::plan::PlanOptions::default();
    o.search.time_limit = None;
    o.search.work_limit = Some(mnsim_sim::import::PLAN_WORK);
    mnsim_sim::plan::plan_with(
        sc,
        src,
        "auto",
        &[],
        &Default::default(),
        &o,
        &mut |_, _| {},
    )
    .expect("the bench's scenarios plan")
}

fn from_nothing(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan/from_nothing");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for name in ["gemm_from_nothing", "matmul_softmax_from_nothing"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/studies")
            .join(format!("{name}.ron"));
        let (sc, src) = scenario::load(&path).unwrap();
        g.bench_function(name, |b| b.iter(|| plan_as_cli(&sc, &src)));
    }
    g.finish();
}

fn graphs(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan/graph");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for name in ["MHA-GPT-inf-fp32-bs1", "gated-mlp-f32", "JAX-MQA-inf-fp32"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/workloads/graphs")
            .join(format!("{name}.json"));
        let (sc, src) = mnsim_sim::load::load(&path).expect("the repository's graphs");
        g.throughput(Throughput::Elements(plan_as_cli(&sc, &src).evaluated));
        g.bench_function(name, |b| {
            b.iter(|| {
                let (mut sc, mut src) = (sc.clone(), src.clone());
                black_box(mnsim_sim::import::plan_auto(
                    &mut sc,
                    &mut src,
                    &[],
                    &Default::default(),
                ))
            })
        });
    }
    g.finish();
}

/// GPT-2 small's prefill model, and two plans of it that run (see the module's
/// documentation).
fn gpt2_prefill() -> (Model, [Vec<LayoutId>; 2]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/workloads/models/gpt2_small_prefill_s128_f32.mlir");
    let (sc, src) = mnsim_sim::load::load(&path).expect("the repository's model");
    let binds = Default::default();
    let res = scenario::resolve(&sc, &src, Some("auto"), &[], &binds).unwrap();
    let mut m = Model::new(&res, Space::default()).unwrap();
    let hand = scenario::resolve(&sc, &src, Some("default_split"), &[], &binds).unwrap();
    let mut pick: Vec<LayoutId> = (0..m.vars.len())
        .map(|v| {
            let op = &hand.program.ops[mnsim_sim::program::OpId::new(m.vars[v].ops[0])];
            match &op.layout {
                Some(mnsim_sim::program::LayoutRef::Bound(l)) => m.seed(v, l),
                _ => panic!("default_split lays out every variable"),
            }
        })
        .collect();
    m.follow_layers(&mut pick);
    assert!(m.evaluate(&pick).failure.is_none(), "default_split runs");
    // A leading variable whose other layout runs too.
    let (from, _, _) = m.skipped().expect("GPT-2's like layers");
    for v in m.movers() {
        if m.vars[v].ops[0] >= from {
            continue;
        }
        for &c in &m.vars[v].candidates.clone() {
            let mut other = pick.clone();
            other[v] = c;
            m.follow_layers(&mut other);
            if c != pick[v] && m.skips(&other) && m.evaluate(&other).failure.is_none() {
                return (m, [pick, other]);
            }
        }
    }
    panic!("no other plan runs");
}

fn layers(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan/layers");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    let (mut m, picks) = gpt2_prefill();
    g.throughput(Throughput::Elements(2));
    for (name, skipping) in [("skipped", true), ("whole", false)] {
        m.set_skipping(skipping);
        for p in &picks {
            m.evaluate(p);
        }
        g.bench_function(name, |b| {
            b.iter(|| {
                for p in &picks {
                    black_box(m.evaluate(p));
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench, from_nothing, graphs, layers);
criterion_main!(benches);
