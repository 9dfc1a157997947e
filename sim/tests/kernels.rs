//! Kernels through the engine, in functional mode, against the host reference
//! (`mnsim_kernels::reference`) within the documented tolerances — on layouts that are
//! padded, replicated, W-packed, Time-stepped and split over levels — and in timing
//! mode with the same cycles. Illegal combinations give the documented errors.

mod common;

use common::kernels::{Input, check, random_layout, small};
use mnsim_arch::{DType, TensorLayout, XlaLayout, preset};
use mnsim_kernels::{BinaryOp, ErrorKind, Kernel, ReduceKind, UnaryOp, elem};
use mnsim_sim::engine::{Engine, Mode, SimError};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;

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
        e.state
            .declare(
                n,
                DType::F32,
                d.clone(),
                d.clone(),
                XlaLayout::default_for(2),
                None,
            )
            .unwrap();
        e.state
            .set_in_dram(e.state.tensor_id(n).unwrap(), XlaLayout::default_for(2));
        e.load(e.state.tensor_id(n).unwrap(), lay(l, &d)).unwrap();
    }
    e.state
        .declare(
            "c",
            DType::F32,
            vec![8, 8],
            vec![8, 8],
            XlaLayout::default_for(2),
            None,
        )
        .unwrap();
    e.state
        .declare(
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
            &[
                e.state.tensor_id("a").unwrap(),
                e.state.tensor_id("b").unwrap(),
            ],
            e.state.tensor_id("c").unwrap(),
            Some(lay("((2_L2B, 2_MAB, 2:8), (8:1)) B@[L1B,PE]", &[8, 8])),
        )
        .unwrap_err();
    let illegal =
        |e: &SimError| matches!(e.kernel().map(|k| &k.kind), Some(ErrorKind::Illegal { .. }));
    assert!(illegal(&err), "a kernel error of kind Illegal: {err:?}");
    assert!(
        err.to_string().contains("L1B") && err.to_string().contains("Relayout"),
        "{err}"
    );
    // Softmax along an axis split over PE.
    let err = e
        .kernel(
            "Softmax",
            &Kernel::Softmax { axis: 1 },
            &[e.state.tensor_id("x").unwrap()],
            e.state.tensor_id("p").unwrap(),
            None,
        )
        .unwrap_err();
    assert!(illegal(&err), "a kernel error of kind Illegal: {err:?}");
    assert!(
        err.to_string().contains("PE") && err.to_string().contains("Relayout"),
        "{err}"
    );
    // Nothing was charged for the failed kernels.
    assert_eq!(e.rec.ops.len(), 3);
}

/// An error keeps its kind: a tensor LM cannot hold is `LmFull` (the planner relayouts
/// only what is not), a kernel the layouts make illegal keeps the kernel's kind.
#[test]
fn an_error_keeps_its_kind() {
    let m = small();
    let mut e = Engine::new(m.clone(), Mode::Timing);
    let words = m.leaf_memory_bytes() / m.word_bytes;
    // Every PE holds all of `x` and of `y`: three quarters of its LM each.
    let n = words * 3 / 4;
    let l = TensorLayout::parse(
        &format!("(({n})) B@[L2B,L1B,MAB,PE]"),
        &m,
        Some(&[n]),
        DType::F32,
    )
    .unwrap();
    for t in ["x", "y"] {
        e.state
            .declare(
                t,
                DType::F32,
                vec![n],
                vec![n],
                XlaLayout::default_for(1),
                None,
            )
            .unwrap();
        e.state
            .set_in_dram(e.state.tensor_id(t).unwrap(), XlaLayout::default_for(1));
    }
    e.load(e.state.tensor_id("x").unwrap(), l.clone()).unwrap();
    let err = e.load(e.state.tensor_id("y").unwrap(), l).unwrap_err();
    assert!(err.is_lm_full(), "{err:?}");
    assert!(err.kernel().is_none());
    assert!(err.to_string().contains("LM words"), "{err}");
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
            e.state
                .declare(
                    n,
                    DType::F32,
                    d.to_vec(),
                    d.to_vec(),
                    XlaLayout::default_for(2),
                    data,
                )
                .unwrap();
            e.state
                .set_in_dram(e.state.tensor_id(n).unwrap(), XlaLayout::default_for(2));
            e.load(e.state.tensor_id(n).unwrap(), lay(l, &d)).unwrap();
        }
        for n in ["c", "r"] {
            e.state
                .declare(
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
        e.kernel(
            "MatMul",
            &Kernel::MatMul,
            &[
                e.state.tensor_id("a").unwrap(),
                e.state.tensor_id("b").unwrap(),
            ],
            e.state.tensor_id("c").unwrap(),
            Some(c),
        )
        .unwrap();
        let r = e.state.tensors[e.state.tensor_id("c").unwrap()]
            .lm
            .as_ref()
            .unwrap();
        assert_eq!(
            r.partial
                .iter()
                .map(|&p| r.layout.levels()[p].name.as_str())
                .collect::<Vec<_>>(),
            ["L1B"]
        );
        // Storing it, moving it or computing on it before the Reduce: errors that say so.
        let err = e
            .store(e.state.tensor_id("c").unwrap(), XlaLayout::default_for(2))
            .unwrap_err();
        assert!(
            err.to_string().contains("partial")
                && err.to_string().contains("L1B")
                && err.to_string().contains("Reduce"),
            "{err}"
        );
        let err = e
            .kernel(
                "Unary",
                &Kernel::Unary(UnaryOp::Relu),
                &[e.state.tensor_id("c").unwrap()],
                e.state.tensor_id("r").unwrap(),
                None,
            )
            .unwrap_err();
        assert!(
            err.to_string().contains("partial") && err.to_string().contains("Reduce"),
            "{err}"
        );
        // After the Reduce, both work.
        e.reduce(
            e.state.tensor_id("c").unwrap(),
            e.state.level_id("L1B").unwrap(),
            elem::Combine::Add,
            None,
        )
        .unwrap();
        e.kernel(
            "Unary",
            &Kernel::Unary(UnaryOp::Relu),
            &[e.state.tensor_id("c").unwrap()],
            e.state.tensor_id("r").unwrap(),
            None,
        )
        .unwrap();
        e.store(e.state.tensor_id("c").unwrap(), XlaLayout::default_for(2))
            .unwrap();
    }
}
