//! The Reshape kernel's legality against its definition on random layouts: at every
//! level, the input is replicated or every element sits in the output where it sits in
//! the input (and the output is not replicated there). The check visits only the first
//! element of each block where both positions are constant; this compares it with the
//! definition, element by element.

mod common;

use common::Rng;
use common::*;
use mnsim_arch::{DType, TensorLayout};
use mnsim_kernels::*;

const F32: DType = DType::F32;

/// Legality by its definition: every element of the input, at its row-major index,
/// is where the output puts the element of that index.
fn legal_by_definition(x: &TensorLayout, o: &TensorLayout) -> bool {
    let (a, b) = (x.logical_shape(), o.logical_shape());
    indices(a).iter().all(|i| {
        let mut t = linear(a, i) as u64;
        let mut j = vec![0u64; b.len()];
        for ax in (0..b.len()).rev() {
            j[ax] = t % b[ax];
            t /= b[ax];
        }
        let (pi, po) = (x.place(i).unwrap().pos, o.place(&j).unwrap().pos);
        pi.iter().zip(&po).all(|(i, o)| match (i, o) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(i), Some(o)) => i == o,
        })
    })
}

/// `n` as `rank` random factors.
fn factors(rng: &mut Rng, mut n: u64, rank: usize) -> Vec<u64> {
    let mut v = Vec::with_capacity(rank);
    for _ in 1..rank {
        let divs: Vec<u64> = (1..=n).filter(|d| n.is_multiple_of(*d)).collect();
        let d = divs[rng.range(0, divs.len() as u64) as usize];
        v.push(d);
        n /= d;
    }
    v.push(n);
    v
}

/// A random reshape of a 1-D to 3-D input on `mini`, and random layouts of both (each
/// logical shape sometimes padded).
fn random_case(rng: &mut Rng) -> Option<(Kernel, TensorLayout, TensorLayout)> {
    let m = mini();
    let sizes = [1u64, 2, 3, 4, 6, 8, 12, 16];
    let rank = rng.range(1, 4) as usize;
    let dims: Vec<u64> = (0..rank)
        .map(|_| sizes[rng.range(0, sizes.len() as u64) as usize])
        .collect();
    let total: u64 = dims.iter().product();
    let out_rank = rng.range(1, 4) as usize;
    let out = factors(rng, total, out_rank);
    let pad = |rng: &mut Rng, s: &[u64]| -> Vec<u64> {
        s.iter()
            .map(|&d| if rng.range(0, 4) == 0 { d + d % 2 } else { d })
            .collect()
    };
    let (xp, op) = (pad(rng, &dims), pad(rng, &out));
    let xt = random_layout(rng, &xp, &dims);
    let ot = random_layout(rng, &op, &out);
    let x = TensorLayout::parse(&xt, &m, Some(&dims), F32).ok()?;
    let o = TensorLayout::parse(&ot, &m, Some(&out), F32).ok()?;
    Some((Kernel::Reshape { shape: out }, x, o))
}

#[test]
fn legality_is_its_definition_on_random_layouts() {
    let m = mini();
    let (mut legal, mut illegal) = (0, 0);
    for seed in 0..4000u64 {
        let mut rng = Rng(seed);
        let Some((k, x, o)) = random_case(&mut rng) else {
            continue;
        };
        let want = legal_by_definition(&x, &o);
        let got = check(&k, &[&x], &o, &m, &[]);
        let ctx = format!("{k:?}: x {} out {}", x.canonical(), o.canonical());
        assert_eq!(got.is_ok(), want, "{ctx}: {got:?}");
        assert_eq!(is_legal(&k, &[&x], &o, &m), want, "{ctx}");
        match got {
            Ok(_) => legal += 1,
            Err(e) => {
                assert!(
                    matches!(e.kind, ErrorKind::Illegal { operand: 0, .. }),
                    "{ctx}: {e:?}"
                );
                assert!(e.message.starts_with("Reshape"), "{e}");
                illegal += 1;
            }
        }
    }
    assert!(
        legal >= 200 && illegal >= 200,
        "{legal} legal, {illegal} illegal cases"
    );
}

/// The message names the first element (row-major) that moves, as a check of every
/// element would: here element [0, 1] of `x` (split over the PEs along its last axis)
/// lands in the output's row 0, which the output keeps on PE 0.
#[test]
fn the_first_element_that_moves_is_named() {
    let m = mini();
    let x = lay("((4), (2_PE, 2); B@[L1B,MAB])", &m, &[4, 4], F32);
    let o = lay("((2_PE, 8); B@[L1B,MAB])", &m, &[16], F32);
    let k = Kernel::Reshape { shape: vec![16] };
    let e = check(&k, &[&x], &o, &m, &[]).unwrap_err();
    assert!(
        e.message
            .contains("element [0,2] of `x` is at PE position 1"),
        "{e}"
    );
    // Split alike (the row-major halves on the two PEs), it is legal.
    let x = lay("((2_PE, 2), (4); B@[L1B,MAB])", &m, &[4, 4], F32);
    assert!(check(&k, &[&x], &o, &m, &[]).is_ok());
}
