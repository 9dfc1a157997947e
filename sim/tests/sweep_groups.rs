//! Sweeps over knob groups (`--set 'links.Board.*=x2'`, `--set 'a,b=64'`), several
//! `--plan`s, `--replan` (each point planned as `mnsim run` plans a graph), and a merge
//! that draws the chart the sweep drew, through the binary.

mod common;

use common::tmp::tempdir;
use mnsim_reports::{Report, Sweep};
use std::path::Path;
use std::process::{Command, Output};

fn mnsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("NO_COLOR", "1")
        .output()
        .expect("runs")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn err(out: &Output) -> String {
    assert!(!out.status.success(), "succeeded");
    String::from_utf8_lossy(&out.stderr)
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

const BLOG: &str = "scenarios/transfer_blog_1024x512.ron";

fn sweep_json(args: &[&str]) -> Sweep {
    let mut all = vec!["sweep", BLOG, "--mode", "timing", "--json"];
    all.extend(args);
    serde_json::from_str(&ok(&mnsim(&all))).unwrap()
}

fn run_cycles(args: &[&str]) -> u64 {
    let mut all = vec!["run", BLOG, "--mode", "timing", "--json", "--plan", "blog"];
    all.extend(args);
    let reps: Vec<Report> = serde_json::from_str(&ok(&mnsim(&all))).unwrap();
    reps[0].total_cycles
}

/// Every knob of mncore1 (the blog's machine) under `prefix`, with its value.
fn knobs(prefix: &str) -> Vec<(String, f64)> {
    let out = ok(&mnsim(&["machines", "mncore1", "--knobs"]));
    out.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(" = ")?;
            let v: f64 = v.trim().parse().ok()?;
            k.starts_with(prefix).then(|| (k.to_string(), v))
        })
        .collect()
}

#[test]
fn a_group_axis_multiplies_every_knob_it_matches() {
    let board = knobs("links.Board.");
    assert!(board.len() >= 4, "{board:?}");
    let s = sweep_json(&["--set", "links.Board.*=x1,x2,x4", "--plan", "blog"]);
    let axis = &s.axes[0];
    assert_eq!(axis.name, "links.Board.*");
    assert!(axis.scale);
    let mut names: Vec<&str> = board.iter().map(|(k, _)| k.as_str()).collect();
    let mut got: Vec<&str> = axis.knobs.iter().map(String::as_str).collect();
    names.sort();
    got.sort();
    assert_eq!(got, names, "every Board knob");
    for (i, f) in [1.0, 2.0, 4.0].into_iter().enumerate() {
        // The same point run with each knob set by hand.
        let sets: Vec<String> = board
            .iter()
            .map(|(k, v)| format!("{k}={}", v * f))
            .collect();
        let mut args: Vec<&str> = Vec::new();
        for a in &sets {
            args.extend(["--set", a]);
        }
        let by_hand = run_cycles(&args);
        let row = s.rows.iter().find(|r| r.point == i).unwrap();
        assert_eq!(row.result.as_ref().unwrap().total_cycles, by_hand, "x{f}");
        // `run` takes the group too.
        let group = format!("links.Board.*=x{f}");
        assert_eq!(run_cycles(&["--set", &group]), by_hand, "run x{f}");
    }
    // Faster ports, fewer cycles.
    let c: Vec<u64> = s
        .rows
        .iter()
        .map(|r| r.result.as_ref().unwrap().total_cycles)
        .collect();
    assert!(c[0] > c[1] && c[1] > c[2], "{c:?}");
    // The CSV shows the multipliers as such.
    let csv = ok(&mnsim(&[
        "sweep",
        BLOG,
        "--mode",
        "timing",
        "--plan",
        "blog",
        "--set",
        "links.Board.*=x1,x2",
    ]));
    assert!(
        csv.lines().nth(2).unwrap().starts_with("1,blog,x2,"),
        "{csv}"
    );
}

#[test]
fn one_value_for_several_knobs() {
    let pair = "links.Board.distribute.parent,links.L1B.distribute.parent";
    let s = sweep_json(&["--set", &format!("{pair}=64,512"), "--plan", "blog"]);
    assert_eq!(s.axes[0].name, pair);
    assert_eq!(s.axes[0].knobs.len(), 2);
    assert!(!s.axes[0].scale);
    for (i, v) in [64, 512].into_iter().enumerate() {
        let a = format!("links.Board.distribute.parent={v}");
        let b = format!("links.L1B.distribute.parent={v}");
        let by_hand = run_cycles(&["--set", &a, "--set", &b]);
        let row = s.rows.iter().find(|r| r.point == i).unwrap();
        assert_eq!(row.result.as_ref().unwrap().total_cycles, by_hand);
    }
}

#[test]
fn groups_are_checked_before_any_point_runs() {
    let tmp = tempdir("groups-bad");
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    for (set, says) in [
        (
            vec!["links.Nope.*=x2"],
            "'links.Nope.*' matches no knob of mncore1",
        ),
        (
            vec!["links.Bord.distribute.parent,links.L1B.distribute.parent=64"],
            "did you mean",
        ),
        (vec!["levels.L1B.count=x1.3"], "levels.L1B.count"),
        (vec!["links.Board.*=1,x2"], "not both"),
        (
            vec!["links.Board.*=x2", "links.Board.distribute.parent=64,128"],
            "`links.Board.distribute.parent` is swept by `links.Board.*` and by `links.Board.distribute.parent`",
        ),
    ] {
        let mut args = vec!["sweep", BLOG, "--mode", "timing", "--out", out_s];
        for s in &set {
            args.extend(["--set", s]);
        }
        let e = err(&mnsim(&args));
        assert!(e.contains(says), "{set:?}: {e}");
        assert!(!out.exists(), "{set:?}: a point ran");
    }
}

#[test]
fn several_plans_run_at_every_point() {
    let s = sweep_json(&[
        "--set",
        "links.Board.distribute.parent=64,512",
        "--plan",
        "cols",
        "--plan",
        "blog",
    ]);
    assert_eq!(
        s.plans,
        [Some("cols".to_string()), Some("blog".to_string())]
    );
    assert_eq!(s.rows.len(), 4);
    let plans: Vec<&str> = s.rows.iter().map(|r| r.plan.as_deref().unwrap()).collect();
    assert_eq!(plans, ["cols", "blog", "cols", "blog"]);
    let e = err(&mnsim(&[
        "sweep",
        BLOG,
        "--mode",
        "timing",
        "--set",
        "clock_ghz=1,2",
        "--plan",
        "blog",
        "--plan",
        "nope",
    ]));
    assert!(
        e.contains("no plan `nope` (its plans: bcast, blog, cols)"),
        "{e}"
    );
}

#[test]
fn replan_plans_each_point_as_run_plans_a_graph() {
    let graph = "scenarios/workloads/graphs/MHA-GPT-inf-fp32-bs1.json";
    // Without --replan the planner's plan is not run; naming it asks for --replan.
    let plain: Sweep = serde_json::from_str(&ok(&mnsim(&[
        "sweep",
        graph,
        "--mode",
        "timing",
        "--set",
        "links.Group.*=x1,x2",
        "--json",
    ])))
    .unwrap();
    assert!(
        !plain.plans.contains(&Some("auto".to_string())),
        "{:?}",
        plain.plans
    );
    let e = err(&mnsim(&[
        "sweep",
        graph,
        "--mode",
        "timing",
        "--set",
        "links.Group.*=x1,x2",
        "--plan",
        "auto",
    ]));
    assert!(e.contains("give --replan"), "{e}");
    let s: Sweep = serde_json::from_str(&ok(&mnsim(&[
        "sweep",
        graph,
        "--mode",
        "timing",
        "--set",
        "links.Group.*=x1,x2",
        "--plan",
        "auto",
        "--replan",
        "--json",
    ])))
    .unwrap();
    for (i, f) in ["x1", "x2"].into_iter().enumerate() {
        let set = format!("links.Group.*={f}");
        let reps: Vec<Report> = serde_json::from_str(&ok(&mnsim(&[
            "run", graph, "--mode", "timing", "--json", "--set", &set,
        ])))
        .unwrap();
        let planned = reps
            .iter()
            .find(|r| r.plan.as_deref() == Some("auto"))
            .unwrap();
        let row = s.rows.iter().find(|r| r.point == i).unwrap();
        assert_eq!(
            row.result.as_ref().unwrap().total_cycles,
            planned.total_cycles,
            "{f}: the sweep's plan is the one run plans"
        );
    }
    // Faster Group ports: the planner's plan at x2 beats x1's.
    let c: Vec<u64> = s
        .rows
        .iter()
        .map(|r| r.result.as_ref().unwrap().total_cycles)
        .collect();
    assert!(c[1] < c[0], "{c:?}");
}

#[test]
fn merge_draws_the_chart_the_sweep_drew() {
    let tmp = tempdir("groups-merge");
    let args = |out: &str, shard: Option<&str>| -> Vec<String> {
        let mut a: Vec<String> = [
            "sweep",
            BLOG,
            "--mode",
            "timing",
            "--plan",
            "blog",
            "--set",
            "links.Board.distribute.parent=64,128,256",
            "--set",
            "links.L1B.*=x1,x2",
            "--x",
            "links.L1B.*",
            "--metric",
            "energy",
            "--out",
            out,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(s) = shard {
            a.extend(["--shard".to_string(), s.to_string()]);
        }
        a
    };
    let whole = tmp.path().join("whole");
    let run = |a: Vec<String>| ok(&mnsim(&a.iter().map(String::as_str).collect::<Vec<_>>()));
    run(args(whole.to_str().unwrap(), None));
    let mut dirs = Vec::new();
    for i in 0..2 {
        let d = tmp.path().join(format!("shard-{i}"));
        run(args(d.to_str().unwrap(), Some(&format!("{i}/2"))));
        dirs.push(d.display().to_string());
    }
    let merged = tmp.path().join("merged");
    // No --x, no --metric: the merge reads them from the shards.
    let mut m = vec!["merge", "--out", merged.to_str().unwrap()];
    m.extend(dirs.iter().map(String::as_str));
    ok(&mnsim(&m));
    for f in ["sweep.csv", "sweep.json", "sweep.svg", "sweep.html"] {
        let a = std::fs::read(whole.join(f)).unwrap();
        let b = std::fs::read(merged.join(f)).unwrap();
        assert!(a == b, "{f} differs from the unsharded sweep's");
    }
    let svg = std::fs::read_to_string(merged.join("sweep.svg")).unwrap();
    assert!(svg.contains("energy (mJ) against links.L1B.*"), "{svg}");
}
