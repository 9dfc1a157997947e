//! `mnsim run`: the same reports at any thread count, and bad input of every kind ends
//! with a located error and nothing written under `--out`.

mod common;

use common::tmp::tempdir;
use mnsim_sim::scenario::{self, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mnsim(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnsim"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs mnsim")
}

/// Every file under `dir` (relative path → bytes).
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).expect("under dir").to_path_buf();
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

fn blog() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/transfer_blog_1024x512.ron")
        .display()
        .to_string()
}

// ---------------------------------------------------------------------------
// Determinism across threads
// ---------------------------------------------------------------------------

#[test]
fn reports_are_byte_identical_at_any_thread_count() {
    let tmp = tempdir("cli-run-threads");
    let scenario = blog();
    // The scenario runs in functional mode; `--mode timing` counts without data.
    for (mode, extra) in [("functional", None), ("timing", Some("timing"))] {
        let mut outs = Vec::new();
        for threads in ["1", "2"] {
            let out = tmp.path().join(format!("{mode}-{threads}"));
            let out_s = out.display().to_string();
            let mut args = vec!["run", scenario.as_str(), "--out", out_s.as_str()];
            if let Some(m) = extra {
                args.extend(["--mode", m]);
            }
            let o = mnsim(&args, &[("RAYON_NUM_THREADS", threads)]);
            assert!(
                o.status.success(),
                "{mode} with {threads} threads: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            outs.push(files(&out));
        }
        let (one, two) = (&outs[0], &outs[1]);
        let names: Vec<String> = one.keys().map(|p| p.display().to_string()).collect();
        for plan in ["blog", "cols", "bcast"] {
            assert!(
                names.contains(&format!("{plan}/report.json")),
                "{mode}: {names:?}"
            );
        }
        assert!(names.contains(&"compare.json".to_string()), "{names:?}");
        assert_eq!(
            one.keys().collect::<Vec<_>>(),
            two.keys().collect::<Vec<_>>()
        );
        for (name, bytes) in one {
            assert!(
                *bytes == two[name],
                "{mode}: {} differs between 1 and 2 threads",
                name.display()
            );
        }
        let json: serde_json::Value =
            serde_json::from_slice(&one[Path::new("blog/report.json")]).expect("json");
        assert_eq!(json["mode"], mode);
        let verified = if mode == "functional" {
            serde_json::Value::Bool(true)
        } else {
            serde_json::Value::Null
        };
        assert_eq!(json["verified"], verified);
        assert!(json["total_cycles"].as_u64().unwrap() > 0);
    }
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

/// 1-based line and column (in characters) of the first `marker` in `text`.
fn line_col(text: &str, marker: &str) -> (usize, usize) {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("`{marker}` not in the text"));
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before[before.rfind('\n').map_or(0, |k| k + 1)..]
        .chars()
        .count()
        + 1;
    (line, col)
}

/// What a bad run must say: a message, and where (`marker` in the file: its line, and
/// its column unless `exact_col` is false).
struct Bad {
    what: &'static str,
    text: String,
    args: Vec<&'static str>,
    message: &'static str,
    marker: Option<&'static str>,
    exact_col: bool,
}

fn toy4(tensors: &str, program: &str, plans: &str) -> String {
    format!(
        "Scenario(\n    name: \"bad\",\n    machine: Preset(\"toy4\"),\n    tensors: {{\n{tensors}\n    }},\n    program: [\n{program}\n    ],\n{plans})\n"
    )
}

const X: &str = r#"        "x": (dtype: F32, shape: "f32[12,8]", init: Random(seed: 1)),"#;
const LOAD: &str = r#"        Load(tensor: "x", layout: "((4_PE, 3), (8))"),"#;

fn bad_cases() -> Vec<Bad> {
    vec![
        Bad {
            what: "a layout above LM capacity",
            text: toy4(
                r#"        "x": (dtype: F32, shape: "f32[1024,1024]", init: Zeros),"#,
                r#"        Load(tensor: "x", layout: "((1024:1024), (1024:1); B@[PE])"),"#,
                "",
            ),
            args: vec![],
            message: "exceeds the PE's 4096-byte memory",
            // The label marks the memory sub-axis.
            marker: Some("1024:1024)"),
            exact_col: true,
        },
        Bad {
            what: "tensors together above LM capacity",
            text: toy4(
                r#"        "x": (dtype: F32, shape: "f32[4,600]", init: Zeros),
        "y": (dtype: F32, shape: "f32[4,600]", init: Zeros),"#,
                r#"        Load(tensor: "x", layout: "((4_PE), (600))"),
        Load(tensor: "y", layout: "((4_PE), (600))"),"#,
                "",
            ),
            args: vec![],
            message: "op 1 (Load of `y`): tensor `y` needs 600 LM words per PE but only 424 of 1024 are free",
            marker: Some(r#"Load(tensor: "y""#),
            exact_col: true,
        },
        Bad {
            what: "a tensor larger than DRAM",
            text: toy4(
                r#"        "x": (dtype: F32, shape: "f32[1073741824,64]", init: Zeros),"#,
                "",
                "",
            ),
            args: vec!["--mode", "functional"],
            message: "tensor `x` (f32[1073741824,64]: 256.0 GiB) does not fit in DRAM, which holds a copy of every tensor: toy4 has 16.0 MiB of DRAM",
            marker: Some(r#""f32[1073741824,64]""#),
            exact_col: true,
        },
        Bad {
            what: "a Reduce over a level the tensor is split on",
            text: toy4(
                X,
                &format!("{LOAD}\n        Reduce(tensor: \"x\", level: \"PE\", op: Add),"),
                "",
            ),
            args: vec![],
            message: "op 1 (Reduce of `x`): tensor `x` is split over PE, not partial",
            marker: Some("Reduce("),
            exact_col: true,
        },
        Bad {
            what: "an unknown tensor",
            text: toy4(X, &format!("{LOAD}\n        Store(tensor: \"xx\"),"), ""),
            args: vec![],
            message: "tensor `xx` is not declared in `tensors`; did you mean `x`?",
            marker: Some(r#""xx""#),
            exact_col: true,
        },
        Bad {
            what: "an unknown plan variable",
            text: toy4(
                X,
                r#"        Load(tensor: "x", layout: "$rows"),"#,
                "    plans: {\"p\": {\"row\": \"((4_PE, 3), (8))\"}},\n",
            ),
            args: vec![],
            message: "plan `p` has no variable `rows`; it sets: row; did you mean `$row`?",
            marker: Some(r#""$rows""#),
            exact_col: true,
        },
        Bad {
            what: "a RON typo",
            text: toy4(X, LOAD, "").replace("program:", "progam:"),
            args: vec![],
            message: "Unexpected field named `progam`",
            marker: Some("progam"),
            exact_col: true,
        },
        Bad {
            what: "an unknown --set knob",
            text: toy4(X, LOAD, ""),
            args: vec!["--set", "links.Board.distribute.parnet=2"],
            message: "--set links.Board.distribute.parnet=2: unknown knob 'links.Board.distribute.parnet'",
            marker: None,
            exact_col: false,
        },
        Bad {
            what: "--mode bogus",
            text: toy4(X, LOAD, ""),
            args: vec!["--mode", "bogus"],
            message: "invalid value 'bogus' for '--mode <MODE>'",
            marker: None,
            exact_col: false,
        },
    ]
}

#[test]
fn bad_input_is_located_and_writes_nothing() {
    let tmp = tempdir("cli-run-bad");
    for (k, bad) in bad_cases().into_iter().enumerate() {
        let file = tmp.path().join(format!("bad{k}.ron"));
        std::fs::write(&file, &bad.text).expect("write scenario");
        let file_s = file.display().to_string();
        let out = tmp.path().join(format!("out{k}"));
        let out_s = out.display().to_string();
        let mut args = vec!["run", file_s.as_str(), "--out", out_s.as_str()];
        args.extend(bad.args.iter().copied());
        let o = mnsim(&args, &[]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let what = bad.what;
        assert!(!o.status.success(), "{what}: exit 0\n{stderr}");
        assert!(stderr.contains("error"), "{what}: {stderr}");
        // miette wraps long lines; compare the text without line breaks and margins.
        let flat: String = stderr
            .lines()
            .map(|l| l.trim_start_matches([' ', '│', '×']))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(flat.contains(bad.message), "{what}: {stderr}");
        if let Some(m) = bad.marker {
            let (line, col) = line_col(&bad.text, m);
            let at = format!("{file_s}:{line}:");
            let found = stderr.match_indices(&at).any(|(i, _)| {
                let rest = &stderr[i + at.len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                !digits.is_empty() && (!bad.exact_col || digits == col.to_string())
            });
            assert!(
                found,
                "{what}: expected {file_s}:{line}:{}\n{stderr}",
                if bad.exact_col {
                    col.to_string()
                } else {
                    "COL".into()
                }
            );
        }
        assert!(!out.exists(), "{what}: {} was created", out.display());
    }
}

#[test]
fn a_plan_failing_at_run_time_leaves_an_existing_out_dir_unchanged() {
    let tmp = tempdir("cli-run-partial");
    // Plan `a` runs; plan `b` splits over PE, so its Reduce fails at run time.
    let text = toy4(
        X,
        "        Load(tensor: \"x\", layout: \"$x\"),\n        Reduce(tensor: \"x\", level: \"PE\", op: Max),\n        Store(tensor: \"x\"),",
        "    plans: {\"a\": {\"x\": \"((12), (8); B@[PE])\"}, \"b\": {\"x\": \"((4_PE, 3), (8))\"}},\n",
    );
    let file = tmp.path().join("s.ron");
    std::fs::write(&file, &text).unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // An earlier run's report.
    std::fs::write(out.join("report.md"), "earlier").unwrap();
    let before = files(&out);
    let (f, o) = (file.display().to_string(), out.display().to_string());
    let r = mnsim(&["run", &f, "--out", &o], &[]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success(), "{stderr}");
    let (line, col) = line_col(&text, "Reduce(");
    assert!(stderr.contains(&format!("{f}:{line}:{col}")), "{stderr}");
    assert!(stderr.contains("plan `b`"), "{stderr}");
    assert_eq!(files(&out), before);
    // Plan `a` alone runs and writes.
    let r = mnsim(&["run", &f, "--plan", "a", "--out", &o], &[]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(out.join("report.json").exists());
}

#[test]
fn run_errors_name_the_op_they_stopped_at() {
    let text = toy4(
        X,
        &format!("{LOAD}\n        Reduce(tensor: \"x\", level: \"PE\", op: Add),"),
        "",
    );
    let src = Source {
        path: "s.ron".into(),
        text,
    };
    let sc = scenario::parse(&src.text, &src.path).unwrap();
    let res = scenario::resolve(&sc, &src, None, &[], &BTreeMap::new()).unwrap();
    let Err(e) = mnsim_sim::run::run(&res) else {
        panic!("the Reduce must fail")
    };
    assert_eq!((e.op, e.tensor.as_deref()), (Some(1), None));
    assert!(e.to_string().contains("split over PE"), "{e}");
}

#[test]
fn schedule_flag_chooses_how_ops_are_placed() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/mlp_block.ron")
        .display()
        .to_string();
    let out = tempdir("cli-run-schedule");
    let total = |schedule: &str| -> serde_json::Value {
        let dir = out.path().join(schedule);
        let o = mnsim(
            &[
                "run",
                &file,
                "--plan",
                "gather",
                "--mode",
                "timing",
                "--schedule",
                schedule,
                "--out",
                dir.to_str().unwrap(),
            ],
            &[],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap()
    };
    let (seq, ovl) = (total("sequential"), total("overlapped"));
    assert_eq!(seq["schedule"], "sequential");
    assert_eq!(ovl["schedule"], "overlapped");
    let cycles = |r: &serde_json::Value| r["total_cycles"].as_u64().unwrap();
    // The pre-timeline total (pinned in sim/tests/snapshots), and less with overlap.
    assert_eq!(cycles(&seq), 7408);
    assert!(cycles(&ovl) < cycles(&seq));
    // Exposed cycles: all of them op after op; the run's length either way.
    let exposed = |r: &serde_json::Value| -> u64 {
        r["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["exposed_cycles"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(exposed(&seq), cycles(&seq));
    assert_eq!(exposed(&ovl), cycles(&ovl));
    // An unknown schedule is refused by name.
    let o = mnsim(&["run", &file, "--schedule", "eager"], &[]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("overlapped"));
}

/// `--out` holds one run: a compare's plan folders and compare page are gone once a single
/// plan is written there.
#[test]
fn out_holds_one_run() {
    let tmp = tempdir("out-one");
    let dir = tmp.path().join("out");
    let d = dir.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "scenarios/mlp_block.ron",
            "--mode",
            "timing",
            "--out",
            d,
        ];
        args.extend(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
            .args(&args)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[]);
    assert!(dir.join("compare.html").exists() && dir.join("gather").is_dir());
    run(&["--plan", "split_k"]);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(!names.contains(&"compare.html".to_string()), "{names:?}");
    assert!(!names.contains(&"gather".to_string()), "{names:?}");
    assert!(names.contains(&"report.json".to_string()), "{names:?}");
    // A folder with someone else's file is refused, untouched.
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args([
            "run",
            "scenarios/mlp_block.ron",
            "--mode",
            "timing",
            "--out",
            d,
        ])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("notes.txt"));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
}
