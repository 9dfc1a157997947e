//! The training kernels (`Kernel::Eltwise`, `Kernel::Norm`) through the engine against
//! the host reference on random shapes and layouts (padded, replicated, split, `W`,
//! `Time`), timing cycles = functional cycles; and their legality errors on the engine.

mod common;

use common::kernels::{Input, check, random_layout, small};
use mnsim_arch::{DType, TensorLayout, XlaLayout};
use mnsim_kernels::{Act, Cmp, Eltwise, Kernel, Norm, NormKind};
use mnsim_sim::engine::{Engine, Mode};

const ALL: &str = "B@[L2B,L1B,MAB,PE]";

fn next(rng: &mut u64, n: u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng % n
}

#[test]
fn eltwise_kernels_on_random_layouts() {
    let m = small();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut ran = 0;
    for case in 0..24u64 {
        let dims = [[8u64, 16], [16, 8], [12, 8], [8, 12]][(case % 4) as usize];
        let f16 = case % 3 == 2;
        let dtype = if f16 { DType::F16 } else { DType::F32 };
        let (la, logical) = random_layout(&mut rng, dims, f16);
        if TensorLayout::parse(&la, &m, Some(&logical), dtype).is_err() {
            continue;
        }
        let inp = |name: &'static str, seed: u64| Input {
            name,
            dims: &logical,
            layout: &la,
            seed: case * 10 + seed,
        };
        let acts = [
            Act::LeakyRelu { alpha: 0.2 },
            Act::HardSigmoid {
                alpha: 0.3,
                beta: 0.4,
            },
            Act::SoftPlus { beta: -1.0 },
            Act::Mish,
            Act::Gelu { erf: true },
        ];
        let act = acts[(case % acts.len() as u64) as usize];
        check(
            &m,
            dtype,
            &Kernel::Eltwise(Eltwise::Act(act)),
            &[inp("x", 0)],
            &logical,
            None,
        );
        for (act, use_dst) in [
            (Act::Relu, false),
            (Act::Tanh, true),
            (Act::Elu { alpha: 0.5 }, false),
            (
                Act::Clamp {
                    min: -0.3,
                    max: 0.6,
                },
                true,
            ),
            (Act::Mish, false),
            (
                Act::HardSigmoid {
                    alpha: 1.28,
                    beta: 0.128,
                },
                false,
            ),
        ] {
            check(
                &m,
                dtype,
                &Kernel::Eltwise(Eltwise::Backward { act, use_dst }),
                &[inp("v", 1), inp("dy", 2)],
                &logical,
                None,
            );
        }
        for k in [Eltwise::PReluSlope, Eltwise::Mix { w: 0.25 }] {
            check(
                &m,
                dtype,
                &Kernel::Eltwise(k),
                &[inp("x", 3), inp("dy", 4)],
                &logical,
                None,
            );
        }
        // Slopes and per-channel vectors replicated everywhere, along the last axis.
        let c = logical[1];
        let vl = format!("(({c})) {ALL}");
        let vec_in = |name: &'static str, seed: u64| Input {
            name,
            dims: std::slice::from_ref(&logical[1]),
            layout: &vl,
            seed: case * 10 + seed,
        };
        check(
            &m,
            dtype,
            &Kernel::Eltwise(Eltwise::PRelu),
            &[inp("x", 5), vec_in("slope", 6)],
            &logical,
            None,
        );
        check(
            &m,
            dtype,
            &Kernel::Eltwise(Eltwise::PReluBackward),
            &[inp("x", 5), vec_in("slope", 6), inp("dy", 7)],
            &logical,
            None,
        );
        check(
            &m,
            dtype,
            &Kernel::Eltwise(Eltwise::Normalize {
                stats: vec![1],
                params: vec![1],
                eps: 0.5,
                affine: true,
            }),
            &[
                inp("x", 8),
                vec_in("mean", 9),
                vec_in("var", 10),
                vec_in("gamma", 11),
                vec_in("beta", 12),
            ],
            &logical,
            None,
        );
        check(
            &m,
            dtype,
            &Kernel::Eltwise(Eltwise::BatchNormBackward {
                axis: 1,
                eps: 1.5,
                affine: true,
            }),
            &[
                inp("x", 8),
                inp("dy", 9),
                vec_in("mean", 10),
                vec_in("var", 11),
                vec_in("a", 12),
                vec_in("b", 13),
                vec_in("gamma", 14),
            ],
            &logical,
            None,
        );
        let one = format!("((1)) {ALL}");
        let scalar = |name: &'static str, seed: u64| Input {
            name,
            dims: &[1],
            layout: &one,
            seed,
        };
        check(
            &m,
            dtype,
            &Kernel::Eltwise(Eltwise::Dropout),
            &[
                inp("x", 13),
                scalar("seed", case),
                scalar("offset", 3),
                scalar("p", 14),
            ],
            &logical,
            None,
        );
        check(
            &m,
            dtype,
            &Kernel::Eltwise(Eltwise::Compare(Cmp::GreaterEqual)),
            &[inp("a", 15), inp("b", 16)],
            &logical,
            None,
        );
        check(
            &m,
            dtype,
            &Kernel::Eltwise(Eltwise::GenIndex {
                axis: (case % 2) as usize,
            }),
            &[inp("x", 17)],
            &logical,
            None,
        );
        ran += 1;
    }
    assert!(ran >= 12, "only {ran} cases ran");
}

/// A layout of `[r, c]` on `small()` that keeps `whole` in memory (`Time` or `W`
/// sometimes), splitting the other axis over random levels; `(layout, groups)` where
/// `groups` are the other axis's group text and the replicated levels (to lay out a
/// vector along it alike).
fn keep_whole(rng: &mut u64, dims: [u64; 2], whole: usize) -> (String, String) {
    let other = 1 - whole;
    let mut rest = dims[other];
    let mut split = Vec::new();
    let mut bcast = Vec::new();
    for (name, fan) in [("L2B", 2u64), ("L1B", 2), ("MAB", 2), ("PE", 4)] {
        if next(rng, 3) < 2 && rest.is_multiple_of(fan) {
            split.push(format!("{fan}_{name}"));
            rest /= fan;
        } else {
            bcast.push(name);
        }
    }
    if rest > 1 || split.is_empty() {
        split.push(rest.to_string());
    }
    let n = dims[whole];
    let whole_g = if n.is_multiple_of(2) && next(rng, 3) == 0 {
        format!("2_Time, {}", n / 2)
    } else {
        n.to_string()
    };
    let b = if bcast.is_empty() {
        String::new()
    } else {
        format!(" B@[{}]", bcast.join(","))
    };
    let groups = [split.join(", "), whole_g];
    let (g0, g1) = if whole == 1 {
        (&groups[0], &groups[1])
    } else {
        (&groups[1], &groups[0])
    };
    (
        format!("(({g0}), ({g1})){b}"),
        format!("(({})){b}", split.join(", ")),
    )
}

#[test]
fn norm_kernels_keep_the_normalised_axis_whole() {
    let m = small();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for case in 0..16u64 {
        let dims = [[8u64, 16], [16, 8], [32, 6], [8, 12]][(case % 4) as usize];
        let dtype = if case % 3 == 2 {
            DType::F16
        } else {
            DType::F32
        };
        let (la, rows) = keep_whole(&mut rng, dims, 1);
        let x = |name: &'static str, seed: u64| Input {
            name,
            dims: &dims,
            layout: &la,
            seed: case * 10 + seed,
        };
        for kind in [
            NormKind::LogSoftmax,
            NormKind::SoftmaxBackward,
            NormKind::LogSoftmaxBackward,
            NormKind::Rms,
            NormKind::Standardize,
        ] {
            let k = Kernel::Norm(Norm::new(kind, vec![1], 0.5));
            let ins: Vec<Input> = (0..k.arity()).map(|j| x(["x", "y"][j], j as u64)).collect();
            check(&m, dtype, &k, &ins, &dims, None);
        }
        // Gamma (and beta) replicated along the normalised axis.
        let gl = format!("(({})) {ALL}", dims[1]);
        let g = |name: &'static str, seed: u64| Input {
            name,
            dims: std::slice::from_ref(&dims[1]),
            layout: &gl,
            seed: case * 10 + seed,
        };
        let affine = |kind| {
            Kernel::Norm(Norm {
                params: vec![1],
                affine: true,
                ..Norm::new(kind, vec![1], 0.5)
            })
        };
        check(
            &m,
            dtype,
            &affine(NormKind::Standardize),
            &[x("x", 2), g("gamma", 3), g("beta", 4)],
            &dims,
            None,
        );
        check(
            &m,
            dtype,
            &affine(NormKind::Rms),
            &[x("x", 2), g("gamma", 3)],
            &dims,
            None,
        );
        // Statistics along the rows, laid out as x's first axis.
        let r = std::slice::from_ref(&dims[0]);
        let var = Kernel::Norm(Norm::new(NormKind::Variance, vec![1], 0.0));
        check(&m, dtype, &var, &[x("x", 5)], r, Some(&rows));
        let stat = |name: &'static str, seed: u64| Input {
            name,
            dims: r,
            layout: &rows,
            seed: case * 10 + seed,
        };
        // A variance must not be negative: the statistics' seeds give values in
        // [-1, 1), eps 1.5 keeps var + eps positive.
        let back = Kernel::Norm(Norm {
            params: vec![1],
            affine: true,
            ..Norm::new(NormKind::Backward, vec![1], 1.5)
        });
        check(
            &m,
            dtype,
            &back,
            &[
                x("x", 6),
                x("dy", 7),
                stat("mean", 8),
                stat("var", 9),
                g("gamma", 3),
            ],
            &dims,
            None,
        );
        // Gamma's gradient sums over the rows: x keeps them whole, splits the columns.
        let (lc, cols) = keep_whole(&mut rng, dims, 0);
        let xc = |name: &'static str, seed: u64| Input {
            name,
            dims: &dims,
            layout: &lc,
            seed: case * 10 + seed,
        };
        let rl = format!("(({})) {ALL}", dims[0]);
        let rs = |name: &'static str, seed: u64| Input {
            name,
            dims: r,
            layout: &rl,
            seed: case * 10 + seed,
        };
        let gg = Kernel::Norm(Norm {
            params: vec![1],
            ..Norm::new(NormKind::GammaGrad, vec![1], 1.5)
        });
        check(
            &m,
            dtype,
            &gg,
            &[xc("x", 6), xc("dy", 7), rs("mean", 8), rs("var", 9)],
            std::slice::from_ref(&dims[1]),
            Some(&cols),
        );
    }
}

#[test]
fn a_split_normalised_axis_is_refused_on_the_engine() {
    let m = small();
    let mut e = Engine::new(m.clone(), Mode::Timing);
    let dims = [8u64, 16];
    e.state
        .declare(
            "x",
            DType::F32,
            dims.to_vec(),
            dims.to_vec(),
            XlaLayout::default_for(2),
            None,
        )
        .unwrap();
    e.state
        .set_in_dram(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2));
    let l = TensorLayout::parse(
        "((8), (2_L2B, 8)) B@[L1B,MAB,PE]",
        &m,
        Some(&dims),
        DType::F32,
    )
    .unwrap();
    e.load(e.state.tensor_id("x").unwrap(), l).unwrap();
    e.state
        .declare(
            "y",
            DType::F32,
            dims.to_vec(),
            dims.to_vec(),
            XlaLayout::default_for(2),
            None,
        )
        .unwrap();
    let k = Kernel::Norm(Norm::new(NormKind::LogSoftmax, vec![1], 0.0));
    let err = e
        .kernel(
            "LogSoftmax",
            &k,
            &[e.state.tensor_id("x").unwrap()],
            e.state.tensor_id("y").unwrap(),
            None,
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("the normalised axis") && msg.contains("L2B"),
        "{msg}"
    );
}
