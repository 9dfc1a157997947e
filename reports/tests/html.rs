//! `report.html`, `compare.html` and `trace.json` of real reports (written by `mnsim run` on the
//! scenarios in `scenarios/`, kept in `tests/data/`) and of the hand-built sample.

mod common;

use mnsim_reports::{Report, compare_html, html, trace};
use serde_json::Value;
use std::collections::BTreeMap;

/// `scenarios/rates_mncore2.ron`: 8 ops, some with two stages of one level.
fn rates() -> Report {
    serde_json::from_str(include_str!("data/rates_mncore2.json")).unwrap()
}

/// `scenarios/transfer_blog_1024x512.ron`, its three plans.
fn transfer() -> Vec<Report> {
    [
        include_str!("data/transfer_blog.json"),
        include_str!("data/transfer_cols.json"),
        include_str!("data/transfer_bcast.json"),
    ]
    .iter()
    .map(|s| serde_json::from_str(s).unwrap())
    .collect()
}

fn reports() -> Vec<Report> {
    let mut v = vec![rates(), common::sample()];
    v.extend(transfer());
    v
}

/// Every `<svg ...>` opening tag of `page`, up to its `>`.
fn svg_tags(page: &str) -> Vec<&str> {
    page.match_indices("<svg")
        .map(|(i, _)| &page[i..i + page[i..].find('>').unwrap()])
        .collect()
}

/// The `id` of an opening tag.
fn id(tag: &str) -> &str {
    let start = tag.find("id=\"").expect("svg has an id") + 4;
    &tag[start..start + tag[start..].find('"').unwrap()]
}

fn count(page: &str, needle: &str) -> usize {
    page.matches(needle).count()
}

/// No reference to anything outside the page; its one script (report.html's sort) is
/// inline, and the Content-Security-Policy allows it by its hash and nothing else.
fn assert_self_contained(page: &str) {
    for bad in [
        "http://",
        "https://",
        "<link",
        "<img",
        "@import",
        "url(",
        "//fonts",
        "<script src",
        "'unsafe-inline' 'sha",
        "script-src 'unsafe",
    ] {
        assert!(!page.contains(bad), "page holds {bad:?}");
    }
    let scripts = count(page, "<script");
    assert!(scripts <= 1, "{scripts} scripts");
    if scripts == 1 {
        assert!(
            page.contains("script-src 'sha256-"),
            "a script the policy does not name"
        );
    } else {
        assert!(!page.contains("script-src"));
    }
}

/// Opening and closing tags of the main elements balance.
fn assert_balanced(page: &str) {
    for tag in [
        "svg", "section", "table", "tr", "g", "a", "text", "title", "header", "main",
    ] {
        let open = count(page, &format!("<{tag}>")) + count(page, &format!("<{tag} "));
        let close = count(page, &format!("</{tag}>"));
        assert_eq!(open, close, "<{tag}> opened {open} times, closed {close}");
    }
}

#[test]
fn report_page_has_every_chart() {
    for r in reports() {
        let page = html(&r);
        assert!(page.starts_with("<!DOCTYPE html>"));
        let ids: Vec<&str> = svg_tags(&page).into_iter().map(id).collect();
        // The ready chart only when some op's PEs were ready at different cycles.
        let differ = r
            .ops
            .iter()
            .filter_map(|op| op.ready_cycles.as_ref())
            .any(|p| p.min != p.max);
        let want: &[&str] = if differ {
            &[
                "level-chart",
                "resources-chart",
                "timeline-chart",
                "ready-chart",
            ]
        } else {
            &["level-chart", "resources-chart", "timeline-chart"]
        };
        assert_eq!(ids, want, "{}", r.scenario);
        for tag in svg_tags(&page) {
            assert!(tag.contains("role=\"img\""), "{tag}");
            let title = format!("<title id=\"{}-title\">", id(tag));
            assert!(page.contains(&title), "{title}");
        }
        for section in ["levels", "resources", "timeline", "ready", "ops"] {
            assert_eq!(
                page.contains(&format!("<section id=\"{section}\">")),
                section != "ready" || differ,
                "{section}"
            );
        }
        assert_self_contained(&page);
        assert_balanced(&page);
    }
}

#[test]
fn resource_lanes_hold_every_stage_and_the_critical_path_its_exposed_ops() {
    for r in reports() {
        let page = html(&r);
        let stages: usize = r.ops.iter().map(|op| op.stages.len()).sum();
        assert_eq!(count(&page, "<g class=\"hold\">"), stages);
        let exposed = r.ops.iter().filter(|o| o.exposed_cycles > 0).count();
        assert_eq!(count(&page, "<rect class=\"critical\""), exposed);
    }
    // Overlapped: the op hidden behind another is not on the critical path, and says so.
    let mut r = rates();
    r.schedule = "overlapped".into();
    for (i, o) in r.ops.iter_mut().enumerate() {
        o.exposed_cycles = if i == 1 { 0 } else { o.cycles };
    }
    let page = html(&r);
    assert_eq!(count(&page, "<rect class=\"critical\""), r.ops.len() - 1);
    assert_eq!(count(&page, "class=\"op-bar\" x="), r.ops.len());
    assert_eq!(count(&page, "hidden behind other ops"), 1);
    assert_eq!(count(&page, " critical\">"), r.ops.len() - 1);
}

#[test]
fn timeline_has_a_bar_per_op_and_per_stage() {
    for r in reports() {
        let page = html(&r);
        assert_eq!(count(&page, "class=\"op-bar\""), r.ops.len());
        let stages: usize = r.ops.iter().map(|op| op.stages.len()).sum();
        assert_eq!(count(&page, "class=\"stage-bar\""), stages);
        let marked = r
            .ops
            .iter()
            .filter(|op| op.bottleneck_stage().is_some())
            .count();
        assert_eq!(count(&page, "<g class=\"stage bottleneck\">"), marked);
        assert_eq!(count(&page, "<g class=\"level-bar\">"), r.levels.len());
        let ready = r.ops.iter().filter(|op| op.ready_cycles.is_some()).count();
        let differ = r
            .ops
            .iter()
            .filter_map(|op| op.ready_cycles.as_ref())
            .any(|p| p.min != p.max);
        assert_eq!(
            count(&page, "<g class=\"ready-row\">"),
            if differ { ready } else { 0 }
        );
    }
}

#[test]
fn report_page_shows_the_header_facts() {
    let r = rates();
    let page = html(&r);
    for fact in [
        "mncore2 rate table",
        "23,560 cycles",
        "31.41 µs at 0.75 GHz",
        "timing mode",
        "– not run",
        "32.0 KiB",
        "<span class=\"hot\">Group</span>",
    ] {
        assert!(page.contains(fact), "{fact}");
    }
    // The bottleneck level's row says so.
    assert!(
        page.contains("bounded 5 ops <tspan fill=\"#b91c1c\" font-weight=\"700\">◀ bottleneck")
    );
    let sample = html(&common::sample());
    for fact in [
        "✓ verified",
        "links.L1B.distribute.parent=1024",
        "batch=64",
        "2 warnings",
        "binding `seq` is not used by any tensor",
        "FLOP/cycle",
        "536.9 MFLOP",
    ] {
        assert!(sample.contains(fact), "{fact}");
    }
}

#[test]
fn report_page_escapes_names() {
    let nasty = r#"a<b & "c""#;
    let mut r = rates();
    r.scenario = nasty.into();
    r.plan = Some(nasty.into());
    r.machine = nasty.into();
    r.ops[0].tensor = nasty.into();
    r.ops[0].stages[0].level = "<L>".into();
    r.levels[0].level = "<L>".into();
    r.warnings = vec![format!("{nasty} <script>alert(1)</script>")];
    for page in [html(&r), compare_html(std::slice::from_ref(&r))] {
        assert!(page.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(!page.contains("a<b"));
        assert!(!page.contains("\"c\""));
        assert!(!page.contains("<L>"));
        assert_self_contained(&page);
        assert_balanced(&page);
    }
}

#[test]
fn compare_page_ranks_plans_and_links_their_reports() {
    let plans = transfer();
    let page = compare_html(&plans);
    let ids: Vec<&str> = svg_tags(&page).into_iter().map(id).collect();
    assert_eq!(ids, ["totals-chart", "plan-level-chart"]);
    for tag in svg_tags(&page) {
        assert!(tag.contains("role=\"img\""), "{tag}");
    }
    // A bar per plan, fastest first (blog and cols tie at 32,824: by name).
    let bars: Vec<usize> = ["blog", "cols", "bcast"]
        .iter()
        .map(|p| {
            page.find(&format!("<a class=\"plan-bar\" href=\"{p}/report.html\">"))
                .unwrap_or_else(|| panic!("no bar for {p}"))
        })
        .collect();
    assert!(bars.windows(2).all(|w| w[0] < w[1]), "{bars:?}");
    assert_eq!(count(&page, "<g class=\"plan-group\">"), 3);
    for p in ["blog", "cols", "bcast"] {
        assert!(page.contains(&format!("<a href=\"{p}/report.html\">{p}</a>")));
    }
    assert_self_contained(&page);
    assert_balanced(&page);

    assert!(compare_html(&[]).contains("No plans to compare"));
}

// --- trace.json ---------------------------------------------------------------------------------

fn events(r: &Report) -> Vec<Value> {
    let doc: Value = serde_json::from_str(&trace(r)).expect("trace.json is JSON");
    assert_eq!(doc["displayTimeUnit"], "ns");
    doc["traceEvents"].as_array().expect("traceEvents").clone()
}

#[test]
fn trace_events_have_the_required_keys() {
    for r in reports() {
        let events = events(&r);
        assert!(!events.is_empty());
        for e in &events {
            for key in ["name", "ph", "ts", "pid", "tid"] {
                assert!(e.get(key).is_some(), "{key} missing in {e}");
            }
            assert!(e["name"].is_string() && e["ph"].is_string());
            assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
            assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
            match e["ph"].as_str().unwrap() {
                "X" => assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}"),
                "M" => assert!(e["args"].is_object(), "{e}"),
                other => panic!("unexpected phase {other}"),
            }
        }
        let ops = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == "op")
            .count();
        let stages = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == "stage")
            .count();
        assert_eq!(ops, r.ops.len());
        assert_eq!(
            stages,
            r.ops.iter().map(|op| op.stages.len()).sum::<usize>()
        );
    }
}

/// thread id → thread name.
fn thread_names(events: &[Value]) -> BTreeMap<u64, String> {
    events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn trace_names_the_process_and_a_track_per_resource() {
    for r in reports() {
        let events = events(&r);
        let process: Vec<&Value> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
            .collect();
        assert_eq!(process.len(), 1);
        assert_eq!(
            process[0]["args"]["name"],
            format!("mnsim {}", r.scenario).as_str()
        );
        let names = thread_names(&events);
        let name_list: Vec<&String> = names.values().collect();
        assert!(name_list.contains(&&"ops".to_string()));
        for u in &r.resources {
            assert!(name_list.contains(&&u.name), "no track for {}", u.name);
        }
        // Sort indices: ops first, then the report's resource order.
        let sort: BTreeMap<u64, u64> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "thread_sort_index")
            .map(|e| {
                (
                    e["tid"].as_u64().unwrap(),
                    e["args"]["sort_index"].as_u64().unwrap(),
                )
            })
            .collect();
        let by_name = |n: &str| {
            let tid = names.iter().find(|(_, v)| *v == n).unwrap().0;
            sort[tid]
        };
        assert_eq!(by_name("ops"), 0);
        let order: Vec<u64> = r.resources.iter().map(|u| by_name(&u.name)).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        // Every stage sits on the track of the resource it holds.
        for e in events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == "stage")
        {
            let thread = &names[&e["tid"].as_u64().unwrap()];
            assert_eq!(thread, e["args"]["resource"].as_str().unwrap());
            let level = e["args"]["level"].as_str().unwrap();
            assert!(
                thread == "DRAM" || thread.starts_with(level),
                "{thread} for {level}"
            );
        }
    }
}

#[test]
fn trace_puts_ops_that_run_together_on_tracks_side_by_side() {
    // Two ops overlap under the overlapped schedule: the second gets a second op track.
    let mut r = rates();
    r.schedule = "overlapped".into();
    let (s0, e0) = (r.ops[0].start, r.ops[0].end);
    r.ops[1].start = s0 + (e0 - s0) / 2;
    let events = events(&r);
    let names = thread_names(&events);
    let op_track = |i: u64| -> String {
        let e = events
            .iter()
            .find(|e| e["cat"] == "op" && e["args"]["index"] == i)
            .unwrap();
        names[&e["tid"].as_u64().unwrap()].clone()
    };
    assert_eq!(op_track(0), "ops");
    assert_eq!(op_track(1), "ops #2");
}

#[test]
fn trace_times_are_cycles_at_the_clock() {
    let r = rates();
    let events = events(&r);
    let ops: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "op")
        .collect();
    for (e, op) in ops.iter().zip(&r.ops) {
        let ns = |us: &Value| us.as_f64().unwrap() * 1000.0;
        assert!((ns(&e["ts"]) - op.start as f64 / r.clock_ghz).abs() <= 0.5 + 1e-6);
        assert!((ns(&e["dur"]) - op.cycles as f64 / r.clock_ghz).abs() <= 1.0 + 1e-6);
        assert_eq!(e["args"]["cycles"], op.cycles);
        assert_eq!(e["args"]["clock_ghz"], r.clock_ghz);
    }
    for e in events.iter().filter(|e| e["cat"] == "stage") {
        for key in [
            "cycles",
            "bytes",
            "kind",
            "direction",
            "chunks",
            "clock_ghz",
        ] {
            assert!(e["args"].get(key).is_some(), "{key} missing in {e}");
        }
    }
}

/// Stage events of one thread never overlap within an op (they may across threads); with these
/// reports, where no stage outlasts its op, a thread's events never overlap at all.
#[test]
fn trace_events_of_a_thread_do_not_overlap() {
    for r in reports() {
        let events = events(&r);
        let mut by_tid: BTreeMap<u64, Vec<(f64, f64, u64)>> = BTreeMap::new();
        for e in events.iter().filter(|e| e["ph"] == "X") {
            let ts = e["ts"].as_f64().unwrap();
            let end = ts + e["dur"].as_f64().unwrap();
            let op = e["args"]["op_index"]
                .as_u64()
                .or(e["args"]["index"].as_u64())
                .unwrap();
            by_tid
                .entry(e["tid"].as_u64().unwrap())
                .or_default()
                .push((ts, end, op));
        }
        for (tid, mut spans) in by_tid {
            spans.sort_by(|a, b| a.partial_cmp(b).unwrap());
            for w in spans.windows(2) {
                let ((_, end, op_a), (start, _, op_b)) = (w[0], w[1]);
                assert!(
                    start >= end - 1e-9,
                    "{}: thread {tid} overlaps: op {op_a} until {end}, op {op_b} from {start}",
                    r.scenario
                );
            }
        }
    }
}

#[test]
fn trace_of_a_report_without_clock_counts_nanoseconds_as_cycles() {
    let mut r = rates();
    r.clock_ghz = 0.0;
    r.scenario = r#"a<b & "c""#.into();
    let doc: Value = serde_json::from_str(&trace(&r)).unwrap();
    assert_eq!(doc["otherData"]["clock_ghz"], 1.0);
    let last = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|e| e["cat"] == "op")
        .unwrap()
        .clone();
    assert_eq!(last["ts"].as_f64().unwrap(), 23.28);
    assert!(
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["args"]["name"] == r#"mnsim a<b & "c""#)
    );
}
