//! Bad input through the binary: every class ends with a non-zero exit and a message
//! that names the culprit, never a panic; a closed stdout ends quietly.

mod common;

use common::tmp::{TempDir, tempdir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn mnsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("runs")
}

/// Writes a scenario into a scratch folder and returns the folder (removed when dropped:
/// keep it while the file is used) and the file's path.
fn scenario(name: &str, text: &str) -> (TempDir, String) {
    let dir = tempdir("bad");
    let p = dir.path().join(format!("{name}.ron"));
    std::fs::write(&p, text).unwrap();
    let p = p.to_str().unwrap().to_string();
    (dir, p)
}

/// The run fails with exit code 1, no panic, and stderr holding every one of `want`.
fn fails_with(out: &Output, want: &[&str]) -> String {
    // Messages wrap at the terminal's width: joined back into one line per message.
    let err = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| l.trim_start().trim_start_matches(['│', '×']).trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in want {
        assert!(err.contains(w), "expected `{w}` in:\n{err}");
    }
    err
}

const TOY: &str = r#"Scenario(
    name: "t",
    machine: Preset("toy4"),
    mode: Functional,
    tensors: {
        "x": (dtype: F32, shape: "f32[n<=8,8]", init: Random(seed: 1)),
        "y": (dtype: F32, shape: "f32[n<=8,8]"),
    },
    program: [
        Load(tensor: "x", layout: "((4_PE, 2:8), (8:1))"),
        Unary(op: Relu, input: "x", out: "y"),
        Store(tensor: "y"),
    ],
)"#;

/// Every subcommand, with arguments that print something on stdout.
fn every_subcommand(out_dir: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&[
            "layout",
            "map",
            "((4_PE, 3:8), (8:1))",
            "--shape",
            "12,8",
            "--json",
        ]),
        v(&[
            "layout",
            "explain",
            "((4_PE, 3:8), (8:1))",
            "--shape",
            "12,8",
        ]),
        v(&[
            "shape",
            "index",
            "f32[4,8]{1,0:T(2,4)(2,1)}",
            "--index",
            "2,3",
        ]),
        v(&["machines"]),
        v(&["machines", "mncore2"]),
        v(&["check", "scenarios/blog_12x8.ron"]),
        v(&["run", "scenarios/blog_12x8.ron"]),
        v(&["compare", "scenarios/blog_12x8.ron"]),
        v(&["plan", "scenarios/plan_layernorm.ron"]),
        v(&["sweep", "scenarios/blog_12x8.ron", "--set", "clock_ghz=1,2"]),
        v(&[
            "sweep",
            "scenarios/blog_12x8.ron",
            "--set",
            "clock_ghz=1,2",
            "--out",
            out_dir,
        ]),
        v(&["merge", "--out", &format!("{out_dir}-merged"), out_dir]),
    ]
}

#[test]
fn a_closed_stdout_ends_quietly_for_every_subcommand() {
    let tmp = tempdir("closed");
    let dir = tmp.path().join("out");
    let dir = dir.to_str().unwrap().to_string();
    for args in every_subcommand(&dir) {
        // The reader goes away before mnsim writes (`mnsim ... | head -0`).
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnsim"))
            .args(&args)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
}

#[test]
fn a_full_disk_on_stdout_is_an_error_not_a_panic() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let tmp = tempdir("full");
    let dir = tmp.path().join("out");
    let dir = dir.to_str().unwrap().to_string();
    for args in every_subcommand(&dir) {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
            .args(&args)
            .current_dir(root())
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("writing output"), "{args:?}: {err}");
    }
}

#[test]
fn rates_that_describe_no_machine_are_refused_naming_the_knob() {
    for (set, want) in [
        (
            "links.L1B.distribute.parent=1e-300",
            "(at least 1e-6), got 1e-300",
        ),
        (
            "links.L1B.distribute.parent=0",
            "takes a positive finite number",
        ),
        (
            "levels.PE.memory.bytes_per_cycle=-5",
            "takes a positive finite number",
        ),
        ("levels.PE.memory.bytes_per_cycle=0", "got 0"),
        ("dram.bytes_per_cycle=inf", "expected a finite number"),
        ("clock_ghz=nan", "expected a finite number"),
    ] {
        let knob = set.split('=').next().unwrap();
        let out = mnsim(&[
            "run",
            "scenarios/transfer_blog_1024x512.ron",
            "--mode",
            "timing",
            "--set",
            set,
        ]);
        fails_with(&out, &[knob, want]);
    }
}

#[test]
fn a_memory_smaller_than_a_word_is_refused() {
    let out = mnsim(&["machines", "mncore2", "--set", "levels.L1B.memory.bytes=1"]);
    fails_with(
        &out,
        &["levels.L1B.memory.bytes", "less than one 8-byte word"],
    );
}

#[test]
fn a_cycle_count_past_two_to_the_53_is_an_error_naming_the_rates() {
    let (_dir, s) = scenario(
        "huge",
        r#"Scenario(
    name: "huge",
    machine: Preset("toy4"),
    overrides: {"dram.bytes": 1e12, "levels.PE.memory.bytes": 1e12,
                "links.Board.distribute.parent": 1e-6, "links.Board.distribute.child": 1e-6},
    mode: Timing,
    tensors: {"x": (dtype: F32, shape: "f32[4,1073741824]", init: Zeros)},
    program: [Load(tensor: "x", layout: "((4_PE), (1073741824:1))")],
)"#,
    );
    let out = mnsim(&["run", &s]);
    let err = fails_with(
        &out,
        &[
            "op 0 (Load `x`)",
            "Board down distribute",
            "more than 2^53 cycles",
            "links.Board.distribute.parent",
        ],
    );
    assert!(!err.contains("18446744073709551615"), "{err}");
    assert!(out.stdout.is_empty(), "no report printed");
}

#[test]
fn a_binding_of_zero_is_the_same_error_in_both_modes() {
    let (_dir, s) = scenario("bind0", TOY);
    let mut errs = Vec::new();
    for mode in ["timing", "functional"] {
        let out = mnsim(&["run", &s, "--bind", "n=0", "--mode", mode]);
        errs.push(fails_with(
            &out,
            &[
                "dimension 0 (`n<=8`)",
                "size 0 (--bind n=0)",
                "bind `n` to at least 1",
            ],
        ));
    }
    assert_eq!(errs[0], errs[1]);
    // In the file too, pointing at the dimension.
    let (_dir, s) = scenario(
        "bind0file",
        &TOY.replace("mode: Functional,", "mode: Timing, bind: {\"n\": 0},"),
    );
    let out = mnsim(&["check", &s]);
    fails_with(&out, &["bind0file.ron:6:39", "size 0 (`bind: {\"n\": 0}`)"]);
}

#[test]
fn numeric_fields_are_validated_with_their_place() {
    let (_dir, s) = scenario(
        "fill",
        &TOY.replace(
            r#""x": (dtype: F32, shape: "f32[n<=8,8]", init: Random(seed: 1)),"#,
            r#""x": (dtype: S8, shape: "s8[n<=8,8]", init: Fill(value: 1000.0)),"#,
        )
        .replace(
            r#""y": (dtype: F32, shape: "f32[n<=8,8]"),"#,
            r#""y": (dtype: S8, shape: "s8[n<=8,8]"),"#,
        ),
    );
    fails_with(
        &mnsim(&["check", &s]),
        &[
            ":6:",
            "tensor `x`: Fill value 1000 is outside the range of s8 (-128 to 127)",
        ],
    );
    // An initial value's other checks: an Iota past the dtype, Runs that do not count
    // the tensor's elements, a Runs value outside the dtype.
    let s8 = |init: &str, cols: u32| {
        TOY.replace(
            r#""x": (dtype: F32, shape: "f32[n<=8,8]", init: Random(seed: 1)),"#,
            &format!(r#""x": (dtype: S8, shape: "s8[n<=8,{cols}]", init: {init}),"#),
        )
        .replace(
            r#""y": (dtype: F32, shape: "f32[n<=8,8]"),"#,
            &format!(r#""y": (dtype: S8, shape: "s8[n<=8,{cols}]"),"#),
        )
    };
    for (name, init, cols, want) in [
        (
            "iota",
            "Iota",
            32,
            "tensor `x`: Iota counts up to 255, beyond the largest s8 (127)",
        ),
        (
            "runs",
            "Runs([(3, 1.0), (4, 0.0)])",
            8,
            "tensor `x`: the runs of `Runs` count 7 elements where the tensor has 64",
        ),
        (
            "runsvalue",
            "Runs([(60, 1.0), (4, 300.0)])",
            8,
            "tensor `x`: Runs value 300 is outside the range of s8 (-128 to 127)",
        ),
    ] {
        let (_dir, s) = scenario(name, &s8(init, cols));
        fails_with(&mnsim(&["check", &s]), &[":6:", want]);
    }
    let (_dir, s) = scenario(
        "eps",
        &TOY.replace(
            r#"Unary(op: Relu, input: "x", out: "y"),"#,
            r#"LayerNorm(input: "x", axis: 1, out: "y", eps: NaN),"#,
        ),
    );
    fails_with(
        &mnsim(&["check", &s]),
        &[":11:", "eps must be a finite number ≥ 0, got NaN"],
    );
}

#[test]
fn mixed_dtypes_are_rejected_by_one_rule() {
    // Integers and floats meet only through an explicit conversion.
    let (_dir, s) = scenario(
        "mixed",
        &TOY.replace(
            r#""y": (dtype: F32, shape: "f32[n<=8,8]"),"#,
            r#""y": (dtype: S32, shape: "s32[n<=8,8]"),"#,
        ),
    );
    fails_with(
        &mnsim(&["check", &s]),
        &[
            ":11:",
            "`y` is s32 but `x` is f32",
            "never converts implicitly",
        ],
    );
    // Float types mix: an f16 result of an f32 operand is rounded once into f16.
    let (_dir, s) = scenario(
        "mixed_floats",
        &TOY.replace(
            r#""y": (dtype: F32, shape: "f32[n<=8,8]"),"#,
            r#""y": (dtype: F16, shape: "f16[n<=8,8]"),"#,
        )
        .replace(
            r#"out: "y"),"#,
            r#"out: "y", layout: "((4_PE, 2:8), (8:1))"),"#,
        ),
    );
    let out = mnsim(&["check", &s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every kernel under the same rule: a bias, a generic kernel's inputs, a Select's
    // branches; its condition is a mask of any dtype.
    let with = |tensor: &str, op: &str| {
        TOY.replace(
            r#""y": (dtype: F32, shape: "f32[n<=8,8]"),"#,
            &format!(r#""y": (dtype: F32, shape: "f32[n<=8,8]"), {tensor}"#),
        )
        .replace(
            r#"Unary(op: Relu, input: "x", out: "y"),"#,
            &format!(
                r#"Load(tensor: "c", layout: "((4_PE, 2:8), (8:1))"), Load(tensor: "bias", layout: "((8:1))"), {op}"#
            ),
        )
    };
    let ints = r#""c": (dtype: S32, shape: "s32[n<=8,8]", init: Ones), "bias": (dtype: S32, shape: "s32[8]", init: Ones),"#;
    for (name, op, want) in [
        (
            "bias",
            r#"BiasAdd(input: "x", bias: "bias", axis: 1, out: "y"),"#,
            "`bias` is s32 but `x` is f32",
        ),
        (
            "generic",
            r#"Kernel(kernel: Binary(Add), inputs: ["x", "c"], out: "y"),"#,
            "`c` is s32 but `x` is f32",
        ),
        (
            "select",
            r#"Select(cond: "x", a: "c", b: "x", out: "y"),"#,
            "`x` is f32 but `c` is s32",
        ),
    ] {
        let (_dir, s) = scenario(name, &with(ints, op));
        fails_with(&mnsim(&["check", &s]), &[":11:", want]);
    }
    let (_dir, s) = scenario(
        "mask",
        &with(
            ints,
            r#"Select(cond: "c", a: "x", b: "x", out: "y", layout: "((4_PE, 2:8), (8:1))"),"#,
        ),
    );
    let out = mnsim(&["check", &s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A functional run larger than the memory it may use is refused before it allocates, with
/// the estimate and the way out; the same run in timing mode goes ahead.
#[test]
fn a_functional_run_too_large_for_memory_is_refused_before_allocating() {
    let tmp = tempdir("mem");
    let dir = tmp.path().join("out");
    let run = |mode: &str| {
        Command::new(env!("CARGO_BIN_EXE_mnsim"))
            .args([
                "run",
                "scenarios/transfer_blog_1024x512.ron",
                "--plan",
                "blog",
                "--mode",
                mode,
                "--out",
                dir.to_str().unwrap(),
            ])
            .current_dir(root())
            .env("MNSIM_MEMORY_LIMIT", "1000000")
            .output()
            .unwrap()
    };
    // 2 MiB of f32 in DRAM, 4 MiB of f64 reference, 8192 PEs × 512 B of layout = 4 MiB of LM.
    let err = fails_with(
        &run("functional"),
        &[
            "a functional run needs about 10.0 MiB of memory",
            "tensors in DRAM 2.0 MiB, PE local memories 4.0 MiB, verification 4.0 MiB",
            "more than the 976.6 KiB available",
            "run it in timing mode (--mode timing)",
        ],
    );
    assert!(!dir.exists(), "nothing written: {err}");
    let out = run("timing");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_time_limit_beyond_the_clock_is_refused_not_a_panic() {
    for t in ["1e20", "inf", "0", "NaN"] {
        let out = mnsim(&["plan", "scenarios/plan_layernorm.ron", "--time-limit", t]);
        fails_with(&out, &["--time-limit must be a positive number of seconds"]);
    }
}

/// An op's `algorithm:` that names no collective algorithm is refused at its place,
/// naming the three; so is one written as an identifier instead of a string.
#[test]
fn an_unknown_collective_algorithm_is_refused_at_its_place() {
    let with = |field: &str| {
        TOY.replace(
            r#"Unary(op: Relu, input: "x", out: "y"),"#,
            &format!(
                r#"Relayout(tensor: "x", layout: "((2_PE, 4:8), (8:1))", out: "y", {field}),"#
            ),
        )
    };
    for (name, field, col) in [
        ("mesh", r#"algorithm: "mesh""#, ":11:85:"),
        ("ident", "algorithm: Tree", ":11:8"),
    ] {
        let (_dir, s) = scenario(name, &with(field));
        for cmd in ["check", "run"] {
            fails_with(
                &mnsim(&[cmd, &s]),
                &[col, r#"collective algorithm is "ring", "tree" or "direct""#],
            );
        }
    }
    let (_dir, s) = scenario("tree", &with(r#"algorithm: "tree""#));
    let out = mnsim(&["check", &s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
