//! The command-line contract of `mnsim layout`, `mnsim shape` and `mnsim machines`
//! (docs/layout.md, docs/scenarios.md and the README's commands), run against the built binary.

use serde_json::Value;
use std::process::{Command, Stdio};

struct Run {
    ok: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn mnsim(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("mnsim runs");
    Run {
        ok: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

/// A successful run's stdout.
fn ok(args: &[&str]) -> String {
    let r = mnsim(args);
    assert!(r.ok, "mnsim {args:?} failed:\n{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    r.stdout
}

/// A failed run's stderr, flattened to one line (the diagnostic renderer wraps long
/// messages and draws a margin). Checks the failure is clean: non-zero exit, an
/// `error` on stderr, nothing on stdout, no panic.
fn fails(args: &[&str]) -> String {
    let r = mnsim(args);
    assert!(!r.ok, "mnsim {args:?} should fail, printed:\n{}", r.stdout);
    assert_eq!(r.code, Some(1), "mnsim {args:?}: {}", r.stderr);
    assert!(r.stdout.is_empty(), "mnsim {args:?} printed:\n{}", r.stdout);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(r.stderr.contains("error:"), "{}", r.stderr);
    flat(&r.stderr)
}

fn flat(s: &str) -> String {
    s.replace(['│', '×', '╭', '╰', '─', '┬', '·'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// `layout map --json`: exactly one JSON object on stdout.
fn map_json(args: &[&str]) -> Value {
    let mut all = vec!["layout", "map"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = ok(&all);
    let mut values = serde_json::Deserializer::from_str(&out).into_iter::<Value>();
    let v = values
        .next()
        .expect("one JSON value")
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"));
    assert!(values.next().is_none(), "more than one JSON value:\n{out}");
    assert!(v.is_object(), "{v}");
    v
}

fn list(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("{v} is not a list"))
        .iter()
        .map(|x| {
            x.as_u64()
                .unwrap_or_else(|| panic!("{x} is not an integer"))
        })
        .collect()
}

fn placements(v: &Value) -> &Vec<Value> {
    v["placements"].as_array().expect("placements is a list")
}

fn find<'a>(v: &'a Value, index: &[u64]) -> &'a Value {
    placements(v)
        .iter()
        .find(|p| list(&p["index"]) == index)
        .unwrap_or_else(|| panic!("no placement for {index:?}"))
}

/// Checks the shape of every placement: the index, every addressable level of the
/// machine in `pe` (an integer or `"*"`), integer addr, w, t; one per logical element.
fn check_placements(v: &Value, levels: &[&str], logical: &[u64]) {
    let ps = placements(v);
    assert_eq!(ps.len() as u64, logical.iter().product::<u64>());
    let mut seen = std::collections::HashSet::new();
    for p in ps {
        let idx = list(&p["index"]);
        assert_eq!(idx.len(), logical.len());
        assert!(idx.iter().zip(logical).all(|(i, n)| i < n), "{p}");
        assert!(seen.insert(idx), "{p} twice");
        let pe = p["pe"].as_object().expect("pe is an object");
        let keys: Vec<&str> = pe.keys().map(String::as_str).collect();
        let mut want: Vec<&str> = levels.to_vec();
        want.sort_unstable();
        let mut got = keys.clone();
        got.sort_unstable();
        assert_eq!(got, want, "{p}");
        for (k, x) in pe {
            assert!(x.is_u64() || x == "*", "{k}: {x}");
        }
        for f in ["addr", "w", "t"] {
            assert!(p[f].is_u64(), "{f} in {p}");
        }
    }
}

// ---- layout map --json -------------------------------------------------------------

#[test]
fn map_json_spec_example_row_split() {
    let v = map_json(&["((4_PE, 3:8), (8:1))", "--shape", "12,8"]);
    assert_eq!(list(&v["padded"]), vec![12, 8]);
    assert_eq!(v["words"], 24);
    check_placements(&v, &["PE"], &[12, 8]);
    // docs/layout.md: (5,3) -> PE 1, word 19.
    let p = find(&v, &[5, 3]);
    assert_eq!(p["pe"]["PE"], 1);
    assert_eq!(
        (&p["addr"], &p["w"], &p["t"]),
        (&19.into(), &0.into(), &0.into())
    );
    // Row-major order of the logical elements.
    assert_eq!(list(&placements(&v)[0]["index"]), vec![0, 0]);
    assert_eq!(list(&placements(&v)[95]["index"]), vec![11, 7]);
    // Defaults: toy4, f32.
    assert_eq!(v["machine"], "toy4");
    assert_eq!(v["dtype"], "f32");
}

#[test]
fn map_json_other_toy4_examples() {
    // (layout, shape, element, PE, word) from docs/layout.md.
    for (text, shape, idx, pe, word) in [
        ("((3:8, 4_PE), (8:1))", "12,8", [5, 3], 1, 11),
        ("((2_PE:2, 6:4), (2_PE:1, 4:1))", "12,8", [7, 5], 3, 5),
        ("(10,7)/((3:7, 4_PE), (7:1))", "10,7", [9, 6], 1, 20),
    ] {
        let v = map_json(&[text, "--shape", shape]);
        let logical: Vec<u64> = shape.split(',').map(|x| x.parse().unwrap()).collect();
        check_placements(&v, &["PE"], &logical);
        let p = find(&v, &idx);
        assert_eq!(p["pe"]["PE"], pe, "{text}");
        assert_eq!(p["addr"], word, "{text}");
    }
}

#[test]
fn map_json_padded_layout_lists_logical_elements_only() {
    let v = map_json(&["(10,7)/((3:7, 4_PE), (7:1))", "--shape", "10,7"]);
    assert_eq!(list(&v["padded"]), vec![12, 7]);
    assert_eq!(list(&v["logical"]), vec![10, 7]);
    assert_eq!(v["words"], 21);
    assert_eq!(placements(&v).len(), 70);
    // The shape may come from the pad prefix alone.
    let w = map_json(&["(10,7)/((3:7, 4_PE), (7:1))"]);
    assert_eq!(v, w);
}

#[test]
fn map_json_replicated_level_is_a_star() {
    let v = map_json(&["((12:8), (8:1); B@[PE])", "--shape", "12,8"]);
    check_placements(&v, &["PE"], &[12, 8]);
    let p = find(&v, &[5, 3]);
    assert_eq!(p["pe"]["PE"], "*");
    assert_eq!(p["addr"], 43);
    assert_eq!(v["words"], 96);
    assert!(placements(&v).iter().all(|p| p["pe"]["PE"] == "*"));
}

#[test]
fn map_json_mncore1_example_with_index() {
    let v = map_json(&[
        "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))",
        "--shape",
        "1024,512",
        "--machine",
        "mncore1",
        "--index",
        "1000,300",
    ]);
    assert_eq!(v["machine"], "mncore1");
    assert_eq!(list(&v["padded"]), vec![1024, 512]);
    assert_eq!(v["words"], 64);
    let ps = placements(&v);
    assert_eq!(ps.len(), 1);
    let p = &ps[0];
    assert_eq!(list(&p["index"]), vec![1000, 300]);
    let pe = &p["pe"];
    assert_eq!(
        (&pe["L2B"], &pe["L1B"], &pe["MAB"], &pe["PE"]),
        (&15.into(), &5.into(), &9.into(), &0.into())
    );
    assert_eq!(pe.as_object().unwrap().len(), 4);
    assert_eq!(p["addr"], 3);
}

#[test]
fn map_json_index_is_repeatable_and_keeps_order() {
    let v = map_json(&[
        "((4_PE, 3:8), (8:1))",
        "--shape",
        "12,8",
        "--index",
        "5,3",
        "--index",
        "0,0",
        "--index",
        "11,7",
    ]);
    let got: Vec<(Vec<u64>, u64, u64)> = placements(&v)
        .iter()
        .map(|p| {
            (
                list(&p["index"]),
                p["pe"]["PE"].as_u64().unwrap(),
                p["addr"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (vec![5, 3], 1, 19),
            (vec![0, 0], 0, 0),
            (vec![11, 7], 3, 23)
        ]
    );
}

#[test]
fn map_json_mncore2_real_layouts_name_every_addressable_level() {
    let levels = ["L2B", "L1B", "MAB", "PE"];
    // 128 f32: PE i/32, word (i/2)%16, slot i%2; copies everywhere above the PE.
    let v = map_json(&[
        "((4_PE:1, 16:1, 2_W:1)) B@[MAB,L1B,L2B]",
        "--machine",
        "mncore2",
    ]);
    check_placements(&v, &levels, &[128]);
    assert_eq!(v["words"], 16);
    let p = find(&v, &[127]);
    assert_eq!(p["pe"]["L2B"], "*");
    assert_eq!(p["pe"]["L1B"], "*");
    assert_eq!(p["pe"]["MAB"], "*");
    assert_eq!(p["pe"]["PE"], 3);
    assert_eq!((&p["addr"], &p["w"]), (&15.into(), &1.into()));
    // The Group level is folded into L2B and never named.
    assert!(
        placements(&v)
            .iter()
            .all(|p| p["pe"].get("Group").is_none())
    );

    // 256×16: (200,13) -> L2B 6, L1B 0, MAB *, PE 2, word 3, slot 1.
    let v = map_json(&[
        "(256,16)/((8_L2B:1, 4:2, 8_L1B:1), (2:1, 4_PE:1, 2_W:1); B@[MAB])",
        "--shape",
        "256,16",
        "--machine",
        "mncore2",
    ]);
    check_placements(&v, &levels, &[256, 16]);
    assert_eq!(v["words"], 8);
    let p = find(&v, &[200, 13]);
    assert_eq!(
        (
            &p["pe"]["L2B"],
            &p["pe"]["L1B"],
            &p["pe"]["MAB"],
            &p["pe"]["PE"]
        ),
        (&6.into(), &0.into(), &"*".into(), &2.into())
    );
    assert_eq!((&p["addr"], &p["w"]), (&3.into(), &1.into()));
}

#[test]
fn map_json_dtype_f16_packs_four_per_long_word() {
    let text = "((4_PE:1, 16:1, 4_W:1)) B@[MAB,L1B,L2B]";
    let v = map_json(&[text, "--machine", "mncore2", "--dtype", "f16"]);
    assert_eq!(v["dtype"], "f16");
    assert_eq!(v["words"], 16);
    check_placements(&v, &["L2B", "L1B", "MAB", "PE"], &[256]);
    // 255 = PE 3, word 15, slot 3.
    let p = find(&v, &[255]);
    assert_eq!(
        (&p["pe"]["PE"], &p["addr"], &p["w"]),
        (&3.into(), &15.into(), &3.into())
    );
    let slots: std::collections::BTreeSet<u64> = placements(&v)
        .iter()
        .map(|p| p["w"].as_u64().unwrap())
        .collect();
    assert_eq!(slots.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    // As f32 an 8-byte word holds only 2.
    let e = fails(&["layout", "map", text, "--machine", "mncore2", "--json"]);
    assert!(e.contains("holds 2 f32"), "{e}");
}

#[test]
fn map_json_time_steps() {
    let v = map_json(&["((2_Time, 3, 4_PE), (8))", "--shape", "24,8"]);
    check_placements(&v, &["PE"], &[24, 8]);
    // Row 13 = step 1, row-in-PE 0, PE 1: word 0·8 + 2.
    let p = find(&v, &[13, 2]);
    assert_eq!(
        (&p["pe"]["PE"], &p["addr"], &p["t"]),
        (&1.into(), &2.into(), &1.into())
    );
}

#[test]
fn map_without_json_prints_one_line_per_element() {
    let out = ok(&["layout", "map", "((4_PE, 3:8), (8:1))", "--shape", "12,8"]);
    assert_eq!(out.lines().count(), 1 + 96);
    let line = out.lines().find(|l| l.starts_with("[5,3]")).unwrap();
    assert!(line.contains("PE 1") && line.contains("word 19"), "{line}");
}

// ---- errors --------------------------------------------------------------------------

#[test]
fn rejected_layouts_fail_cleanly() {
    for (args, needle) in [
        (
            vec!["((5_PE, 3:8), (8:1))", "--shape", "15,8"],
            "reach(es) PE position 4, but PE has only 4",
        ),
        (
            vec!["((4_XY, 3:8), (8:1))", "--shape", "12,8"],
            "unknown level `XY`",
        ),
        (vec!["((4_PE, 3:8), (8:1)", "--shape", "12,8"], "at byte"),
        (
            vec!["((4_PE, 3:8), (8:1))", "--shape", "12,9"],
            "axis 1 has 9",
        ),
        (vec!["((4_PE, 3:8), (8:1))", "--shape", "12,8,1"], "rank 3"),
        (
            vec!["((4_PE, 300:8), (8:1))", "--shape", "1200,8"],
            "exceeds the PE's 4096-byte memory",
        ),
        (
            vec!["((4_PE, 3:8), (8:1))", "--shape", "12,8", "--dtype", "f64"],
            "do not fit a 4-byte word",
        ),
        (
            vec!["((4_PE, 3:8), (8:1))", "--shape", "12,8", "--dtype", "f17"],
            "unknown element type",
        ),
        (
            vec!["((4_PE, 3:8), (8:1))", "--machine", "mncore9"],
            "did you mean",
        ),
        (
            vec!["((4_PE, 3:8), (8:1); B@[PE])", "--shape", "12,8"],
            "already splits it",
        ),
    ] {
        for json in [true, false] {
            let mut all = vec!["layout", "map"];
            all.extend_from_slice(&args);
            if json {
                all.push("--json");
            }
            let e = fails(&all);
            assert!(e.contains(needle), "{args:?}: {e}");
        }
        let mut all = vec!["layout", "explain"];
        all.extend_from_slice(&args);
        let e = fails(&all);
        assert!(e.contains(needle), "{args:?}: {e}");
    }
}

#[test]
fn layout_errors_point_at_the_text() {
    let e = fails(&[
        "layout",
        "map",
        "((4_PE, 3:8), (8_L3B:1))",
        "--shape",
        "12,8",
    ]);
    assert!(e.contains("unknown level `L3B`"), "{e}");
    assert!(e.contains("at byte 15"), "{e}");
}

#[test]
fn index_outside_the_shape_is_an_error() {
    for idx in ["12,0", "0,8", "5", "5,3,0", "5,x"] {
        let e = fails(&[
            "layout",
            "map",
            "((4_PE, 3:8), (8:1))",
            "--shape",
            "12,8",
            "--json",
            "--index",
            "5,3",
            "--index",
            idx,
        ]);
        assert!(e.contains(idx), "{idx}: {e}");
    }
    let e = fails(&[
        "layout",
        "map",
        "((4_PE, 3:8), (8:1))",
        "--shape",
        "12,8",
        "--index",
        "12,0",
    ]);
    assert!(e.contains("outside the tensor's shape [12,8]"), "{e}");
    let e = fails(&[
        "layout",
        "map",
        "((4_PE, 3:8), (8:1))",
        "--shape",
        "12,8",
        "--index",
        "5",
    ]);
    assert!(e.contains("has 1 coordinate(s)"), "{e}");
    // A padding position is outside the logical shape too.
    let e = fails(&[
        "layout",
        "map",
        "(10,7)/((3:7, 4_PE), (7:1))",
        "--index",
        "10,0",
    ]);
    assert!(e.contains("outside"), "{e}");
}

// ---- layout explain -----------------------------------------------------------------

#[test]
fn explain_padded_layout_reports_waste() {
    let out = ok(&["layout", "explain", "(10,7)/((3:7, 4_PE), (7:1))"]);
    assert!(out.contains("(10,7)/((3:7, 4_PE:1), (7:1))"), "{out}");
    assert!(out.contains("padded to 12×7"), "{out}");
    assert!(out.contains("14 of 84 positions are padding"), "{out}");
    assert!(out.contains("16.7%"), "{out}");
    // Footprint against the PE's memory: 21 words of 4 bytes in 4 KiB.
    assert!(
        out.contains("footprint 21 words = 84 B of 4 KiB LM"),
        "{out}"
    );
    // Fan-out use per level.
    let pe = out
        .lines()
        .find(|l| l.starts_with("PE "))
        .expect("a PE row");
    let cols: Vec<&str> = pe.split_whitespace().collect();
    assert_eq!(&cols[..5], &["PE", "4", "4", "0", "100.0%"], "{pe}");
}

#[test]
fn explain_mncore1_example() {
    let out = ok(&[
        "layout",
        "explain",
        "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))",
        "--shape",
        "1024,512",
        "--machine",
        "mncore1",
    ]);
    assert!(out.contains("fan-out"), "{out}");
    for (lvl, fan) in [("L2B", "16"), ("L1B", "8"), ("MAB", "16"), ("PE", "4")] {
        let row = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(lvl))
            .unwrap_or_else(|| panic!("no {lvl} row:\n{out}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(&cols[1..5], &[fan, fan, "0", "100.0%"], "{row}");
    }
    assert!(out.contains("padding   none"), "{out}");
    assert!(
        out.contains("footprint 64 words = 512 B of 32 KiB LM"),
        "{out}"
    );
    assert!(out.contains("8192 of 8192 hold data"), "{out}");
    assert!(out.contains("every element stored 1 time(s)"), "{out}");
}

#[test]
fn explain_mentions_replication_and_idle_positions() {
    let out = ok(&["layout", "explain", "((12:8), (8:1); B@[PE])"]);
    assert!(out.contains("replicated"), "{out}");
    assert!(out.contains("every element stored 4 time(s)"), "{out}");
    let out = ok(&[
        "layout",
        "explain",
        "((1_PE, 3:8), (8:1))",
        "--machine",
        "mncore2",
    ]);
    assert!(out.contains("B@[L2B,L1B,MAB]"), "{out}");
    assert!(out.contains("some idle"), "{out}");
    assert!(out.contains("1024 of 4096 hold data (25.0%)"), "{out}");
    assert!(out.contains("every element stored 1024 time(s)"), "{out}");
}

// ---- shape index ---------------------------------------------------------------------

#[test]
fn shape_index_worked_examples() {
    let out = ok(&["shape", "index", "f32[3,5]{1,0:T(2,2)}", "--index", "2,3"]);
    assert_eq!(out.lines().last(), Some("17"), "{out}");
    // 4×8 tiled (2,4)(2,1): row 0 at 0 2 4 ... 14, row 2 from 16.
    let at = |i: u64, j: u64| -> u64 {
        let out = ok(&[
            "shape",
            "index",
            "f32[4,8]{1,0:T(2,4)(2,1)}",
            "--index",
            &format!("{i},{j}"),
        ]);
        out.lines().last().unwrap().parse().unwrap()
    };
    assert_eq!(at(2, 0), 16);
    let row0: Vec<u64> = (0..8).map(|j| at(0, j)).collect();
    assert_eq!(row0, vec![0, 2, 4, 6, 8, 10, 12, 14]);
    assert_eq!(at(2, 1), 18);
}

#[test]
fn shape_index_errors() {
    let e = fails(&["shape", "index", "f32[4,8]", "--index", "4,0"]);
    assert!(e.contains("out of bounds"), "{e}");
    let e = fails(&["shape", "index", "f32[4,8", "--index", "0,0"]);
    assert!(e.contains("error:"), "{e}");
    let e = fails(&["shape", "index", "f32[?,8]", "--index", "0,0"]);
    assert!(e.contains("dynamic with no bound"), "{e}");
    // A bounded dimension is laid out at its bound.
    let out = ok(&["shape", "index", "f32[<=4,8]", "--index", "3,1"]);
    assert_eq!(out.lines().last(), Some("25"), "{out}");
}

// ---- machines ------------------------------------------------------------------------

#[test]
fn machines_lists_the_presets() {
    let out = ok(&["machines"]);
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        vec![
            "mncore2",
            "mncore1",
            "toy4",
            "mn3_node",
            "mn3_zone",
            "mncore2_server"
        ]
    );
    assert!(out.contains("4096 PE"));
    assert!(out.contains("8192 PE"));
    assert!(out.contains("mn3_zone       1048576 PE"), "{out}");
}

#[test]
fn machines_mncore2() {
    let out = ok(&["machines", "mncore2"]);
    assert!(out.contains("PEs 4096"), "{out}");
    let f16 = out
        .lines()
        .find(|l| l.trim_start().starts_with("f16"))
        .expect("an f16 peak line");
    assert!(f16.contains("matrix 524288"), "{f16}");
}

#[test]
fn machines_unknown_knob_suggests() {
    let e = fails(&[
        "machines",
        "mncore2",
        "--set",
        "links.L1B.distribute.parnet=1",
    ]);
    assert!(e.contains("unknown knob"), "{e}");
    assert!(
        e.contains("did you mean 'links.L1B.distribute.parent'"),
        "{e}"
    );
}

#[test]
fn machines_set_changes_the_machine() {
    let out = ok(&["machines", "mncore2", "--set", "levels.PE.count=8"]);
    assert!(out.contains("PEs 8192"), "{out}");
    assert!(out.contains("PE x8 (8192 nodes)"), "{out}");
    // The preset's free-text description (which counts 4096 PEs) is flagged as changed.
    let desc = out.lines().nth(1).unwrap();
    assert!(
        desc.contains("changed here by --set levels.PE.count=8"),
        "{desc}"
    );
    // Layouts see the new fan-out.
    let v = map_json(&[
        "((8_PE, 3:8), (8:1))",
        "--shape",
        "24,8",
        "--machine",
        "mncore2",
        "--set",
        "levels.PE.count=8",
        "--index",
        "23,7",
    ]);
    assert_eq!(placements(&v)[0]["pe"]["PE"], 7);
    let e = fails(&[
        "layout",
        "map",
        "((8_PE, 3:8), (8:1))",
        "--shape",
        "24,8",
        "--machine",
        "mncore2",
    ]);
    assert!(e.contains("PE has only 4"), "{e}");
}

// ---- output to a reader that goes away -----------------------------------------------

/// `mnsim ... | head -1`: a closed stdout ends the output quietly, without a panic.
#[test]
fn closed_stdout_is_not_a_crash() {
    for args in [
        vec!["machines"],
        vec!["machines", "mncore2"],
        vec!["machines", "mncore2", "--knobs"],
        vec!["machines", "mncore2", "--ron"],
        vec!["shape", "index", "f32[3,5]{1,0:T(2,2)}", "--index", "2,3"],
        vec!["layout", "explain", "((4_PE, 3:8), (8:1))"],
        vec!["layout", "map", "((4_PE, 3:8), (8:1))", "--json"],
        // Large enough to fill any pipe buffer.
        vec![
            "layout",
            "map",
            "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))",
            "--machine",
            "mncore1",
        ],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnsim"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// A PE the layout reaches that holds nothing but padding is not said to hold data, and
/// the picture shows the padding.
#[test]
fn explain_tells_padding_only_pes_apart() {
    let out = ok(&[
        "layout",
        "explain",
        "(1,8)/((4_PE),(8:1))",
        "--shape",
        "1,8",
    ]);
    assert!(
        out.contains("PEs       1 of 4 hold data (25.0%), 3 more hold only padding"),
        "{out}"
    );
    assert!(out.contains("`.` = padding"), "{out}");
    assert!(out.contains("  00000000\n  ........\n"), "{out}");
    let out = ok(&[
        "layout",
        "explain",
        "((4_PE, 3:8), (8:1))",
        "--shape",
        "12,8",
    ]);
    assert!(
        out.contains("PEs       4 of 4 hold data (100.0%);"),
        "{out}"
    );
    assert!(!out.contains("padding;") && !out.contains("`.`"), "{out}");
}
