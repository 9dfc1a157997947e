//! The "What ran together" chart of `report.html`: a lane per resource of the
//! timeline, every stage on the lane of the resource it holds, and the critical path.

use super::page::esc;
use super::svg::{Colours, fit, grid, svg_open, text_w, ticks, tip};
use super::timeline::{op_name, time_extent};
use super::{FONT, HOT, MUTED, W};
use crate::model::{OpReport, Report, StageReport};
use crate::text::{human_bytes, thousands};
use std::fmt::Write;

/// The resources of the run in display order: the report's, then any only stages name.
pub(super) fn resource_lanes(r: &Report) -> Vec<String> {
    let mut names: Vec<String> = r.resources.iter().map(|u| u.name.clone()).collect();
    for st in r.ops.iter().flat_map(|op| &op.stages) {
        let name = st.resource();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

pub(super) fn resources_section(s: &mut String, r: &Report) {
    s.push_str("<section id=\"resources\">\n<h2>What ran together</h2>\n");
    let lanes = resource_lanes(r);
    if lanes.is_empty() {
        s.push_str("<p>No resource was busy.</p>\n</section>\n");
        return;
    }
    let hidden = r.hidden_cycles();
    w!(
        s,
        "<p class=\"lead\">A lane per resource ({} schedule): every stage on the lane of the \
         resource it holds, from its op's start, labelled with the op's name; stages of different ops \
         side by side ran at the same time. The first lane is the critical path: the cycles of \
         each op that no other op hides. {} cycles of the ops' {} were hidden behind others.</p>\n",
        esc(&r.schedule),
        thousands(hidden),
        thousands(r.work_cycles())
    );
    let colours = Colours::of_report(r);
    let label_w = 150.0;
    let x0 = label_w + 12.0;
    let x1 = W - 14.0;
    let max = time_extent(r);
    let x = |c: f64| x0 + (x1 - x0) * c / max;
    let row = 22.0;
    let top = 24.0;
    let bottom = top + row * (lanes.len() + 1) as f64;
    svg_open(
        s,
        "resources-chart",
        bottom + 40.0,
        "What ran together",
        &format!(
            "{} resource lanes and the critical path over {} cycles",
            lanes.len(),
            thousands(r.total_cycles)
        ),
    );
    for i in 0..=lanes.len() {
        if i % 2 == 0 {
            w!(
                s,
                "<rect x=\"0\" y=\"{:.1}\" width=\"{W}\" height=\"{row}\" fill=\"#f8fafc\"/>\n",
                top + row * i as f64
            );
        }
    }
    grid(s, x, &ticks(max, 10.0), top, bottom);
    // The critical path.
    w!(
        s,
        "<text x=\"8\" y=\"{:.1}\" font-weight=\"600\" fill=\"{HOT}\">critical path</text>\n",
        top + 15.0
    );
    for op in r.ops.iter().filter(|o| o.exposed_cycles > 0) {
        let (a, b) = (x(op.start as f64), x((op.start + op.exposed_cycles) as f64));
        w!(
            s,
            "<rect class=\"critical\" x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"12\" \
             fill=\"{HOT}\" fill-opacity=\"0.8\">{}</rect>\n",
            top + 5.0,
            (b - a).max(1.0),
            tip(&format!(
                "{}: {} of its {} cycles on the critical path",
                op_name(op),
                thousands(op.exposed_cycles),
                thousands(op.cycles)
            ))
        );
    }
    for (i, lane) in lanes.iter().enumerate() {
        let y = top + row * (i + 1) as f64;
        w!(
            s,
            "<text x=\"8\" y=\"{:.1}\">{}</text>\n",
            y + 15.0,
            esc(&fit(lane, label_w - 8.0, FONT))
        );
        // The lane's holds in order of their start: a label stops where the next begins.
        let mut holds: Vec<(&OpReport, &StageReport)> = r
            .ops
            .iter()
            .flat_map(|op| {
                op.stages
                    .iter()
                    .filter(|st| &st.resource() == lane)
                    .map(move |st| (op, st))
            })
            .collect();
        holds.sort_by_key(|(op, _)| op.start);
        for (k, &(op, st)) in holds.iter().enumerate() {
            let (a, b) = (x(op.start as f64), x((op.start + st.cycles) as f64));
            let next = holds
                .get(k + 1)
                .map_or(f64::INFINITY, |(o, _)| x(o.start as f64));
            write_hold(
                s,
                op,
                st,
                (a, b.max(a + 1.5), next),
                y,
                colours.of(&st.level),
            );
        }
    }
    w!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{MUTED}\">cycles</text>\n",
        (x0 + x1) / 2.0,
        bottom + 32.0
    );
    s.push_str("</svg>\n</section>\n");
}

/// One stage's hold on its lane at `y`, from `a` to `b`, labelled with as much of its op's
/// name as fits before `next` (where the lane's next hold begins): `#1 Load t5`,
/// `Load t5`, `#1`, or nothing.
fn write_hold(
    s: &mut String,
    op: &OpReport,
    st: &StageReport,
    (a, b, next): (f64, f64, f64),
    y: f64,
    colour: &str,
) {
    let tooltip = format!(
        "{} · {}: cycles {} to {} ({} cycles, {})",
        op_name(op),
        st.label(),
        thousands(op.start),
        thousands(op.start + st.cycles),
        thousands(st.cycles),
        human_bytes(st.bytes)
    );
    w!(
        s,
        "<g class=\"hold\"><rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"14\" \
         rx=\"2\" fill=\"{colour}\" stroke=\"#fff\" stroke-width=\"0.5\">{}</rect>",
        y + 4.0,
        b - a,
        tip(&tooltip)
    );
    let room = b.min(next) - a - 4.0;
    let label = [
        op_name(op),
        format!("{} {}", op.op, op.tensor),
        format!("#{}", op.index),
    ]
    .into_iter()
    // Digits and `#` run wider than the average the estimate takes: a fifth to spare.
    .find(|l| 1.2 * text_w(l, 10.0) <= room);
    if let Some(label) = label {
        w!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#fff\">{}</text>",
            a + 2.0,
            y + 15.0,
            esc(&label)
        );
    }
    s.push_str("</g>\n");
}
