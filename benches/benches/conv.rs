//! A functional-mode f32 convolution on mncore2 (the kernel alone, operands already in
//! LM): the batch over L2B, the output channels over L1B x PE (the weights split with
//! them, the data replicated), the copies over MAB. A 3x3 forward convolution, its
//! weights' gradient (the batch split: partial sums), and a depthwise 3x3 (the batch
//! split only); the
//! shard-by-shard path (`engine/conv.rs`) and the per-element evaluation
//! (`Engine::set_per_element_kernels`) for comparison. Throughput counts multiply-adds.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mnsim_arch::{DType, TensorLayout, XlaLayout, preset};
use mnsim_kernels::{Conv, ConvPass, Kernel, WeightsFormat};
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;
use std::hint::black_box;
use std::time::Duration;

/// One case: name, pass, groups, the two inputs' and the output's dims and layouts,
/// multiply-adds.
struct Case {
    name: &'static str,
    pass: ConvPass,
    groups: u64,
    dims: [&'static [u64]; 3],
    layouts: [&'static str; 3],
    macs: u64,
}

const CASES: &[Case] = &[
    Case {
        name: "fwd_8x16x14x14_o64_3x3",
        pass: ConvPass::Forward,
        groups: 1,
        dims: [&[8, 16, 14, 14], &[64, 16, 3, 3], &[8, 64, 14, 14]],
        layouts: [
            "((8_L2B), (16), (14), (14); B@[L1B,MAB,PE])",
            "((8_L1B, 4_PE, 2), (16), (3), (3); B@[L2B,MAB])",
            "((8_L2B), (8_L1B, 4_PE, 2), (14), (14); B@[MAB])",
        ],
        macs: 8 * 64 * 14 * 14 * 16 * 9,
    },
    Case {
        name: "bwd_weights_8x16x14x14_o64_3x3",
        pass: ConvPass::BackwardWeights,
        groups: 1,
        dims: [&[8, 16, 14, 14], &[8, 64, 14, 14], &[64, 16, 3, 3]],
        layouts: [
            "((8_L2B), (16), (14), (14); B@[L1B,MAB,PE])",
            "((8_L2B), (8_L1B, 4_PE, 2), (14), (14); B@[MAB])",
            "((8_L1B, 4_PE, 2), (16), (3), (3); B@[MAB])",
        ],
        macs: 8 * 64 * 14 * 14 * 16 * 9,
    },
    Case {
        name: "depthwise_8x8x14x14_3x3",
        pass: ConvPass::Forward,
        groups: 8,
        dims: [&[8, 8, 14, 14], &[8, 1, 3, 3], &[8, 8, 14, 14]],
        layouts: [
            "((8_L2B), (8), (14), (14); B@[L1B,MAB,PE])",
            "((8), (1), (3), (3); B@[L2B,L1B,MAB,PE])",
            "((8_L2B), (8), (14), (14); B@[L1B,MAB,PE])",
        ],
        macs: 8 * 8 * 14 * 14 * 9,
    },
];

fn kernel(case: &Case) -> Kernel {
    Kernel::Conv(Conv {
        pass: case.pass,
        strides: vec![1, 1],
        dilations: vec![1, 1],
        pads_begin: vec![1, 1],
        pads_end: vec![1, 1],
        groups: case.groups,
        channels_last: false,
        weights: WeightsFormat::OIX,
        shape: match case.pass {
            ConvPass::Forward => Vec::new(),
            ConvPass::BackwardData | ConvPass::BackwardWeights => case.dims[2].to_vec(),
        },
    })
}

/// An engine with the inputs loaded and the output declared.
fn engine(case: &Case, per_element: bool) -> (Engine, TensorLayout) {
    let m = preset("mncore2").unwrap();
    let mut e = Engine::new(m.clone(), Mode::Functional);
    e.set_per_element_kernels(per_element);
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        let dims = case.dims[i];
        let data = (i < 2).then(|| init_data(&Init::Random { seed: i as u64 }, DType::F32, dims));
        let xla = XlaLayout::default_for(dims.len());
        e.state
            .declare(name, DType::F32, dims.to_vec(), dims.to_vec(), xla, data)
            .unwrap();
        if i < 2 {
            let l = TensorLayout::parse(case.layouts[i], &m, Some(dims), DType::F32).unwrap();
            e.load(e.state.tensor_id(name).unwrap(), l).unwrap();
        }
    }
    let c = TensorLayout::parse(case.layouts[2], &m, Some(case.dims[2]), DType::F32).unwrap();
    (e, c)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("conv_functional");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for case in CASES {
        g.throughput(Throughput::Elements(case.macs));
        let k = kernel(case);
        for (path, per_element) in [("shards", false), ("per_element", true)] {
            let (mut e, cl) = engine(case, per_element);
            g.bench_with_input(BenchmarkId::new(path, case.name), &cl, |b, cl| {
                b.iter(|| {
                    let r = e
                        .kernel(
                            "Conv",
                            &k,
                            &[
                                e.state.tensor_id("a").unwrap(),
                                e.state.tensor_id("b").unwrap(),
                            ],
                            e.state.tensor_id("c").unwrap(),
                            Some(cl.clone()),
                        )
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
