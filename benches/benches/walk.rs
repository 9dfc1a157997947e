//! Lowering an op's walk over `Time` steps (docs/model.md, streams): the walks of the
//! gated MLP's MatMul (output over `14_Time`, input over `8_Time`: a short walk; and
//! a weight streamed in 28,672 slices: a long one) and of the Load of that weight, and
//! the sends of the long walk's weight in two buffers (a fresh memo each time, as the
//! engine's first lowering of a walk).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mnsim_arch::{DType, TensorLayout};
use mnsim_kernels::shape::AxisSource::{self, Out, Reduced};
use mnsim_sim::lowering::walk::{self, SendsMemo};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

fn bind(text: &str, dims: &[u64]) -> TensorLayout {
    let m = mnsim_arch::preset("mncore2").unwrap();
    TensorLayout::parse(text, &m, Some(dims), DType::F32).unwrap()
}

/// A walk to lower: the output's layout and dims, the inputs with their index
/// sources, the reduced variables' lengths.
struct Case {
    name: &'static str,
    out: TensorLayout,
    dims: Vec<u64>,
    inputs: Vec<(TensorLayout, Vec<AxisSource>)>,
    reduced: Vec<u64>,
}

impl Case {
    fn walk(&self) -> Option<walk::WalkPlan> {
        let ins: Vec<(&TensorLayout, &[AxisSource])> =
            self.inputs.iter().map(|(l, m)| (l, m.as_slice())).collect();
        walk::walk(Some(&self.out), &self.dims, &ins, &self.reduced)
    }
}

fn cases() -> Vec<Case> {
    let x = |t: &str| (bind(t, &[1, 4096]), vec![Out(0), Reduced(0)]);
    let w = |t: &str| (bind(t, &[4096, 14336]), vec![Reduced(0), Out(1)]);
    vec![
        Case {
            name: "matmul 14x8 steps",
            out: bind("((1), (14_Time, 1024))", &[1, 14336]),
            dims: vec![1, 14336],
            inputs: vec![
                x("((1), (8_Time, 512))"),
                w("((8_Time, 8_L2B, 64), (14_Time, 8_L1B, 16_MAB, 4_PE, 2))"),
            ],
            reduced: vec![4096],
        },
        Case {
            name: "matmul 28,672 steps",
            out: bind("((1), (7_Time, 2048))", &[1, 14336]),
            dims: vec![1, 14336],
            inputs: vec![
                x("((1), (2_Time, 2048))"),
                w("((4096_Time:7, 1), (7_Time:1, 2048))"),
            ],
            reduced: vec![4096],
        },
        Case {
            name: "load 28,672 steps",
            out: bind("((4096_Time:7, 1), (7_Time:1, 2048))", &[4096, 14336]),
            dims: vec![4096, 14336],
            inputs: Vec::new(),
            reduced: Vec::new(),
        },
    ]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("lowering/walk");
    g.sample_size(30)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    let cases = cases();
    for case in &cases {
        let steps = case.walk().map_or(0, |p| p.steps);
        g.throughput(Throughput::Elements(steps as u64));
        g.bench_function(case.name, |b| b.iter(|| black_box(case.walk())));
    }
    g.finish();
    let mut g = c.benchmark_group("lowering/sends");
    g.sample_size(30)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    let plan = cases[1].walk().unwrap();
    let need: Arc<[u32]> = plan.inputs[1].clone();
    g.throughput(Throughput::Elements(need.len() as u64));
    g.bench_function("28,672 steps, 2 buffers", |b| {
        b.iter(|| black_box(SendsMemo::default().sends(&need, 2, 28_672).resent))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
