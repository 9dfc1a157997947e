//! The files of `scenarios/workloads/onednn/` that use Convolution, ConvTranspose, pooling or
//! Interpolate (and their backward kinds): every f32 one imports and runs in timing mode
//! under plan `auto`; a fixed sample of the small ones (every tensor ≤ 2^21 elements,
//! seconds each in the functional engine) verifies in functional mode with the same
//! cycles; no run or op beats its bound; the convolutions' FLOP in the report equal the graph's
//! `2·N·OC·Π output·(IC/groups)·Π window`; the int8 and f8 files never fail at one of
//! these kinds; and a bad attribute is an error at the op.

mod common;

use mnsim_reports::Report;
use mnsim_sim::import::{self, Options};
use mnsim_sim::scenario::{self, Mode, Source};
use std::path::{Path, PathBuf};

const KINDS: [&str; 12] = [
    "Convolution",
    "ConvolutionBackwardData",
    "ConvolutionBackwardWeights",
    "ConvTranspose",
    "ConvTransposeBackwardData",
    "ConvTransposeBackwardWeights",
    "MaxPool",
    "AvgPool",
    "MaxPoolBackward",
    "AvgPoolBackward",
    "Interpolate",
    "InterpolateBackward",
];

/// Small files that verify in seconds (the depthwise fusions take about a minute each).
const FUNCTIONAL: [&str; 12] = [
    "conv_2d.json",
    "conv_bwd_d_2d.json",
    "conv_bwd_w_2d.json",
    "deconv.json",
    "deconv_bwd_w.json",
    "interpolate.json",
    "interpolate_3d.json",
    "interpolate_bwd_2d.json",
    "convtranspose_post_ops_fusion.json",
    "interpolate_post_ops_chain_fusion_4.json",
    "maxpool_chain_fusion.json",
    "maxpool_sum_relu_fusion.json",
];

fn corpus() -> PathBuf {
    common::graphs::onednn_dir()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

/// The corpus files with one of [`KINDS`], and their parsed JSON.
fn files() -> Vec<(PathBuf, serde_json::Value)> {
    let mut all = Vec::new();
    walk(&corpus(), &mut all);
    all.sort();
    all.into_iter()
        .filter_map(|p| {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            let uses = v["graph"]
                .as_array()?
                .iter()
                .any(|o| KINDS.iter().any(|k| o["kind"] == *k));
            uses.then_some((p, v))
        })
        .collect()
}

fn is_f32(v: &serde_json::Value) -> bool {
    v["graph"].as_array().unwrap().iter().all(|o| {
        o["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .chain(o["outputs"].as_array().unwrap())
            .all(|t| t["dtype"] == "f32")
    })
}

fn run(path: &Path, mode: Mode) -> Report {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let (mut sc, mut src) = mnsim_sim::load::load(path).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let msg = import::plan_auto(&mut sc, &mut src, &[], &Default::default());
    assert!(msg.starts_with("planned "), "{name}: {msg}");
    let mut res = scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default())
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    res.mode = mode;
    mnsim_sim::run::run(&res)
        .unwrap_or_else(|e| panic!("{name} {mode:?}: {e}"))
        .report
}

fn dims(t: &serde_json::Value) -> Vec<u64> {
    t["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap())
        .collect()
}

/// `2·N·OC·Π output·(IC/groups)·Π window` of every Convolution, from the JSON.
fn conv_flops(v: &serde_json::Value) -> Vec<u64> {
    let mut out = Vec::new();
    for o in v["graph"].as_array().unwrap() {
        if o["kind"] != "Convolution" {
            continue;
        }
        let (x, w, y) = (
            dims(&o["inputs"][0]),
            dims(&o["inputs"][1]),
            dims(&o["outputs"][0]),
        );
        let nxc = o["attrs"]["data_format"]["value"] != "NCX";
        let oix = o["attrs"]["weights_format"]["value"] == "OIX";
        let g = o["attrs"]["groups"]["value"].as_u64().unwrap_or(1);
        let r = x.len();
        let (ic, oc) = if nxc {
            (x[r - 1], y[r - 1])
        } else {
            (x[1], y[1])
        };
        let out_sp: u64 = if nxc {
            y[1..r - 1].iter().product()
        } else {
            y[2..].iter().product()
        };
        let window: u64 = if oix {
            w[2..].iter().product()
        } else {
            w[..r - 2].iter().product()
        };
        out.push(2 * x[0] * oc * out_sp * (ic / g) * window);
    }
    out
}

#[test]
fn every_f32_file_runs_and_the_small_ones_verify() {
    let mut ran = 0;
    let mut verified = 0;
    for (path, v) in files() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !is_f32(&v) {
            continue;
        }
        let t = run(&path, Mode::Timing);
        assert!(t.total_cycles > 0, "{name}");
        // No run beats its bound, per op and in total.
        assert!(
            t.bound_cycles <= t.total_cycles,
            "{name}: bound {}",
            t.bound_cycles
        );
        for o in &t.ops {
            assert!(o.bound_cycles <= o.cycles, "{name}: {} {o:?}", o.op);
        }
        let got: Vec<u64> = t
            .ops
            .iter()
            .filter(|o| o.op == "Conv")
            .filter_map(|o| o.flops)
            .collect();
        let want = conv_flops(&v);
        if !want.is_empty() {
            // The convolutions' kernels, in order (backward kinds are `Conv` too).
            assert!(got.len() >= want.len(), "{name}: {got:?}");
            assert_eq!(&got[..want.len()], &want[..], "{name}: Convolution FLOP");
        }
        if FUNCTIONAL.contains(&name.as_str()) {
            let f = run(&path, Mode::Functional);
            assert_eq!(f.verified, Some(true), "{name}: {:?}", f.warnings);
            assert_eq!(f.total_cycles, t.total_cycles, "{name}: modes agree");
            verified += 1;
        }
        ran += 1;
    }
    assert!(ran >= 35, "{ran} f32 files ran");
    assert_eq!(verified, FUNCTIONAL.len());
}

/// The int8 and f8 files: a failure is never at a convolution, pooling or interpolation
/// op (their quantisation is another kernel's).
#[test]
fn quantised_files_never_fail_at_a_window_kind() {
    for (path, v) in files() {
        if is_f32(&v) {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let src = Source {
            path: name.clone(),
            text: std::fs::read_to_string(&path).unwrap(),
        };
        match import::import(&src, &Options::default()) {
            Ok(_) => {}
            Err(e) => {
                let e = format!("{e:?}");
                for k in KINDS {
                    assert!(!e.contains(&format!("kind {k})")), "{name}: {e}");
                }
            }
        }
    }
}

fn err_of(text: &str) -> String {
    let src = Source {
        path: "g.json".into(),
        text: text.into(),
    };
    let e = import::import(&src, &Options::default()).expect_err("must fail");
    // The rendered diagnostic on one line: wrapped lines joined, frame characters dropped.
    format!("{e:?}")
        .lines()
        .map(|l| {
            l.trim_start_matches([' ', '│', '×', '┬', '·', '╰', '─', '╭', '▶'])
                .trim_end()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn conv_graph(attrs: &str) -> String {
    format!(
        r#"{{"version": "3.2.0", "graph": [{{"id": 7, "name": "c", "kind": "Convolution", "attrs": {{{attrs}}},
  "inputs": [{{"id": 0, "dtype": "f32", "shape": [1, 4, 8, 8], "stride": [256, 64, 8, 1], "layout_type": "strided", "property_type": "variable"}},
             {{"id": 1, "dtype": "f32", "shape": [8, 4, 3, 3], "stride": [36, 9, 3, 1], "layout_type": "strided", "property_type": "variable"}}],
  "outputs": [{{"id": 2, "dtype": "f32", "shape": [1, 8, 8, 8], "stride": [512, 64, 8, 1], "layout_type": "strided", "property_type": "variable"}}]}}]}}"#
    )
}

fn attr(name: &str, ty: &str, value: &str) -> String {
    format!(r#""{name}": {{"type": "{ty}", "value": {value}}}"#)
}

#[test]
fn a_bad_convolution_attribute_is_an_error_at_the_op() {
    let good = [
        attr("strides", "s64[]", "[1, 1]"),
        attr("pads_begin", "s64[]", "[1, 1]"),
        attr("pads_end", "s64[]", "[1, 1]"),
        attr("dilations", "s64[]", "[1, 1]"),
        attr("data_format", "string", "\"NCX\""),
        attr("weights_format", "string", "\"OIX\""),
    ];
    let with = |i: usize, a: String| {
        let mut v = good.to_vec();
        v[i] = a;
        conv_graph(&v.join(", "))
    };
    // The good graph imports.
    let src = Source {
        path: "g.json".into(),
        text: conv_graph(&good.join(", ")),
    };
    import::import(&src, &Options::default()).unwrap();
    let e = err_of(&with(0, attr("strides", "s64[]", "[1]")));
    assert!(
        e.contains("kind Convolution") && e.contains("`strides` has 1 entries"),
        "{e}"
    );
    let e = err_of(&with(4, attr("data_format", "string", "\"NHWC\"")));
    assert!(e.contains("unknown data format `NHWC`"), "{e}");
    let e = err_of(&with(5, attr("weights_format", "string", "\"IOX\"")));
    assert!(
        e.contains("unknown weights format `IOX` (OIX or XIO)"),
        "{e}"
    );
    let e = err_of(&with(2, attr("pads_end", "s64[]", "[0, 0]")));
    assert!(
        e.contains("has shape [1, 8, 8, 8], but the inputs give [1, 8, 7, 7]"),
        "{e}"
    );
    let e = err_of(&with(0, attr("strides", "s64[]", "[0, 1]")));
    assert!(e.contains("at least 1"), "{e}");
    let e = err_of(&conv_graph(&good[1..].join(", ")));
    assert!(e.contains("the attribute `strides` is required"), "{e}");
}
