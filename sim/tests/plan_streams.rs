//! Streams as the planner's model scores them and as its search finds them (docs/planner.md,
//! streams): a stream LM holds whole is read slice by slice by its later readers too, an
//! operand read twice is one stream, and a chain stream steps the rows of a norm so that
//! its Load, its reductions, its elementwise tail and its Store overlap.

mod common;

use std::path::Path;

/// A norm's shape: the row sums of `x`, subtracted from every element (a later read of
/// `x`), squared as `y * y` (one operand read twice), stored. `rows` and `feat` are
/// the layouts of the two axes of `x`, the sums' layout follows from `rows`.
fn norm(rows: &str, feat: &str) -> String {
    format!(
        r#"Scenario(
    name: "row sums subtracted, squared",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {{
        "x": (dtype: F32, shape: "f32[128,768]", init: Random(seed: 1)),
        "s": (dtype: F32, shape: "f32[128]"),
        "s_r": (dtype: F32, shape: "f32[128,1]"),
        "y": (dtype: F32, shape: "f32[128,768]"),
        "z": (dtype: F32, shape: "f32[128,768]"),
    }},
    program: [
        Load(tensor: "x", layout: "$x"),
        ReduceAxes(op: Add, input: "x", axes: [1], keep_dims: false, out: "s", layout: "$s"),
        Reshape(input: "s", shape: [128, 1], out: "s_r", layout: "$s_r"),
        Binary(op: Sub, a: "x", b: "s_r", out: "y", layout: "$y"),
        Free(tensor: "x"),
        Binary(op: Mul, a: "y", b: "y", out: "z", layout: "$z"),
        Free(tensor: "y"),
        Store(tensor: "z"),
    ],
    plans: {{
        "auto": {{"x": Any, "s": Any, "s_r": Any, "y": Any, "z": Any}},
        "rows": {{
            "x": "(({rows}), ({feat}))",
            "s": "(({rows}); B@[MAB,PE])",
            "s_r": "(({rows}), (1); B@[MAB,PE])",
            "y": "(({rows}), ({feat}))",
            "z": "(({rows}), ({feat}))",
        }},
    }},
)"#
    )
}

/// The model's cycles and the run's of plan `rows` of `text`.
fn model_and_run(text: &str) -> (u64, mnsim_reports::Report) {
    let (e, report) = common::model::model_and_run(text, "norm.ron", "rows");
    assert!(e.failure.is_none(), "{:?}", e.failure);
    (e.total_cycles, report)
}

/// Rows stepped on `Time` and `x` held whole (two slices): the Sub reads `x` slice by
/// slice after the ReduceAxes did, the Mul reads `y` once as a stream, and the Store
/// starts while the Load still sends. The model scores it as it runs; when it read the
/// later reader whole (and placed `y` twice) it waited for the whole Load.
#[test]
fn the_model_reads_a_stream_held_whole_slice_by_slice_at_every_reader() {
    let text = norm("8_L2B, 8_L1B, 2_Time", "16_MAB, 4_PE, 6, 2_W");
    let (model, r) = model_and_run(&text);
    assert_eq!(model, r.total_cycles);
    let load = r.ops.iter().find(|o| o.op == "Load").unwrap();
    let store = r.ops.iter().find(|o| o.op == "Store").unwrap();
    assert!(store.start < load.end, "{} {}", store.start, load.end);
    assert!(r.total_cycles < load.cycles + store.cycles);
    // Not stepped: the same program waits for the whole Load, in both.
    let whole = norm("8_L2B, 8_L1B, 2", "16_MAB, 4_PE, 6, 2_W");
    let (m2, r2) = model_and_run(&whole);
    assert_eq!(m2, r2.total_cycles);
    assert!(
        r.total_cycles < r2.total_cycles,
        "{} {}",
        r.total_cycles,
        r2.total_cycles
    );
}

/// The StableHLO softmaxes, planned as `mnsim run` plans them: the rows stream through
/// the max, the exponent, the sum and the division, within 1.8× of the bound.
#[test]
fn the_softmax_exports_plan_within_their_bound() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/workloads/stablehlo");
    for (file, bind) in [
        ("softmax_1x12x128x128_f32.mlir", None),
        ("softmax_dynB_12x128x128_f32.mlir", Some(("b", 2))),
    ] {
        let path = dir.join(file);
        let mut args = vec!["run", path.to_str().unwrap(), "--mode", "timing", "--json"];
        let b = bind.map(|(n, v)| format!("{n}={v}"));
        if let Some(b) = &b {
            args.extend(["--bind", b]);
        }
        // One report per plan run: the planned one.
        let reports: Vec<mnsim_reports::Report> =
            serde_json::from_str(&common::mnsim(&args)).unwrap();
        let r = &reports[0];
        let x = r.total_cycles as f64 / r.bound_cycles as f64;
        assert!(x <= 1.8, "{file}: {x:.2}× its bound");
        assert!(r.streams.iter().any(|s| s.slices > 1), "{file}: no stream");
    }
}

/// A stream its first reader does not take (the matmul reads `k` whole through its
/// transpose) is taken by the next reader, slice by slice, its slices sent again from
/// DRAM as the batched matmul needs them (as in oneDNN's `hf-sdpa-bwd` graph). The
/// model scores it as it runs; when it read the later reader's input whole it scored
/// this plan 2 M cycles short.
#[test]
fn a_stream_its_first_reader_does_not_take_goes_to_the_next() {
    let k = "((8_L2B, 8_L1B, 4_Time), (16_MAB), (4_PE, 4_Time, 8), (8, 4_W))";
    let text = format!(
        r#"Scenario(
    name: "a stream read whole, then slice by slice",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {{
        "q": (dtype: BF16, shape: "bf16[256,16,128,32]", init: Random(seed: 1)),
        "k": (dtype: BF16, shape: "bf16[256,16,128,32]", init: Random(seed: 2)),
        "s": (dtype: F32, shape: "f32[256,16,128,128]"),
        "p": (dtype: BF16, shape: "bf16[256,16,128,128]", init: Random(seed: 3)),
        "o": (dtype: BF16, shape: "bf16[256,16,128,32]"),
    }},
    program: [
        Load(tensor: "q", layout: "$q"),
        Load(tensor: "k", layout: "$k"),
        GeneralMatMul(a: "q", b: "k", out: "s", transpose_a: false, transpose_b: true, layout: "$s"),
        Free(tensor: "q"),
        Store(tensor: "s"),
        Free(tensor: "s"),
        Load(tensor: "p", layout: "$p"),
        BatchMatMul(a: "p", b: "k", out: "o", layout: "$o"),
        Free(tensor: "k"),
        Free(tensor: "p"),
        Store(tensor: "o"),
    ],
    plans: {{
        "auto": {{"q": Any, "k": Any, "s": Any, "p": Any, "o": Any}},
        "rows": {{
            "q": "((8_L2B, 8_Time, 4_PE), (16_Time), (4_Time, 32), (8, 4_W); B@[L1B,MAB])",
            "k": "{k}",
            "s": "((8_L2B, 8_L1B, 4_Time), (16_MAB), (4_PE, 16_Time, 2), (64, 2_W))",
            "p": "((8_L2B, 8_L1B, 4_Time), (16_MAB), (4_PE, 16_Time, 2), (32, 4_W))",
            "o": "{k}",
        }},
    }},
)"#
    );
    let (model, r) = model_and_run(&text);
    let k = r.streams.iter().find(|s| s.tensor == "k").unwrap();
    assert!(k.resent_slices > 0, "{k:?}");
    let bmm = r.ops.iter().find(|o| o.op == "BatchMatMul").unwrap();
    assert!(bmm.work_cycles >= k.resend_cycles, "{bmm:?}");
    assert_eq!(model, r.total_cycles);
}

/// A program Relayout (as `plan --write` writes the ones a plan needs) whose output its
/// reader walks slice by slice: the engine defers the Relayout's sends to the reader's
/// walk, and a slice the batched matmul needs again is sent again, the Relayout's
/// cycles and holds paid once more. The model scores it as it runs; when it read a
/// Relayout's output whole it scored the StableHLO attention block of 512 tokens
/// 657,518 cycles where its plan ran 906,018.
#[test]
fn a_relayouts_stream_is_read_slice_by_slice_re_sends_and_all() {
    let k = "((8_L2B, 8_L1B, 4_Time), (16_MAB), (4_PE, 4_Time, 8), (8, 4_W))";
    let x = "((8_L1B, 4_Time, 8), (16_MAB), (4_PE, 32), (8, 4_W); B@[L2B])";
    let text = format!(
        r#"Scenario(
    name: "a relayout streamed into a batched matmul",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {{
        "x": (dtype: BF16, shape: "bf16[256,16,128,32]", init: Random(seed: 2)),
        "k": (dtype: BF16, shape: "bf16[256,16,128,32]"),
        "p": (dtype: BF16, shape: "bf16[256,16,128,128]", init: Random(seed: 3)),
        "o": (dtype: BF16, shape: "bf16[256,16,128,32]"),
    }},
    program: [
        Load(tensor: "x", layout: "$x"),
        Unary(op: Neg, input: "x", out: "k", layout: "$k"),
        Free(tensor: "x"),
        Relayout(tensor: "k", layout: "{k}"),
        Load(tensor: "p", layout: "$p"),
        BatchMatMul(a: "p", b: "k", out: "o", layout: "$o"),
        Free(tensor: "k"),
        Free(tensor: "p"),
        Store(tensor: "o"),
    ],
    plans: {{
        "auto": {{"x": Any, "k": Any, "p": Any, "o": Any}},
        "rows": {{
            "x": "{x}",
            "k": "{x}",
            "p": "((8_L2B, 8_L1B, 4_Time), (16_MAB), (4_PE, 16_Time, 2), (32, 4_W))",
            "o": "{k}",
        }},
    }},
)"#
    );
    let (model, r) = model_and_run(&text);
    let k = (r.streams.iter())
        .find(|s| s.tensor == "k" && s.producer == 2)
        .unwrap();
    assert!(k.resent_slices > 0, "{k:?}");
    assert_eq!(model, r.total_cycles);
}
