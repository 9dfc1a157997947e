//! The training kernels (`Kernel::Eltwise`, `Kernel::Norm`): every backward kernel
//! against finite differences of its forward function, forward kernels against worked
//! examples, Dropout's mask, shapes and their errors, legality messages and FLOP.

mod common;

use common::*;
use mnsim_arch::DType;
use mnsim_kernels::*;

fn run(k: &Kernel, ins: &[(&[u64], &[f64])]) -> Vec<f64> {
    let shapes: Vec<&[u64]> = ins.iter().map(|(s, _)| *s).collect();
    let out = output_shape(k, &shapes).unwrap_or_else(|e| panic!("{k}: {e}"));
    reference(k, ins, &out)
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}: element {i}: {g} vs {w}\n{got:?}\n{want:?}"
        );
    }
}

const ACTS: [Act; 17] = [
    Act::Relu,
    Act::LeakyRelu { alpha: 0.3 },
    Act::Gelu { erf: true },
    Act::Gelu { erf: false },
    Act::Sigmoid,
    Act::Tanh,
    Act::Elu { alpha: 0.7 },
    Act::Clamp {
        min: -0.5,
        max: 0.8,
    },
    Act::SoftPlus { beta: 1.5 },
    Act::SoftPlus { beta: -1.0 },
    Act::HardSwish,
    Act::HardSigmoid {
        alpha: 0.2,
        beta: 0.5,
    },
    Act::Mish,
    Act::Abs,
    Act::Sqrt,
    Act::Exp,
    Act::Square,
];

#[test]
fn every_activation_gradient_is_the_derivative() {
    // Points away from the kinks (0, clamp bounds, ±3, where αx+β hits 0 or 1).
    let xs = [-2.7, -1.3, -0.35, 0.45, 1.1, 2.2, 3.6];
    for act in ACTS {
        for &x in &xs {
            if matches!(act, Act::Sqrt) && x <= 0.0 {
                continue;
            }
            let h = 1e-6;
            let fd = (act.apply(x + h) - act.apply(x - h)) / (2.0 * h);
            let g = act.grad(x, false);
            assert!(
                (g - fd).abs() < 1e-6 * fd.abs().max(1.0),
                "{act:?} at {x}: f' {g} vs finite difference {fd}"
            );
            if act.has_dst_form() {
                let gd = act.grad(act.apply(x), true);
                assert!(
                    (gd - g).abs() < 1e-9 * g.abs().max(1.0),
                    "{act:?} at {x}: from the result {gd}, from the source {g}"
                );
            }
        }
    }
}

#[test]
fn backward_kernel_multiplies_dy() {
    let s: &[u64] = &[2, 3];
    let x = [-1.0, -0.2, 0.3, 0.9, 1.7, -2.5];
    let dy = [0.5, -1.0, 2.0, 0.25, -0.75, 1.5];
    for act in ACTS {
        if matches!(act, Act::Sqrt) {
            continue;
        }
        let k = Kernel::Eltwise(Eltwise::Backward {
            act,
            use_dst: false,
        });
        let got = run(&k, &[(s, &x), (s, &dy)]);
        let want: Vec<f64> = x
            .iter()
            .zip(&dy)
            .map(|(&x, &d)| d * act.grad(x, false))
            .collect();
        close(&got, &want, 1e-15, &format!("{act:?}"));
    }
}

#[test]
fn activations_by_hand() {
    let s: &[u64] = &[4];
    let x = [-2.0, -0.5, 0.5, 4.0];
    let cases: [(Act, [f64; 4]); 4] = [
        (Act::LeakyRelu { alpha: 0.1 }, [-0.2, -0.05, 0.5, 4.0]),
        (
            Act::HardSigmoid {
                alpha: 0.2,
                beta: 0.5,
            },
            [0.1, 0.4, 0.6, 1.0],
        ),
        // ln(1 + eˣ), computed independently
        (
            Act::SoftPlus { beta: 1.0 },
            [
                0.12692801104297263,
                0.47407698418010663,
                0.9740769841801067,
                4.0181499279178094,
            ],
        ),
        // x·tanh(ln(1 + eˣ)), computed independently (Python's math module)
        (
            Act::Mish,
            [
                -0.2525014826957089,
                -0.22074377465173,
                0.3752452113048951,
                3.9974128069762385,
            ],
        ),
    ];
    for (act, want) in cases {
        close(
            &run(&Kernel::Eltwise(Eltwise::Act(act)), &[(s, &x)]),
            &want,
            1e-12,
            act.name(),
        );
    }
}

/// Σ dy · f(x) for a forward kernel `f` of one input.
fn loss(f: &Kernel, shape: &[u64], x: &[f64], dy: &[f64]) -> f64 {
    run(f, &[(shape, x)])
        .iter()
        .zip(dy)
        .map(|(a, b)| a * b)
        .sum()
}

/// The gradient of `x ↦ Σ dy · f(x)` by central differences.
fn numeric_grad(f: &Kernel, shape: &[u64], x: &[f64], dy: &[f64]) -> Vec<f64> {
    let h = 1e-6;
    (0..x.len())
        .map(|i| {
            let (mut p, mut m) = (x.to_vec(), x.to_vec());
            p[i] += h;
            m[i] -= h;
            (loss(f, shape, &p, dy) - loss(f, shape, &m, dy)) / (2.0 * h)
        })
        .collect()
}

#[test]
fn softmax_backward_kinds_are_the_gradients() {
    let mut rng = Rng(7);
    let shape: &[u64] = &[2, 5, 3];
    let x = rng.values(30);
    let dy = rng.values(30);
    for axis in 0..3 {
        let fwd = Kernel::Softmax { axis };
        let y = run(&fwd, &[(shape, &x)]);
        let k = Kernel::Norm(Norm::new(NormKind::SoftmaxBackward, vec![axis], 0.0));
        let got = run(&k, &[(shape, &dy), (shape, &y)]);
        close(&got, &numeric_grad(&fwd, shape, &x, &dy), 1e-6, "softmax");

        let fwd = Kernel::Norm(Norm::new(NormKind::LogSoftmax, vec![axis], 0.0));
        let y = run(&fwd, &[(shape, &x)]);
        let k = Kernel::Norm(Norm::new(NormKind::LogSoftmaxBackward, vec![axis], 0.0));
        let got = run(&k, &[(shape, &dy), (shape, &y)]);
        close(
            &got,
            &numeric_grad(&fwd, shape, &x, &dy),
            1e-6,
            "log-softmax",
        );
    }
}

#[test]
fn log_softmax_is_the_log_of_softmax() {
    let shape: &[u64] = &[2, 3];
    let x = [0.0, 3f64.ln(), 1.0, -4.0, 2.0, 0.5];
    let sm = run(&Kernel::Softmax { axis: 1 }, &[(shape, &x)]);
    let ls = run(
        &Kernel::Norm(Norm::new(NormKind::LogSoftmax, vec![1], 0.0)),
        &[(shape, &x)],
    );
    let want: Vec<f64> = sm.iter().map(|v| v.ln()).collect();
    close(&ls, &want, 1e-12, "log-softmax");
    // Row 0: [0, ln 3, 1] → the first is −ln(1 + 3 + e).
    assert!((ls[0] + (4.0 + 1f64.exp()).ln()).abs() < 1e-12);
}

/// The standardisation over `axes`: the forward whose gradients Backward and
/// GammaGrad are (gamma folded into the loss's weights).
fn forward(axes: &[usize]) -> Kernel {
    Kernel::Norm(Norm::new(NormKind::Standardize, axes.to_vec(), 0.25))
}

#[test]
fn norm_backward_is_the_gradient_for_layer_and_batch_norm() {
    let mut rng = Rng(11);
    let shape: &[u64] = &[3, 4, 5];
    let x = rng.values(60);
    let dy = rng.values(60);
    // (normalised axes, gamma's axes): LayerNorm over the last axis, BatchNorm over
    // all but the channel axis 1, and over two axes.
    for (axes, params) in [
        (vec![2usize], vec![2usize]),
        (vec![0, 2], vec![1]),
        (vec![1, 2], vec![1, 2]),
    ] {
        let pshape: Vec<u64> = params.iter().map(|&a| shape[a]).collect();
        let np: u64 = pshape.iter().product();
        let gamma: Vec<f64> = rng.values(np).iter().map(|v| v + 1.5).collect();
        // Statistics of x over the axes.
        let mean = run(
            &Kernel::ReduceAxes {
                op: ReduceKind::Mean,
                axes: axes.clone(),
                keep_dims: false,
            },
            &[(shape, &x)],
        );
        let var = run(
            &Kernel::Norm(Norm::new(NormKind::Variance, axes.clone(), 0.0)),
            &[(shape, &x)],
        );
        let kept: Vec<u64> = (0..3)
            .filter(|a| !axes.contains(a))
            .map(|a| shape[a])
            .collect();
        // The forward with gamma folded into dy's weights: L = Σ dy·γ·x̂ + β.
        let std = forward(&axes);
        let g_at = |l: usize| -> f64 {
            let idx = [l / 20, (l / 5) % 4, l % 5];
            let mut p = 0usize;
            for &a in &params {
                p = p * shape[a] as usize + idx[a] as usize;
            }
            gamma[p]
        };
        let gdy: Vec<f64> = (0..60).map(|l| dy[l] * g_at(l)).collect();
        let want = numeric_grad(&std, shape, &x, &gdy);
        let k = Kernel::Norm(Norm {
            kind: NormKind::Backward,
            axes: axes.clone(),
            eps: 0.25,
            groups: 1,
            params: params.clone(),
            affine: true,
        });
        let got = run(
            &k,
            &[
                (shape, &x),
                (shape, &dy),
                (&kept, &mean),
                (&kept, &var),
                (&pshape, &gamma),
            ],
        );
        close(&got, &want, 1e-6, &format!("backward over {axes:?}"));
        // Gamma's gradient: Σ dy · x̂ over every other axis.
        let xhat = run(&std, &[(shape, &x)]);
        let mut want = vec![0.0; np as usize];
        for l in 0..60 {
            let idx = [l / 20, (l / 5) % 4, l % 5];
            let mut p = 0usize;
            for &a in &params {
                p = p * shape[a] as usize + idx[a];
            }
            want[p] += dy[l] * xhat[l];
        }
        let k = Kernel::Norm(Norm {
            kind: NormKind::GammaGrad,
            axes: axes.clone(),
            eps: 0.25,
            groups: 1,
            params: params.clone(),
            affine: false,
        });
        let got = run(
            &k,
            &[(shape, &x), (shape, &dy), (&kept, &mean), (&kept, &var)],
        );
        close(
            &got,
            &want,
            1e-12,
            &format!("gamma's gradient over {axes:?}"),
        );
    }
}

#[test]
fn group_norm_normalises_each_group() {
    // [1, 4, 2]: channels {0,1} and {2,3} are the two groups.
    let shape: &[u64] = &[1, 4, 2];
    let x = [1.0, 3.0, 5.0, 7.0, 10.0, 10.0, 20.0, 20.0];
    let k = Kernel::Norm(Norm {
        kind: NormKind::Standardize,
        axes: vec![1, 2],
        eps: 0.0,
        groups: 2,
        params: Vec::new(),
        affine: false,
    });
    let got = run(&k, &[(shape, &x)]);
    // Group 0: mean 4, variance 5; group 1: mean 15, variance 25.
    let s5 = 5f64.sqrt();
    let want = [
        -3.0 / s5,
        -1.0 / s5,
        1.0 / s5,
        3.0 / s5,
        -1.0,
        -1.0,
        1.0,
        1.0,
    ];
    close(&got, &want, 1e-12, "group norm");
    // Gamma and beta per channel.
    let k = Kernel::Norm(Norm {
        params: vec![1],
        affine: true,
        ..match k {
            Kernel::Norm(n) => n,
            _ => unreachable!(),
        }
    });
    let g = [1.0, 2.0, 3.0, 4.0];
    let b = [0.0, 0.0, 0.0, 100.0];
    let got = run(&k, &[(shape, &x), (&[4], &g), (&[4], &b)]);
    assert!((got[7] - 104.0).abs() < 1e-12 && (got[2] - 2.0 / s5).abs() < 1e-12);
}

#[test]
fn rms_norm_and_batch_norm_by_hand() {
    let shape: &[u64] = &[2, 2];
    let x = [3.0, 4.0, 1.0, -1.0];
    let k = Kernel::Norm(Norm {
        kind: NormKind::Rms,
        axes: vec![1],
        eps: 0.5,
        groups: 1,
        params: vec![1],
        affine: true,
    });
    // Row 0: mean square 12.5, +0.5 → √13; row 1: 1 + 0.5 → √1.5.
    let got = run(&k, &[(shape, &x), (&[2], &[1.0, 2.0])]);
    let want = [
        3.0 / 13f64.sqrt(),
        8.0 / 13f64.sqrt(),
        1.0 / 1.5f64.sqrt(),
        -2.0 / 1.5f64.sqrt(),
    ];
    close(&got, &want, 1e-12, "rms");
    // BatchNorm along axis 0 with given statistics.
    let k = Kernel::Eltwise(Eltwise::BatchNorm {
        axis: 0,
        eps: 0.0,
        affine: true,
    });
    let v: &[u64] = &[2];
    let got = run(
        &k,
        &[
            (shape, &x),
            (v, &[3.0, 0.0]),
            (v, &[4.0, 1.0]),
            (v, &[2.0, 1.0]),
            (v, &[1.0, -1.0]),
        ],
    );
    close(&got, &[1.0, 2.0, 0.0, -2.0], 1e-12, "batch norm");
}

#[test]
fn prelu_and_its_gradients() {
    let shape: &[u64] = &[2, 2];
    let x = [-2.0, 3.0, -1.0, 0.5];
    let slope: &[u64] = &[2];
    let sv = [0.5, 0.25];
    let got = run(
        &Kernel::Eltwise(Eltwise::PRelu),
        &[(shape, &x), (slope, &sv)],
    );
    close(&got, &[-1.0, 3.0, -0.5, 0.5], 1e-15, "prelu");
    let dy = [1.0, 2.0, 3.0, 4.0];
    let got = run(
        &Kernel::Eltwise(Eltwise::PReluBackward),
        &[(shape, &x), (slope, &sv), (shape, &dy)],
    );
    close(&got, &[0.5, 2.0, 1.5, 4.0], 1e-15, "prelu dx");
    let got = run(
        &Kernel::Eltwise(Eltwise::PReluSlope),
        &[(shape, &x), (shape, &dy)],
    );
    close(&got, &[-2.0, 0.0, -3.0, 0.0], 1e-15, "prelu slope");
}

#[test]
fn gen_index_and_compare_make_a_causal_mask() {
    let shape: &[u64] = &[3, 3];
    let z = [0.0; 9];
    let rows = run(
        &Kernel::Eltwise(Eltwise::GenIndex { axis: 0 }),
        &[(shape, &z)],
    );
    let cols = run(
        &Kernel::Eltwise(Eltwise::GenIndex { axis: 1 }),
        &[(shape, &z)],
    );
    assert_eq!(rows, [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    let mask = run(
        &Kernel::Eltwise(Eltwise::Compare(Cmp::GreaterEqual)),
        &[(shape, &rows), (shape, &cols)],
    );
    assert_eq!(mask, [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]);
    // Broadcasting: a column against a row.
    let m = run(
        &Kernel::Eltwise(Eltwise::Compare(Cmp::Less)),
        &[(&[3, 1], &[0.0, 1.0, 2.0]), (&[3], &[1.0, 1.0, 1.0])],
    );
    assert_eq!(m, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn dropout_is_seeded_and_drops_about_p() {
    let n = 20_000u64;
    let shape: &[u64] = &[n];
    let x = vec![1.0; n as usize];
    let one: &[u64] = &[1];
    let k = Kernel::Eltwise(Eltwise::Dropout);
    let go = |seed: f64, p: f64| {
        run(
            &k,
            &[(shape, &x), (one, &[seed]), (one, &[3.0]), (one, &[p])],
        )
    };
    let a = go(42.0, 0.25);
    assert_eq!(a, go(42.0, 0.25), "the same seed gives the same mask");
    assert_ne!(a, go(43.0, 0.25), "another seed another mask");
    let dropped = a.iter().filter(|&&v| v == 0.0).count() as f64 / n as f64;
    assert!((dropped - 0.25).abs() < 0.02, "dropped {dropped}");
    assert!(
        a.iter()
            .all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-15)
    );
    assert_eq!(go(1.0, 0.0), x, "p = 0 keeps everything");
    assert!(
        go(1.0, 1.0).iter().all(|&v| v == 0.0),
        "p = 1 drops everything"
    );
}

#[test]
fn shape_errors_name_the_operand() {
    let e = output_shape(
        &Kernel::Norm(Norm::new(NormKind::SoftmaxBackward, vec![1], 0.0)),
        &[&[2, 3], &[2, 4]],
    )
    .unwrap_err();
    assert!(
        e.message.contains("`y` must have shape [2,3], got [2,4]"),
        "{e}"
    );
    let e = output_shape(
        &Kernel::Eltwise(Eltwise::BatchNorm {
            axis: 1,
            eps: 0.0,
            affine: false,
        }),
        &[&[2, 3, 4], &[3], &[4]],
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("`var` must be a vector along the channel axis 1"),
        "{e}"
    );
    let e = output_shape(
        &Kernel::Norm(Norm {
            groups: 3,
            ..Norm::new(NormKind::Standardize, vec![1], 0.0)
        }),
        &[&[2, 4]],
    )
    .unwrap_err();
    assert!(e.message.contains("3 groups"), "{e}");
    let e = output_shape(&Kernel::Eltwise(Eltwise::PRelu), &[&[2, 3], &[4]]).unwrap_err();
    assert!(e.message.contains("does not broadcast"), "{e}");
    let e = output_shape(
        &Kernel::Eltwise(Eltwise::Dropout),
        &[&[2], &[2], &[1], &[1]],
    )
    .unwrap_err();
    assert!(e.message.contains("`seed` must hold one element"), "{e}");
    let e = output_shape(
        &Kernel::Norm(Norm::new(NormKind::LogSoftmax, vec![2], 0.0)),
        &[&[2, 3]],
    )
    .unwrap_err();
    assert!(e.message.contains("axis 2 is out of range"), "{e}");
}

#[test]
fn a_split_normalised_axis_is_illegal_and_says_so() {
    let m = mini();
    let k = Kernel::Norm(Norm::new(NormKind::LogSoftmax, vec![1], 0.0));
    let x = lay("((2_L1B, 2), (8))", &m, &[4, 8], DType::F32);
    check(&k, &[&x], &x, &m, &["x", "y"]).unwrap();
    let split = lay("((4), (2_L1B, 4))", &m, &[4, 8], DType::F32);
    let e = check(&k, &[&split], &split, &m, &["x", "y"]).unwrap_err();
    assert!(
        e.message.contains("the normalised axis") && e.message.contains("L1B"),
        "{e}"
    );
    // BatchNorm statistics: the channel axis may split, the others may not.
    let k = Kernel::Norm(Norm::new(NormKind::Variance, vec![0, 2], 0.0));
    let x = lay("((2), (2_L1B, 2), (4))", &m, &[2, 4, 4], DType::F32);
    let v = lay("((2_L1B, 2))", &m, &[4], DType::F32);
    check(&k, &[&x], &v, &m, &["x", "var"]).unwrap();
    let bad = lay("((2_L1B), (4), (4))", &m, &[2, 4, 4], DType::F32);
    let v = lay("((4))", &m, &[4], DType::F32);
    assert!(check(&k, &[&bad], &v, &m, &["x", "var"]).is_err());
}

#[test]
fn flops_follow_the_table() {
    let m = mini();
    let shape = [4u64, 8];
    let x = lay("((2_L1B, 2), (8))", &m, &shape, DType::F32);
    for (k, per_in, per_out) in [
        (
            Kernel::Norm(Norm::new(NormKind::LogSoftmax, vec![1], 0.0)),
            11,
            1,
        ),
        (Kernel::Eltwise(Eltwise::Act(Act::Mish)), 0, 27),
        (
            Kernel::Eltwise(Eltwise::Backward {
                act: Act::Relu,
                use_dst: false,
            }),
            0,
            2,
        ),
    ] {
        let ins: Vec<&mnsim_arch::TensorLayout> = vec![&x; k.arity()];
        let legal = check(&k, &ins, &x, &m, &[]).unwrap();
        let c = cost(&k, &ins, &x, &legal, &m, DType::F32, None).unwrap();
        assert_eq!(c.flops, 32 * per_in + 32 * per_out, "{k}");
        assert_eq!(c.unit, "vector");
    }
    // A comparison runs at its inputs' rate though its output is pred.
    let k = Kernel::Eltwise(Eltwise::Compare(Cmp::GreaterEqual));
    let p = lay("((2_L1B, 2), (8))", &m, &shape, DType::Pred);
    let legal = check(&k, &[&x, &x], &p, &m, &[]).unwrap();
    let c = cost(&k, &[&x, &x], &p, &legal, &m, DType::Pred, None).unwrap();
    assert_eq!(c.flops, 32);
}
