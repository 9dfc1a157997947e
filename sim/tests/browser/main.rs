//! The pages `mnsim run --out` writes, opened in a real browser: headless Chromium renders
//! `report.html` and `compare.html` without a page error, and the SVG charts are in the DOM;
//! `layout.rs` measures the pages as the browser lays them out (no label cut or covered,
//! tables that fit) and works the ops table's sort.
//!
//! Without `/usr/bin/chromium` the browser test is skipped with a note, except when the `CI`
//! environment variable is set: there it fails, since CI installs Chromium (`.ci/run`).

mod chromium;
#[path = "../common/mod.rs"]
mod common;

mod layout;

use chromium::{CHROMIUM, render};
use common::tmp::{TempDir, tempdir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh, empty scratch directory for this test, removed when the value is dropped.
fn scratch(name: &str) -> TempDir {
    tempdir(&format!("browser-{name}"))
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name)
}

/// `mnsim run SCENARIO --out DIR`.
fn run_scenario(scenario: &Path, out: &Path) {
    let res = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        res.status.success(),
        "mnsim run failed:\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
}

/// `mnsim run --out` writes every file: per plan the JSON, Markdown, HTML and trace, and the
/// comparison as JSON and HTML.
#[test]
fn run_out_writes_pages_and_traces() {
    let out_dir = scratch("files");
    let out = out_dir.path();
    run_scenario(&scenario("transfer_blog_1024x512.ron"), out);
    for plan in ["blog", "cols", "bcast"] {
        for file in ["report.json", "report.md", "report.html", "trace.json"] {
            let p = out.join(plan).join(file);
            assert!(p.is_file(), "{} missing", p.display());
        }
        let page = std::fs::read_to_string(out.join(plan).join("report.html")).unwrap();
        assert!(page.contains("<svg id=\"timeline-chart\""));
        let trace: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(plan).join("trace.json")).unwrap(),
        )
        .unwrap();
        assert!(
            trace["traceEvents"]
                .as_array()
                .is_some_and(|e| !e.is_empty())
        );
    }
    for file in ["compare.json", "compare.html"] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    let page = std::fs::read_to_string(out.join("compare.html")).unwrap();
    assert!(page.contains("href=\"blog/report.html\""));

    // One plan: everything in the folder itself, no comparison.
    let one_dir = scratch("one");
    let one = one_dir.path();
    run_scenario(&scenario("rates_mncore2.ron"), one);
    for file in ["report.json", "report.md", "report.html", "trace.json"] {
        assert!(one.join(file).is_file(), "{file} missing");
    }
    assert!(!one.join("compare.html").exists());
}

/// Whether Chromium is here to run the browser tests; without it they say so and pass,
/// except under CI, which installs it.
fn have_chromium() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{CHROMIUM} is missing: CI must install Chromium (see .ci/run)");
    }
    eprintln!("note: {CHROMIUM} not found, skipping the browser test");
    false
}

#[test]
fn pages_render_in_headless_chromium() {
    if !have_chromium() {
        return;
    }
    let work_dir = scratch("pages");
    let work = work_dir.path();
    let out = work.join("out");
    run_scenario(&scenario("transfer_blog_1024x512.ron"), &out);

    let dom = render(&out.join("blog/report.html"), work, "report");
    for id in ["level-chart", "resources-chart", "timeline-chart"] {
        assert!(
            dom.contains(&format!("<svg id=\"{id}\" role=\"img\"")),
            "{id} not in the rendered DOM"
        );
    }
    assert_eq!(dom.matches("class=\"op-bar\"").count(), 2, "a bar per op");
    assert!(dom.contains("transfer 1024x512"));
    // Every PE of this plan has its data at the same cycle: the page has no ready chart.
    assert!(
        !dom.contains("id=\"ready-chart\""),
        "a ready chart with nothing to show"
    );

    // The same report where the PEs' ready cycles spread: the range plot appears.
    let json = std::fs::read_to_string(out.join("blog/report.json")).unwrap();
    let mut report: mnsim_reports::Report = serde_json::from_str(&json).unwrap();
    let ready = report
        .ops
        .iter_mut()
        .find_map(|op| op.ready_cycles.as_mut())
        .expect("the load readies data on PEs");
    ready.min = ready.max / 2;
    let spread = work.join("spread.html");
    std::fs::write(&spread, mnsim_reports::html(&report)).unwrap();
    let dom = render(&spread, work, "spread");
    assert!(
        dom.contains("<svg id=\"ready-chart\" role=\"img\""),
        "ready-chart not in the rendered DOM"
    );

    let dom = render(&out.join("compare.html"), work, "compare");
    for id in ["totals-chart", "plan-level-chart"] {
        assert!(
            dom.contains(&format!("<svg id=\"{id}\" role=\"img\"")),
            "{id} not in the rendered DOM"
        );
    }
    assert_eq!(
        dom.matches("class=\"plan-bar\"").count(),
        3,
        "a bar per plan"
    );
}
