//! Whole models from JAX (`scenarios/workloads/models/`: GPT-2 small prefill and decode,
//! a 4-layer LLaMA-style `lax.scan` in bf16) import, load back and run in timing mode;
//! their matrix FLOP are those of their `dot_general` lines (each of a `while` body's
//! once per iteration), their embedding lookups are Gathers, their layers are placed.
//! Each op they brought in runs on a small inline module in functional mode, verifies,
//! and holds the values the StableHLO spec gives, computed here from the arguments:
//! `gather` (indices wrapped and clamped), `dynamic_slice` and `dynamic_update_slice`
//! at run-time indices (the index tensor's value, or `--bind`), `while` with a static
//! trip count (and the error for one that is not), `chlo.erfc`, a reshape of a
//! broadcast (GQA's repeat), masks as kernels (one past the import's folding limit).

mod common;

use common::shlo::{Ran, close, col, import_text, run_inline, run_inline_with};
use mnsim_sim::scenario::{self, Mode, Part, Source};
use std::collections::{BTreeMap, BTreeSet};

fn none() -> BTreeMap<String, u64> {
    BTreeMap::new()
}

fn bind(k: &str, v: u64) -> BTreeMap<String, u64> {
    [(k.to_string(), v)].into()
}

/// The row a gather or a dynamic slice reads: clamped into `[0, rows − size]`.
fn clamp(v: f64, rows: u64, size: u64) -> usize {
    v.max(0.0).min((rows - size) as f64) as usize
}

/// Ops of a report whose name is `name`.
fn ops_named<'a>(ran: &'a Ran, name: &str) -> Vec<&'a mnsim_reports::OpReport> {
    ran.report.ops.iter().filter(|o| o.op == name).collect()
}

const GATHER: &str = r#"func.func public @main(%arg0: tensor<1x5xi32>, %arg1: tensor<10x4xf32>) -> tensor<1x5x4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<1x5xi32>
  %1 = stablehlo.compare LT, %arg0, %0, SIGNED : (tensor<1x5xi32>, tensor<1x5xi32>) -> tensor<1x5xi1>
  %c_0 = stablehlo.constant dense<3> : tensor<i32>
  %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<1x5xi32>
  %3 = stablehlo.multiply %arg0, %2 : tensor<1x5xi32>
  %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<1x5xi32>) -> tensor<1x5x1xi32>
  %5 = "stablehlo.gather"(%arg1, %4) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}> : (tensor<10x4xf32>, tensor<1x5x1xi32>) -> tensor<1x5x4xf32>
  %6 = stablehlo.multiply %5, %5 : tensor<1x5x4xf32>
  return %6 : tensor<1x5x4xf32>
}
"#;

#[test]
fn a_gather_reads_the_rows_its_indices_name_clamped_into_the_table() {
    let ran = run_inline("gather.mlir", GATHER);
    assert!(
        ran.imp.text.contains("Gather(table: \"arg1\""),
        "{}",
        ran.imp.text
    );
    let (tok, table) = (&ran.args[0], &ran.args[1]);
    // Indices 3·t for t in [-8, 8): out of range on both sides, clamped.
    let mut want = Vec::new();
    let mut clamped = 0;
    for &t in tok {
        let v = 3.0 * t;
        let r = clamp(v, 10, 1);
        clamped += usize::from(r as f64 != v);
        for k in 0..4 {
            let x = table[r * 4 + k] as f32;
            want.push((x * x) as f64);
        }
    }
    close(ran.out(), &want, "table[clamp(3·t)]²");
    eprintln!("{clamped} of 5 indices clamped");
    // One Gather, charged as the Load of its 5 rows of 4 f32.
    let g = ops_named(&ran, "Gather");
    assert_eq!(g.len(), 1);
    assert!(g[0].cycles > 0);
    // Which rows does not change the cycles.
    let other = run_inline_with("gather.mlir", GATHER, &none(), &bind("arg0", 1));
    assert_eq!(other.args[0], vec![1.0; 5]);
    assert_eq!(other.report.total_cycles, ran.report.total_cycles);
}

#[test]
fn gathers_the_import_does_not_read_are_named() {
    // Two indices per position (a 2-D start): not an embedding lookup.
    let text = GATHER
        .replace("start_index_map = [0]", "start_index_map = [0, 1]")
        .replace("tensor<1x5x1xi32>", "tensor<1x5x2xi32>");
    let e = import_text("g.mlir", &text, &none()).unwrap_err();
    assert!(
        e.contains("start_index_map") && e.contains("g.mlir:9:3"),
        "{e}"
    );
    // From a tensor the program computes.
    let text = GATHER.replace(
        "\"stablehlo.gather\"(%arg1, %4)",
        "\"stablehlo.gather\"(%t, %4)",
    );
    let text = text.replace(
        "  %5 = \"stablehlo.gather\"",
        "  %t = stablehlo.exponential %arg1 : tensor<10x4xf32>\n  %5 = \"stablehlo.gather\"",
    );
    let e = import_text("g.mlir", &text, &none()).unwrap_err();
    assert!(e.contains("computes") && e.contains("g.mlir:10:3"), "{e}");
}

/// A decode step's indexing: a position `%arg2` (wrapped when negative, as JAX does),
/// a row of a position table at it (a Gather), a row of a computed tensor at it (the
/// DynamicSlice kernel), and a cache written at it (the DynamicUpdateSlice kernel).
const DECODE: &str = r#"func.func public @main(%arg0: tensor<6x4xf32>, %arg1: tensor<2x6x3xf32>, %arg2: tensor<i32>, %arg3: tensor<2x1x3xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<2x6x3xf32>) {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.compare LT, %arg2, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %c_0 = stablehlo.constant dense<6> : tensor<i32>
  %1 = stablehlo.add %arg2, %c_0 : tensor<i32>
  %2 = stablehlo.select %0, %1, %arg2 : tensor<i1>, tensor<i32>
  %3 = stablehlo.dynamic_slice %arg0, %2, %c, sizes = [1, 4] : (tensor<6x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  %4 = stablehlo.exponential %arg0 : tensor<6x4xf32>
  %5 = stablehlo.dynamic_slice %4, %2, %c, sizes = [1, 4] : (tensor<6x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  %6 = stablehlo.negate %arg1 : tensor<2x6x3xf32>
  %7 = stablehlo.dynamic_update_slice %6, %arg3, %c, %2, %c : (tensor<2x6x3xf32>, tensor<2x1x3xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x6x3xf32>
  return %3, %5, %7 : tensor<1x4xf32>, tensor<1x4xf32>, tensor<2x6x3xf32>
}
"#;

/// The three results of [`DECODE`] the spec gives for the arguments.
fn decode_want(args: &[Vec<f64>]) -> [Vec<f64>; 3] {
    let (table, cache, pos, upd) = (&args[0], &args[1], args[2][0], &args[3]);
    let p = if pos < 0.0 { pos + 6.0 } else { pos };
    let r = clamp(p, 6, 1);
    let row: Vec<f64> = table[r * 4..r * 4 + 4].to_vec();
    let exp: Vec<f64> = row.iter().map(|&x| (x as f32).exp() as f64).collect();
    let mut c: Vec<f64> = cache.iter().map(|x| -x).collect();
    for b in 0..2 {
        for d in 0..3 {
            c[(b * 6 + r) * 3 + d] = upd[b * 3 + d];
        }
    }
    [row, exp, c]
}

#[test]
fn dynamic_slices_and_updates_read_their_index_when_they_run() {
    let ran = run_inline("decode.mlir", DECODE);
    let text = &ran.imp.text;
    assert!(text.contains("Gather(table: \"arg0\""), "{text}");
    assert!(
        text.contains("DynamicSlice(sizes: [1, 4], dynamic: [0])"),
        "{text}"
    );
    assert!(text.contains("DynamicUpdateSlice(dynamic: [1])"), "{text}");
    let want = decode_want(&ran.args);
    for (i, w) in want.iter().enumerate() {
        close(&ran.outs[i], w, &format!("result {i}"));
    }
    // `--bind arg2=N` gives the position its value; the cycles do not depend on it.
    for p in [0u64, 4, 5, 9] {
        let b = run_inline_with("decode.mlir", DECODE, &none(), &bind("arg2", p));
        assert_eq!(b.args[2], vec![p as f64]);
        let want = decode_want(&b.args);
        for (i, w) in want.iter().enumerate() {
            close(&b.outs[i], w, &format!("pos {p}: result {i}"));
        }
        assert_eq!(b.report.total_cycles, ran.report.total_cycles, "pos {p}");
    }
    // The update is charged its own elements' moves, not the cache's.
    let dus = ops_named(&ran, "DynamicUpdateSlice");
    let neg = ran
        .report
        .ops
        .iter()
        .find(|o| o.op == "Unary")
        .expect("the negate");
    assert_eq!(dus.len(), 1);
    assert!(
        dus[0].cycles <= neg.cycles,
        "update {} cycles, a pass over the cache {}",
        dus[0].cycles,
        neg.cycles
    );
    assert_eq!(dus[0].flops, Some(0));
}

#[test]
fn a_bound_index_out_of_its_type_is_an_error() {
    let imp = import_text("decode.mlir", DECODE, &none()).unwrap();
    let src = Source {
        path: "decode.mlir".into(),
        text: imp.text.clone(),
    };
    let e = scenario::resolve(
        &imp.scenario,
        &src,
        Some("default"),
        &[],
        &bind("arg2", 1 << 40),
    )
    .unwrap_err();
    let e = common::one_line(&format!("{e:?}"));
    assert!(
        e.contains("arg2") && e.contains("outside the range of s32"),
        "{e}"
    );
}

const LOOP: &str = r#"func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<3x4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:3 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %c, %iterArg_1 = %arg0) : tensor<3x4xf32>, tensor<i32>, tensor<4xf32>
    cond {
    %c_2 = stablehlo.constant dense<3> : tensor<i32>
    %1 = stablehlo.compare LT, %iterArg_0, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_slice %iterArg, %iterArg_0, %c_2, sizes = [1, 4] : (tensor<3x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %2 = stablehlo.reshape %1 : (tensor<1x4xf32>) -> tensor<4xf32>
    %3 = stablehlo.multiply %iterArg_1, %2 : tensor<4xf32>
    %4 = stablehlo.tanh %3 : tensor<4xf32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %5 = stablehlo.add %iterArg_0, %c_3 : tensor<i32>
    stablehlo.return %iterArg, %5, %4 : tensor<3x4xf32>, tensor<i32>, tensor<4xf32>
  }
  return %0#2 : tensor<4xf32>
}
"#;

#[test]
fn a_while_with_a_static_trip_count_is_unrolled_layer_by_layer() {
    let ran = run_inline("scan.mlir", LOOP);
    let (x, w) = (&ran.args[0], &ran.args[1]);
    // x ← tanh(x · w[i]) for i = 0, 1, 2, rounded to f32 each step.
    let mut v: Vec<f32> = x.iter().map(|&a| a as f32).collect();
    for i in 0..3 {
        for (k, e) in v.iter_mut().enumerate() {
            *e = (*e * w[i * 4 + k] as f32).tanh();
        }
    }
    let want: Vec<f64> = v.iter().map(|&a| a as f64).collect();
    close(ran.out(), &want, "tanh(x·w[i]), 3 times");
    // Each iteration's row of the stacked weight is gathered at its constant index,
    // and every op it makes is placed in the iteration's layer.
    assert_eq!(ran.imp.text.matches("Gather(table: \"arg1\"").count(), 3);
    let sc = &ran.imp.scenario;
    let layers: Vec<u32> = sc.places.iter().filter_map(|p| p.layer).collect();
    assert_eq!(layers, [0, 1, 2], "{:?}", sc.places);
    // The places reach the typed program, one per op: each layer runs the same ops
    // (the Loads and Frees around them aside).
    let per_layer = computing_ops_per_layer(&ran.imp, 3);
    assert!(
        per_layer.iter().all(|&n| n == per_layer[0] && n >= 3),
        "{per_layer:?}"
    );
}

/// Per layer `0..n`, the ops of the imported program placed in it that compute or
/// gather (not the Loads, Frees and Stores around them), as the typed program has them.
fn computing_ops_per_layer(imp: &mnsim_sim::import::Imported, n: u32) -> Vec<usize> {
    use mnsim_sim::program::OpKind;
    let src = Source {
        path: "x.mlir".into(),
        text: imp.text.clone(),
    };
    let res = scenario::resolve(&imp.scenario, &src, Some("default"), &[], &none()).unwrap();
    let p = &res.program;
    (0..n)
        .map(|l| {
            (p.ops.values())
                .filter(|o| o.place.layer == Some(l))
                .filter(|o| matches!(o.kind, OpKind::Kernel { .. } | OpKind::Gather { .. }))
                .count()
        })
        .collect()
}

#[test]
fn a_while_whose_trip_count_is_not_static_is_an_error_at_its_line() {
    // The condition compares the carried vector's first element: known only when run.
    let text = LOOP
        .replace(
            "%1 = stablehlo.compare LT, %iterArg_0, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>",
            "%s = stablehlo.slice %iterArg_1 [0:1] : (tensor<4xf32>) -> tensor<1xf32>\n    %r = stablehlo.reshape %s : (tensor<1xf32>) -> tensor<f32>\n    %z = stablehlo.constant dense<0.5> : tensor<f32>\n    %1 = stablehlo.compare LT, %r, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>",
        );
    let e = import_text("w.mlir", &text, &none()).unwrap_err();
    let at = format!("w.mlir:3:{}", col(&text, 3, "stablehlo.while"));
    assert!(e.contains("not static") && e.contains(&at), "{e}");
    // A body that changes a carried value's type.
    let text = LOOP.replace(
        "stablehlo.return %iterArg, %5, %4 : tensor<3x4xf32>, tensor<i32>, tensor<4xf32>",
        "stablehlo.return %iterArg, %5, %1 : tensor<3x4xf32>, tensor<i32>, tensor<1x4xf32>",
    );
    assert!(import_text("w.mlir", &text, &none()).is_err());
}

/// erfc by its Taylor series (1 − erf), precise to 10⁻¹⁴ on [−1, 1].
fn erfc_series(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..60 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    1.0 - sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn erfc_holds_its_values() {
    for (x, want) in [
        (0.0, 1.0),
        (0.3, 0.671_373_240_540_872_5),
        (1.0, 0.157_299_207_050_285_13),
        (2.0, 0.004_677_734_981_047_266),
        (3.0, 2.209_049_699_858_544e-5),
        (5.0, 1.537_459_794_428_035e-12),
        (-1.0, 1.842_700_792_949_715),
        (-3.0, 1.999_977_909_503_001_5),
    ] {
        let got = mnsim_kernels::UnaryOp::Erfc.apply(x);
        assert!(
            (got - want).abs() <= 1.2e-7 * want.abs(),
            "erfc({x}) = {got}, want {want}"
        );
    }
    let text = "func.func public @main(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = chlo.erfc %arg0 : tensor<3x5xf32> -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}
";
    let ran = run_inline("erfc.mlir", text);
    assert!(ran.imp.text.contains("Unary(op: Erfc"), "{}", ran.imp.text);
    let want: Vec<f64> = ran.args[0].iter().map(|&x| erfc_series(x)).collect();
    close(ran.out(), &want, "erfc");
    // The exact GELU as JAX 0.10.2 exports it (`jax.nn.gelu(x, approximate=False)`):
    // x·Φ(x) = x/2·erfc(−x/√2).
    let gelu = "module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>) -> (tensor<4x8xf32> {jax.result_info = \"result\"}) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %1 = stablehlo.multiply %0, %arg0 : tensor<4x8xf32>
    %2 = stablehlo.negate %arg0 : tensor<4x8xf32>
    %cst_0 = stablehlo.constant dense<0.707106769> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<4x8xf32>
    %5 = chlo.erfc %4 : tensor<4x8xf32> -> tensor<4x8xf32>
    %6 = stablehlo.multiply %1, %5 : tensor<4x8xf32>
    return %6 : tensor<4x8xf32>
  }
}
";
    let ran = run_inline("gelu.mlir", gelu);
    let want: Vec<f64> = (ran.args[0].iter())
        .map(|&x| x / 2.0 * erfc_series(-x / std::f64::consts::SQRT_2))
        .collect();
    close(ran.out(), &want, "exact GELU");
}

#[test]
fn a_reshape_of_a_broadcast_is_expanded_first() {
    // GQA's repeat: 2 KV heads, each read by 2 query heads.
    let text = "func.func public @main(%arg0: tensor<1x3x2x4xf32>) -> tensor<1x3x4x4xf32> {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1, 2, 4] : (tensor<1x3x2x4xf32>) -> tensor<1x3x2x2x4xf32>
  %1 = stablehlo.reshape %0 : (tensor<1x3x2x2x4xf32>) -> tensor<1x3x4x4xf32>
  %2 = stablehlo.exponential %1 : tensor<1x3x4x4xf32>
  return %2 : tensor<1x3x4x4xf32>
}
";
    let ran = run_inline("repeat.mlir", text);
    assert!(
        ran.imp.text.contains("Expand(shape: [1, 3, 2, 2, 4])"),
        "{}",
        ran.imp.text
    );
    let x = &ran.args[0];
    let mut want = Vec::new();
    for s in 0..3 {
        for h in 0..4 {
            for d in 0..4 {
                want.push((x[(s * 2 + h / 2) * 4 + d] as f32).exp() as f64);
            }
        }
    }
    close(ran.out(), &want, "repeat then exp");
    // A broadcast that permutes its axes, reshaped: its source transposed first.
    let text = "func.func public @main(%arg0: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = stablehlo.reshape %0 : (tensor<3x2xf32>) -> tensor<6xf32>
  %2 = stablehlo.negate %1 : tensor<6xf32>
  return %2 : tensor<6xf32>
}
";
    let ran = run_inline("perm.mlir", text);
    let x = &ran.args[0];
    let want: Vec<f64> = (0..6).map(|i| -x[(i % 2) * 3 + i / 2]).collect();
    close(ran.out(), &want, "transposed then reshaped");
}

#[test]
fn a_mask_from_a_runtime_position_is_a_kernel_on_the_shards() {
    // Attention over cache positions ≤ pos: iota, compare with the position, select.
    let text =
        "func.func public @main(%arg0: tensor<2x16xf32>, %arg1: tensor<i32>) -> tensor<2x16xf32> {
  %0 = stablehlo.iota dim = 0 : tensor<16xi32>
  %1 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i32>) -> tensor<16xi32>
  %2 = stablehlo.compare LE, %0, %1, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
  %3 = stablehlo.broadcast_in_dim %2, dims = [1] : (tensor<16xi1>) -> tensor<2x16xi1>
  %cst = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
  %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x16xf32>
  %5 = stablehlo.select %3, %arg0, %4 : tensor<2x16xi1>, tensor<2x16xf32>
  return %5 : tensor<2x16xf32>
}
";
    for pos in [0u64, 6, 15] {
        let ran = run_inline_with("mask.mlir", text, &none(), &bind("arg1", pos));
        assert!(
            ran.imp.text.contains("Compare(LessEqual)"),
            "{}",
            ran.imp.text
        );
        let x = &ran.args[0];
        let want: Vec<f64> = (0..32)
            .map(|i| {
                if (i % 16) as u64 <= pos {
                    x[i]
                } else {
                    -1e9f32 as f64
                }
            })
            .collect();
        close(ran.out(), &want, &format!("mask at {pos}"));
    }
}

#[test]
fn a_causal_mask_past_the_folding_limit_is_built_by_kernels() {
    // Sequence 4096: the [4096, 4096] comparison is 2^24 elements, four times what the
    // import evaluates; it is a Compare of two iotas read in place.
    let s = 4096;
    let text = format!(
        "func.func public @main(%arg0: tensor<1x1x{s}x{s}xf32>) -> tensor<1x1x{s}x{s}xf32> {{
  %0 = stablehlo.iota dim = 0 : tensor<{s}xi32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<{s}xi32>) -> tensor<{s}x{s}xi32>
  %2 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<{s}xi32>) -> tensor<{s}x{s}xi32>
  %3 = stablehlo.compare GE, %1, %2, SIGNED : (tensor<{s}x{s}xi32>, tensor<{s}x{s}xi32>) -> tensor<{s}x{s}xi1>
  %4 = stablehlo.broadcast_in_dim %3, dims = [2, 3] : (tensor<{s}x{s}xi1>) -> tensor<1x1x{s}x{s}xi1>
  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x1x{s}x{s}xf32>
  %6 = stablehlo.select %4, %arg0, %5 : tensor<1x1x{s}x{s}xi1>, tensor<1x1x{s}x{s}xf32>
  return %6 : tensor<1x1x{s}x{s}xf32>
}}
"
    );
    let imp = import_text("causal.mlir", &text, &none()).unwrap();
    assert!(imp.text.contains("Compare(GreaterEqual)"), "{}", imp.text);
    assert!(imp.text.contains("init: Iota"), "{}", imp.text);
    assert!(imp.text.contains("Select("), "{}", imp.text);
    let report =
        common::graphs::run_imported(&imp, "causal.mlir", "default", &[], Mode::Timing).report;
    assert!(report.total_cycles > 0);
}

/// `scenarios/workloads/models/NAME.mlir`.
fn model(name: &str) -> (String, String) {
    let path = common::graphs::workloads("models").join(format!("{name}.mlir"));
    (
        path.display().to_string(),
        std::fs::read_to_string(&path).unwrap(),
    )
}

/// 2·(result elements)·(contracted size) of every `dot_general` line, summed.
fn dot_flops(text: &str) -> u64 {
    let dims = |ty: &str| -> Vec<u64> {
        let parts: Vec<&str> = ty.split('x').collect();
        parts[..parts.len() - 1]
            .iter()
            .map(|d| d.parse().unwrap())
            .collect()
    };
    let mut total = 0;
    for line in text.lines().filter(|l| l.contains("stablehlo.dot_general")) {
        let types: Vec<Vec<u64>> = line
            .split("tensor<")
            .skip(1)
            .map(|s| dims(&s[..s.find('>').unwrap()]))
            .collect();
        let i = line.find("contracting_dims = [").unwrap() + 20;
        let lc: Vec<usize> = line[i..i + line[i..].find(']').unwrap()]
            .split(',')
            .map(|x| x.trim().parse().unwrap())
            .collect();
        let k: u64 = lc.iter().map(|&a| types[0][a]).product();
        let n: u64 = types[2].iter().product();
        total += 2 * n * k;
    }
    total
}

#[test]
fn the_whole_models_import_and_run_in_timing_mode() {
    for (name, gathers, trips) in [
        ("gpt2_small_prefill_s128_f32", 1, 1),
        ("gpt2_small_decode_kv1024_f32", 1, 1),
        ("llama_4layer_scan_s256_bf16", 0, 4),
    ] {
        let (path, text) = model(name);
        let t = std::time::Instant::now();
        let imp = import_text(&path, &text, &none()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let secs = t.elapsed().as_secs_f64();
        let sc = scenario::parse(&imp.text, name).unwrap();
        assert_eq!(sc, imp.scenario, "{name}: the printed scenario parses back");
        let report = common::graphs::run_imported(&imp, name, "default", &[], Mode::Timing).report;
        let matmul: u64 = (report.ops.iter())
            .filter(|o| o.op.contains("MatMul"))
            .map(|o| o.flops.unwrap())
            .sum();
        // A while body's dot_generals run once per iteration.
        assert_eq!(matmul, trips * dot_flops(&text), "{name}: dot_general FLOP");
        let g = report.ops.iter().filter(|o| o.op == "Gather").count();
        assert!(g >= gathers, "{name}: {g} Gathers");
        eprintln!(
            "{name}: imported in {secs:.2} s, {} ops, {} cycles under the default layouts ({:.1}× the bound)",
            imp.scenario.program.len(),
            report.total_cycles,
            report.total_cycles as f64 / report.bound_cycles as f64
        );
    }
}

#[test]
fn the_models_use_what_they_were_written_with() {
    // The decode step writes each layer's K and V into the cache at its position.
    let (path, text) = model("gpt2_small_decode_kv1024_f32");
    let imp = import_text(&path, &text, &none()).unwrap();
    assert_eq!(
        imp.text.matches("DynamicUpdateSlice(dynamic: [2])").count(),
        24
    );
    // Only the position table's row at the position moves, and each layer's cache.
    assert!(
        imp.text.contains("Gather(table: \"arg3\""),
        "the position row"
    );
    assert!(imp.text.matches("Gather(table: \"arg6\"").count() == 12);
    // The LLaMA scan: 4 layers of equal length, GQA's repeat expanded, each layer's
    // weights gathered at its index.
    let (path, text) = model("llama_4layer_scan_s256_bf16");
    let imp = import_text(&path, &text, &none()).unwrap();
    let per = computing_ops_per_layer(&imp, 5);
    assert!(per[..4].iter().all(|&n| n == per[0] && n > 50), "{per:?}");
    assert_eq!(per[4], 0, "4 layers");
    assert_eq!(imp.text.matches("Expand(").count(), 8, "2 repeats a layer");
    assert_eq!(imp.text.matches("Gather(table: \"arg5\"").count(), 4);
    let _ = Part::ALL;
    let _ = col;
}

/// The place of every op of an imported program, by position.
fn places(imp: &mnsim_sim::import::Imported) -> Vec<scenario::Place> {
    scenario::places_of(&imp.scenario.places, imp.scenario.program.len()).unwrap()
}

/// The parts of the ops whose printed text contains `what`.
fn parts_of(imp: &mnsim_sim::import::Imported, what: &str) -> BTreeSet<Option<Part>> {
    let p = places(imp);
    (imp.scenario.program.iter().enumerate())
        .filter(|(_, op)| mnsim_sim::scenario::pretty::op_text(op).contains(what))
        .map(|(i, _)| p[i].part)
        .collect()
}

#[test]
fn the_models_layers_and_parts_are_told() {
    for (name, layers) in [
        ("gpt2_small_prefill_s128_f32", 12),
        ("gpt2_small_decode_kv1024_f32", 12),
        ("llama_4layer_scan_s256_bf16", 4),
    ] {
        let (path, text) = model(name);
        let imp = import_text(&path, &text, &none()).unwrap();
        let p = places(&imp);
        // Every layer holds, in order, a norm, attention, a norm and an MLP.
        for l in 0..layers {
            let mut seq: Vec<Part> = Vec::new();
            for q in p.iter().filter(|q| q.layer == Some(l)) {
                if let Some(part) = q.part
                    && seq.last() != Some(&part)
                {
                    seq.push(part);
                }
            }
            // A scan gathers its layer's weights first (each in the part that reads
            // it); the layer's computation follows.
            let tail = &seq[seq.len().saturating_sub(4)..];
            assert_eq!(
                tail,
                [Part::Norm, Part::Attention, Part::Norm, Part::Mlp],
                "{name} layer {l}: {seq:?}"
            );
        }
        assert!(
            !p.iter().any(|q| q.layer == Some(layers)),
            "{name}: {layers} layers"
        );
        // The softmax's exp is attention's, the activation the MLP's, the norms' rsqrt
        // the norms'.
        // (LLaMA's SiLU takes an exp too, in its MLP.)
        let exp: BTreeSet<Option<Part>> = if name.starts_with("llama") {
            [Some(Part::Attention), Some(Part::Mlp)].into()
        } else {
            [Some(Part::Attention)].into()
        };
        assert_eq!(parts_of(&imp, "Unary(op: Exp"), exp, "{name}");
        assert_eq!(
            parts_of(&imp, "Unary(op: Rsqrt"),
            [Some(Part::Norm)].into(),
            "{name}"
        );
        if name.starts_with("gpt2") {
            assert_eq!(
                parts_of(&imp, "Unary(op: Tanh"),
                [Some(Part::Mlp)].into(),
                "{name}"
            );
            // The token lookup is the embedding's; the last product (the tied LM head)
            // the head's.
            assert_eq!(
                parts_of(&imp, "Gather(table: \"arg1\"")
                    .union(&parts_of(&imp, "Gather(table: \"arg2\""))
                    .copied()
                    .collect::<BTreeSet<_>>(),
                [Some(Part::Embedding)].into(),
                "{name}"
            );
            let last_mm = (imp.scenario.program.iter())
                .rposition(|op| mnsim_sim::scenario::pretty::op_text(op).contains("MatMul("))
                .unwrap();
            assert_eq!(p[last_mm].part, Some(Part::Head), "{name}");
            // So are the table's Load and the transpose it is read through: they make
            // the head's weight, not the final norm's output.
            let table = if name.contains("decode") {
                "arg2"
            } else {
                "arg1"
            };
            for what in ["Load(tensor: ", "Transpose(input: "] {
                let what = format!("{what}\"{table}\"");
                assert_eq!(
                    parts_of(&imp, &what),
                    [Some(Part::Head)].into(),
                    "{name}: {what}"
                );
            }
        } else {
            assert_eq!(parts_of(&imp, "Expand("), [Some(Part::Attention)].into());
        }
        if name.contains("decode") {
            assert_eq!(
                parts_of(&imp, "DynamicUpdateSlice"),
                [Some(Part::Attention)].into()
            );
        }
    }
}
