//! Chart primitives shared by the SVG charts: level colours, text widths, the `<svg>`
//! opening, tooltips, ticks, grid lines and bar labels.

use super::page::esc;
use super::{FONT, GRID, INK, MUTED, PALETTE, W};
use crate::model::Report;
use crate::text::{nice_step, truncate};
use std::fmt::Write;

/// The colour of `level`: by its position in the report's `levels`, then among levels that only
/// appear in stages.
pub(super) struct Colours(Vec<String>);

impl Colours {
    pub(super) fn of_report(r: &Report) -> Colours {
        let mut names: Vec<String> = r.levels.iter().map(|l| l.level.clone()).collect();
        for st in r.ops.iter().flat_map(|op| &op.stages) {
            if !names.contains(&st.level) {
                names.push(st.level.clone());
            }
        }
        Colours(names)
    }

    pub(super) fn of(&self, level: &str) -> &'static str {
        let i = self.0.iter().position(|l| l == level).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    }
}

/// Estimated width in px of `text` at `px` font size (proportional fonts average about 0.6 em
/// per character for digits and short words).
pub(super) fn text_w(text: &str, px: f64) -> f64 {
    text.chars().count() as f64 * px * 0.6
}

/// `text` cut to fit `px` pixels at font size `size`.
pub(super) fn fit(text: &str, px: f64, size: f64) -> String {
    truncate(text, ((px / (size * 0.6)).floor() as usize).max(2))
}

/// Opening tag of a chart: `<svg role="img">` with its `<title>` and a description.
pub(super) fn svg_open(s: &mut String, id: &str, height: f64, title: &str, desc: &str) {
    w!(
        s,
        "<svg id=\"{id}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" width=\"{W}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {W} {height:.0}\" font-size=\"{FONT}\" fill=\"{INK}\">\n\
         <title id=\"{id}-title\">{}</title>\n<desc id=\"{id}-desc\">{}</desc>\n",
        esc(title),
        esc(desc)
    );
}

/// A `<title>` tooltip element.
pub(super) fn tip(text: &str) -> String {
    format!("<title>{}</title>", esc(text))
}

/// Axis ticks from 0 to `max` (inclusive), about `target` of them.
pub(super) fn ticks(max: f64, target: f64) -> Vec<f64> {
    let step = nice_step(max, target);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|&t| t <= max + step * 1e-9)
        .collect()
}

/// A cycle count for an axis: `0`, `750`, `1.5k`, `20k`, `1.2M`.
pub(super) fn tick_label(v: f64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    for (scale, unit) in UNITS {
        if v >= scale {
            let x = v / scale;
            let t = format!("{x:.1}");
            let t = t.strip_suffix(".0").unwrap_or(&t);
            return format!("{t}{unit}");
        }
    }
    format!("{v:.0}")
}

/// Vertical grid lines with tick labels above (`top`) and below (`bottom`) them.
pub(super) fn grid(s: &mut String, x: impl Fn(f64) -> f64, tick: &[f64], top: f64, bottom: f64) {
    s.push_str("<g class=\"axis\">\n");
    for &t in tick {
        let xt = x(t);
        w!(
            s,
            "<line x1=\"{xt:.1}\" y1=\"{top:.1}\" x2=\"{xt:.1}\" y2=\"{bottom:.1}\" \
             stroke=\"{GRID}\"/>\
             <text x=\"{xt:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{MUTED}\" \
             font-size=\"11\">{}</text>\
             <text x=\"{xt:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{MUTED}\" \
             font-size=\"11\">{}</text>\n",
            top - 5.0,
            tick_label(t),
            bottom + 14.0,
            tick_label(t)
        );
    }
    s.push_str("</g>\n");
}

/// The label of a bar.
pub(super) struct BarLabel<'a> {
    pub(super) text: &'a str,
    pub(super) size: f64,
    pub(super) colour: &'a str,
    pub(super) bold: bool,
    /// Whether the label may go inside the bar (in white), for bars tall enough to hold it.
    pub(super) inside: bool,
}

/// `l` beside a bar from `x0` to `x1`, baseline `y`: right of the bar if it fits in the chart,
/// else inside it if allowed and the bar is wide enough, else left of it.
pub(super) fn bar_label(s: &mut String, l: &BarLabel, (x0, x1): (f64, f64), y: f64) {
    let tw = text_w(l.text, l.size);
    let weight = if l.bold { " font-weight=\"600\"" } else { "" };
    let (x, anchor, colour) = if x1 + 6.0 + tw <= W {
        (x1 + 6.0, "start", l.colour)
    } else if l.inside && x1 - x0 >= tw + 12.0 {
        (x1 - 6.0, "end", "#fff")
    } else {
        (x0 - 6.0, "end", l.colour)
    };
    w!(
        s,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{}\" fill=\"{colour}\" \
         text-anchor=\"{anchor}\"{weight}>{}</text>",
        l.size,
        esc(l.text)
    );
}

/// Plans (or series) whose largest value is more than this many times their smallest are
/// drawn on a logarithmic scale.
pub(super) const LOG_RATIO: f64 = 20.0;

/// Whether the largest of `values` is more than [`LOG_RATIO`] times the smallest positive one.
pub(super) fn spans_orders(values: &[u64]) -> bool {
    let max = values.iter().copied().max().unwrap_or(0).max(1) as f64;
    let min = values.iter().copied().filter(|&v| v > 0).min().unwrap_or(1) as f64;
    max / min > LOG_RATIO
}

/// A horizontal value axis from `x0` to `x1`: linear from 0 to `max`, or logarithmic
/// (base 10) between the decades around the values, where they span orders of magnitude.
pub(super) struct Scale {
    x0: f64,
    x1: f64,
    /// Logarithmic: `lo` and `hi` are the exponents of the axis' ends; linear: 0 and `max`.
    log: bool,
    lo: f64,
    hi: f64,
}

impl Scale {
    /// The axis for positive values `values` (zeros ignored by the log scale): log when the
    /// largest is more than [`LOG_RATIO`] times the smallest.
    pub(super) fn of(values: &[u64], x0: f64, x1: f64) -> Scale {
        Scale::with(values, x0, x1, spans_orders(values))
    }

    /// The axis for `values`, logarithmic or not as `log` says.
    pub(super) fn with(values: &[u64], x0: f64, x1: f64, log: bool) -> Scale {
        let max = values.iter().copied().max().unwrap_or(0).max(1) as f64;
        let min = values.iter().copied().filter(|&v| v > 0).min().unwrap_or(1) as f64;
        if log {
            let lo = min.log10().floor();
            let hi = max.log10().ceil().max(lo + 1.0);
            Scale {
                x0,
                x1,
                log: true,
                lo,
                hi,
            }
        } else {
            Scale {
                x0,
                x1,
                log: false,
                lo: 0.0,
                hi: max,
            }
        }
    }

    /// Whether the axis is logarithmic.
    pub(super) fn is_log(&self) -> bool {
        self.log
    }

    /// The x of value `v` (on a log axis, values below its left end sit at it).
    pub(super) fn x(&self, v: f64) -> f64 {
        let f = if self.log {
            ((v.max(1.0).log10() - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
        } else {
            v / self.hi
        };
        self.x0 + (self.x1 - self.x0) * f
    }

    /// The grid's values: about `target` from 0 to the end (linear), or every decade
    /// with 2× and 5× between them when there are few (log).
    pub(super) fn ticks(&self, target: f64) -> Vec<f64> {
        if !self.log {
            return ticks(self.hi, target);
        }
        let decades = (self.hi - self.lo) as i32;
        let mut out = Vec::new();
        for e in self.lo as i32..=self.hi as i32 {
            let d = 10f64.powi(e);
            out.push(d);
            if decades <= 3 && e < self.hi as i32 {
                out.extend([2.0 * d, 5.0 * d]);
            }
        }
        out
    }

    /// A note for the chart's caption: `log scale` or nothing.
    pub(super) fn note(&self) -> &'static str {
        if self.log {
            "log scale: each grid line is a power of ten (or 2× and 5× one)"
        } else {
            ""
        }
    }
}
