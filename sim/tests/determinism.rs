//! Planning inside `run G.json` stops on work alone (docs/planner.md): the same plan and
//! the same cycles however fast the machine is, with every core busy or not; a wall-clock
//! limit applies only when the user gives `--time-limit`, and a huge one is refused,
//! not a panic; and the same on one thread as on every core.

mod common;

use mnsim_sim::import;
use mnsim_sim::scenario::{self, PlanValue};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Plans plan `auto` of a graph as `run` does; its layouts and the timing run's cycles.
fn plan_and_run(name: &str) -> (Vec<(String, PlanValue)>, u64, String) {
    let path = common::graphs::dir().join(name);
    let (mut sc, mut src) = mnsim_sim::load::load(&path).unwrap();
    let note = import::plan_auto(&mut sc, &mut src, &[], &Default::default());
    let plan: Vec<(String, PlanValue)> = sc.plans["auto"]
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut res = scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default()).unwrap();
    res.mode = scenario::Mode::Timing;
    let cycles = mnsim_sim::run::run(&res).unwrap().report.total_cycles;
    (plan, cycles, note)
}

#[test]
fn run_plans_a_graph_alike_with_the_machine_idle_and_busy() {
    let name = "softmax_post_ops_unary_fusion.json";
    let (quiet, cycles, note) = plan_and_run(name);
    assert!(note.starts_with("planned "), "{note}");
    assert!(!note.contains("time limit"), "{note}");
    // Every core spinning while the same graph is planned again.
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..std::thread::available_parallelism().map_or(2, |n| n.get()))
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                x
            })
        })
        .collect();
    let busy = plan_and_run(name);
    stop.store(true, Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    assert_eq!(busy.0, quiet, "the plan");
    assert_eq!(busy.1, cycles, "the cycles");
}

/// The planner generates the variables' candidates on every core at once: on one
/// thread it plans the same layouts, cycles and work.
#[test]
fn run_plans_a_graph_alike_on_one_thread_and_on_every_core() {
    let name = "MHA-GPT-inf-fp32-bs1.json";
    let all = plan_and_run(name);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| plan_and_run(name));
    assert_eq!(one.0, all.0, "the plan");
    assert_eq!(one.1, all.1, "the cycles");
    // The note says how long it took, then how much was evaluated and the cycles.
    let work = |n: &str| n.split_once(" s (").map(|x| x.1.to_string());
    assert!(
        work(&all.2).is_some_and(|w| w.contains("evaluated")),
        "{}",
        all.2
    );
    assert_eq!(work(&one.2), work(&all.2), "{} / {}", one.2, all.2);
}

#[test]
fn a_huge_time_limit_is_refused_not_a_panic() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for limit in ["1e20", "inf", "0", "NaN"] {
        let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
            .current_dir(&root)
            .args([
                "plan",
                "scenarios/plan_layernorm.ron",
                "--time-limit",
                limit,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{limit}: {err}");
        assert!(
            err.contains("--time-limit must be a positive number"),
            "{limit}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn plan_stops_on_work_and_reports_the_bound() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .current_dir(&root)
        .args([
            "plan",
            "scenarios/plan_layernorm.ron",
            "--json",
            "--work",
            "3000",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // No time limit unless asked for: the work budget stopped the search.
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["work_spent"], true);
    // The layer norm's bound, whatever the layout (docs/model.md, the bound): its
    // 1024×128 f32 input (512 KiB) down the 4 Group ports at 64 B/cycle, 2,048 cycles,
    // plus the path's least latencies 16 + 8 + 4.
    let bound = v["bound_cycles"].as_u64().unwrap();
    let best = v["best"]["total_cycles"].as_u64().unwrap();
    assert_eq!(bound, 2_076);
    assert!(best >= bound, "{best} {bound}");
    assert_eq!(v["bound_resource"], "Group down");
    let x = v["times_bound"].as_f64().unwrap();
    assert!((x - best as f64 / bound as f64).abs() < 1e-12);
}
