//! The header of `report.html`: scenario, plan, machine and mode, the summary cards
//! (with the bottleneck card), overrides, bindings and warnings.

use super::page::{card, esc, verified_html};
use crate::model::Report;
use crate::rows::{self, plan_name};
use crate::text::{human_bytes, share, thousands};
use std::fmt::Write;

/// The bottleneck card: the resource on the critical path holding the most cycles and its
/// busy share of the run (a report that predates it: the level that bounded the most op
/// cycles).
pub(super) fn bottleneck_card(s: &mut String, r: &Report) {
    let (name, sub) = match &r.bottleneck {
        Some(b) => (
            Some(b.resource.as_str()),
            format!(
                "busy {} cycles, {} of the run; {} cycles of the critical path",
                thousands(b.busy_cycles),
                share(b.busy_cycles, r.total_cycles),
                thousands(b.critical_cycles)
            ),
        ),
        None => {
            let level = r.bottleneck_level();
            let bounded: u64 = r
                .ops
                .iter()
                .filter(|op| op.bottleneck_level().is_some() && op.bottleneck_level() == level)
                .map(|op| op.cycles)
                .sum();
            let sub = match level {
                Some(_) => format!(
                    "bounded {} of the run's cycles",
                    share(bounded, r.total_cycles)
                ),
                None => "no op names a bottleneck".to_string(),
            };
            (level, sub)
        }
    };
    card(
        s,
        "bottleneck",
        &format!("<span class=\"hot\">{}</span>", esc(name.unwrap_or("–"))),
        &esc(&sub),
    );
}

pub(super) fn header(s: &mut String, r: &Report) {
    w!(
        s,
        "<header>\n<h1>{}</h1>\n<p class=\"sub\">plan <b>{}</b> · machine <b>{}</b> · {} mode</p>\n",
        esc(&r.scenario),
        esc(plan_name(r)),
        esc(&r.machine),
        esc(&r.mode)
    );
    s.push_str("<div class=\"cards\">\n");
    card(
        s,
        "total",
        &format!("{} cycles", thousands(r.total_cycles)),
        &esc(&format!(
            "{} at {} · {}",
            rows::duration(r),
            rows::clock(r),
            crate::critical::report_op_count(r)
        )),
    );
    bottleneck_card(s, r);
    if r.bound_cycles > 0 {
        card(
            s,
            "bound",
            &format!("{} cycles", thousands(r.bound_cycles)),
            &esc(&format!(
                "set by {} · the run takes {} the fewest cycles any layout could give{}",
                r.bound_resource,
                rows::times_bound(r),
                rows::above_bound(r)
                    .map(|a| format!(" · {a}"))
                    .unwrap_or_default()
            )),
        );
    }
    card(
        s,
        "verified",
        verified_html(r.verified),
        match r.verified {
            Some(_) => "outputs against a host reference",
            None => "functional mode with verify: true checks outputs",
        },
    );
    let lm = if r.lm_bytes == 0 {
        0.0
    } else {
        (r.lm_peak_bytes as f64 / r.lm_bytes as f64).clamp(0.0, 1.0)
    };
    card(
        s,
        "LM peak per PE",
        &esc(&human_bytes(r.lm_peak_bytes)),
        &format!(
            "of {} ({})<div class=\"meter\"><span{} style=\"width:{:.1}%\"></span></div>",
            esc(&human_bytes(r.lm_bytes)),
            esc(&share(r.lm_peak_bytes, r.lm_bytes)),
            if lm >= 0.999 { " class=\"full\"" } else { "" },
            lm * 100.0
        ),
    );
    s.push_str("</div>\n");
    for (name, items) in [
        ("overrides", rows::overrides(r)),
        ("bind", rows::bindings(r)),
    ] {
        if !items.is_empty() {
            w!(s, "<p class=\"chips\"><b>{name}:</b> ");
            for i in items {
                w!(s, "<code>{}</code>", esc(&i));
            }
            s.push_str("</p>\n");
        }
    }
    if !r.warnings.is_empty() {
        w!(
            s,
            "<section class=\"warnings\" id=\"warnings\">\n<h2>⚠ {} warning{}</h2>\n<ul>\n",
            r.warnings.len(),
            if r.warnings.len() == 1 { "" } else { "s" }
        );
        for warning in &r.warnings {
            w!(s, "<li>{}</li>\n", esc(warning));
        }
        s.push_str("</ul>\n</section>\n");
    }
    s.push_str("</header>\n");
}
