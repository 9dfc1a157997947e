//! Turning errors from `arch` into diagnostics that point at the offending text.

use miette::{LabeledSpan, MietteDiagnostic, NamedSource, Report};
use mnsim_arch::LayoutError;
use std::ops::Range;

/// A diagnostic with a label over `span` of `source` (named `name`).
pub fn pointed(message: &str, name: &str, source: &str, span: Range<usize>, label: &str) -> Report {
    let start = span.start.min(source.len());
    let len = span
        .end
        .saturating_sub(span.start)
        .min(source.len() - start);
    let diag = MietteDiagnostic::new(message.to_string()).with_labels([LabeledSpan::new(
        Some(label.to_string()),
        start,
        len,
    )]);
    Report::new(diag).with_source_code(NamedSource::new(name, source.to_string()))
}

/// A layout error over its layout text. The message carries the byte offset too, so
/// it reads right when the terminal rendering is off.
pub fn layout(err: &LayoutError, text: &str) -> Report {
    pointed(
        &format!("error: {err}"),
        "layout",
        text,
        err.span.clone(),
        "here",
    )
}
