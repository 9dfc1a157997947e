//! Turning errors from `arch` into diagnostics that point at the offending text.

use miette::{
    LabeledSpan, MietteDiagnostic, MietteError, MietteSpanContents, Report, SourceCode, SourceSpan,
    SpanContents,
};
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
    Report::new(diag).with_source_code(CharColumns::new(name, source))
}

/// A named source text whose places count columns in characters, as editors and the
/// messages' `FILE:LINE:COLUMN` do (miette's own source counts bytes, so the two would
/// disagree on any line with a non-ASCII character before the place).
#[derive(Debug)]
pub struct CharColumns {
    name: String,
    text: String,
}

impl CharColumns {
    pub fn new(name: &str, text: &str) -> CharColumns {
        CharColumns {
            name: name.to_string(),
            text: text.to_string(),
        }
    }
}

impl SourceCode for CharColumns {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let c = self.text.read_span(span, before, after)?;
        let start = c.span().offset();
        let column = self.text.get(..start).map_or(c.column(), |head| {
            head[head.rfind('\n').map_or(0, |k| k + 1)..]
                .chars()
                .count()
        });
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            c.data(),
            *c.span(),
            c.line(),
            column,
            c.line_count(),
        )))
    }
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
