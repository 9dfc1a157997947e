//! Convolution (the three passes), pooling and interpolation through the engine on
//! random shapes, attributes and layouts (split by batch, by output channels, by input
//! channels into partial sums a Reduce completes, by output positions with the data
//! replicated), functional against the host reference, timing = functional; and the
//! halo rule's error through the engine.

mod common;

use common::kernels::{Input, Rng, Tagged, check, layouts, small};
use mnsim_arch::{DType, TensorLayout, XlaLayout};
use mnsim_kernels::{
    Conv, ConvPass, CoordMode, Interp, InterpMode, Kernel, Pool, PoolKind, WeightsFormat,
};
use mnsim_sim::engine::{Engine, Mode};
use proptest::prelude::*;

/// The inputs of a kernel: names and dims.
type Operands = Vec<(&'static str, Vec<u64>)>;

/// A random 1-D or 2-D convolution in NCX with OIX weights, its forward shapes.
fn random_conv(rng: &mut Rng) -> (Conv, Vec<u64>, Vec<u64>, Vec<u64>) {
    let d = 1 + rng.below(2) as usize;
    let groups = [1, 1, 2][rng.below(3) as usize];
    let mut c = Conv {
        pass: ConvPass::Forward,
        strides: (0..d).map(|_| 1 + rng.below(2)).collect(),
        dilations: (0..d).map(|_| 1 + rng.below(2)).collect(),
        pads_begin: (0..d).map(|_| rng.below(2)).collect(),
        pads_end: (0..d).map(|_| rng.below(2)).collect(),
        groups,
        channels_last: false,
        weights: WeightsFormat::OIX,
        shape: Vec::new(),
    };
    if rng.below(4) == 0 {
        // A pointwise convolution: its spatial axes may split.
        c.strides = vec![1; d];
        c.pads_begin = vec![0; d];
        c.pads_end = vec![0; d];
    }
    let n = [1, 2, 4][rng.below(3) as usize];
    let cg = [1, 2, 4][rng.below(3) as usize];
    let og = [2, 4][rng.below(2) as usize];
    let window: Vec<u64> = if c.pads_end.iter().all(|&p| p == 0)
        && c.strides.iter().all(|&s| s == 1)
        && rng.below(2) == 0
    {
        vec![1; d]
    } else {
        (0..d).map(|_| 1 + rng.below(3)).collect()
    };
    let sp: Vec<u64> = (0..d)
        .map(|i| (window[i] - 1) * c.dilations[i] + 1 + rng.below(4))
        .collect();
    let x = [&[n, cg * groups][..], &sp].concat();
    let w = [&[og * groups, cg][..], &window].concat();
    let y = mnsim_kernels::output_shape(&Kernel::Conv(c.clone()), &[&x, &w]).unwrap();
    (c, x, w, y)
}

fn tags(first: &[char], d: usize, spatial: char) -> Vec<char> {
    let mut v = first.to_vec();
    v.extend(std::iter::repeat_n('X', d));
    if d > 0 {
        v[first.len()] = spatial;
    }
    v
}

fn run_conv(seed: u64) {
    let m = small();
    let mut rng = Rng(seed | 1);
    let (c, xs, ws, ys) = random_conv(&mut rng);
    let d = xs.len() - 2;
    let grouped = c.groups > 1;
    let pointwise = ws[2..].iter().all(|&k| k == 1)
        && c.strides.iter().all(|&s| s == 1)
        && c.pads_begin.iter().chain(&c.pads_end).all(|&p| p == 0);
    let dtype = if rng.below(2) == 0 {
        DType::F32
    } else {
        DType::F16
    };
    let ch = if grouped { 'X' } else { 'C' };
    let sp_in = if pointwise { 'S' } else { 'X' };
    // Tags per pass: N batch, O output channels, C input channels, S an output spatial
    // axis, K a window axis of the weights' gradient.
    let pass = [
        ConvPass::Forward,
        ConvPass::BackwardData,
        ConvPass::BackwardWeights,
    ][rng.below(3) as usize];
    let (k, ins, out, ts, partial): (Kernel, Operands, Vec<u64>, Vec<Tagged>, Vec<char>) =
        match pass {
            ConvPass::Forward => (
                Kernel::Conv(c.clone()),
                vec![("x", xs.clone()), ("w", ws.clone())],
                ys.clone(),
                vec![
                    Tagged {
                        dims: xs.clone(),
                        tags: tags(&['N', ch], d, sp_in),
                    },
                    Tagged {
                        dims: ws.clone(),
                        tags: tags(&['O', ch], d, 'X'),
                    },
                    Tagged {
                        dims: ys.clone(),
                        tags: tags(&['N', 'O'], d, 'S'),
                    },
                ],
                vec!['C'],
            ),
            ConvPass::BackwardData => (
                Kernel::Conv(Conv {
                    pass,
                    shape: xs.clone(),
                    ..c.clone()
                }),
                vec![("dy", ys.clone()), ("w", ws.clone())],
                xs.clone(),
                vec![
                    Tagged {
                        dims: ys.clone(),
                        tags: tags(&['N', if grouped { 'X' } else { 'O' }], d, sp_in),
                    },
                    Tagged {
                        dims: ws.clone(),
                        tags: tags(&[if grouped { 'X' } else { 'O' }, ch], d, 'X'),
                    },
                    Tagged {
                        dims: xs.clone(),
                        tags: tags(&['N', 'C'], d, 'S'),
                    },
                ],
                vec!['O'],
            ),
            ConvPass::BackwardWeights => (
                Kernel::Conv(Conv {
                    pass,
                    shape: ws.clone(),
                    ..c.clone()
                }),
                vec![("x", xs.clone()), ("dy", ys.clone())],
                ws.clone(),
                vec![
                    Tagged {
                        dims: xs.clone(),
                        tags: tags(&['N', ch], d, 'X'),
                    },
                    Tagged {
                        dims: ys.clone(),
                        tags: tags(&['N', 'O'], d, 'X'),
                    },
                    Tagged {
                        dims: ws.clone(),
                        tags: tags(&['O', ch], d, 'K'),
                    },
                ],
                vec!['N'],
            ),
        };
    let ls = layouts(&mut rng, &ts, &['N', 'O', 'C', 'S', 'K'], &partial);
    let inputs: Vec<Input> = ins
        .iter()
        .zip(&ls)
        .enumerate()
        .map(|(i, ((name, dims), l))| Input {
            name,
            dims,
            layout: l,
            seed: seed.wrapping_add(i as u64),
        })
        .collect();
    check(&m, dtype, &k, &inputs, &out, Some(&ls[ls.len() - 1]));
}

fn run_window(seed: u64) {
    let m = small();
    let mut rng = Rng(seed | 1);
    let d = 1 + rng.below(2) as usize;
    let kernel: Vec<u64> = (0..d).map(|_| 1 + rng.below(3)).collect();
    let xs: Vec<u64> = [
        &[
            [1, 2, 4][rng.below(3) as usize],
            [2, 4, 8][rng.below(3) as usize],
        ][..],
        &kernel.iter().map(|k| k + rng.below(4)).collect::<Vec<_>>(),
    ]
    .concat();
    let dtype = if rng.below(2) == 0 {
        DType::F32
    } else {
        DType::F16
    };
    let mut pool = Pool {
        kind: if rng.below(2) == 0 {
            PoolKind::Max
        } else {
            PoolKind::Avg {
                exclude_pad: rng.below(2) == 0,
            }
        },
        backward: false,
        strides: (0..d).map(|_| 1 + rng.below(2)).collect(),
        dilations: vec![1; d],
        pads_begin: kernel.iter().map(|&k| rng.below(k)).collect(),
        pads_end: kernel.iter().map(|&k| rng.below(k) as i64).collect(),
        kernel,
        ceil: rng.below(2) == 0,
        channels_last: false,
        shape: Vec::new(),
    };
    let ys = mnsim_kernels::output_shape(&Kernel::Pool(pool.clone()), &[&xs]).unwrap();
    let sizes: Vec<u64> = (0..d).map(|_| 1 + rng.below(6)).collect();
    let ip = Interp {
        mode: if rng.below(2) == 0 {
            InterpMode::Nearest
        } else {
            InterpMode::Linear
        },
        coord: if rng.below(2) == 0 {
            CoordMode::HalfPixel
        } else {
            CoordMode::AlignCorners
        },
        backward: false,
        channels_last: false,
        sizes: sizes.clone(),
    };
    let is = [&xs[..2], &sizes].concat();
    let tg = |dims: &[u64], s: char| Tagged {
        dims: dims.to_vec(),
        tags: tags(&['N', 'C'], d, s),
    };
    let mut cases: Vec<(Kernel, Operands, Vec<u64>, Vec<Tagged>)> = vec![
        (
            Kernel::Pool(pool.clone()),
            vec![("x", xs.clone())],
            ys.clone(),
            vec![tg(&xs, 'X'), tg(&ys, 'S')],
        ),
        (
            Kernel::Interp(ip.clone()),
            vec![("x", xs.clone())],
            is.clone(),
            vec![tg(&xs, 'X'), tg(&is, 'S')],
        ),
        (
            Kernel::Interp(Interp {
                backward: true,
                sizes: xs[2..].to_vec(),
                ..ip
            }),
            vec![("dy", is.clone())],
            xs.clone(),
            vec![tg(&is, 'X'), tg(&xs, 'S')],
        ),
    ];
    pool.backward = true;
    pool.shape = xs.clone();
    let bwd = if pool.kind == PoolKind::Max {
        (
            Kernel::Pool(pool),
            vec![("x", xs.clone()), ("dy", ys.clone())],
            xs.clone(),
            vec![tg(&xs, 'X'), tg(&ys, 'X'), tg(&xs, 'S')],
        )
    } else {
        (
            Kernel::Pool(pool),
            vec![("dy", ys.clone())],
            xs.clone(),
            vec![tg(&ys, 'X'), tg(&xs, 'S')],
        )
    };
    cases.push(bwd);
    for (k, ins, out, ts) in &cases {
        let ls = layouts(&mut rng, ts, &['N', 'C', 'S'], &[]);
        let inputs: Vec<Input> = ins
            .iter()
            .zip(&ls)
            .enumerate()
            .map(|(i, ((name, dims), l))| Input {
                name,
                dims,
                layout: l,
                seed: seed.wrapping_add(i as u64),
            })
            .collect();
        check(&m, dtype, k, &inputs, out, Some(&ls[ls.len() - 1]));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn convolution_passes_through_the_engine(seed in any::<u64>()) {
        run_conv(seed);
    }

    #[test]
    fn pooling_and_interpolation_through_the_engine(seed in any::<u64>()) {
        run_window(seed);
    }
}

#[test]
fn a_spatial_split_names_the_halo_through_the_engine() {
    let m = small();
    let dtype = DType::F32;
    let mut e = Engine::new(m.clone(), Mode::Timing);
    let c = Conv {
        pass: ConvPass::Forward,
        strides: vec![1, 1],
        dilations: vec![1, 1],
        pads_begin: vec![1, 1],
        pads_end: vec![1, 1],
        groups: 1,
        channels_last: false,
        weights: WeightsFormat::OIX,
        shape: Vec::new(),
    };
    for (name, dims, layout) in [
        (
            "x",
            vec![1u64, 4, 8, 8],
            "((1), (4), (2_L2B, 4), (8); B@[L1B,MAB,PE])",
        ),
        (
            "w",
            vec![4, 4, 3, 3],
            "((4), (4), (3), (3); B@[L2B,L1B,MAB,PE])",
        ),
    ] {
        e.state
            .declare(
                name,
                dtype,
                dims.clone(),
                dims.clone(),
                XlaLayout::default_for(4),
                None,
            )
            .unwrap();
        e.state
            .set_in_dram(e.state.tensor_id(name).unwrap(), XlaLayout::default_for(4));
        e.load(
            e.state.tensor_id(name).unwrap(),
            TensorLayout::parse(layout, &m, Some(&dims), dtype).unwrap(),
        )
        .unwrap();
    }
    e.state
        .declare(
            "y",
            dtype,
            vec![1, 4, 8, 8],
            vec![1, 4, 8, 8],
            XlaLayout::default_for(4),
            None,
        )
        .unwrap();
    let yl = TensorLayout::parse(
        "((1), (4), (2_L2B, 4), (8); B@[L1B,MAB,PE])",
        &m,
        Some(&[1, 4, 8, 8]),
        dtype,
    )
    .unwrap();
    let err = e
        .kernel(
            "conv",
            &Kernel::Conv(c),
            &[
                e.state.tensor_id("x").unwrap(),
                e.state.tensor_id("w").unwrap(),
            ],
            e.state.tensor_id("y").unwrap(),
            Some(yl),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Convolution: input `x` is split over L2B along its axis 2")
            && err.contains("halo")
            && err.contains("Relayout `x`"),
        "{err}"
    );
}
