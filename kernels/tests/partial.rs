//! Partial results end to end: every unit computes its share with `reduced_share` and
//! `eval_share`; adding the partials over the partial levels gives the reference.

mod common;

use common::*;
use mnsim_arch::{DType, Machine, TensorLayout};
use mnsim_kernels::*;

const F32: DType = DType::F32;

/// Sums, over every combination of positions at the partial levels, each unit's partial
/// result; compares with the reference. Returns the shares per partial position.
fn partials_add_up(
    k: &Kernel,
    ins: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
    want_partial: &[usize],
) -> Vec<Vec<Vec<u64>>> {
    let l = check(k, ins, out, m, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(l.partial, want_partial);
    let mut rng = Rng(11);
    let shapes: Vec<&[u64]> = ins.iter().map(|t| t.logical_shape()).collect();
    let vals: Vec<Vec<f64>> = shapes.iter().map(|s| rng.values(numel(s))).collect();
    let refs: Vec<(&[u64], &[f64])> = shapes
        .iter()
        .copied()
        .zip(vals.iter().map(Vec::as_slice))
        .collect();
    let out_shape = output_shape(k, &shapes).unwrap();
    let want = reference(k, &refs, &out_shape);
    let levels = m.addressable_levels();
    let mut got = vec![0.0; want.len()];
    let mut all_shares = Vec::new();
    // Odometer over the partial levels' positions.
    let mut pos = vec![0u64; levels.len()];
    loop {
        let share = reduced_share(k, ins, &l, &pos).unwrap();
        for (o, idx) in indices(&out_shape).iter().enumerate() {
            let mut fetch = |j: usize, i: &[u64]| vals[j][linear(shapes[j], i)];
            got[o] += eval_share(k, idx, &mut fetch, &share, &shapes);
        }
        all_shares.push(share);
        let mut d = l.partial.len();
        loop {
            if d == 0 {
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
                }
                return all_shares;
            }
            d -= 1;
            let x = l.partial[d];
            pos[x] += 1;
            if pos[x] < levels[x].fanout {
                break;
            }
            pos[x] = 0;
        }
    }
}

#[test]
fn matmul_partials_over_one_and_two_levels() {
    let m = mini();
    let mm = Kernel::MatMul;
    let c = lay("((2_MAB, 4), (6); B@[L1B])", &m, &[8, 6], F32);
    // K split on its major digit: shares are ranges.
    let a = lay("((2_MAB, 4), (2_L1B, 2))", &m, &[8, 4], F32);
    let b = lay("((2_L1B, 2), (6))", &m, &[4, 6], F32);
    let s = partials_add_up(&mm, &[&a, &b], &c, &m, &[0]);
    assert_eq!(s, vec![vec![vec![0, 1]], vec![vec![2, 3]]]);
    // K split on its minor digit: every other k.
    let a = lay("((2_MAB, 4), (2, 2_L1B))", &m, &[8, 4], F32);
    let b = lay("((2, 2_L1B), (6))", &m, &[4, 6], F32);
    let s = partials_add_up(&mm, &[&a, &b], &c, &m, &[0]);
    assert_eq!(s, vec![vec![vec![0, 2]], vec![vec![1, 3]]]);
    // Over L1B and MAB, with `b` replicated: `a` alone decides the shares.
    let a = lay("((8), (2_L1B, 2_MAB))", &m, &[8, 4], F32);
    let b = lay("((4), (6); B@[L1B,MAB,PE])", &m, &[4, 6], F32);
    let c = lay("((8), (6); B@[L1B,MAB,PE])", &m, &[8, 6], F32);
    let s = partials_add_up(&mm, &[&a, &b], &c, &m, &[0, 1]);
    assert_eq!(
        s,
        vec![vec![vec![0]], vec![vec![1]], vec![vec![2]], vec![vec![3]]]
    );
    // BatchMatMul.
    let a = lay("((2), (8), (2_L1B, 2))", &m, &[2, 8, 4], F32);
    let b = lay("((2), (2_L1B, 2), (6))", &m, &[2, 4, 6], F32);
    let c = lay("((2), (8), (6); B@[L1B])", &m, &[2, 8, 6], F32);
    partials_add_up(&Kernel::BatchMatMul, &[&a, &b], &c, &m, &[0]);
}

#[test]
fn reduction_partials_over_two_split_axes_and_an_idle_pe() {
    let m = machine("toy4");
    // Axes 0 and 2 both split over PE: PE position = 2·(row digit) + (axis-2 digit).
    let x = lay("((2_PE, 2), (3), (2_PE))", &m, &[4, 3, 2], F32);
    let y = lay("((3); B@[PE])", &m, &[3], F32);
    let k = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes: vec![0, 2],
        keep_dims: false,
    };
    let s = partials_add_up(&k, &[&x], &y, &m, &[0]);
    assert_eq!(
        s,
        vec![
            vec![vec![0, 1], vec![0]],
            vec![vec![0, 1], vec![1]],
            vec![vec![2, 3], vec![0]],
            vec![vec![2, 3], vec![1]],
        ]
    );
    // Three of four PEs hold rows: PE 3 has nothing to add.
    let x = lay("((3_PE, 2), (2))", &m, &[6, 2], F32);
    let y = lay("((2); B@[PE])", &m, &[2], F32);
    let k = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes: vec![0],
        keep_dims: false,
    };
    let s = partials_add_up(&k, &[&x], &y, &m, &[0]);
    assert_eq!(s[3], vec![Vec::<u64>::new()]);
}

#[test]
fn without_partial_levels_every_value_is_shared() {
    let m = machine("toy4");
    let x = lay("((4_PE), (8))", &m, &[4, 8], F32);
    let k = Kernel::Softmax { axis: 1 };
    let l = check(&k, &[&x], &x, &m, &[]).unwrap();
    assert_eq!(
        reduced_share(&k, &[&x], &l, &[2]).unwrap(),
        vec![(0..8).collect::<Vec<u64>>()]
    );
}
