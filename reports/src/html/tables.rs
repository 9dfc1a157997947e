//! The tables of `report.html`: the ops table and the stages table.

use super::page::{esc, td, th};
use crate::model::{OpReport, Report};
use crate::rows::{self, USEFUL_NOTE};
use crate::text::{Nums, human_bytes, thousands};
use std::fmt::Write;

pub(super) fn tables_section(s: &mut String, r: &Report) {
    s.push_str("<section id=\"ops\">\n<h2>Ops</h2>\n");
    if r.ops.is_empty() {
        s.push_str("<p>No ops.</p>\n</section>\n");
        return;
    }
    let computes = r.ops.iter().any(|op| op.flops.is_some());
    s.push_str("<table class=\"ops\">\n<thead><tr>");
    for (i, t) in rows::op_titles(r).iter().enumerate() {
        th(s, t, [1, 2, 5].contains(&i));
    }
    if computes {
        for t in ["FLOP", "FLOP/cycle", "FLOP/s"] {
            th(s, t, false);
        }
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for op in &r.ops {
        let cells = rows::op_cells(r, op, Nums::Grouped);
        s.push_str("<tr>");
        for (i, c) in cells.iter().enumerate() {
            match i {
                2 => w!(
                    s,
                    "<td class=\"l\" title=\"{}\">{}</td>",
                    esc(op.layout.as_deref().unwrap_or("no layout in LM")),
                    esc(c)
                ),
                5 => w!(s, "<td class=\"l hot\">{}</td>", esc(c)),
                _ => td(s, c, i == 1),
            }
        }
        if computes {
            let [flops, per_cycle, rate] =
                rows::compute(r, op).unwrap_or_else(|| ["–".into(), "–".into(), "–".into()]);
            td(s, &flops, false);
            td(s, per_cycle.trim_end_matches(" FLOP/cycle"), false);
            td(s, &rate, false);
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    w!(
        s,
        "<p class=\"note\">share = op cycles / total cycles · {USEFUL_NOTE}{}</p>\n",
        if rows::ready_differs(r) {
            " · p50…max = cycle at which the PEs' data was ready"
        } else {
            ""
        }
    );

    let staged: Vec<&OpReport> = r.ops.iter().filter(|op| rows::shows_stages(op)).collect();
    if !staged.is_empty() {
        s.push_str("<h3>Stages</h3>\n<table class=\"stages\">\n<thead><tr>");
        for (t, left) in [
            ("#", false),
            ("op", true),
            ("level", true),
            ("dir", true),
            ("kind", true),
            ("bytes", false),
            ("cycles", false),
            ("chunks", false),
            ("ports", false),
            ("latency", false),
            ("", true),
        ] {
            th(s, t, left);
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for op in staged {
            let marked = op.bottleneck_stage();
            for (i, st) in op.stages.iter().enumerate() {
                let hot = marked == Some(i);
                s.push_str(if hot { "<tr class=\"bn\">" } else { "<tr>" });
                td(s, &op.index.to_string(), false);
                td(s, &format!("{} {}", op.op, op.tensor), true);
                td(s, &st.level, true);
                td(s, &st.direction, true);
                td(s, &st.kind, true);
                td(s, &human_bytes(st.bytes), false);
                td(s, &thousands(st.cycles), false);
                td(s, &thousands(st.chunks), false);
                td(s, &thousands(st.ports), false);
                td(s, &thousands(st.latency), false);
                if hot {
                    s.push_str("<td class=\"l hot\">◀ bottleneck</td>");
                } else {
                    s.push_str("<td></td>");
                }
                s.push_str("</tr>\n");
            }
        }
        s.push_str("</tbody>\n</table>\n");
    }
    s.push_str("</section>\n");
}
