//! The files of oneDNN's corpus (`scenarios/workloads/onednn/`) that the training kinds and the
//! normalisations unblocked: each imports, runs in timing mode under the import's
//! default layouts, and (when every tensor has at most 2^21 elements) verifies in
//! functional mode against the host reference (all but `SLOW_FUNCTIONAL`, which
//! verify with `mnsim run`); the FLOP of a few from the file's
//! shapes; the SDPA training backward files, whose tensors overflowed LM together
//! under the old default layouts, run.

mod common;

use mnsim_reports::Report;
use mnsim_sim::import::{self, FUNCTIONAL_ELEMS, Options};
use mnsim_sim::scenario::{self, Mode, Source};
use std::path::PathBuf;

/// `scenarios/workloads/onednn`, oneDNN's corpus.
fn corpus() -> PathBuf {
    common::graphs::onednn_dir()
}

/// The files, under `corpus()`.
const FILES: [&str; 29] = [
    "op/f32/abs_bwd.json",
    "op/f32/biasadd_bwd.json",
    "op/f32/bnorm.json",
    "op/f32/bnorm_bwd.json",
    "op/f32/bnorm_fwd_d.json",
    "op/f32/clamp_bwd.json",
    "op/f32/elu_bwd.json",
    "op/f32/gnorm.json",
    "op/f32/greaterequal.json",
    "op/f32/hardsigmoid.json",
    "op/f32/hardsigmoid_bwd.json",
    "op/f32/lnorm_3d_bwd.json",
    "op/f32/lnorm_bwd.json",
    "op/f32/lnorm_ks.json",
    "op/f32/logsoftmax.json",
    "op/f32/logsoftmax_bwd.json",
    "op/f32/prelu.json",
    "op/f32/prelu_bwd.json",
    "op/f32/prelu_bwd_dw_5d.json",
    "op/f32/relu_bwd.json",
    "op/f32/rmsnorm.json",
    "op/f32/softmax_bwd.json",
    "op/f32/softmax_bwd_d_3d.json",
    "op/f32/softplus_bwd.json",
    "pattern/f32/bn_bwd_relu_bwd_fusion.json",
    "pattern/f32/bn_relu_fusion.json",
    "pattern/f32/lnorm_gelu.json",
    "complex_fusion/mha/sdpa-plain-training-backward-f32.json",
    "complex_fusion/mha/gqa-plain-training-backward-f32.json",
];

/// Small enough to verify, but slow in the functional engine: GQA's training backward
/// (about 3 minutes; it verifies), and BatchNormInference's [2,192,71,71] whose
/// backward and forward training (the same shapes) verify here.
const SLOW_FUNCTIONAL: [&str; 3] = [
    "complex_fusion/mha/gqa-plain-training-backward-f32.json",
    "op/f32/bnorm.json",
    "pattern/f32/bn_relu_fusion.json",
];

fn import_file(rel: &str) -> import::Imported {
    let path = corpus().join(rel);
    let src = Source {
        path: path.display().to_string(),
        text: std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}")),
    };
    import::import(&src, &Options::default()).unwrap_or_else(|e| panic!("{rel}: {e:?}"))
}

fn run(text: &str, name: &str, mode: Mode) -> Report {
    let sc = scenario::parse(text, name).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let src = Source {
        path: name.into(),
        text: text.into(),
    };
    let mut res = scenario::resolve(&sc, &src, Some("default"), &[], &Default::default())
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    res.mode = mode;
    mnsim_sim::run::run(&res)
        .unwrap_or_else(|e| panic!("{name} {mode:?}: {e}"))
        .report
}

#[test]
fn the_unblocked_files_run_and_the_small_ones_verify() {
    for rel in FILES {
        let imp = import_file(rel);
        let t = run(&imp.text, rel, Mode::Timing);
        assert!(t.total_cycles > 0, "{rel}");
        assert!(
            t.total_cycles >= t.bound_cycles,
            "{rel}: {} cycles beat the bound {}",
            t.total_cycles,
            t.bound_cycles
        );
        if imp.max_elems <= FUNCTIONAL_ELEMS && !SLOW_FUNCTIONAL.contains(&rel) {
            let f = run(&imp.text, rel, Mode::Functional);
            assert_eq!(f.verified, Some(true), "{rel}: not verified");
            assert_eq!(
                f.total_cycles, t.total_cycles,
                "{rel}: functional and timing cycles"
            );
        }
    }
}

/// The FLOP the report gives the op that writes `tensor`.
fn flops_of(r: &Report, tensor: &str) -> u64 {
    r.ops
        .iter()
        .filter(|o| o.tensor == tensor)
        .filter_map(|o| o.flops)
        .sum()
}

#[test]
fn flop_follow_the_shapes_of_the_file() {
    // ReLUBackward of [1,32,28,28]: 2 per element (a select, a multiply).
    let r = run(
        &import_file("op/f32/relu_bwd.json").text,
        "relu_bwd",
        Mode::Timing,
    );
    assert_eq!(flops_of(&r, "t2"), 2 * 32 * 28 * 28);
    // LogSoftmax of [64,128,28,28]: 11 per input and 1 per output element.
    let r = run(
        &import_file("op/f32/logsoftmax.json").text,
        "logsoftmax",
        Mode::Timing,
    );
    assert_eq!(flops_of(&r, "t1"), 12 * 64 * 128 * 28 * 28);
    // BatchNormInference of [2,192,71,71] with gamma and beta: 8 per element.
    let r = run(
        &import_file("op/f32/bnorm.json").text,
        "bnorm",
        Mode::Timing,
    );
    assert_eq!(flops_of(&r, "t5"), 8 * 2 * 192 * 71 * 71);
    // BiasAddBackprop of [1,128,32,32]: one add per input element.
    let r = run(
        &import_file("op/f32/biasadd_bwd.json").text,
        "biasadd_bwd",
        Mode::Timing,
    );
    assert_eq!(flops_of(&r, "t1"), 128 * 32 * 32);
}

#[test]
fn import_errors_name_the_attribute() {
    let graph = |kind: &str, attrs: &str| {
        format!(
            r#"{{"version": "3.7.0", "engine_kind": "cpu", "fpmath_mode": "strict", "graph": [
  {{"id": 0, "name": "op", "kind": "{kind}", "attrs": {{{attrs}}},
    "inputs": [{{"id": 0, "dtype": "f32", "shape": [2, 4, 3], "stride": [12, 3, 1], "layout_type": "strided", "property_type": "undef"}},
               {{"id": 1, "dtype": "f32", "shape": [2, 4, 3], "stride": [12, 3, 1], "layout_type": "strided", "property_type": "undef"}}],
    "outputs": [{{"id": 2, "dtype": "f32", "shape": [2, 4, 3], "stride": [12, 3, 1], "layout_type": "strided", "property_type": "undef"}}]}}]}}"#
        )
    };
    let fails = |text: String| -> String {
        let src = Source {
            path: "g.json".into(),
            text,
        };
        let e = format!(
            "{:?}",
            import::import(&src, &Options::default()).expect_err("the import must fail")
        );
        // The message as one line (the report wraps it in a box).
        common::one_line(&e)
    };
    let e = fails(graph(
        "SoftPlusBackward",
        r#""beta": {"type": "f32", "value": 0}"#,
    ));
    assert!(e.contains("nonzero beta"), "{e}");
    let e = fails(graph(
        "GELUBackward",
        r#""use_dst": {"type": "bool", "value": 1}"#,
    ));
    assert!(e.contains("has no derivative from its result"), "{e}");
    let e = fails(graph(
        "ClampBackward",
        r#""min": {"type": "f32", "value": 2}, "max": {"type": "f32", "value": 1}"#,
    ));
    assert!(e.contains("min 2 is above max 1"), "{e}");
    let e = fails(graph(
        "SoftMaxBackward",
        r#""axis": {"type": "s64", "value": 3}"#,
    ));
    assert!(e.contains("axis 3 is out of range for rank 3"), "{e}");
    let e = fails(graph("EluBackward", ""));
    assert!(e.contains("the attribute `alpha` is required"), "{e}");
}
