//! The pages `mnsim run --out` writes, opened in a real browser: headless Chromium renders
//! `report.html` and `compare.html` without a page error, and the SVG charts are in the DOM.
//!
//! Without `/usr/bin/chromium` the browser test is skipped with a note, except when the `CI`
//! environment variable is set: there it fails, since CI installs Chromium (`.ci/run`).

mod common;

use common::tmp::{TempDir, tempdir};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

/// How long one Chromium run may take.
const TIMEOUT: Duration = Duration::from_secs(180);

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

/// What a Chromium run left.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs headless Chromium on `page` with `extra` arguments and a fresh profile in `profile`,
/// killing it after [`TIMEOUT`].
fn chromium(page: &Path, profile: &Path, extra: &[String]) -> Run {
    let url = format!("file://{}", page.display());
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0"])
        .args(extra)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = reader(Box::new(child.stdout.take().unwrap()));
    let err = reader(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {TIMEOUT:?} on {url}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Run {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Lines of Chromium's log that report an error of the page (a script error, a console error, a
/// blocked load); Chromium's own messages (D-Bus, GPU, ...) are not.
fn page_errors<'a>(stderr: &'a str, page: &Path) -> Vec<&'a str> {
    let url = format!("file://{}", page.display());
    stderr
        .lines()
        .filter(|l| {
            l.contains("Uncaught")
                || (l.contains("CONSOLE")
                    && (l.contains("ERROR")
                        || l.contains("rror")
                        || l.contains("violates")
                        || l.contains(&url)))
        })
        .collect()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(&png[12..16], b"IHDR");
    (be(&png[16..20]), be(&png[20..24]))
}

/// A fresh Chromium profile directory under `work`.
fn profile(work: &Path, name: &str) -> PathBuf {
    let d = work.join(format!("profile-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Renders `page` to a screenshot and dumps its DOM; returns the DOM.
fn render(page: &Path, work: &Path, name: &str) -> String {
    let shot = work.join(format!("{name}.png"));
    let run = chromium(
        page,
        &profile(work, &format!("shot-{name}")),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".to_string(),
        ],
    );
    assert!(
        run.status.success(),
        "chromium failed on {}: {:?}\n{}",
        page.display(),
        run.status,
        run.stderr
    );
    let errors = page_errors(&run.stderr, page);
    assert!(errors.is_empty(), "page errors:\n{}", errors.join("\n"));
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(
        png.len() > 10 * 1024,
        "screenshot of {} is only {} bytes",
        page.display(),
        png.len()
    );
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert_eq!(png_size(&png), (1280, 2000));

    let run = chromium(
        page,
        &profile(work, &format!("dom-{name}")),
        &["--dump-dom".to_string()],
    );
    assert!(
        run.status.success(),
        "chromium --dump-dom failed: {}",
        run.stderr
    );
    let errors = page_errors(&run.stderr, page);
    assert!(errors.is_empty(), "page errors:\n{}", errors.join("\n"));
    run.stdout
}

#[test]
fn pages_render_in_headless_chromium() {
    if !Path::new(CHROMIUM).exists() {
        if std::env::var_os("CI").is_some() {
            panic!("{CHROMIUM} is missing: CI must install Chromium (see .ci/run)");
        }
        eprintln!("note: {CHROMIUM} not found, skipping the browser test");
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
