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
                &Kernel::ReduceAxes {
                    op,
                    axes: vec![0],
                    keep_dims: false,
                },
                &[x],
                &[16],
                Some("((16:1)) B@[L2B,L1B,MAB,PE]"),
            );
        } else {
            // Max/min along a local axis.
            check(
                &m,
                DType::F32,
                &Kernel::ReduceAxes {
                    op,
                    axes: vec![1],
                    keep_dims: false,
                },
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

/// A random layout of a 2-D tensor on `small()` (fan-outs L2B 2, L1B 2, MAB 2, PE 4):
/// every level is split along a random axis (when the axis still divides) or replicated;
/// the rest of each axis is memory, sometimes `Time`, sometimes `4_W` (f16); a pad
/// prefix trims the logical shape by one sometimes.
fn random_layout(rng: &mut u64, dims: [u64; 2], f16: bool) -> (String, [u64; 2]) {
    let mut next = |n: u64| {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng % n
    };
    let mut rest = dims;
    let mut groups: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut bcast = Vec::new();
    for (name, fan) in [("L2B", 2u64), ("L1B", 2), ("MAB", 2), ("PE", 4)] {
        let g = next(3) as usize;
        if g < 2 && rest[g].is_multiple_of(fan) {
            groups[g].push(format!("{fan}_{name}"));
            rest[g] /= fan;
        } else {
            bcast.push(name);
        }
    }
    for g in 0..2 {
        let mut r = rest[g];
        if g == 1 && f16 && r.is_multiple_of(4) && next(2) == 0 {
            r /= 4;
            groups[g].push("4_W".into());
            if r > 1 {
                groups[g].insert(groups[g].len() - 1, format!("{r}"));
            }
            continue;
        }
        if g == 0 && r.is_multiple_of(2) && next(3) == 0 {
            groups[g].push("2_Time".into());
            r /= 2;
        }
        if r > 1 || groups[g].is_empty() {
            groups[g].push(format!("{r}"));
        }
    }
    let logical = [
        dims[0] - next(2),
        dims[1] - next(2) * (!dims[1].is_multiple_of(4)) as u64,
    ];
    let pad = if logical != dims {
        format!("({},{})/", logical[0], logical[1])
    } else {
        String::new()
    };
    let b = if bcast.is_empty() {
        String::new()
    } else {
        format!("; B@[{}]", bcast.join(","))
    };
    (
        format!(
            "{pad}(({}), ({}){b})",
            groups[0].join(", "),
            groups[1].join(", ")
        ),
        logical,
    )
}

#[test]
fn elementwise_kernels_on_random_layouts_match_the_reference() {
    let m = small();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut ran = 0;
    for case in 0..60u64 {
        let dims = [[8u64, 16], [16, 8], [12, 8], [8, 12]][(case % 4) as usize];
        let f16 = case % 2 == 0;
        let dtype = if f16 { DType::F16 } else { DType::F32 };
        let (la, logical) = random_layout(&mut rng, dims, f16);
        // The same layout for both operands keeps every pair legal; b replicated
        // everywhere sometimes (a legal broadcast operand whatever a is).
        let lb = if case % 3 == 0 {
            let pad = if logical != dims {
                format!("({},{})/", logical[0], logical[1])
            } else {
                String::new()
            };
            format!("{pad}(({}), ({})) B@[L2B,L1B,MAB,PE]", dims[0], dims[1])
        } else {
            la.clone()
        };
        if TensorLayout::parse(&la, &m, Some(&logical), dtype).is_err()
            || TensorLayout::parse(&lb, &m, Some(&logical), dtype).is_err()
        {
            continue; // e.g. a footprint that does not fit: not a kernel question
        }
        let op = UnaryOp::ALL[(case as usize) % UnaryOp::ALL.len()];
        check(
            &m,
            dtype,
            &Kernel::Unary(op),
            &[Input {
                name: "x",
                dims: &logical,
                layout: &la,
                seed: case,
            }],
            &logical,
            None,
        );
        let op = BinaryOp::ALL[(case as usize) % BinaryOp::ALL.len()];
        check(
            &m,
            dtype,
            &Kernel::Binary(op),
            &[
                Input {
                    name: "a",
                    dims: &logical,
                    layout: &la,
                    seed: case + 100,
                },
                Input {
                    name: "b",
                    dims: &logical,
                    layout: &lb,
                    seed: case + 200,
                },
            ],
            &logical,
            None,
        );
        ran += 1;
    }
    assert!(ran >= 40, "only {ran} random layouts were valid");
}

#[test]
fn a_partial_matmul_result_must_be_reduced_before_use() {
    let m = small();
    for mode in [Mode::Timing, Mode::Functional] {
        let mut e = Engine::new(m.clone(), mode);
        let lay = |t: &str, d: &[u64]| TensorLayout::parse(t, &m, Some(d), DType::F32).unwrap();
        for (n, d, l, seed) in [
            (
                "a",
                [8u64, 16],
                "((2_L2B, 2_MAB, 2:8), (2_L1B, 2:4, 4:1))",
                1,
            ),
            ("b", [16u64, 8], "((2_L1B, 8:8), (8:1)) B@[L2B,MAB,PE]", 2),
        ] {
            let data = (mode == Mode::Functional)
                .then(|| init_data(&Init::Random { seed }, DType::F32, &d));
            e.declare(
                n,
                DType::F32,
                d.to_vec(),
                d.to_vec(),
                XlaLayout::default_for(2),
                data,
            )
            .unwrap();
            e.set_in_dram(n, XlaLayout::default_for(2));
            e.load(n, lay(l, &d)).unwrap();
        }
        for n in ["c", "r"] {
            e.declare(
                n,
                DType::F32,
                vec![8, 8],
                vec![8, 8],
                XlaLayout::default_for(2),
                None,
            )
            .unwrap();
        }
        let c = lay("((2_L2B, 2_MAB, 2:8), (8:1)) B@[L1B,PE]", &[8, 8]);
        e.kernel("MatMul", &Kernel::MatMul, &["a", "b"], "c", Some(c))
            .unwrap();
        let r = e.tensors["c"].lm.as_ref().unwrap();
        assert_eq!(
            r.partial
                .iter()
                .map(|&p| r.layout.levels()[p].name.as_str())
                .collect::<Vec<_>>(),
            ["L1B"]
        );
        // Storing it, moving it or computing on it before the Reduce: errors that say so.
        let err = e.store("c", XlaLayout::default_for(2)).unwrap_err();
        assert!(
            err.0.contains("partial") && err.0.contains("L1B") && err.0.contains("Reduce"),
            "{err}"
        );
        let err = e
            .kernel("Unary", &Kernel::Unary(UnaryOp::Relu), &["c"], "r", None)
            .unwrap_err();
        assert!(
            err.0.contains("partial") && err.0.contains("Reduce"),
            "{err}"
        );
        // After the Reduce, both work.
        e.reduce("c", "L1B", elem::Combine::Add, None).unwrap();
        e.kernel("Unary", &Kernel::Unary(UnaryOp::Relu), &["c"], "r", None)
            .unwrap();
        e.store("c", XlaLayout::default_for(2)).unwrap();
    }
}
