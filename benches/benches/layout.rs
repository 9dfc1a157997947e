//! TensorLayout and XLA shape hot paths: parsing and binding layouts, the placement map
//! and its inverse, closed-form statistics, and the tiled linear index.
//!
//! `cargo bench -p mnsim-benches --bench layout`

use criterion::{
    BenchmarkGroup, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use mnsim_arch::shape::Shape;
use mnsim_arch::{DType, Machine, TensorLayout, preset};
use std::hint::black_box;
use std::time::Duration;

const MNCORE1_EXAMPLE: &str = "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))";
const MNCORE1_SHAPE: [u64; 2] = [1024, 512];
const MNCORE2_MATRIX: &str = "(256,16)/((8_L2B:1, 4:2, 8_L1B:1), (2:1, 4_PE:1, 2_W:1); B@[MAB])";
const XLA_SHAPE: &str = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}";

fn short<M: criterion::measurement::Measurement>(g: &mut BenchmarkGroup<'_, M>) {
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
}

/// For benchmarks whose one iteration walks a whole tensor (milliseconds): the same
/// iteration count in every sample keeps the run inside its time budget.
fn long<M: criterion::measurement::Measurement>(g: &mut BenchmarkGroup<'_, M>) {
    short(g);
    g.sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(3));
}

fn mncore1() -> (Machine, TensorLayout) {
    let m = preset("mncore1").expect("mncore1 preset");
    let l = TensorLayout::parse(MNCORE1_EXAMPLE, &m, Some(&MNCORE1_SHAPE), DType::F32)
        .expect("the worked example of docs/layout.md binds");
    (m, l)
}

fn parse_and_bind(c: &mut Criterion) {
    let m1 = preset("mncore1").unwrap();
    let m2 = preset("mncore2").unwrap();
    let mut g = c.benchmark_group("layout/parse+bind");
    short(&mut g);
    g.bench_function("mncore1 example", |b| {
        b.iter(|| {
            TensorLayout::parse(
                black_box(MNCORE1_EXAMPLE),
                &m1,
                Some(&MNCORE1_SHAPE),
                DType::F32,
            )
            .unwrap()
        })
    });
    g.bench_function("mncore2 (256,16) B@[MAB]", |b| {
        b.iter(|| {
            TensorLayout::parse(black_box(MNCORE2_MATRIX), &m2, Some(&[256, 16]), DType::F32)
                .unwrap()
        })
    });
    g.finish();
}

fn place(c: &mut Criterion) {
    let (_, l) = mncore1();
    let [rows, cols] = MNCORE1_SHAPE;
    let mut g = c.benchmark_group("layout/place");
    long(&mut g);
    g.throughput(Throughput::Elements(rows * cols));
    g.bench_function("mncore1 example, every element", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for i in 0..rows {
                for j in 0..cols {
                    let p = l.place(black_box(&[i, j])).unwrap();
                    acc = acc.wrapping_add(p.addr);
                }
            }
            acc
        })
    });
    g.finish();
}

fn element_at(c: &mut Criterion) {
    let (_, l) = mncore1();
    // Every word of every 8th PE: 1024 of the 16·8·16·4 PEs × 64 words.
    let pes: Vec<Vec<u64>> = {
        let mut v = vec![Vec::new()];
        for lv in l.levels() {
            v = v
                .into_iter()
                .flat_map(|p| {
                    (0..lv.fanout).map(move |k| {
                        let mut q = p.clone();
                        q.push(k);
                        q
                    })
                })
                .collect();
        }
        v.into_iter().step_by(8).collect()
    };
    let words = l.footprint_words();
    let mut g = c.benchmark_group("layout/element_at");
    long(&mut g);
    g.throughput(Throughput::Elements(pes.len() as u64 * words));
    g.bench_function("mncore1 example, 65536 cells", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for pos in &pes {
                for addr in 0..words {
                    let e = l.element_at(black_box(pos), addr, 0, 0).unwrap();
                    acc = acc.wrapping_add(e[0]);
                }
            }
            acc
        })
    });
    g.finish();
}

fn level_stats(c: &mut Criterion) {
    let (_, l) = mncore1();
    let mut g = c.benchmark_group("layout/level_stats");
    short(&mut g);
    g.bench_function("mncore1 example", |b| {
        b.iter(|| black_box(&l).level_stats())
    });
    g.finish();
}

fn xla(c: &mut Criterion) {
    let shape: Shape = XLA_SHAPE.parse().unwrap();
    let dims = shape.dims_at_bound().unwrap();
    let layout = shape.layout_or_default();
    // A fixed pseudo-random sample of in-range indices (xorshift64*).
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: u64| {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    };
    let sample: Vec<Vec<u64>> = (0..4096)
        .map(|_| dims.iter().map(|&d| next(d)).collect())
        .collect();
    let mut g = c.benchmark_group("xla");
    short(&mut g);
    g.bench_function("parse bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}", |b| {
        b.iter(|| black_box(XLA_SHAPE).parse::<Shape>().unwrap())
    });
    g.throughput(Throughput::Elements(sample.len() as u64));
    g.bench_function("linear_index, 4096 sampled elements", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for idx in &sample {
                acc = acc.wrapping_add(layout.linear_index(&dims, black_box(idx)).unwrap());
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, parse_and_bind, place, element_at, level_stats, xla);
criterion_main!(benches);
