//! The timeline: scheduling cost per op (the pure `schedule` over lowered tasks, as a
//! planner calls it); streams: a Load of 28,672 slices walked by a MatMul (a layout the
//! planner scores on the gated MLP: its steady pace placed in closed form) and the gated
//! MLP's tasks under `default_split` (short walks); and timing-mode runs of every shipped
//! scenario under the overlapped schedule (each should stay under 50 ms).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mnsim_sim::ids::{Dir, LevelId, RegionId};
use mnsim_sim::scenario::{self, Mode, Schedule};
use mnsim_sim::timeline::{self, Hold, Resource, StreamIn, Task, Walk};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    v.sort();
    v
}

/// Every runnable plan of a scenario, resolved for a timing-mode run.
fn resolved(path: &Path) -> Vec<scenario::Resolved> {
    let (sc, src) = scenario::load(path).unwrap();
    scenario::plans_to_run(&sc)
        .into_iter()
        .filter(|p| {
            p.as_ref()
                .is_none_or(|p| sc.plans[p].values().all(|v| *v != scenario::PlanValue::Any))
        })
        .map(|p| {
            let mut r =
                scenario::resolve(&sc, &src, p.as_deref(), &[], &Default::default()).unwrap();
            r.mode = Mode::Timing;
            r
        })
        .collect()
}

/// Steps of [`long_stream`].
const STEPS: u32 = 28_672;

/// A Load of [`STEPS`] slices (DRAM and three ports) walked slice by slice, two
/// buffers, by a MatMul: the figures of a layout the planner scores on the gated MLP.
fn long_stream() -> Vec<Task> {
    let level = |l: u16| LevelId(l);
    let port = |l: u16, cycles: u64| Hold {
        resource: Resource::Port {
            level: level(l),
            dir: Dir::Down,
        },
        cycles,
    };
    let holds = vec![
        Hold {
            resource: Resource::Dram { level: level(0) },
            cycles: 29_360_128,
        },
        port(1, 1_376_256),
        port(2, 3_670_016),
        port(3, 1_835_008),
    ];
    let n = STEPS;
    let load = Task {
        cycles: 30_162_944,
        holds: holds.clone(),
        writes: vec![RegionId(0)],
        walk: Some(Walk {
            steps: n,
            own_cycles: 30_162_944,
            out: (0..n).collect(),
            out_slices: n,
            deferred: true,
            inputs: Vec::new(),
        }),
        ..Task::default()
    };
    let (need, sends) = mnsim_sim::lowering::walk::sends(&(0..n).collect::<Vec<u32>>(), 2);
    let matmul = Task {
        cycles: 917_504,
        holds: vec![Hold {
            resource: Resource::MatrixUnit { level: level(3) },
            cycles: 917_504,
        }],
        reads: vec![RegionId(0)],
        writes: vec![RegionId(1)],
        walk: Some(Walk {
            steps: n,
            own_cycles: 917_504,
            out: (0..n).map(|j| j / 4096).collect(),
            out_slices: 7,
            deferred: false,
            inputs: vec![StreamIn {
                region: RegionId(0),
                buffers: 2,
                need: need.into(),
                resent: mnsim_sim::timeline::resends_of(sends.iter().map(|s| s.0), n),
                sends: sends.into(),
                slices: n,
                producer_cycles: load.cycles,
                producer_holds: holds,
            }],
        }),
        ..Task::default()
    };
    vec![load, matmul]
}

fn bench(c: &mut Criterion) {
    // Scheduling alone: the tasks of the attention block, repeated to a long program.
    let mut g = c.benchmark_group("schedule");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/attention_block.ron");
    let res = &resolved(&path)[0];
    let eng = mnsim_sim::run::run(res).unwrap().engine;
    let lm = eng.rec.timeline.lm_capacity;
    for n in [64usize, 1024] {
        let tasks: Vec<timeline::Task> = eng.rec.tasks.iter().cycle().take(n).cloned().collect();
        g.throughput(Throughput::Elements(n as u64));
        for s in [Schedule::Sequential, Schedule::Overlapped] {
            g.bench_with_input(BenchmarkId::new(s.name(), n), &tasks, |b, t| {
                b.iter(|| black_box(timeline::schedule(t, s, lm).total()))
            });
        }
    }

    // Streams.
    g.throughput(Throughput::Elements(STEPS.into()));
    let tasks = long_stream();
    g.bench_function("stream of 28,672 slices", |b| {
        b.iter(|| black_box(timeline::schedule(&tasks, Schedule::Overlapped, 1 << 20).total()))
    });
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/workloads/graphs/gated-mlp-f32.json");
    let (sc, src) = mnsim_sim::load::load(&path).expect("the repository's gated MLP graph");
    let plan = Some("default_split");
    let mut res = scenario::resolve(&sc, &src, plan, &[], &Default::default()).unwrap();
    res.mode = Mode::Timing;
    let eng = mnsim_sim::run::run(&res).unwrap().engine;
    let (tasks, lm) = (eng.rec.tasks.clone(), eng.rec.timeline.lm_capacity);
    g.throughput(Throughput::Elements(tasks.len() as u64));
    g.bench_function("gated MLP, default_split", |b| {
        b.iter(|| black_box(timeline::schedule(&tasks, Schedule::Overlapped, lm).total()))
    });
    g.finish();

    // Whole timing-mode runs of every shipped scenario (every plan), overlapped.
    let mut g = c.benchmark_group("timing_run");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for path in scenarios() {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let plans = resolved(&path);
        g.bench_function(&name, |b| {
            b.iter(|| {
                for r in &plans {
                    black_box(mnsim_sim::run::run(r).unwrap().report.total_cycles);
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
