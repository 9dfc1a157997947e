//! The sections of `compare.html`: the plans' total cycles, their per-level busy
//! cycles, op-by-op differences, and links to each plan's `report.html`.

use super::page::{esc, td, th};
use super::svg::{BarLabel, Scale, bar_label, fit, grid, spans_orders, svg_open, text_w, tip};
use super::{FONT, HOT, INK, MUTED, OP_FILL, PALETTE, W};
use crate::compare::{ratio, times};
use crate::model::Report;
use crate::rows::{self, plan_name};
use crate::text::{share, thousands};
use std::fmt::Write;

/// Every plan against the fastest, op by op: the ops that differ (cycles, bottleneck,
/// layout) and those only one plan has (Reduces of partial sums, inserted Relayouts),
/// the largest difference first.
pub(super) fn op_by_op(s: &mut String, order: &[&Report]) {
    use crate::compare::{OpChange, by_size, delta, op_pairs, what_differs};
    s.push_str("<section id=\"op-by-op\">\n<h2>Op by op</h2>\n");
    let a = order[0];
    for b in &order[1..] {
        let pairs = op_pairs(a, b);
        w!(
            s,
            "<h3>{} against {} (A, the fastest): {} → {} cycles ({})</h3>\n",
            plan_link(b),
            plan_link(a),
            thousands(a.total_cycles),
            thousands(b.total_cycles),
            esc(&delta(a.total_cycles, b.total_cycles))
        );
        s.push_str("<table class=\"op-diff\">\n<thead><tr>");
        for (t, left) in [
            ("op", true),
            ("A cycles", false),
            ("B cycles", false),
            ("Δ", false),
            ("A bottleneck", true),
            ("B bottleneck", true),
            ("differs in", true),
        ] {
            th(s, t, left);
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        let same = pairs.iter().filter(|p| p.change == OpChange::Same).count();
        for p in &by_size(&pairs) {
            let o = p.a.or(p.b).expect("one side");
            let class = match p.change {
                OpChange::OnlyA | OpChange::OnlyB => "only",
                _ => "changed",
            };
            w!(s, "<tr class=\"{class}\">");
            td(s, &format!("{} {}", o.op, o.tensor), true);
            td(s, &p.a.map_or("–".into(), |x| thousands(x.cycles)), false);
            td(s, &p.b.map_or("–".into(), |x| thousands(x.cycles)), false);
            td(
                s,
                &delta(p.a.map_or(0, |x| x.cycles), p.b.map_or(0, |x| x.cycles)),
                false,
            );
            td(s, p.a.map_or("–", |x| x.bottleneck.as_str()), true);
            td(s, p.b.map_or("–", |x| x.bottleneck.as_str()), true);
            let what = what_differs(p)
                .replace("the first plan", "A")
                .replace("the second plan", "B");
            td(s, &what, true);
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody>\n</table>\n");
        w!(
            s,
            "<p class=\"note\">largest difference first · {same} op{} the same in both plans · \
             ops only one plan has are the Reduces of partial sums and the Relayouts its \
             layouts need</p>\n",
            if same == 1 { "" } else { "s" }
        );
    }
    s.push_str("</section>\n");
}

/// `PLAN/report.html` with the plan's segments percent-encoded (`/` kept: a plan `a/b` is
/// written under `a/b/`), or `report.html` for a report without a plan.
pub(super) fn plan_href(r: &Report) -> String {
    let Some(plan) = &r.plan else {
        return "report.html".to_string();
    };
    let mut out = String::new();
    for b in plan.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            w!(out, "%{b:02X}");
        }
    }
    out.push_str("/report.html");
    out
}

/// The plan's name linking to its report.
pub(super) fn plan_link(r: &Report) -> String {
    format!(
        "<a href=\"{}\">{}</a>",
        esc(&plan_href(r)),
        esc(plan_name(r))
    )
}

pub(super) fn totals_chart(s: &mut String, order: &[&Report]) {
    let label_w = order
        .iter()
        .map(|r| text_w(plan_name(r), 13.0))
        .fold(60.0, f64::max)
        .min(240.0);
    let x0 = label_w + 16.0;
    let fastest = order[0].total_cycles;
    let details: Vec<(String, bool)> = order
        .iter()
        .map(|r| {
            let best = r.total_cycles == fastest;
            let detail = format!(
                "{} cyc · {}{}",
                thousands(r.total_cycles),
                rows::duration(r),
                if best {
                    String::new()
                } else {
                    format!(" · {} the fastest", times(ratio(r.total_cycles, fastest)))
                }
            );
            (detail, best)
        })
        .collect();
    // The labels right of the bars, whole: the bars end where the longest begins.
    let text_room = details
        .iter()
        .map(|(d, best)| {
            text_w(d, FONT)
                + if *best {
                    text_w(" · fastest", FONT)
                } else {
                    0.0
                }
        })
        .fold(0.0, f64::max)
        + 12.0;
    let text_x = (W - text_room).max(x0 + 200.0);
    let x1 = text_x - 16.0;
    let totals: Vec<u64> = order.iter().map(|r| r.total_cycles).collect();
    let scale = Scale::of(&totals, x0, x1);
    let row = 30.0;
    let top = 22.0;
    let bottom = top + row * order.len() as f64;
    svg_open(
        s,
        "totals-chart",
        bottom + 24.0,
        "Total cycles per plan",
        &format!(
            "Horizontal bars: total cycles of {} plans, fastest first{}",
            order.len(),
            if scale.is_log() { ", log scale" } else { "" }
        ),
    );
    grid(s, |c| scale.x(c), &scale.ticks(8.0), top, bottom);
    for (i, (r, (detail, best))) in order.iter().zip(&details).enumerate() {
        let y = top + row * i as f64;
        w!(
            s,
            "<a class=\"plan-bar\" href=\"{}\">{}\
             <text x=\"{label_w:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"13\" \
             font-weight=\"600\" fill=\"#1d4ed8\">{}</text>\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{}\"/></a>\
             <text class=\"detail\" x=\"{text_x:.1}\" y=\"{:.1}\">{}{}</text>\n",
            esc(&plan_href(r)),
            tip(&format!("plan {}: {detail}", plan_name(r))),
            y + 19.0,
            esc(&fit(plan_name(r), label_w, 13.0)),
            y + 6.0,
            (scale.x(r.total_cycles as f64) - x0).max(1.5),
            if *best { "#59a14f" } else { OP_FILL },
            y + 19.0,
            esc(detail),
            if *best {
                " · <tspan fill=\"#15803d\" font-weight=\"700\">fastest</tspan>"
            } else {
                ""
            }
        );
    }
    s.push_str("</svg>\n");
    if scale.is_log() {
        w!(
            s,
            "<p class=\"note\">The plans differ by orders of magnitude: {}.</p>\n",
            scale.note()
        );
    }
}

/// Busy cycles per level, per plan: a group of horizontal bars for each plan, one bar for
/// each level any plan kept busy, the plan's bottleneck outlined.
pub(super) fn plan_levels_chart(s: &mut String, order: &[&Report]) {
    let levels = busy_levels(order);
    if levels.is_empty() {
        s.push_str("<p>No level was busy in any plan.</p>\n");
        return;
    }
    let label_w = order
        .iter()
        .map(|r| text_w(plan_name(r), 13.0))
        .chain(levels.iter().map(|l| text_w(l, 11.0) + 20.0))
        .fold(60.0, f64::max)
        .min(240.0);
    let x0 = label_w + 16.0;
    let x1 = W - 250.0;
    // Log where the plans' totals differ by orders of magnitude, as the totals chart.
    let totals: Vec<u64> = order.iter().map(|r| r.total_cycles).collect();
    let busy: Vec<u64> = order
        .iter()
        .flat_map(|r| r.levels.iter().map(|l| l.busy_cycles))
        .collect();
    let scale = Scale::with(&busy, x0, x1, spans_orders(&totals));
    let chart = LevelsChart {
        levels: &levels,
        label_w,
        x0,
        scale: &scale,
        bar: 12.0,
    };
    let group = 22.0 + chart.bar * levels.len() as f64 + 8.0;
    let legend_h = 22.0;
    let top = legend_h + 22.0;
    let bottom = top + group * order.len() as f64;
    svg_open(
        s,
        "plan-level-chart",
        bottom + 24.0,
        "Busy cycles per level, per plan",
        &format!(
            "Grouped horizontal bars: for each of {} plans, the busy cycles of {} levels",
            order.len(),
            levels.len()
        ),
    );
    chart.legend(s);
    grid(s, |c: f64| scale.x(c), &scale.ticks(8.0), top, bottom);
    for (i, r) in order.iter().enumerate() {
        let y = top + group * i as f64;
        w!(
            s,
            "<g class=\"plan-group\"><a href=\"{}\"><text x=\"8\" y=\"{:.1}\" font-size=\"13\" \
             font-weight=\"600\" fill=\"#1d4ed8\">{}</text></a>\n",
            esc(&plan_href(r)),
            y + 16.0,
            esc(&fit(plan_name(r), label_w, 13.0))
        );
        let hot = r.bottleneck_level();
        for (j, level) in levels.iter().enumerate() {
            chart.level_bar(s, r, level, hot, y + 22.0 + chart.bar * j as f64);
        }
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n");
    if scale.is_log() {
        w!(s, "<p class=\"note\">{}.</p>\n", scale.note());
    }
}

/// The levels any plan kept busy, in the order the plans first name them.
fn busy_levels<'a>(order: &[&'a Report]) -> Vec<&'a str> {
    let mut levels: Vec<&str> = Vec::new();
    for r in order {
        for l in &r.levels {
            if !levels.contains(&l.level.as_str()) {
                levels.push(&l.level);
            }
        }
    }
    levels
}

/// The geometry of the per-level chart shared by its legend and its bars.
struct LevelsChart<'a> {
    /// The levels charted, each with its palette colour by position.
    levels: &'a [&'a str],
    /// The width of the label column left of the bars.
    label_w: f64,
    /// Where the bars start.
    x0: f64,
    scale: &'a Scale,
    /// The height of one level's bar.
    bar: f64,
}

impl LevelsChart<'_> {
    /// The level's colour: the palette's entry at the level's position.
    fn colour(&self, level: &str) -> &'static str {
        let i = self.levels.iter().position(|l| *l == level).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    }

    /// The legend above the chart: a swatch and the name of each level.
    fn legend(&self, s: &mut String) {
        let mut lx = self.x0;
        for l in self.levels {
            w!(
                s,
                "<rect x=\"{lx:.1}\" y=\"4\" width=\"12\" height=\"12\" fill=\"{}\"/>\
                 <text x=\"{:.1}\" y=\"14\">{}</text>\n",
                self.colour(l),
                lx + 16.0,
                esc(l)
            );
            lx += 16.0 + text_w(l, FONT) + 18.0;
        }
    }

    /// One plan's bar for one level at height `by`: the level's name, its busy cycles and
    /// share of the plan's total (or "not used"), outlined and marked if it is `hot`, the
    /// plan's bottleneck level.
    fn level_bar(&self, s: &mut String, r: &Report, level: &str, hot: Option<&str>, by: f64) {
        let (label_w, x0, bar) = (self.label_w, self.x0, self.bar);
        let busy = r
            .levels
            .iter()
            .find(|l| l.level == level)
            .map(|l| l.busy_cycles);
        let text = match busy {
            Some(b) => format!("{} cyc · {}", thousands(b), share(b, r.total_cycles.max(1))),
            None => "not used".to_string(),
        };
        let is_hot = hot == Some(level);
        w!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10.5\" fill=\"{MUTED}\" \
             text-anchor=\"end\">{}</text>",
            label_w,
            by + 9.5,
            esc(&fit(level, label_w - 20.0, 10.5))
        );
        let b = busy.unwrap_or(0) as f64;
        let bx1 = self.scale.x(b).max(x0 + if b > 0.0 { 1.5 } else { 0.0 });
        w!(
            s,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"{}>{}\
             </rect>",
            by + 1.0,
            bx1 - x0,
            bar - 2.0,
            self.colour(level),
            if is_hot {
                format!(" stroke=\"{INK}\" stroke-width=\"1.5\"")
            } else {
                String::new()
            },
            tip(&format!("plan {} · {level}: {text}", plan_name(r)))
        );
        let text = if is_hot {
            format!("{text} ◀ bottleneck")
        } else {
            text
        };
        let label = BarLabel {
            text: &text,
            size: 10.5,
            colour: if is_hot { HOT } else { MUTED },
            bold: is_hot,
            inside: false,
        };
        bar_label(s, &label, (x0, bx1), by + 9.5);
        s.push('\n');
    }
}
