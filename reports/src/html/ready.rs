//! The "When the PEs' data was ready" chart of `report.html`: a range plot per op of
//! its `ready_cycles` percentiles.

use super::page::esc;
use super::svg::{fit, svg_open, tip};
use super::timeline::op_name;
use super::{FONT, HOT, INK, MUTED, OP_FILL, TRACK};
use crate::model::{OpReport, Percentiles, Report};
use crate::text::thousands;
use std::fmt::Write;

/// The width of the ops' label column.
const LABEL_W: f64 = 230.0;
/// The left of the bars.
const X0: f64 = LABEL_W + 12.0;
/// The right of the bars.
const X1: f64 = 700.0;

/// The section: a row per op that readies data on PEs, or a note that none does.
pub(super) fn ready_section(s: &mut String, r: &Report) {
    s.push_str("<section id=\"ready\">\n<h2>When the PEs' data was ready</h2>\n");
    let ready: Vec<(&OpReport, &Percentiles)> = r
        .ops
        .iter()
        .filter_map(|op| op.ready_cycles.as_ref().map(|p| (op, p)))
        .collect();
    if ready.is_empty() {
        s.push_str("<p>No op readied data on PEs.</p>\n</section>\n");
        return;
    }
    s.push_str(
        "<p class=\"lead\">For each op that readies data on PEs, the cycle at which each PE's \
         data was ready, over the PEs: whisker from min to max, box from p50 to p90, ◆ p99. \
         Each row is scaled to its op's window (grey, start to end cycle).</p>\n",
    );
    let row = 34.0;
    let top = 8.0;
    let height = top + row * ready.len() as f64 + 4.0;
    svg_open(
        s,
        "ready-chart",
        height,
        "Ready cycles per op",
        &format!(
            "Range plots of the PEs' data-ready cycle (min, p50, p90, p99, max) for {} op{}",
            ready.len(),
            if ready.len() == 1 { "" } else { "s" }
        ),
    );
    for (i, (op, p)) in ready.iter().enumerate() {
        let y = top + row * i as f64;
        ready_row(s, op, p, y + 12.0);
    }
    s.push_str("</svg>\n</section>\n");
}

/// One op's row around height `cy`: its name and PE count, its window's grey track with the
/// start and end cycles, the range plot of its ready cycles and their summary.
fn ready_row(s: &mut String, op: &OpReport, p: &Percentiles, cy: f64) {
    let (label_w, x0, x1) = (LABEL_W, X0, X1);
    let name = op_name(op);
    let tooltip = format!(
        "{name}: data ready over {} PEs\nmin {} · p50 {} · p90 {} · p99 {} · max {}\n\
         after the op's start (cycle {}): min +{} · p50 +{} · max +{}",
        thousands(p.count),
        thousands(p.min),
        thousands(p.p50),
        thousands(p.p90),
        thousands(p.p99),
        thousands(p.max),
        thousands(op.start),
        thousands(p.min.saturating_sub(op.start)),
        thousands(p.p50.saturating_sub(op.start)),
        thousands(p.max.saturating_sub(op.start)),
    );
    w!(
        s,
        "<g class=\"ready-row\">{}\
         <text x=\"8\" y=\"{:.1}\" font-weight=\"600\">{}</text>\
         <text x=\"8\" y=\"{:.1}\" font-size=\"10.5\" fill=\"{MUTED}\">{} PEs</text>\
         <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"6\" rx=\"3\" fill=\"{TRACK}\"/>\
         <text x=\"{x0:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{MUTED}\">{}</text>\
         <text x=\"{x1:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{MUTED}\" \
         text-anchor=\"end\">{}</text>",
        tip(&tooltip),
        cy + 4.0,
        esc(&fit(&name, label_w - 8.0, FONT)),
        cy + 17.0,
        thousands(p.count),
        cy - 3.0,
        x1 - x0,
        cy + 17.0,
        thousands(op.start),
        cy + 17.0,
        thousands(op.end)
    );
    range_plot(s, op, p, cy);
    ready_summary(s, p, cy);
}

/// The range plot of the ready cycles on the row around height `cy`, scaled to the op's
/// window: a whisker from min to max, a box from p50 to p90 with p50 marked, ◆ at p99.
fn range_plot(s: &mut String, op: &OpReport, p: &Percentiles, cy: f64) {
    let (x0, x1) = (X0, X1);
    let lo = op.start.min(p.min) as f64;
    let hi = (op.end.max(p.max) as f64).max(lo + 1.0);
    let x = |c: u64| x0 + (x1 - x0) * (c as f64 - lo) / (hi - lo);
    let (xmin, x50, x90, x99, xmax) = (x(p.min), x(p.p50), x(p.p90), x(p.p99), x(p.max));
    w!(
        s,
        "<line x1=\"{xmin:.1}\" y1=\"{cy:.1}\" x2=\"{xmax:.1}\" y2=\"{cy:.1}\" \
         stroke=\"{OP_FILL}\" stroke-width=\"1.5\"/>\
         <line x1=\"{xmin:.1}\" y1=\"{:.1}\" x2=\"{xmin:.1}\" y2=\"{:.1}\" stroke=\"{OP_FILL}\" \
         stroke-width=\"1.5\"/>\
         <line x1=\"{xmax:.1}\" y1=\"{:.1}\" x2=\"{xmax:.1}\" y2=\"{:.1}\" stroke=\"{OP_FILL}\" \
         stroke-width=\"1.5\"/>\
         <rect x=\"{x50:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"12\" fill=\"#9ec5e8\" \
         stroke=\"{OP_FILL}\"/>\
         <line x1=\"{x50:.1}\" y1=\"{:.1}\" x2=\"{x50:.1}\" y2=\"{:.1}\" stroke=\"{INK}\" \
         stroke-width=\"2.5\"/>\
         <path d=\"M{x99:.1} {:.1}l5 5l-5 5l-5 -5z\" fill=\"{HOT}\"/>",
        cy - 6.0,
        cy + 6.0,
        cy - 6.0,
        cy + 6.0,
        cy - 6.0,
        (x90 - x50).max(0.0),
        cy - 8.0,
        cy + 8.0,
        cy - 5.0
    );
}

/// The ready cycles' percentiles in words right of the plot, or the one cycle if every PE
/// was ready at once; closes the row.
fn ready_summary(s: &mut String, p: &Percentiles, cy: f64) {
    let text_x = X1 + 24.0;
    if p.min == p.max {
        w!(
            s,
            "<text x=\"{text_x:.1}\" y=\"{:.1}\" font-size=\"11.5\">\
             <tspan fill=\"{MUTED}\">every PE ready at</tspan> <tspan \
             font-weight=\"600\">{}</tspan></text></g>\n",
            cy + 4.0,
            thousands(p.max)
        );
    } else {
        w!(
            s,
            "<text x=\"{text_x:.1}\" y=\"{:.1}\" font-size=\"11.5\">\
             <tspan fill=\"{MUTED}\">min</tspan> {} · <tspan fill=\"{MUTED}\">p50</tspan> \
             <tspan font-weight=\"600\">{}</tspan> · <tspan fill=\"{MUTED}\">p90</tspan> {} · \
             <tspan fill=\"{MUTED}\">p99</tspan> {} · <tspan fill=\"{MUTED}\">max</tspan> {}\
             </text></g>\n",
            cy + 4.0,
            thousands(p.min),
            thousands(p.p50),
            thousands(p.p90),
            thousands(p.p99),
            thousands(p.max)
        );
    }
}
