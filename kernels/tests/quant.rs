//! Low-precision types and quantisation: the 8-bit floats and 4-bit integers round as
//! their definitions say, Quantize/Dequantize agree with a plain formula and with their
//! per-element evaluation, and mixed precision picks the documented compute dtype.

mod common;

use common::*;
use mnsim_arch::DType;
use mnsim_kernels::elem::{read, write};
use mnsim_kernels::precision::{compute_dtype, matrix_rate, vector_rate};
use mnsim_kernels::*;
use proptest::prelude::*;

/// `v` stored in `d` and read back.
fn round(d: DType, v: f64) -> f64 {
    let mut b = [0u8; 8];
    write(d, v, &mut b[..d.bytes() as usize]);
    read(d, &b[..d.bytes() as usize])
}

/// Every finite value of an 8-bit float type, from its 256 patterns.
fn values(d: DType) -> Vec<f64> {
    (0..=255u8)
        .map(|b| read(d, &[b]))
        .filter(|v| v.is_finite())
        .collect()
}

/// Whether `v`'s pattern in `d` has an even mantissa (its lowest bit clear).
fn even(d: DType, v: f64) -> bool {
    let mut b = [0u8];
    write(d, v, &mut b);
    b[0] & 1 == 0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// f8: the nearest value of the type (ties to the even pattern), saturating at the
    /// largest finite value; found by brute force over all patterns.
    #[test]
    fn f8_rounds_to_nearest_even_and_saturates(x in -70000.0f64..70000.0, small in -1.0f64..1.0, pick in 0usize..2) {
        for d in [DType::F8E4M3, DType::F8E5M2] {
            let (lo, hi) = d.range();
            for v in [x, small, small * 1e-3] {
                let got = round(d, v);
                let vals = values(d);
                if v > hi || v < lo {
                    prop_assert_eq!(got, if v > 0.0 { hi } else { lo });
                    continue;
                }
                let best = vals.iter().map(|c| (c - v).abs()).fold(f64::INFINITY, f64::min);
                prop_assert_eq!((got - v).abs(), best, "{} {} -> {}", d, v, got);
                let ties: Vec<f64> = vals.iter().copied().filter(|c| (c - v).abs() == best && *c != 0.0).collect();
                if ties.len() == 2 {
                    prop_assert!(even(d, got), "{} {}: tie went to {}", d, v, got);
                }
            }
            let _ = pick;
        }
    }

    /// s4, u4, s8, u8: whole values saturate to the range; stored one per byte.
    #[test]
    fn small_integers_saturate(v in -300i32..300) {
        for d in [DType::S4, DType::U4, DType::S8, DType::U8] {
            let (lo, hi) = d.range();
            prop_assert_eq!(round(d, v as f64), (v as f64).clamp(lo, hi));
            prop_assert_eq!(d.bytes(), 1);
        }
    }

    /// Quantize then Dequantize (static, per tensor): within half a scale step of the
    /// input where the input is in range, the quantised value saturated otherwise; the
    /// per-element evaluation equals the whole-tensor reference.
    #[test]
    fn quantize_dequantize_round_trip(
        xs in prop::collection::vec(-10.0f64..10.0, 1..40),
        scale in 0.01f64..2.0,
        zp in -4i32..5,
        qtype in prop::sample::select(vec![DType::S8, DType::U8, DType::S4, DType::U4]),
    ) {
        let zp = if qtype == DType::U8 || qtype == DType::U4 { zp.abs() } else { zp } as f64;
        let n = xs.len() as u64;
        let q = Quant {
            dir: QuantDir::Quantize,
            qtype,
            params: QuantParams::Static { axis: None, scales: vec![scale], zps: vec![zp] },
        };
        let dq = Quant { dir: QuantDir::Dequantize, ..q.clone() };
        let qk = Kernel::Quant(q);
        let quantised: Vec<f64> = reference(&qk, &[(&[n], &xs)], &[n])
            .into_iter()
            .map(|v| round(qtype, v))
            .collect();
        let back = reference(&Kernel::Quant(dq), &[(&[n], &quantised)], &[n]);
        let (lo, hi) = qtype.range();
        for ((&x, &qv), &b) in xs.iter().zip(&quantised).zip(&back) {
            let ideal = (x / scale).round_ties_even() + zp;
            prop_assert_eq!(qv, ideal.clamp(lo, hi));
            if (lo..=hi).contains(&ideal) {
                prop_assert!((b - x).abs() <= scale / 2.0 + 1e-12, "{} -> {} -> {}", x, qv, b);
            }
        }
        for (i, &want) in reference(&qk, &[(&[n], &xs)], &[n]).iter().enumerate() {
            let got = eval(&qk, &[i as u64], &mut |_, idx| xs[idx[0] as usize], &|_| 0..0, &[&[n]]);
            prop_assert_eq!(got, want);
        }
    }

    /// Per-channel static scales and dynamic broadcast scales and zero points give the
    /// formula at every element.
    #[test]
    fn per_channel_and_dynamic_match_the_formula(
        c in 1u64..5,
        w in 1u64..5,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed);
        let x: Vec<f64> = (0..c * w).map(|_| (rng.range(0, 200) as f64 - 100.0) / 7.0).collect();
        let scales: Vec<f64> = (0..c).map(|i| 0.5 + i as f64).collect();
        let zps: Vec<f64> = (0..c).map(|i| i as f64 - 1.0).collect();
        let stat = Kernel::Quant(Quant {
            dir: QuantDir::Quantize,
            qtype: DType::S8,
            params: QuantParams::Static { axis: Some(0), scales: scales.clone(), zps: zps.clone() },
        });
        let got = reference(&stat, &[(&[c, w], &x)], &[c, w]);
        // Dynamic: scales and zero points [c, 1] broadcast along the second axis.
        let dynamic = Kernel::Quant(Quant {
            dir: QuantDir::Quantize,
            qtype: DType::S8,
            params: QuantParams::Dynamic { zps: true },
        });
        let got_dyn = reference(&dynamic, &[(&[c, w], &x), (&[c, 1], &scales), (&[c, 1], &zps)], &[c, w]);
        for i in 0..c {
            for j in 0..w {
                let l = (i * w + j) as usize;
                let want = (x[l] / scales[i as usize]).round_ties_even() + zps[i as usize];
                prop_assert_eq!(got[l], want);
                prop_assert_eq!(got_dyn[l], want);
            }
        }
    }
}

#[test]
fn f8_worked_values() {
    assert_eq!(round(DType::F8E4M3, 0.3), 0.3125);
    assert_eq!(round(DType::F8E5M2, 0.3), 0.3125);
    assert_eq!(round(DType::F8E4M3, 300.0), 288.0);
    assert_eq!(round(DType::F8E5M2, 300.0), 320.0);
    assert_eq!(round(DType::F8E4M3, 1e-4), 0.0);
    assert_eq!(round(DType::F8E4M3, 0.002), 0.001953125);
    assert_eq!(DType::F8E4M3.range(), (-448.0, 448.0));
}

#[test]
fn quant_shapes_legality_and_cost() {
    let m = machine("toy4");
    let q = |axis, scales: Vec<f64>| {
        Kernel::Quant(Quant {
            dir: QuantDir::Quantize,
            qtype: DType::U8,
            params: QuantParams::Static {
                axis,
                scales,
                zps: vec![],
            },
        })
    };
    // Scales of the wrong length, an axis out of range, a zero scale.
    let e = output_shape(&q(Some(1), vec![1.0; 3]), &[&[4, 8]]).unwrap_err();
    assert!(
        e.message
            .contains("Quantize: 3 scales given, but [4,8] needs 8 (one per position of axis 1)"),
        "{e}"
    );
    let e = output_shape(&q(Some(2), vec![1.0]), &[&[4, 8]]).unwrap_err();
    assert!(e.message.contains("axis 2 is out of range"), "{e}");
    let e = output_shape(&q(None, vec![0.0]), &[&[4, 8]]).unwrap_err();
    assert!(e.message.contains("not a finite non-zero"), "{e}");
    // Dynamic scales that do not broadcast.
    let dynq = Kernel::Quant(Quant {
        dir: QuantDir::Dequantize,
        qtype: DType::S8,
        params: QuantParams::Dynamic { zps: false },
    });
    let e = output_shape(&dynq, &[&[4, 8], &[3]]).unwrap_err();
    assert!(e.message.contains("the scales [3] do not broadcast"), "{e}");
    assert_eq!(
        output_shape(&dynq, &[&[4, 8], &[4, 1]]).unwrap(),
        vec![4, 8]
    );

    // Legal on matching layouts; the vector unit at the f32 rate (the real side); 5 FLOP
    // per element for Quantize.
    let x = lay("((4_PE), (8))", &m, &[4, 8], DType::F32);
    let o = lay("((4_PE), (8))", &m, &[4, 8], DType::U8);
    let k = q(Some(1), vec![0.5; 8]);
    let l = check(&k, &[&x], &o, &m, &[]).unwrap();
    assert_eq!(l.unit, Unit::Pe);
    let c = cost(&k, &[&x], &o, &l, &m, DType::U8, None).unwrap();
    assert_eq!((c.flops, c.unit), (5 * 32, "vector"));
    // 8 elements per PE × 5 FLOP at toy4's f32 vector rate 2 = 20 cycles.
    assert_eq!(c.cycles, 20);
    // The output in another type than the kernel's quantised one.
    let o8 = lay("((4_PE), (8))", &m, &[4, 8], DType::S8);
    let e = cost(&k, &[&x], &o8, &l, &m, DType::S8, None).unwrap_err();
    assert!(
        e.message
            .contains("the output is s8, but the kernel quantises to u8"),
        "{e}"
    );
    // Dynamic scales split unlike the output: illegal, naming the relayout.
    let s = lay("((4_PE), (1))", &m, &[4, 1], DType::F32);
    let xs = lay("((4_PE), (8))", &m, &[4, 8], DType::S8);
    let of = lay("((4_PE), (8))", &m, &[4, 8], DType::F32);
    check(&dynq, &[&xs, &s], &of, &m, &[]).unwrap();
    let s_rep = lay("((4), (1); B@[PE])", &m, &[4, 1], DType::F32);
    check(&dynq, &[&xs, &s_rep], &of, &m, &[]).unwrap();
    let cols = lay("((1), (4_PE, 2))", &m, &[1, 8], DType::F32);
    let e = check(&dynq, &[&xs, &cols], &of, &m, &[]).unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::Illegal { operand: 1, .. }),
        "{e}"
    );
    assert!(e.message.contains("`scales`"), "{e}");
}

#[test]
fn mixed_precision_compute_dtypes_and_rates() {
    let m = machine("mncore2");
    // bf16 operands, f32 result on toy4: the matrix unit's bf16 mode (tile 1×4×8 at 16
    // FLOP/cycle): per PE 2 rows × 8 columns × K 8 = 4 tiles × 4 cycles; in f32 it would
    // be 8 tiles of 1×4×4 × 4 cycles.
    let t4 = machine("toy4");
    let a = lay("((4_PE, 2), (8))", &t4, &[8, 8], DType::BF16);
    let b = lay("((8), (8); B@[PE])", &t4, &[8, 8], DType::BF16);
    let o = lay("((4_PE, 2), (8))", &t4, &[8, 8], DType::F32);
    let l = check(&Kernel::MatMul, &[&a, &b], &o, &t4, &[]).unwrap();
    assert_eq!(l.unit, Unit::Mab);
    let c = cost(&Kernel::MatMul, &[&a, &b], &o, &l, &t4, DType::F32, None).unwrap();
    assert_eq!((c.cycles, c.flops, c.unit), (16, 1024, "matrix"));
    assert_eq!(
        compute_dtype(&Kernel::MatMul, &[DType::BF16, DType::BF16], DType::F32),
        DType::BF16
    );
    // The presets give the 8-bit types the FP16 matrix rate and tile (assumed).
    let (t, f, tile) = matrix_rate(&m, DType::S8).unwrap();
    assert_eq!((t, f), (DType::S8, 512.0));
    assert_eq!(tile, m.compute.matrix.tile[&DType::F16]);
    // A machine without them runs 8-bit at f16, 4-bit through 8-bit.
    let mut bare = m.clone();
    bare.compute.matrix.flops.retain(|d, _| d.bits() >= 16);
    bare.compute.matrix.tile.retain(|d, _| d.bits() >= 16);
    bare.compute
        .vector
        .retain(|d, _| d.is_float() && d.bits() >= 16);
    assert_eq!(matrix_rate(&bare, DType::U4).unwrap().0, DType::F16);
    assert_eq!(matrix_rate(&bare, DType::F8E5M2).unwrap().0, DType::F16);
    assert_eq!(vector_rate(&bare, DType::S32).unwrap(), (DType::F32, 4.0));
    assert_eq!(vector_rate(&bare, DType::S64).unwrap(), (DType::F64, 1.0));
}
