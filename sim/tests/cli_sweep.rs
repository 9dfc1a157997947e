//! `mnsim sweep` and `mnsim compare` through the binary.

mod common;

use common::tmp::{TempDir, tempdir};
use std::path::Path;
use std::process::Command;

fn mnsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("runs")
}

/// The path `name` in the test's scratch folder `tmp` (nothing there yet).
fn scratch(tmp: &TempDir, name: &str) -> std::path::PathBuf {
    tmp.path().join(name)
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const TWO_KNOBS: [&str; 8] = [
    "sweep",
    "scenarios/transfer_blog_1024x512.ron",
    "--mode",
    "timing",
    "--set",
    "links.Board.distribute.parent=64,128,256,512",
    "--set",
    "links.L1B.distribute.parent=32,128",
];

#[test]
fn a_two_knob_sweep_has_every_point_and_cycles_follow_the_knobs() {
    let tmp = tempdir("sweep");
    let dir = scratch(&tmp, "two");
    let mut args = TWO_KNOBS.to_vec();
    args.extend(["--out", dir.to_str().unwrap()]);
    ok(&mnsim(&args));
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    let svg = std::fs::read_to_string(dir.join("sweep.svg")).unwrap();
    let html = std::fs::read_to_string(dir.join("sweep.html")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[..6],
        [
            "point",
            "plan",
            "links.Board.distribute.parent",
            "links.L1B.distribute.parent",
            "total_cycles",
            "time_us"
        ]
    );
    assert_eq!(header[header.len() - 2..], ["bottleneck", "error"]);
    assert!(header.contains(&"L1B_busy_cycles"), "{header:?}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4 * 2 * 3, "4 x 2 values x 3 plans:\n{csv}");
    // Every combination once.
    let mut combos: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[1], r[2], r[3])).collect();
    combos.sort();
    combos.dedup();
    assert_eq!(combos.len(), 24);
    // mncore1 runs at 1 GHz: time_us = cycles / 1000.
    for r in &rows {
        let c: f64 = r[4].parse().unwrap();
        let t: f64 = r[5].parse().unwrap();
        assert!((t - c / 1e3).abs() < 1e-3, "{r:?}");
        assert_eq!(r[r.len() - 1], "", "no error: {r:?}");
    }
    let cycles = |plan: &str, l1b: &str| -> Vec<u64> {
        rows.iter()
            .filter(|r| r[1] == plan && r[3] == l1b)
            .map(|r| r[4].parse().unwrap())
            .collect()
    };
    // More Board distribute bandwidth never slows the distributing plan, and helps it here.
    let blog = cycles("blog", "32");
    assert_eq!(blog.len(), 4);
    assert!(blog.windows(2).all(|w| w[1] <= w[0]), "{blog:?}");
    assert!(blog[3] < blog[0], "{blog:?}");
    // The broadcast plan does not distribute over the board: the knob does not touch it.
    let bcast = cycles("bcast", "32");
    assert!(bcast.windows(2).all(|w| w[0] == w[1]), "{bcast:?}");
    // One line per (plan, L1B rate), but the Board port bounds every plan here, so the L1B
    // rate changes nothing: equal series are drawn once and labelled together.
    assert!(
        svg.contains("log₂ scale"),
        "power-of-two knob on a log₂ axis"
    );
    assert!(svg.contains("(bytes/cycle)"));
    assert!(
        svg.contains(
            "plan blog, links.L1B.distribute.parent=32 = plan cols, links.L1B.distribute.parent=32"
        ),
        "equal series labelled together"
    );
    assert_eq!(svg.matches("<polyline").count(), 2);
    assert!(html.contains("<svg") && html.contains("<table>"));
}

#[test]
fn merged_shards_equal_the_unsharded_sweep_byte_for_byte() {
    let tmp = tempdir("sweep");
    let whole = scratch(&tmp, "whole");
    let mut args = TWO_KNOBS.to_vec();
    args.extend(["--out", whole.to_str().unwrap()]);
    ok(&mnsim(&args));
    let shards: Vec<std::path::PathBuf> = (0..3)
        .map(|i| scratch(&tmp, &format!("shard{i}")))
        .collect();
    for (i, d) in shards.iter().enumerate() {
        let mut args = TWO_KNOBS.to_vec();
        let shard = format!("{i}/3");
        args.extend(["--shard", &shard, "--out", d.to_str().unwrap()]);
        ok(&mnsim(&args));
    }
    let merged = scratch(&tmp, "merged");
    // Shards given in any order.
    let out = mnsim(&[
        "merge",
        "--out",
        merged.to_str().unwrap(),
        shards[2].to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
    ]);
    ok(&out);
    for f in ["sweep.csv", "sweep.json", "sweep.svg", "sweep.html"] {
        assert_eq!(
            std::fs::read(whole.join(f)).unwrap(),
            std::fs::read(merged.join(f)).unwrap(),
            "{f} differs"
        );
    }
    // A shard short: refused, naming it.
    let out = mnsim(&[
        "merge",
        "--out",
        scratch(&tmp, "short").to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[2].to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing shard(s) 1/3"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_failing_point_is_a_row_with_its_error() {
    let out = mnsim(&[
        "sweep",
        "scenarios/mlp_block.ron",
        "--mode",
        "timing",
        "--plan",
        "split_k",
        "--bind",
        "batch=0,16,96",
    ]);
    // The sweep says it failed, on stderr and by its exit status; the CSV still has every row.
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("2 of 3 run(s) of the sweep failed") && err.contains("(point 0, plan"),
        "{err}"
    );
    let csv = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(rows[0].starts_with("0,split_k,0,,,"), "{}", rows[0]);
    assert!(
        rows[0].contains("batch"),
        "the error names the dimension: {}",
        rows[0]
    );
    assert!(
        rows[1].starts_with("1,split_k,16,") && rows[1].ends_with(','),
        "{}",
        rows[1]
    );
    assert!(rows[2].contains("above the bound 64"), "{}", rows[2]);
}

#[test]
fn sweep_arguments_are_checked() {
    let out = mnsim(&["sweep", "scenarios/blog_12x8.ron"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to sweep"));
    for bad in ["3/3", "1", "a/2", "0/0"] {
        let out = mnsim(&[
            "sweep",
            "scenarios/blog_12x8.ron",
            "--set",
            "clock_ghz=1,2",
            "--shard",
            bad,
        ]);
        assert!(!out.status.success(), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--shard"));
    }
    let out = mnsim(&[
        "sweep",
        "scenarios/blog_12x8.ron",
        "--set",
        "clock_ghz=1,2",
        "--set",
        "clock_ghz=3",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("swept twice"));
}

#[test]
fn compare_ranks_the_plans() {
    let out = mnsim(&["compare", "scenarios/mlp_block.ron", "--mode", "timing"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let split = text
        .lines()
        .find(|l| l.contains("split_k"))
        .expect("split_k row");
    let gather = text
        .lines()
        .find(|l| l.contains("gather"))
        .expect("gather row");
    // The split contraction avoids the all-gather: it ranks first.
    assert!(split.trim_start().starts_with('1'), "{text}");
    assert!(gather.trim_start().starts_with('2'), "{text}");
}

#[test]
fn plan_fills_any_and_run_skips_the_open_plan() {
    let out = mnsim(&["plan", "scenarios/plan_layernorm.ron"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("plan auto:") && text.contains("$x = (("),
        "{text}"
    );
    assert!(text.contains("\"auto\": {\"x\": \"(("), "{text}");
    let out = mnsim(&["run", "scenarios/plan_layernorm.ron"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("plan `auto` sets variables to `Any`: skipped")
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("plan hand"));
    // Asked for by name, the open plan is an error that names the variable.
    let out = mnsim(&["run", "scenarios/plan_layernorm.ron", "--plan", "auto"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`x`"));
    // A scenario without `Any` has nothing to plan.
    let out = mnsim(&["plan", "scenarios/blog_12x8.ron"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no plan sets a variable"));
}

fn sweep_into(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "sweep",
        "scenarios/transfer_blog_1024x512.ron",
        "--mode",
        "timing",
    ];
    args.extend(extra);
    args.extend(["--out", dir.to_str().unwrap()]);
    mnsim(&args)
}

#[test]
fn sweep_axes_are_checked_before_any_point_runs() {
    let tmp = tempdir("sweep");
    let dir = scratch(&tmp, "axes");
    for (extra, want) in [
        (
            ["--set", "clock_ghz=1,2", "--set", "links.nope=1"],
            "unknown knob",
        ),
        (
            ["--set", "clock_ghz=1,-2", "--set", "clock_ghz=1"],
            "swept twice",
        ),
        (
            [
                "--set",
                "clock_ghz=1,2",
                "--set",
                "dram.bytes_per_cycle=64,0",
            ],
            "dram.bytes_per_cycle=0",
        ),
        (
            ["--set", "clock_ghz=1", "--bind", "nope=1,2"],
            "no tensor of",
        ),
    ] {
        let out = sweep_into(&dir, &extra);
        assert!(!out.status.success(), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{extra:?}: {err}");
        assert!(!dir.exists(), "nothing written for {extra:?}");
    }
}

/// `points.jsonl` rows by point number, as text.
fn point_lines(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("points.jsonl"))
        .unwrap()
        .lines()
        .skip(1)
        .map(String::from)
        .collect()
}

#[test]
fn a_resumed_sweep_reuses_finished_points_and_runs_the_rest() {
    let tmp = tempdir("sweep");
    let dir = scratch(&tmp, "resume");
    let knobs = ["--set", "clock_ghz=1,2,3"];
    ok(&sweep_into(&dir, &knobs));
    let lines = point_lines(&dir);
    assert_eq!(lines.len(), 9, "3 points x 3 plans");
    // Point 0's first row edited (so its reuse shows), point 2's rows gone, a torn line.
    let mut kept: Vec<String> = vec![
        std::fs::read_to_string(dir.join("points.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string(),
    ];
    let first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    let cycles = first["result"]["total_cycles"].as_u64().unwrap();
    kept.push(lines[0].replace(&format!(":{cycles},"), ":12345,"));
    kept.extend(lines[1..6].iter().cloned());
    let torn = format!("{}\n{}", kept.join("\n"), &lines[6][..20]);
    std::fs::write(dir.join("points.jsonl"), torn).unwrap();
    let out = sweep_into(&dir, &knobs);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("6 run(s) already done (points.jsonl), 3 to run"),
        "{err}"
    );
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert!(csv.lines().nth(1).unwrap().contains(",12345,"), "{csv}");
    assert_eq!(csv.lines().count(), 10, "{csv}");
    assert_eq!(point_lines(&dir).len(), 9);

    // Another scenario text is another sweep: it starts over.
    let s = dir.with_extension("ron");
    let text = std::fs::read_to_string("../scenarios/transfer_blog_1024x512.ron")
        .or_else(|_| std::fs::read_to_string("scenarios/transfer_blog_1024x512.ron"))
        .unwrap();
    std::fs::write(&s, format!("{text}\n// edited\n")).unwrap();
    let out = mnsim(&[
        "sweep",
        s.to_str().unwrap(),
        "--mode",
        "timing",
        "--set",
        "clock_ghz=1,2,3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("from another sweep"));
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert!(!csv.contains(",12345,"), "{csv}");
}

#[test]
fn an_interrupted_sweep_keeps_its_points_and_resumes_to_the_same_files() {
    let tmp = tempdir("sweep");
    let base = scratch(&tmp, "interrupt");
    std::fs::create_dir_all(&base).unwrap();
    let dir = base.join("out");
    let values = format!(
        "clock_ghz={}",
        (1..=40)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let args = |d: &std::path::Path| -> Vec<String> {
        [
            "sweep",
            "scenarios/transfer_blog_1024x512.ron",
            "--mode",
            "timing",
            "--set",
            &values,
            "--out",
            d.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args(&dir))
        .current_dir(&root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !dir.join("points.jsonl").exists() || point_lines(&dir).len() < 4 {
        assert!(start.elapsed().as_secs() < 120, "no points written");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // A second sweep into the same folder meanwhile fails at once, saying why.
    let second = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args(&dir))
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("another mnsim sweep is writing"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let kept = point_lines(&dir).len();
    assert!((4..120).contains(&kept), "{kept} points kept");
    let left: Vec<_> = std::fs::read_dir(&base).unwrap().collect();
    assert_eq!(left.len(), 1, "only the out folder: {left:?}");
    // Resumed, it gives the files of an uninterrupted sweep.
    let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args(&dir))
        .current_dir(&root)
        .output()
        .unwrap();
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already done"));
    let whole = base.join("whole");
    let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args(&whole))
        .current_dir(&root)
        .output()
        .unwrap();
    ok(&out);
    for f in ["sweep.csv", "sweep.json", "points.jsonl"] {
        assert_eq!(
            std::fs::read(dir.join(f)).unwrap(),
            std::fs::read(whole.join(f)).unwrap(),
            "{f} differs"
        );
    }
}

#[test]
fn merge_refuses_shards_of_different_schedules() {
    let tmp = tempdir("sweep");
    // Short names: the message below wraps at 80 columns, paths and all.
    let a = scratch(&tmp, "a");
    let b = scratch(&tmp, "b");
    ok(&sweep_into(
        &a,
        &[
            "--set",
            "clock_ghz=1,2",
            "--shard",
            "0/2",
            "--schedule",
            "sequential",
        ],
    ));
    ok(&sweep_into(
        &b,
        &["--set", "clock_ghz=1,2", "--shard", "1/2"],
    ));
    let json = std::fs::read_to_string(a.join("sweep.json")).unwrap();
    assert!(json.contains("\"schedule\": \"sequential\"") && json.contains("\"mode\": \"timing\""));
    assert!(json.contains("\"scenario_hash\": \""), "{json}");
    let out = mnsim(&[
        "merge",
        "--out",
        scratch(&tmp, "m").to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("schedule `overlapped` here, `sequential` there"),
        "{err}"
    );
}

/// `points.jsonl` of a finished sweep, as its header and its row lines.
fn log_of(dir: &std::path::Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(dir.join("points.jsonl")).unwrap();
    let mut lines = text.lines().map(String::from);
    let header = lines.next().unwrap();
    (header, lines.collect())
}

/// The line `s` of a JSON row edited: `from` (a key and value as written, `"point":1`)
/// replaced by `to`.
fn edit(s: &str, from: &str, to: &str) -> String {
    assert!(s.contains(from), "{from} in {s}");
    s.replacen(from, to, 1)
}

#[test]
fn a_resumed_sweep_refuses_a_row_that_is_not_its_own_naming_the_line() {
    let tmp = tempdir("sweep");
    let dir = scratch(&tmp, "own");
    let knobs = ["--set", "clock_ghz=1,2"];
    ok(&sweep_into(&dir, &knobs));
    let (header, rows) = log_of(&dir);
    assert_eq!(rows.len(), 6, "2 points x 3 plans");
    // Another sweep of the same scenario: other clocks, the same points and plans.
    let other = scratch(&tmp, "other");
    ok(&sweep_into(&other, &["--set", "clock_ghz=4,5"]));
    let (_, foreign) = log_of(&other);
    let plan0 = serde_json::from_str::<serde_json::Value>(&rows[0]).unwrap()["plan"]
        .as_str()
        .unwrap()
        .to_string();
    let conflicting = {
        let v: serde_json::Value = serde_json::from_str(&rows[0]).unwrap();
        let c = v["result"]["total_cycles"].as_u64().unwrap();
        edit(
            &rows[0],
            &format!("\"total_cycles\":{c},"),
            "\"total_cycles\":1,",
        )
    };
    let csv = std::fs::read(dir.join("sweep.csv")).unwrap();
    for (bad, want) in [
        ("{\"point\":1}".to_string(), "not a row of this sweep"),
        (
            edit(&rows[0], "\"point\":0", "\"point\":2"),
            "point 2 is out of range: the sweep has 2 points",
        ),
        (
            edit(
                &rows[0],
                &format!("\"plan\":\"{plan0}\""),
                "\"plan\":\"nope\"",
            ),
            "plan `nope` is not one the sweep runs",
        ),
        (foreign[0].clone(), "a row of another sweep"),
        (
            conflicting,
            "given twice, with other figures (first at line 2)",
        ),
    ] {
        // The bad row third of the six, the rest the sweep's own.
        let mut lines = vec![
            header.clone(),
            rows[0].clone(),
            rows[1].clone(),
            bad.clone(),
        ];
        lines.extend(rows[2..].iter().cloned());
        let text = format!("{}\n", lines.join("\n"));
        std::fs::write(dir.join("points.jsonl"), &text).unwrap();
        let out = sweep_into(&dir, &knobs);
        let err = common::one_line(&String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{bad} accepted");
        let at = format!("{}:4:", dir.join("points.jsonl").display());
        assert!(err.contains(&at) && err.contains(want), "{bad}: {err}");
        // Refused before anything ran or was written.
        assert_eq!(
            std::fs::read_to_string(dir.join("points.jsonl")).unwrap(),
            text
        );
        assert_eq!(std::fs::read(dir.join("sweep.csv")).unwrap(), csv);
    }
    // A failed run followed by its run again (what a resumed sweep appends) is its own:
    // the later row stands; a failed row alone runs again.
    let failed = |row: &str| {
        let mut v: serde_json::Value = serde_json::from_str(row).unwrap();
        v["result"] = serde_json::Value::Null;
        v["error"] = "out of LM".into();
        v.to_string()
    };
    let mut lines = vec![header.clone(), failed(&rows[0]), rows[0].clone()];
    lines.extend(rows[1..5].iter().cloned());
    lines.push(failed(&rows[5]));
    std::fs::write(dir.join("points.jsonl"), format!("{}\n", lines.join("\n"))).unwrap();
    let out = sweep_into(&dir, &knobs);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("5 run(s) already done (points.jsonl), 1 to run"),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.join("sweep.csv")).unwrap(), csv);
}

#[test]
fn merge_checks_every_row_against_its_sweep_naming_file_and_line() {
    let tmp = tempdir("sweep");
    let shards: Vec<std::path::PathBuf> = (0..2).map(|i| scratch(&tmp, &format!("s{i}"))).collect();
    for (i, d) in shards.iter().enumerate() {
        let shard = format!("{i}/2");
        ok(&sweep_into(
            d,
            &[
                "--set",
                "clock_ghz=1,2,3,4",
                "--plan",
                "blog",
                "--shard",
                &shard,
            ],
        ));
    }
    let file = shards[0].join("sweep.json");
    let json = std::fs::read_to_string(&file).unwrap();
    // The 1-based line where the row holding `"point": p` begins (its `{`).
    let row_line = |text: &str, needle: &str, nth: usize| -> usize {
        let i = text.match_indices(needle).nth(nth).unwrap().0;
        text[..i].matches('\n').count()
    };
    let p2 = "\"point\": 2,";
    let result_at = json.find("\"result\": {").unwrap();
    let result_end = result_at + json[result_at..].find("\n      },").unwrap() + "\n      }".len();
    for (text, line, want) in [
        // Point 2 relabelled 0: point 0 twice, point 2 missing.
        (
            json.replacen(p2, "\"point\": 0,", 1),
            row_line(&json, p2, 0),
            "point 0, plan blog is given twice",
        ),
        // Relabelled 1: a point of the other shard.
        (
            json.replacen(p2, "\"point\": 1,", 1),
            row_line(&json, p2, 0),
            "point 1 is not a point of shard 0/2",
        ),
        (
            json.replacen(p2, "\"point\": 8,", 1),
            row_line(&json, p2, 0),
            "point 8 is out of range: the sweep has 4 points",
        ),
        (
            json.replacen("\"plan\": \"blog\",", "\"plan\": \"cols\",", 1),
            row_line(&json, "\"point\": 0,", 0),
            "plan `cols` is not one the sweep runs",
        ),
        (
            format!(
                "{}null{}",
                &json[..result_at + "\"result\": ".len()],
                &json[result_end..]
            ),
            row_line(&json, "\"point\": 0,", 0),
            "neither a result nor an error",
        ),
    ] {
        std::fs::write(&file, &text).unwrap();
        let merged = scratch(&tmp, "m");
        let out = mnsim(&[
            "merge",
            "--out",
            merged.to_str().unwrap(),
            shards[0].to_str().unwrap(),
            shards[1].to_str().unwrap(),
        ]);
        let err = common::one_line(&String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{want}: merged");
        let at = format!("{}:{line}:", file.display());
        assert!(
            err.contains(&at) && err.contains(want),
            "{at} {want}: {err}"
        );
        assert!(!merged.exists(), "nothing written");
    }
}
