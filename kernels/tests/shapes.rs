//! Output shapes, their errors, and index maps.

use mnsim_kernels::*;

fn shape(k: &Kernel, ins: &[&[u64]]) -> Vec<u64> {
    output_shape(k, ins).unwrap_or_else(|e| panic!("{k}: {e}"))
}

fn err(k: &Kernel, ins: &[&[u64]]) -> KernelError {
    output_shape(k, ins).expect_err("should fail")
}

#[test]
fn elementwise_shapes_and_broadcasting() {
    let relu = Kernel::Unary(UnaryOp::Relu);
    assert_eq!(shape(&relu, &[&[3, 4]]), vec![3, 4]);
    assert_eq!(shape(&relu, &[&[]]), Vec::<u64>::new());
    let add = Kernel::Binary(BinaryOp::Add);
    assert_eq!(shape(&add, &[&[4, 3], &[4, 3]]), vec![4, 3]);
    assert_eq!(shape(&add, &[&[4, 1, 3], &[2, 3]]), vec![4, 2, 3]);
    assert_eq!(shape(&add, &[&[3], &[4, 3]]), vec![4, 3]);
    assert_eq!(shape(&add, &[&[4, 1], &[1, 5]]), vec![4, 5]);
    assert_eq!(shape(&add, &[&[1], &[]]), vec![1]);
    let e = err(&add, &[&[4, 3], &[2, 3]]);
    assert_eq!(e.kind, ErrorKind::Broadcast);
    assert_eq!(
        e.message,
        "Binary Add: shapes [4,3] and [2,3] do not broadcast (aligned to the trailing axes, each pair of sizes must be equal or one of them 1)"
    );
    let e = err(&add, &[&[4, 3]]);
    assert_eq!(e.kind, ErrorKind::Arity);
    assert_eq!(e.message, "Binary Add takes 2 input(s), got 1");
}

#[test]
fn matmul_shapes() {
    assert_eq!(shape(&Kernel::MatMul, &[&[4, 5], &[5, 6]]), vec![4, 6]);
    let e = err(&Kernel::MatMul, &[&[4, 5], &[6, 7]]);
    assert_eq!(e.kind, ErrorKind::Contraction);
    assert_eq!(
        e.message,
        "MatMul: the contraction lengths differ: `a` [4,5] has 5 columns, `b` [6,7] has 6 rows"
    );
    let e = err(&Kernel::MatMul, &[&[2, 4, 5], &[5, 6]]);
    assert_eq!(e.kind, ErrorKind::Rank);
    assert!(e.message.contains("use BatchMatMul"), "{e}");

    let bmm = Kernel::BatchMatMul;
    assert_eq!(
        shape(&bmm, &[&[2, 3, 4, 5], &[2, 3, 5, 6]]),
        vec![2, 3, 4, 6]
    );
    assert_eq!(shape(&bmm, &[&[4, 5], &[5, 6]]), vec![4, 6]);
    let e = err(&bmm, &[&[2, 4, 5], &[3, 5, 6]]);
    assert_eq!(e.kind, ErrorKind::Contraction);
    assert!(e.message.contains("batch axes differ"), "{e}");
    let e = err(&bmm, &[&[2, 4, 5], &[2, 4, 6]]);
    assert_eq!(e.kind, ErrorKind::Contraction);
    let e = err(&bmm, &[&[2, 4, 5], &[5, 6]]);
    assert_eq!(e.kind, ErrorKind::Rank);
    let e = err(&bmm, &[&[5], &[5]]);
    assert_eq!(e.kind, ErrorKind::Rank);
}

#[test]
fn reduction_softmax_transpose_shapes() {
    let r = |axes: Vec<usize>| Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes,
        keep_dims: false,
    };
    assert_eq!(shape(&r(vec![0, 2]), &[&[2, 3, 4]]), vec![3]);
    assert_eq!(shape(&r(vec![2, 0]), &[&[2, 3, 4]]), vec![3]);
    assert_eq!(shape(&r(vec![0, 1]), &[&[2, 3]]), Vec::<u64>::new());
    assert_eq!(shape(&r(vec![]), &[&[2, 3]]), vec![2, 3]);
    let e = err(&r(vec![3]), &[&[2, 3, 4]]);
    assert_eq!(e.kind, ErrorKind::Axis);
    assert_eq!(
        e.message,
        "ReduceAxes Add: axis 3 is out of range for shape [2,3,4] (axes 0..3)"
    );
    let e = err(&r(vec![1, 1]), &[&[2, 3, 4]]);
    assert_eq!(e.message, "ReduceAxes Add: axis 1 is named twice");

    let sm = Kernel::Softmax { axis: 1 };
    assert_eq!(shape(&sm, &[&[2, 3]]), vec![2, 3]);
    assert_eq!(err(&sm, &[&[2]]).kind, ErrorKind::Axis);
    let ln = Kernel::LayerNorm { axis: 2, eps: 1e-5 };
    assert_eq!(
        err(&ln, &[&[2, 3]]).message,
        "LayerNorm: axis 2 is out of range for shape [2,3] (axes 0..2)"
    );

    let t = |perm: Vec<usize>| Kernel::Transpose { perm };
    assert_eq!(shape(&t(vec![2, 0, 1]), &[&[2, 3, 4]]), vec![4, 2, 3]);
    assert_eq!(shape(&t(vec![1, 0]), &[&[2, 3]]), vec![3, 2]);
    for bad in [vec![0, 0], vec![0], vec![0, 2], vec![0, 1, 2]] {
        let e = err(&t(bad.clone()), &[&[2, 3]]);
        assert_eq!(e.kind, ErrorKind::Perm, "{bad:?}");
    }
    assert_eq!(
        err(&t(vec![0, 0]), &[&[2, 3]]).message,
        "Transpose: perm [0, 0] is not a permutation of the 2 axes of [2,3] (each of 0..2 exactly once)"
    );
}

#[test]
fn index_maps() {
    use AxisSource::*;
    let im = |k: &Kernel, ins: &[&[u64]]| {
        let out = output_shape(k, ins).unwrap();
        index_map(k, ins, &out)
            .unwrap()
            .into_iter()
            .map(|m| m.axes)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        im(&Kernel::MatMul, &[&[4, 5], &[5, 6]]),
        vec![vec![Out(0), Reduced(0)], vec![Reduced(0), Out(1)]]
    );
    assert_eq!(
        im(&Kernel::BatchMatMul, &[&[2, 4, 5], &[2, 5, 6]]),
        vec![
            vec![Out(0), Out(1), Reduced(0)],
            vec![Out(0), Reduced(0), Out(2)]
        ]
    );
    assert_eq!(
        im(&Kernel::Binary(BinaryOp::Mul), &[&[4, 1, 3], &[2, 1]]),
        vec![vec![Out(0), Broadcast, Out(2)], vec![Out(1), Broadcast]]
    );
    // A size-1 axis against a size-1 output axis is just that axis.
    assert_eq!(
        im(&Kernel::Binary(BinaryOp::Mul), &[&[4, 1], &[1, 1]]),
        vec![vec![Out(0), Out(1)], vec![Broadcast, Out(1)]]
    );
    let red = Kernel::ReduceAxes {
        op: ReduceKind::Max,
        axes: vec![2, 0],
        keep_dims: false,
    };
    assert_eq!(
        im(&red, &[&[2, 3, 4, 5]]),
        vec![vec![Reduced(1), Out(0), Reduced(0), Out(1)]]
    );
    assert_eq!(reduced_extents(&red, &[&[2, 3, 4, 5]]).unwrap(), vec![4, 2]);
    assert_eq!(
        im(&Kernel::Softmax { axis: 1 }, &[&[2, 3]]),
        vec![vec![Out(0), Reduced(0)]]
    );
    assert_eq!(
        reduced_extents(&Kernel::Softmax { axis: 1 }, &[&[2, 3]]).unwrap(),
        vec![3]
    );
    assert_eq!(
        im(
            &Kernel::Transpose {
                perm: vec![2, 0, 1]
            },
            &[&[2, 3, 4]]
        ),
        vec![vec![Out(1), Out(2), Out(0)]]
    );
    assert_eq!(
        reduced_extents(&Kernel::MatMul, &[&[4, 5], &[5, 6]]).unwrap(),
        vec![5]
    );
    assert!(
        reduced_extents(&Kernel::Unary(UnaryOp::Exp), &[&[4]])
            .unwrap()
            .is_empty()
    );
    // A wrong output shape is refused.
    let e = index_map(&Kernel::MatMul, &[&[4, 5], &[5, 6]], &[4, 5]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Layout);
}
