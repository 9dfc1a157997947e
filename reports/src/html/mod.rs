//! `report.html` and `compare.html`: self-contained pages with inline CSS and SVG charts.
//!
//! The pages load nothing: no scripts, fonts, images or style sheets from anywhere (a
//! Content-Security-Policy says so to the browser); `report.html`'s one inline script sorts
//! its ops table (`sort.rs`), allowed by its hash. Tooltips are SVG `<title>` elements. Every
//! piece of text from the report is escaped.

use crate::compare::{ranked, ratio, times};
use crate::model::Report;
use crate::rows::{self, LEVEL_NOTE};
use crate::text::thousands;
use compare::{op_by_op, plan_levels_chart, plan_link, totals_chart};
use header::header;
use levels::levels_section;
use page::{card, distinct, esc, page_end, page_start, plan_suffix, td, th, verified_html};
use ready::ready_section;
use resources::resources_section;
use std::fmt::Write;
use tables::{critical_section, places_section, tables_section};
use timeline::timeline_section;

/// `write!` into a `String`, which cannot fail.
macro_rules! w {
    ($($t:tt)*) => {{
        let _ = write!($($t)*);
    }};
}

mod compare;
mod energy;
mod header;
mod levels;
mod page;
mod ready;
mod resources;
mod sort;
mod svg;
mod tables;
#[cfg(test)]
mod tests;
mod timeline;

/// Width of every chart's coordinate system (the page's content is about this wide at 1280 px).
const W: f64 = 1160.0;
/// Font size of chart text, in px.
const FONT: f64 = 12.0;
/// Ink and muted ink.
const INK: &str = "#1f2933";
const MUTED: &str = "#5f6b7a";
/// Grid lines and empty tracks.
const GRID: &str = "#e3e7ec";
const TRACK: &str = "#eef1f4";
/// Op bars.
const OP_FILL: &str = "#334155";
/// Text and outlines that mark a bottleneck.
const HOT: &str = "#b91c1c";
/// Colours of the levels, in the order of the report's `levels` (colour-blind-friendly, print
/// well on white).
const PALETTE: [&str; 10] = [
    "#4e79a7", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#9c755f", "#e15759", "#edc948",
    "#ff9da7", "#bab0ac",
];

/// `report.html`: the report as one self-contained page, for a performance engineer's first
/// look.
///
/// - a header: scenario, plan, machine and mode, total cycles and µs at the clock, the op
///   count (as `mnsim check` gives it), verification, LM peak, the bottleneck, overrides,
///   bindings and warnings;
/// - **Critical path**: the ten ops most exposed on it, with what each waited on;
/// - **Where the cycles went**: a horizontal bar per level of its busy cycles against the run's
///   cycles, labelled with cycles, share, bytes and the ops it bounded; the bottleneck level
///   outlined;
/// - **What ran together**: a lane per resource of the timeline (a level's ports per direction,
///   the DRAMs, the LM, a level's compute units) over the run's cycles, every stage drawn on
///   the lane of the resource it holds (class `hold`) and labelled with its op, so ops that
///   overlap sit side by side; a first lane marks the critical path: each op's exposed cycles
///   (class `critical`);
/// - **Op timeline**: a Gantt chart over the run's cycles, a bar per op from `start` to `end`
///   (class `op-bar`), and under it a thinner bar per stage from the op's start (stages are
///   pipelined), the bottleneck stage outlined and labelled; under an op much longer than
///   its bottleneck stage, why (class `outlasts`);
/// - **Where the joules went** (after the cycles, when the run costs energy): a bar per
///   charged resource and the static energy; **Power over time** (after the op timeline):
///   the run's power in windows on the same cycle axis;
/// - **When the PEs' data was ready**: for each op with `ready_cycles`, a range plot of min, p50,
///   p90, p99 and max over the op's window;
/// - the ops table (as in `report.md`, with exposed cycles, × bound, and FLOP, FLOP/cycle and
///   FLOP/s when an op computes), sortable by cycles, exposed cycles and × bound (click a
///   header, or open the page as `report.html#sort=exposed`), and the stages table.
///
/// Every chart is an `<svg role="img">` with a `<title>`; bars carry `<title>` tooltips.
/// The "Boards and links" section of a run over many boards (`crate::boards`): each
/// board, then each link between boards; nothing for one board.
fn boards_section(s: &mut String, r: &Report) {
    let Some(b) = &r.boards else {
        return;
    };
    s.push_str("<section><h2>Boards and links</h2>\n");
    s.push_str(&format!(
        "<p>{} boards ({}), in lock-step; each: {} cycles, {} B of DRAM, {} B over the links, {:.3e} J.</p>\n",
        b.boards,
        page::esc(&b.level),
        b.each.cycles,
        b.each.dram_bytes,
        b.each.link_bytes,
        b.each.joules
    ));
    s.push_str("<table><thead><tr><th>link</th><th>bytes</th><th>busy cycles</th><th>utilisation</th><th>joules</th></tr></thead><tbody>\n");
    for l in &b.links {
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.3e}</td></tr>\n",
            page::esc(&l.name),
            l.bytes,
            l.busy_cycles,
            100.0 * l.utilisation,
            l.joules
        ));
    }
    s.push_str("</tbody></table></section>\n");
}

pub fn html(r: &Report) -> String {
    let title = format!("mnsim · {}{}", r.scenario, plan_suffix(r));
    let mut s = String::new();
    page_start(&mut s, &title, true);
    header(&mut s, r);
    critical_section(&mut s, r);
    places_section(&mut s, r);
    boards_section(&mut s, r);
    levels_section(&mut s, r);
    energy::joules_section(&mut s, r);
    resources_section(&mut s, r);
    timeline_section(&mut s, r);
    energy::power_section(&mut s, r);
    if rows::ready_differs(r) {
        ready_section(&mut s, r);
    }
    tables_section(&mut s, r);
    w!(
        s,
        "<footer class=\"note\">{} · generated by mnsim · the same data is in \
         <code>report.json</code>; <code>trace.json</code> opens in Perfetto</footer>\n",
        esc(&r.schema)
    );
    page_end(&mut s, true);
    s
}

/// `compare.html`: the plans of a scenario side by side, fastest first.
///
/// - a bar per plan of its total cycles, in rank order (as [`crate::compare_table`]), the fastest
///   highlighted, labelled with cycles, µs and the ratio to the fastest;
/// - the plans' per-level busy cycles as grouped bars (a group per plan, a bar per level, the
///   levels' colours in a legend);
/// - the ranking table.
///
/// Plan names link to `PLAN/report.html` (`report.html` for a report without a plan), where
/// `mnsim run --out` writes each plan's page.
pub fn compare_html(reports: &[Report]) -> String {
    let order = ranked(reports);
    let scenario = distinct(reports, |r| &r.scenario);
    let machine = distinct(reports, |r| &r.machine);
    let mut s = String::new();
    page_start(&mut s, &format!("mnsim · {scenario} · plans"), false);
    w!(s, "<header>\n<h1>{}</h1>\n", esc(&scenario));
    let count = match reports.len() {
        1 => "1 plan".to_string(),
        n => format!("{n} plans"),
    };
    w!(
        s,
        "<p class=\"sub\">plans compared on <b>{}</b> · {count} ranked by total cycles</p>\n",
        esc(&machine)
    );
    if let (Some(fast), Some(slow)) = (order.first(), order.last()) {
        s.push_str("<div class=\"cards\">\n");
        card(
            &mut s,
            "fastest plan",
            &plan_link(fast),
            &format!(
                "{} cycles · {}",
                thousands(fast.total_cycles),
                rows::duration(fast)
            ),
        );
        card(
            &mut s,
            "slowest plan",
            &plan_link(slow),
            &format!(
                "{} cycles · {} the fastest",
                thousands(slow.total_cycles),
                times(ratio(slow.total_cycles, fast.total_cycles))
            ),
        );
        s.push_str("</div>\n");
    }
    s.push_str("</header>\n");
    if order.is_empty() {
        s.push_str("<p>No plans to compare.</p>\n");
        page_end(&mut s, false);
        return s;
    }

    s.push_str("<section id=\"totals\">\n<h2>Total cycles</h2>\n");
    totals_chart(&mut s, &order);
    s.push_str("</section>\n");

    s.push_str("<section id=\"plan-levels\">\n<h2>Busy cycles per level</h2>\n");
    plan_levels_chart(&mut s, &order);
    w!(s, "<p class=\"note\">{}</p>\n", esc(LEVEL_NOTE));
    s.push_str("</section>\n");

    s.push_str("<section id=\"ranking\">\n<h2>Ranking</h2>\n<table>\n<thead><tr>");
    for (t, left) in [
        ("rank", false),
        ("plan", true),
        ("cycles", false),
        ("time", false),
        ("× fastest", false),
        ("speedup", false),
        ("× bound", false),
        ("bottleneck", true),
        ("verified", true),
    ] {
        th(&mut s, t, left);
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    let fastest = order[0].total_cycles;
    let slowest = order[order.len() - 1].total_cycles;
    for (i, r) in order.iter().enumerate() {
        s.push_str("<tr>");
        td(&mut s, &(i + 1).to_string(), false);
        w!(s, "<td class=\"l\">{}</td>", plan_link(r));
        td(&mut s, &thousands(r.total_cycles), false);
        td(&mut s, &rows::duration(r), false);
        td(&mut s, &times(ratio(r.total_cycles, fastest)), false);
        td(&mut s, &times(ratio(slowest, r.total_cycles)), false);
        td(&mut s, &rows::times_bound(r), false);
        td(&mut s, r.bottleneck_name().unwrap_or("–"), true);
        w!(s, "<td class=\"l\">{}</td>", verified_html(r.verified));
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    s.push_str(
        "<p class=\"note\">× fastest: cycles / fastest plan's cycles · speedup: slowest plan's \
         cycles / cycles · × bound: cycles / the fewest any layout could give · the \
         bottleneck is the resource on the critical path holding the most cycles</p>\n",
    );
    s.push_str("</section>\n");
    if order.len() > 1 {
        op_by_op(&mut s, &order);
    }
    page_end(&mut s, false);
    s
}
