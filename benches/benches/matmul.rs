//! A functional-mode f32 MatMul on mncore2 (the kernel alone, operands already in LM):
//! rows of `a` over L2B x PE, the contraction over MAB (partial sums, as a split-K plan
//! leaves them), columns of `b` over L1B x PE. The shard-by-shard contraction path at
//! 256^3 and 1024^3, and the per-element evaluation (`Engine::set_per_element_kernels`)
//! at 256^3 for comparison. Throughput counts multiply-adds.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mnsim_arch::{DType, TensorLayout, XlaLayout, preset};
use mnsim_kernels::Kernel;
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;
use std::hint::black_box;
use std::time::Duration;

/// (name, n (M = K = N), layouts of a, b and c).
const CASES: &[(&str, u64, [&str; 3])] = &[
    (
        "256x256x256",
        256,
        [
            "((8_L2B, 4_PE, 8), (16_MAB, 8, 2_W); B@[L1B])",
            "((16_MAB, 16), (8_L1B, 4_PE, 4, 2_W); B@[L2B])",
            "((8_L2B, 4_PE, 8), (8_L1B, 16, 2_W); B@[MAB])",
        ],
    ),
    (
        "1024x1024x1024",
        1024,
        [
            "((8_L2B, 4_PE, 32), (16_MAB, 32, 2_W); B@[L1B])",
            "((16_MAB, 64), (8_L1B, 4_PE, 16, 2_W); B@[L2B])",
            "((8_L2B, 4_PE, 32), (8_L1B, 64, 2_W); B@[MAB])",
        ],
    ),
];

/// An engine with `a` and `b` loaded and `c` declared.
fn engine(n: u64, layouts: &[&str; 3], per_element: bool) -> (Engine, TensorLayout) {
    let m = preset("mncore2").unwrap();
    let mut e = Engine::new(m.clone(), Mode::Functional);
    e.set_per_element_kernels(per_element);
    let dims = [n, n];
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        let data = (i < 2).then(|| init_data(&Init::Random { seed: i as u64 }, DType::F32, &dims));
        e.state
            .declare(
                name,
                DType::F32,
                dims.to_vec(),
                dims.to_vec(),
                XlaLayout::default_for(2),
                data,
            )
            .unwrap();
        if i < 2 {
            let l = TensorLayout::parse(layouts[i], &m, Some(&dims), DType::F32).unwrap();
            e.load(e.state.tensor_id(name).unwrap(), l).unwrap();
        }
    }
    let c = TensorLayout::parse(layouts[2], &m, Some(&dims), DType::F32).unwrap();
    (e, c)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul_functional");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for &(name, n, layouts) in CASES {
        g.throughput(Throughput::Elements(n * n * n));
        let modes: &[(&str, bool)] = if n <= 256 {
            &[("contraction", false), ("per_element", true)]
        } else {
            &[("contraction", false)]
        };
        for &(path, per_element) in modes {
            let (mut e, cl) = engine(n, &layouts, per_element);
            g.bench_with_input(BenchmarkId::new(path, name), &cl, |b, cl| {
                b.iter(|| {
                    let [a, b, c] = ["a", "b", "c"].map(|n| e.state.tensor_id(n).unwrap());
                    let r = e
                        .kernel("MatMul", &Kernel::MatMul, &[a, b], c, Some(cl.clone()))
                        .unwrap();
                    e.state.free(e.state.tensor_id("c").unwrap()).unwrap();
                    black_box(r.cycles)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
