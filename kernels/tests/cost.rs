//! Compute cost: hand-computed vector kernels, matmul peaks on the real presets, and
//! "never above peak" on random legal layouts.

mod common;

use common::*;
use mnsim_arch::{DType, Machine, TensorLayout};
use mnsim_kernels::*;

fn legal_cost(
    k: &Kernel,
    ins: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
    dtype: DType,
) -> (Legality, KernelCost) {
    let l = check(k, ins, out, m, &[]).unwrap_or_else(|e| panic!("{k}: {e}"));
    let c = cost(k, ins, out, &l, m, dtype, None).unwrap_or_else(|e| panic!("{k}: {e}"));
    (l, c)
}

/// A square matmul C[n,n] = A[n,n]·B[n,n] laid out as given; asserts it is legal, not
/// partial, within peak and at least `min` of it. Returns the fraction of peak.
fn matmul_peak(m: &Machine, dtype: DType, n: u64, a: &str, b: &str, c: &str, min: f64) -> f64 {
    let (la, lb, lc) = (
        lay(a, m, &[n, n], dtype),
        lay(b, m, &[n, n], dtype),
        lay(c, m, &[n, n], dtype),
    );
    let (l, cost) = legal_cost(&Kernel::MatMul, &[&la, &lb], &lc, m, dtype);
    assert_eq!(l.unit, Unit::Mab);
    assert!(l.partial.is_empty());
    assert_eq!(cost.unit, "matrix");
    assert_eq!(cost.flops, 2 * n * n * n);
    let peak = m.compute.matrix.flops[&dtype] * m.matrix_units() as f64;
    assert_eq!(cost.peak_flops_per_cycle, peak);
    let frac = cost.flops_per_cycle() / peak;
    assert!(
        frac <= 1.0,
        "{} {dtype}: {frac} of peak: above peak",
        m.name
    );
    assert!(
        frac >= min,
        "{} {dtype}: only {frac} of peak ({} cycles)",
        m.name,
        cost.cycles
    );
    // Every operand fits the PE's memory (binding checks the footprint; say it here too).
    for l in [&la, &lb, &lc] {
        assert!(l.footprint_words() * m.word_bytes <= m.leaf_memory_bytes());
    }
    frac
}

// ---- The peak layouts -------------------------------------------------------------
//
// C[8192,8192] = A[8192,8192] · B[8192,8192] on mncore2 (L2B 8 → L1B 8 → MAB 16 → PE 4;
// 1024 MABs, each with a matrix unit). The recipe:
//
// * Split C's rows M over L2B × MAB (8 × 16 = 128 ways) and its columns N over L1B
//   (8 ways): each MAB owns a 64 × 1024 block of C, and the blocks tile C exactly once.
// * A must be where C's rows are: A splits M the same way over L2B × MAB, and is
//   replicated over L1B (A has no N, and every L1B needs the rows of its L2B).
// * B must be where C's columns are: B splits N over L1B, replicated over L2B and MAB.
// * Nothing splits the contraction above the MAB, so nothing is partial; the whole of K
//   sits inside each MAB.
// * Below the MAB anything goes: the 4 PEs of a MAB split C's rows (and B's columns);
//   that only decides which LM holds what.
// * Per MAB: M_u = 64, N_u = 1024, K_u = 8192, multiples of the f16 tile 4 × 16 × 16,
//   so no tile is padded: cycles = 16 · 64 · 512 tiles × 4 cycles = 2,097,152, and
//   2 · 8192³ FLOP / 2,097,152 cycles = 524,288 FLOP/cycle: 100% of peak.
// * LM: 4 f16 per 8-byte word (`4_W`) and `Time` steps keep one step's slice per PE
//   small: C 16 × 32 = 512 words, A 16 × 32 = 512 words, B 32 × 8 = 256 words of the
//   4096-word (32 KiB) LM.
//
// f32 and f64 use the same plan with 2 and 1 elements per word (more words per step),
// their tiles 4 × 4 × 8 and 4 × 4 × 2 divide the blocks too. mncore1 (L2B 16 → L1B 8 →
// MAB 16 → PE 4, 2048 MABs) splits M over L2B × MAB 256 ways: M_u = 32.

const N: u64 = 8192;

#[test]
fn mncore2_f16_matmul_reaches_peak() {
    let m = machine("mncore2");
    let f = matmul_peak(
        &m,
        DType::F16,
        N,
        "((8_L2B, 16_MAB, 4_PE, 16), (64_Time, 32, 4_W); B@[L1B])",
        "((256_Time, 32), (8_L1B, 4_PE, 8_Time, 8, 4_W); B@[L2B,MAB])",
        "((8_L2B, 16_MAB, 4_PE, 16), (8_L1B, 8_Time, 32, 4_W))",
        0.9,
    );
    assert_eq!(f, 1.0);
    assert_eq!(
        m.compute.matrix.flops[&DType::F16] * m.matrix_units() as f64,
        524_288.0
    );
}

#[test]
fn mncore2_f32_and_f64_matmuls_reach_peak() {
    let m = machine("mncore2");
    let f32_ = matmul_peak(
        &m,
        DType::F32,
        N,
        "((8_L2B, 16_MAB, 4_PE, 16), (64_Time, 64, 2_W); B@[L1B])",
        "((256_Time, 32), (8_L1B, 4_PE, 8_Time, 16, 2_W); B@[L2B,MAB])",
        "((8_L2B, 16_MAB, 4_PE, 16), (8_L1B, 8_Time, 64, 2_W))",
        0.9,
    );
    let f64_ = matmul_peak(
        &m,
        DType::F64,
        N,
        "((8_L2B, 16_MAB, 4_PE, 16), (128_Time, 64); B@[L1B])",
        "((256_Time, 32), (8_L1B, 4_PE, 16_Time, 16); B@[L2B,MAB])",
        "((8_L2B, 16_MAB, 4_PE, 16), (8_L1B, 16_Time, 64))",
        0.9,
    );
    assert_eq!((f32_, f64_), (1.0, 1.0));
}

#[test]
fn mncore1_hp_sp_dp_matmuls_reach_peak() {
    let m = machine("mncore1");
    let a = "((16_L2B, 16_MAB, 4_PE, 8), (64_Time, 32, 4_W); B@[L1B])";
    let b = "((256_Time, 32), (8_L1B, 4_PE, 8_Time, 8, 4_W); B@[L2B,MAB])";
    let c = "((16_L2B, 16_MAB, 4_PE, 8), (8_L1B, 8_Time, 32, 4_W))";
    assert_eq!(matmul_peak(&m, DType::F16, N, a, b, c, 0.9), 1.0);
    let a = "((16_L2B, 16_MAB, 4_PE, 8), (64_Time, 64, 2_W); B@[L1B])";
    let b = "((256_Time, 32), (8_L1B, 4_PE, 8_Time, 16, 2_W); B@[L2B,MAB])";
    let c = "((16_L2B, 16_MAB, 4_PE, 8), (8_L1B, 8_Time, 64, 2_W))";
    assert_eq!(matmul_peak(&m, DType::F32, N, a, b, c, 0.9), 1.0);
    let a = "((16_L2B, 16_MAB, 4_PE, 8), (128_Time, 64); B@[L1B])";
    let b = "((256_Time, 32), (8_L1B, 4_PE, 16_Time, 16); B@[L2B,MAB])";
    let c = "((16_L2B, 16_MAB, 4_PE, 8), (8_L1B, 16_Time, 64))";
    assert_eq!(matmul_peak(&m, DType::F64, N, a, b, c, 0.9), 1.0);
    // The public peaks: HP 524, SP 131, DP 32.8 TFLOPS at 1 GHz.
    let peak = |d| m.compute.matrix.flops[&d] * m.matrix_units() as f64;
    assert_eq!(
        (peak(DType::F16), peak(DType::F32), peak(DType::F64)),
        (524_288.0, 131_072.0, 32_768.0)
    );
}

#[test]
fn padding_to_the_tile_costs_cycles() {
    // A 8000-row matmul laid out at 8192 rows: the padded rows cost like real ones.
    let m = machine("mncore2");
    let d = DType::F16;
    let a = lay(
        "(8000,8192)/((8_L2B, 16_MAB, 4_PE, 16), (64_Time, 32, 4_W); B@[L1B])",
        &m,
        &[8000, N],
        d,
    );
    let b = lay(
        "((256_Time, 32), (8_L1B, 4_PE, 8_Time, 8, 4_W); B@[L2B,MAB])",
        &m,
        &[N, N],
        d,
    );
    let c = lay(
        "(8000,8192)/((8_L2B, 16_MAB, 4_PE, 16), (8_L1B, 8_Time, 32, 4_W))",
        &m,
        &[8000, N],
        d,
    );
    let (_, cost) = legal_cost(&Kernel::MatMul, &[&a, &b], &c, &m, d);
    assert_eq!(cost.cycles, 2_097_152);
    assert_eq!(cost.flops, 2 * 8000 * N * N);
    assert!((cost.utilisation() - 8000.0 / 8192.0).abs() < 1e-12);
    // A block that is not a tile multiple: 3 rows per PE per step → M_u = 4·3 = 12
    // rows of a 4-row tile: 3 tiles, no waste; 5 columns of a 16-column tile: 1 tile, 11/16 wasted.
    let a = lay("((4_PE, 3), (16); B@[L2B,L1B,MAB])", &m, &[12, 16], d);
    let b = lay("((16), (5); B@[L2B,L1B,MAB,PE])", &m, &[16, 5], d);
    let c = lay("((4_PE, 3), (5); B@[L2B,L1B,MAB])", &m, &[12, 5], d);
    let (l, cost) = legal_cost(&Kernel::MatMul, &[&a, &b], &c, &m, d);
    assert!(l.partial.is_empty());
    // ceil(12/4)·ceil(5/16)·ceil(16/16) = 3 tiles × 4 cycles.
    assert_eq!(cost.cycles, 12);
    assert_eq!(cost.flops, 2 * 12 * 5 * 16);
}

#[test]
fn vector_kernels_by_hand() {
    let m = machine("toy4"); // f32: 2 FLOP/cycle/PE; f16: 4.
    let f32_ = DType::F32;
    let x = lay("((4_PE, 2), (8))", &m, &[8, 8], f32_);
    // 16 elements per PE × 1 FLOP / 2 = 8 cycles.
    let (_, c) = legal_cost(&Kernel::Unary(UnaryOp::Relu), &[&x], &x, &m, f32_);
    assert_eq!((c.cycles, c.flops, c.unit), (8, 64, "vector"));
    assert_eq!(c.peak_flops_per_cycle, 8.0);
    assert_eq!(c.utilisation(), 1.0);
    // Exp: 8 per element.
    let (_, c) = legal_cost(&Kernel::Unary(UnaryOp::Exp), &[&x], &x, &m, f32_);
    assert_eq!((c.cycles, c.flops), (64, 512));
    // Gelu 10, f16 at 4 per cycle: 16 × 10 / 4 = 40.
    let x16 = lay("((4_PE, 2), (8))", &m, &[8, 8], DType::F16);
    let (_, c) = legal_cost(&Kernel::Unary(UnaryOp::Gelu), &[&x16], &x16, &m, DType::F16);
    assert_eq!(c.cycles, 40);
    // Div: 4 per output element, broadcasting a replicated row costs nothing extra.
    let row = lay("((8); B@[PE])", &m, &[8], f32_);
    let (_, c) = legal_cost(&Kernel::Binary(BinaryOp::Div), &[&x, &row], &x, &m, f32_);
    assert_eq!((c.cycles, c.flops), (32, 256));
    // Padding costs like real work: 6 rows padded to 8.
    let p = lay("(6,8)/((4_PE, 2), (8))", &m, &[6, 8], f32_);
    let (_, c) = legal_cost(&Kernel::Binary(BinaryOp::Add), &[&p, &p], &p, &m, f32_);
    assert_eq!((c.cycles, c.flops), (8, 48));
    assert_eq!(c.utilisation(), 0.75);
    // Idle PEs too: only 2 PEs hold data, each 32 elements.
    let h = lay("((2_PE, 4), (8))", &m, &[8, 8], f32_);
    let (_, c) = legal_cost(&Kernel::Unary(UnaryOp::Neg), &[&h], &h, &m, f32_);
    assert_eq!((c.cycles, c.flops), (16, 64));
    // Time steps count: 2 steps of 8 elements per PE.
    let t = lay("((4_PE, 2_Time), (8))", &m, &[8, 8], f32_);
    let (_, c) = legal_cost(&Kernel::Unary(UnaryOp::Relu), &[&t], &t, &m, f32_);
    assert_eq!(c.cycles, 8);
    // Softmax: per PE 16 inputs × 2 + 16 outputs × 13 = 240 FLOP / 2 = 120 cycles.
    let rows = lay("((4_PE, 2), (8))", &m, &[8, 8], f32_);
    let (_, c) = legal_cost(&Kernel::Softmax { axis: 1 }, &[&rows], &rows, &m, f32_);
    assert_eq!((c.cycles, c.flops), (120, 64 * 15));
    // LayerNorm: 16 × 4 + 16 × 2 = 96 / 2 = 48.
    let (_, c) = legal_cost(
        &Kernel::LayerNorm { axis: 1, eps: 1e-5 },
        &[&rows],
        &rows,
        &m,
        f32_,
    );
    assert_eq!((c.cycles, c.flops), (48, 64 * 6));
    // ReduceAxes: every input element once: 16 / 2 = 8 cycles.
    let y = lay("((4_PE, 2))", &m, &[8], f32_);
    let red = Kernel::ReduceAxes {
        op: ReduceKind::Max,
        axes: vec![1],
        keep_dims: false,
    };
    let (_, c) = legal_cost(&red, &[&rows], &y, &m, f32_);
    assert_eq!((c.cycles, c.flops), (8, 64));
    // Transpose: one move per element, and no useful FLOP (data movement).
    let tr = lay("((8), (4_PE, 2))", &m, &[8, 8], f32_);
    let (_, c) = legal_cost(
        &Kernel::Transpose { perm: vec![1, 0] },
        &[&rows],
        &tr,
        &m,
        f32_,
    );
    assert_eq!((c.cycles, c.flops), (8, 0));
    // Reshape, Concat and the Copy of TypeCast/Reorder likewise.
    let (_, c) = legal_cost(&Kernel::Unary(UnaryOp::Copy), &[&rows], &rows, &m, f32_);
    assert_eq!((c.cycles, c.flops), (8, 0));
    let flat = lay("((4_PE, 16))", &m, &[64], f32_);
    let (_, c) = legal_cost(
        &Kernel::Reshape { shape: vec![64] },
        &[&rows],
        &flat,
        &m,
        f32_,
    );
    assert_eq!((c.cycles, c.flops), (8, 0));
}

#[test]
fn runtime_dims_change_useful_flops_not_cycles() {
    let m = machine("toy4");
    let x = lay("((4_PE, 2), (8))", &m, &[8, 8], DType::F32);
    let k = Kernel::Unary(UnaryOp::Relu);
    let l = check(&k, &[&x], &x, &m, &[]).unwrap();
    let c = cost(&k, &[&x], &x, &l, &m, DType::F32, Some(&[&[5, 8]])).unwrap();
    assert_eq!((c.cycles, c.flops), (8, 40));
    let e = cost(&k, &[&x], &x, &l, &m, DType::F32, Some(&[])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Arity);
}

#[test]
fn matmul_on_toy4_and_the_vector_fallback() {
    let m = machine("toy4"); // matrix unit per PE: f32 1×4×4 at 8 FLOP/cycle; no f64.
    let a = lay("((4_PE, 2), (8))", &m, &[8, 8], DType::F32);
    let b = lay("((8), (8); B@[PE])", &m, &[8, 8], DType::F32);
    let (l, c) = legal_cost(&Kernel::MatMul, &[&a, &b], &a, &m, DType::F32);
    assert_eq!((l.unit, l.unit_level), (Unit::Mab, 0));
    // Per PE: 2 rows × 8 columns × 8: ceil(2/1)·ceil(8/4)·ceil(8/4) = 8 tiles × 4 cycles.
    assert_eq!((c.cycles, c.flops, c.unit), (32, 1024, "matrix"));
    assert_eq!(c.peak_flops_per_cycle, 32.0);
    // mini has no f64 matrix rate: the vector unit, 1 FLOP/cycle/PE, and the PE is the
    // unit. Per PE 1 row × 8 columns × K 8 × 2 FLOP = 128 cycles.
    let mi = mini();
    let a = lay("((2_L1B, 2_MAB, 2_PE), (8))", &mi, &[8, 8], DType::F64);
    let b = lay("((8), (8); B@[L1B,MAB,PE])", &mi, &[8, 8], DType::F64);
    let (l, c) = legal_cost(&Kernel::MatMul, &[&a, &b], &a, &mi, DType::F64);
    assert_eq!(l.unit, Unit::Pe);
    assert_eq!((c.cycles, c.flops, c.unit), (128, 1024, "vector"));
    assert_eq!(c.peak_flops_per_cycle, 8.0);
    // No vector rate for s32 nor for f32 and f64, which it would run at: an error that
    // says so.
    let mut m = m;
    m.compute.vector.retain(|d, _| *d == DType::F16);
    let x = lay("((4_PE, 2), (8))", &m, &[8, 8], DType::S32);
    let k = Kernel::Unary(UnaryOp::Abs);
    let l = check(&k, &[&x], &x, &m, &[]).unwrap();
    let e = cost(&k, &[&x], &x, &l, &m, DType::S32, None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Rate);
    assert!(
        e.message.contains(
            "toy4 has no vector rate for s32 nor for the types it would run at (f32, f64)"
        ),
        "{e}"
    );
}

#[test]
fn partial_matmul_cost_counts_the_local_contraction() {
    // K = 64 split over 8 L1B: each MAB contracts over 8, the output partial over L1B.
    let m = machine("mncore2");
    let d = DType::F16;
    let a = lay("((16_MAB, 4_PE), (8_L1B, 8); B@[L2B])", &m, &[64, 64], d);
    let b = lay("((8_L1B, 8), (16); B@[L2B,MAB,PE])", &m, &[64, 16], d);
    let c = lay("((16_MAB, 4_PE), (16); B@[L2B,L1B])", &m, &[64, 16], d);
    let (l, cost) = legal_cost(&Kernel::MatMul, &[&a, &b], &c, &m, d);
    assert_eq!(l.partial, vec![1]);
    // Per MAB: M_u 4, N_u 16, K_u 8 → 1·1·1 tile (K padded 8 → 16) × 4 cycles.
    assert_eq!(cost.cycles, 4);
    assert!(cost.flops_per_cycle() <= cost.peak_flops_per_cycle);
}

#[test]
fn cost_refuses_layouts_that_do_not_fit() {
    let m = machine("toy4");
    let a = lay("((4_PE, 2), (8))", &m, &[8, 8], DType::F32);
    let c = lay("((4_PE), (8))", &m, &[4, 8], DType::F32);
    let l = Legality {
        partial: vec![],
        unit: Unit::Mab,
        unit_level: 0,
    };
    let e = cost(&Kernel::MatMul, &[&a, &a], &c, &l, &m, DType::F32, None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Layout);
    let e = cost(&Kernel::MatMul, &[&a], &a, &l, &m, DType::F32, None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Arity);
}
