//! The real oneDNN graphs of `scenarios/workloads/graphs/`: every file imports, loads back,
//! runs in timing mode under the import's default layouts, and (when every tensor has
//! at most 2^21 elements) verifies in functional mode against the host reference; the
//! MatMul FLOP in the report equal 2·M·N·K·batch computed from the file. Bad files:
//! one test per error class, asserting the message.

mod common;

use mnsim_reports::Report;
use mnsim_sim::import::{self, Options, Strides};
use mnsim_sim::scenario::{self, Mode, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::graphs::dir as graphs_dir;

fn graph_files() -> Vec<PathBuf> {
    let v = common::graphs::files();
    assert!(v.len() >= 25, "{} graphs", v.len());
    v
}

/// Files whose input strides are not dense: they import with `--strides row-major`.
const NON_DENSE: [&str; 1] = ["matmul_select.json"];

/// Small enough to verify, but slow in the functional engine (minutes).
const SLOW_FUNCTIONAL: [&str; 1] = ["matmul_2d_4d.json"];

fn import_file(path: &Path) -> import::Imported {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let src = Source {
        path: path.display().to_string(),
        text: std::fs::read_to_string(path).unwrap(),
    };
    let opts = Options {
        strides: if NON_DENSE.contains(&name.as_str()) {
            Strides::RowMajor
        } else {
            Strides::File
        },
        ..Options::default()
    };
    import::import(&src, &opts).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn run_plan(text: &str, name: &str, plan: &str, mode: Mode) -> Report {
    let sc = scenario::parse(text, name).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let src = Source {
        path: name.into(),
        text: text.into(),
    };
    let mut res = scenario::resolve(&sc, &src, Some(plan), &[], &Default::default())
        .unwrap_or_else(|e| panic!("{name} {plan}: {e:?}"));
    res.mode = mode;
    mnsim_sim::run::run(&res)
        .unwrap_or_else(|e| panic!("{name} {plan} {mode:?}: {e}"))
        .report
}

/// 2·M·N·K·batch of every MatMul of the file, read from the JSON itself.
fn matmul_flops(path: &Path) -> Vec<u64> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut out = Vec::new();
    let mut ops: Vec<&serde_json::Value> = v["graph"].as_array().unwrap().iter().collect();
    // The import orders ops topologically; these files already are.
    ops.retain(|o| o["kind"] == "MatMul");
    for o in ops {
        let shape = |t: &serde_json::Value| -> Vec<u64> {
            t["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect()
        };
        let flag = |n: &str| {
            o["attrs"][n]["value"].as_u64().unwrap_or(0) == 1
                || o["attrs"][n]["value"].as_bool() == Some(true)
        };
        let (a, b) = (shape(&o["inputs"][0]), shape(&o["inputs"][1]));
        let out_shape = shape(&o["outputs"][0]);
        let k = if flag("transpose_a") {
            a[a.len() - 2]
        } else {
            a[a.len() - 1]
        };
        let (m, n) = (
            out_shape[out_shape.len() - 2],
            out_shape[out_shape.len() - 1],
        );
        let batch: u64 = out_shape[..out_shape.len() - 2].iter().product();
        assert!(b.len() >= 2);
        out.push(2 * m * n * k * batch);
    }
    out
}

#[test]
fn every_graph_imports_loads_back_runs_and_verifies() {
    let mut table = Vec::new();
    for path in graph_files() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let t0 = Instant::now();
        let imp = import_file(&path);
        // Round trip: the text is a scenario that loads and resolves in both plans.
        let sc = scenario::parse(&imp.text, &name).unwrap();
        assert_eq!(sc, imp.scenario, "{name}: the printed scenario parses back");
        assert!(
            sc.plans["auto"]
                .values()
                .all(|v| *v == scenario::PlanValue::Any),
            "{name}"
        );
        assert_eq!(sc.plans["auto"].len(), sc.plans["default"].len(), "{name}");
        let timing = run_plan(&imp.text, &name, "default", Mode::Timing);
        assert!(timing.total_cycles > 0, "{name}");
        // MatMul FLOP from the file.
        let want = matmul_flops(&path);
        let got: Vec<u64> = timing
            .ops
            .iter()
            .filter(|o| o.op.contains("MatMul"))
            .map(|o| o.flops.unwrap())
            .collect();
        assert_eq!(got, want, "{name}: MatMul FLOP");
        let small = imp.max_elems <= import::FUNCTIONAL_ELEMS;
        // matmul_2d_4d verifies too, but its 4·10^8 multiply-adds take minutes in the
        // functional engine: `the_big_matmul_verifies` (ignored by default) runs it.
        if small && !SLOW_FUNCTIONAL.contains(&name.as_str()) {
            let f = run_plan(&imp.text, &name, "default", Mode::Functional);
            assert_eq!(f.verified, Some(true), "{name}: {:?}", f.warnings);
            assert_eq!(f.total_cycles, timing.total_cycles, "{name}: modes agree");
        }
        table.push(format!(
            "{name}: {} cycles, functional {small}, {:.2} s",
            timing.total_cycles,
            t0.elapsed().as_secs_f64()
        ));
    }
    eprintln!("{}", table.join("\n"));
}

#[test]
#[ignore = "minutes: 4·10^8 multiply-adds in the functional engine"]
fn the_big_matmul_verifies() {
    for name in SLOW_FUNCTIONAL {
        let imp = import_file(&graphs_dir().join(name));
        let r = run_plan(&imp.text, name, "default", Mode::Functional);
        assert_eq!(r.verified, Some(true), "{name}: {:?}", r.warnings);
    }
}

#[test]
fn the_gpt_attention_block_verifies_under_its_default_plan() {
    let path = graphs_dir().join("MHA-GPT-inf-fp32-bs1.json");
    let imp = import_file(&path);
    assert!(imp.text.contains("mode: Functional"));
    let r = run_plan(&imp.text, "gpt", "default", Mode::Functional);
    assert_eq!(r.verified, Some(true), "{:?}", r.warnings);
    let kinds: Vec<&str> = r.ops.iter().map(|o| o.op.as_str()).collect();
    for k in [
        "BatchMatMul",
        "Select",
        "Binary",
        "Softmax",
        "Transpose",
        "Unary",
        "Store",
    ] {
        assert!(kinds.contains(&k), "{k} in {kinds:?}");
    }
}

#[test]
fn a_small_graph_is_planned_by_the_planner() {
    // `run` plans plan `auto` first; on a tiny graph the planner finds a plan.
    let path = graphs_dir().join("softmax_post_ops_unary_fusion.json");
    let (mut sc, mut src) = mnsim_sim::load::load(&path).unwrap();
    assert!(import::is_imported(&src));
    let msg = import::plan_auto(&mut sc, &mut src, &[], &Default::default());
    assert!(msg.starts_with("planned "), "{msg}");
    assert!(
        sc.plans["auto"]
            .values()
            .all(|v| *v != scenario::PlanValue::Any)
    );
    let mut res = scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default()).unwrap();
    res.mode = Mode::Functional;
    let r = mnsim_sim::run::run(&res).unwrap().report;
    assert_eq!(r.verified, Some(true));
}

// ---------------------------------------------------------------------------
// Errors: one per class, each naming the op / tensor / JSON path.
// ---------------------------------------------------------------------------

fn err_of(text: &str) -> String {
    let src = Source {
        path: "g.json".into(),
        text: text.into(),
    };
    let e = import::import(&src, &Options::default()).expect_err("must fail");
    flat(&format!("{e:?}"))
}

/// A rendered diagnostic on one line: wrapped lines joined, frame characters dropped.
fn flat(s: &str) -> String {
    s.lines()
        .map(|l| {
            l.trim_start_matches([' ', '│', '×', '┬', '·', '╰', '─', '╭', '▶'])
                .trim_end()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A one-op graph around `op` (inputs id 0, 1; output id 2 of shape [2,3]).
fn one(kind: &str, attrs: &str, in_dtype: &str, out_shape: &str) -> String {
    two(kind, attrs, in_dtype, out_shape)
}

/// The same with one input.
fn unary(kind: &str, attrs: &str) -> String {
    format!(
        r#"{{"graph": [{{"id": 7, "kind": "{kind}", "attrs": {{{attrs}}},
  "inputs": [{{"id": 0, "dtype": "f32", "shape": [2, 3], "stride": [3, 1], "layout_type": "strided", "property_type": "variable"}}],
  "outputs": [{{"id": 2, "dtype": "f32", "shape": [2, 3], "stride": [3, 1], "layout_type": "strided", "property_type": "variable"}}]}}]}}"#
    )
}

fn two(kind: &str, attrs: &str, in_dtype: &str, out_shape: &str) -> String {
    format!(
        r#"{{"version": "3.2.0", "graph": [{{"id": 7, "name": "x", "kind": "{kind}", "attrs": {{{attrs}}},
  "inputs": [{{"id": 0, "dtype": "{in_dtype}", "shape": [2, 3], "stride": [3, 1], "layout_type": "strided", "property_type": "variable"}},
             {{"id": 1, "dtype": "{in_dtype}", "shape": [2, 3], "stride": [3, 1], "layout_type": "strided", "property_type": "variable"}}],
  "outputs": [{{"id": 2, "dtype": "f32", "shape": {out_shape}, "stride": [3, 1], "layout_type": "strided", "property_type": "variable"}}]}}]}}"#
    )
}

#[test]
fn an_unsupported_kind_names_the_op() {
    let e = err_of(&one("Frobnicate", "", "f32", "[2, 3]"));
    assert!(
        e.contains("unknown or unsupported op kind `Frobnicate`"),
        "{e}"
    );
}

#[test]
fn an_unknown_dtype_names_the_tensor() {
    let e = err_of(&one("Add", "", "u16", "[2, 3]"));
    assert!(e.contains("graph[0].inputs[0].dtype (tensor id 0)"), "{e}");
    assert!(e.contains("unknown data type `u16`"), "{e}");
}

#[test]
fn malformed_json_points_at_the_place() {
    let e = err_of("{\"graph\": [1, 2}");
    assert!(e.contains("malformed JSON: expected `,` or `]`"), "{e}");
    assert!(e.contains("g.json:1:16"), "{e}");
}

#[test]
fn a_missing_member_names_the_json_path() {
    let text = one("Add", "", "f32", "[2, 3]").replace("\"kind\": \"Add\", ", "");
    let e = err_of(&text);
    assert!(e.contains("graph[0]: missing member `kind`"), "{e}");
    let e = err_of("{\"version\": \"1\"}");
    assert!(e.contains("missing member `graph`"), "{e}");
}

#[test]
fn a_wrong_output_shape_names_the_op() {
    let e = err_of(&one("Add", "", "f32", "[3, 2]"));
    assert!(e.contains("graph[0] (op id 7, kind Add)"), "{e}");
    assert!(
        e.contains("has shape [3, 2], but the inputs give [2, 3]"),
        "{e}"
    );
}

#[test]
fn a_bad_attribute_names_it() {
    let e = err_of(&unary(
        "SoftMax",
        "\"axis\": {\"type\": \"s64\", \"value\": 5}",
    ));
    assert!(e.contains("axis 5 is out of range for rank 2"), "{e}");
    let e = err_of(&unary(
        "Clamp",
        "\"min\": {\"type\": \"f32\", \"value\": \"low\"}",
    ));
    assert!(
        e.contains("attribute `min` must be a number, found a string"),
        "{e}"
    );
    let e = err_of(&unary("Elu", ""));
    assert!(e.contains("the attribute `alpha` is required"), "{e}");
    let e = err_of(
        &one(
            "Add",
            "\"auto_broadcast\": {\"type\": \"string\", \"value\": \"none\"}",
            "f32",
            "[2, 3]",
        )
        .replacen(
            "\"shape\": [2, 3], \"stride\": [3, 1]",
            "\"shape\": [1, 3], \"stride\": [3, 1]",
            1,
        ),
    );
    assert!(
        e.contains("`auto_broadcast: none` but the inputs' shapes differ"),
        "{e}"
    );
}

#[test]
fn non_dense_input_strides_are_an_error_unless_row_major() {
    let text =
        one("Add", "", "f32", "[2, 3]").replacen("\"stride\": [3, 1]", "\"stride\": [2, 1]", 1);
    let e = err_of(&text);
    assert!(
        e.contains("graph[0].inputs[0] (graph input, tensor id 0)"),
        "{e}"
    );
    assert!(e.contains("not a dense layout"), "{e}");
    assert!(e.contains("--strides row-major"), "{e}");
    let src = Source {
        path: "g.json".into(),
        text,
    };
    let opts = Options {
        strides: Strides::RowMajor,
        ..Options::default()
    };
    assert!(import::import(&src, &opts).is_ok());
}

#[test]
fn strides_give_the_dram_layout() {
    // A column-major input ([2,3] with strides [1,2]) is `{0,1}` in DRAM.
    let text =
        one("Add", "", "f32", "[2, 3]").replacen("\"stride\": [3, 1]", "\"stride\": [1, 2]", 1);
    let src = Source {
        path: "g.json".into(),
        text,
    };
    let imp = import::import(&src, &Options::default()).unwrap();
    assert!(
        imp.text
            .contains(r#""t0": (dtype: F32, shape: "f32[2,3]{0,1}", init: Random(seed: 0))"#),
        "{}",
        imp.text
    );
    assert!(
        imp.text
            .contains(r#""t1": (dtype: F32, shape: "f32[2,3]{1,0}", init: Random(seed: 1))"#),
        "{}",
        imp.text
    );
}

#[test]
fn a_cycle_a_dynamic_dimension_and_a_second_producer_are_errors() {
    let cyc = r#"{"graph": [
 {"id": 1, "kind": "ReLU", "inputs": [{"id": 5, "dtype": "f32", "shape": [2]}], "outputs": [{"id": 6, "dtype": "f32", "shape": [2]}]},
 {"id": 2, "kind": "ReLU", "inputs": [{"id": 6, "dtype": "f32", "shape": [2]}], "outputs": [{"id": 5, "dtype": "f32", "shape": [2]}]}]}"#;
    let e = err_of(cyc);
    assert!(e.contains("the graph has a cycle"), "{e}");
    let dynamic =
        one("Add", "", "f32", "[2, 3]").replacen("\"shape\": [2, 3]", "\"shape\": [-1, 3]", 1);
    let e = err_of(&dynamic);
    assert!(
        e.contains("graph[0].inputs[0].shape[0] (tensor id 0): a dynamic dimension"),
        "{e}"
    );
    let two = r#"{"graph": [
 {"id": 1, "kind": "ReLU", "inputs": [{"id": 5, "dtype": "f32", "shape": [2]}], "outputs": [{"id": 6, "dtype": "f32", "shape": [2]}]},
 {"id": 2, "kind": "Exp", "inputs": [{"id": 5, "dtype": "f32", "shape": [2]}], "outputs": [{"id": 6, "dtype": "f32", "shape": [2]}]}]}"#;
    let e = err_of(two);
    assert!(
        e.contains("tensor id 6 is also an output of graph[0]"),
        "{e}"
    );
}

#[test]
fn empty_output_ports_are_refused_pointing_at_them() {
    // `[]` would store nothing and so compute nothing: refused, saying how to store the
    // tensors no op consumes (leave the member out).
    let text = one("Add", "", "f32", "[2, 3]").replacen("{", "{\"output_ports\": [], ", 1);
    let e = err_of(&text);
    assert!(
        e.contains("output_ports: the list is empty, so the graph would compute and store nothing"),
        "{e}"
    );
    assert!(e.contains("leave out `output_ports`"), "{e}");
    assert!(e.contains("g.json:1:18"), "{e}");
    // Left out, the produced tensor no op consumes is stored.
    let src = Source {
        path: "g.json".into(),
        text: one("Add", "", "f32", "[2, 3]"),
    };
    let i = import::import(&src, &Options::default()).unwrap();
    assert!(i.text.contains("Store(tensor: \"t2\""), "{}", i.text);
}

#[test]
fn ids_take_the_whole_unsigned_64_bit_range() {
    // oneDNN's ids are size_t: 2^64 - 1 is an id like any other.
    let max = u64::MAX.to_string();
    let text = one("Add", "", "f32", "[2, 3]")
        .replace("\"id\": 2,", &format!("\"id\": {max},"))
        .replace("\"id\": 7,", &format!("\"id\": {max},"));
    let src = Source {
        path: "g.json".into(),
        text: text.clone(),
    };
    let i = import::import(&src, &Options::default())
        .unwrap_or_else(|e| panic!("{}", flat(&format!("{e:?}"))));
    assert!(i.text.contains(&format!("t{max}")), "{}", i.text);
    let res = scenario::resolve(
        &i.scenario,
        &Source {
            path: "g".into(),
            text: i.text.clone(),
        },
        Some("default"),
        &[],
        &BTreeMap::new(),
    )
    .unwrap();
    mnsim_sim::run::run(&res).unwrap();
    // One more, or a negative id, is refused with the range ids take.
    for bad in ["18446744073709551616", "-1"] {
        let e = err_of(&text.replacen(&max, bad, 1));
        assert!(
            e.contains(&format!(
                "`id` must be an integer from 0 to 2^64 - 1 ({max}), found {bad}"
            )),
            "{bad}: {e}"
        );
    }
}

#[test]
fn the_cli_imports_checks_and_fails_cleanly() {
    let bin = env!("CARGO_BIN_EXE_mnsim");
    let tmp = common::tmp::tempdir("import");
    let dir = tmp.path();
    let out = dir.join("clamp.ron");
    let g = graphs_dir().join("clamp.json");
    let st = std::process::Command::new(bin)
        .args(["import", g.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let st = std::process::Command::new(bin)
        .args(["check", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    // `run` takes the JSON directly, plans it first and says so.
    let st = std::process::Command::new(bin)
        .args(["run", g.to_str().unwrap(), "--mode", "timing"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(st.status.success(), "{err}");
    assert!(
        err.contains("note: planned") || err.contains("plan `auto` takes the default layouts"),
        "{err}"
    );
    // A bad file: non-zero exit, the message, nothing written.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, one("Convolution", "", "f32", "[2, 3]")).unwrap();
    let out2 = dir.join("bad.ron");
    let st = std::process::Command::new(bin)
        .args([
            "import",
            bad.to_str().unwrap(),
            "-o",
            out2.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!st.status.success());
    assert!(flat(&String::from_utf8_lossy(&st.stderr)).contains("kind Convolution"));
    assert!(!out2.exists());
    let st = std::process::Command::new(bin)
        .args(["run", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!st.status.success());
    assert!(
        flat(&String::from_utf8_lossy(&st.stderr))
            .contains("a convolution needs batch, channels and 1 to 3 spatial axes")
    );
}

/// The shipped examples in `scenarios/graphs/` are what `mnsim import` writes today,
/// and they run (GPT attention verifies in functional mode).
#[test]
fn the_shipped_graph_scenarios_are_current_and_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/graphs");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "ron") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let fresh = import_file(&graphs_dir().join(format!("{stem}.json")));
        assert_eq!(
            text, fresh.text,
            "{stem}: re-import with `mnsim import` and commit"
        );
        let r = run_plan(&text, &stem, "default", Mode::Timing);
        assert!(r.total_cycles > 0);
        if text.contains("mode: Functional") {
            let f = run_plan(&text, &stem, "default", Mode::Functional);
            assert_eq!(f.verified, Some(true), "{stem}");
        }
        n += 1;
    }
    assert!(n >= 2, "{n} graph scenarios");
}
