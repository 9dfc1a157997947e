//! Low-precision types through the engine: Quantize, Dequantize (static and dynamic),
//! Cast between dtypes and mixed-precision MatMul in functional mode against the host
//! reference (rounded through each dtype), timing mode giving the same cycles; and the
//! what-if of an int8 matrix rate.

mod common;

use common::kernels::small;
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout, preset, set_knob};
use mnsim_kernels::{Kernel, Quant, QuantDir, QuantParams, UnaryOp, elem};
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;
use proptest::prelude::*;

/// One input: its dims, dtype, layout, seed.
struct In<'a> {
    dims: Vec<u64>,
    dtype: DType,
    layout: &'a str,
    seed: u64,
}

/// The values `init` gives a tensor (as stored, so rounded through its dtype).
fn values(i: &In) -> Vec<f64> {
    init_data(&Init::Random { seed: i.seed }, i.dtype, &i.dims)
        .chunks_exact(i.dtype.bytes() as usize)
        .map(|c| elem::read(i.dtype, c))
        .collect()
}

/// Runs `k` on the inputs into an output of `out_dtype` laid out as `out_layout`;
/// returns the stored values (functional mode) and the kernel's cycles.
fn run(
    m: &Machine,
    mode: Mode,
    k: &Kernel,
    ins: &[In],
    out_dtype: DType,
    out_layout: &str,
) -> (Option<Vec<f64>>, u64) {
    let mut e = Engine::new(m.clone(), mode);
    let mut names = Vec::new();
    for (j, i) in ins.iter().enumerate() {
        let name = format!("x{j}");
        let data = (mode == Mode::Functional)
            .then(|| init_data(&Init::Random { seed: i.seed }, i.dtype, &i.dims));
        let xla = XlaLayout::default_for(i.dims.len());
        e.state
            .declare(
                &name,
                i.dtype,
                i.dims.clone(),
                i.dims.clone(),
                xla.clone(),
                data,
            )
            .unwrap();
        if mode == Mode::Timing {
            e.state.set_in_dram(e.state.tensor_id(&name).unwrap(), xla);
        }
        let l = TensorLayout::parse(i.layout, m, Some(&i.dims), i.dtype)
            .unwrap_or_else(|err| panic!("{}: {err}", i.layout));
        e.load(e.state.tensor_id(&name).unwrap(), l).unwrap();
        names.push(name);
    }
    let shapes: Vec<&[u64]> = ins.iter().map(|i| i.dims.as_slice()).collect();
    let out_dims = mnsim_kernels::output_shape(k, &shapes).unwrap();
    let xla = XlaLayout::default_for(out_dims.len());
    e.state
        .declare(
            "out",
            out_dtype,
            out_dims.clone(),
            out_dims.clone(),
            xla.clone(),
            None,
        )
        .unwrap();
    let ol = TensorLayout::parse(out_layout, m, Some(&out_dims), out_dtype).unwrap();
    let refs: Vec<_> = (names.iter())
        .map(|n| e.state.tensor_id(n).unwrap())
        .collect();
    let out = e.state.tensor_id("out").unwrap();
    let rep = e
        .kernel("K", k, &refs, out, Some(ol))
        .unwrap_or_else(|err| panic!("{k:?}: {err}"));
    let partial: Vec<String> = {
        let r = e.state.tensors[e.state.tensor_id("out").unwrap()]
            .lm
            .as_ref()
            .unwrap();
        r.partial
            .iter()
            .rev()
            .map(|&p| r.layout.levels()[p].name.to_string())
            .collect()
    };
    for lv in partial {
        e.reduce(
            e.state.tensor_id("out").unwrap(),
            e.state.level_id(&lv).unwrap(),
            elem::Combine::Add,
            None,
        )
        .unwrap();
    }
    e.store(e.state.tensor_id("out").unwrap(), xla).unwrap();
    let vals = e
        .state
        .dram_row_major(e.state.tensor_id("out").unwrap())
        .map(|b| {
            b.chunks_exact(out_dtype.bytes() as usize)
                .map(|c| elem::read(out_dtype, c))
                .collect()
        });
    (vals, rep.cycles)
}

/// Functional values against the reference rounded through `out_dtype` (within the
/// kernel's tolerance), and the same cycles in timing mode.
fn check(m: &Machine, k: &Kernel, ins: &[In], out_dtype: DType, out_layout: &str) -> u64 {
    let (got, fc) = run(m, Mode::Functional, k, ins, out_dtype, out_layout);
    let (_, tc) = run(m, Mode::Timing, k, ins, out_dtype, out_layout);
    assert_eq!(fc, tc, "{k:?}: timing and functional cycles differ");
    let vals: Vec<Vec<f64>> = ins.iter().map(values).collect();
    let args: Vec<(&[u64], &[f64])> = ins
        .iter()
        .zip(&vals)
        .map(|(i, v)| (i.dims.as_slice(), v.as_slice()))
        .collect();
    let shapes: Vec<&[u64]> = ins.iter().map(|i| i.dims.as_slice()).collect();
    let out_dims = mnsim_kernels::output_shape(k, &shapes).unwrap();
    let n = mnsim_kernels::reduced_extents(k, &shapes)
        .unwrap()
        .iter()
        .product::<u64>()
        .max(1);
    let tol = mnsim_kernels::tolerance(out_dtype, k, n);
    let mut b = [0u8; 8];
    let eb = out_dtype.bytes() as usize;
    let want: Vec<f64> = mnsim_kernels::reference(k, &args, &out_dims)
        .into_iter()
        .map(|v| {
            elem::write(out_dtype, v, &mut b[..eb]);
            elem::read(out_dtype, &b[..eb])
        })
        .collect();
    let got = got.expect("stored");
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            mnsim_kernels::within(*g, *w, tol),
            "{k:?} -> {out_dtype}: element {i}: got {g}, want {w} (tolerance {tol:?})"
        );
    }
    fc
}

const QTYPES: [DType; 6] = [
    DType::S8,
    DType::U8,
    DType::S4,
    DType::U4,
    DType::F8E4M3,
    DType::F8E5M2,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Static Quantize then Dequantize, per tensor or per channel, on a `[rows, 8]`
    /// tensor split over the PEs of small mncore2.
    #[test]
    fn static_quantize_and_dequantize(
        rows in 1u64..5,
        qi in 0usize..6,
        per_channel in any::<bool>(),
        scale in 0.05f64..1.0,
        zp in 0i32..4,
        seed in 0u64..1000,
    ) {
        let m = small();
        let qtype = QTYPES[qi];
        let zp = if qtype.is_float() { 0.0 } else { zp as f64 };
        let (axis, scales, zps) = if per_channel {
            (Some(1), (0..8).map(|c| scale * (1.0 + c as f64)).collect(), vec![zp; 8])
        } else {
            (None, vec![scale], vec![zp])
        };
        let params = QuantParams::Static { axis, scales, zps };
        let dims = vec![rows * 16, 8];
        let layout = "((2_L2B, 2_L1B, 2_MAB, 2_PE, 1), (2_PE, 4))";
        let layout = layout.replace(", 1)", &format!(", {rows})"));
        let qk = Kernel::Quant(Quant { dir: QuantDir::Quantize, qtype, params: params.clone() });
        check(&m, &qk, &[In { dims: dims.clone(), dtype: DType::F32, layout: &layout, seed }], qtype, &layout);
        let dk = Kernel::Quant(Quant { dir: QuantDir::Dequantize, qtype, params });
        for real in [DType::F32, DType::BF16, DType::F16] {
            check(&m, &dk, &[In { dims: dims.clone(), dtype: qtype, layout: &layout, seed }], real, &layout);
        }
    }

    /// Dynamic forms: scales (f16) and zero points (the quantised type) broadcast along
    /// the rows.
    #[test]
    fn dynamic_dequantize_with_broadcast_scales(qi in 0usize..4, seed in 0u64..1000, zps in any::<bool>()) {
        let m = small();
        let qtype = QTYPES[qi];
        let k = Kernel::Quant(Quant {
            dir: QuantDir::Dequantize,
            qtype,
            params: QuantParams::Dynamic { zps },
        });
        let rows = "((2_L2B, 2_L1B, 2_MAB, 4_PE), (8))";
        let x = In { dims: vec![32, 8], dtype: qtype, layout: rows, seed };
        let col = "((2_L2B, 2_L1B, 2_MAB, 4_PE), (1))";
        let s = In { dims: vec![32, 1], dtype: DType::F16, layout: col, seed: seed + 1 };
        let z = In { dims: vec![32, 1], dtype: qtype, layout: col, seed: seed + 2 };
        let mut ins = vec![x, s];
        if zps {
            ins.push(z);
        }
        check(&m, &k, &ins, DType::F16, rows);
    }

    /// Cast between any two float types and from the small integer types to floats:
    /// rounded once into the output's type.
    #[test]
    fn cast_between_dtypes(from in 0usize..10, to in 0usize..5, seed in 0u64..1000) {
        let m = small();
        let all = [DType::F32, DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2, DType::S8, DType::U8, DType::S4, DType::U4, DType::S32];
        let (a, b) = (all[from], all[to]);
        let layout = "((2_L2B, 2_L1B, 2_MAB, 2_PE), (2_PE, 4))";
        check(&m, &Kernel::Unary(UnaryOp::Copy), &[In { dims: vec![16, 8], dtype: a, layout, seed }], b, layout);
    }
}

/// Mixed precision: bf16 × bf16 → f32 and s8 × u8 → s32 on the matrix unit, verified.
#[test]
fn mixed_precision_matmuls_verify() {
    let m = small();
    let a = "((2_L2B, 2_L1B, 2_MAB, 4), (4_PE, 4))";
    let b = "((4_PE, 4), (16); B@[L2B, L1B, MAB])";
    let o = "((2_L2B, 2_L1B, 2_MAB, 4), (16); B@[PE])";
    for (x, w, out) in [
        (DType::BF16, DType::BF16, DType::F32),
        (DType::F16, DType::F16, DType::F32),
        (DType::S8, DType::U8, DType::S32),
        (DType::F8E4M3, DType::F8E4M3, DType::F32),
    ] {
        let ins = [
            In {
                dims: vec![32, 16],
                dtype: x,
                layout: a,
                seed: 3,
            },
            In {
                dims: vec![16, 16],
                dtype: w,
                layout: b,
                seed: 4,
            },
        ];
        let cycles = check(&m, &Kernel::MatMul, &ins, out, o);
        assert!(cycles > 0);
    }
}

/// What-if: MN-Core has no public int8 rate; the presets assume int8 at the FP16 rate.
/// Doubling `compute.matrix.flops.S8` halves each tile's cycles (2048 FLOP per 4×16×16
/// tile: 4 cycles at 512, 2 at 1024), so an s8 MatMul whose cost is all tiles takes half
/// the cycles; the bf16 MatMul beside it does not change.
#[test]
fn an_int8_rate_knob_changes_a_quantised_matmul() {
    let base = preset("mncore2").unwrap();
    let mut fast = base.clone();
    set_knob(&mut fast, "compute.matrix.flops.S8", 1024.0).unwrap();
    let a = "((8_L2B, 8_L1B, 4), (16_MAB, 4_PE, 4))";
    let b = "((16_MAB, 4_PE, 4), (64); B@[L2B, L1B])";
    let o = "((8_L2B, 8_L1B, 4), (64); B@[MAB, PE])";
    let mm = |m: &Machine, d: DType, out: DType| {
        let ins = [
            In {
                dims: vec![256, 256],
                dtype: d,
                layout: a,
                seed: 1,
            },
            In {
                dims: vec![256, 64],
                dtype: d,
                layout: b,
                seed: 2,
            },
        ];
        run(m, Mode::Timing, &Kernel::MatMul, &ins, out, o).1
    };
    let (s8_base, s8_fast) = (
        mm(&base, DType::S8, DType::S32),
        mm(&fast, DType::S8, DType::S32),
    );
    // Per MAB: 4 rows × 64 columns × K 16: 1 · 4 · 1 tiles × 4 cycles (bf16 and s8 alike).
    assert_eq!(s8_base, mm(&base, DType::BF16, DType::F32));
    assert_eq!(s8_base, 2 * s8_fast, "{s8_base} vs {s8_fast}");
    assert_eq!(mm(&fast, DType::BF16, DType::F32), s8_base);
}
