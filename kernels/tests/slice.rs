//! The Slice kernel: output shapes and their errors, worked values, `eval` against the
//! reference on random slices, legality against its definition (every output element at
//! the position of the input element it reads) on random layouts, the messages, cost
//! (one move per output element, no useful FLOP) and the exact tolerance.

mod common;

use common::Rng;
use common::*;
use mnsim_arch::{DType, TensorLayout};
use mnsim_kernels::*;
use proptest::prelude::*;

const F32: DType = DType::F32;

fn slice(start: &[u64], limit: &[u64], stride: &[u64]) -> Kernel {
    Kernel::Slice {
        start: start.to_vec(),
        limit: limit.to_vec(),
        stride: stride.to_vec(),
    }
}

fn err(k: &Kernel, x: &[u64]) -> KernelError {
    output_shape(k, &[x]).expect_err("should fail")
}

#[test]
fn shapes_and_their_errors() {
    // ceil((limit − start) / stride) per axis.
    let k = slice(&[0, 1, 2], &[4, 7, 3], &[1, 2, 5]);
    assert_eq!(output_shape(&k, &[&[4, 8, 3]]).unwrap(), vec![4, 3, 1]);
    // The fused QKV split: the middle third of the last axis.
    let k = slice(&[0, 768], &[128, 1536], &[1, 1]);
    assert_eq!(output_shape(&k, &[&[128, 2304]]).unwrap(), vec![128, 768]);
    // An empty range gives an empty axis; a rank-0 input slices nothing.
    let k = slice(&[3], &[3], &[1]);
    assert_eq!(output_shape(&k, &[&[5]]).unwrap(), vec![0]);
    assert_eq!(
        output_shape(&slice(&[], &[], &[]), &[&[]]).unwrap(),
        Vec::<u64>::new()
    );

    let e = err(&slice(&[0], &[4], &[1]), &[4, 4]);
    assert_eq!(e.kind, ErrorKind::Rank);
    assert_eq!(
        e.message,
        "Slice: `start` has 1 entries, but `x` [4,4] has 2 axes (one entry per axis)"
    );
    let e = err(&slice(&[0, 0], &[4, 4], &[1]), &[4, 4]);
    assert_eq!(e.kind, ErrorKind::Rank);
    assert!(e.message.contains("`stride` has 1 entries"), "{e}");
    let e = err(&slice(&[0, 3], &[4, 2], &[1, 1]), &[4, 4]);
    assert_eq!(e.kind, ErrorKind::Axis);
    assert_eq!(
        e.message,
        "Slice: axis 1 of `x` [4,4]: 3:2:1 (start:limit:stride) does not fit: the start 3 is past the limit 2"
    );
    let e = err(&slice(&[0, 0], &[5, 4], &[1, 1]), &[4, 4]);
    assert!(
        e.message
            .contains("axis 0 of `x` [4,4]: 0:5:1 (start:limit:stride) does not fit: the limit 5 is past the axis's length 4"),
        "{e}"
    );
    let e = err(&slice(&[0, 0], &[4, 4], &[1, 0]), &[4, 4]);
    assert!(e.message.contains("the stride must be at least 1"), "{e}");
    // The wrong number of inputs, and none at all.
    let e = output_shape(&slice(&[0], &[1], &[1]), &[&[2], &[2]]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Arity);
    let e = output_shape(&slice(&[0], &[1], &[1]), &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Arity);
    // Huge bounds are errors, not overflows.
    let e = err(&slice(&[u64::MAX], &[u64::MAX], &[u64::MAX]), &[4]);
    assert!(e.message.contains("past the axis's length"), "{e}");
    let k = slice(&[0], &[u64::MAX], &[u64::MAX]);
    assert_eq!(output_shape(&k, &[&[u64::MAX]]).unwrap(), vec![1]);
}

#[test]
fn worked_values() {
    // x = [[0,1,2,3,4],[10,11,12,13,14],[20,...],[30,...]].
    let x: Vec<f64> = (0..4)
        .flat_map(|r| (0..5).map(move |c| (10 * r + c) as f64))
        .collect();
    let v = reference(&slice(&[1, 1], &[4, 5], &[2, 3]), &[(&[4, 5], &x)], &[2, 2]);
    assert_eq!(v, vec![11.0, 14.0, 31.0, 34.0]);
    let v = reference(&slice(&[0, 2], &[4, 3], &[1, 1]), &[(&[4, 5], &x)], &[4, 1]);
    assert_eq!(v, vec![2.0, 12.0, 22.0, 32.0]);
    // Unaligned, stride 1: rows 1..3, columns 1..4.
    let v = reference(&slice(&[1, 1], &[3, 4], &[1, 1]), &[(&[4, 5], &x)], &[2, 3]);
    assert_eq!(v, vec![11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
    // The whole tensor is itself.
    let v = reference(&slice(&[0, 0], &[4, 5], &[1, 1]), &[(&[4, 5], &x)], &[4, 5]);
    assert_eq!(v, x);
    // A stride larger than the range reads its start only; NaN and −0 copy as they are.
    let y = [f64::NAN, -0.0, 7.0];
    let v = reference(&slice(&[1], &[3], &[5]), &[(&[3], &y)], &[1]);
    assert!(v[0] == 0.0 && v[0].is_sign_negative());
    let v = reference(&slice(&[0], &[3], &[2]), &[(&[3], &y)], &[2]);
    assert!(v[0].is_nan() && v[1] == 7.0);
    // eval reads input element start + stride·h.
    let k = slice(&[1, 1], &[4, 5], &[2, 3]);
    let mut read = Vec::new();
    let got = eval(
        &k,
        &[1, 1],
        &mut |i, at| {
            read.push((i, at.to_vec()));
            x[at[0] as usize * 5 + at[1] as usize]
        },
        &|_| 0..0,
        &[&[4, 5]],
    );
    assert_eq!((got, read), (34.0, vec![(0, vec![3, 4])]));
}

/// A random slice of a random shape (rank 0 to 4, some axes kept whole).
fn random_slice(rng: &mut Rng) -> (Vec<u64>, Kernel) {
    let rank = rng.range(0, 5) as usize;
    let dims = rng.shape(rank, 7);
    let (mut s, mut l, mut t) = (Vec::new(), Vec::new(), Vec::new());
    for &d in &dims {
        if rng.range(0, 4) == 0 {
            s.push(0);
            l.push(d);
            t.push(1);
            continue;
        }
        let a = rng.range(0, d + 1);
        let b = rng.range(a, d + 1);
        s.push(a);
        l.push(b);
        t.push(rng.range(1, 5));
    }
    (dims, slice(&s, &l, &t))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// `eval` at every output index equals the reference, and both read input element
    /// `start + stride·h` (checked against the definition on the input's values).
    #[test]
    fn eval_matches_the_reference_and_the_definition(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let (dims, k) = random_slice(&mut rng);
        let Kernel::Slice { start, limit, stride } = &k else { unreachable!() };
        let out = output_shape(&k, &[&dims]).unwrap();
        for a in 0..dims.len() {
            // The last index read is below the limit, the next one is not.
            if out[a] == 0 {
                prop_assert_eq!(start[a], limit[a]);
            } else {
                prop_assert!(start[a] + stride[a] * (out[a] - 1) < limit[a]);
                prop_assert!(start[a] + stride[a] * out[a] >= limit[a]);
            }
        }
        let x = rng.values(numel(&dims));
        let want = reference(&k, &[(&dims, &x)], &out);
        prop_assert_eq!(want.len() as u64, numel(&out));
        for (l, idx) in indices(&out).iter().enumerate() {
            let src: Vec<u64> = (0..dims.len()).map(|a| start[a] + stride[a] * idx[a]).collect();
            prop_assert_eq!(want[l], x[linear(&dims, &src)]);
            let got = eval(&k, idx, &mut |_, at| x[linear(&dims, at)], &|_| 0..0, &[&dims]);
            prop_assert_eq!(got, want[l], "{:?} at {:?}", k, idx);
        }
    }
}

/// Legality by its definition: at every level, the input is replicated or the output
/// element sits where the input element it reads does (and is not replicated there).
fn legal_by_definition(k: &Kernel, x: &TensorLayout, o: &TensorLayout) -> bool {
    let Kernel::Slice { start, stride, .. } = k else {
        unreachable!()
    };
    indices(o.logical_shape()).iter().all(|h| {
        let src: Vec<u64> = (0..h.len()).map(|a| start[a] + stride[a] * h[a]).collect();
        let (pi, po) = (x.place(&src).unwrap().pos, o.place(h).unwrap().pos);
        pi.iter().zip(&po).all(|(i, o)| match (i, o) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(i), Some(o)) => i == o,
        })
    })
}

/// A random slice of a 1-D or 2-D input on `mini`, and random layouts of both.
fn random_case(rng: &mut Rng) -> Option<(Kernel, TensorLayout, TensorLayout)> {
    let m = mini();
    let rank = rng.range(1, 3) as usize;
    let sizes = [2u64, 4, 6, 8, 12, 16];
    let padded: Vec<u64> = (0..rank).map(|_| sizes[rng.range(0, 6) as usize]).collect();
    let logical: Vec<u64> = padded
        .iter()
        .map(|&d| d - rng.range(0, 2) * rng.range(0, 2))
        .collect();
    let (mut s, mut l, mut t) = (Vec::new(), Vec::new(), Vec::new());
    for &d in &logical {
        let (a, b, k) = match rng.range(0, 4) {
            0 => (0, d, 1),
            // An aligned block, as the QKV split takes.
            1 => {
                let parts = [1u64, 2, 3, 4].map(|p| if d.is_multiple_of(p) { p } else { 1 });
                let p = parts[rng.range(0, 4) as usize];
                let i = rng.range(0, p);
                (i * d / p, (i + 1) * d / p, 1)
            }
            _ => {
                let a = rng.range(0, d);
                (a, rng.range(a + 1, d + 1), rng.range(1, 4))
            }
        };
        s.push(a);
        l.push(b);
        t.push(k);
    }
    let k = slice(&s, &l, &t);
    let out = output_shape(&k, &[&logical]).unwrap();
    // The output's padded shape: its logical one, or rounded up to even.
    let out_padded: Vec<u64> = out
        .iter()
        .map(|&d| if rng.range(0, 3) == 0 { d + d % 2 } else { d })
        .collect();
    let xt = random_layout(rng, &padded, &logical);
    let ot = random_layout(rng, &out_padded, &out);
    let x = TensorLayout::parse(&xt, &m, Some(&logical), F32).ok()?;
    let o = TensorLayout::parse(&ot, &m, Some(&out), F32).ok()?;
    Some((k, x, o))
}

#[test]
fn legality_is_its_definition_on_random_layouts() {
    let m = mini();
    let (mut legal, mut illegal) = (0, 0);
    for seed in 0..3000u64 {
        let mut rng = Rng(seed);
        let Some((k, x, o)) = random_case(&mut rng) else {
            continue;
        };
        let want = legal_by_definition(&k, &x, &o);
        let got = check(&k, &[&x], &o, &m, &[]);
        let ctx = format!("{k:?}: x {} out {}", x.canonical(), o.canonical());
        assert_eq!(got.is_ok(), want, "{ctx}: {got:?}");
        assert_eq!(is_legal(&k, &[&x], &o, &m), want, "{ctx}");
        match got {
            Ok(l) => {
                assert!(l.partial.is_empty());
                assert_eq!(l.unit, Unit::Pe);
                legal += 1;
            }
            Err(e) => {
                assert!(
                    matches!(e.kind, ErrorKind::Illegal { operand: 0, .. }),
                    "{ctx}: {e:?}"
                );
                assert!(e.message.starts_with("Slice: "), "{e}");
                assert!(e.message.contains("Relayout `x`"), "{e}");
                illegal += 1;
            }
        }
    }
    assert!(
        legal >= 200 && illegal >= 200,
        "{legal} legal, {illegal} illegal cases"
    );
}

#[test]
fn what_a_layout_may_split() {
    let m = mini();
    let k = slice(&[4], &[8], &[1]);
    // The middle third of [12] split (3, 2_PE, 2): the block lands on the PEs the
    // output's (2_PE, 2) names, so a block-aligned axis may stay split.
    let x = lay("((3, 2_PE, 2); B@[L1B,MAB])", &m, &[12], F32);
    let o = lay("((2_PE, 2); B@[L1B,MAB])", &m, &[4], F32);
    assert!(check(&k, &[&x], &o, &m, &[]).is_ok());
    // Split on its major digit, elements 4..8 sit on PEs 0, 0, 1, 1 as the output's
    // do; elements 2..6 all sit on PE 0.
    let x = lay("((2_PE, 6); B@[L1B,MAB])", &m, &[12], F32);
    assert!(check(&k, &[&x], &o, &m, &[]).is_ok());
    let k = slice(&[2], &[6], &[1]);
    let e = check(&k, &[&x], &o, &m, &["qkv", "q"]).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::Illegal {
            operand: 0,
            level: 2
        }
    );
    assert_eq!(
        e.message,
        "Slice: output element 2 of axis 0 of `q` = (2_PE:1, 2:1) is at PE position 1, but it reads element 4 \
         of `qkv`'s axis 0 = (2_PE:1, 6:1), at PE position 0; every element must stay where it is. Relayout \
         `qkv` to keep its axis 0 (sliced 2:6:1) unsplit over PE, as well as the output's axis 0 (no PE sub-axis \
         in either: memory, W or Time), or replicate it over PE (drop its PE sub-axes and add PE to B@: \
         B@[L1B,MAB,PE])"
    );
    // Both whole on the PE, or the input replicated: legal.
    let k = slice(&[4], &[8], &[1]);
    let o1 = lay("((1_PE, 4); B@[L1B,MAB])", &m, &[4], F32);
    let x1 = lay("((1_PE, 12); B@[L1B,MAB])", &m, &[12], F32);
    assert!(check(&k, &[&x1], &o1, &m, &[]).is_ok());
    let xr = lay("((12); B@[L1B,MAB,PE])", &m, &[12], F32);
    assert!(check(&k, &[&xr], &o, &m, &[]).is_ok());
    // A stride that steps over a minor split: every other element is on PE 0.
    let k2 = slice(&[0], &[12], &[2]);
    let x2 = lay("((6, 2_PE); B@[L1B,MAB])", &m, &[12], F32);
    let o2 = lay("((1_PE, 6); B@[L1B,MAB])", &m, &[6], F32);
    assert!(check(&k2, &[&x2], &o2, &m, &[]).is_ok());
    let k3 = slice(&[1], &[12], &[2]);
    let e = check(&k3, &[&x2], &o2, &m, &[]).unwrap_err();
    assert!(
        e.message
            .contains("is at PE position 0, but it reads element 1"),
        "{e}"
    );
    // An axis the slice keeps whole splits like an elementwise one.
    let k4 = slice(&[0, 1], &[4, 3], &[1, 1]);
    let x4 = lay("((2_L1B, 2), (6); B@[MAB,PE])", &m, &[4, 6], F32);
    let o4 = lay("((2_L1B, 2), (2); B@[MAB,PE])", &m, &[4, 2], F32);
    assert!(check(&k4, &[&x4], &o4, &m, &[]).is_ok());
    let o5 = lay("((2, 2_L1B), (2); B@[MAB,PE])", &m, &[4, 2], F32);
    let e = check(&k4, &[&x4], &o5, &m, &[]).unwrap_err();
    assert!(
        e.message
            .contains("Relayout `x` to split its axis 0 over L1B like the output's axis 0"),
        "{e}"
    );
    // The output replicated over a level where the input is split.
    let o6 = lay("((4), (2); B@[L1B,MAB,PE])", &m, &[4, 2], F32);
    let e = check(&k4, &[&x4], &o6, &m, &[]).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::Illegal {
            operand: 0,
            level: 0
        }
    );
    assert!(
        e.message
            .contains("the output `out` is replicated over L1B but input `x` is not"),
        "{e}"
    );
    // Layouts that do not fit the kernel's shapes.
    let e = check(&k4, &[&x4], &o1, &m, &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Layout);
}

#[test]
fn cost_is_one_move_per_output_element_and_no_useful_flop() {
    let m = machine("toy4");
    let x = lay("((4_PE, 2), (8))", &m, &[8, 8], F32);
    // Columns 1..7 step 2: [8,3], two rows of three per PE.
    let k = slice(&[0, 1], &[8, 7], &[1, 2]);
    let o = lay("((4_PE, 2), (3))", &m, &[8, 3], F32);
    let l = check(&k, &[&x], &o, &m, &[]).unwrap();
    let c = cost(&k, &[&x], &o, &l, &m, F32, None).unwrap();
    let rate = m.compute.vector[&F32];
    assert_eq!(c.cycles, (6.0 / rate).ceil() as u64);
    assert_eq!((c.flops, c.unit), (0, "vector"));
    assert!(k.moves_data());
    assert_eq!(k.flops_per_element(), (0, 1));
    // The moves are those of the output: the input's size does not matter.
    let big = lay("((4_PE, 2), (64))", &m, &[8, 64], F32);
    let kb = slice(&[0, 10], &[8, 15], &[1, 2]);
    let l = check(&kb, &[&big], &o, &m, &[]).unwrap();
    assert_eq!(
        cost(&kb, &[&big], &o, &l, &m, F32, None).unwrap().cycles,
        c.cycles
    );
}

#[test]
fn a_slice_is_exact_in_every_dtype() {
    let k = slice(&[0], &[4], &[2]);
    for d in DType::ALL {
        assert_eq!(tolerance(d, &k, 1), (0.0, 0.0), "{d}");
    }
    assert!(tolerance(F32, &Kernel::Reshape { shape: vec![4] }, 1).0 > 0.0);
    assert_eq!(k.to_string(), "Slice");
    assert_eq!((k.name(), k.arity()), ("Slice", 1));
    assert!(reduced_extents(&k, &[&[4]]).unwrap().is_empty());
}
