//! Energy in the views: the terminal's line, `report.html`'s "where the joules went" and
//! power charts, `compare --by`, and the sweep's energy columns and `--metric` chart.

mod common;

use common::{sample, with_energy};
use mnsim_reports::{
    AxisKind, Objective, RowResult, SWEEP_SCHEMA, Sweep, SweepAxis, SweepMetric, SweepRow,
    compare_json_by, compare_table_by, html, sweep_csv, sweep_svg_by, terminal,
};

#[test]
fn the_terminal_says_where_the_joules_went() {
    let t = terminal(&with_energy(), false);
    let line = t.lines().find(|l| l.starts_with("energy: ")).expect(&t);
    assert!(line.contains("W average, 240 W peak"), "{line}");
    assert!(line.contains("GFLOPS/W"), "{line}");
    // A report without energy (or of none) has no such line.
    assert!(!terminal(&sample(), false).contains("energy: "));
}

#[test]
fn the_page_charts_joules_and_power() {
    let page = html(&with_energy());
    assert!(page.contains("<h2>Where the joules went</h2>"));
    assert_eq!(
        page.matches("class=\"energy-bar\"").count(),
        3,
        "2 resources + static"
    );
    assert!(page.contains("<h2>Power over time</h2>") && page.contains("class=\"power\""));
    // The power chart follows the op timeline.
    assert!(page.find("id=\"timeline\"").unwrap() < page.find("id=\"power\"").unwrap());
    let plain = html(&sample());
    assert!(!plain.contains("Where the joules went") && !plain.contains("Power over time"));
}

#[test]
fn compare_ranks_by_the_objective_asked() {
    let mut fast = with_energy();
    fast.plan = Some("fast".into());
    let mut frugal = with_energy();
    frugal.plan = Some("frugal".into());
    frugal.total_cycles += 1_000;
    if let Some(e) = frugal.energy.as_mut() {
        e.total_j /= 2.0;
    }
    let reps = [fast, frugal];
    let first = |by| compare_json_by(&reps, by)["plans"][0]["plan"].clone();
    assert_eq!(first(Objective::Cycles), "fast");
    assert_eq!(first(Objective::Energy), "frugal");
    assert_eq!(first(Objective::Edp), "frugal");
    let j = compare_json_by(&reps, Objective::Energy);
    assert_eq!(j["by"], "energy");
    assert!(j["plans"][0]["energy_j"].as_f64().unwrap() > 0.0);
    let t = compare_table_by(&reps, Objective::Energy);
    assert!(
        t.lines().next().unwrap().ends_with("2 plans by energy"),
        "{t}"
    );
    assert!(t.contains(" energy "), "{t}");
}

#[test]
fn sweeps_carry_energy_and_chart_it() {
    let axes = vec![SweepAxis::new(
        "energy.dram.read_pj_per_byte",
        AxisKind::Knob,
        vec![40.0, 80.0, 160.0],
    )];
    let rows = axes[0]
        .values
        .iter()
        .enumerate()
        .map(|(p, &v)| {
            let mut r = with_energy();
            if let Some(e) = r.energy.as_mut() {
                e.total_j = 0.001 * v / 40.0;
            }
            SweepRow {
                point: p,
                plan: None,
                result: Some(RowResult::of(&r)),
                error: None,
            }
        })
        .collect();
    let s = Sweep {
        schema: SWEEP_SCHEMA.into(),
        scenario: "s".into(),
        plans: vec![None],
        axes,
        shard: None,
        rows,
        ..Sweep::default()
    };
    let csv = sweep_csv(&s);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .contains("total_cycles,time_us,energy_j,average_w,peak_w,gflops_per_w,edp_js")
    );
    assert!(csv.lines().nth(3).unwrap().contains(",0.004,"), "{csv}");
    let svg = sweep_svg_by(&s, 0, SweepMetric::Energy);
    assert!(
        svg.contains("energy (mJ) against energy.dram.read_pj_per_byte"),
        "{svg}"
    );
    assert!(svg.contains("(pJ/byte)"));
    let svg = sweep_svg_by(&s, 0, SweepMetric::GflopsPerW);
    assert!(svg.contains(">GFLOPS/W<"));
    // The sweep reads back with its energy.
    let back = mnsim_reports::parse_sweep_json(&mnsim_reports::sweep_json(&s)).unwrap();
    assert_eq!(back, s);
}
