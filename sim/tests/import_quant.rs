//! oneDNN files with low-precision types, quantisation, mixed precision, `undef`
//! layouts, inferred dimensions and rank-1 MatMul operands: small hand-written graphs
//! for each rule, and the real corpus files of `scenarios/workloads/onednn/` that use them.

mod common;

use mnsim_reports::Report;
use mnsim_sim::import::{self, Options};
use mnsim_sim::scenario::{Mode, Source};
use std::path::PathBuf;

fn import_text(text: &str) -> Result<import::Imported, String> {
    let src = Source {
        path: "g.json".into(),
        text: text.into(),
    };
    import::import(&src, &Options::default()).map_err(|e| format!("{e:?}"))
}

/// Runs an imported scenario under plan `default` in `mode`.
fn run(imp: &import::Imported, name: &str, mode: Mode) -> Report {
    common::graphs::run_imported(imp, name, "default", &[], mode).report
}

/// A logical tensor in oneDNN's JSON.
fn t(id: u64, dtype: &str, shape: &str, layout: &str) -> String {
    format!(
        r#"{{"id": {id}, "dtype": "{dtype}", "shape": {shape}, "stride": [-9223372036854775808], "layout_type": "{layout}", "property_type": "undef"}}"#
    )
}

fn op(id: u64, kind: &str, attrs: &str, ins: &[String], outs: &[String]) -> String {
    format!(
        r#"{{"id": {id}, "name": "op{id}", "kind": "{kind}", "attrs": {{{attrs}}}, "inputs": [{}], "outputs": [{}]}}"#,
        ins.join(", "),
        outs.join(", ")
    )
}

fn graph(ops: &[String]) -> String {
    format!(r#"{{"version": "3.0.0", "graph": [{}]}}"#, ops.join(", "))
}

/// Dequantize (u8, zero point 3) → MatMul with a bf16 operand cast... in f32, then
/// Quantize back to s8: imports with the generic `Quant` kernel and verifies.
#[test]
fn a_quantised_matmul_verifies() {
    let attrs = |zp: i64, scale: f64| {
        format!(
            r#""qtype": {{"type": "string", "value": "per_tensor"}}, "axis": {{"type": "s64", "value": 1}},
               "scales": {{"type": "f32[]", "value": [{scale}]}}, "zps": {{"type": "s64[]", "value": [{zp}]}}"#
        )
    };
    let g = graph(&[
        op(
            0,
            "Dequantize",
            &attrs(3, 0.5),
            &[t(0, "u8", "[8, 16]", "strided")],
            &[t(1, "f32", "[8, 16]", "strided")],
        ),
        op(
            1,
            "Dequantize",
            &attrs(0, 0.25),
            &[t(2, "s8", "[16, 4]", "strided")],
            &[t(3, "f32", "[16, 4]", "strided")],
        ),
        op(
            2,
            "MatMul",
            "",
            &[
                t(1, "f32", "[8, 16]", "strided"),
                t(3, "f32", "[16, 4]", "strided"),
            ],
            &[t(4, "f32", "[8, 4]", "strided")],
        ),
        op(
            3,
            "Quantize",
            &attrs(-2, 2.0),
            &[t(4, "f32", "[8, 4]", "strided")],
            &[t(5, "s8", "[8, 4]", "strided")],
        ),
    ]);
    let imp = import_text(&g).unwrap();
    assert!(imp.text.contains("Kernel(kernel: Quant("), "{}", imp.text);
    let r = run(&imp, "q.json", Mode::Functional);
    assert_eq!(r.verified, Some(true));
    // FLOP: 2 per element for each Dequantize, 2·M·N·K for the MatMul, 5 per element
    // for the Quantize.
    assert_eq!(r.flops(), 2 * 128 + 2 * 64 + 2 * 8 * 4 * 16 + 5 * 32);
}

/// `undef` layouts are dense row-major; a shape of −2^63 is inferred from its producer
/// (a Select's broadcast, a SoftMax's input); a rank-1 `b` is a column (numpy).
#[test]
fn undef_layouts_inferred_shapes_and_rank_1_operands() {
    let unknown = "[-9223372036854775808]";
    let g = graph(&[
        op(
            0,
            "Select",
            "",
            &[
                t(0, "boolean", "[1, 1, 4, 4]", "strided"),
                t(1, "f32", "[2, 3, 4, 4]", "undef"),
                t(2, "f32", "[1]", "strided"),
            ],
            &[t(3, "f32", unknown, "strided")],
        ),
        op(
            1,
            "SoftMax",
            r#""axis": {"type": "s64", "value": -1}"#,
            &[t(3, "f32", unknown, "strided")],
            &[t(4, "f32", unknown, "strided")],
        ),
        op(
            2,
            "MatMul",
            "",
            &[
                t(4, "f32", unknown, "strided"),
                t(5, "f32", "[4]", "strided"),
            ],
            &[t(6, "f32", "[2, 3, 4]", "strided")],
        ),
    ]);
    let imp = import_text(&g).unwrap();
    assert!(imp.text.contains("t3"), "{}", imp.text);
    let r = run(&imp, "i.json", Mode::Functional);
    assert_eq!(r.verified, Some(true));
    // The MatMul's FLOP: 2 · (2·3·4) · 4; the reshapes around it count none.
    let mm: u64 = r
        .ops
        .iter()
        .filter(|o| o.op.contains("MatMul"))
        .filter_map(|o| o.flops)
        .sum();
    assert_eq!(mm, 2 * 24 * 4);
    let moves: u64 = r
        .ops
        .iter()
        .filter(|o| o.op.contains("Reshape"))
        .filter_map(|o| o.flops)
        .sum();
    assert_eq!(moves, 0);

    // A graph input of unknown shape cannot be inferred.
    let g = graph(&[op(
        0,
        "ReLU",
        "",
        &[t(0, "f32", unknown, "strided")],
        &[t(1, "f32", "[2]", "strided")],
    )]);
    let e = import_text(&g).unwrap_err();
    let flat = common::one_line(&e);
    assert!(
        flat.contains("tensor id 0 has dimensions to be inferred (−2^63), but no op produces it"),
        "{e}"
    );
}

/// Mixed precision: bf16 operands, f32 result — no "never converts implicitly".
#[test]
fn a_mixed_precision_matmul_and_add_import_and_verify() {
    let g = graph(&[
        op(
            0,
            "MatMul",
            "",
            &[
                t(0, "bf16", "[8, 16]", "strided"),
                t(1, "bf16", "[16, 8]", "strided"),
            ],
            &[t(2, "f32", "[8, 8]", "strided")],
        ),
        op(
            1,
            "Add",
            "",
            &[
                t(2, "f32", "[8, 8]", "strided"),
                t(3, "bf16", "[8, 8]", "strided"),
            ],
            &[t(4, "bf16", "[8, 8]", "strided")],
        ),
    ]);
    let imp = import_text(&g).unwrap();
    let r = run(&imp, "m.json", Mode::Functional);
    assert_eq!(r.verified, Some(true));
}

// ---------------------------------------------------------------------------
// The real files.

fn corpus() -> PathBuf {
    common::graphs::onednn_dir()
}

/// Small corpus files (relative to `scenarios/workloads/onednn`) with int8, f8 or int4 tensors, or
/// mixed precision or a rank-1 MatMul operand: each imports, runs in timing mode, and
/// verifies in functional mode (the import picks functional mode with `verify` when
/// every tensor has at most 2^21 elements) with the same cycles.
const SMALL: [&str; 18] = [
    "op/f32/dequantize_s8.json",
    "op/f32/dequantize_u8.json",
    "op/f32/dequantize_f8_e4m3.json",
    "op/f32/dequantize_f8_e5m2.json",
    "op/f32/quantize.json",
    "op/f32/quantize_f8_e4m3.json",
    "op/f32/quantize_f8_e5m2.json",
    "op/f32/dynamicq.json",
    "op/f32/dynamicdq.json",
    "op/f32/dynamicdq_s4.json",
    "op/f16/dynamicdq_u4.json",
    "op/bf16/dynamicdq_s4.json",
    "pattern/int8/int8_bf16_matmul.json",
    "pattern/int8/int8_f32_matmul_mul_add_fusion.json",
    "pattern/int8/int8_matmul_logistic_fusion.json",
    "pattern/f8/f8_matmul.json",
    "pattern/f8/f8_f32_matmul_mul_add_fusion.json",
    "pattern/f32/matmul_post_ops_mul_fusion.json",
];

/// Larger ones (int8 attention, int8 per-group K, f16 and bf16 blocks with f32 results,
/// inferred shapes, packed-QKV views): they run in timing mode (the functional runs take
/// minutes; `/work/wt/onednn-coverage.sh`-style runs cover them).
const LARGE: [&str; 7] = [
    "complex_fusion/mha/MHA-distill_bert-inf-int8-bs1.json",
    "complex_fusion/mha/sdpa-compressed-k-int8-gs32.json",
    "complex_fusion/mha/sdpa-plain-simplified-f16-f32.json",
    "complex_fusion/mha/codegemma-bf16-f32.json",
    "complex_fusion/mha/timms-sdpa-fwd-no-mask-bf16-f32.json",
    "complex_fusion/mlp/gated-mlp-f16-f32.json",
    "pattern/int8/int8_matmul_bia_relu_fusion.json",
];

fn imported(f: &str) -> import::Imported {
    let path = corpus().join(f);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{f}: {e}"));
    import_text(&text).unwrap_or_else(|e| panic!("{f}: {e}"))
}

#[test]
fn small_quantised_and_mixed_corpus_files_run_and_verify() {
    for f in SMALL {
        let imp = imported(f);
        assert!(imp.text.contains("mode: Functional"), "{f} is not small");
        let timing = run(&imp, f, Mode::Timing);
        let r = run(&imp, f, Mode::Functional);
        assert_eq!(r.verified, Some(true), "{f} does not verify");
        assert_eq!(r.total_cycles, timing.total_cycles, "{f}");
    }
}

#[test]
fn large_quantised_and_mixed_corpus_files_run_in_timing_mode() {
    for f in LARGE {
        let r = run(&imported(f), f, Mode::Timing);
        assert!(r.total_cycles > 0, "{f}");
    }
}
