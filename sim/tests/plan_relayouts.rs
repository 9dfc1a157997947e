//! A plan that needs Relayouts the program lacks: `run` runs it with them (never the
//! default layouts instead), `plan --write` writes them into the program, and the file
//! then runs as written at the cycles `plan` reported.

mod common;

use mnsim_sim::plan::write::{AddPlanError, add_fields, add_ops};
use mnsim_sim::scenario::{self, Mode, Op};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workload(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/workloads")
        .join(rel)
}

fn timing_cycles(sc: &scenario::Scenario, src: &scenario::Source, plan: &str) -> u64 {
    let mut res = scenario::resolve(sc, src, Some(plan), &[], &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{plan}: {e:?}"));
    res.mode = Mode::Timing;
    mnsim_sim::run::run(&res).unwrap().report.total_cycles
}

const TEXT: &str = r#"Scenario(
    name: "two ops",
    machine: Preset("mncore2"),
    tensors: {
        "x": (dtype: F32, shape: "f32[64]{0}", init: Iota),
    },
    program: [
        // Load it.
        Load(tensor: "x", layout: "((64_PE:1))"),
        Store(tensor: "x"),
    ],
)
"#;

/// A plan's algorithm goes last into the op it names, whatever the op's text ends with,
/// and nothing else moves (docs/planner.md, collectives).
#[test]
fn fields_go_last_into_the_op_at_their_index() {
    let field = r#"algorithm: "tree""#.to_string();
    let out = add_fields(TEXT, &[(1, field.clone())]).unwrap();
    assert_eq!(
        out,
        TEXT.replace(
            r#"Store(tensor: "x"),"#,
            r#"Store(tensor: "x", algorithm: "tree"),"#
        )
    );
    let comma = TEXT.replace(r#"Store(tensor: "x"),"#, "Store(tensor: \"x\",\n        ),");
    let out = add_fields(&comma, &[(1, field.clone())]).unwrap();
    assert!(
        out.contains("Store(tensor: \"x\", algorithm: \"tree\"\n        ),"),
        "{out}"
    );
    assert_eq!(add_fields(TEXT, &[(2, field)]), Err(AddPlanError::NoOp(2)));
    assert_eq!(add_fields(TEXT, &[]).unwrap(), TEXT);
}

#[test]
fn ops_go_before_the_op_at_their_index_and_nothing_else_moves() {
    let relayout = |l: &str| Op::Relayout {
        tensor: "x".into(),
        layout: l.into(),
        out: None,
        buffers: None,
        algorithm: None,
    };
    let a = scenario::pretty::op_text(&relayout("((4_MAB:1, 16_PE:1))"));
    let b = scenario::pretty::op_text(&relayout("((64_PE:1))"));
    let out = add_ops(TEXT, &[(1, a.clone()), (1, b.clone())]).unwrap();
    // Each on its own line, at the Store's indentation, in order; the rest as written.
    let expect = TEXT.replace(
        "        Store(",
        &format!("        {a},\n        {b},\n        Store("),
    );
    assert_eq!(out, expect);
    let sc = scenario::parse(&out, "t.ron").unwrap();
    assert!(matches!(sc.program[1], Op::Relayout { .. }));
    assert!(matches!(sc.program[3], Op::Store { .. }));
    // The same ops inserted into the parsed scenario give the same program.
    let mut sc0 = scenario::parse(TEXT, "t.ron").unwrap();
    sc0.insert_ops(vec![
        (1, relayout("((4_MAB:1, 16_PE:1))")),
        (1, relayout("((64_PE:1))")),
    ]);
    assert_eq!(sc0.program, sc.program);
    // No op 5: an error, and the text untouched.
    assert_eq!(add_ops(TEXT, &[(5, a)]), Err(AddPlanError::NoOp(5)));
    assert_eq!(add_ops(TEXT, &[]).unwrap(), TEXT);
}

/// Every StableHLO export: `run`'s plan `auto` is the planner's best, Relayouts and all,
/// and the cycles its note states are the ones the planned program runs at.
#[test]
fn run_runs_the_planned_plan_at_the_cycles_it_states() {
    let mut with_relayouts = 0;
    let dir = workload("stablehlo");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlir"))
        .collect();
    files.sort();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut binds = BTreeMap::new();
        if name.contains("dynB") {
            binds.insert("b".to_string(), 2);
        }
        if name.contains("dynT") {
            binds.insert("t".to_string(), 128);
        }
        let (mut sc, mut src) = mnsim_sim::load::load_with(&path, &binds).unwrap();
        let before = sc.program.len();
        let note = mnsim_sim::import::plan_auto(&mut sc, &mut src, &[], &binds);
        assert!(note.starts_with("planned "), "{name}: {note}");
        let stated: u64 = note
            .rsplit(": ")
            .next()
            .and_then(|c| c.strip_suffix(" cycles"))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("{name}: {note}"));
        let added = sc.program.len() - before;
        if added > 0 {
            with_relayouts += 1;
            assert!(note.contains("Relayout"), "{name}: {note}");
            assert_eq!(sc.plans.keys().collect::<Vec<_>>(), ["auto"], "{name}");
            // The source is the program that runs: it parses back to it.
            assert_eq!(scenario::parse(&src.text, "x").unwrap(), sc, "{name}");
        }
        let mut res = scenario::resolve(&sc, &src, Some("auto"), &[], &binds).unwrap();
        res.mode = Mode::Timing;
        let ran = mnsim_sim::run::run(&res).unwrap().report.total_cycles;
        assert_eq!(ran, stated, "{name}: {note}");
    }
    // The bf16 attention block's best plan needs Relayouts (it fell back to the default
    // layouts, 10x slower, before they were inserted).
    assert!(with_relayouts >= 1);
}

/// `plan --write` of a plan that needs Relayouts: they are in the written program, and
/// the file runs that plan at the cycles `plan` reported.
#[test]
fn plan_write_writes_the_relayouts_and_the_file_runs_as_written() {
    let dir = common::tmp::tempdir("plan_relayouts");
    let file = dir.path().join("attn.mlir");
    std::fs::copy(workload("stablehlo/gpt2_attn_block_s128_bf16.mlir"), &file).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(["plan", file.to_str().unwrap(), "--json", "--work", "300000"])
        .args(["--write", "best"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let best = v["best"]["total_cycles"].as_u64().unwrap();
    let inserted = v["best"]["inserted"].as_array().unwrap().len();
    assert!(inserted > 0, "{}", v["best"]);
    let ron = dir.path().join("attn.ron");
    let (sc, src) = scenario::load(&ron).unwrap();
    let relayouts = |sc: &scenario::Scenario| {
        (sc.program.iter())
            .filter(|o| matches!(o, Op::Relayout { .. }))
            .count()
    };
    let (imported, _) = mnsim_sim::load::load(&file).unwrap();
    assert_eq!(relayouts(&sc), relayouts(&imported) + inserted);
    assert_eq!(timing_cycles(&sc, &src, "best"), best);
    // The graph itself is untouched.
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(workload("stablehlo/gpt2_attn_block_s128_bf16.mlir")).unwrap()
    );
}

/// `run` of a file whose program `plan --write` gave Relayouts that a hand plan's layouts
/// do not suit: the other plans run (their reports printed; `--out` all or nothing, so
/// nothing written), the one that does not is named with its error, and `run` exits
/// non-zero.
#[test]
fn run_runs_every_plan_that_runs_and_names_the_others() {
    let dir = common::tmp::tempdir("plan_relayouts_others");
    let ron = dir.path().join("mlp.ron");
    let graph = workload("graphs/gated-mlp-f32.json");
    let ron_s = ron.to_str().unwrap();
    common::mnsim(&["import", graph.to_str().unwrap(), "-o", ron_s]);
    common::mnsim(&["plan", ron_s, "--plan", "auto", "--write", "best"]);
    let (sc, src) = scenario::load(&ron).unwrap();
    // Which hand plans run in the program as written, each alone.
    let runs = |plan: &str| {
        scenario::resolve(&sc, &src, Some(plan), &[], &Default::default())
            .ok()
            .and_then(|res| mnsim_sim::run::run(&res).ok())
            .is_some()
    };
    let hand = ["best", "default", "default_split"];
    let (ok, broken): (Vec<&str>, Vec<&str>) = hand.iter().partition(|p| runs(p));
    assert!(ok.contains(&"best"), "the written plan runs");
    assert!(
        !broken.is_empty(),
        "every hand plan suits the written Relayouts"
    );
    let out = dir.path().join("out");
    let o = common::mnsim_output(&[
        "run",
        ron_s,
        "--mode",
        "timing",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    for p in &broken {
        assert!(err.contains(&format!("plan `{p}`")), "{err}");
    }
    assert!(err.contains("did not run"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let plans: Vec<&str> = (v.as_array().unwrap().iter())
        .map(|r| r["plan"].as_str().unwrap())
        .collect();
    assert_eq!(plans, ok);
    assert!(!out.exists(), "a plan did not run: nothing is written");
}

/// An op inserted before an op of a run of `places` joins that run; the runs after it
/// move on by one.
#[test]
fn inserted_ops_keep_every_op_in_its_place() {
    use mnsim_sim::scenario::{Part, Placed};
    let mut sc = scenario::parse(TEXT, "t.ron").unwrap();
    let run = |first, last, layer| Placed {
        first,
        last,
        layer: Some(layer),
        part: Some(Part::Mlp),
    };
    sc.places = vec![run(0, 0, 0), run(1, 1, 1)];
    let relayout = Op::Relayout {
        tensor: "x".into(),
        layout: "((64_PE:1))".into(),
        out: None,
        buffers: None,
        algorithm: None,
    };
    sc.insert_ops(vec![(1, relayout.clone()), (0, relayout)]);
    // Before op 0: layer 0's run is ops 0..=1; before the Store: layer 1's is 2..=3.
    assert_eq!(sc.places, vec![run(0, 1, 0), run(2, 3, 1)]);
    assert!(matches!(sc.program[3], Op::Store { .. }));
    let places = scenario::places_of(&sc.places, sc.program.len()).unwrap();
    assert_eq!(places[2].layer, Some(1));
}

/// `run` plans an imported file as `mnsim plan` does, with the same budget and the same
/// number of kept plans (`import::PLAN_TOP`), so it runs the plan `plan` reports: the
/// same cycles. On `matmul_post_ops_chain_fusion.json` a search keeping 5 plans
/// (`run`'s before) ended on 17,844 cycles and one keeping 3 on 18,003.
#[test]
fn run_runs_the_plan_that_plan_reports() {
    for rel in [
        "graphs/matmul_post_ops_chain_fusion.json",
        "stablehlo/gpt2_attn_block_s128_bf16.mlir",
    ] {
        let path = workload(rel);
        let plan = Command::new(env!("CARGO_BIN_EXE_mnsim"))
            .args(["plan", path.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        assert!(plan.status.success(), "{rel}");
        let v: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        let planned = v["best"]["total_cycles"].as_u64().unwrap();
        let run = Command::new(env!("CARGO_BIN_EXE_mnsim"))
            .args(["run", path.to_str().unwrap(), "--plan", "auto", "--json"])
            .output()
            .unwrap();
        assert!(run.status.success(), "{rel}");
        let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(r[0]["total_cycles"].as_u64(), Some(planned), "{rel}");
    }
}

/// Rounds (docs/planner.md, rounds): the second round plans the program with the first
/// round's Relayouts in it, from the first's best. Each round's best is no slower than
/// the round before's, the first round is the planning `--rounds 1` does, and the plan
/// of the last round, its Relayouts mapped back before the ops of the program as
/// written, runs from the written file at the cycles `plan` reported.
#[test]
fn a_second_round_plans_from_the_first_and_its_plan_runs_as_written() {
    let rel = "onednn/pattern/int8/int8_f32_matmul_mul_add_fusion_2.json";
    let dir = common::tmp::tempdir("plan_rounds");
    let file = dir.path().join("g.json");
    std::fs::copy(workload(rel), &file).unwrap();
    let plan = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["plan", file.to_str().unwrap(), "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&common::mnsim(&args)).unwrap()
    };
    let once = plan(&["--rounds", "1"]);
    let v = plan(&["--write", "rounds"]);
    let rounds: Vec<u64> = (v["rounds"].as_array().unwrap().iter())
        .map(|r| r["total_cycles"].as_u64().unwrap())
        .collect();
    assert_eq!(once["rounds"].as_array().unwrap().len(), 1);
    assert_eq!(Some(rounds[0]), once["best"]["total_cycles"].as_u64());
    // The graph's best plan needs Relayouts, so a second round runs, and here it gains.
    assert!(rounds.len() >= 2, "{rounds:?}");
    assert!(rounds.windows(2).all(|w| w[1] <= w[0]), "{rounds:?}");
    let best = v["best"]["total_cycles"].as_u64().unwrap();
    assert_eq!(Some(&best), rounds.last());
    assert!(best < rounds[0], "{rounds:?}");
    // Written into the program as written (the Relayouts of both rounds), it runs at
    // the cycles reported.
    let inserted = v["best"]["inserted"].as_array().unwrap().len();
    let (sc, src) = scenario::load(&dir.path().join("g.ron")).unwrap();
    let (imported, _) = mnsim_sim::load::load(&file).unwrap();
    let relayouts = |sc: &scenario::Scenario| {
        (sc.program.iter())
            .filter(|o| matches!(o, Op::Relayout { .. }))
            .count()
    };
    assert_eq!(relayouts(&sc), relayouts(&imported) + inserted);
    assert_eq!(timing_cycles(&sc, &src, "rounds"), best);
}
