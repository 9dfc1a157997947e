//! Load and Store on mncore1: functional throughput (bytes of real data per second) and
//! timing-mode cost per call, at two tensor sizes.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mnsim_arch::{DType, TensorLayout, XlaLayout, preset};
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;
use std::hint::black_box;
use std::time::Duration;

/// (name, shape, layout): the blog's 1024x512, and a 4096x2048 tensor (32 MiB).
const CASES: &[(&str, [u64; 2], &str)] = &[
    (
        "1024x512",
        [1024, 512],
        "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))",
    ),
    (
        "4096x2048",
        [4096, 2048],
        "((16_L2B, 8_L1B, 32:32), (16_MAB, 32:1, 4_PE))",
    ),
];

fn engine(mode: Mode, shape: [u64; 2]) -> Engine {
    let m = preset("mncore1").unwrap();
    let mut e = Engine::new(m, mode);
    let data = (mode == Mode::Functional)
        .then(|| init_data(&Init::Random { seed: 1 }, DType::F32, &shape));
    e.declare(
        "x",
        DType::F32,
        shape.to_vec(),
        shape.to_vec(),
        XlaLayout::default_for(2),
        data,
    )
    .unwrap();
    if mode == Mode::Timing {
        e.set_in_dram("x", XlaLayout::default_for(2));
    }
    e
}

fn bench(c: &mut Criterion) {
    let m = preset("mncore1").unwrap();
    let mut g = c.benchmark_group("load_store");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    for &(name, shape, text) in CASES {
        let layout = TensorLayout::parse(text, &m, Some(&shape), DType::F32).unwrap();
        let bytes = shape[0] * shape[1] * 4;
        g.throughput(Throughput::Bytes(bytes));
        let mut e = engine(Mode::Functional, shape);
        g.bench_with_input(
            BenchmarkId::new("functional_load", name),
            &layout,
            |b, l| {
                b.iter(|| {
                    e.free("x").unwrap();
                    black_box(e.load("x", l.clone()).unwrap().cycles)
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("functional_store", name),
            &layout,
            |b, _| b.iter(|| black_box(e.store("x", XlaLayout::default_for(2)).unwrap().cycles)),
        );
        g.throughput(Throughput::Elements(1));
        let mut e = engine(Mode::Timing, shape);
        g.bench_with_input(BenchmarkId::new("timing_load", name), &layout, |b, l| {
            b.iter(|| {
                e.free("x").unwrap();
                black_box(e.load("x", l.clone()).unwrap().cycles)
            })
        });
        g.bench_with_input(BenchmarkId::new("timing_store", name), &layout, |b, _| {
            b.iter(|| black_box(e.store("x", XlaLayout::default_for(2)).unwrap().cycles))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
