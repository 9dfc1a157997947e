//! Scenario files (docs/scenarios.md): a machine, tensors, a program of ops and layout plans,
//! written in RON.
//!
//! [`load`] / [`parse`] read a file into a [`Scenario`] (syntax and type errors point at
//! `file:line:column`); [`resolve`] checks it against a machine for one plan and
//! produces a [`Resolved`] scenario: machine with knobs applied, shapes bound, every
//! layout bound to its tensor. Every error is a [`miette::Report`] whose message starts
//! `error: FILE:LINE:COLUMN:` and whose label marks the place in the file.
//!
//! The user-facing reference of the format is `docs/scenarios.md`.

mod algorithm;
mod buffers;
mod dups;
mod knob_sets;
mod op;
mod op_fields;
mod place;
pub mod pretty;
pub mod print;
mod resolve;
mod shorthand;
pub mod spans;
#[cfg(test)]
mod tests;
mod text;

pub use crate::program::{Init, Part, Place, ReduceOp};
pub use algorithm::AlgorithmName;
pub use buffers::Buffers;
pub use knob_sets::{knob_sets, machine_with_overrides};
pub use op::{KernelOp, Op};
pub use op_fields::{OpClass, plan_variable};
pub use place::{Placed, places_of, runs_of};
pub use resolve::{LowerError, Resolved, machine, plans_to_run, resolve};
pub use shorthand::Shorthand;
pub use text::{BinaryOp, OpText, UnaryOp};

use miette::{LabeledSpan, MietteDiagnostic, Report, miette};
use mnsim_arch::DType;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

// ---------------------------------------------------------------------------
// The format
// ---------------------------------------------------------------------------

/// A scenario: what to run, on which machine, under which layout plans.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A name for reports.
    pub name: String,
    /// Free text for people.
    #[serde(default)]
    pub description: Option<String>,
    /// The machine: a preset or a machine RON file.
    pub machine: MachineRef,
    /// What-if knobs applied to the machine (`"links.L1B.distribute.parent": 1024.0`).
    #[serde(default)]
    pub overrides: BTreeMap<String, f64>,
    /// Functional (real values) or timing (counts only). Default: timing.
    #[serde(default)]
    pub mode: Mode,
    /// Sizes of named dynamic dimensions (`"batch": 48`).
    #[serde(default)]
    pub bind: BTreeMap<String, u64>,
    /// Every tensor the program names.
    pub tensors: BTreeMap<String, TensorDecl>,
    /// The ops, in order.
    pub program: Vec<Op>,
    /// Where ops sit in a whole model (layer, part), as runs of consecutive ops: what
    /// the StableHLO import tells (docs/import.md); nothing in a run depends on it.
    #[serde(default)]
    pub places: Vec<Placed>,
    /// Layout plans: plan name → variable → layout. `$var` in a layout refers to them.
    #[serde(default)]
    pub plans: BTreeMap<String, BTreeMap<String, PlanValue>>,
    /// In functional mode, compare every stored output with a host reference.
    #[serde(default)]
    pub verify: bool,
    /// Complete partial sums automatically: after a kernel whose output is partial over
    /// some levels (a split contraction), insert a Reduce (add) over each of them — what
    /// a planner does. Off by default: then consuming a partial tensor is an error and
    /// the program says where it reduces.
    #[serde(default)]
    pub auto_reduce: bool,
    /// How ops are placed in time: `Overlapped` (the default: transfers overlap compute)
    /// or `Sequential` (each op starts when the previous one ends).
    #[serde(default)]
    pub schedule: Schedule,
}

pub use crate::program::Schedule;

impl Scenario {
    /// Inserts `ops` into the program, each before the op at its index in the program as
    /// it is now (several before one op keep their order). An op inserted before an op
    /// of a run of `places` joins that run.
    pub fn insert_ops(&mut self, ops: Vec<(usize, Op)>) {
        let mut ops = ops;
        // From the last position back, so that earlier indices stay valid; a stable
        // sort keeps the order of several before one op.
        ops.sort_by_key(|(at, _)| *at);
        for (at, op) in ops.into_iter().rev() {
            let at = at.min(self.program.len());
            self.program.insert(at, op);
            for run in &mut self.places {
                if at < run.first {
                    run.first += 1;
                    run.last += 1;
                } else if at <= run.last {
                    run.last += 1;
                }
            }
        }
    }
}

/// Which machine a scenario runs on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MachineRef {
    /// A built-in machine (`mnsim machines` lists them).
    Preset(String),
    /// A machine RON file; a relative path is relative to the scenario file's folder.
    File(String),
}

/// How a scenario runs (defined by the engine, which runs it).
pub use crate::program::Mode;

/// A tensor: element type, XLA shape (with DRAM layout and dynamic dimensions), and
/// how its DRAM copy starts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorDecl {
    /// Element type; must match the shape's.
    pub dtype: DType,
    /// XLA or StableHLO shape text: `"f16[<=64,1024]{0,1}"`.
    pub shape: String,
    /// Initial DRAM contents; `None` for a tensor the program computes.
    #[serde(default)]
    pub init: Option<Init>,
}

/// The value of a plan variable: a layout, or `Any` (left to the planner).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanValue {
    /// TensorLayout text.
    Layout(String),
    /// The planner picks (`mnsim plan`).
    Any,
}

impl Serialize for PlanValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PlanValue::Layout(t) => s.serialize_str(t),
            PlanValue::Any => s.serialize_unit_variant("PlanValue", 1, "Any"),
        }
    }
}

impl<'de> Deserialize<'de> for PlanValue {
    /// A string is a layout (the string `"Any"` is `Any` too); a bare identifier is
    /// `Any` (that it is spelt `Any` is checked by [`parse`], which sees the text).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PlanValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a layout string or `Any`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PlanValue, E> {
                Ok(if v.trim() == "Any" {
                    PlanValue::Any
                } else {
                    PlanValue::Layout(v.to_string())
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<PlanValue, E> {
                Ok(PlanValue::Any)
            }
        }
        d.deserialize_any(V)
    }
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

/// A scenario file's name and text, kept so that later errors can point into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The file's path as given (used in messages and to find `File(...)` machines).
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// The UTF-8 byte order mark.
const BOM: char = '\u{feff}';

/// Reads and parses a scenario file (RON). [`crate::load::load`] takes any input file:
/// a scenario, a oneDNN graph or StableHLO.
pub fn load(path: &Path) -> Result<(Scenario, Source), Report> {
    let (name, text) = read(path)?;
    let sc = parse(&text, &name)?;
    Ok((sc, Source { path: name, text }))
}

/// Reads an input file as text: its name as given and its text without a UTF-8 byte
/// order mark (some editors write one: without it, every position in the file is what
/// an editor shows).
pub fn read(path: &Path) -> Result<(String, String), Report> {
    let name = path.display().to_string();
    let text = crate::input::read_text(path)
        .map_err(|e| miette!("error: cannot read scenario {name}: {e}"))?;
    let text = match text.strip_prefix(BOM) {
        Some(rest) => rest.to_string(),
        None => text,
    };
    Ok((name, text))
}

/// Parses scenario text; `name` is the file name used in messages.
pub fn parse(text: &str, name: &str) -> Result<Scenario, Report> {
    if let Some(rest) = text.strip_prefix(BOM) {
        return parse(rest, name);
    }
    let opts =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let sc: Scenario = opts.from_str(text).map_err(|e| {
        let start = offset_of(text, e.span.start.line, e.span.start.col);
        let end = offset_of(text, e.span.end.line, e.span.end.col).max(start);
        let src = Source {
            path: name.to_string(),
            text: text.to_string(),
        };
        located(&src, Some(start..end), &ron_message(&e.code), "here")
    })?;
    let Some(root) = spans::scan(text) else {
        return Ok(sc);
    };
    let src = Source {
        path: name.to_string(),
        text: text.to_string(),
    };
    dups::check(&root, &src)?;
    check_any_spelling(&sc, &root, text, name)?;
    Ok(sc)
}

/// A bare identifier as a plan value deserialises as `Any` whatever it says; the
/// text tells whether it really is `Any`.
fn check_any_spelling(
    sc: &Scenario,
    root: &spans::Node,
    text: &str,
    name: &str,
) -> Result<(), Report> {
    for (plan, vars) in &sc.plans {
        for (var, value) in vars {
            if *value != PlanValue::Any {
                continue;
            }
            let Some(node) = root
                .field("plans")
                .and_then(|p| p.get(plan))
                .and_then(|p| p.get(var))
            else {
                continue;
            };
            if node.ident() == Some("Any") || node.str_value().is_some() {
                continue;
            }
            let found = text.get(node.span.clone()).unwrap_or("?");
            let src = Source {
                path: name.to_string(),
                text: text.to_string(),
            };
            return Err(located(
                &src,
                Some(node.span.clone()),
                &format!(
                    "plan `{plan}`, variable `{var}`: expected a layout string or `Any`, found `{found}`"
                ),
                "expected a layout string or `Any`",
            ));
        }
    }
    Ok(())
}

/// RON's message, with a "did you mean" for a misspelt field or variant.
fn ron_message(code: &ron::Error) -> String {
    let base = code.to_string();
    let near = match code {
        ron::Error::NoSuchStructField {
            expected, found, ..
        }
        | ron::Error::NoSuchEnumVariant {
            expected, found, ..
        } => closest(found, expected),
        _ => None,
    };
    match near {
        Some(n) => format!("{base}; did you mean `{n}`?"),
        None => base,
    }
}

/// The candidate closest to `name` by edit distance, if it is close.
pub(crate) fn closest<'a, S: AsRef<str>>(name: &str, candidates: &'a [S]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| {
            (
                edit_distance(&name.to_lowercase(), &c.as_ref().to_lowercase()),
                c,
            )
        })
        .filter(|(d, c)| *d <= (c.as_ref().len().max(name.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_ref())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Byte offset of 1-based `line` and `col` (in characters), clamped to the text.
pub(crate) fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut start = 0usize;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(k) => start += k + 1,
            None => return text.len(),
        }
    }
    let line_text = &text[start..];
    let line_end = line_text.find('\n').unwrap_or(line_text.len());
    line_text[..line_end]
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(start + line_end, |(k, _)| start + k)
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before[before.rfind('\n').map_or(0, |k| k + 1)..]
        .chars()
        .count()
        + 1;
    (line, col)
}

/// An error met while running the scenario in `src`, pointed at the op (index in the
/// program) or the tensor declaration it concerns: `error: FILE:LINE:COL: message`.
pub fn run_error(src: &Source, op: Option<usize>, tensor: Option<&str>, message: &str) -> Report {
    let root = spans::scan(&src.text);
    let field = |name: &str| root.as_ref().and_then(|r| r.field(name));
    let (span, label) = match (op, tensor) {
        (Some(i), _) => (
            field("program")
                .and_then(|p| p.item(i))
                .map(|n| n.span.clone()),
            "this op",
        ),
        (None, Some(t)) => {
            let decl = field("tensors").and_then(|ts| ts.get(t));
            let shape = decl.and_then(|d| d.field("shape")).or(decl);
            (shape.map(|n| n.span.clone()), "this tensor")
        }
        (None, None) => (None, "here"),
    };
    located(src, span, message, label)
}

/// A diagnostic located in a scenario file: `error: FILE:LINE:COL: message`, with a
/// label over `span` (or just `error: FILE: message` without one).
pub fn located(src: &Source, span: Option<Range<usize>>, message: &str, label: &str) -> Report {
    located_with(src, span, message, label, &[])
}

/// Like [`located`], with more labels in the same file.
pub fn located_with(
    src: &Source,
    span: Option<Range<usize>>,
    message: &str,
    label: &str,
    more: &[(Range<usize>, String)],
) -> Report {
    let text = &src.text;
    // Inside the text and on character boundaries.
    let clamp = |r: &Range<usize>| {
        let mut s = r.start.min(text.len());
        while !text.is_char_boundary(s) {
            s -= 1;
        }
        let mut e = r.end.clamp(s, text.len());
        while !text.is_char_boundary(e) {
            e += 1;
        }
        // Give an empty span one character, so it underlines something.
        let e = if e == s {
            text[s..].chars().next().map_or(s, |c| s + c.len_utf8())
        } else {
            e
        };
        (s, e - s)
    };
    let Some(span) = span else {
        return miette!("error: {}: {message}", src.path);
    };
    let (line, col) = line_col(text, span.start);
    let (s, len) = clamp(&span);
    let mut labels = vec![LabeledSpan::new_primary_with_span(
        Some(label.to_string()),
        (s, len),
    )];
    for (r, l) in more {
        let (s, len) = clamp(r);
        labels.push(LabeledSpan::new_with_span(Some(l.clone()), (s, len)));
    }
    let diag = MietteDiagnostic::new(format!("error: {}:{line}:{col}: {message}", src.path))
        .with_labels(labels);
    Report::new(diag).with_source_code(crate::diag::CharColumns::new(&src.path, text))
}

// ---------------------------------------------------------------------------
// Command-line helpers
// ---------------------------------------------------------------------------

/// Parses `--bind NAME=SIZE` arguments (`batch=48`, `seq=4_096`).
pub fn parse_binds(args: &[String]) -> Result<BTreeMap<String, u64>, Report> {
    let mut out = BTreeMap::new();
    for a in args {
        let bad =
            || miette!("error: --bind {a}: expected NAME=SIZE with a whole number, e.g. batch=48");
        let (k, v) = a.split_once('=').ok_or_else(bad)?;
        let k = k.trim();
        let valid_name = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            return Err(bad());
        }
        let digits: String = v.trim().chars().filter(|&c| c != '_').collect();
        let v: u64 = digits.parse().map_err(|_| bad())?;
        out.insert(k.to_string(), v);
    }
    Ok(out)
}

/// Parses `--set KNOB=VALUE` arguments.
pub fn parse_sets(args: &[String]) -> Result<Vec<(String, f64)>, Report> {
    args.iter()
        .map(|a| mnsim_arch::parse_assignment(a).map_err(|e| miette!("error: --set {a}: {e}")))
        .collect()
}
