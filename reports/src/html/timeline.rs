//! The "Op timeline" chart of `report.html`: a Gantt chart of the ops over the run's
//! cycles, with a thinner bar per stage.

use super::page::esc;
use super::svg::{BarLabel, Colours, bar_label, fit, grid, svg_open, ticks, tip};
use super::{FONT, HOT, INK, MUTED, OP_FILL, W};
use crate::critical;
use crate::model::{OpReport, Report, StageReport};
use crate::rows;
use crate::text::{human_bytes, share, thousands, wrap};
use std::fmt::Write;

/// `#3 Load x`.
pub(super) fn op_name(op: &OpReport) -> String {
    format!("#{} {} {}", op.index, op.op, op.tensor)
}

/// Writes the "Op timeline" section: its lead and the Gantt chart of the ops and their stages.
pub(super) fn timeline_section(s: &mut String, r: &Report) {
    s.push_str("<section id=\"timeline\">\n<h2>Op timeline</h2>\n");
    if r.ops.is_empty() {
        s.push_str("<p>No ops ran.</p>\n</section>\n");
        return;
    }
    s.push_str(
        "<p class=\"lead\">Each op from its first to its last cycle (dark bar), and under it \
         its stages, pipelined from the op's start, coloured by level; the stage that set the \
         op's time is outlined. Hover a bar for details.</p>\n",
    );
    let colours = Colours::of_report(r);
    let g = Lanes::of(r);
    let top = 24.0;
    let rows_h: f64 = (0..r.ops.len()).map(|i| g.op_h(r, i)).sum();
    let bottom = top + rows_h;
    let height = bottom + 40.0;
    let stages: usize = r.ops.iter().map(|op| op.stages.len()).sum();
    svg_open(
        s,
        "timeline-chart",
        height,
        "Op timeline",
        &format!(
            "Gantt chart of {} ops and {stages} stages over {} cycles",
            r.ops.len(),
            thousands(r.total_cycles)
        ),
    );
    // Bands behind each op's rows, then the grid over them.
    write_bands(s, r, &g, top);
    grid(s, |c| g.x(c), &ticks(g.max, 10.0), top, bottom);
    let mut y = top;
    for (i, op) in r.ops.iter().enumerate() {
        write_op_rows(s, r, op, &g, &colours, y);
        if let Some((why, lines)) = &g.notes[i] {
            let ny = y + g.op_row + g.stage_row * op.stages.len() as f64;
            w!(
                s,
                "<text class=\"outlasts\" x=\"24\" y=\"{:.1}\" font-size=\"11\" \
                 fill=\"{HOT}\">{}",
                ny + 10.0,
                tip(why)
            );
            for (k, line) in lines.iter().enumerate() {
                w!(
                    s,
                    "<tspan x=\"24\" y=\"{:.1}\">{}</tspan>",
                    ny + 10.0 + g.stage_row * k as f64,
                    esc(line)
                );
            }
            s.push_str("</text>\n");
        }
        y += g.op_h(r, i);
    }
    write_cycles_caption(s, r, &g, bottom);
    s.push_str("</svg>\n</section>\n");
}

/// Where the timeline draws: the label column, the time axis and the height of the rows.
struct Lanes {
    /// Width of the label column.
    label_w: f64,
    /// The time axis: from `x0` (cycle 0) to `x1` (cycle `max`).
    x0: f64,
    x1: f64,
    max: f64,
    /// Height of an op's row and of each of its stages' rows.
    op_row: f64,
    stage_row: f64,
    /// Per op, why it outlasts its bottleneck stage, and the text in lines that fit the
    /// chart (rows of their own under its stages).
    notes: Vec<Option<(String, Vec<String>)>>,
}

impl Lanes {
    /// The lanes of the report's ops.
    fn of(r: &Report) -> Lanes {
        let label_w = 230.0;
        Lanes {
            label_w,
            x0: label_w + 12.0,
            x1: W - 14.0,
            max: time_extent(r),
            op_row: 24.0,
            stage_row: 14.0,
            notes: (0..r.ops.len())
                .map(|i| {
                    critical::outlasts(r, i).map(|why| {
                        // 11 px text from x = 24 to the chart's right edge.
                        let chars = ((W - 24.0 - 8.0) / (11.0 * 0.6)) as usize;
                        let lines = wrap(&why, "↳ ", "  ", chars);
                        (why, lines)
                    })
                })
                .collect(),
        }
    }

    /// The x of cycle `c`.
    fn x(&self, c: f64) -> f64 {
        self.x0 + (self.x1 - self.x0) * c / self.max
    }

    /// The height of the rows of the op at `i`: its own, one per stage, one for why it
    /// outlasts its bottleneck stage, and a gap.
    fn op_h(&self, r: &Report, i: usize) -> f64 {
        let op = &r.ops[i];
        let note = self.notes[i].as_ref().map_or(0, |(_, l)| l.len()) as f64;
        self.op_row + self.stage_row * (op.stages.len() as f64 + note) + 6.0
    }
}

/// Writes the bands behind every other op's rows, from `top`.
fn write_bands(s: &mut String, r: &Report, g: &Lanes, top: f64) {
    let mut y = top;
    for i in 0..r.ops.len() {
        let h = g.op_h(r, i);
        if i % 2 == 0 {
            w!(
                s,
                "<rect x=\"0\" y=\"{y:.1}\" width=\"{W}\" height=\"{h:.1}\" fill=\"#f8fafc\"/>\n"
            );
        }
        y += h;
    }
}

/// Writes an op's rows from `y`: its name and bar with its cycles, then a row per stage.
fn write_op_rows(s: &mut String, r: &Report, op: &OpReport, g: &Lanes, colours: &Colours, y: f64) {
    let (bx0, bx1) = (g.x(op.start as f64), g.x(op.end.max(op.start) as f64));
    let bx1 = bx1.max(bx0 + 1.5);
    let name = op_name(op);
    let critical = op.exposed_cycles > 0 && r.schedule == "overlapped";
    let tooltip = op_tooltip(r, op, &name, critical);
    w!(
        s,
        "<g class=\"op{}\">\
         <text x=\"8\" y=\"{:.1}\" font-weight=\"600\">{}{}</text>\
         <rect class=\"op-bar\" x=\"{bx0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"16\" \
         rx=\"2\" fill=\"{OP_FILL}\"{}>{}</rect>",
        if critical { " critical" } else { "" },
        y + 17.0,
        tip(&name),
        esc(&fit(&name, g.label_w - 8.0, FONT)),
        y + 4.0,
        bx1 - bx0,
        if critical {
            format!(" stroke=\"{HOT}\" stroke-width=\"2\"")
        } else {
            String::new()
        },
        tip(&tooltip)
    );
    let text = format!(
        "{} cyc · {}",
        thousands(op.cycles),
        share(op.cycles, r.total_cycles)
    );
    let label = BarLabel {
        text: &text,
        size: FONT,
        colour: INK,
        bold: true,
        inside: true,
    };
    bar_label(s, &label, (bx0, bx1), y + 16.5);
    s.push('\n');
    let marked = op.bottleneck_stage();
    for (j, st) in op.stages.iter().enumerate() {
        let sy = y + g.op_row + g.stage_row * j as f64;
        stage_bar(
            s,
            op,
            st,
            marked == Some(j),
            colours.of(&st.level),
            sy,
            (g.x(op.start as f64), g.x((op.start + st.cycles) as f64)),
            g.label_w,
        );
    }
    s.push_str("</g>\n");
}

/// The tooltip of an op's bar: its cycles, bottleneck, bound, wait, layout and, in an
/// overlapped schedule, whether it is on the critical path.
fn op_tooltip(r: &Report, op: &OpReport, name: &str, critical: bool) -> String {
    let mut tooltip = format!(
        "{name}: cycles {} to {} ({} cycles, {} of the run)\nbottleneck: {}",
        thousands(op.start),
        thousands(op.end),
        thousands(op.cycles),
        share(op.cycles, r.total_cycles),
        if op.bottleneck.is_empty() {
            "–"
        } else {
            &op.bottleneck
        }
    );
    if op.bound_cycles > 0 {
        w!(
            tooltip,
            "\nbound: {} cycles ({})",
            thousands(op.bound_cycles),
            op.bound_resource
        );
    }
    if op.waited_on.is_some() {
        w!(tooltip, "\nwaited {}", critical::waited(r, op));
    }
    if let Some(layout) = &op.layout {
        w!(tooltip, "\nlayout: {layout}");
    }
    if r.schedule == "overlapped" {
        w!(
            tooltip,
            "\n{}",
            if critical {
                format!(
                    "on the critical path: {} cycles exposed",
                    thousands(op.exposed_cycles)
                )
            } else {
                "hidden behind other ops".to_string()
            }
        );
    }
    tooltip
}

/// Writes the time axis' caption under the chart: cycles, and 1 µs in cycles at the clock.
fn write_cycles_caption(s: &mut String, r: &Report, g: &Lanes, bottom: f64) {
    let clock = if r.clock_ghz.is_finite() && r.clock_ghz > 0.0 {
        format!(
            " · 1 µs = {} cycles at {}",
            crate::text::real(r.clock_ghz * 1000.0, 0),
            rows::clock(r)
        )
    } else {
        String::new()
    };
    w!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{MUTED}\">cycles{}</text>\n",
        (g.x0 + g.x1) / 2.0,
        bottom + 32.0,
        esc(&clock)
    );
}

/// A stage's row in the timeline: its name in the label column, a thin bar from `xs`.
#[allow(clippy::too_many_arguments)]
pub(super) fn stage_bar(
    s: &mut String,
    op: &OpReport,
    st: &StageReport,
    hot: bool,
    colour: &str,
    y: f64,
    (sx0, sx1): (f64, f64),
    label_w: f64,
) {
    let sx1 = sx1.max(sx0 + 1.5);
    let label = st.label();
    let tooltip = format!(
        "{} · {label}: {} cycles from cycle {}, {}, {} port{}, {} chunk{}, latency {}{}",
        op_name(op),
        thousands(st.cycles),
        thousands(op.start),
        human_bytes(st.bytes),
        st.ports,
        if st.ports == 1 { "" } else { "s" },
        st.chunks,
        if st.chunks == 1 { "" } else { "s" },
        st.latency,
        if hot { " · bottleneck" } else { "" }
    );
    let outline = if hot {
        format!(" stroke=\"{INK}\" stroke-width=\"1.5\"")
    } else {
        " fill-opacity=\"0.75\"".to_string()
    };
    w!(
        s,
        "<g class=\"stage{}\"><text x=\"24\" y=\"{:.1}\" font-size=\"11\" fill=\"{}\">{}</text>\
         <rect class=\"stage-bar\" x=\"{sx0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"9\" \
         fill=\"{colour}\"{outline}>{}</rect>",
        if hot { " bottleneck" } else { "" },
        y + 10.0,
        if hot { HOT } else { MUTED },
        esc(&fit(&label, label_w - 24.0, 11.0)),
        y + 2.0,
        sx1 - sx0,
        tip(&tooltip)
    );
    let text = if hot {
        format!("{} cyc ◀ bottleneck", thousands(st.cycles))
    } else {
        format!("{} cyc", thousands(st.cycles))
    };
    let label = BarLabel {
        text: &text,
        size: 10.5,
        colour: if hot { HOT } else { MUTED },
        bold: hot,
        inside: false,
    };
    bar_label(s, &label, (sx0, sx1), y + 10.0);
    s.push_str("</g>\n");
}

/// The last cycle any op or stage reaches (at least the run's total, at least 1): the
/// right end of the time axis of the timeline and resource charts.
pub(super) fn time_extent(r: &Report) -> f64 {
    r.ops
        .iter()
        .flat_map(|op| {
            std::iter::once(op.end.max(op.start))
                .chain(op.stages.iter().map(|st| op.start + st.cycles))
        })
        .fold(r.total_cycles, u64::max)
        .max(1) as f64
}
