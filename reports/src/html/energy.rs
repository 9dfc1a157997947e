//! The energy sections of `report.html`: "Where the joules went" (a bar per charged
//! resource and the static energy) and "Power over time" (the run's power in windows, on
//! the same cycle axis as the timeline).

use super::page::esc;
use super::svg::{fit, grid, svg_open, text_w, ticks, tip};
use super::{GRID, INK, MUTED, PALETTE, TRACK, W};
use crate::energy::{EnergyReport, human_joules, three};
use crate::model::Report;
use crate::text::thousands;
use std::fmt::Write;

/// Bars of the joules chart: (label, joules, colour, detail).
fn bars(e: &EnergyReport) -> Vec<(String, f64, &'static str, String)> {
    let mut kinds: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for r in e.resources.iter().filter(|r| r.joules > 0.0) {
        if !kinds.contains(&r.kind.as_str()) {
            kinds.push(&r.kind);
        }
        let k = kinds.iter().position(|k| *k == r.kind).unwrap_or(0);
        out.push((
            r.name.clone(),
            r.joules,
            PALETTE[k % PALETTE.len()],
            format!(
                "{} · {} {} × {} pJ",
                human_joules(r.joules),
                thousands(r.amount),
                r.unit,
                r.pj_per_unit
            ),
        ));
    }
    if e.static_j > 0.0 {
        out.push((
            "static".into(),
            e.static_j,
            "#bab0ac",
            format!(
                "{} · {} W × the run",
                human_joules(e.static_j),
                three(e.static_w)
            ),
        ));
    }
    out
}

/// "Where the joules went": a bar per resource, in joules, against the run's total.
pub(super) fn joules_section(s: &mut String, r: &Report) {
    let Some(e) = r.energy.as_ref().filter(|e| e.total_j > 0.0) else {
        return;
    };
    s.push_str("<section id=\"energy\">\n<h2>Where the joules went</h2>\n");
    w!(
        s,
        "<p class=\"lead\">{} in total: {} of accesses, transfers and FLOP, {} static \
         ({} W); {} W on average, {} W at the peak{}. Each bar is a resource's bytes or FLOP \
         × its <code>energy.…</code> coefficient.</p>\n",
        esc(&human_joules(e.total_j)),
        esc(&human_joules(e.dynamic_j)),
        esc(&human_joules(e.static_j)),
        three(e.static_w),
        three(e.average_w),
        three(e.peak_w),
        e.gflops_per_w()
            .map(|g| format!(", {} GFLOPS/W", three(g)))
            .unwrap_or_default()
    );
    let bars = bars(e);
    let label_w = bars
        .iter()
        .map(|b| text_w(&b.0, 13.0))
        .fold(50.0, f64::max)
        .min(200.0);
    let x0 = label_w + 16.0;
    let text_x = W - 330.0;
    let x1 = text_x - 16.0;
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-30);
    let x = |j: f64| x0 + (x1 - x0) * j / max;
    let (row, top) = (26.0, 10.0);
    let height = top + row * bars.len() as f64 + 10.0;
    svg_open(
        s,
        "energy-chart",
        height,
        "Joules per resource",
        &format!(
            "Horizontal bars: joules of {} resources and the static energy, {} in total",
            bars.len().saturating_sub(usize::from(e.static_j > 0.0)),
            human_joules(e.total_j)
        ),
    );
    for (i, (label, j, colour, detail)) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        w!(
            s,
            "<g class=\"energy-bar\">{}\
             <text x=\"{label_w:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"13\">{}</text>\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"16\" fill=\"{TRACK}\"/>\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"16\" fill=\"{colour}\"/>\
             <text x=\"{text_x:.1}\" y=\"{:.1}\" font-size=\"12\">{} · {:.1}%</text></g>\n",
            tip(&format!("{label}: {detail}")),
            y + 16.0,
            esc(&fit(label, label_w, 13.0)),
            y + 4.0,
            x1 - x0,
            y + 4.0,
            (x(*j) - x0).max(1.5),
            y + 16.0,
            esc(detail),
            100.0 * j / e.total_j
        );
    }
    s.push_str("</svg>\n</section>\n");
}

/// "Power over time": the run's power in windows (static plus the dynamic power of the ops
/// running), over the cycles of the timeline.
pub(super) fn power_section(s: &mut String, r: &Report) {
    let Some(e) = r.energy.as_ref().filter(|e| !e.power.is_empty()) else {
        return;
    };
    s.push_str("<section id=\"power\">\n<h2>Power over time</h2>\n");
    w!(
        s,
        "<p class=\"lead\">Average power in {} windows of the run (each op's dynamic joules \
         spread evenly over its span, plus {} W static), on the timeline's cycle axis. \
         Peak {} W, average {} W.</p>\n",
        e.power.len(),
        three(e.static_w),
        three(e.peak_w),
        three(e.average_w)
    );
    let (x0, x1, top, bottom) = (60.0, W - 20.0, 24.0, 184.0);
    let end = e.power.last().map_or(1, |p| p.end).max(1) as f64;
    let wmax = e
        .power
        .iter()
        .map(|p| p.watts)
        .fold(e.peak_w, f64::max)
        .max(1e-9);
    let x = |c: f64| x0 + (x1 - x0) * c / end;
    let y = |w: f64| bottom - (bottom - top) * w / wmax;
    svg_open(
        s,
        "power-chart",
        bottom + 24.0,
        "Power over time",
        &format!(
            "Area: watts in {} windows over {} cycles, peak {} W",
            e.power.len(),
            thousands(r.total_cycles),
            three(e.peak_w)
        ),
    );
    grid(s, x, &ticks(end, 8.0), top, bottom);
    for t in ticks(wmax, 4.0) {
        w!(
            s,
            "<line x1=\"{x0:.1}\" y1=\"{yt:.1}\" x2=\"{x1:.1}\" y2=\"{yt:.1}\" stroke=\"{GRID}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{MUTED}\" \
             font-size=\"11\">{} W</text>\n",
            x0 - 6.0,
            y(t) + 4.0,
            three(t),
            yt = y(t),
        );
    }
    let mut path = format!("M{x0:.1},{bottom:.1}");
    for p in &e.power {
        w!(
            path,
            " L{:.1},{:.1} L{:.1},{:.1}",
            x(p.start as f64),
            y(p.watts),
            x(p.end as f64),
            y(p.watts)
        );
    }
    w!(path, " L{:.1},{bottom:.1} Z", x(end));
    w!(
        s,
        "<path class=\"power\" d=\"{path}\" fill=\"#f28e2b\" fill-opacity=\"0.35\" \
         stroke=\"{INK}\" stroke-width=\"1\">{}</path>\n\
         <line x1=\"{x0:.1}\" y1=\"{ys:.1}\" x2=\"{x1:.1}\" y2=\"{ys:.1}\" stroke=\"{MUTED}\" \
         stroke-dasharray=\"3 3\"/>\n",
        tip(&format!(
            "power: {} W average, {} W peak, {} W static",
            three(e.average_w),
            three(e.peak_w),
            three(e.static_w)
        )),
        ys = y(e.static_w),
    );
    s.push_str(
        "</svg>\n<p class=\"note\">The dashed line is the static power. The peak is the highest \
         power at any cycle; a window shows its average.</p>\n</section>\n",
    );
}
