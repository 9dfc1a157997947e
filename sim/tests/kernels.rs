//! Kernels through the engine, in functional mode, against the host reference
//! (`mnsim_kernels::reference`) within the documented tolerances — on layouts that are
//! padded, replicated, W-packed, Time-stepped and split over levels — and in timing
//! mode with the same cycles. Illegal combinations give the documented errors.

use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout, preset, set_knob};
use mnsim_kernels::{BinaryOp, Kernel, ReduceKind, UnaryOp, elem};
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;

/// A small MN-Core 2: 2 L2B x 2 L1B x 2 MAB x 4 PE.
fn small() -> Machine {
    let mut m = preset("mncore2").unwrap();
    set_knob(&mut m, "levels.Group.count", 1.0).unwrap();
    set_knob(&mut m, "levels.L1B.count", 2.0).unwrap();
    set_knob(&mut m, "levels.MAB.count", 2.0).unwrap();
    m
}

struct Input<'a> {
    name: &'a str,
    dims: &'a [u64],
    layout: &'a str,
    seed: u64,
}

/// Runs `k` on inputs loaded in their layouts, output in `out_layout` (None: derived),
/// in `mode`; returns the engine and the output's row-major values after a Store.
fn run(
    m: &Machine,
    mode: Mode,
    dtype: DType,
    k: &Kernel,
    ins: &[Input],
    out_dims: &[u64],
    out_layout: Option<&str>,
) -> (Engine, Option<Vec<f64>>, u64) {
    let mut e = Engine::new(m.clone(), mode);
    for i in ins {
        let data = (mode == Mode::Functional)
            .then(|| init_data(&Init::Random { seed: i.seed }, dtype, i.dims));
        e.declare(
            i.name,
            dtype,
            i.dims.to_vec(),
            i.dims.to_vec(),
            XlaLayout::default_for(i.dims.len()),
            data,
        )
        .unwrap();
        if mode == Mode::Timing {
            e.set_in_dram(i.name, XlaLayout::default_for(i.dims.len()));
        }
        let l = TensorLayout::parse(i.layout, m, Some(i.dims), dtype)
            .unwrap_or_else(|err| panic!("{}: {err}", i.layout));
        e.load(i.name, l).unwrap();
    }
    e.declare(
        "out",
        dtype,
        out_dims.to_vec(),
        out_dims.to_vec(),
        XlaLayout::default_for(out_dims.len()),
        None,
    )
    .unwrap();
    let ol = out_layout.map(|t| {
        TensorLayout::parse(t, m, Some(out_dims), dtype).unwrap_or_else(|err| panic!("{t}: {err}"))
    });
    let names: Vec<&str> = ins.iter().map(|i| i.name).collect();
    let rep = e
        .kernel("K", k, &names, "out", ol)
        .unwrap_or_else(|err| panic!("{k:?}: {err}"));
    // Complete partial sums, then store.
    let partial: Vec<String> = {
        let r = e.tensors["out"].lm.as_ref().unwrap();
        r.partial
            .iter()
            .rev()
            .map(|&p| r.layout.levels()[p].name.clone())
            .collect()
    };
    for lv in partial {
        e.reduce("out", &lv, elem::Combine::Add, None).unwrap();
    }
    e.store("out", XlaLayout::default_for(out_dims.len()))
        .unwrap();
    let vals = e.dram_row_major("out").map(|b| {
        b.chunks_exact(dtype.bytes() as usize)
            .map(|c| elem::read(dtype, c))
            .collect()
    });
    (e, vals, rep.cycles)
}

fn check(
    m: &Machine,
    dtype: DType,
    k: &Kernel,
    ins: &[Input],
    out_dims: &[u64],
    out_layout: Option<&str>,
) {
    let (f, got, fc) = run(m, Mode::Functional, dtype, k, ins, out_dims, out_layout);
    let (t, _, tc) = run(m, Mode::Timing, dtype, k, ins, out_dims, out_layout);
    assert_eq!(fc, tc, "{k:?}: timing and functional cycles differ");
    assert_eq!(f.sw.clock(), t.sw.clock());
    let inputs: Vec<Vec<f64>> = ins
        .iter()
        .map(|i| {
            init_data(&Init::Random { seed: i.seed }, dtype, i.dims)
                .chunks_exact(dtype.bytes() as usize)
                .map(|c| elem::read(dtype, c))
                .collect()
        })
        .collect();
    let args: Vec<(&[u64], &[f64])> = ins
        .iter()
        .zip(&inputs)
        .map(|(i, v)| (i.dims, v.as_slice()))
        .collect();
    let want = mnsim_kernels::reference(k, &args, out_dims);
    let shapes: Vec<&[u64]> = ins.iter().map(|i| i.dims).collect();
    let n = mnsim_kernels::reduced_extents(k, &shapes)
        .unwrap()
        .iter()
        .product::<u64>()
        .max(1);
    let tol = mnsim_kernels::tolerance(dtype, k, n);
    let got = got.expect("stored");
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            mnsim_kernels::within(*g, *w, tol),
            "{k:?} {dtype}: element {i}: got {g}, want {w} (tolerance {tol:?})"
        );
    }
}

#[test]
fn unary_on_padded_replicated_w_and_time_layouts() {
    let toy = preset("toy4").unwrap();
    let m = small();
    for op in UnaryOp::ALL {
        let k = Kernel::Unary(op);
        // Padded (PadLayout) on toy4.
        check(
            &toy,
            DType::F32,
            &k,
            &[Input {
                name: "x",
                dims: &[10, 7],
                layout: "(10,7)/((3:7, 4_PE), (7:1))",
                seed: 1,
            }],
            &[10, 7],
            None,
        );
        // Replicated over PE, split over MAB, W-packed f16, Time steps.
        check(
            &m,
            DType::F16,
            &k,
            &[Input {
                name: "x",
                dims: &[16, 16],
                layout: "((2_L2B, 2_MAB, 2_Time, 2:4), (4:1, 4_W)) B@[L1B,PE]",
                seed: 2,
            }],
            &[16, 16],
            None,
        );
    }
}

#[test]
fn binary_with_a_replicated_and_broadcast_operand() {
    let m = small();
    for op in BinaryOp::ALL {
        let k = Kernel::Binary(op);
        check(
            &m,
            DType::F32,
            &k,
            &[
                Input {
                    name: "a",
                    dims: &[8, 12],
                    layout: "(8,12)/((2_L2B, 2_L1B, 2:4), (2_MAB, 4_PE, 2:1))",
                    seed: 3,
                },
                // A row vector on every PE: broadcast over the rows of a.
                Input {
                    name: "b",
                    dims: &[12],
                    layout: "((16:1)) B@[L2B,L1B,MAB,PE]"
                        .replace("((16:1))", "(12)/((16:1))")
                        .leak(),
                    seed: 4,
                },
            ],
            &[8, 12],
            None,
        );
    }
}

#[test]
fn matmul_row_split_and_split_contraction() {
    let m = small();
    // Rows of a over L2B x MAB, b everywhere, K inside each MAB (over its PEs).
    check(
        &m,
        DType::F32,
        &Kernel::MatMul,
        &[
            Input {
                name: "a",
                dims: &[8, 16],
                layout: "((2_L2B, 2_MAB, 2:16), (4_PE, 4:1)) B@[L1B]",
                seed: 5,
            },
            Input {
                name: "b",
                dims: &[16, 8],
                layout: "((4_PE, 4:8), (8:1)) B@[L2B,L1B,MAB]",
                seed: 6,
            },
        ],
        &[8, 8],
        Some("((2_L2B, 2_MAB, 2:8), (8:1)) B@[L1B,PE]"),
    );
    // The contraction split over L1B the same way in a and b: partial over L1B, reduced.
    check(
        &m,
        DType::F16,
        &Kernel::MatMul,
        &[
            Input {
                name: "a",
                dims: &[8, 16],
                layout: "((2_L2B, 2_MAB, 2:8), (2_L1B, 2:4, 4_W))",
                seed: 7,
            },
            Input {
                name: "b",
                dims: &[16, 8],
                layout: "((2_L1B, 8:2), (2:1, 4_W)) B@[L2B,MAB,PE]",
                seed: 8,
            },
        ],
        &[8, 8],
        Some("((2_L2B, 2_MAB, 2:2), (2:1, 4_W)) B@[L1B,PE]"),
    );
}

#[test]
fn reductions_softmax_layernorm_transpose() {
    let m = small();
    let x = Input {
        name: "x",
        dims: &[8, 16],
        layout: "((2_L2B, 2_L1B, 2_MAB, 1:16), (16:1)) B@[PE]",
        seed: 9,
    };
    check(
        &m,
        DType::F32,
        &Kernel::Softmax { axis: 1 },
        &[Input { ..x }],
        &[8, 16],
        None,
    );
    let x = Input {
        name: "x",
        dims: &[8, 16],
        layout: "((2_L2B, 2_L1B, 2_MAB, 1:16), (16:1)) B@[PE]",
        seed: 9,
    };
    check(
        &m,
        DType::F32,
        &Kernel::LayerNorm { axis: 1, eps: 1e-5 },
        &[x],
        &[8, 16],
        None,
    );
    // Sum over the rows, which span L2B, L1B and MAB: local sums, then tree Reduces.
    for op in ReduceKind::ALL {
        let x = Input {
            name: "x",
            dims: &[8, 16],
            layout: "((2_L2B, 2_L1B, 2_MAB, 1:16), (16:1)) B@[PE]",
            seed: 10,
        };
        if op == ReduceKind::Add {
            check(
                &m,
                DType::F32,
                &Kernel::ReduceAxes { op, axes: vec![0] },
                &[x],
                &[16],
                Some("((16:1)) B@[L2B,L1B,MAB,PE]"),
            );
        } else {
            // Max/min along a local axis.
            check(
                &m,
                DType::F32,
                &Kernel::ReduceAxes { op, axes: vec![1] },
                &[x],
                &[8],
                Some("((2_L2B, 2_L1B, 2_MAB, 1:1)) B@[PE]"),
            );
        }
    }
    // Transpose within each PE.
    let x = Input {
        name: "x",
        dims: &[4, 6],
        layout: "((4:6), (6:1)) B@[L2B,L1B,MAB,PE]",
        seed: 11,
    };
    check(
        &m,
        DType::F32,
        &Kernel::Transpose { perm: vec![1, 0] },
        &[x],
        &[6, 4],
        Some("((6:4), (4:1)) B@[L2B,L1B,MAB,PE]"),
    );
}

#[test]
fn illegal_combinations_say_which_relayout_fixes_them() {
    let m = small();
    let mut e = Engine::new(m.clone(), Mode::Timing);
    let lay = |t: &str, d: &[u64]| TensorLayout::parse(t, &m, Some(d), DType::F32).unwrap();
    for (n, d, l) in [
        ("a", vec![8u64, 16], "((2_L2B, 2_MAB, 2:16), (2_L1B, 8:1))"),
        ("b", vec![16u64, 8], "((16:4), (2_L1B, 4:1)) B@[L2B,MAB,PE]"),
        ("x", vec![8u64, 16], "((8:16), (2_PE, 8:1)) B@[L2B,L1B,MAB]"),
    ] {
        e.declare(
            n,
            DType::F32,
            d.clone(),
            d.clone(),
            XlaLayout::default_for(2),
            None,
        )
        .unwrap();
        e.set_in_dram(n, XlaLayout::default_for(2));
        e.load(n, lay(l, &d)).unwrap();
    }
    e.declare(
        "c",
        DType::F32,
        vec![8, 8],
        vec![8, 8],
        XlaLayout::default_for(2),
        None,
    )
    .unwrap();
    e.declare(
        "p",
        DType::F32,
        vec![8, 16],
        vec![8, 16],
        XlaLayout::default_for(2),
        None,
    )
    .unwrap();
    // a's contraction is split over L1B, b is split over L1B by its columns.
    let err = e
        .kernel(
            "MatMul",
            &Kernel::MatMul,
            &["a", "b"],
            "c",
            Some(lay("((2_L2B, 2_MAB, 2:8), (8:1)) B@[L1B,PE]", &[8, 8])),
        )
        .unwrap_err();
    assert!(err.0.contains("L1B") && err.0.contains("Relayout"), "{err}");
    // Softmax along an axis split over PE.
    let err = e
        .kernel("Softmax", &Kernel::Softmax { axis: 1 }, &["x"], "p", None)
        .unwrap_err();
    assert!(err.0.contains("PE") && err.0.contains("Relayout"), "{err}");
    // Nothing was charged for the failed kernels.
    assert_eq!(e.ops.len(), 3);
}
