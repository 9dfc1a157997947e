//! The planner's candidate layouts (`candidates::generate`) of the gated MLP's shapes
//! (`scenarios/workloads/graphs/gated-mlp-f32.json`: f32, on the default machine `mncore2`, in the
//! default space of some 4,000 candidates each):
//!
//! - `plan/candidates/4096x14336`: the weight's shape;
//! - `plan/candidates/gated-mlp`: its four shapes (1×4096, 1×14336, 4096×14336,
//!   14336×4096), one after another.
//!
//! The candidates are dropped outside the measurement (the planner keeps them).

use criterion::{Criterion, criterion_group, criterion_main};
use mnsim_arch::DType;
use mnsim_sim::plan::candidates::{Space, generate};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let m = mnsim_arch::presets::preset("mncore2").unwrap();
    let mut g = c.benchmark_group("plan/candidates");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.bench_function("4096x14336", |b| {
        b.iter_with_large_drop(|| {
            generate(
                &m,
                black_box(&[4096, 14336]),
                DType::F32,
                false,
                Space::default(),
                false,
            )
        })
    });
    let shapes: [&[u64]; 4] = [&[1, 4096], &[1, 14336], &[4096, 14336], &[14336, 4096]];
    g.bench_function("gated-mlp", |b| {
        b.iter_with_large_drop(|| {
            (shapes.iter())
                .map(|d| generate(&m, black_box(d), DType::F32, false, Space::default(), false))
                .collect::<Vec<_>>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
