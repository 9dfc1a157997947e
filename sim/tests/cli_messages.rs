//! What the command line says: duplicate keys, a byte order mark, positions in
//! characters, numbers out of range, kernels' layout rules, `--bind` names, a plan left to
//! the planner, report numbering, and colour only where it belongs.

mod common;

use common::tmp::{TempDir, tempdir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn mnsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .current_dir(root())
        .env_remove("NO_COLOR")
        .output()
        .expect("runs")
}

/// A scratch folder of one test, removed when the value is dropped.
fn scratch() -> TempDir {
    tempdir("msg")
}

/// Writes a scenario into the scratch folder `dir` and returns its path.
fn scenario(dir: &TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(format!("{name}.ron"));
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// Stderr of a failed run (exit 1, no panic), joined into one line per message.
fn fails(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| l.trim_start().trim_start_matches(['│', '×']).trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const TOY: &str = r#"Scenario(
    name: "t",
    machine: Preset("toy4"),
    overrides: {"clock_ghz": 1.0},
    bind: {"n": 8},
    tensors: {
        "x": (dtype: F32, shape: "f32[n<=8,8]", init: Random(seed: 1)),
        "y": (dtype: F32, shape: "f32[n<=8,8]"),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Unary(op: Relu, input: "x", out: "y"),
        Store(tensor: "y"),
    ],
    plans: {
        "rows": {"x": "((4_PE, 2:8), (8:1))"},
    },
)"#;

#[test]
fn a_key_given_twice_is_refused_at_its_second_place_naming_the_first() {
    let dir = scratch();
    let cases = [
        (
            "tensors",
            r#"        "y": (dtype: F32, shape: "f32[n<=8,8]"),
"#,
            r#"        "y": (dtype: F32, shape: "f32[n<=8,8]"),
        "x": (dtype: F32, shape: "f32[8,8]"),
"#,
            ":9:9:",
            "`x` is given twice in `tensors` (first at line 7, column 9)",
        ),
        (
            "plans",
            r#"        "rows": {"x": "((4_PE, 2:8), (8:1))"},
"#,
            r#"        "rows": {"x": "((4_PE, 2:8), (8:1))"},
        "rows": {"x": "((8:1), (4_PE, 2:8))"},
"#,
            ":17:9:",
            "`rows` is given twice in `plans` (first at line 16, column 9)",
        ),
        (
            "vars",
            r#"{"x": "((4_PE, 2:8), (8:1))"}"#,
            r#"{"x": "((4_PE, 2:8), (8:1))", "x": Any}"#,
            ":16:47:",
            "`x` is given twice in the variables of plan `rows` (first at line 16, column 18)",
        ),
        (
            "bind",
            r#"bind: {"n": 8},"#,
            r#"bind: {"n": 8, "n": 4},"#,
            ":5:20:",
            "`n` is given twice in `bind` (first at line 5, column 12)",
        ),
        (
            "overrides",
            r#"overrides: {"clock_ghz": 1.0},"#,
            r#"overrides: {"clock_ghz": 1.0, "clock_ghz": 2.0},"#,
            ":4:35:",
            "`clock_ghz` is given twice in `overrides` (first at line 4, column 17)",
        ),
    ];
    assert!(
        ok(&mnsim(&["check", &scenario(&dir, "nodup", TOY)])).contains("ok  plan rows"),
        "the file without duplicates is fine"
    );
    for (name, from, to, at, want) in cases {
        assert!(TOY.contains(from), "{name}");
        let s = scenario(&dir, &format!("dup_{name}"), &TOY.replacen(from, to, 1));
        let err = fails(&mnsim(&["check", &s]));
        assert!(
            err.contains(&format!("dup_{name}.ron{at}")),
            "{name}: {err}"
        );
        assert!(err.contains(want), "{name}: {err}");
        assert!(err.contains("first given here"), "{name}: {err}");
    }
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_text() {
    let dir = scratch();
    let with = scenario(&dir, "bom", &format!("\u{feff}{TOY}"));
    assert!(ok(&mnsim(&["check", &with])).contains("ok  plan rows"));
    assert!(ok(&mnsim(&["run", &with])).contains("total"));
    // Errors point where an editor shows them: the same places as without the mark.
    let bad = TOY.replace("Relu", "Rleu");
    let err_with = fails(&mnsim(&[
        "check",
        &scenario(&dir, "bom_bad", &format!("\u{feff}{bad}")),
    ]));
    let err_without = fails(&mnsim(&["check", &scenario(&dir, "nobom_bad", &bad)]));
    assert!(err_with.contains("bom_bad.ron:12:19:"), "{err_with}");
    assert!(
        err_without.contains("nobom_bad.ron:12:19:"),
        "{err_without}"
    );
    assert!(!err_with.contains("Expected opening"), "{err_with}");
}

#[test]
fn columns_count_characters_in_the_message_and_in_the_snippet() {
    let dir = scratch();
    let s = scenario(
        &dir,
        "unicode",
        r#"Scenario(
    name: "u",
    machine: Preset("toy4"),
    tensors: {"ééé": (dtype: F32, shape: "f32[8,8]", init: Zeros)},
    program: [Load(tensor: "ééé", layout: "((4_PEX, 2:8), (8:1))"), Store(tensor: "ééé")],
)"#,
    );
    let err = fails(&mnsim(&["check", &s]));
    // `PEX` starts at character 46 of line 5 (byte 49: each `é` takes two bytes).
    assert!(err.contains("unicode.ron:5:46:"), "{err}");
    assert!(err.contains("unicode.ron:5:46]"), "{err}");
    assert!(!err.contains(":5:49"), "{err}");
}

#[test]
fn a_buffers_count_out_of_range_is_a_range_error() {
    let dir = scratch();
    for (text, want) in [
        (
            "18446744073709551615",
            "`buffers: 18446744073709551615` is out of range",
        ),
        ("1.5", "`buffers: 1.5`: a count of slices is a whole number"),
    ] {
        let s = scenario(
            &dir,
            "buffers_big",
            &TOY.replace(
                r#"Load(tensor: "x", layout: "$x")"#,
                &format!(r#"Load(tensor: "x", layout: "$x", buffers: {text})"#),
            ),
        );
        let err = fails(&mnsim(&["check", &s]));
        assert!(err.contains(want), "{err}");
        assert!(err.contains("buffers_big.ron:11:50:"), "{err}");
        assert!(!err.contains("untagged"), "{err}");
    }
}

#[test]
fn a_plan_whose_buffers_variable_is_left_to_the_planner_prints_and_writes_a_plan_that_runs() {
    let dir = scratch();
    let text = r#"Scenario(
    name: "planned buffers",
    machine: Preset("toy4"),
    plans: {
        "open": {"x": Any, "xb": Any},
    },
    tensors: {
        "x": (dtype: F32, shape: "f32[16,8]", init: Zeros),
        "y": (dtype: F32, shape: "f32[16,8]"),
    },
    program: [Load(tensor: "x", layout: "$x", buffers: "$xb"), Unary(op: Relu, input: "x", out: "y"), Store(tensor: "y")],
)"#;
    let s = scenario(&dir, "plan_buffers", text);
    let out = ok(&mnsim(&["plan", &s, "--work", "2000"]));
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("\"open\": {"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("\"xb\": \"auto\""), "{line}");
    // The printed plan, pasted into the file, runs.
    let pasted = text.replace(
        r#"        "open": {"x": Any, "xb": Any},"#,
        &format!(
            "{}\n{}",
            r#"        "open": {"x": Any, "xb": Any},"#,
            line.replace("\"open\"", "\"pasted\"")
        ),
    );
    let p = scenario(&dir, "plan_buffers_pasted", &pasted);
    assert!(ok(&mnsim(&["run", &p, "--plan", "pasted"])).contains("total"));
    // --write adds the same plan, and it runs.
    let out = mnsim(&["plan", &s, "--work", "2000", "--write", "chosen"]);
    ok(&out);
    assert!(ok(&mnsim(&["run", &s, "--plan", "chosen"])).contains("total"));
}

#[test]
fn select_messages_name_the_rule_that_applies() {
    let dir = scratch();
    let sel = |cond: &str, cond_layout: &str, tail: &str| {
        format!(
            r#"Scenario(
    name: "sel",
    machine: Preset("toy4"),
    tensors: {{
        "c": (dtype: Pred, shape: "{cond}", init: Ones),
        "a": (dtype: F32, shape: "f32[8,8]", init: Ones),
        "b": (dtype: F32, shape: "f32[8,8]", init: Zeros),
        "o": (dtype: F32, shape: "f32[8,8]"),
    }},
    program: [
        Load(tensor: "c", layout: "{cond_layout}"),
        Load(tensor: "a", layout: "((4_PE, 2:8), (8:1))"),
        Load(tensor: "b", layout: "((4_PE, 2:8), (8:1))"),
        Select(cond: "c", a: "a", b: "b", out: "o"{tail}),
        Store(tensor: "o"),
    ],
)"#
        )
    };
    // Without `layout:` the output follows `cond`, a pred: say so, not "its shape or type
    // differs from its input's".
    let s = scenario(
        &dir,
        "sel_nolayout",
        &sel("pred[8,8]", "((4_PE, 2:8), (8:1))", ""),
    );
    let err = fails(&mnsim(&["run", &s]));
    assert!(
        err.contains(
            "Select has no `layout:` for `o`, and an output without one is laid out like the op's first input, `c`, which is pred[8, 8] while `o` is f32[8, 8]: give `layout:`"
        ),
        "{err}"
    );
    // A lower-rank `cond` broadcasts along the output's leading axis: say that it
    // broadcasts (not that it "does not have" the axis), and name the kernel once.
    let s = scenario(
        &dir,
        "sel_bcast",
        &sel(
            "pred[8]",
            "((4_PE, 2:8))",
            r#", layout: "((4_PE, 2:8), (8:1))""#,
        ),
    );
    let err = fails(&mnsim(&["run", &s]));
    assert!(
        err.contains(
            "Select: the output `o` is split over PE along its axis 0 = (4_PE:1, 2:8), which input `c` broadcasts, so every PE position needs all of `c`"
        ),
        "{err}"
    );
    assert!(!err.contains("Select: Select"), "{err}");
}

#[test]
fn a_bind_that_names_no_dimension_is_an_error_naming_the_dimensions() {
    let dir = scratch();
    let s = scenario(&dir, "bind_typo", TOY);
    for cmd in ["check", "run"] {
        let err = fails(&mnsim(&[cmd, &s, "--bind", "m=4"]));
        assert!(
            err.contains("--bind m: no tensor has a dimension named `m`; did you mean `n`? the named dimensions are `n`"),
            "{err}"
        );
    }
    assert!(ok(&mnsim(&["run", &s, "--bind", "n=4"])).contains("total"));
    let err = fails(&mnsim(&[
        "shape",
        "index",
        "f32[b?,8]",
        "--index",
        "1,2",
        "--bind",
        "c=3",
    ]));
    assert!(
        err.contains(
            "--bind c=3: the shape has no dimension named `c`; its named dimensions are `b`"
        ),
        "{err}"
    );
}

#[test]
fn run_of_a_scenario_whose_every_plan_is_left_to_the_planner_fails_saying_how_to_plan() {
    let dir = scratch();
    let s = scenario(
        &dir,
        "all_any",
        &TOY.replace(
            r#""rows": {"x": "((4_PE, 2:8), (8:1))"},"#,
            r#""open": {"x": Any},"#,
        ),
    );
    for cmd in ["run", "compare"] {
        let out = mnsim(&[cmd, &s]);
        let err = fails(&out);
        assert!(out.stdout.is_empty());
        assert!(
            err.contains(
                "every plan sets variables to `Any`: nothing runs until they have layouts"
            ),
            "{err}"
        );
        assert!(err.contains("all_any.ron --write NAME"), "{err}");
        assert!(!err.contains("note:"), "the error says it all: {err}");
    }
}

/// `index` is the op's place in the program as written: `Free` ops count, and the Reduces
/// a run inserts carry the place of the op they follow and `inserted_after`.
#[test]
fn report_index_is_the_position_in_the_program() {
    let out = ok(&mnsim(&[
        "run",
        "scenarios/attention_block.ron",
        "--plan",
        "split_k",
        "--json",
    ]));
    let v: Value = serde_json::from_str(&out).unwrap();
    let ops = v[0]["ops"].as_array().unwrap();
    let got: Vec<(u64, &str, &str, Option<u64>)> = ops
        .iter()
        .map(|o| {
            (
                o["index"].as_u64().unwrap(),
                o["op"].as_str().unwrap(),
                o["tensor"].as_str().unwrap(),
                o["inserted_after"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, "Load", "q", None),
            (1, "Load", "kt", None),
            (2, "MatMul", "s", None),
            (2, "Reduce", "s", Some(2)),
            (5, "Softmax", "p", None),
            (7, "Load", "v", None),
            (8, "MatMul", "o", None),
            (9, "Store", "o", None),
        ]
    );
    // Program ops carry no `inserted_after` key at all.
    assert!(ops[0].get("inserted_after").is_none());
}

/// Colour on a terminal only, and never with `NO_COLOR` set: the summary and the
/// diagnostics (run under `script`, which gives the program a terminal).
#[test]
fn no_color_turns_colour_off_on_a_terminal() {
    let dir = scratch();
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_mnsim");
    let bad = scenario(&dir, "color_bad", &TOY.replace("Relu", "Rleu"));
    let on_tty = |cmd: &str, no_color: bool| -> String {
        let mut c = Command::new("script");
        c.args(["-qec", cmd, "/dev/null"])
            .current_dir(root())
            .env("TERM", "xterm-256color")
            .env_remove("NO_COLOR")
            .env_remove("FORCE_COLOR")
            .env_remove("CLICOLOR_FORCE");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        let out = c.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let run = format!("{bin} run scenarios/blog_12x8.ron --plan rows");
    let check = format!("{bin} check {bad}");
    assert!(on_tty(&run, false).contains('\x1b'), "colour on a terminal");
    assert!(!on_tty(&run, true).contains("\x1b["), "NO_COLOR: no colour");
    assert!(
        on_tty(&check, false).contains("\x1b["),
        "coloured diagnostics"
    );
    let plain = on_tty(&check, true);
    assert!(
        plain.contains("Rleu") && !plain.contains("\x1b["),
        "{plain:?}"
    );
    // Not a terminal: no colour either.
    let out = mnsim(&["run", "scenarios/blog_12x8.ron", "--plan", "rows"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\x1b'));
}
