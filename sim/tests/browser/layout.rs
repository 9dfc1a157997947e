//! The pages as the browser lays them out, and what they answer first: `report.html`'s
//! critical path and sortable ops table, the op count `mnsim check` gives, op names on
//! the lanes, why an op outlasts its bottleneck stage; `compare.html`'s log scale and its
//! op-by-op diff by size; `sweep.html`'s whole legends, formatted numbers and fitting
//! table. Every chart's text stays inside its chart, no bar's label is wider than its bar
//! or covered by the next, and no page is wider than a 1280 px window.

use super::chromium::{dump_dom, measure};
use super::common::study::{mnsim, root};
use super::{have_chromium, scratch};
use mnsim_reports::Report;
use serde_json::Value;

/// `mnsim ARGS` from the repository's root, which must succeed; its stdout.
fn mnsim_ok(args: &[&str]) -> String {
    let out = std::process::Command::new(mnsim())
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mnsim {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The measurement of a page says nothing is cut, covered or too wide.
fn laid_out_whole(m: &Value, page: &str) {
    for key in ["outside", "unfit", "overlaps"] {
        let found = m[key].as_array().unwrap();
        assert!(found.is_empty(), "{page}: {key}: {found:#?}");
    }
    assert!(
        m["page_overflow"].as_f64().unwrap() <= 0.0,
        "{page} is {} px wider than the window",
        m["page_overflow"]
    );
    for t in m["tables"].as_array().unwrap() {
        assert!(
            t["width"].as_f64().unwrap() <= t["room"].as_f64().unwrap() + 1.0,
            "{page}: a table wider than its box: {t}"
        );
    }
}

/// The rows of the first `<table class="CLASS">` of a DOM, each as its cells' texts and
/// their `data-v` (None where a cell has none).
fn table_rows(dom: &str, class: &str) -> Vec<Vec<(String, Option<f64>)>> {
    let start = dom
        .find(&format!("<table class=\"{class}\">"))
        .unwrap_or_else(|| panic!("no table {class}"));
    let body = &dom[start..];
    let body = &body[body.find("<tbody>").unwrap()..body.find("</tbody>").unwrap()];
    body.split("<tr")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let (attrs, rest) = cell.split_once('>').unwrap();
                    let text = rest.split("</td>").next().unwrap().to_string();
                    let v = attrs
                        .split("data-v=\"")
                        .nth(1)
                        .and_then(|v| v.split('"').next())
                        .and_then(|v| v.parse().ok());
                    (text, v)
                })
                .collect()
        })
        .collect()
}

/// The column of header `data-sort="KEY"` in the ops table.
fn sort_column(dom: &str, key: &str) -> usize {
    let table = &dom[dom.find("<table class=\"ops\">").unwrap()..];
    let head = &table[..table.find("</thead>").unwrap()];
    let at = head
        .find(&format!("data-sort=\"{key}\""))
        .unwrap_or_else(|| panic!("no sortable header {key}"));
    // The headers closed before it.
    head[..at].matches("</th>").count()
}

fn non_increasing(v: &[f64]) -> bool {
    v.windows(2).all(|w| w[0] >= w[1])
}

#[test]
fn report_html_answers_on_its_first_screen() {
    if !have_chromium() {
        return;
    }
    let work_dir = scratch("answers");
    let work = work_dir.path();
    let out = work.join("out");
    let graph = "scenarios/workloads/graphs/MHA-GPT-inf-fp32-bs1.json";
    let out_s = out.display().to_string();
    let terminal = mnsim_ok(&["run", graph, "--mode", "timing", "--out", &out_s]);
    let page = out.join("auto/report.html");
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(out.join("auto/report.json")).unwrap())
            .unwrap();
    let dom = dump_dom(&page, "", work, "report");

    // The ops on the critical path, most exposed first, at most ten.
    let mut want: Vec<&mnsim_reports::OpReport> =
        report.ops.iter().filter(|o| o.exposed_cycles > 0).collect();
    want.sort_by_key(|o| std::cmp::Reverse(o.exposed_cycles));
    want.truncate(10);
    assert!(
        want.len() >= 5,
        "a graph with a critical path of several ops"
    );
    let rows = table_rows(&dom, "exposed");
    let listed: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r[0].0.clone(), r[3].0.replace(',', "")))
        .collect();
    let expect: Vec<(String, String)> = want
        .iter()
        .map(|o| (o.index.to_string(), o.exposed_cycles.to_string()))
        .collect();
    assert_eq!(
        listed, expect,
        "the critical path's ops, most exposed first"
    );
    // What each waited on: the op it names is the one report.json names.
    for (row, op) in rows.iter().zip(&want) {
        let text = &row[5].0;
        match op.waited_on.as_ref().and_then(|w| w.op) {
            Some(k) => assert!(
                text.contains(&format!("#{} {}", report.ops[k].index, report.ops[k].op)),
                "#{} waited on op {k}: {text}",
                op.index
            ),
            None if op.waited_on.is_none() => assert_eq!(text, "–"),
            None => {}
        }
    }
    // The critical path comes before the charts: on the first screen.
    assert!(dom.find("id=\"critical\"").unwrap() < dom.find("id=\"levels\"").unwrap());

    // The op count is `mnsim check`'s, on the page and on the terminal.
    let check = mnsim_ok(&["check", graph]);
    let line = check.lines().find(|l| l.contains("plan auto:")).unwrap();
    let count = line.split_once(": ").unwrap().1.split(", ").next().unwrap();
    assert!(count.contains("Free"), "{line}");
    assert!(dom.contains(count), "the page's op count is not `{count}`");
    assert!(
        terminal.contains(count),
        "the terminal's op count is not `{count}`"
    );

    // The lanes of what ran together name the ops.
    let holds: Vec<&str> = dom
        .split("<g class=\"hold\">")
        .skip(1)
        .filter_map(|g| g.split("<text").nth(1))
        .filter_map(|t| {
            t.split_once('>')
                .map(|x| x.1.split("</text>").next().unwrap())
        })
        .collect();
    assert!(
        holds.iter().any(|l| report
            .ops
            .iter()
            .any(|o| *l == format!("#{} {} {}", o.index, o.op, o.tensor))),
        "no lane label names its op: {holds:?}"
    );

    // An op much longer than its bottleneck stage says why: the streamed matmul that
    // waits for its operand's slices.
    let stretched = (report.ops.iter().enumerate())
        .find(|(_, o)| {
            o.waited_on.as_ref().is_some_and(|w| w.reason == "stream") && o.flops.is_some()
        })
        .map(|(i, _)| i)
        .expect("a kernel that waited for a stream's slices");
    let op = &report.ops[stretched];
    let from = &report.ops[op.waited_on.as_ref().unwrap().op.unwrap()];
    let note = dom
        .split("class=\"outlasts\"")
        .skip(1)
        .find(|n| n.contains(&format!("{} cycles, ", thousands(op.cycles))))
        .unwrap_or_else(|| panic!("no note on why #{} outlasts its bottleneck stage", op.index));
    assert!(
        note.contains(&format!(
            "for the slices of #{} {} {}",
            from.index, from.op, from.tensor
        )),
        "{note}"
    );

    // The ops table sorts by exposed cycles: a click, a second click, and the page opened
    // at #sort=exposed.
    let exposed = sort_column(&dom, "exposed");
    let clicks = format!(
        "var h=document.querySelector('th[data-sort=\"exposed\"]');\
         var col=function(){{var b=document.querySelector('table.ops').tBodies[0];\
         return Array.prototype.map.call(b.rows,function(r){{\
         return parseFloat(r.cells[{exposed}].getAttribute('data-v'));}});}};\
         h.click();var first=col();h.click();\
         window.mnsimExtra={{first:first,second:col()}};"
    );
    let m = measure(&page, work, "report", &clicks);
    laid_out_whole(&m, "report.html");
    let f64s = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let first = f64s(&m["extra"]["first"]);
    let second = f64s(&m["extra"]["second"]);
    assert_eq!(first.len(), report.ops.len());
    assert!(non_increasing(&first), "after a click: {first:?}");
    let mut rev = second.clone();
    rev.reverse();
    assert!(non_increasing(&rev), "after a second click: {second:?}");
    assert!(first.first() > first.last(), "nothing to sort: {first:?}");

    let sorted = dump_dom(&page, "#sort=exposed", work, "sorted");
    let col: Vec<f64> = table_rows(&sorted, "ops")
        .iter()
        .map(|r| r[exposed].1.unwrap())
        .collect();
    assert!(non_increasing(&col), "report.html#sort=exposed: {col:?}");
    let unsorted: Vec<f64> = table_rows(&dom, "ops")
        .iter()
        .map(|r| r[exposed].1.unwrap())
        .collect();
    assert_ne!(col, unsorted, "program order is not already sorted");
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn compare_html_scales_and_sorts_where_plans_differ_by_orders() {
    if !have_chromium() {
        return;
    }
    let work_dir = scratch("compare");
    let work = work_dir.path();
    let out = work.join("out");
    let out_s = out.display().to_string();
    // The gated MLP imported: its `default` plan broadcasts two of its three weights to
    // every PE and takes 27× its `default_split` plan. (Its planned plan needs a Relayout
    // the program does not have, so `run` of the graph itself runs that plan alone;
    // the imported scenario's `auto` plan is left to `mnsim plan`.)
    let ron = work.join("gated-mlp-f32.ron");
    mnsim_ok(&[
        "import",
        "scenarios/workloads/graphs/gated-mlp-f32.json",
        "-o",
        ron.to_str().unwrap(),
    ]);
    mnsim_ok(&[
        "run",
        ron.to_str().unwrap(),
        "--mode",
        "timing",
        "--out",
        &out_s,
    ]);
    let page = out.join("compare.html");
    let dom = dump_dom(&page, "", work, "compare");
    assert!(
        dom.contains("log scale"),
        "no log scale for plans 20× apart"
    );
    // Each op-by-op table: the largest difference first.
    let mut tables = 0;
    for part in dom.split("<table class=\"op-diff\">").skip(1) {
        tables += 1;
        let rows = table_rows(&format!("<table class=\"op-diff\">{part}"), "op-diff");
        // Δ: B's cycles less A's (an op only one plan has: its cycles, signed).
        let sizes: Vec<f64> = rows
            .iter()
            .map(|r| r[3].0.replace([',', '+', '−'], "").parse::<f64>().unwrap())
            .collect();
        assert!(non_increasing(&sizes), "op by op not by size: {sizes:?}");
    }
    assert_eq!(tables, 1, "one plan against the fastest");
    laid_out_whole(&measure(&page, work, "compare", ""), "compare.html");
}

#[test]
fn sweep_html_is_whole_and_readable() {
    if !have_chromium() {
        return;
    }
    let work_dir = scratch("sweep");
    let work = work_dir.path();
    // The README's sweep: three plans over two knobs, long legend labels.
    let out = work.join("sweep");
    let out_s = out.display().to_string();
    mnsim_ok(&[
        "sweep",
        "scenarios/transfer_blog_1024x512.ron",
        "--mode",
        "timing",
        "--set",
        "links.Board.distribute.parent=64,128,256,512,1024",
        "--set",
        "links.L1B.distribute.parent=32,128",
        "--out",
        &out_s,
    ]);
    let page = out.join("sweep.html");
    laid_out_whole(&measure(&page, work, "sweep", ""), "sweep.html");
    let dom = dump_dom(&page, "", work, "sweep");
    let table = &dom[dom.find("<tbody>").unwrap()..dom.find("</tbody>").unwrap()];
    // Every figure formatted: no long run of decimals, counts grouped.
    assert!(
        !table
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .any(|n| n.split_once('.').is_some_and(|(_, f)| f.len() > 2)),
        "an unformatted number in the points table"
    );
    assert!(table.contains("81,976"), "cycles without separators");

    // GFLOPS/W that differ by 7%: a linear axis around them, not from 0.
    let out = work.join("energy");
    let out_s = out.display().to_string();
    mnsim_ok(&[
        "sweep",
        "scenarios/peak_matmul_fp16.ron",
        "--mode",
        "timing",
        "--set",
        "energy.dram.read_pj_per_byte=80,160",
        "--metric",
        "gflops_per_w",
        "--out",
        &out_s,
    ]);
    let svg = std::fs::read_to_string(out.join("sweep.svg")).unwrap();
    assert!(svg.contains("GFLOPS/W, axis from"), "{svg}");
    assert!(!svg.contains("log scale</text>"));
    laid_out_whole(
        &measure(&out.join("sweep.html"), work, "energy", ""),
        "sweep.html (energy)",
    );
}
