//! Views against the element walk: a derived layout puts every element where its source
//! layout put it (random layouts on random trees), and worked examples.

use super::tests::{all_indices, arb_layout};
use crate::dtype::DType;
use crate::layout::TensorLayout;
use crate::machine::Machine;
use proptest::prelude::*;

fn bind(text: &str, m: &Machine, shape: &[u64]) -> TensorLayout {
    TensorLayout::parse(text, m, Some(shape), DType::U8).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The row-major flat index of `idx` in `dims`, and back.
fn flat(idx: &[u64], dims: &[u64]) -> u64 {
    idx.iter().zip(dims).fold(0, |a, (&i, &d)| a * d + i)
}
fn unflat(mut f: u64, dims: &[u64]) -> Vec<u64> {
    let mut out = vec![0; dims.len()];
    for k in (0..dims.len()).rev() {
        out[k] = f % dims[k];
        f /= dims[k];
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_transposed_layout_keeps_every_element_in_its_cell(
        (m, text, shape) in arb_layout(),
        seed in any::<u64>(),
    ) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        // A permutation from the seed (Fisher-Yates).
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        let mut s = seed;
        for i in (1..perm.len()).rev() {
            perm.swap(i, (s % (i as u64 + 1)) as usize);
            s /= i as u64 + 1;
        }
        // Every layout has one, padded or not (padding permutes with its axis).
        let v = l.transposed(&perm, &m);
        prop_assert!(v.is_some(), "{} by {:?}", text, perm);
        let v = v.unwrap();
        for idx in all_indices(&shape) {
            let out: Vec<u64> = perm.iter().map(|&p| idx[p]).collect();
            prop_assert_eq!(l.place(&idx).unwrap(), v.place(&out).unwrap(), "{} {:?}", text, idx);
        }
        // And back.
        let mut inv = vec![0; perm.len()];
        for (k, &p) in perm.iter().enumerate() {
            inv[p] = k;
        }
        prop_assert!(v.transposed(&inv, &m).unwrap().same_cells(&l));
    }

    #[test]
    fn a_reshaped_layout_keeps_every_element_in_its_cell(
        (m, text, shape) in arb_layout(),
        seed in any::<u64>(),
    ) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        if l.logical_shape() != l.padded_shape() {
            prop_assert!(l.reshaped(&shape, &m).is_none());
            return Ok(());
        }
        let n: u64 = shape.iter().product();
        // Targets: the layout's own shape, all flat, and a split of the flat count by a
        // divisor the seed picks (which may or may not fall on a sub-axis boundary).
        let divs: Vec<u64> = (1..=n).filter(|d| n.is_multiple_of(*d)).collect();
        let d = divs[(seed % divs.len() as u64) as usize];
        let targets = [shape.clone(), vec![n], vec![d, n / d], vec![1, n, 1]];
        for (k, dims) in targets.iter().enumerate() {
            let v = l.reshaped(dims, &m);
            if k < 2 || k == 3 {
                prop_assert!(v.is_some(), "{} to {:?}", text, dims);
            }
            let Some(v) = v else { continue };
            prop_assert_eq!(v.logical_shape(), dims.as_slice());
            for idx in all_indices(&shape) {
                let out = unflat(flat(&idx, &shape), dims);
                prop_assert_eq!(l.place(&idx).unwrap(), v.place(&out).unwrap(), "{} to {:?} at {:?}", text, dims, idx);
            }
            prop_assert!(v.reshaped(&shape, &m).unwrap().same_cells(&l));
        }
    }

    #[test]
    fn a_reduced_layout_keeps_the_kept_axes_where_they_were(
        (m, text, shape) in arb_layout(),
        which in any::<usize>(),
        keep in any::<bool>(),
    ) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        if l.logical_shape() != l.padded_shape() {
            return Ok(());
        }
        let axis = which % shape.len();
        let v = l.reduced(&[axis], keep, &m).unwrap();
        for idx in all_indices(&shape) {
            let mut out = idx.clone();
            if keep { out[axis] = 0 } else { out.remove(axis); }
            if out.is_empty() { out.push(0); }
            let (a, b) = (l.place(&idx).unwrap(), v.place(&out).unwrap());
            for (i, lv) in v.levels().iter().enumerate() {
                if lv.replicated {
                    prop_assert_eq!(b.pos[i], None);
                } else if l.groups()[axis].iter().all(|s| s.class != crate::layout::Class::Level(i)) {
                    // A level the reduced axis did not use keeps its position.
                    prop_assert_eq!(b.pos[i], a.pos[i], "{} level {}", text, i);
                }
            }
        }
    }
}

#[test]
fn same_cells_reads_through_how_the_sub_axes_are_written() {
    let m = crate::presets::preset("toy4").unwrap();
    let a = bind("((4_PE, 2:2), (2:1))", &m, &[8, 2]);
    let b = bind("((4_PE:1, 2:2, 1:7), (2:1))", &m, &[8, 2]);
    let c = bind("((4_PE, 2:1), (2:2))", &m, &[8, 2]);
    assert!(a.same_cells(&b));
    assert!(!a.same_cells(&c), "the memory order differs");
    let flat = bind("((16:1))", &m, &[16]);
    let split = bind("((2:8, 8:1))", &m, &[16]);
    assert!(flat.same_cells(&split));
}

#[test]
fn worked_views_on_mncore2() {
    let m = crate::presets::preset("mncore2").unwrap();
    // [1,128,768] with the sequence over L2B×MAB, reshaped into 12 heads of 64: the heads
    // are a regrouping of the 768-long memory axis.
    let x = TensorLayout::parse(
        "((1:768), (8_L2B, 16_MAB), (768:1))",
        &m,
        Some(&[1, 128, 768]),
        DType::F32,
    )
    .unwrap();
    let heads = x.reshaped(&[1, 128, 12, 64], &m).unwrap();
    assert_eq!(
        heads.canonical(),
        "((1:1), (8_L2B:1, 16_MAB:1), (12:64), (64:1); B@[L1B,PE])"
    );
    // Heads before the sequence: a transpose of the groups.
    let t = heads.transposed(&[0, 2, 1, 3], &m).unwrap();
    assert_eq!(
        t.canonical(),
        "((1:1), (12:64), (8_L2B:1, 16_MAB:1), (64:1); B@[L1B,PE])"
    );
    // A boundary inside a level's sub-axis splits it: 128 = 8 × 16 over L2B then MAB
    // reshaped to [1024, 96]? 128·768 = 98304 = 1024·96: 1024 = 8_L2B × 16_MAB × 8 of the
    // 768, and the 96 left of it.
    let r = x.reshaped(&[1024, 96], &m).unwrap();
    assert_eq!(
        r.canonical(),
        "((8_L2B:1, 16_MAB:1, 8:96), (96:1); B@[L1B,PE])"
    );
    // A boundary no sub-axis can split at: 128·768 = 3 · 32768, and 3 divides neither 8 nor 16.
    assert!(x.reshaped(&[3, 32768], &m).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_derived_layout_keeps_its_kept_axes_where_they_were_and_its_new_ones_local(
        (m, text, shape) in arb_layout(),
        fresh_len in 1u64..=6,
    ) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        // Every axis but the last kept, the last replaced by a new one (a matrix
        // product's N, a slice's shortened axis).
        let r = shape.len();
        let mut from: Vec<Option<usize>> = (0..r - 1).map(Some).collect();
        from.push(None);
        let mut dims = shape[..r - 1].to_vec();
        dims.push(fresh_len);
        let Some(v) = l.derived(&from, &dims, &m) else {
            return Ok(());
        };
        prop_assert_eq!(v.logical_shape(), dims.as_slice());
        let last_levels: Vec<usize> = (l.groups()[r - 1].iter())
            .filter_map(|s| match s.class { crate::layout::Class::Level(i) => Some(i), _ => None })
            .collect();
        for idx in all_indices(&shape) {
            let a = l.place(&idx).unwrap();
            for j in 0..fresh_len {
                let mut out = idx[..r - 1].to_vec();
                out.push(j);
                let b = v.place(&out).unwrap();
                for (i, lv) in v.levels().iter().enumerate() {
                    if !lv.replicated && !last_levels.contains(&i) {
                        prop_assert_eq!(b.pos[i], a.pos[i], "{} level {}", text, i);
                    }
                }
            }
        }
    }
}

#[test]
fn a_matmul_output_derived_from_its_rows() {
    let m = crate::presets::preset("mncore2").unwrap();
    // x [1,128,768] with the sequence over L2B×MAB: x·W [768,2304] keeps the rows where
    // they are and puts the 2304 columns on each PE, packed as x packs its last axis.
    let x = TensorLayout::parse(
        "((1:384), (8_L2B, 16_MAB), (384:1, 2_W:1))",
        &m,
        Some(&[1, 128, 768]),
        DType::F32,
    )
    .unwrap();
    let y = x
        .derived(&[Some(0), Some(1), None], &[1, 128, 2304], &m)
        .unwrap();
    assert_eq!(
        y.canonical(),
        "((1:1152), (8_L2B:1, 16_MAB:1), (1152:1, 2_W:1); B@[L1B,PE])"
    );
}
