//! The host reference against hand-computed results, and `eval` against the reference.

mod common;

use common::*;
use mnsim_kernels::*;

fn run(k: &Kernel, ins: &[(&[u64], &[f64])]) -> (Vec<u64>, Vec<f64>) {
    let shapes: Vec<&[u64]> = ins.iter().map(|(s, _)| *s).collect();
    let out = output_shape(k, &shapes).unwrap();
    let v = reference(k, ins, &out);
    (out, v)
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn unary_by_hand() {
    let x = [-1.0, 0.5, 4.0];
    let cases: [(UnaryOp, [f64; 3]); 12] = [
        (UnaryOp::Relu, [0.0, 0.5, 4.0]),
        (UnaryOp::Neg, [1.0, -0.5, -4.0]),
        (UnaryOp::Abs, [1.0, 0.5, 4.0]),
        (UnaryOp::Square, [1.0, 0.25, 16.0]),
        (UnaryOp::Copy, [-1.0, 0.5, 4.0]),
        (UnaryOp::Recip, [-1.0, 2.0, 0.25]),
        (
            UnaryOp::Exp,
            [0.36787944117144233, 1.6487212707001282, 54.598150033144236],
        ),
        (
            UnaryOp::Tanh,
            [-0.7615941559557649, 0.46211715726000974, 0.999329299739067],
        ),
        (
            UnaryOp::Sigmoid,
            [0.2689414213699951, 0.6224593312018546, 0.9820137900379085],
        ),
        // 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))), computed independently.
        (
            UnaryOp::Gelu,
            [
                -0.15880800939172324,
                0.34571400982514394,
                3.9999297540518075,
            ],
        ),
        (
            UnaryOp::Sqrt,
            [f64::NAN, std::f64::consts::FRAC_1_SQRT_2, 2.0],
        ),
        (UnaryOp::Rsqrt, [f64::NAN, std::f64::consts::SQRT_2, 0.5]),
    ];
    for (op, want) in cases {
        let (s, got) = run(&Kernel::Unary(op), &[(&[3], &x)]);
        assert_eq!(s, vec![3]);
        for (g, w) in got.iter().zip(want) {
            if w.is_nan() {
                assert!(g.is_nan(), "{op:?}");
            } else {
                assert!((g - w).abs() < 1e-12, "{op:?}: {got:?} vs {want:?}");
            }
        }
    }
    assert!((gelu(1.0) - 0.8411919906082768).abs() < 1e-15);
}

#[test]
fn binary_by_hand_with_broadcasting() {
    let a = [1.0, 2.0, 3.0, 4.0]; // [[1,2],[3,4]]
    let b = [10.0, 20.0]; // a row, broadcast down
    let cases: [(BinaryOp, [f64; 4]); 6] = [
        (BinaryOp::Add, [11.0, 22.0, 13.0, 24.0]),
        (BinaryOp::Sub, [-9.0, -18.0, -7.0, -16.0]),
        (BinaryOp::Mul, [10.0, 40.0, 30.0, 80.0]),
        (BinaryOp::Div, [0.1, 0.1, 0.3, 0.2]),
        (BinaryOp::Max, [10.0, 20.0, 10.0, 20.0]),
        (BinaryOp::Min, [1.0, 2.0, 3.0, 4.0]),
    ];
    for (op, want) in cases {
        let (s, got) = run(&Kernel::Binary(op), &[(&[2, 2], &a), (&[2], &b)]);
        assert_eq!(s, vec![2, 2]);
        close(&got, &want);
    }
    // A column [2,1] against a row [1,3]: an outer sum.
    let (s, got) = run(
        &Kernel::Binary(BinaryOp::Add),
        &[(&[2, 1], &[1.0, 2.0]), (&[1, 3], &[10.0, 20.0, 30.0])],
    );
    assert_eq!(s, vec![2, 3]);
    close(&got, &[11.0, 21.0, 31.0, 12.0, 22.0, 32.0]);
}

#[test]
fn matmuls_by_hand() {
    let (s, got) = run(
        &Kernel::MatMul,
        &[
            (&[2, 2], &[1.0, 2.0, 3.0, 4.0]),
            (&[2, 2], &[5.0, 6.0, 7.0, 8.0]),
        ],
    );
    assert_eq!(s, vec![2, 2]);
    close(&got, &[19.0, 22.0, 43.0, 50.0]);
    // [1,3] × [3,2]
    let (_, got) = run(
        &Kernel::MatMul,
        &[
            (&[1, 3], &[1.0, 2.0, 3.0]),
            (&[3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]),
        ],
    );
    close(&got, &[4.0, 5.0]);
    // Two batches: identity times B, and 2·I times B.
    let a = [1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0];
    let b = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let (s, got) = run(&Kernel::BatchMatMul, &[(&[2, 2, 2], &a), (&[2, 2, 2], &b)]);
    assert_eq!(s, vec![2, 2, 2]);
    close(&got, &[1.0, 2.0, 3.0, 4.0, 10.0, 12.0, 14.0, 16.0]);
}

#[test]
fn reductions_by_hand() {
    let x = [1.0, -2.0, 3.0, 4.0, 5.0, -6.0]; // [[1,-2,3],[4,5,-6]]
    let red = |op, axes| Kernel::ReduceAxes {
        op,
        axes,
        keep_dims: false,
    };
    let (s, got) = run(&red(ReduceKind::Add, vec![1]), &[(&[2, 3], &x)]);
    assert_eq!(s, vec![2]);
    close(&got, &[2.0, 3.0]);
    let (_, got) = run(&red(ReduceKind::Add, vec![0]), &[(&[2, 3], &x)]);
    close(&got, &[5.0, 3.0, -3.0]);
    let (_, got) = run(&red(ReduceKind::Max, vec![1]), &[(&[2, 3], &x)]);
    close(&got, &[3.0, 5.0]);
    let (_, got) = run(&red(ReduceKind::Min, vec![0]), &[(&[2, 3], &x)]);
    close(&got, &[1.0, -2.0, -6.0]);
    let (s, got) = run(&red(ReduceKind::Add, vec![1, 0]), &[(&[2, 3], &x)]);
    assert_eq!(s, Vec::<u64>::new());
    close(&got, &[5.0]);
    let (_, got) = run(&red(ReduceKind::Add, vec![]), &[(&[2, 3], &x)]);
    close(&got, &x);
}

#[test]
fn softmax_layernorm_transpose_by_hand() {
    let (_, got) = run(&Kernel::Softmax { axis: 0 }, &[(&[3], &[1.0, 2.0, 3.0])]);
    close(
        &got,
        &[0.09003057317038046, 0.24472847105479767, 0.6652409557748219],
    );
    // Large values: the maximum is subtracted, so nothing overflows.
    let (_, got) = run(
        &Kernel::Softmax { axis: 1 },
        &[(&[2, 2], &[1000.0, 1001.0, -5.0, -5.0])],
    );
    close(&got, &[0.2689414213699951, 0.7310585786300049, 0.5, 0.5]);
    // Along axis 0 of [[1,2],[3,2]]: columns (1,3) and (2,2).
    let (_, got) = run(
        &Kernel::Softmax { axis: 0 },
        &[(&[2, 2], &[1.0, 2.0, 3.0, 2.0])],
    );
    close(&got, &[0.11920292202211755, 0.5, 0.8807970779778824, 0.5]);

    // mean 2.5, population variance 1.25.
    let (_, got) = run(
        &Kernel::LayerNorm { axis: 0, eps: 0.0 },
        &[(&[4], &[1.0, 2.0, 3.0, 4.0])],
    );
    let sd = 1.25f64.sqrt();
    close(&got, &[-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd]);
    // A constant row with eps: (x - mean) = 0.
    let (_, got) = run(
        &Kernel::LayerNorm { axis: 1, eps: 1e-5 },
        &[(&[2, 2], &[3.0, 3.0, 0.0, 2.0])],
    );
    let s = (1.0f64 + 1e-5).sqrt();
    close(&got, &[0.0, 0.0, -1.0 / s, 1.0 / s]);

    let (s, got) = run(
        &Kernel::Transpose { perm: vec![1, 0] },
        &[(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])],
    );
    assert_eq!(s, vec![3, 2]);
    close(&got, &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    // [2,3,4] with perm [2,0,1]: out[c][a][b] = x[a][b][c].
    let x: Vec<f64> = (0..24).map(f64::from).collect();
    let (s, got) = run(
        &Kernel::Transpose {
            perm: vec![2, 0, 1],
        },
        &[(&[2, 3, 4], &x)],
    );
    assert_eq!(s, vec![4, 2, 3]);
    assert_eq!(
        got[linear(&s, &[3, 1, 2])],
        x[linear(&[2, 3, 4], &[1, 2, 3])]
    );
}

/// Evaluates every output element with `eval` over the whole reduced ranges.
fn eval_all(k: &Kernel, ins: &[(Vec<u64>, Vec<f64>)]) -> Vec<f64> {
    let shapes: Vec<&[u64]> = ins.iter().map(|(s, _)| s.as_slice()).collect();
    let out = output_shape(k, &shapes).unwrap();
    let ext = reduced_extents(k, &shapes).unwrap();
    let mut fetch = |j: usize, idx: &[u64]| -> f64 {
        let (s, v) = &ins[j];
        assert_eq!(idx.len(), s.len());
        assert!(
            idx.iter().zip(s).all(|(i, d)| i < d),
            "{idx:?} out of {s:?}"
        );
        v[linear(s, idx)]
    };
    let reduced = |r: usize| 0..ext[r];
    indices(&out)
        .iter()
        .map(|i| eval(k, i, &mut fetch, &reduced, &shapes))
        .collect()
}

fn kernels_for(rng: &mut Rng) -> Vec<(Kernel, Vec<Vec<u64>>)> {
    let mut v = Vec::new();
    let s3 = rng.shape(3, 4);
    for op in UnaryOp::ALL {
        v.push((Kernel::Unary(op), vec![s3.clone()]));
    }
    for op in BinaryOp::ALL {
        // b: the trailing axes of a, with some set to 1.
        let mut b = s3[1..].to_vec();
        if rng.range(0, 2) == 0 {
            b[0] = 1;
        }
        v.push((Kernel::Binary(op), vec![s3.clone(), b.clone()]));
        v.push((Kernel::Binary(op), vec![b, s3.clone()]));
    }
    let (m, n, k) = (rng.range(1, 6), rng.range(1, 6), rng.range(1, 9));
    v.push((Kernel::MatMul, vec![vec![m, k], vec![k, n]]));
    let bt = rng.range(1, 4);
    v.push((
        Kernel::BatchMatMul,
        vec![vec![bt, 2, m, k], vec![bt, 2, k, n]],
    ));
    for op in ReduceKind::ALL {
        v.push((
            Kernel::ReduceAxes {
                op,
                axes: vec![2, 0],
                keep_dims: false,
            },
            vec![s3.clone()],
        ));
        v.push((
            Kernel::ReduceAxes {
                op,
                axes: vec![1],
                keep_dims: false,
            },
            vec![s3.clone()],
        ));
    }
    for axis in 0..3 {
        v.push((Kernel::Softmax { axis }, vec![s3.clone()]));
        v.push((Kernel::LayerNorm { axis, eps: 1e-5 }, vec![s3.clone()]));
    }
    v.push((
        Kernel::Transpose {
            perm: vec![2, 0, 1],
        },
        vec![s3.clone()],
    ));
    v.push((
        Kernel::Transpose {
            perm: vec![0, 2, 1],
        },
        vec![s3],
    ));
    v
}

#[test]
fn eval_matches_reference_on_random_inputs() {
    let mut rng = Rng(7);
    for _round in 0..20 {
        for (k, shapes) in kernels_for(&mut rng) {
            let ins: Vec<(Vec<u64>, Vec<f64>)> = shapes
                .iter()
                .map(|s| {
                    let mut v = rng.values(numel(s));
                    if matches!(k, Kernel::Unary(UnaryOp::Sqrt | UnaryOp::Rsqrt)) {
                        v.iter_mut().for_each(|x| *x = x.abs() + 0.1);
                    }
                    (s.clone(), v)
                })
                .collect();
            let refs: Vec<(&[u64], &[f64])> = ins
                .iter()
                .map(|(s, v)| (s.as_slice(), v.as_slice()))
                .collect();
            let shapes: Vec<&[u64]> = refs.iter().map(|(s, _)| *s).collect();
            let out = output_shape(&k, &shapes).unwrap();
            let want = reference(&k, &refs, &out);
            let got = eval_all(&k, &ins);
            let n = reduced_extents(&k, &shapes)
                .unwrap()
                .iter()
                .product::<u64>();
            let tol = tolerance(mnsim_arch::DType::F64, &k, n);
            for (g, w) in got.iter().zip(&want) {
                assert!(within(*g, *w, tol), "{k:?} {shapes:?}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn eval_partial_ranges_sum_to_the_whole() {
    // Split the contraction in two: the partial sums add up to the full result.
    let mut rng = Rng(3);
    let (m, k, n) = (3, 7, 4);
    let a = rng.values(m * k);
    let b = rng.values(k * n);
    let ins = [(&[m, k][..], &a[..]), (&[k, n][..], &b[..])];
    let want = reference(&Kernel::MatMul, &ins, &[m, n]);
    let shapes: Vec<&[u64]> = ins.iter().map(|(s, _)| *s).collect();
    for idx in indices(&[m, n]) {
        let mut fetch = |j: usize, i: &[u64]| {
            let (s, v) = ins[j];
            v[linear(s, i)]
        };
        let lo = eval(&Kernel::MatMul, &idx, &mut fetch, &|_| 0..3, &shapes);
        let hi = eval(&Kernel::MatMul, &idx, &mut fetch, &|_| 3..k, &shapes);
        let empty = eval(&Kernel::MatMul, &idx, &mut fetch, &|_| 0..0, &shapes);
        assert_eq!(empty, 0.0);
        assert!((lo + hi - want[linear(&[m, n], &idx)]).abs() < 1e-12);
    }
    // ReduceAxes over two variables, one split: partial maxima are the identity when empty.
    let x = rng.values(24);
    let shp: &[u64] = &[2, 3, 4];
    let k = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes: vec![0, 2],
        keep_dims: false,
    };
    let want = reference(&k, &[(shp, &x)], &[3]);
    for j in 0..3u64 {
        let mut fetch = |_: usize, i: &[u64]| x[linear(shp, i)];
        let part = |lo: u64, hi: u64| move |v: usize| if v == 0 { lo..hi } else { 0..4 };
        let s0 = eval(&k, &[j], &mut fetch, &part(0, 1), &[shp]);
        let s1 = eval(&k, &[j], &mut fetch, &part(1, 2), &[shp]);
        assert!((s0 + s1 - want[j as usize]).abs() < 1e-12);
    }
    let mx = Kernel::ReduceAxes {
        op: ReduceKind::Max,
        axes: vec![1],
        keep_dims: false,
    };
    let mut fetch = |_: usize, i: &[u64]| x[linear(shp, i)];
    assert_eq!(
        eval(&mx, &[0, 0], &mut fetch, &|_| 0..0, &[shp]),
        f64::NEG_INFINITY
    );
}

#[test]
fn tolerances_by_dtype() {
    use mnsim_arch::DType;
    let mm = Kernel::MatMul;
    let relu = Kernel::Unary(UnaryOp::Relu);
    assert_eq!(tolerance(DType::F32, &relu, 1000), (1e-5, 1e-5));
    let (a, r) = tolerance(DType::F32, &mm, 100);
    assert!((a - 1e-4).abs() < 1e-15 && (r - 1e-4).abs() < 1e-15);
    assert!(tolerance(DType::F64, &mm, 4).0 < 1e-11);
    assert!(tolerance(DType::F16, &mm, 1).1 >= 1e-2);
    assert!(tolerance(DType::BF16, &mm, 1).1 > tolerance(DType::F16, &mm, 1).1);
    assert_eq!(tolerance(DType::S32, &mm, 100), (1.0, 0.0));
    assert!(within(1.0, 1.0 + 1e-6, (1e-5, 0.0)));
    assert!(!within(1.0, 1.1, (1e-5, 1e-5)));
    assert!(within(f64::NAN, f64::NAN, (0.0, 0.0)));
    assert!(!within(1.0, f64::NAN, (1.0, 1.0)));
    assert!(within(f64::INFINITY, f64::INFINITY, (0.0, 0.0)));
}
