//! Load and Store on mncore1 and mncore2: functional throughput (bytes of real data per
//! second) and timing-mode cost per call, at several tensor sizes, beside a memcpy of the
//! same bytes on the same machine (the ceiling of a functional move); and a Store as the
//! planner's measuring engine charges it, in closed form (`measured_store`).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mnsim_arch::{DType, TensorLayout, XlaLayout, preset};
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;
use std::hint::black_box;
use std::time::Duration;

/// (name, machine, dtype, shape, layout): the blog's 1024x512, a 4096x2048 f32 tensor
/// (32 MiB) in the same pattern (every PE's elements 4 apart in DRAM, one per 8-byte word),
/// a 2048x2048 f64 tensor (32 MiB) whose PEs hold runs of 32 elements contiguous in DRAM
/// and in LM, and a 256 MiB f32 tensor in 16 `Time` steps over every PE of mncore2 (runs
/// of 16 elements, 64 bytes, contiguous on both sides).
const CASES: &[(&str, &str, DType, [u64; 2], &str)] = &[
    (
        "1024x512",
        "mncore1",
        DType::F32,
        [1024, 512],
        "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))",
    ),
    (
        "4096x2048",
        "mncore1",
        DType::F32,
        [4096, 2048],
        "((16_L2B, 8_L1B, 32:32), (16_MAB, 32:1, 4_PE))",
    ),
    (
        "2048x2048 f64 runs",
        "mncore1",
        DType::F64,
        [2048, 2048],
        "((16_L2B, 8_L1B, 16:32), (16_MAB, 4_PE, 32:1))",
    ),
    (
        "mncore2 65536x1024 Time",
        "mncore2",
        DType::F32,
        [65536, 1024],
        "((16_Time, 8_L2B, 8_L1B, 64), (16_MAB, 4_PE, 8, 2_W))",
    ),
];

fn engine(machine: &str, mode: Mode, dtype: DType, shape: [u64; 2]) -> Engine {
    let m = preset(machine).unwrap();
    let mut e = Engine::new(m, mode);
    let data =
        (mode == Mode::Functional).then(|| init_data(&Init::Random { seed: 1 }, dtype, &shape));
    e.state
        .declare(
            "x",
            dtype,
            shape.to_vec(),
            shape.to_vec(),
            XlaLayout::default_for(2),
            data,
        )
        .unwrap();
    if mode == Mode::Timing {
        e.state
            .set_in_dram(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2));
    }
    e
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("load_store");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    for &(name, machine, dtype, shape, text) in CASES {
        let m = preset(machine).unwrap();
        let layout = TensorLayout::parse(text, &m, Some(&shape), dtype).unwrap();
        let bytes = shape[0] * shape[1] * dtype.bytes();
        g.throughput(Throughput::Bytes(bytes));
        // The ceiling: one memcpy of the same bytes into a buffer already allocated.
        let src = vec![1u8; bytes as usize];
        let mut dst = vec![0u8; bytes as usize];
        g.bench_function(BenchmarkId::new("memcpy", name), |b| {
            b.iter(|| {
                dst.copy_from_slice(black_box(&src));
                black_box(dst[dst.len() / 2])
            })
        });
        let mut e = engine(machine, Mode::Functional, dtype, shape);
        g.bench_with_input(
            BenchmarkId::new("functional_load", name),
            &layout,
            |b, l| {
                b.iter(|| {
                    e.state.free(e.state.tensor_id("x").unwrap()).unwrap();
                    black_box(
                        e.load(e.state.tensor_id("x").unwrap(), l.clone())
                            .unwrap()
                            .cycles,
                    )
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("functional_store", name),
            &layout,
            |b, _| {
                b.iter(|| {
                    black_box(
                        e.store(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2))
                            .unwrap()
                            .cycles,
                    )
                })
            },
        );
        drop(e);
        g.throughput(Throughput::Elements(1));
        let mut e = engine(machine, Mode::Timing, dtype, shape);
        g.bench_with_input(BenchmarkId::new("timing_load", name), &layout, |b, l| {
            b.iter(|| {
                e.state.free(e.state.tensor_id("x").unwrap()).unwrap();
                black_box(
                    e.load(e.state.tensor_id("x").unwrap(), l.clone())
                        .unwrap()
                        .cycles,
                )
            })
        });
        g.bench_with_input(BenchmarkId::new("timing_store", name), &layout, |b, _| {
            b.iter(|| {
                black_box(
                    e.store(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2))
                        .unwrap()
                        .cycles,
                )
            })
        });
        // The planner's engine: the same charge in closed form from the layout's
        // per-level choices (net::cost_product), no per-PE facts.
        let mut e = engine(machine, Mode::Timing, dtype, shape);
        e.rec.kind = mnsim_sim::engine::Recording::Measure(Box::default());
        e.load(e.state.tensor_id("x").unwrap(), layout.clone())
            .unwrap();
        g.bench_with_input(BenchmarkId::new("measured_store", name), &layout, |b, _| {
            b.iter(|| {
                black_box(
                    e.store(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2))
                        .unwrap()
                        .cycles,
                )
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
