//! Headless Chromium for the browser tests: a page rendered to a screenshot and its DOM,
//! and a page's layout measured in the browser.

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// How long one Chromium run may take.
const TIMEOUT: Duration = Duration::from_secs(180);

/// What a Chromium run left.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs headless Chromium on `page` (and `fragment`, `#...` or empty) with `extra`
/// arguments and a fresh profile in `profile`, killing it after [`TIMEOUT`].
fn chromium(page: &Path, fragment: &str, profile: &Path, extra: &[String]) -> Run {
    let url = format!("file://{}{fragment}", page.display());
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
pub fn render(page: &Path, work: &Path, name: &str) -> String {
    let shot = work.join(format!("{name}.png"));
    let run = chromium(
        page,
        "",
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

    dump_dom(page, "", work, name)
}

/// The DOM of `page` (opened at `fragment`, `#...` or empty) after it loaded, in a window of
/// 1280 × 2000 px; fails on a page error.
pub fn dump_dom(page: &Path, fragment: &str, work: &Path, name: &str) -> String {
    let run = chromium(
        page,
        fragment,
        &profile(work, &format!("dom-{name}")),
        &[
            "--dump-dom".to_string(),
            "--window-size=1280,2000".to_string(),
        ],
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

/// The script that measures a page's layout (`measure.js`).
const MEASURE: &str = include_str!("measure.js");

/// The layout of `page` as Chromium lays it out in a 1280 px window: a copy of the page
/// whose Content-Security-Policy is dropped, so that `measure.js` may run after the page's
/// own script and after `actions` (JavaScript run first, which may leave what it found in
/// `window.mnsimExtra`); the findings `measure.js` leaves in the DOM, parsed.
pub fn measure(page: &Path, work: &Path, name: &str, actions: &str) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let csp = "<meta http-equiv=\"Content-Security-Policy\"";
    let html = match html.find(csp) {
        Some(at) => {
            let end = at + html[at..].find('>').unwrap() + 1;
            format!("{}{}", &html[..at], &html[end..])
        }
        None => html,
    };
    let html = html.replace(
        "</body>",
        &format!("<script>{actions}\n{MEASURE}</script>\n</body>"),
    );
    let copy = page.with_file_name(format!("measured-{name}.html"));
    std::fs::write(&copy, html).unwrap();
    let dom = dump_dom(&copy, "", work, &format!("measure-{name}"));
    // The last: the script's own text mentions the element.
    let json = dom
        .rsplit("<pre id=\"mnsim-measure\">")
        .next()
        .filter(|t| t.len() < dom.len())
        .and_then(|t| t.split("</pre>").next())
        .unwrap_or_else(|| panic!("no measurement in the DOM of {}:\n{dom}", copy.display()));
    let json = json
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}
