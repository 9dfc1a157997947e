//! `sweep.html`: a sweep's chart and every point, as one self-contained page.
//!
//! The table holds what `sweep.csv` holds, formatted to be read: counts with thousands
//! separators, time in µs, joules and joule-seconds with a prefix (`4.81 mJ`), watts and
//! GFLOPS/W to three figures. Headers wrap (a knob's path at its dots), so the table fits
//! the page on a common screen; one wider than the page scrolls inside its own box.

use crate::energy::{SweepMetric, human_joules, three};
use crate::sweep::{Sweep, SweepAxis, fmt_value, level_columns, point_values};
use crate::sweep_chart::{esc, sweep_svg_by};
use crate::text::{real, thousands};
use std::fmt::Write as _;

const CSS: &str = "\
body{font-family:sans-serif;margin:24px;color:#1f2933}\
h1{font-size:24px;overflow-wrap:anywhere}\
svg{display:block;max-width:100%;height:auto}\
.points{overflow-x:auto;max-width:100%}\
table{border-collapse:collapse;font-size:12px;font-variant-numeric:tabular-nums}\
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}\
th{background:#f6f8fa;white-space:normal;vertical-align:bottom;min-width:3em}\
td.l,th.l{text-align:left}\
td.err{color:#b91c1c;white-space:normal;text-align:left;min-width:16em}\
.note{color:#5f6b7a;font-size:12px}";

/// `sweep.html`: the chart of total cycles and every row, self-contained.
pub fn sweep_html(s: &Sweep, x: usize) -> String {
    sweep_html_by(s, x, SweepMetric::Cycles)
}

/// [`sweep_html`] with the chart of `metric`.
pub fn sweep_html_by(s: &Sweep, x: usize, metric: SweepMetric) -> String {
    let mut o = String::new();
    let title = format!("{}: sweep", s.scenario);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    let axes: Vec<String> = s
        .axes
        .iter()
        .map(|a| {
            let vals: Vec<String> = a.values.iter().map(|&v| value(a, v)).collect();
            let knobs = if a.knobs.is_empty() {
                String::new()
            } else {
                let k: Vec<String> = a
                    .knobs
                    .iter()
                    .map(|k| format!("<code>{}</code>", esc(k)))
                    .collect();
                format!(
                    " (its {} knob{}: {})",
                    k.len(),
                    if k.len() == 1 { "" } else { "s" },
                    k.join(", ")
                )
            };
            format!("<code>{}</code>{knobs} = {}", esc(&a.name), vals.join(", "))
        })
        .collect();
    let _ = writeln!(
        o,
        "<p>{} point(s) × {} plan(s); swept: {}.</p>",
        crate::sweep::point_count(&s.axes).unwrap_or(0),
        s.plans.len(),
        axes.join("; ")
    );
    o.push_str(&sweep_svg_by(s, x, metric));
    o.push_str("<h2>Points</h2>\n");
    points_table(&mut o, s);
    o.push_str(
        "<p class=\"note\">The same figures, unrounded, are in <code>sweep.csv</code> and \
         <code>sweep.json</code>.</p>\n</body>\n</html>\n",
    );
    o
}

/// An axis value as people read it: `4,096`, `0.75`, `x2` (a multiplier).
fn value(a: &SweepAxis, v: f64) -> String {
    if a.scale {
        format!("x{}", number(v))
    } else {
        number(v)
    }
}

/// A number as people read it: `4,096`, `0.75`.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        real(v, 0)
    } else {
        fmt_value(v)
    }
}

/// A header cell; a knob's path may break after each dot.
fn th(o: &mut String, title: &str, left: bool) {
    let text = esc(title).replace('.', ".<wbr>").replace('_', "_<wbr>");
    let _ = write!(
        o,
        "<th{} scope=\"col\">{text}</th>",
        if left { " class=\"l\"" } else { "" }
    );
}

fn td(o: &mut String, text: &str, left: bool) {
    let _ = write!(
        o,
        "<td{}>{}</td>",
        if left { " class=\"l\"" } else { "" },
        esc(text)
    );
}

/// The table of points: a row per point and plan, its figures formatted.
fn points_table(o: &mut String, s: &Sweep) {
    let levels = level_columns(s);
    let energy = s
        .rows
        .iter()
        .any(|r| r.result.as_ref().is_some_and(|x| x.energy.is_some()));
    let errors = s.rows.iter().any(|r| r.error.is_some());
    o.push_str("<div class=\"points\">\n<table>\n<thead><tr>");
    th(o, "point", false);
    th(o, "plan", true);
    for a in &s.axes {
        th(o, &a.name, false);
    }
    th(o, "cycles", false);
    th(o, "time (µs)", false);
    if energy {
        for t in [
            "energy",
            "average W",
            "peak W",
            "GFLOPS/W",
            "energy × delay",
        ] {
            th(o, t, false);
        }
    }
    for l in &levels {
        th(o, &format!("{l} busy cycles"), false);
    }
    th(o, "bound", false);
    th(o, "× bound", false);
    th(o, "bottleneck", true);
    if errors {
        th(o, "error", true);
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for row in &s.rows {
        o.push_str("<tr>");
        td(o, &row.point.to_string(), false);
        td(o, row.plan.as_deref().unwrap_or("–"), true);
        for (a, v) in s.axes.iter().zip(point_values(&s.axes, row.point)) {
            td(o, &value(a, v), false);
        }
        // Cycles, time, the energy figures, the levels, bound and × bound.
        let blanks = 4 + if energy { 5 } else { 0 } + levels.len();
        match &row.result {
            Some(r) => {
                td(o, &thousands(r.total_cycles), false);
                td(o, &real(r.time_us, 2), false);
                if energy {
                    let e = r.energy.as_ref();
                    let cells = [
                        e.map(|e| human_joules(e.energy_j)),
                        e.map(|e| three(e.average_w)),
                        e.map(|e| three(e.peak_w)),
                        e.and_then(|e| e.gflops_per_w).map(three),
                        e.map(|e| format!("{}·s", human_joules(e.edp_js))),
                    ];
                    for c in cells {
                        td(o, c.as_deref().unwrap_or("–"), false);
                    }
                }
                for l in &levels {
                    let v = r.levels.iter().find(|(x, _)| x == l).map_or(0, |x| x.1);
                    td(o, &thousands(v), false);
                }
                if r.bound_cycles > 0 {
                    td(o, &thousands(r.bound_cycles), false);
                    let x = r.total_cycles as f64 / r.bound_cycles as f64;
                    td(o, &format!("{}×", real(x, 2)), false);
                } else {
                    td(o, "–", false);
                    td(o, "–", false);
                }
                td(o, &r.bottleneck, true);
            }
            None => {
                for _ in 0..blanks {
                    td(o, "", false);
                }
                td(o, "", true);
            }
        }
        if errors {
            let _ = write!(
                o,
                "<td class=\"err\">{}</td>",
                esc(row.error.as_deref().unwrap_or(""))
            );
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table>\n</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::RowEnergy;
    use crate::sweep::{AxisKind, RowResult, SWEEP_SCHEMA, SweepAxis, SweepRow};

    #[test]
    fn the_table_formats_its_numbers() {
        let s = Sweep {
            schema: SWEEP_SCHEMA.into(),
            scenario: "s".into(),
            plans: vec![None],
            axes: vec![SweepAxis::new(
                "energy.dram.read_pj_per_byte",
                AxisKind::Knob,
                vec![1600.0, 0.5],
            )],
            rows: vec![
                SweepRow {
                    point: 0,
                    plan: None,
                    result: Some(RowResult {
                        total_cycles: 6_859_904,
                        time_us: 9146.538666666,
                        levels: vec![("DRAM".into(), 1_032_384)],
                        bottleneck: "Group down".into(),
                        bound_cycles: 6_000_000,
                        energy: Some(RowEnergy {
                            energy_j: 1.887221192545621,
                            average_w: 206.33173502270813,
                            peak_w: 242.227652732786,
                            gflops_per_w: Some(582.6087753353908),
                            edp_js: 0.0172615416101713,
                        }),
                    }),
                    error: None,
                },
                SweepRow {
                    point: 1,
                    plan: None,
                    result: None,
                    error: Some("boom".into()),
                },
            ],
            ..Sweep::default()
        };
        let html = sweep_html(&s, 0);
        for cell in [
            "<td>6,859,904</td>",
            "<td>9,146.54</td>",
            "<td>1.89 J</td>",
            "<td>206</td>",
            "<td>583</td>",
            "<td>17.3 mJ·s</td>",
            "<td>1,032,384</td>",
            "<td>1.14×</td>",
            "<td>1,600</td>",
            "<td>0.5</td>",
            "<td class=\"err\">boom</td>",
        ] {
            assert!(html.contains(cell), "{cell} not in\n{html}");
        }
        assert!(!html.contains("1.887221192545621"), "an unformatted number");
        assert!(html.contains("energy.<wbr>dram.<wbr>read_<wbr>pj_<wbr>per_<wbr>byte"));
    }
}
