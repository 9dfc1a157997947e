//! The "Where the cycles went" chart of `report.html`: a bar per level of its busy
//! cycles against the run's cycles.

use super::page::esc;
use super::svg::{Colours, fit, grid, svg_open, text_w, ticks, tip};
use super::{HOT, INK, MUTED, TRACK, W};
use crate::model::Report;
use crate::rows::LEVEL_NOTE;
use crate::text::{human_bytes, share, thousands};
use std::fmt::Write;

pub(super) fn levels_section(s: &mut String, r: &Report) {
    s.push_str("<section id=\"levels\">\n<h2>Where the cycles went</h2>\n");
    if r.levels.is_empty() {
        s.push_str("<p>No stage was busy.</p>\n</section>\n");
        return;
    }
    s.push_str(
        "<p class=\"lead\">Busy cycles of each level (its stages summed over the ops) against the \
         run's cycles (grey track). The outlined level bounded the most cycles.</p>\n",
    );
    let colours = Colours::of_report(r);
    let bottleneck = r.bottleneck_level();
    let label_w = r
        .levels
        .iter()
        .map(|l| text_w(&l.level, 13.0))
        .fold(50.0, f64::max)
        .min(200.0);
    let x0 = label_w + 16.0;
    let text_x = W - 390.0;
    let x1 = text_x - 16.0;
    let max = r
        .levels
        .iter()
        .map(|l| l.busy_cycles)
        .fold(r.total_cycles, u64::max)
        .max(1) as f64;
    let x = |c: f64| x0 + (x1 - x0) * c / max;
    let row = 30.0;
    let top = 22.0;
    let bottom = top + row * r.levels.len() as f64;
    let height = bottom + 24.0;
    svg_open(
        s,
        "level-chart",
        height,
        "Busy cycles per level",
        &format!(
            "Horizontal bars: busy cycles of each of {} levels against {} total cycles",
            r.levels.len(),
            thousands(r.total_cycles)
        ),
    );
    grid(s, x, &ticks(max, 8.0), top, bottom);
    // The run's length.
    w!(
        s,
        "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{bottom:.1}\" stroke=\"{MUTED}\" \
         stroke-dasharray=\"3 3\"/>\n",
        x(r.total_cycles as f64),
        top - 2.0
    );
    for (i, l) in r.levels.iter().enumerate() {
        let y = top + row * i as f64;
        let hot = bottleneck == Some(l.level.as_str());
        let colour = colours.of(&l.level);
        let detail = format!(
            "{} cyc · {} · {} · bounded {} op{}",
            thousands(l.busy_cycles),
            share(l.busy_cycles, r.total_cycles),
            human_bytes(l.bytes),
            l.bottleneck_ops,
            if l.bottleneck_ops == 1 { "" } else { "s" }
        );
        w!(
            s,
            "<g class=\"level-bar\">{}\
             <text x=\"{label_w:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"13\" \
             font-weight=\"{}\" fill=\"{}\">{}</text>\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{TRACK}\"/>\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{colour}\"{}/>",
            tip(&format!("{}: {detail}", l.level)),
            y + 19.0,
            if hot { 700 } else { 500 },
            if hot { HOT } else { INK },
            esc(&fit(&l.level, label_w, 13.0)),
            y + 6.0,
            x(r.total_cycles as f64) - x0,
            y + 6.0,
            (x(l.busy_cycles as f64) - x0).max(if l.busy_cycles > 0 { 1.5 } else { 0.0 }),
            if hot {
                format!(" stroke=\"{INK}\" stroke-width=\"2\"")
            } else {
                String::new()
            }
        );
        w!(
            s,
            "<text x=\"{text_x:.1}\" y=\"{:.1}\" font-size=\"12\">{}{}</text></g>\n",
            y + 19.0,
            esc(&detail),
            if hot {
                format!(" <tspan fill=\"{HOT}\" font-weight=\"700\">◀ bottleneck</tspan>")
            } else {
                String::new()
            }
        );
    }
    s.push_str("</svg>\n");
    w!(
        s,
        "<p class=\"note\">{} The dashed line is the run's length ({} cycles).</p>\n</section>\n",
        esc(LEVEL_NOTE),
        thousands(r.total_cycles)
    );
}
