//! Where things are in the scenario file: its scanned nodes, to point errors at the
//! field or op they are about, with fallbacks when the scan failed.

use crate::scenario::spans::Node;
use crate::scenario::{Source, located};
use miette::Report;
use std::ops::Range;

/// Where things are: the scanned file, with fallbacks when the scan failed.
pub(super) struct Ctx<'a> {
    pub(super) src: &'a Source,
    pub(super) root: Option<Node>,
}

impl Ctx<'_> {
    pub(super) fn field(&self, name: &str) -> Option<&Node> {
        self.root.as_ref()?.field(name)
    }

    pub(super) fn op(&self, i: usize) -> Option<&Node> {
        self.field("program")?.item(i)
    }

    pub(super) fn op_field(&self, i: usize, f: &str) -> Option<&Node> {
        self.op(i)?.field(f)
    }

    /// The span of an op's field, or of the op.
    pub(super) fn op_span(&self, i: usize, f: &str) -> Option<Range<usize>> {
        self.op_field(i, f)
            .or_else(|| self.op(i))
            .map(|n| n.span.clone())
    }

    pub(super) fn tensor(&self, name: &str) -> Option<&Node> {
        self.field("tensors")?.get(name)
    }

    pub(super) fn err(&self, span: Option<Range<usize>>, message: &str, label: &str) -> Report {
        located(self.src, span, message, label)
    }
}
