//! Charts of a sweep: total cycles (or another metric: joules, watts, GFLOPS/W, energy ×
//! delay; `sweep --metric`) against one swept axis, one line per combination of the other
//! axes (and plan), as SVG (`sweep.svg`); `sweep_page.rs` puts it in `sweep.html`.
//!
//! An axis whose values are all powers of two is drawn on a log₂ scale; the cycle axis is
//! logarithmic when the cycles span more than a factor of 20, and linear around the values
//! (not from 0) when they differ by at most a quarter of the largest, so that small
//! differences show. Series with the same cycles
//! at every point are drawn once and labelled together, so no line hides another. The
//! legend draws each series' line with its own colour and dashes, its label wrapped over
//! lines rather than cut at the chart's edge.

use crate::energy::SweepMetric;
use crate::sweep::{AxisKind, Sweep, SweepAxis, point_values};
use std::fmt::Write as _;

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
const DASHES: [&str; 4] = ["none", "8 4", "2 3", "12 3 2 3"];

pub(crate) fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The unit of a knob or binding, for axis labels.
pub fn axis_unit(a: &SweepAxis) -> &'static str {
    if a.kind == AxisKind::Bind {
        return "elements";
    }
    let last = a.name.rsplit('.').next().unwrap_or("");
    match last {
        "parent" | "child" | "bytes_per_cycle" => "bytes/cycle",
        "bytes" | "burst_bytes" | "word_bytes" => "bytes",
        "latency" => "cycles",
        "count" => "nodes per parent",
        "clock_ghz" => "GHz",
        "m" | "n" | "k" => "elements",
        _ if a.name.starts_with("compute.") => "FLOP/cycle",
        _ if a.name.ends_with("_pj_per_byte") => "pJ/byte",
        _ if a.name.starts_with("energy.static_w_per_node.") => "W per node",
        _ if a.name.starts_with("energy.") => "pJ/FLOP",
        _ => "",
    }
}

fn axis_label(a: &SweepAxis) -> String {
    if a.scale {
        let n = a.knobs.len().max(1);
        return format!(
            "{} (× {} own value{})",
            a.name,
            if n == 1 { "the knob's" } else { "each knob's" },
            if n == 1 {
                String::new()
            } else {
                format!(", {n} knobs")
            }
        );
    }
    match axis_unit(a) {
        "" => a.name.clone(),
        u => format!("{} ({u})", a.name),
    }
}

/// A value for an axis: `750`, `1.5k`, `20k`, `1.2M`; below 1000 with the decimals the
/// value needs, up to three (`5.5`, `0.25`).
fn short_count(v: f64) -> String {
    for (scale, unit) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v >= scale {
            let t = format!("{:.1}", v / scale);
            return format!("{}{unit}", t.strip_suffix(".0").unwrap_or(&t));
        }
    }
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A charted value in a tooltip: whole numbers with thousands separators, others to
/// four significant figures.
fn readable(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        crate::text::real(v, 0)
    } else {
        let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
        crate::text::real(v, digits)
    }
}

/// Whether every value is a positive power of two (at least two distinct values).
fn powers_of_two(v: &[f64]) -> bool {
    v.len() > 1
        && v.iter()
            .all(|&x| x > 0.0 && x.fract() == 0.0 && (x as u64).is_power_of_two())
}

/// The axis charted along x: `wanted` by name, else the first with several values.
pub fn x_axis(s: &Sweep, wanted: Option<&str>) -> Result<usize, String> {
    if let Some(w) = wanted {
        return s.axes.iter().position(|a| a.name == w).ok_or_else(|| {
            let names: Vec<&str> = s.axes.iter().map(|a| a.name.as_str()).collect();
            format!("--x {w} is not a swept axis (axes: {})", names.join(", "))
        });
    }
    Ok(s.axes.iter().position(|a| a.values.len() > 1).unwrap_or(0))
}

/// One line: a label and its (x, value) points (failed points left out).
struct Series {
    label: String,
    points: Vec<(f64, Option<f64>)>,
}

fn series(s: &Sweep, x: usize, metric: SweepMetric) -> Vec<Series> {
    let mut out: Vec<(String, Series)> = Vec::new();
    for row in &s.rows {
        let vals = point_values(&s.axes, row.point);
        let mut parts: Vec<String> = s
            .axes
            .iter()
            .enumerate()
            .filter(|&(i, a)| i != x && a.values.len() > 1)
            .map(|(i, a)| format!("{}={}", a.name, a.show(vals[i])))
            .collect();
        if s.plans.len() > 1 {
            parts.insert(0, format!("plan {}", row.plan.as_deref().unwrap_or("-")));
        }
        let key = parts.join(", ");
        let y = row.result.as_ref().and_then(|r| metric.value(r));
        let xv = vals.get(x).copied().unwrap_or(0.0);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, se)) => se.points.push((xv, y)),
            None => out.push((
                key.clone(),
                Series {
                    label: if key.is_empty() {
                        s.plans
                            .first()
                            .and_then(|p| p.clone())
                            .map_or(metric.scale(1.0).1, |p| format!("plan {p}"))
                    } else {
                        key
                    },
                    points: vec![(xv, y)],
                },
            )),
        }
    }
    // Equal series: drawn once, labelled together.
    let mut merged: Vec<Series> = Vec::new();
    for (_, se) in out {
        match merged.iter_mut().find(|m| m.points == se.points) {
            Some(m) => m.label = format!("{} = {}", m.label, se.label),
            None => merged.push(se),
        }
    }
    merged
}

/// An SVG line chart of total cycles against axis `x` of the sweep.
pub fn sweep_svg(s: &Sweep, x: usize) -> String {
    sweep_svg_by(s, x, SweepMetric::Cycles)
}

/// An SVG line chart of `metric` against axis `x` of the sweep.
pub fn sweep_svg_by(s: &Sweep, x: usize, metric: SweepMetric) -> String {
    let Some(ax) = s.axes.get(x) else {
        return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n".to_string();
    };
    let (all, quantity) = scaled_series(s, x, metric);
    let mut f = Frame::new(&ax.values, &all);
    let title = format!("{}: {quantity} against {}", s.scenario, ax.name);
    // The title whole, over as many lines as it needs (15 px bold: about 9 px a character).
    let lines = crate::text::wrap(&title, "", "", ((f.w - f.l - 10.0) / 9.0) as usize);
    f.t += TITLE_LINE * (lines.len() as f64 - 1.0);
    f.failed = s.rows.iter().filter(|r| r.error.is_some()).count();
    let mut o = String::new();
    write_head(&mut o, &f, &title, &lines);
    write_grid(&mut o, &f, ax);
    write_axis_titles(&mut o, &f, ax, &quantity);
    // The cycles chart's tooltips read as before: `N cycles`.
    let unit = if metric == SweepMetric::Cycles {
        "cycles"
    } else {
        &quantity
    };
    let mut line = 0;
    for (i, se) in all.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let dash = DASHES[(i / COLORS.len() + i) % DASHES.len()];
        write_series_line(&mut o, &f, se, c, dash);
        write_series_points(&mut o, &f, ax, se, c, unit);
        write_legend_entry(&mut o, &f, line, &f.legend[i], c, dash);
        line += f.legend[i].len();
    }
    write_failed_note(&mut o, &f);
    o.push_str("</svg>\n");
    o
}

/// The series of `metric` against axis `x`, in a unit that makes them readable numbers,
/// and the quantity's label in that unit.
fn scaled_series(s: &Sweep, x: usize, metric: SweepMetric) -> (Vec<Series>, String) {
    let mut all = series(s, x, metric);
    // Joules and joule-seconds in a unit that makes them readable numbers.
    let raw_max = all
        .iter()
        .flat_map(|se| se.points.iter().filter_map(|p| p.1))
        .fold(0.0, f64::max);
    let (factor, quantity) = metric.scale(raw_max);
    for se in &mut all {
        for p in &mut se.points {
            p.1 = p.1.map(|v| v * factor);
        }
    }
    (all, quantity)
}

/// Where a sweep chart draws: its margins and the scales from values to SVG coordinates.
struct Frame {
    /// Width of the chart.
    w: f64,
    /// Left, right, top and bottom margins of the plot.
    l: f64,
    r: f64,
    t: f64,
    b: f64,
    /// Height of the plot.
    plot_h: f64,
    /// Whether x is on a log₂ scale, y on a log scale.
    log_x: bool,
    log_y: bool,
    /// The x range, on x's scale.
    x0: f64,
    x1: f64,
    /// The y range: from 0, around the values (`zoom`), or log10 between decades.
    ylo: f64,
    yhi: f64,
    zoom: bool,
    /// Per series, its legend's lines (a long label wraps).
    legend: Vec<Vec<String>>,
    /// Points that failed (a line under the legend says how many).
    failed: usize,
}

impl Frame {
    /// The frame of a chart of `all` against the axis values `xs`.
    fn new(xs: &[f64], all: &[Series]) -> Frame {
        let log_x = powers_of_two(xs);
        let ys: Vec<f64> = all
            .iter()
            .flat_map(|se| se.points.iter().filter_map(|p| p.1))
            .collect();
        let ymax = ys.iter().copied().fold(1.0, f64::max);
        let ymin = ys.iter().copied().fold(f64::INFINITY, f64::min).max(1.0);
        let log_y = ymax / ymin > 20.0;
        let fx = |v: f64| if log_x { v.log2() } else { v };
        let (x0, x1) = xs
            .iter()
            .map(|&v| fx(v))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        let (x0, x1) = if x1 > x0 {
            (x0, x1)
        } else {
            (x0 - 1.0, x0 + 1.0)
        };
        // y: log10 between decades; linear around the values where they differ little
        // (all within a quarter of the largest), so the differences show; else from 0.
        let lowest = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let spread = ymax - lowest;
        let zoom = !log_y && lowest > 0.0 && spread > 0.0 && spread <= ZOOM * ymax;
        let (ylo, yhi) = if log_y {
            (ymin.log10().floor(), ymax.log10().ceil())
        } else if zoom {
            let step = crate::text::nice_step(spread, 5.0);
            let lo = (lowest / step).floor() * step;
            let hi = (ymax / step).ceil() * step;
            (lo, if hi > lo { hi } else { lo + step })
        } else {
            (0.0, {
                let step = crate::text::nice_step(ymax, 5.0);
                (ymax / step).ceil() * step
            })
        };
        Frame {
            w: 760.0,
            l: 90.0,
            r: 30.0,
            t: 44.0,
            b: 64.0,
            plot_h: 320.0,
            log_x,
            log_y,
            x0,
            x1,
            ylo,
            yhi,
            zoom,
            legend: all
                .iter()
                .map(|se| crate::text::wrap(&se.label, "", "", LEGEND_CHARS))
                .collect(),
            failed: 0,
        }
    }

    /// Height of the legend: a line per row of every series' label, and one for the
    /// failed points.
    fn legend_h(&self) -> f64 {
        let lines = self.legend_lines() + usize::from(self.failed > 0);
        LEGEND_LINE * lines as f64 + 10.0
    }

    /// Lines of the series' labels.
    fn legend_lines(&self) -> usize {
        self.legend.iter().map(Vec::len).sum()
    }

    /// The SVG x of axis value `v`.
    fn px(&self, v: f64) -> f64 {
        let fx = if self.log_x { v.log2() } else { v };
        self.l + (fx - self.x0) / (self.x1 - self.x0) * (self.w - self.l - self.r)
    }

    /// The SVG y of value `c`.
    fn py(&self, c: f64) -> f64 {
        let fy = if self.log_y { c.max(1.0).log10() } else { c };
        self.t + self.plot_h - (fy - self.ylo) / (self.yhi - self.ylo).max(1e-9) * self.plot_h
    }
}

/// Writes the `<svg>` opening tag, sized for the legend, its background and title.
fn write_head(o: &mut String, f: &Frame, title: &str, lines: &[String]) {
    let Frame {
        w, l, t, b, plot_h, ..
    } = *f;
    let h = t + plot_h + b + f.legend_h();
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><title>{}</title><rect width="{w}" height="{h}" fill="white"/><text class="title" x="{l}" y="26" font-size="15" font-weight="bold">"#,
        esc(title),
    );
    for (k, line) in lines.iter().enumerate() {
        let _ = write!(
            o,
            r#"<tspan x="{l}" y="{}">{}</tspan>"#,
            26.0 + TITLE_LINE * k as f64,
            esc(line)
        );
    }
    o.push_str("</text>");
}

/// Writes the grid lines with their tick labels (y, then the axis values `xs`) and the axes.
fn write_grid(o: &mut String, f: &Frame, ax: &SweepAxis) {
    let Frame {
        w, l, r, t, plot_h, ..
    } = *f;
    let yticks: Vec<f64> = if f.log_y {
        (f.ylo as i32..=f.yhi as i32)
            .map(|e| 10f64.powi(e))
            .collect()
    } else {
        let step = crate::text::nice_step(f.yhi - f.ylo, 5.0);
        (0..)
            .map(|i| f.ylo + i as f64 * step)
            .take_while(|&v| v <= f.yhi + step * 1e-9)
            .collect()
    };
    for yt in yticks {
        let yy = f.py(yt);
        let _ = write!(
            o,
            r##"<line x1="{l}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            w - r,
            l - 6.0,
            yy + 4.0,
            short_count(yt)
        );
    }
    for &xv in &ax.values {
        let xx = f.px(xv);
        let _ = write!(
            o,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{t}" y2="{}" stroke="#eee"/><text x="{xx:.1}" y="{}" text-anchor="middle">{}</text>"##,
            t + plot_h,
            t + plot_h + 18.0,
            ax.show(xv)
        );
    }
    let _ = write!(
        o,
        r##"<line x1="{l}" x2="{}" y1="{}" y2="{}" stroke="#333"/><line x1="{l}" x2="{l}" y1="{t}" y2="{}" stroke="#333"/>"##,
        w - r,
        t + plot_h,
        t + plot_h,
        t + plot_h
    );
}

/// Writes the titles of both axes: `ax` along x, `quantity` along y, with their scales.
fn write_axis_titles(o: &mut String, f: &Frame, ax: &SweepAxis, quantity: &str) {
    let Frame {
        w, l, r, t, plot_h, ..
    } = *f;
    let scale_note = |log: bool, base: &str| {
        if log {
            format!(", {base} scale")
        } else {
            String::new()
        }
    };
    let _ = write!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle">{}{}</text><text transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}{}</text>"#,
        (l + w - r) / 2.0,
        t + plot_h + 40.0,
        esc(&axis_label(ax)),
        scale_note(f.log_x, "log₂"),
        t + plot_h / 2.0,
        esc(quantity),
        if f.zoom {
            format!(", axis from {}", short_count(f.ylo))
        } else {
            scale_note(f.log_y, "log")
        }
    );
}

/// Writes a series' line in colour `c` with dashes `dash`, broken at each failed point.
fn write_series_line(o: &mut String, f: &Frame, se: &Series, c: &str, dash: &str) {
    // A failed point breaks the line.
    let mut runs: Vec<Vec<String>> = vec![Vec::new()];
    for &(xv, y) in &se.points {
        match y {
            Some(y) => {
                if let Some(last) = runs.last_mut() {
                    last.push(format!("{:.1},{:.1}", f.px(xv), f.py(y)));
                }
            }
            None => runs.push(Vec::new()),
        }
    }
    for run in runs.iter().filter(|r| !r.is_empty()) {
        let _ = write!(
            o,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" stroke-dasharray="{dash}" points="{}"/>"#,
            run.join(" ")
        );
    }
}

/// Writes a dot per point of a series that ran, its tooltip giving the value in `unit`.
fn write_series_points(
    o: &mut String,
    f: &Frame,
    ax: &SweepAxis,
    se: &Series,
    c: &str,
    unit: &str,
) {
    for &(xv, y) in &se.points {
        if let Some(y) = y {
            let _ = write!(
                o,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{c}"><title>{} = {}: {} {} ({})</title></circle>"#,
                f.px(xv),
                f.py(y),
                esc(&ax.name),
                ax.show(xv),
                readable(y),
                esc(unit),
                esc(&se.label)
            );
        }
    }
}

/// Writes the legend entry of a series whose first line is legend line `line`: its line's
/// colour and dashes, and its label, wrapped over as many lines as it needs.
fn write_legend_entry(
    o: &mut String,
    f: &Frame,
    line: usize,
    lines: &[String],
    c: &str,
    dash: &str,
) {
    let Frame {
        l, t, b, plot_h, ..
    } = *f;
    let ly = t + plot_h + b + 10.0 + line as f64 * LEGEND_LINE;
    let _ = write!(
        o,
        r#"<line x1="{l}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2" stroke-dasharray="{dash}"/><text class="legend" x="{}" y="{:.1}">"#,
        l + 36.0,
        ly - 4.0,
        ly - 4.0,
        l + 44.0,
        ly,
    );
    for (k, text) in lines.iter().enumerate() {
        let _ = write!(
            o,
            r#"<tspan x="{}" y="{:.1}">{}</tspan>"#,
            l + 44.0,
            ly + k as f64 * LEGEND_LINE,
            esc(text)
        );
    }
    o.push_str("</text>");
}

/// Characters of a legend line: what fits right of the legend's line sample (12 px text,
/// about 7 px a character, in the chart's 760 px).
const LEGEND_CHARS: usize = 84;
/// Height of a legend line.
const LEGEND_LINE: f64 = 18.0;
/// Values that differ by at most this share of the largest are charted on a linear axis
/// around them rather than from 0.
const ZOOM: f64 = 0.25;

/// Height of a line of the chart's title.
const TITLE_LINE: f64 = 20.0;

/// Writes how many points failed, under the legend, if any did.
fn write_failed_note(o: &mut String, f: &Frame) {
    if f.failed > 0 {
        let y = f.t + f.plot_h + f.b + 10.0 + f.legend_lines() as f64 * LEGEND_LINE;
        let _ = write!(
            o,
            r##"<text class="failed" x="{}" y="{y:.1}" fill="#b91c1c">{} point(s) failed: see sweep.csv</text>"##,
            f.l, f.failed
        );
    }
}

#[cfg(test)]
mod tests;
