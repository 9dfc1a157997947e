//! The tables of `report.html`: the critical path's most exposed ops, the ops table
//! (sortable) and the stages table.

use super::page::{esc, td, th};
use crate::critical::{self, MOST_EXPOSED};
use crate::model::{OpReport, Report};
use crate::rows::{self, USEFUL_NOTE};
use crate::text::{Nums, human_bytes, real, share, thousands};
use std::fmt::Write;

/// The "Critical path" section, on the first screen: the ops most exposed on the critical
/// path (at most ten), each with its exposed cycles, their share of the run and what it
/// waited on. Nothing when no op is on it.
pub(super) fn critical_section(s: &mut String, r: &Report) {
    let top = critical::most_exposed(r, MOST_EXPOSED);
    if top.is_empty() {
        return;
    }
    s.push_str("<section id=\"critical\">\n<h2>Critical path</h2>\n");
    let title = critical::exposed_title(r, top.len());
    w!(
        s,
        "<p class=\"lead\">{}: to shorten the run, shorten these. The ops table below \
         sorts by exposed cycles too.</p>\n",
        esc(&capitalised(&title))
    );
    s.push_str("<table class=\"exposed\">\n<thead><tr>");
    for (t, left) in [
        ("#", false),
        ("op", true),
        ("tensor", true),
        ("exposed", false),
        ("share", false),
        ("waited on", true),
    ] {
        th(s, t, left);
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for &i in &top {
        let op = &r.ops[i];
        s.push_str("<tr>");
        td(s, &op.index.to_string(), false);
        td(s, &op.label(), true);
        td(s, &op.tensor, true);
        td(s, &thousands(op.exposed_cycles), false);
        td(s, &share(op.exposed_cycles, r.total_cycles), false);
        w!(
            s,
            "<td class=\"l wrap\">{}</td>",
            esc(&critical::waited(r, op))
        );
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n</section>\n");
}

/// The "By part" and "By layer" sections of a whole model (`crate::places`): each
/// part's and layer's ops, cycles on the critical path, share, × bound, bytes, joules.
pub(super) fn places_section(s: &mut String, r: &Report) {
    use crate::places::{TITLES, rows};
    for (by, title) in [("part", "By part"), ("layer", "By layer")] {
        let rows = rows(r, by);
        if rows.is_empty() {
            continue;
        }
        w!(
            s,
            "<section id=\"by-{by}\">\n<h2>{title}</h2>\n<table>\n<thead><tr>"
        );
        for (i, t) in TITLES.iter().enumerate() {
            th(s, t, i == 0);
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for row in &rows {
            s.push_str("<tr>");
            for (i, c) in row.iter().enumerate() {
                td(s, c, i == 0);
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody>\n</table>\n</section>\n");
    }
}

/// `text` with its first letter in upper case.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A sortable header: `key` names it in `#sort=KEY`; `first` is the order of its first
/// click (`desc`: largest first).
fn sort_th(s: &mut String, title: &str, key: &str, first: &str, left: bool) {
    w!(
        s,
        "<th{} scope=\"col\" data-sort=\"{key}\" data-first=\"{first}\">\
         <button type=\"button\">{}</button></th>",
        if left { " class=\"l\"" } else { "" },
        esc(title)
    );
}

/// A cell with its number in `data-v`, for the sort.
fn td_v(s: &mut String, text: &str, v: impl std::fmt::Display) {
    w!(s, "<td data-v=\"{v}\">{}</td>", esc(text));
}

/// An op's cycles over its bound (`2.31×`, `–` without a bound), and the number sorted.
fn times_bound(op: &OpReport) -> (String, f64) {
    if op.bound_cycles == 0 {
        return ("–".to_string(), f64::NAN);
    }
    let x = op.cycles as f64 / op.bound_cycles as f64;
    (format!("{}×", real(x, 2)), x)
}

pub(super) fn tables_section(s: &mut String, r: &Report) {
    s.push_str("<section id=\"ops\">\n<h2>Ops</h2>\n");
    if r.ops.is_empty() {
        s.push_str("<p>No ops.</p>\n</section>\n");
        return;
    }
    let computes = r.ops.iter().any(|op| op.flops.is_some());
    s.push_str("<table class=\"ops\">\n<thead><tr>");
    for (i, t) in rows::op_titles(r).iter().enumerate() {
        match i {
            0 => sort_th(s, t, "index", "asc", false),
            3 => sort_th(s, t, "cycles", "desc", false),
            _ => th(s, t, [1, 2, 5].contains(&i)),
        }
    }
    sort_th(s, "exposed", "exposed", "desc", false);
    sort_th(s, "× bound", "bound", "desc", false);
    if computes {
        for t in ["FLOP", "FLOP/cycle", "FLOP/s"] {
            th(s, t, false);
        }
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for (k, op) in r.ops.iter().enumerate() {
        let cells = rows::op_cells(r, op, Nums::Grouped);
        s.push_str("<tr>");
        for (i, c) in cells.iter().enumerate() {
            match i {
                0 => td_v(s, c, k),
                2 => w!(
                    s,
                    "<td class=\"l\" title=\"{}\">{}</td>",
                    esc(op.layout.as_deref().unwrap_or("no layout in LM")),
                    esc(c)
                ),
                3 => td_v(s, c, op.cycles),
                5 => w!(s, "<td class=\"l hot\">{}</td>", esc(c)),
                _ => td(s, c, i == 1),
            }
        }
        td_v(s, &thousands(op.exposed_cycles), op.exposed_cycles);
        let (xb, v) = times_bound(op);
        if v.is_finite() {
            td_v(s, &xb, v);
        } else {
            td(s, &xb, false);
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
        "<p class=\"note\">share = op cycles / total cycles · {USEFUL_NOTE} · exposed = the \
         op's cycles on the critical path · × bound = op cycles / the fewest any layout could \
         give it · click #, cycles, exposed or × bound to sort{}</p>\n",
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
