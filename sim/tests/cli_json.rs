//! Numbers people look for: `--json` on run, check, compare and machines; `ops.csv` beside
//! `report.json`; the hint when the bottleneck is a level layouts cannot name.

mod common;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn mnsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("runs")
}

fn json(args: &[&str]) -> Value {
    let out = mnsim(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn run_json_is_the_reports() {
    let v = json(&["run", "scenarios/blog_12x8.ron", "--json"]);
    let reps = v.as_array().unwrap();
    assert_eq!(reps.len(), 5, "one report per plan");
    for r in reps {
        assert_eq!(r["schema"], mnsim_reports::SCHEMA);
        assert!(r["total_cycles"].as_u64().unwrap() > 0);
        assert_eq!(r["verified"], true);
    }
    let v = json(&["run", "scenarios/blog_12x8.ron", "--plan", "rows", "--json"]);
    assert_eq!(v.as_array().unwrap()[0]["plan"], "rows");
}

#[test]
fn compare_json_ranks_the_plans() {
    let v = json(&[
        "compare",
        "scenarios/mlp_block.ron",
        "--mode",
        "timing",
        "--json",
    ]);
    let plans = v["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 2);
    let cycles: Vec<u64> = plans
        .iter()
        .map(|p| p["total_cycles"].as_u64().unwrap())
        .collect();
    assert!(cycles[0] <= cycles[1], "{cycles:?}");
}

#[test]
fn check_json_says_per_plan_and_fails_when_one_does() {
    let v = json(&["check", "scenarios/blog_12x8.ron", "--json"]);
    assert_eq!(v["ok"], true);
    assert_eq!(v["plans"].as_array().unwrap().len(), 5);
    assert_eq!(v["plans"][0]["machine"], "toy4");
    let out = mnsim(&[
        "check",
        "scenarios/blog_12x8.ron",
        "--json",
        "--set",
        "levels.PE.memory.bytes=64",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(
        v["plans"][0]["error"].as_str().unwrap().contains("LM"),
        "{v}"
    );
}

#[test]
fn machines_json_lists_presets_and_describes_one() {
    let v = json(&["machines", "--json"]);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mncore2",
            "mncore1",
            "toy4",
            "mn3_node",
            "mn3_zone",
            "mncore2_server"
        ]
    );
    let v = json(&[
        "machines",
        "mncore2",
        "--json",
        "--set",
        "dram.bytes_per_cycle=256",
    ]);
    assert_eq!(v["pes"], 4096);
    assert_eq!(v["peak_flops_per_cycle"]["f16"], 524288.0);
    assert_eq!(v["knobs"]["dram.bytes_per_cycle"], 256.0);
    assert_eq!(v["machine"]["dram"]["bytes_per_cycle"], 256.0);
}

#[test]
fn ops_csv_sits_beside_report_json() {
    let tmp = common::tmp::tempdir("ops-csv");
    let dir = tmp.path().join("out");
    let out = mnsim(&[
        "run",
        "scenarios/blog_12x8.ron",
        "--plan",
        "rows",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let csv = std::fs::read_to_string(dir.join("ops.csv")).unwrap();
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let ops = report["ops"].as_array().unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("index,op,tensor,layout,start,end,cycles,bottleneck,"));
    assert_eq!(lines.len(), ops.len() + 1);
    // The cycles column agrees with report.json (the layout column is quoted: count from
    // the end of the quoted field).
    for (line, op) in lines[1..].iter().zip(ops) {
        let after_layout = line.rsplit_once("\",").map_or(*line, |x| x.1);
        let after_layout = if line.contains('"') {
            after_layout
        } else {
            line.splitn(5, ',').nth(4).unwrap()
        };
        let fields: Vec<&str> = after_layout.split(',').collect();
        assert_eq!(
            fields[2],
            op["cycles"].as_u64().unwrap().to_string(),
            "{line}"
        );
    }
}

#[test]
fn a_bottleneck_on_a_level_layouts_cannot_name_gets_a_hint() {
    let out = mnsim(&["run", "scenarios/peak_matmul_fp16.ron"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Group bounds the most cycles, but layouts cannot name Group: it folds into L2B (8 positions, 2 per Group)"),
        "{text}"
    );
    // A run bound by a level layouts name gets no such hint.
    let out = mnsim(&["run", "scenarios/blog_12x8.ron", "--plan", "rows"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("cannot name"));
}

/// No shipped scenario readies its PEs at different cycles (the report views' tests cover
/// the case where they differ): the columns stay away, and nothing is cut.
#[test]
fn terminal_leaves_out_ready_columns_when_pes_agree() {
    for (file, plan) in [
        ("scenarios/blog_12x8.ron", "rows"),
        ("scenarios/mlp_block.ron", "split_k"),
    ] {
        let out = mnsim(&["run", file, "--mode", "timing", "--plan", plan]);
        let text = String::from_utf8_lossy(&out.stdout);
        let header = text.lines().find(|l| l.contains("useful work")).unwrap();
        assert!(!header.contains("p50") && !header.contains("max"), "{text}");
        assert!(!text.contains('…'), "{text}");
    }
}

#[test]
fn check_lists_the_reduces_a_run_inserts_after_partial_sums() {
    // mlp_block's split_k plan splits the contraction over L1B and L2B under
    // auto_reduce: two tree Reduces follow the matmul, leaf-most level first.
    let v = json(&["check", "scenarios/mlp_block.ron", "--json"]);
    let plans = v["plans"].as_array().unwrap();
    let plan = |p: &str| plans.iter().find(|x| x["plan"] == p).unwrap();
    let ins = plan("split_k")["inserted_reduces"]
        .as_array()
        .unwrap()
        .clone();
    let levels: Vec<&str> = ins.iter().map(|i| i["level"].as_str().unwrap()).collect();
    assert_eq!(levels, ["L1B", "L2B"], "{v}");
    assert!(
        ins.iter().all(|i| i["tensor"] == "y" && i["after"] == 6),
        "{v}"
    );
    // A plan whose matmul keeps its contraction whole inserts none.
    assert_eq!(
        plan("gather")["inserted_reduces"].as_array().unwrap().len(),
        0
    );
    let out = mnsim(&["check", "scenarios/mlp_block.ron", "--plan", "split_k"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("+ Reduce of `y` over L1B after op 6"),
        "{text}"
    );
}

#[test]
fn compare_json_holds_the_op_by_op_diff_it_shows_in_text() {
    let v = json(&["compare", "scenarios/attention_block.ron", "--json"]);
    let diffs = v["ops"].as_array().unwrap();
    assert_eq!(diffs.len(), 1, "the slower plan against the fastest: {v}");
    let d = &diffs[0];
    assert_eq!(d["a"], v["plans"][0]["plan"]);
    assert_eq!(d["b"], v["plans"][1]["plan"]);
    let ops = d["ops"].as_array().unwrap();
    // split_k (the fastest) has the tree Reduce the other plan does not.
    let only_a: Vec<&Value> = ops.iter().filter(|o| o["change"] == "only_a").collect();
    assert_eq!(only_a.len(), 1, "{d}");
    assert_eq!(only_a[0]["op"], "Reduce");
    assert!(only_a[0]["b"].is_null());
    // Every op's delta is b − a, and the same ops are counted.
    for o in ops {
        let c = |s: &str| o[s]["cycles"].as_i64().unwrap_or(0);
        assert_eq!(o["delta_cycles"].as_i64().unwrap(), c("b") - c("a"), "{o}");
    }
    let same = ops.iter().filter(|o| o["change"] == "same").count();
    assert_eq!(d["same_ops"].as_u64().unwrap() as usize, same);
    // The text shows the same rows (the ops that differ).
    let out = mnsim(&["compare", "scenarios/attention_block.ron"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for o in ops.iter().filter(|o| o["change"] != "same") {
        let name = format!(
            "{} {}",
            o["op"].as_str().unwrap(),
            o["tensor"].as_str().unwrap()
        );
        assert!(text.contains(&name), "{name} in {text}");
    }
}

#[test]
fn sweep_merge_layout_explain_and_shape_index_print_json() {
    let v = json(&[
        "sweep",
        "scenarios/blog_12x8.ron",
        "--plan",
        "rows",
        "--set",
        "clock_ghz=1,2",
        "--json",
    ]);
    assert_eq!(v["schema"], mnsim_reports::SWEEP_SCHEMA);
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);
    // With --out: the files are written and the same JSON printed; merge prints the whole.
    let tmp = common::tmp::tempdir("json-sweep");
    let dir = tmp.path().join("sweep");
    let merged = tmp.path().join("merged");
    let v2 = json(&[
        "sweep",
        "scenarios/blog_12x8.ron",
        "--plan",
        "rows",
        "--set",
        "clock_ghz=1,2",
        "--json",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(v2, file);
    let m = json(&[
        "merge",
        "--out",
        merged.to_str().unwrap(),
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(m["rows"], file["rows"]);
    drop(tmp);

    let v = json(&[
        "layout",
        "explain",
        "((4_PE, 3:8), (8:1))",
        "--shape",
        "12,8",
        "--json",
    ]);
    assert_eq!(v["layout"], "((4_PE:1, 3:8), (8:1))");
    assert_eq!(v["logical"], serde_json::json!([12, 8]));
    assert_eq!(v["levels"][0]["level"], "PE");
    assert_eq!(v["levels"][0]["used"], 4);
    assert_eq!(v["elements_per_pe"], 24);
    assert_eq!(v["pes_with_data"], 4);

    let v = json(&[
        "shape",
        "index",
        "f32[4,8]{1,0:T(2,4)(2,1)}",
        "--index",
        "2,3",
        "--json",
    ]);
    let text = mnsim(&[
        "shape",
        "index",
        "f32[4,8]{1,0:T(2,4)(2,1)}",
        "--index",
        "2,3",
    ]);
    let last = String::from_utf8_lossy(&text.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert_eq!(v["linear_index"].as_u64().unwrap().to_string(), last);
    assert_eq!(v["index"], serde_json::json!([2, 3]));
    assert_eq!(v["buffer_elements"], 32);
}

/// "Hidden cycles" are one figure everywhere: the ops' work cycles summed less the total.
/// double_buffer's streams stretch ops past their work (`cycles` > `work_cycles`), so a
/// view that summed `cycles` would disagree.
#[test]
fn hidden_cycles_are_the_same_in_the_terminal_the_html_and_the_json() {
    let tmp = common::tmp::tempdir("hidden");
    let dir = tmp.path().join("out");
    let args = ["run", "scenarios/double_buffer.ron", "--plan", "single"];
    let v = json(&[&args[..], &["--json"]].concat());
    let r = &v[0];
    let work: u64 = r["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["work_cycles"].as_u64().unwrap())
        .sum();
    let cycles: u64 = r["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["cycles"].as_u64().unwrap())
        .sum();
    assert_ne!(work, cycles, "the case that tells the two sums apart");
    let hidden = work - r["total_cycles"].as_u64().unwrap();
    let th = |n: u64| {
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let out = mnsim(&[&args[..], &["--out", dir.to_str().unwrap()]].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{} cycles hidden behind other ops", th(hidden))),
        "{text}"
    );
    assert!(
        text.contains(&format!("of the ops' {} cycles", th(work))),
        "{text}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains(&format!(
            "{} cycles of the ops&#39; {} were hidden behind others",
            th(hidden),
            th(work)
        )) || html.contains(&format!(
            "{} cycles of the ops' {} were hidden behind others",
            th(hidden),
            th(work)
        )),
        "the HTML's figures"
    );
}
