//! The kernels oneDNN graphs need: output shapes and their errors, hand-computed
//! values, per-element `eval` against the whole-tensor `reference` (including rank-0
//! scalars and broadcast batch axes), and the matmul generalisation's index maps.

use mnsim_kernels::{
    AxisSource, BinaryOp, ErrorKind, Kernel, ReduceKind, UnaryOp, eval, index_map, output_shape,
    reference,
};

fn numel(s: &[u64]) -> usize {
    s.iter().product::<u64>() as usize
}

fn unravel(shape: &[u64], mut l: u64) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for i in (0..shape.len()).rev() {
        out[i] = l % shape[i];
        l /= shape[i];
    }
    out
}

fn linear(shape: &[u64], idx: &[u64]) -> usize {
    idx.iter().zip(shape).fold(0u64, |a, (i, d)| a * d + i) as usize
}

/// Deterministic values in [-2, 2).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 4096) as f64 / 1024.0 - 2.0
        })
        .collect()
}

/// `eval` at every output index equals `reference`.
fn eval_matches_reference(k: &Kernel, shapes: &[&[u64]]) -> Vec<f64> {
    let vals: Vec<Vec<f64>> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| values(numel(s).max(1), i as u64 + 1))
        .collect();
    let out = output_shape(k, shapes).unwrap();
    let args: Vec<(&[u64], &[f64])> = shapes
        .iter()
        .zip(&vals)
        .map(|(s, v)| (*s, v.as_slice()))
        .collect();
    let want = reference(k, &args, &out);
    let ext = mnsim_kernels::reduced_extents(k, shapes).unwrap();
    for (l, w) in want.iter().enumerate() {
        let idx = unravel(&out, l as u64);
        let mut fetch = |i: usize, at: &[u64]| vals[i][linear(shapes[i], at)];
        let got = eval(k, &idx, &mut fetch, &|r| 0..ext[r], shapes);
        assert!(
            (got - w).abs() <= 1e-9 * w.abs().max(1.0) || (got.is_nan() && w.is_nan()),
            "{k:?} at {idx:?}: eval {got}, reference {w}"
        );
    }
    want
}

#[test]
fn shapes_of_the_graph_kernels() {
    let gm = |ta, tb| Kernel::GeneralMatMul {
        transpose_a: ta,
        transpose_b: tb,
    };
    assert_eq!(
        output_shape(&gm(false, false), &[&[4, 8, 32, 384], &[384, 1024]]).unwrap(),
        vec![4, 8, 32, 1024]
    );
    assert_eq!(
        output_shape(&gm(false, true), &[&[1, 16, 384, 64], &[1, 16, 384, 64]]).unwrap(),
        vec![1, 16, 384, 384]
    );
    assert_eq!(
        output_shape(&gm(true, false), &[&[3, 1, 5, 2], &[4, 5, 6]]).unwrap(),
        vec![3, 4, 2, 6]
    );
    let e = output_shape(&gm(false, false), &[&[2, 3], &[4, 5]]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Contraction);
    assert!(
        e.message.contains("contraction lengths differ"),
        "{}",
        e.message
    );
    let e = output_shape(&gm(false, false), &[&[2, 2, 3], &[3, 3, 4]]).unwrap_err();
    assert!(
        e.message
            .contains("batch axes [2] of `a` and [3] of `b` do not broadcast"),
        "{}",
        e.message
    );
    let e = output_shape(&gm(false, false), &[&[3], &[3, 4]]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Rank);

    assert_eq!(
        output_shape(&Kernel::Select, &[&[1, 1, 32, 33], &[1, 16, 32, 33], &[]]).unwrap(),
        vec![1, 16, 32, 33]
    );
    let e = output_shape(&Kernel::Select, &[&[2, 5], &[5], &[5]]).unwrap_err();
    assert!(
        e.message
            .contains("condition [2,5] does not broadcast to the shape [5]"),
        "{}",
        e.message
    );

    assert_eq!(
        output_shape(&Kernel::BiasAdd { axis: 1 }, &[&[2, 8, 4], &[8]]).unwrap(),
        vec![2, 8, 4]
    );
    let e = output_shape(&Kernel::BiasAdd { axis: 1 }, &[&[2, 8, 4], &[4]]).unwrap_err();
    assert!(
        e.message
            .contains("`bias` must be a vector of the channel axis 1"),
        "{}",
        e.message
    );

    assert_eq!(
        output_shape(&Kernel::Reshape { shape: vec![6, 4] }, &[&[2, 3, 4]]).unwrap(),
        vec![6, 4]
    );
    let e = output_shape(&Kernel::Reshape { shape: vec![5, 5] }, &[&[2, 3, 4]]).unwrap_err();
    assert!(
        e.message
            .contains("do not hold the same number of elements"),
        "{}",
        e.message
    );

    let cat = Kernel::Concat { axis: 1, inputs: 3 };
    assert_eq!(
        output_shape(&cat, &[&[2, 1], &[2, 3], &[2, 2]]).unwrap(),
        vec![2, 6]
    );
    let e = output_shape(&cat, &[&[2, 1], &[3, 3], &[2, 2]]).unwrap_err();
    assert!(
        e.message
            .contains("input 1 [3,3] does not match input 0 [2,1]"),
        "{}",
        e.message
    );
    let e = output_shape(&Kernel::Concat { axis: 0, inputs: 0 }, &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Arity);

    let r = |keep_dims| Kernel::ReduceAxes {
        op: ReduceKind::Mean,
        axes: vec![1, 3],
        keep_dims,
    };
    assert_eq!(
        output_shape(&r(true), &[&[2, 3, 4, 5]]).unwrap(),
        vec![2, 1, 4, 1]
    );
    assert_eq!(
        output_shape(&r(false), &[&[2, 3, 4, 5]]).unwrap(),
        vec![2, 4]
    );
}

#[test]
fn hand_computed_values() {
    let k = Kernel::Clamp {
        min: -1.0,
        max: 0.5,
    };
    assert_eq!(
        reference(&k, &[(&[3], &[-3.0, 0.25, 2.0])], &[3]),
        vec![-1.0, 0.25, 0.5]
    );
    let k = Kernel::Elu { alpha: 2.0 };
    let v = reference(&k, &[(&[2], &[1.5, -1.0])], &[2]);
    assert_eq!(v[0], 1.5);
    assert!((v[1] - 2.0 * ((-1.0f64).exp() - 1.0)).abs() < 1e-15);
    // HardSwish: x·min(max(x+3,0),6)/6; Round: halves to even; Log.
    assert_eq!(UnaryOp::HardSwish.apply(-4.0), 0.0);
    assert_eq!(UnaryOp::HardSwish.apply(1.0), 1.0 * 4.0 / 6.0);
    assert_eq!(UnaryOp::HardSwish.apply(5.0), 5.0);
    assert_eq!(
        [0.5, 1.5, 2.5, -2.5].map(|x| UnaryOp::Round.apply(x)),
        [0.0, 2.0, 2.0, -2.0]
    );
    assert_eq!(UnaryOp::Log.apply(1.0), 0.0);
    // Reductions of [1, -2, 3, -4].
    let x: &[f64] = &[1.0, -2.0, 3.0, -4.0];
    let red = |op| {
        reference(
            &Kernel::ReduceAxes {
                op,
                axes: vec![0],
                keep_dims: true,
            },
            &[(&[4], x)],
            &[1],
        )[0]
    };
    assert_eq!(red(ReduceKind::Prod), 24.0);
    assert_eq!(red(ReduceKind::Mean), -0.5);
    assert_eq!(red(ReduceKind::L1), 10.0);
    assert_eq!(red(ReduceKind::L2), 30f64.sqrt());
    // Select picks a where the condition is nonzero.
    let v = reference(
        &Kernel::Select,
        &[
            (&[2], &[1.0, 0.0]),
            (&[2, 2], &[1.0, 2.0, 3.0, 4.0]),
            (&[], &[9.0]),
        ],
        &[2, 2],
    );
    assert_eq!(v, vec![1.0, 9.0, 3.0, 9.0]);
    // Concat and reshape move values without changing them.
    let v = reference(
        &Kernel::Concat { axis: 1, inputs: 2 },
        &[(&[2, 1], &[1.0, 2.0]), (&[2, 2], &[3.0, 4.0, 5.0, 6.0])],
        &[2, 3],
    );
    assert_eq!(v, vec![1.0, 3.0, 4.0, 2.0, 5.0, 6.0]);
    // [[1,2],[3,4]]ᵀ · [[1,0],[0,1]] with transpose_a.
    let v = reference(
        &Kernel::GeneralMatMul {
            transpose_a: true,
            transpose_b: false,
        },
        &[
            (&[2, 2], &[1.0, 2.0, 3.0, 4.0]),
            (&[2, 2], &[1.0, 0.0, 0.0, 1.0]),
        ],
        &[2, 2],
    );
    assert_eq!(v, vec![1.0, 3.0, 2.0, 4.0]);
}

#[test]
fn eval_agrees_with_the_reference_on_every_graph_kernel() {
    let gm = |ta, tb| Kernel::GeneralMatMul {
        transpose_a: ta,
        transpose_b: tb,
    };
    let cases: Vec<(Kernel, Vec<Vec<u64>>)> = vec![
        (gm(false, false), vec![vec![2, 3, 4, 5], vec![5, 6]]),
        (gm(true, true), vec![vec![3, 1, 5, 2], vec![4, 6, 5]]),
        (gm(false, true), vec![vec![1, 2, 3, 4], vec![2, 1, 5, 4]]),
        (Kernel::Select, vec![vec![1, 3, 1], vec![2, 3, 4], vec![]]),
        (Kernel::Select, vec![vec![], vec![4], vec![2, 4]]),
        (
            Kernel::Clamp {
                min: -0.5,
                max: 1.0,
            },
            vec![vec![3, 4]],
        ),
        (Kernel::Elu { alpha: 0.5 }, vec![vec![3, 4]]),
        (Kernel::BiasAdd { axis: 1 }, vec![vec![2, 3, 4], vec![3]]),
        (Kernel::Reshape { shape: vec![4, 6] }, vec![vec![2, 3, 4]]),
        (
            Kernel::Concat { axis: 0, inputs: 3 },
            vec![vec![1, 4], vec![2, 4], vec![3, 4]],
        ),
        // Rank-0 scalars broadcast like numpy in every binary op.
        (Kernel::Binary(BinaryOp::Max), vec![vec![3, 4], vec![]]),
        (Kernel::Binary(BinaryOp::Div), vec![vec![], vec![2, 2]]),
        (Kernel::Binary(BinaryOp::Min), vec![vec![1, 4], vec![3, 1]]),
    ];
    let mut all = cases;
    for op in ReduceKind::ALL {
        for keep_dims in [false, true] {
            all.push((
                Kernel::ReduceAxes {
                    op,
                    axes: vec![0, 2],
                    keep_dims,
                },
                vec![vec![3, 2, 4]],
            ));
        }
    }
    for op in [UnaryOp::HardSwish, UnaryOp::Round, UnaryOp::Log] {
        all.push((Kernel::Unary(op), vec![vec![2, 5]]));
    }
    for (k, shapes) in &all {
        let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        eval_matches_reference(k, &refs);
    }
}

#[test]
fn the_general_matmul_index_map_transposes_and_broadcasts() {
    use AxisSource::*;
    let k = Kernel::GeneralMatMul {
        transpose_a: true,
        transpose_b: false,
    };
    // a [1,3,K=5,M=2], b [4,1,5,6] → out [4,3,2,6].
    let m = index_map(&k, &[&[1, 3, 5, 2], &[4, 1, 5, 6]], &[4, 3, 2, 6]).unwrap();
    assert_eq!(m[0].axes, vec![Broadcast, Out(1), Reduced(0), Out(2)]);
    assert_eq!(m[1].axes, vec![Out(0), Broadcast, Reduced(0), Out(3)]);
    // A 2-D b under a 4-D a has no batch axes at all.
    let k = Kernel::GeneralMatMul {
        transpose_a: false,
        transpose_b: false,
    };
    let m = index_map(&k, &[&[2, 3, 4, 5], &[5, 6]], &[2, 3, 4, 6]).unwrap();
    assert_eq!(m[1].axes, vec![Reduced(0), Out(3)]);
    // keep_dims: reduced axes read Reduced, kept axes keep their index.
    let k = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes: vec![1],
        keep_dims: true,
    };
    let m = index_map(&k, &[&[2, 3, 4]], &[2, 1, 4]).unwrap();
    assert_eq!(m[0].axes, vec![Out(0), Reduced(0), Out(2)]);
}
