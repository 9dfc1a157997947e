//! Sweeps: total cycles against a knob's value, as CSV and as an SVG line chart.

use crate::model::Report;
use crate::text::nice_step;
use std::fmt::Write as _;

/// One point of a sweep: the knob's value and the reports of every plan run at it.
#[derive(Clone, Debug)]
pub struct SweepPoint {
    pub value: f64,
    pub reports: Vec<Report>,
}

fn plan_name(r: &Report) -> String {
    r.plan.clone().unwrap_or_else(|| "-".to_string())
}

/// CSV: `knob,value,plan,total_cycles,bottleneck,<level>_busy_cycles...` (one row per
/// value and plan; level columns are the union over the sweep, in first-seen order).
pub fn sweep_csv(knob: &str, points: &[SweepPoint]) -> String {
    let mut levels: Vec<String> = Vec::new();
    for p in points {
        for r in &p.reports {
            for l in &r.levels {
                if !levels.contains(&l.level) {
                    levels.push(l.level.clone());
                }
            }
        }
    }
    let mut s = String::from("knob,value,plan,total_cycles,bottleneck");
    for l in &levels {
        let _ = write!(s, ",{l}_busy_cycles");
    }
    s.push('\n');
    for p in points {
        for r in &p.reports {
            let bottleneck = r.bottleneck_level().unwrap_or("-");
            let _ = write!(
                s,
                "{knob},{},{},{},{bottleneck}",
                p.value,
                plan_name(r),
                r.total_cycles
            );
            for l in &levels {
                let v = r
                    .levels
                    .iter()
                    .find(|x| &x.level == l)
                    .map_or(0, |x| x.busy_cycles);
                let _ = write!(s, ",{v}");
            }
            s.push('\n');
        }
    }
    s
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// An SVG line chart of total cycles against the knob's value, one line per plan.
pub fn sweep_svg(title: &str, knob: &str, points: &[SweepPoint]) -> String {
    let (w, h) = (720.0, 420.0);
    let (l, r, t, b) = (80.0, 160.0, 40.0, 60.0);
    let mut plans: Vec<String> = Vec::new();
    for p in points {
        for rep in &p.reports {
            let n = plan_name(rep);
            if !plans.contains(&n) {
                plans.push(n);
            }
        }
    }
    let xs: Vec<f64> = points.iter().map(|p| p.value).collect();
    let ys: Vec<f64> = points
        .iter()
        .flat_map(|p| p.reports.iter().map(|r| r.total_cycles as f64))
        .collect();
    let (x0, x1) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let y1 = ys.iter().copied().fold(0.0, f64::max).max(1.0);
    let (x0, x1) = if x1 > x0 {
        (x0, x1)
    } else {
        (x0 - 1.0, x0 + 1.0)
    };
    let ystep = nice_step(y1, 5.0);
    let ytop = (y1 / ystep).ceil() * ystep;
    let px = |x: f64| l + (x - x0) / (x1 - x0) * (w - l - r);
    let py = |y: f64| h - b - y / ytop * (h - t - b);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><title>{}</title>"#,
        esc(&format!("{title}: total cycles against {knob}"))
    );
    let _ = write!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = write!(
        s,
        r#"<text x="{}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        l,
        esc(title)
    );
    // Grid and axes.
    let mut y = 0.0;
    while y <= ytop + 1e-9 {
        let yy = py(y);
        let _ = write!(
            s,
            r##"<line x1="{l}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            w - r,
            l - 6.0,
            yy + 4.0,
            fmt_num(y)
        );
        y += ystep;
    }
    for &x in &xs {
        let xx = px(x);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{}" y2="{}" stroke="#999"/><text x="{xx:.1}" y="{}" text-anchor="middle">{}</text>"##,
            h - b,
            h - b + 5.0,
            h - b + 20.0,
            fmt_num(x)
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{l}" x2="{}" y1="{}" y2="{}" stroke="#333"/><line x1="{l}" x2="{l}" y1="{t}" y2="{}" stroke="#333"/>"##,
        w - r,
        h - b,
        h - b,
        h - b
    );
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (l + w - r) / 2.0,
        h - 18.0,
        esc(knob)
    );
    let _ = write!(
        s,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">total cycles</text>"#,
        (t + h - b) / 2.0
    );
    for (i, plan) in plans.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| {
                p.reports
                    .iter()
                    .find(|r| &plan_name(r) == plan)
                    .map(|r| (p.value, r.total_cycles as f64))
            })
            .collect();
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        // Dashes differ per plan, so plans with equal cycles stay visible on top of each other.
        let dash = ["none", "8 4", "2 3", "12 3 2 3"][i % 4];
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" stroke-dasharray="{dash}" points="{}"/>"#,
            path.join(" ")
        );
        for &(x, y) in &pts {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{c}"><title>{} = {}: {} cycles ({})</title></circle>"#,
                px(x),
                py(y),
                esc(knob),
                fmt_num(x),
                y as u64,
                esc(plan)
            );
        }
        let ly = t + 10.0 + i as f64 * 18.0;
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{c}"/><text x="{}" y="{}">{}</text>"#,
            w - r + 14.0,
            ly - 10.0,
            w - r + 32.0,
            ly,
            esc(plan)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LevelTotal, SCHEMA};

    fn rep(plan: &str, cycles: u64) -> Report {
        Report {
            schema: SCHEMA.into(),
            scenario: "s".into(),
            plan: Some(plan.into()),
            machine: "m".into(),
            mode: "timing".into(),
            schedule: "sequential".into(),
            total_cycles: cycles,
            clock_ghz: 1.0,
            ops: vec![],
            levels: vec![LevelTotal {
                level: "L1B".into(),
                busy_cycles: cycles / 2,
                bytes: 8,
                bottleneck_ops: 1,
            }],
            resources: vec![],
            peak_flops_per_cycle: None,
            verified: None,
            lm_peak_bytes: 0,
            lm_bytes: 1,
            overrides: vec![],
            bind: vec![],
            warnings: vec![],
        }
    }

    #[test]
    fn csv_has_a_row_per_value_and_plan() {
        let pts = vec![
            SweepPoint {
                value: 64.0,
                reports: vec![rep("a", 100), rep("b", 300)],
            },
            SweepPoint {
                value: 128.0,
                reports: vec![rep("a", 50), rep("b", 200)],
            },
        ];
        let csv = sweep_csv("links.L1B.distribute.parent", &pts);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "knob,value,plan,total_cycles,bottleneck,L1B_busy_cycles"
        );
        assert_eq!(lines.len(), 5);
        // No ops in these reports, so no bottleneck level.
        assert_eq!(lines[3], "links.L1B.distribute.parent,128,a,50,-,25");
        let svg = sweep_svg("t <x>", "k", &pts);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("t &lt;x&gt;"));
    }
}
