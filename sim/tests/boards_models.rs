//! Whole models on many boards (docs/model.md, many boards; docs/planner.md, many
//! boards): what crosses the host's links, and the plans that spread a model over the
//! boards of a node.

mod common;

use common::mnsim;
use common::tmp::tempdir;
use mnsim_reports::Report;
use mnsim_sim::scenario::{self, Mode};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `model` (under `scenarios/workloads/`) imported for `machine` into `dir`.
fn import(model: &str, machine: &str, dir: &Path) -> PathBuf {
    let stem = Path::new(machine).file_stem().unwrap().to_string_lossy();
    let out = dir.join(format!("{stem}.scenario.ron"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/workloads")
        .join(model);
    mnsim(&[
        "import",
        src.to_str().unwrap(),
        "--machine",
        machine,
        "-o",
        out.to_str().unwrap(),
    ]);
    out
}

/// Runs `plan` of the scenario at `path` in timing mode.
fn run(path: &Path, plan: &str) -> Report {
    let (sc, src) = mnsim_sim::load::load(path).unwrap();
    let mut res = scenario::resolve(&sc, &src, Some(plan), &[], &BTreeMap::new()).unwrap();
    res.mode = Mode::Timing;
    mnsim_sim::run::run(&res).unwrap().report
}

/// A program input comes over the host's link once, with its first Load: a slice of it
/// a kernel needs again is read again from the boards' DRAMs, not the host. GPT-2's
/// prefill on a 4-board node streams its weights and re-sends slices of them.
#[test]
fn a_re_sent_slice_of_an_input_comes_from_the_dram_not_the_host() {
    let dir = tempdir("boards-resend");
    let path = import(
        "models/gpt2_small_prefill_s128_f32.mlir",
        "mn3_node",
        dir.path(),
    );
    let r = run(&path, "default_split");
    let on_node = |o: &&mnsim_reports::OpReport| {
        (o.stages.iter()).any(|s| s.level == "Node" && s.direction == "down")
    };
    // Kernels re-send slices (their re-sent stages read the DRAM) ...
    let resending = (r.ops.iter())
        .filter(|o| !matches!(o.op.as_str(), "Load" | "Store" | "Relayout" | "Reduce"))
        .filter(|o| o.stages.iter().any(|s| s.kind == "dram"))
        .count();
    assert!(resending > 0, "no kernel re-sends a slice");
    // ... and none of them crosses the host's link: only transfers do.
    let crossing: Vec<&str> = (r.ops.iter())
        .filter(on_node)
        .map(|o| o.op.as_str())
        .filter(|op| !matches!(*op, "Load" | "Relayout" | "Reduce"))
        .collect();
    assert!(crossing.is_empty(), "{crossing:?}");
    // What came down from the host is at most every input's bytes on every board.
    let boards = r.boards.as_ref().expect("4 boards");
    let down = (boards.links.iter())
        .find(|l| l.name == "Node down")
        .expect("Node down");
    let loads: u64 = (r.ops.iter())
        .filter(|o| o.op == "Load")
        .filter(on_node)
        .flat_map(|o| o.stages.iter())
        .filter(|s| s.kind == "dram")
        .map(|s| s.bytes)
        .sum();
    assert!(loads > 0);
    assert!(
        down.bytes <= 4 * loads + network_bytes(&r),
        "{} > 4 × {loads}",
        down.bytes
    );
}

/// The bytes the network's own collectives (Relayouts and Reduces across boards) carry
/// down.
fn network_bytes(r: &Report) -> u64 {
    (r.ops.iter())
        .filter(|o| matches!(o.op.as_str(), "Relayout" | "Reduce"))
        .flat_map(|o| o.stages.iter())
        .filter(|s| s.level == "Node" && s.direction == "down")
        .map(|s| s.child_bytes)
        .sum()
}

/// mn3_node with `boards` boards, as a machine file in `dir` (the knob
/// `levels.Board.count` cannot change the layouts an import writes for 4), written by
/// `mnsim machines --ron` as the README's study writes it.
fn node_of(boards: u64, dir: &Path) -> PathBuf {
    let count = format!("levels.Board.count={boards}");
    let text = mnsim(&["machines", "mn3_node", "--set", &count, "--ron"]);
    let p = dir.join(format!("mn3_node_{boards}.ron"));
    std::fs::write(&p, text).unwrap();
    p
}

/// `mnsim plan --json` of the scenario at `path` with the inputs on the boards.
fn plan_json(path: &Path) -> serde_json::Value {
    let out = mnsim(&[
        "plan",
        path.to_str().unwrap(),
        "--json",
        "--set",
        "networks.Node.host.inputs=0",
    ]);
    serde_json::from_str(&out).expect("plan --json")
}

/// [`plan_json`]: the best plan's cycles and layouts.
fn plan(path: &Path) -> (u64, Vec<String>) {
    let v = plan_json(path);
    let best = &v["best"];
    let layouts = (best["layouts"].as_object().expect("layouts").values())
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    (best["total_cycles"].as_u64().expect("cycles"), layouts)
}

/// The planner spreads a block over the boards of a node (docs/planner.md, spread starts):
/// GPT-2's MLP block planned for 4 boards runs faster than planned for 1, its layouts
/// split tensors over `Board`, and the same file plans the same on every call.
#[test]
fn the_planner_spreads_a_block_over_the_boards() {
    let dir = tempdir("boards-plan");
    let model = "stablehlo/gpt2_mlp_gelu_s128_f32.mlir";
    let one = import(model, node_of(1, dir.path()).to_str().unwrap(), dir.path());
    let four = import(model, "mn3_node", dir.path());
    let (c1, l1) = plan(&one);
    let (c4, l4) = plan(&four);
    assert!(c4 < c1, "4 boards {c4} cycles, 1 board {c1}");
    // Split over the boards: a `_Board` sub-axis inside a layout's groups (not only
    // a copy on each, `B@[Board,...]`).
    let split = |l: &String| l.split(';').next().unwrap().contains("_Board");
    assert!(l4.iter().any(split), "{l4:?}");
    assert!(!l1.iter().any(split));
    assert_eq!(plan(&four).0, c4);
}

/// On many boards the planner plans one board first (docs/planner.md, one board first)
/// and seeds the search over the boards with that plan, a copy on each: GPT-2's
/// attention block gains nothing from a second board's tokens or heads (its spread
/// plans gather more than they save), and still plans no slower on 2 boards than its
/// one-board plan. The one-board plan is the file's planned on one board, on half the
/// budget and from the 2-board file's hand plans with their board splits made `Time`
/// steps: a plan of one board (no faster than the bound of the file imported for one
/// board) near that file's own plan (within 25%: their seeds and budgets differ); one
/// board plans none first.
#[test]
fn the_boards_are_planned_from_the_one_board_plan() {
    let dir = tempdir("boards-one-first");
    let model = "stablehlo/gpt2_attn_block_s128_f32.mlir";
    let one = import(model, node_of(1, dir.path()).to_str().unwrap(), dir.path());
    let two = import(model, node_of(2, dir.path()).to_str().unwrap(), dir.path());
    let (v1, v2) = (plan_json(&one), plan_json(&two));
    assert!(v1["one_board"].is_null(), "{}", v1["one_board"]);
    let seeded = v2["one_board"]["total_cycles"].as_u64().expect("one_board");
    let c1 = v1["best"]["total_cycles"].as_u64().unwrap();
    let c2 = v2["best"]["total_cycles"].as_u64().unwrap();
    let bound1 = v1["bound_cycles"].as_u64().unwrap();
    assert!(
        bound1 <= seeded,
        "one board {seeded} cycles, its bound {bound1}"
    );
    assert!(
        seeded * 4 <= c1 * 5,
        "one board first {seeded}, one board {c1}"
    );
    assert!(
        c2 <= seeded,
        "2 boards {c2} cycles, its one-board plan {seeded}"
    );
}

/// `run`, `plan`, `check` and `sweep` import a model for the machine `--machine`
/// names, as `import --machine` does; a scenario names its own machine, and `--machine` on one is
/// an error that says so.
#[test]
fn commands_import_for_the_machine_given() {
    let dir = tempdir("boards-machine");
    let model = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/workloads/stablehlo/gpt2_mlp_gelu_s128_f32.mlir");
    let model = model.to_str().unwrap();
    let out = mnsim(&[
        "run",
        model,
        "--machine",
        "mn3_node",
        "--plan",
        "default_split",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v[0];
    assert_eq!(r["machine"], "mn3_node");
    assert_eq!(r["boards"]["boards"], 4);
    // The same cycles as the file imported first, then run.
    let ron = import(
        "stablehlo/gpt2_mlp_gelu_s128_f32.mlir",
        "mn3_node",
        dir.path(),
    );
    let again = mnsim(&[
        "run",
        ron.to_str().unwrap(),
        "--plan",
        "default_split",
        "--json",
    ]);
    let w: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(r["total_cycles"], w[0]["total_cycles"]);
    let checked = mnsim(&["check", model, "--machine", "mn3_node"]);
    assert!(checked.contains("mn3_node"), "{checked}");
    // A sweep of a knob only a machine of many boards has.
    let csv = mnsim(&[
        "sweep",
        model,
        "--machine",
        "mn3_node",
        "--plan",
        "default_split",
        "--set",
        "networks.Node.bytes_per_cycle=8,16",
    ]);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(rows.iter().all(|r| r.contains("default_split")), "{csv}");
    // A scenario names its machine.
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(["run", ron.to_str().unwrap(), "--machine", "mncore1"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("names its own machine"), "{err}");
}
