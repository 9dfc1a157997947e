//! Unit tests of escaping, ticks and plan links.

use super::compare::plan_href;
use super::page::esc;
use super::svg::{tick_label, ticks};
use crate::text::nice_step;

#[test]
fn escapes_markup_and_quotes() {
    assert_eq!(
        esc(r#"a<b & "c" 'd'>"#),
        "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
    );
}

#[test]
fn ticks_are_round() {
    assert_eq!(nice_step(23_560.0, 8.0), 5_000.0);
    assert_eq!(ticks(23_560.0, 8.0).last(), Some(&20_000.0));
    assert_eq!(ticks(1.0, 8.0), vec![0.0, 1.0]);
    assert_eq!(tick_label(0.0), "0");
    assert_eq!(tick_label(750.0), "750");
    assert_eq!(tick_label(1_500.0), "1.5k");
    assert_eq!(tick_label(20_000.0), "20k");
    assert_eq!(tick_label(1_200_000.0), "1.2M");
}

#[test]
fn plan_links_are_encoded() {
    let mut r = crate::model::Report {
        schema: crate::SCHEMA.into(),
        scenario: String::new(),
        plan: Some("a b&c/d".into()),
        machine: String::new(),
        mode: String::new(),
        schedule: "sequential".into(),
        total_cycles: 0,
        clock_ghz: 1.0,
        ops: vec![],
        program_ops: 0,
        free_ops: 0,
        levels: vec![],
        resources: vec![],
        streams: vec![],
        peak_flops_per_cycle: None,
        verified: None,
        lm_peak_bytes: 0,
        lm_bytes: 0,
        overrides: vec![],
        bind: vec![],
        warnings: vec![],
        bound_cycles: 0,
        bound_resource: String::new(),
        bottleneck: None,
        above_bound: None,
        energy: None,
        places: Vec::new(),
        boards: None,
    };
    assert_eq!(plan_href(&r), "a%20b%26c/d/report.html");
    r.plan = None;
    assert_eq!(plan_href(&r), "report.html");
}
