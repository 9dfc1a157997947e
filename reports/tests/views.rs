//! The views of a hand-built report: terminal summary, plan comparison, JSON and Markdown.

mod common;

use common::{plan, sample};
use mnsim_reports::{Report, compare_json, compare_table, markdown, terminal, to_json};

fn columns(line: &str) -> usize {
    line.chars().count()
}

/// `s` without ANSI escape sequences (`ESC [ ... m`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `n` with `,` every three digits, written independently of the crate's helper.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut parts = Vec::new();
    let mut end = s.len();
    while end > 3 {
        parts.push(&s[end - 3..end]);
        end -= 3;
    }
    parts.push(&s[..end]);
    parts.reverse();
    parts.join(",")
}

/// The line of `text` whose first word (after indentation and tree glyphs) is `first`, with
/// every one of `also` in it.
fn line_with<'a>(text: &'a str, first: &str, also: &[&str]) -> &'a str {
    text.lines()
        .find(|l| {
            l.trim_start_matches([' ', '├', '└'])
                .split_whitespace()
                .next()
                == Some(first)
                && also.iter().all(|a| l.contains(a))
        })
        .unwrap_or_else(|| panic!("no line starting with {first} containing {also:?} in\n{text}"))
}

#[test]
fn terminal_header_says_what_ran() {
    let r = sample();
    let t = terminal(&r, false);
    assert!(t.contains("mlp block"));
    assert!(t.contains("plan rows"));
    assert!(t.contains("machine mncore2"));
    assert!(t.contains("functional"));
    // 69,828 cycles at 0.75 GHz are 93.104 µs.
    assert!(t.contains("69,828 cycles = 93.10 µs at 0.75 GHz"), "{t}");
    assert!(t.contains("verified ✓"));
    assert!(t.contains("LM peak 12.0 KiB of 32.0 KiB (37.5%)"), "{t}");
    assert!(t.contains("links.L1B.distribute.parent=1024"));
    assert!(t.contains("batch=64"));

    let mut failed = r.clone();
    failed.verified = Some(false);
    assert!(terminal(&failed, false).contains("verified ✗"));
    failed.verified = None;
    assert!(terminal(&failed, false).contains("verified –"));
}

/// The part of a view from its ops table on (the critical path's list above it repeats
/// ops).
fn from_ops<'a>(text: &'a str, title: &str) -> &'a str {
    &text[text
        .find(title)
        .unwrap_or_else(|| panic!("no {title:?} in\n{text}"))..]
}

#[test]
fn terminal_lists_every_op_with_its_share_and_ready_cycles() {
    let r = sample();
    let full = terminal(&r, false);
    let t = from_ops(&full, "\nops\n");
    for op in &r.ops {
        let share = format!("{:.1}%", op.cycles as f64 * 100.0 / r.total_cycles as f64);
        let cycles = grouped(op.cycles);
        let line = line_with(
            t,
            &op.index.to_string(),
            &[&op.op, &op.tensor, &cycles, &share],
        );
        assert!(line.contains(&op.bottleneck), "{line}");
        match &op.ready_cycles {
            Some(p) => {
                for v in [p.p50, p.p90, p.p99, p.max] {
                    assert!(line.contains(&grouped(v)), "{line}");
                }
            }
            None => assert_eq!(line.matches('–').count(), 4, "{line}"),
        }
    }
    assert!(line_with(t, "2", &["MatMul"]).contains("87.5%"));
    // The matmul's rate: 536,870,912 FLOP in 1,088 cycles at 0.75 GHz.
    assert!(
        t.contains("536.9 MFLOP · 493,448 FLOP/cycle · 370.1 TFLOP/s"),
        "{t}"
    );
}

#[test]
fn terminal_shows_stages_in_human_units_and_marks_the_bottleneck() {
    let r = sample();
    let full = terminal(&r, false);
    let t = from_ops(&full, "\nops\n");
    // Three transfer ops, one bottleneck stage each; the matmul's lone compute stage is not listed.
    assert_eq!(t.matches("◀ bottleneck").count(), 3, "{t}");
    let x = line_with(
        t,
        "L1B",
        &["broadcast", "128.0 KiB", "16,384 cyc", "4 chunks"],
    );
    assert!(x.ends_with("◀ bottleneck"), "{x}");
    let w1 = line_with(t, "DRAM", &["down", "8.0 MiB", "49,152 cyc"]);
    assert!(w1.ends_with("◀ bottleneck"), "{w1}");
    let l2b = line_with(t, "L2B", &["distribute", "8.0 MiB", "16 chunks"]);
    assert!(!l2b.contains("bottleneck"), "{l2b}");
    let h = line_with(t, "DRAM", &["up", "512.0 KiB"]);
    assert!(h.ends_with("◀ bottleneck"), "{h}");
    assert!(
        !t.lines().any(|l| l.contains("MAB") && l.contains("local")),
        "{t}"
    );
    // Stages are listed under their op, in order.
    let lines: Vec<&str> = t.lines().collect();
    let load_x = lines
        .iter()
        .position(|l| l.starts_with("  0  Load"))
        .unwrap();
    assert!(lines[load_x + 1].trim_start().starts_with("├  DRAM"), "{t}");
    assert!(lines[load_x + 3].trim_start().starts_with("└  L1B"), "{t}");
}

#[test]
fn terminal_totals_per_level_with_shares_and_bars() {
    let r = sample();
    let t = terminal(&r, false);
    assert!(t.contains("where the cycles went"));
    // Busy cycles per level, summed here from the ops' stages.
    let mut expected: Vec<(&str, u64, u64)> = Vec::new();
    for op in &r.ops {
        for s in &op.stages {
            match expected.iter_mut().find(|(l, _, _)| *l == s.level) {
                Some(e) => {
                    e.1 += s.cycles;
                    e.2 += 1;
                }
                None => expected.push((&s.level, s.cycles, 1)),
            }
        }
    }
    assert_eq!(expected.len(), r.levels.len());
    let section = t.split("where the cycles went").nth(1).unwrap();
    for (level, busy, _) in &expected {
        let share = format!("{:.1}%", *busy as f64 * 100.0 / r.total_cycles as f64);
        let line = line_with(section, level, &[&grouped(*busy), &share]);
        let bar: String = line.chars().filter(|&c| "▏▎▍▌▋▊▉█".contains(c)).collect();
        assert!(!bar.is_empty(), "{line}");
        let total = r.levels.iter().find(|l| l.level == *level).unwrap();
        let ops = if total.bottleneck_ops == 1 {
            "1 op".to_string()
        } else {
            format!("{} ops", total.bottleneck_ops)
        };
        assert!(line.contains(&ops), "{line}");
    }
    // DRAM: 768 + 49,152 + 3,072 = 52,992 busy cycles of 69,828, 75.9%, and two bottlenecks.
    let dram = line_with(section, "DRAM", &[]);
    assert!(
        dram.contains("52,992") && dram.contains("75.9%") && dram.contains("2 ops"),
        "{dram}"
    );
    // Bars grow with the share: DRAM's is the longest.
    let bar_len = |level: &str| {
        line_with(section, level, &[])
            .chars()
            .filter(|&c| c == '█')
            .count()
    };
    assert!(bar_len("DRAM") > bar_len("L2B") && bar_len("L2B") >= bar_len("L1B"));
}

#[test]
fn terminal_ends_with_the_warnings() {
    let t = terminal(&sample(), false);
    let warnings = t.rfind("warnings").unwrap();
    assert!(warnings > t.find("where the cycles went").unwrap());
    assert!(t[warnings..].contains("! binding `seq` is not used by any tensor"));
    let mut quiet = sample();
    quiet.warnings.clear();
    assert!(!terminal(&quiet, false).contains("warnings"));
}

#[test]
fn plain_output_has_no_escapes_and_color_only_adds_them() {
    let r = sample();
    let plain = terminal(&r, false);
    let color = terminal(&r, true);
    assert!(!plain.contains('\x1b'));
    assert!(color.contains("\x1b[1m"), "bold headers");
    assert!(
        color.contains("\x1b[33mL1B down broadcast\x1b[0m"),
        "the bottleneck in yellow"
    );
    assert!(color.contains("\x1b[33m◀ bottleneck\x1b[0m"));
    assert_eq!(strip_ansi(&color), plain);
}

/// A report with names and numbers that do not fit the usual columns.
fn unwieldy() -> Report {
    let mut r = sample();
    r.scenario =
        "a scenario with a name long enough to run past the end of any reasonable line ".repeat(2);
    r.plan = Some("plan_".repeat(30));
    r.overrides = (0..12)
        .map(|i| (format!("links.L{i}B.distribute.parent"), 1024.0 * i as f64))
        .collect();
    r.warnings.push("x".repeat(250));
    r.total_cycles = u64::MAX / 2;
    for (i, op) in r.ops.iter_mut().enumerate() {
        op.index = 100_000 + i;
        op.tensor = format!("a_really_long_tensor_name_number_{i}_that_goes_on_and_on");
        op.op = "BatchedMatMulWithBias".into();
        op.cycles *= 1_000_000_000;
        op.bottleneck = format!("{} and then some more words about it", op.bottleneck);
        if let Some(p) = &mut op.ready_cycles {
            p.p50 *= 1_000_000_000_000;
            p.max *= 1_000_000_000_000;
        }
        for s in &mut op.stages {
            s.cycles *= 1_000_000_000_000;
            s.chunks *= 1_000_000_000;
            s.level = format!("{}-level-with-a-long-name", s.level);
        }
    }
    r.levels[0].level = "a-level-with-a-very-long-name-indeed".into();
    r.levels[0].busy_cycles = u64::MAX;
    r
}

/// Names are never cut and counts keep their separators, however long: a wide table beats
/// a name or number that cannot be read back. Prose (warnings, overrides) still wraps at
/// 100 columns.
#[test]
fn names_are_never_cut_and_counts_keep_separators() {
    let r = unwieldy();
    for color in [false, true] {
        let t = strip_ansi(&terminal(&r, color));
        assert!(!t.contains('…'), "{t}");
        assert!(t.contains(&r.scenario), "{t}");
        for op in &r.ops {
            assert!(t.contains(&op.tensor), "{}", op.tensor);
            assert!(t.contains(&op.bottleneck), "{}", op.bottleneck);
            assert!(t.contains(&grouped(op.cycles)), "{}", op.cycles);
            // Stages are listed under ops that move data.
            if op.stages.iter().any(|s| s.kind != "compute") {
                for st in &op.stages {
                    assert!(t.contains(&st.level), "{}", st.level);
                }
            }
        }
        assert!(t.contains(&r.levels[0].level));
        let warnings: Vec<&str> = t.rsplit("warnings").next().unwrap().lines().collect();
        for line in warnings {
            assert!(columns(line) <= 100, "{line}");
        }
    }
    let t = terminal(&r, false);
    assert!(t.contains("100003"), "the op index");
    let warnings: String = t
        .rsplit("warnings")
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(warnings.contains(&"x".repeat(250)), "{t}");
    assert_eq!(
        t.matches("◀ bottleneck").count(),
        0,
        "the bottleneck names no stage any more"
    );
    let long = "another_plan_".repeat(10);
    let t = compare_table(&[r.clone(), plan(&long, 5)]);
    assert!(t.contains(&long) && !t.contains('…'), "{t}");
    // The sample fits 100 columns as it is.
    for line in terminal(&sample(), false).lines() {
        assert!(columns(line) <= 100, "{line}");
    }
}

#[test]
fn compare_ranks_by_cycles_with_ties_broken_by_name() {
    let reports = [
        plan("rows", 69_828),
        plan("cols", 52_000),
        plan("blocks", 69_828),
        plan("diag", 90_000),
    ];
    let t = compare_table(&reports);
    let order: Vec<&str> = t
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            w.next()
                .filter(|r| r.parse::<usize>().is_ok())
                .and(w.next())
        })
        .collect();
    assert_eq!(order, ["cols", "blocks", "rows", "diag"], "{t}");
    let cols = line_with(&t, "1", &["cols", "52,000"]);
    // 52,000 is the fastest (1.00×) and 90,000 / 52,000 = 1.73× faster than the slowest.
    assert!(cols.contains("1.00×") && cols.contains("1.73×"), "{cols}");
    let diag = line_with(&t, "4", &["diag", "90,000"]);
    assert!(diag.contains("1.73×") && diag.contains("1.00×"), "{diag}");
    // The bottleneck column names the run's bottleneck resource; × bound = 52,000 / 41,000.
    assert!(cols.contains("L1B down") && cols.contains('✓'), "{cols}");
    assert!(cols.contains("1.27×"), "{cols}");

    let j = compare_json(&reports);
    assert_eq!(j["schema"], "mnsim.compare/1");
    assert_eq!(j["scenario"], "mlp block");
    let plans = j["plans"].as_array().unwrap();
    let names: Vec<&str> = plans.iter().map(|p| p["plan"].as_str().unwrap()).collect();
    assert_eq!(names, ["cols", "blocks", "rows", "diag"]);
    let ranks: Vec<u64> = plans.iter().map(|p| p["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [1, 2, 3, 4]);
    assert_eq!(plans[1]["total_cycles"], 69_828);
    assert_eq!(plans[0]["bound_cycles"], 41_000);
    assert_eq!(plans[0]["bottleneck"], "L1B down");
    let x = plans[0]["times_bound"].as_f64().unwrap();
    assert!((x - 52_000.0 / 41_000.0).abs() < 1e-12);
    let speedup = plans[0]["speedup_vs_slowest"].as_f64().unwrap();
    assert!((speedup - 90_000.0 / 52_000.0).abs() < 1e-12);
    assert_eq!(plans[3]["speedup_vs_slowest"], 1.0);

    // The order of the input does not matter.
    let mut reversed = reports.to_vec();
    reversed.reverse();
    assert_eq!(compare_json(&reversed), j);
    assert_eq!(compare_table(&reversed), t);
}

#[test]
fn compare_handles_no_plans_and_zero_cycles() {
    assert!(compare_table(&[]).contains("no plans"));
    assert_eq!(compare_json(&[])["plans"].as_array().unwrap().len(), 0);
    let j = compare_json(&[plan("a", 0), plan("b", 10)]);
    assert_eq!(j["plans"][0]["speedup_vs_slowest"], serde_json::Value::Null);
    assert_eq!(j["plans"][1]["speedup_vs_slowest"], 1.0);
}

#[test]
fn a_version_1_report_still_reads() {
    // The keys version 2 added take their defaults.
    let mut v: serde_json::Value = serde_json::from_str(&to_json(&sample())).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["schedule", "resources", "peak_flops_per_cycle"] {
        o.remove(k);
    }
    o["schema"] = "mnsim.report/1".into();
    for op in o["ops"].as_array_mut().unwrap() {
        op.as_object_mut().unwrap().remove("exposed_cycles");
    }
    let r: Report = serde_json::from_value(v).unwrap();
    assert_eq!(r.schedule, "sequential");
    assert!(r.resources.is_empty());
    assert_eq!(r.ops[0].exposed_cycles, 0);
}

#[test]
fn json_round_trips_and_keeps_the_field_order() {
    let r = sample();
    let s = to_json(&r);
    let back: Report = serde_json::from_str(&s).unwrap();
    assert_eq!(back, r);
    assert!(
        s.starts_with("{\n  \"schema\": \"mnsim.report/2\",\n  \"scenario\": \"mlp block\","),
        "{s}"
    );
    let keys = [
        "\"schema\"",
        "\"scenario\"",
        "\"plan\"",
        "\"machine\"",
        "\"mode\"",
        "\"schedule\"",
        "\"total_cycles\"",
        "\"clock_ghz\"",
        "\"ops\"",
        "\"levels\"",
        "\"resources\"",
        "\"peak_flops_per_cycle\"",
        "\"verified\"",
        "\"lm_peak_bytes\"",
        "\"lm_bytes\"",
        "\"overrides\"",
        "\"bind\"",
        "\"warnings\"",
    ];
    let top: Vec<usize> = keys
        .iter()
        .map(|k| s.find(&format!("\n  {k}:")).unwrap())
        .collect();
    assert!(
        top.windows(2).all(|w| w[0] < w[1]),
        "top-level keys in struct order"
    );
    assert!(s.ends_with("}\n"));
    // Stable: the same report gives the same bytes.
    assert_eq!(to_json(&back), s);
}

#[test]
fn markdown_has_a_table_row_per_op() {
    let r = sample();
    let full = markdown(&r);
    assert!(full.starts_with("# mnsim report: mlp block\n"));
    let md = from_ops(&full, "## Ops");
    for op in &r.ops {
        let row = format!(
            "| {} | {} | {} | {} |",
            op.index,
            op.op,
            op.tensor,
            grouped(op.cycles)
        );
        assert_eq!(
            md.lines().filter(|l| l.starts_with(&row)).count(),
            1,
            "{row}\n{md}"
        );
    }
    assert!(md.contains(
        "| # | op | tensor | cycles | share | bottleneck | useful work | p50 | p90 | p99 | max |"
    ));
    assert_eq!(md.matches("**◀ bottleneck**").count(), 3);
    for l in &r.levels {
        assert!(md.lines().any(|line| line.starts_with(&format!(
            "| {} | {} |",
            l.level,
            grouped(l.busy_cycles)
        ))));
    }
    assert!(md.contains("- binding `seq` is not used by any tensor"));
    // Every table row has as many cells as its header.
    let mut cells = None;
    for line in md.lines() {
        if line.starts_with('|') {
            let n = line.matches(" | ").count();
            match cells {
                None => cells = Some(line.matches('|').count()),
                Some(c) => assert_eq!(line.matches('|').count(), c, "{line} ({n})"),
            }
        } else {
            cells = None;
        }
    }
}

#[test]
fn markdown_escapes_pipes() {
    let mut r = sample();
    r.ops[0].tensor = "a|b".into();
    let md = markdown(&r);
    assert!(md.contains("| Load | a\\|b |"), "{md}");
}

#[test]
fn bottleneck_stage_lookup() {
    let r = sample();
    assert_eq!(r.ops[0].bottleneck_stage(), Some(2));
    assert_eq!(r.ops[1].bottleneck_stage(), Some(0));
    assert_eq!(r.ops[2].bottleneck_stage(), Some(0));
    assert_eq!(r.ops[2].bottleneck_level(), Some("MAB"));
    assert_eq!(r.ops[3].bottleneck_stage(), Some(2));
    assert_eq!(r.bottleneck_level(), Some("DRAM"));
    let mut op = r.ops[0].clone();
    op.bottleneck = "L2B".into();
    assert_eq!(op.bottleneck_stage(), Some(1));
    op.bottleneck = "latency".into();
    assert_eq!(op.bottleneck_stage(), None);
    assert_eq!(op.bottleneck_level(), Some("latency"));
}

#[test]
fn snapshot_terminal() {
    insta::assert_snapshot!("terminal", terminal(&sample(), false));
}

#[test]
fn snapshot_markdown() {
    insta::assert_snapshot!("markdown", markdown(&sample()));
}

#[test]
fn the_bound_and_the_bottleneck_in_every_view() {
    let r = sample();
    let h = mnsim_reports::html(&r);
    assert!(h.contains("41,000 cycles"), "the bound card");
    assert!(
        h.contains("set by Group down · the run takes 1.70×"),
        "× bound"
    );
    assert!(
        h.contains("busy 34,914 cycles, 50.0% of the run"),
        "the bottleneck card"
    );
    assert!(h.contains("waited 1,200 cyc for the slices of #1 Load w1 (L1B down)"));
    let t = terminal(&r, false);
    assert!(t.contains("the run takes 1.70× the bound"), "{t}");
    assert!(t.contains("bottleneck L1B down: busy 34,914 cycles (50.0% of the run)"));
    // A report that predates the keys says nothing of them, and its bottleneck is the
    // level that bounded the most op cycles.
    let mut old = sample();
    old.bound_cycles = 0;
    old.bottleneck = None;
    assert!(!terminal(&old, false).contains("× the bound"));
    assert_eq!(old.bottleneck_name(), old.bottleneck_level());
    assert!(!markdown(&old).contains("**bound:**"));
}

#[test]
fn every_view_says_what_keeps_the_run_from_its_bound() {
    let mut r = sample();
    assert!(!terminal(&r, false).contains("above the bound"));
    r.above_bound = Some(mnsim_reports::AboveBound {
        cause: "serial".into(),
        resource: "L1B down".into(),
        busy_cycles: 34_914,
        compulsory_cycles: 20_000,
        excess: 34_914.0 / 41_000.0,
        idle: r.total_cycles as f64 / 34_914.0,
        op: Some(1),
        detail: "op 1 `Reshape` waited 9 cycles for the end of op 0 `Load`: `Reshape` reads \
                 and writes whole tensors, so it cannot start on a first slice"
            .into(),
    });
    let t = terminal(&r, false);
    let at = t
        .find("above the bound: L1B down, the busiest resource, stands idle")
        .unwrap();
    // Wrapped under the bound line, every word kept.
    assert!(at > t.find("bound 41,000 cycles").unwrap());
    let words: Vec<&str> = t[at..].split_whitespace().take(60).collect();
    assert!(
        words.join(" ").contains("cannot start on a first slice"),
        "{t}"
    );
    for line in t.lines() {
        assert!(columns(line) <= 100, "{line}");
    }
    let md = markdown(&r);
    assert!(
        md.contains("- **above the bound:** L1B down, the busiest resource"),
        "{md}"
    );
    let html = mnsim_reports::html(&r);
    assert!(html.contains("above the bound: L1B down"), "{html}");
    let json = to_json(&r);
    assert!(json.contains("\"above_bound\""));
}

/// A run of twelve ops on a critical path of eleven (op 4 hidden), op 7 stretched waiting
/// for the slices of op 6.
fn long_run() -> Report {
    let mut r = sample();
    let template = r.ops[0].clone();
    r.ops = (0..12usize)
        .map(|i| {
            let mut o = template.clone();
            o.index = i;
            o.tensor = format!("t{i}");
            o.start = 1_000 * i as u64;
            o.cycles = 500 + 37 * ((i as u64 * 7) % 12);
            o.end = o.start + o.cycles;
            o.exposed_cycles = if i == 4 { 0 } else { o.cycles };
            o.work_cycles = o.cycles;
            o
        })
        .collect();
    // Op 7 outlasts its bottleneck stage (16,384 cycles of L1B broadcast) 3×.
    let stage = r.ops[7].stages[2].cycles;
    r.ops[7].cycles = 3 * stage;
    r.ops[7].work_cycles = stage + 100;
    r.ops[7].exposed_cycles = 3 * stage;
    r.ops[7].waited_on = Some(mnsim_reports::WaitedOn {
        reason: "stream".into(),
        op: Some(6),
        resource: Some("DRAM".into()),
        cycles: 2 * stage - 100,
    });
    r.streams.clear();
    r
}

#[test]
fn the_first_screen_lists_the_ten_most_exposed_ops() {
    let r = long_run();
    let t = terminal(&r, false);
    let head = &t[..t.find("\nops\n").unwrap()];
    assert!(
        head.contains("the 10 most exposed of the 11 ops on the critical path"),
        "{head}"
    );
    // The rows under the title, most exposed first.
    let rows: Vec<&str> = head
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("#  op"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 10, "{head}");
    let exposed: Vec<u64> = rows
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(3)
                .unwrap()
                .replace(',', "")
                .parse()
                .unwrap()
        })
        .collect();
    assert!(exposed.windows(2).all(|w| w[0] >= w[1]), "{exposed:?}");
    assert_eq!(exposed[0], r.ops[7].exposed_cycles);
    // The hidden op is not listed; the least exposed of the eleven is left out.
    assert!(
        !rows
            .iter()
            .any(|l| l.split_whitespace().next() == Some("4"))
    );
    assert!(
        rows[0].ends_with("cyc for the slices of #6 Load t6 (DRAM)"),
        "{}",
        rows[0]
    );
    // The same list in report.md, and the op count in every view.
    let md = markdown(&r);
    assert!(md.contains("| 7 | Load | t7 | 49,152 | "), "{md}");
    assert!(md.contains("- **ops:** 4 ops"));
    assert!(mnsim_reports::html(&r).contains("<section id=\"critical\">"));
}

#[test]
fn an_op_much_longer_than_its_bottleneck_stage_says_why() {
    let r = long_run();
    let t = terminal(&r, false);
    let why = "↳ 49,152 cycles, 3.0× its bottleneck stage's 16,384: it waited 32,668 cycles for \
               the slices of #6 Load t6 (DRAM)";
    let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(why), "{t}");
    assert_eq!(
        t.matches('↳').count(),
        1,
        "only op 7 outlasts its stage: {t}"
    );
    assert!(markdown(&r).contains("- `#7 Load t7`: 49,152 cycles, 3.0×"));
    assert!(mnsim_reports::html(&r).contains("class=\"outlasts\""));
}

/// A whole model streams hundreds of tensors: the summary names the first few of each
/// kind and counts the rest, the costliest re-sends first.
#[test]
fn the_streams_line_names_a_few_and_counts_the_rest() {
    let mut r = sample();
    let base = r.streams.clone();
    r.streams.clear();
    for i in 0..300u64 {
        for s in &base {
            let mut s = s.clone();
            s.tensor = format!("{}_{i}", s.tensor);
            s.resend_cycles = if s.resent_slices > 0 { i } else { 0 };
            r.streams.push(s);
        }
    }
    let double = r.streams.iter().filter(|s| s.double_buffered).count();
    let text = terminal(&r, false)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if double > 8 {
        assert!(text.contains(&format!("and {} more", double - 8)), "{text}");
    }
    let resent = r.streams.iter().filter(|s| s.resent_slices > 0).count();
    if resent > 3 {
        assert!(
            text.contains(&format!("{} more re-sent", resent - 3)),
            "{text}"
        );
        // The costliest first: the last one made re-sends the most.
        let first = text.find(" re-sent ").unwrap();
        assert!(text[..first].ends_with("_299"), "{}", &text[..first]);
    }
    // The line stays short: a few terminal lines, not hundreds of names.
    let line = terminal(&r, false)
        .lines()
        .skip_while(|l| !l.starts_with("streams"))
        .take_while(|l| l.starts_with("streams") || l.starts_with("  "))
        .count();
    assert!(line <= 8, "{line} lines");
}
