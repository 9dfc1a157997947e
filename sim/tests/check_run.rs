//! `mnsim check` says what `mnsim run --mode timing` will say: on bad scenarios (the
//! live set overflowing LM, a kernel's illegal layouts, DRAM, streams' buffers, an
//! unloaded tensor) and on every shipped scenario, `check` fails exactly when the run
//! does, with the run's message. And the functional run's memory estimate counts every
//! `Time` step LM keeps; a mistyped `MNSIM_MEMORY_LIMIT` is an error.

mod common;

use common::tmp::{TempDir, tempdir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mnsim(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnsim"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.env("NO_COLOR", "1");
    c.output().expect("runs mnsim")
}

/// Stderr as words (messages wrap at the terminal's width, behind `│`).
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr)
        .replace(['│', '×'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A scenario written to a file in a fresh temp folder, removed (with the folder) when
/// dropped.
struct Temp {
    path: PathBuf,
    _dir: TempDir,
}

impl Temp {
    fn new(name: &str, text: &str) -> Temp {
        let dir = tempdir("check-run");
        let p = dir.path().join(format!("{name}.ron"));
        std::fs::write(&p, text).unwrap();
        Temp { path: p, _dir: dir }
    }
}

/// `check` and `run --mode timing` agree on `path`: both succeed, or both fail and the
/// run's error is in what `check` says. Returns whether they failed, and the run's error.
fn agree(path: &Path) -> (bool, String) {
    let p = path.to_str().unwrap();
    let check = mnsim(&["check", p], &[]);
    let run = mnsim(&["run", p, "--mode", "timing"], &[]);
    assert_eq!(
        check.status.success(),
        run.status.success(),
        "{p}: check {:?} / run {:?}\ncheck: {}\nrun: {}",
        check.status,
        run.status,
        stderr(&check),
        stderr(&run)
    );
    // The run's error (after any note), as check must say it.
    let err = stderr(&run);
    let err = err
        .find("error:")
        .map_or(err.as_str(), |i| &err[i..])
        .to_string();
    if !run.status.success() {
        let said = stderr(&check);
        assert!(
            said.contains(err.trim()),
            "{p}: check does not say what run says\ncheck: {said}\nrun: {err}"
        );
    }
    (!run.status.success(), err)
}

fn toy4(tensors: &str, program: &str) -> String {
    format!(
        r#"Scenario(
    name: "bad",
    machine: Preset("toy4"),
    mode: Timing,
    tensors: {{ {tensors} }},
    program: [ {program} ],
)"#
    )
}

#[test]
fn check_fails_where_run_fails_with_its_message() {
    let cases = [
        (
            "live_set",
            // 400 words each: one or two fit toy4's 1024-word LM, the three do not.
            toy4(
                r#""a": (dtype: F32, shape: "f32[4,400]", init: Zeros),
                   "b": (dtype: F32, shape: "f32[4,400]", init: Zeros),
                   "c": (dtype: F32, shape: "f32[4,400]", init: Zeros),"#,
                r#"Load(tensor: "a", layout: "((4_PE), (400))"),
                   Load(tensor: "b", layout: "((4_PE), (400))"),
                   Load(tensor: "c", layout: "((4_PE), (400))"),"#,
            ),
            "LM",
        ),
        (
            "matmul_legality",
            // The contraction axis of `a` split over the PEs: MatMul cannot run there.
            toy4(
                r#""a": (dtype: F32, shape: "f32[8,8]", init: Zeros),
                   "b": (dtype: F32, shape: "f32[8,8]", init: Zeros),
                   "c": (dtype: F32, shape: "f32[8,8]"),"#,
                r#"Load(tensor: "a", layout: "((8), (4_PE, 2))"),
                   Load(tensor: "b", layout: "((8), (8); B@[PE])"),
                   MatMul(a: "a", b: "b", out: "c", layout: "((8), (4_PE, 2))"),"#,
            ),
            "MatMul",
        ),
        (
            "softmax_axis",
            toy4(
                r#""x": (dtype: F32, shape: "f32[8,8]", init: Zeros),
                   "y": (dtype: F32, shape: "f32[8,8]"),"#,
                r#"Load(tensor: "x", layout: "((8), (4_PE, 2))"),
                   Softmax(input: "x", axis: 1, out: "y"),"#,
            ),
            "Softmax",
        ),
        (
            "buffers",
            toy4(
                r#""x": (dtype: F32, shape: "f32[64,4]", init: Zeros),"#,
                r#"Load(tensor: "x", layout: "((2_Time, 8, 4_PE), (4))", buffers: 0),"#,
            ),
            "buffers",
        ),
        (
            "store_unloaded",
            toy4(
                r#""x": (dtype: F32, shape: "f32[64,4]", init: Zeros),"#,
                r#"Store(tensor: "x"),"#,
            ),
            "not in LM",
        ),
    ];
    for (name, text, says) in cases {
        let t = Temp::new(name, &text);
        let (failed, err) = agree(&t.path);
        assert!(failed, "{name}: run accepts it");
        assert!(err.contains(says), "{name}: {err}");
    }
}

#[test]
fn a_dimension_too_large_for_dram_fails_at_once_naming_the_tensor() {
    // 2^62 × 4 f32: more bytes than a u64 counts; 2^40 × 4: more than toy4's DRAM.
    for rows in [1u64 << 62, 1 << 40] {
        let text = toy4(
            &format!(
                r#""x": (dtype: F32, shape: "f32[{rows},4]", init: Zeros),
                   "y": (dtype: F32, shape: "f32[{rows},4]"),"#
            ),
            &format!(
                r#"Load(tensor: "x", layout: "((4_PE, {}), (4))"),
                   Softmax(input: "x", axis: 1, out: "y"),
                   Store(tensor: "y"),"#,
                rows / 4
            ),
        );
        let t = Temp::new(&format!("huge{rows}"), &text);
        let start = std::time::Instant::now();
        let (failed, err) = agree(&t.path);
        assert!(failed, "{rows}: run accepts it");
        assert!(err.contains("`x`"), "{err}");
        if rows == 1 << 40 {
            // Sizes a person reads: 2^40 × 4 f32 against toy4's 16 MiB.
            assert!(
                err.contains("(f32[1099511627776,4]: 16.0 TiB) does not fit in DRAM")
                    && err.contains("toy4 has 16.0 MiB of DRAM"),
                "{err}"
            );
        }
        assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    }
}

#[test]
fn check_and_run_agree_on_every_shipped_scenario() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = ["../scenarios", "tests/data"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    let mut bad = 0;
    for f in &files {
        let (failed, _) = agree(f);
        if f.starts_with(root.join("../scenarios")) {
            assert!(!failed, "{} runs", f.display());
        }
        bad += usize::from(failed);
    }
    assert!(bad >= 5, "the bad files of tests/data fail: {bad}");
}

const STEPPED: &str = r#"Scenario(
    name: "stepped",
    machine: Preset("toy4"),
    mode: Functional,
    tensors: {
        "x": (dtype: F32, shape: "f32[64,4]", init: Random(seed: 1)),
        "y": (dtype: F32, shape: "f32[64,4]"),
    },
    program: [
        Load(tensor: "x", layout: "((2_Time, 8, 4_PE), (4))"),
        Unary(op: Relu, input: "x", out: "y"),
        Free(tensor: "x"),
        Store(tensor: "y"),
    ],
    verify: false,
)"#;

#[test]
fn the_memory_estimate_counts_every_time_step_lm_keeps() {
    // The LMs of a functional run hold x and y with both their steps: the estimate is
    // what the run's LMs really hold.
    let sc = mnsim_sim::scenario::parse(STEPPED, "t.ron").unwrap();
    let src = mnsim_sim::scenario::Source {
        path: "t.ron".into(),
        text: STEPPED.into(),
    };
    let res = mnsim_sim::scenario::resolve(&sc, &src, None, &[], &Default::default()).unwrap();
    let mut timing = res.clone();
    timing.mode = mnsim_sim::scenario::Mode::Timing;
    let dry = mnsim_sim::run::run(&timing).unwrap();
    let lm = dry.engine.state.lm_high_water_bytes();
    assert_eq!(lm, 2 * 64 * 4, "x and y, 64 words of 4 bytes each per PE");
    let est = mnsim_sim::memory::estimate(&res, lm).unwrap();
    let mut real = mnsim_sim::run::run(&res).unwrap().engine;
    let held: u64 = {
        let mut q = real.state.sw.world.query::<&mnsim_sim::world::Lm>();
        q.iter(&real.state.sw.world)
            .map(|l| l.data.len() as u64)
            .sum()
    };
    assert_eq!(est.lm, held);
    assert_eq!(est.dram, 2 * 64 * 4 * 4);
    // A cap between the DRAM copies and the whole is refused, naming both parts.
    let t = Temp::new("stepped", STEPPED);
    let cap = (est.dram + est.lm / 2).to_string();
    let o = mnsim(
        &["run", t.path.to_str().unwrap()],
        &[("MNSIM_MEMORY_LIMIT", &cap)],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("PE local memories 2.0 KiB"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_memory_limit_that_is_not_a_size_is_an_error() {
    let t = Temp::new("limit", STEPPED);
    let p = t.path.to_str().unwrap();
    for bad in ["abc", "1.5GB", "-1", "", "12 34", "1e9"] {
        let o = mnsim(&["run", p], &[("MNSIM_MEMORY_LIMIT", bad)]);
        assert!(!o.status.success(), "{bad:?} accepted");
        let e = stderr(&o);
        assert!(
            e.contains("MNSIM_MEMORY_LIMIT") && e.contains("not a size"),
            "{bad:?}: {e}"
        );
    }
    for good in ["4096M", "3.5G", "1073741824", "1t"] {
        let o = mnsim(&["run", p], &[("MNSIM_MEMORY_LIMIT", good)]);
        assert!(o.status.success(), "{good}: {}", stderr(&o));
    }
    let tiny = mnsim(&["run", p], &[("MNSIM_MEMORY_LIMIT", "1K")]);
    assert!(
        stderr(&tiny).contains("more than the 1.0 KiB available"),
        "{}",
        stderr(&tiny)
    );
}

/// A oneDNN Graph of one SoftMax over `f32[rows,4]`.
fn softmax_graph(rows: u64) -> String {
    let t = |id: u64| {
        format!(
            r#"{{"id": {id}, "dtype": "f32", "shape": [{rows}, 4], "stride": [4, 1], "layout_type": "strided", "property_type": "undef"}}"#
        )
    };
    format!(
        r#"{{"version": "3.0.0", "engine_kind": "cpu", "fpmath_mode": "strict", "graph": [
            {{"id": 0, "name": "SOFTMAX_0", "kind": "SoftMax",
              "attrs": {{"axis": {{"type": "s64", "value": 1}}}},
              "inputs": [{}], "outputs": [{}]}}]}}"#,
        t(0),
        t(1)
    )
}

#[test]
fn a_graph_tensor_too_large_for_dram_fails_its_import_at_once() {
    // 2^62 × 4 f32 overflows a byte count; 2^36 × 4 f32 (1 TiB) is beyond mncore2's DRAM.
    // The import used to scan every divisor of the dimension for its default layout.
    for rows in [1u64 << 62, 1 << 36] {
        let dir = tempdir("check-run");
        let p = dir.path().join(format!("graph{rows}.json"));
        std::fs::write(&p, softmax_graph(rows)).unwrap();
        let path = p.to_str().unwrap();
        for args in [
            vec!["import", path],
            vec!["check", path],
            vec!["run", path, "--mode", "timing"],
        ] {
            let start = std::time::Instant::now();
            let o = mnsim(&args, &[]);
            let e = stderr(&o);
            assert!(!o.status.success(), "{args:?}");
            assert!(
                e.contains("tensor `t0`") && e.contains("graph tensor id 0"),
                "{args:?}: {e}"
            );
            assert!(e.contains("DRAM") || e.contains("2^64"), "{args:?}: {e}");
            assert!(
                start.elapsed().as_secs() < 10,
                "{args:?}: {:?}",
                start.elapsed()
            );
        }
    }
}

/// `check`'s op count for a plan: what follows `plan P: ` up to `, N tensors`.
fn check_count(path: &str, plan: &str) -> String {
    let out = mnsim(&["check", path, "--plan", plan], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.contains(&format!("plan {plan}:")))
        .unwrap_or_else(|| panic!("{text}"));
    let rest = line.split_once(": ").unwrap().1;
    rest[..rest.find(" tensors").unwrap()]
        .rsplit_once(", ")
        .unwrap()
        .0
        .to_string()
}

#[test]
fn check_and_the_report_count_the_same_ops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // A graph whose program frees every tensor after its last use, and a scenario whose
    // run inserts tree Reduces after a split contraction.
    for (file, plan, says) in [
        (
            "scenarios/workloads/graphs/MHA-GPT-inf-fp32-bs1.json",
            "default",
            "30 ops (14 Free)",
        ),
        (
            "scenarios/mlp_block.ron",
            "split_k",
            "8 ops + 2 inserted Reduces",
        ),
    ] {
        let path = root.join(file).display().to_string();
        let count = check_count(&path, plan);
        assert_eq!(count, says, "{file}");
        let run = mnsim(&["run", &path, "--plan", plan, "--mode", "timing"], &[]);
        assert!(run.status.success(), "{}", stderr(&run));
        let text = String::from_utf8_lossy(&run.stdout);
        let second = text.lines().nth(1).unwrap();
        assert!(second.ends_with(&format!(" · {count}")), "{file}: {second}");
        let json = mnsim(
            &["run", &path, "--plan", plan, "--mode", "timing", "--json"],
            &[],
        );
        let reports: Vec<mnsim_reports::Report> = serde_json::from_slice(&json.stdout).unwrap();
        let r = &reports[0];
        let inserted = r.ops.iter().filter(|o| o.inserted_after.is_some()).count() as u64;
        // Every program op but a Free is an entry of `ops`, and so is each inserted Reduce.
        assert_eq!(r.ops.len() as u64, r.program_ops - r.free_ops + inserted);
        assert_eq!(
            mnsim_reports::op_count(r.program_ops, r.free_ops, inserted),
            count
        );
    }
}
