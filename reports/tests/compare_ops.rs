//! Op-by-op comparison of two plans, on real reports (`mnsim run --mode timing` of
//! `scenarios/attention_block.ron`, its plans `rows` and `split_k`, kept in `tests/data/`).

use mnsim_reports::{OpChange, Report, compare_html, compare_ops, op_diff_table, op_pairs};

fn attention() -> (Report, Report) {
    (
        serde_json::from_str(include_str!("data/attention_split_k.json")).unwrap(),
        serde_json::from_str(include_str!("data/attention_rows.json")).unwrap(),
    )
}

#[test]
fn ops_are_aligned_and_the_reduce_only_split_k_needs_stands_out() {
    let (split_k, rows) = attention();
    let pairs = op_pairs(&split_k, &rows);
    // 8 ops in split_k, 7 in rows: the Reduce of the partial q·kᵀ is split_k's only.
    assert_eq!(pairs.len(), 8);
    let only: Vec<_> = pairs
        .iter()
        .filter(|p| p.change == OpChange::OnlyA)
        .collect();
    assert_eq!(only.len(), 1);
    let r = only[0].a.unwrap();
    assert_eq!((r.op.as_str(), r.tensor.as_str()), ("Reduce", "s"));
    assert!(pairs.iter().all(|p| p.change != OpChange::OnlyB));
    // Load kt differs in layout and cycles; Load q in layout only; the rest is the same.
    let kt = pairs
        .iter()
        .find(|p| p.a.is_some_and(|o| o.op == "Load" && o.tensor == "kt"))
        .unwrap();
    assert_eq!(kt.change, OpChange::Changed);
    assert!(kt.a.unwrap().cycles < kt.b.unwrap().cycles);
    assert_eq!(
        pairs.iter().filter(|p| p.change == OpChange::Same).count(),
        4
    );
    // Every op of each report appears once, in order.
    let a: Vec<usize> = pairs.iter().filter_map(|p| p.a.map(|o| o.index)).collect();
    let b: Vec<usize> = pairs.iter().filter_map(|p| p.b.map(|o| o.index)).collect();
    assert_eq!(a, (0..split_k.ops.len()).collect::<Vec<_>>());
    assert_eq!(b, (0..rows.ops.len()).collect::<Vec<_>>());
}

#[test]
fn the_terminal_table_shows_where_the_plans_differ() {
    let (split_k, rows) = attention();
    let t = op_diff_table(&split_k, &rows);
    assert!(
        t.starts_with("op by op, B = rows against A = split_k: 3,336 → 3,888 cycles (+552)"),
        "{t}"
    );
    let line = |needle: &str| {
        t.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {t}"))
    };
    assert!(line("Load kt").contains("+512"));
    assert!(line("Reduce s").contains("only in A"));
    assert!(line("MatMul s").contains("+192"));
    assert!(t.contains("4 ops the same (2,424 cycles)"));
    // Names are never cut.
    assert!(!t.contains('…'), "{t}");
    assert!(line("Load q").contains("Group down distribute"), "{t}");
    // Names are kept whole: the bottleneck change is there in full.
    assert!(line("Load kt").contains("Group down broadcast → L1B down distribute"));
    // The same reports in the other order: signs flip, the Reduce is B's.
    let u = op_diff_table(&rows, &split_k);
    assert!(
        u.lines()
            .any(|l| l.contains("Reduce s") && l.contains("only in B"))
    );
    assert!(u.contains("(−552)"));
    // compare_ops: every plan against the fastest, whatever the input order.
    assert_eq!(compare_ops(&[rows.clone(), split_k.clone()]), t);
    assert_eq!(compare_ops(&[rows]), "");
}

#[test]
fn compare_html_has_the_op_by_op_section() {
    let (split_k, rows) = attention();
    let page = compare_html(&[rows, split_k]);
    let at = page.find("<section id=\"op-by-op\">").expect("section");
    let sec = &page[at..];
    let sec = &sec[..sec.find("</section>").unwrap()];
    assert!(sec.contains(
        "<a href=\"rows/report.html\">rows</a> against <a href=\"split_k/report.html\">split_k</a>"
    ));
    assert_eq!(sec.matches("<tr class=\"only\">").count(), 1);
    assert_eq!(sec.matches("<tr class=\"changed\">").count(), 3);
    assert!(sec.contains("<td class=\"l\">Reduce s</td>"));
    assert!(sec.contains("4 ops the same"));
    // One plan: no section.
    let (one, _) = attention();
    assert!(!compare_html(&[one]).contains("op-by-op"));
}

/// The Δ column of the rows of an op-by-op terminal table, in order.
fn deltas(t: &str) -> Vec<i64> {
    t.lines()
        .skip(2)
        .take_while(|l| !l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            let d = l
                .split_whitespace()
                .find(|w| w.starts_with(['+', '−']) || *w == "0")
                .unwrap_or_else(|| panic!("no Δ in {l}"));
            let n: i64 = d
                .trim_start_matches(['+', '−'])
                .replace(',', "")
                .parse()
                .unwrap();
            if d.starts_with('−') { -n } else { n }
        })
        .collect()
}

#[test]
fn the_op_by_op_diff_comes_largest_difference_first() {
    let (split_k, rows) = attention();
    let t = op_diff_table(&split_k, &rows);
    let d = deltas(&t);
    assert_eq!(d.len(), 4, "{t}");
    assert!(
        d.windows(2).all(|w| w[0].abs() >= w[1].abs()),
        "not by size: {d:?}\n{t}"
    );
    // Program order would put Load q (0) before Load kt (+512).
    assert_eq!(d[0], 512, "{t}");
    // The page's table in the same order.
    let page = compare_html(&[rows, split_k]);
    let sec = &page[page.find("<section id=\"op-by-op\">").unwrap()..];
    let names: Vec<&str> = sec
        .split("<tr class=\"")
        .skip(1)
        .map(|r| {
            r.split("<td class=\"l\">")
                .nth(1)
                .unwrap()
                .split('<')
                .next()
                .unwrap()
        })
        .collect();
    let first = t.lines().nth(2).unwrap();
    assert!(first.contains(names[0]), "{first} / {names:?}");
}
