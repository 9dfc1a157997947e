//! `mnsim sweep` and `mnsim compare` through the binary.

use std::path::Path;
use std::process::Command;

fn mnsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("runs")
}

#[test]
fn sweeping_a_bandwidth_writes_csv_and_a_chart_and_cycles_follow_the_knob() {
    let dir = std::env::temp_dir().join(format!("mnsim-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = mnsim(&[
        "sweep",
        "scenarios/transfer_blog_1024x512.ron",
        "--mode",
        "timing",
        "--set",
        "links.Board.distribute.parent=64,128,256,512",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    let svg = std::fs::read_to_string(dir.join("sweep.svg")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 4 * 3, "4 values x 3 plans:\n{csv}");
    let cycles = |plan: &str| -> Vec<u64> {
        rows.iter()
            .filter(|r| r[2] == plan)
            .map(|r| r[3].parse().unwrap())
            .collect()
    };
    // More distribute bandwidth never slows the distributing plan, and helps it here.
    let blog = cycles("blog");
    assert!(blog.windows(2).all(|w| w[1] <= w[0]), "{blog:?}");
    assert!(blog[3] < blog[0], "{blog:?}");
    // The broadcast plan's Load broadcasts over L2B: the distribute rate does not touch it.
    let bcast = cycles("bcast");
    assert!(bcast.windows(2).all(|w| w[0] == w[1]), "{bcast:?}");
    assert_eq!(svg.matches("<polyline").count(), 3);
    assert!(svg.contains("links.Board.distribute.parent"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_needs_exactly_one_knob_with_several_values() {
    let out = mnsim(&["sweep", "scenarios/blog_12x8.ron", "--set", "clock_ghz=1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("several values"));
    let out = mnsim(&[
        "sweep",
        "scenarios/blog_12x8.ron",
        "--set",
        "clock_ghz=1,2",
        "--set",
        "word_bytes=4,8",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("one knob at a time"));
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
