//! The kernels graphs need (Select, Clamp, Elu, BiasAdd, the general MatMul, Reshape,
//! Concat, Slice, the new reductions and unary functions) through the engine against the
//! host reference, on padded, replicated, split, `W` and `Time` layouts, timing =
//! functional; and their legality errors.

mod common;

use common::kernels::{Input, check, random_layout, small};
use mnsim_arch::{DType, TensorLayout, XlaLayout};
use mnsim_kernels::{Kernel, ReduceKind, elem};
use mnsim_sim::engine::{Engine, Mode};

#[test]
fn clamp_elu_and_biasadd_on_random_layouts() {
    let m = small();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut ran = 0;
    for case in 0..30u64 {
        let dims = [[8u64, 16], [16, 8], [12, 8], [8, 12]][(case % 4) as usize];
        let f16 = case % 2 == 1;
        let dtype = if f16 { DType::F16 } else { DType::F32 };
        let (la, logical) = random_layout(&mut rng, dims, f16);
        if TensorLayout::parse(&la, &m, Some(&logical), dtype).is_err() {
            continue;
        }
        let x = || Input {
            name: "x",
            dims: &logical,
            layout: &la,
            seed: case,
        };
        check(
            &m,
            dtype,
            &Kernel::Clamp {
                min: -0.25,
                max: 0.5,
            },
            &[x()],
            &logical,
            None,
        );
        check(
            &m,
            dtype,
            &Kernel::Elu { alpha: 0.7 },
            &[x()],
            &logical,
            None,
        );
        // The bias replicated everywhere, along either axis.
        for axis in 0..2 {
            let n = logical[axis];
            let bl = format!("(({n})) B@[L2B,L1B,MAB,PE]");
            check(
                &m,
                dtype,
                &Kernel::BiasAdd { axis },
                &[
                    x(),
                    Input {
                        name: "bias",
                        dims: &[n],
                        layout: &bl,
                        seed: case + 50,
                    },
                ],
                &logical,
                None,
            );
        }
        ran += 1;
    }
    assert!(ran >= 15, "only {ran} random layouts were valid");
}

#[test]
fn a_split_bias_must_follow_the_channel_axis() {
    let m = small();
    // x split over L2B along axis 1; bias split the same way is legal.
    let x = || Input {
        name: "x",
        dims: &[4, 8],
        layout: "((4), (2_L2B, 4)) B@[L1B,MAB,PE]",
        seed: 1,
    };
    check(
        &m,
        DType::F32,
        &Kernel::BiasAdd { axis: 1 },
        &[
            x(),
            Input {
                name: "bias",
                dims: &[8],
                layout: "((2_L2B, 4)) B@[L1B,MAB,PE]",
                seed: 2,
            },
        ],
        &[4, 8],
        None,
    );
    // Split along the wrong digit: an error naming the relayout.
    let e = engine_error(
        &m,
        &Kernel::BiasAdd { axis: 1 },
        &[
            ("x", &[4, 8], "((4), (2_L2B, 4)) B@[L1B,MAB,PE]"),
            ("bias", &[8], "((4, 2_L2B)) B@[L1B,MAB,PE]"),
        ],
        &[4, 8],
        "((4), (2_L2B, 4)) B@[L1B,MAB,PE]",
    );
    assert!(
        e.contains("BiasAdd") && e.contains("Relayout `bias`"),
        "{e}"
    );
}

#[test]
fn general_matmul_transposes_broadcasts_batches_and_leaves_partial_sums() {
    let m = small();
    let k = Kernel::GeneralMatMul {
        transpose_a: true,
        transpose_b: true,
    };
    // a [2,4,8] holds [B,K,M]; b [6,4] holds [N,K] and broadcasts over the batch.
    for (la, lb, lo) in [
        (
            "((2_L2B), (4), (8)) B@[L1B,MAB,PE]",
            "((6), (4)) B@[L2B,L1B,MAB,PE]",
            "((2_L2B), (8), (6)) B@[L1B,MAB,PE]",
        ),
        // M split over L1B, N over the PEs of a MAB (below the matrix unit).
        (
            "((2_L2B), (4), (2_L1B, 4)) B@[MAB,PE]",
            "((6), (4)) B@[L2B,L1B,MAB,PE]",
            "((2_L2B), (2_L1B, 4), (2, 3)) B@[MAB,PE]",
        ),
        // The contraction split over L1B: partial sums, completed by a Reduce.
        (
            "((2_L2B), (2_L1B, 2), (8)) B@[MAB,PE]",
            "((6), (2_L1B, 2)) B@[L2B,MAB,PE]",
            "((2_L2B), (8), (6)) B@[L1B,MAB,PE]",
        ),
    ] {
        check(
            &m,
            DType::F32,
            &k,
            &[
                Input {
                    name: "a",
                    dims: &[2, 4, 8],
                    layout: la,
                    seed: 3,
                },
                Input {
                    name: "b",
                    dims: &[6, 4],
                    layout: lb,
                    seed: 4,
                },
            ],
            &[2, 8, 6],
            Some(lo),
        );
    }
    // The 4-D by 2-D case of the graphs: [2,2,4,8] x [8,6], f16 on the matrix unit.
    check(
        &m,
        DType::F16,
        &Kernel::GeneralMatMul {
            transpose_a: false,
            transpose_b: false,
        },
        &[
            Input {
                name: "a",
                dims: &[2, 2, 4, 8],
                layout: "((2_L2B), (2_L1B), (4), (2, 4_W)) B@[MAB,PE]",
                seed: 5,
            },
            Input {
                name: "b",
                dims: &[8, 6],
                layout: "((8), (6)) B@[L2B,L1B,MAB,PE]",
                seed: 6,
            },
        ],
        &[2, 2, 4, 6],
        Some("((2_L2B), (2_L1B), (4), (6)) B@[MAB,PE]"),
    );
}

#[test]
fn reshape_and_concat_keep_elements_in_place() {
    let m = small();
    // Split the major axis: [8,12] -> [2,4,12], rows over L2B and L1B.
    check(
        &m,
        DType::F32,
        &Kernel::Reshape {
            shape: vec![2, 4, 12],
        },
        &[Input {
            name: "x",
            dims: &[8, 12],
            layout: "((2_L2B, 2_L1B, 2), (12)) B@[MAB,PE]",
            seed: 7,
        }],
        &[2, 4, 12],
        Some("((2_L2B), (2_L1B, 2), (12)) B@[MAB,PE]"),
    );
    // Merge: [8,12] -> [96] with Time steps and W packing.
    check(
        &m,
        DType::F16,
        &Kernel::Reshape { shape: vec![96] },
        &[Input {
            name: "x",
            dims: &[8, 12],
            layout: "((2_L2B, 2_Time, 2), (3, 4_W)) B@[L1B,MAB,PE]",
            seed: 8,
        }],
        &[96],
        Some("((2_L2B, 48)) B@[L1B,MAB,PE]"),
    );
    // Concat along a kept axis, and along a split one with a matching output.
    check(
        &m,
        DType::F32,
        &Kernel::Concat { axis: 1, inputs: 2 },
        &[
            Input {
                name: "x0",
                dims: &[4, 6],
                layout: "((2_L2B, 2), (6)) B@[L1B,MAB,PE]",
                seed: 9,
            },
            Input {
                name: "x1",
                dims: &[4, 2],
                layout: "((2_L2B, 2), (2)) B@[L1B,MAB,PE]",
                seed: 10,
            },
        ],
        &[4, 8],
        Some("((2_L2B, 2), (8)) B@[L1B,MAB,PE]"),
    );
    check(
        &m,
        DType::F32,
        &Kernel::Concat { axis: 0, inputs: 2 },
        &[
            Input {
                name: "x0",
                dims: &[4, 6],
                layout: "((2_L2B, 2), (6)) B@[L1B,MAB,PE]",
                seed: 11,
            },
            Input {
                name: "x1",
                dims: &[4, 6],
                layout: "((2_L2B, 2), (6)) B@[L1B,MAB,PE]",
                seed: 12,
            },
        ],
        &[8, 6],
        Some("((2, 2_L2B, 2), (6)) B@[L1B,MAB,PE]"),
    );
}

#[test]
fn reshape_and_concat_that_move_elements_name_the_relayout() {
    let m = small();
    let e = engine_error(
        &m,
        &Kernel::Reshape { shape: vec![96] },
        &[("x", &[8, 12], "((8), (2_L2B, 6)) B@[L1B,MAB,PE]")],
        &[96],
        "((2_L2B, 48)) B@[L1B,MAB,PE]",
    );
    assert!(
        e.contains("Reshape: element [0,6] of `x` is at L2B position 1"),
        "{e}"
    );
    assert!(e.contains("Relayout `x`"), "{e}");
    // The output replicated where the input is split.
    let e = engine_error(
        &m,
        &Kernel::Reshape { shape: vec![96] },
        &[("x", &[8, 12], "((2_L2B, 4), (12)) B@[L1B,MAB,PE]")],
        &[96],
        "((96)) B@[L2B,L1B,MAB,PE]",
    );
    assert!(
        e.contains("replicated over L2B but input `x` is not"),
        "{e}"
    );
    let e = engine_error(
        &m,
        &Kernel::Concat { axis: 0, inputs: 2 },
        &[
            ("x0", &[4, 6], "((2_L2B, 2), (6)) B@[L1B,MAB,PE]"),
            ("x1", &[4, 6], "((2_L2B, 2), (6)) B@[L1B,MAB,PE]"),
        ],
        &[8, 6],
        "((2_L2B, 4), (6)) B@[L1B,MAB,PE]",
    );
    assert!(
        e.contains("Concat: input `x0` is laid out over L2B along its axis 0"),
        "{e}"
    );
}

/// A random slice of a random `[d0, d1]` input on `small()` and layouts of both that
/// line up: every level splits an axis the slice keeps whole (the same way in both) or
/// is replicated; a sliced axis stays in memory, `Time` or `W`; the kept axis may be
/// padded. Returns (kernel, input dims, input layout, output dims, output layout, the
/// axis a level splits, if any).
#[allow(clippy::type_complexity)]
fn random_slice_case(
    rng: &mut u64,
    f16: bool,
) -> (Kernel, [u64; 2], String, [u64; 2], String, Option<usize>) {
    let mut next = |n: u64| {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng % n
    };
    let dims = [[8u64, 16], [16, 8], [12, 8], [8, 12], [24, 16]][next(5) as usize];
    // Axis 0, axis 1 or both sliced.
    let sliced = [[true, false], [false, true], [true, true]][next(3) as usize];
    let (mut start, mut limit, mut stride) = (vec![0u64; 2], dims.to_vec(), vec![1u64; 2]);
    for a in 0..2 {
        if sliced[a] {
            let s = next(dims[a] - 1);
            let l = s + 1 + next(dims[a] - s);
            (start[a], limit[a], stride[a]) = (s, l, 1 + next(3));
        }
    }
    let k = Kernel::Slice {
        start: start.clone(),
        limit: limit.clone(),
        stride: stride.clone(),
    };
    let out_dims: Vec<u64> = (0..2)
        .map(|a| (limit[a] - start[a]).div_ceil(stride[a]))
        .collect();
    // Levels to the kept axis, when there is one.
    let kept = (0..2).find(|&a| !sliced[a]);
    let mut subs: Vec<String> = Vec::new();
    let mut bcast: Vec<&str> = Vec::new();
    let mut rest = kept.map_or(1, |a| dims[a]);
    for (name, fan) in [("L2B", 2u64), ("L1B", 2), ("MAB", 2), ("PE", 4)] {
        if kept.is_some() && rest.is_multiple_of(fan) && next(3) > 0 {
            subs.push(format!("{fan}_{name}"));
            rest /= fan;
        } else {
            bcast.push(name);
        }
    }
    // A memory group of `n` elements: sometimes `Time` steps, sometimes packed in `W`.
    let mut mem = |n: u64, last: bool| -> String {
        if last && f16 && n.is_multiple_of(4) && next(2) == 0 {
            return if n > 4 {
                format!("{}, 4_W", n / 4)
            } else {
                "4_W".into()
            };
        }
        if n.is_multiple_of(2) && n > 2 && next(3) == 0 {
            return format!("2_Time, {}", n / 2);
        }
        n.to_string()
    };
    let mut groups_in = Vec::new();
    let mut groups_out = Vec::new();
    for a in 0..2 {
        if Some(a) == kept {
            let mut g = subs.clone();
            if rest > 1 || g.is_empty() {
                g.push(mem(rest, a == 1));
            }
            let g = g.join(", ");
            groups_in.push(g.clone());
            groups_out.push(g);
        } else {
            groups_in.push(mem(dims[a], a == 1));
            groups_out.push(mem(out_dims[a], a == 1));
        }
    }
    let b = if bcast.is_empty() {
        String::new()
    } else {
        format!("; B@[{}]", bcast.join(","))
    };
    let text = |g: &[String]| format!("(({}), ({}){b})", g[0], g[1]);
    let split = kept.filter(|_| !subs.is_empty());
    (
        k,
        dims,
        text(&groups_in),
        [out_dims[0], out_dims[1]],
        text(&groups_out),
        split,
    )
}

#[test]
fn slices_on_random_layouts_equal_the_reference() {
    let m = small();
    let mut rng = 0x0051_ce0f_7e57_u64;
    let (mut ran, mut split, mut illegal) = (0, 0, 0);
    for case in 0..60u64 {
        let f16 = case % 3 == 1;
        let dtype = if f16 { DType::F16 } else { DType::F32 };
        let (k, dims, li, od, lo, by) = random_slice_case(&mut rng, f16);
        let (Ok(xl), Ok(ol)) = (
            TensorLayout::parse(&li, &m, Some(&dims), dtype),
            TensorLayout::parse(&lo, &m, Some(&od), dtype),
        ) else {
            continue;
        };
        assert!(
            mnsim_kernels::is_legal(&k, &[&xl], &ol, &m),
            "{k:?}: {li} -> {lo}"
        );
        check(
            &m,
            dtype,
            &k,
            &[Input {
                name: "x",
                dims: &dims,
                layout: &li,
                seed: case,
            }],
            &od,
            Some(&lo),
        );
        ran += 1;
        // Where a level splits the kept axis, the output replicated over the levels
        // instead is illegal: the engine names the relayout.
        if let Some(a) = by {
            split += 1;
            if f16 {
                continue;
            }
            let rep = format!("(({}), ({}); B@[L2B,L1B,MAB,PE])", od[0], od[1]);
            let rl = TensorLayout::parse(&rep, &m, Some(&od), DType::F32).unwrap();
            assert!(!mnsim_kernels::is_legal(&k, &[&xl], &rl, &m));
            let e = engine_error(&m, &k, &[("x", &dims, &li)], &od, &rep);
            assert!(
                e.contains("Slice: the output `out` is replicated over")
                    && e.contains("Relayout `x` to replicate"),
                "axis {a}: {e}"
            );
            illegal += 1;
        }
    }
    assert!(
        ran >= 40 && split >= 15 && illegal >= 5,
        "{ran} ran, {split} split, {illegal} illegal"
    );
}

#[test]
fn aligned_blocks_of_a_split_axis_and_what_moves() {
    let m = small();
    // The fused QKV split: [8, 24] into thirds of its columns, the columns split
    // (3, 2_L1B, 4) so every third lands on the L1B positions (2_L1B, 4) names.
    for third in 0..3u64 {
        check(
            &m,
            DType::F32,
            &Kernel::Slice {
                start: vec![0, 8 * third],
                limit: vec![8, 8 * third + 8],
                stride: vec![1, 1],
            },
            &[Input {
                name: "qkv",
                dims: &[8, 24],
                layout: "((2_L2B, 4_PE), (3, 2_L1B, 4)) B@[MAB]",
                seed: 40 + third,
            }],
            &[8, 8],
            Some("((2_L2B, 4_PE), (2_L1B, 4)) B@[MAB]"),
        );
    }
    // Every other element of a minor split: all on PE position 0 of the input's
    // split, as the output's `1_PE` puts them.
    check(
        &m,
        DType::F32,
        &Kernel::Slice {
            start: vec![0, 0],
            limit: vec![4, 16],
            stride: vec![1, 4],
        },
        &[Input {
            name: "x",
            dims: &[4, 16],
            layout: "((2_L2B, 2), (4, 4_PE)) B@[L1B,MAB]",
            seed: 50,
        }],
        &[4, 4],
        Some("((2_L2B, 2), (1_PE, 4)) B@[L1B,MAB]"),
    );
    // A block that is not aligned with the split: columns 4..8 are on L1B position 1
    // of the input, where the output puts its elements 0..4 on position 0.
    let e = engine_error(
        &m,
        &Kernel::Slice {
            start: vec![0, 4],
            limit: vec![8, 12],
            stride: vec![1, 1],
        },
        &[("qkv", &[8, 24], "((8), (3, 2_L1B, 4)) B@[L2B,MAB,PE]")],
        &[8, 8],
        "((8), (2_L1B, 4)) B@[L2B,MAB,PE]",
    );
    assert!(
        e.contains("Slice: output element 0 of axis 1 of `out` = (2_L1B:1, 4:1) is at L1B position 0, but it reads element 4"),
        "{e}"
    );
    assert!(
        e.contains("Relayout `qkv` to keep its axis 1 (sliced 4:12:1) unsplit over L1B"),
        "{e}"
    );
}

#[test]
fn new_reductions_along_local_axes_and_their_split_errors() {
    let m = small();
    for op in [
        ReduceKind::Prod,
        ReduceKind::Mean,
        ReduceKind::L1,
        ReduceKind::L2,
    ] {
        for keep_dims in [false, true] {
            let (out, lo) = if keep_dims {
                (vec![8u64, 1], "((2_L2B, 2_L1B, 2_MAB, 1), (1)) B@[PE]")
            } else {
                (vec![8u64], "((2_L2B, 2_L1B, 2_MAB, 1)) B@[PE]")
            };
            check(
                &m,
                DType::F32,
                &Kernel::ReduceAxes {
                    op,
                    axes: vec![1],
                    keep_dims,
                },
                &[Input {
                    name: "x",
                    dims: &[8, 16],
                    layout: "((2_L2B, 2_L1B, 2_MAB, 1:16), (16:1)) B@[PE]",
                    seed: 13,
                }],
                &out,
                Some(lo),
            );
        }
        // Splitting the reduced axis leaves partial results, which only Add and Mean
        // may: a Mean's are partial sums of x / 8, which the Reduce over L2B adds up to
        // the mean (checked against the reference).
        let k = Kernel::ReduceAxes {
            op,
            axes: vec![0],
            keep_dims: false,
        };
        let split = ("x", &[8u64, 16][..], "((2_L2B, 4), (16)) B@[L1B,MAB,PE]");
        let out = "((16)) B@[L2B,L1B,MAB,PE]";
        if op == ReduceKind::Mean {
            let x = Input {
                name: split.0,
                dims: split.1,
                layout: split.2,
                seed: 17,
            };
            check(&m, DType::F32, &k, &[x], &[16], Some(out));
            continue;
        }
        let e = engine_error(&m, &k, &[split], &[16], out);
        assert!(
            e.contains("only Add and Mean reductions may leave partial results"),
            "{op:?}: {e}"
        );
    }
}

/// Select with a boolean mask: a `Pred` condition broadcast over rows, a scalar `b`.
#[test]
fn select_with_a_boolean_mask_and_a_scalar() {
    let m = small();
    for (la, lc, lo) in [
        (
            "((2_L2B, 4), (12))",
            "((1), (12)) B@[L2B]",
            "((2_L2B, 4), (12))",
        ),
        (
            "((2_L2B, 2_Time, 2), (2_L1B, 6)) B@[MAB]",
            "((1), (2_L1B, 6)) B@[L2B,MAB]",
            "((2_L2B, 2_Time, 2), (2_L1B, 6)) B@[MAB]",
        ),
    ] {
        let mask: Vec<u8> = (0..12u8).map(|i| (i * 7 + 3) % 5 % 2).collect();
        let a: Vec<f64> = (0..96).map(|i| (i as f64) * 0.5 - 20.0).collect();
        let mut results = Vec::new();
        for mode in [Mode::Functional, Mode::Timing] {
            let mut e = Engine::new(m.clone(), mode);
            let put = |e: &mut Engine,
                       name: &str,
                       dtype: DType,
                       dims: &[u64],
                       vals: Vec<u8>,
                       layout: &str| {
                let data = (mode == Mode::Functional).then_some(vals);
                e.state
                    .declare(
                        name,
                        dtype,
                        dims.to_vec(),
                        dims.to_vec(),
                        XlaLayout::default_for(dims.len()),
                        data,
                    )
                    .unwrap();
                if mode == Mode::Timing {
                    e.state.set_in_dram(
                        e.state.tensor_id(name).unwrap(),
                        XlaLayout::default_for(dims.len()),
                    );
                }
                let l = TensorLayout::parse(layout, &m, Some(dims), dtype).unwrap();
                e.load(e.state.tensor_id(name).unwrap(), l).unwrap();
            };
            put(&mut e, "cond", DType::Pred, &[1, 12], mask.clone(), lc);
            put(&mut e, "a", DType::F32, &[8, 12], bytes(&a), la);
            put(
                &mut e,
                "b",
                DType::F32,
                &[1],
                bytes(&[-9.0]),
                "((1)) B@[L2B,L1B,MAB,PE]",
            );
            e.state
                .declare(
                    "out",
                    DType::F32,
                    vec![8, 12],
                    vec![8, 12],
                    XlaLayout::default_for(2),
                    None,
                )
                .unwrap();
            let ol = TensorLayout::parse(lo, &m, Some(&[8, 12]), DType::F32).unwrap();
            let rep = e
                .kernel(
                    "Select",
                    &Kernel::Select,
                    &[
                        e.state.tensor_id("cond").unwrap(),
                        e.state.tensor_id("a").unwrap(),
                        e.state.tensor_id("b").unwrap(),
                    ],
                    e.state.tensor_id("out").unwrap(),
                    Some(ol),
                )
                .unwrap();
            e.store(e.state.tensor_id("out").unwrap(), XlaLayout::default_for(2))
                .unwrap();
            results.push((
                rep.cycles,
                e.state.dram_row_major(e.state.tensor_id("out").unwrap()),
            ));
        }
        assert_eq!(results[0].0, results[1].0, "timing = functional");
        let got: Vec<f64> = results[0]
            .1
            .as_ref()
            .unwrap()
            .chunks_exact(4)
            .map(|c| elem::read(DType::F32, c))
            .collect();
        let cond: Vec<f64> = mask.iter().map(|&b| b as f64).collect();
        let want = mnsim_kernels::reference(
            &Kernel::Select,
            &[(&[1, 12], &cond), (&[8, 12], &a), (&[1], &[-9.0])],
            &[8, 12],
        );
        assert_eq!(got, want);
        // Both branches were taken.
        assert!(got.contains(&-9.0) && got.iter().any(|&v| v != -9.0));
    }
}

fn bytes(v: &[f64]) -> Vec<u8> {
    let mut out = vec![0u8; v.len() * 4];
    for (x, c) in v.iter().zip(out.chunks_exact_mut(4)) {
        elem::write(DType::F32, *x, c);
    }
    out
}

/// The error of running `k` (timing mode) on inputs laid out as given.
fn engine_error(
    m: &mnsim_arch::Machine,
    k: &Kernel,
    ins: &[(&str, &[u64], &str)],
    out_dims: &[u64],
    out_layout: &str,
) -> String {
    let mut e = Engine::new(m.clone(), Mode::Timing);
    for (name, dims, layout) in ins {
        e.state
            .declare(
                name,
                DType::F32,
                dims.to_vec(),
                dims.to_vec(),
                XlaLayout::default_for(dims.len()),
                None,
            )
            .unwrap();
        e.state.set_in_dram(
            e.state.tensor_id(name).unwrap(),
            XlaLayout::default_for(dims.len()),
        );
        let l = TensorLayout::parse(layout, m, Some(dims), DType::F32).unwrap();
        e.load(e.state.tensor_id(name).unwrap(), l).unwrap();
    }
    e.state
        .declare(
            "out",
            DType::F32,
            out_dims.to_vec(),
            out_dims.to_vec(),
            XlaLayout::default_for(out_dims.len()),
            None,
        )
        .unwrap();
    let ol = TensorLayout::parse(out_layout, m, Some(out_dims), DType::F32).unwrap();
    let ids: Vec<_> = ins
        .iter()
        .map(|i| e.state.tensor_id(i.0).unwrap())
        .collect();
    let out = e.state.tensor_id("out").unwrap();
    e.kernel("K", k, &ids, out, Some(ol))
        .expect_err("must be illegal")
        .to_string()
}
