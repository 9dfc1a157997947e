//! The timeline: scheduling cost per op (the pure `schedule` over lowered tasks, as a
//! planner calls it), and timing-mode runs of every shipped scenario under the
//! overlapped schedule (each should stay under 50 ms).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mnsim_sim::scenario::{self, Mode, Schedule};
use mnsim_sim::timeline;
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

fn bench(c: &mut Criterion) {
    // Scheduling alone: the tasks of the attention block, repeated to a long program.
    let mut g = c.benchmark_group("schedule");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/attention_block.ron");
    let res = &resolved(&path)[0];
    let eng = mnsim_sim::run::run(res).unwrap().engine;
    let lm = eng.timeline.lm_capacity;
    for n in [64usize, 1024] {
        let tasks: Vec<timeline::Task> = eng.tasks.iter().cycle().take(n).cloned().collect();
        g.throughput(Throughput::Elements(n as u64));
        for s in [Schedule::Sequential, Schedule::Overlapped] {
            g.bench_with_input(BenchmarkId::new(s.name(), n), &tasks, |b, t| {
                b.iter(|| black_box(timeline::schedule(t, s, lm).total()))
            });
        }
    }
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
