//! `mnsim plan --write NAME`: adds a plan to the scenario file by inserting text after
//! the last entry of its `plans` map, so that everything else in the file (comments,
//! order, spacing) stays as written. The new text is parsed and the new plan resolved
//! before the file is replaced, and the file is replaced atomically (written beside it,
//! then renamed over it).

use crate::scenario::spans::{self, Kind};
use miette::{Report, miette};
use std::path::Path;

/// Why a plan cannot be added to a scenario's text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddPlanError {
    #[error("the scenario file could not be scanned")]
    Unscanned,
    #[error("the scenario has no `plans` map: add `plans: {{}},` first")]
    NoPlans,
    #[error("`plans` is not a map")]
    NotAMap,
    #[error("the scenario already has a plan `{0}`")]
    Exists(String),
    #[error("the scenario has no `program` list")]
    NoProgram,
    #[error("the program has no op {0} to insert before")]
    NoOp(usize),
}

/// An op's text and the index of the op it goes before.
pub type OpText = (usize, String);

/// `text` with `ops` (op text, each before the op at its index in the program as
/// written; several before one op in their order) inserted into `program`, each on a
/// line of its own with the indentation of the op it precedes.
pub fn add_ops(text: &str, ops: &[OpText]) -> Result<String, AddPlanError> {
    if ops.is_empty() {
        return Ok(text.to_string());
    }
    let root = spans::scan(text).ok_or(AddPlanError::Unscanned)?;
    let program = root.field("program").ok_or(AddPlanError::NoProgram)?;
    let mut at: Vec<(usize, String)> = Vec::with_capacity(ops.len());
    for (before, op) in ops {
        let item = program.item(*before).ok_or(AddPlanError::NoOp(*before))?;
        let start = item.span.start;
        let lead = &text[line_start(text, start)..start];
        // On a line of its own when the op starts its line; else before it on its line.
        let sep = if lead.trim().is_empty() {
            format!("\n{lead}")
        } else {
            " ".to_string()
        };
        at.push((start, format!("{op},{sep}")));
    }
    Ok(splice(text, at))
}

/// A field to add to an op of the program: the op's index in the program as written, and
/// the field's text (`algorithm: "tree"`).
pub type OpField = (usize, String);

/// `text` with `fields` added to the ops of `program` they name, each last in its op's
/// parentheses (an op that has the field already is refused by the check of the new text:
/// a field twice).
pub fn add_fields(text: &str, fields: &[OpField]) -> Result<String, AddPlanError> {
    if fields.is_empty() {
        return Ok(text.to_string());
    }
    let root = spans::scan(text).ok_or(AddPlanError::Unscanned)?;
    let program = root.field("program").ok_or(AddPlanError::NoProgram)?;
    let mut at: Vec<(usize, String)> = Vec::with_capacity(fields.len());
    for (op, field) in fields {
        let item = program.item(*op).ok_or(AddPlanError::NoOp(*op))?;
        let body = &text[item.span.clone()];
        let close = body.rfind(')').ok_or(AddPlanError::Unscanned)?;
        let inside = body[..close].trim_end();
        let sep = if inside.ends_with('(') {
            ""
        } else if inside.ends_with(',') {
            " "
        } else {
            ", "
        };
        at.push((item.span.start + inside.len(), format!("{sep}{field}")));
    }
    Ok(splice(text, at))
}

/// `text` with each string of `at` inserted at its byte position (several at one position
/// in their order in `at`).
fn splice(text: &str, mut at: Vec<(usize, String)>) -> String {
    at.sort_by_key(|(p, _)| *p);
    let mut out =
        String::with_capacity(text.len() + at.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut from = 0;
    for (p, s) in &at {
        out.push_str(&text[from..*p]);
        out.push_str(s);
        from = *p;
    }
    out.push_str(&text[from..]);
    out
}

/// Where the line holding byte `at` of `text` starts.
fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// `text` with plan `name` (variables → layout text, in order) added to `plans`.
pub fn add_plan(text: &str, name: &str, vars: &[(String, String)]) -> Result<String, AddPlanError> {
    let root = spans::scan(text).ok_or(AddPlanError::Unscanned)?;
    let plans = root.field("plans").ok_or(AddPlanError::NoPlans)?;
    let Kind::Map(entries) = &plans.kind else {
        return Err(AddPlanError::NotAMap);
    };
    if entries.iter().any(|(k, _)| k.str_value() == Some(name)) {
        return Err(AddPlanError::Exists(name.to_string()));
    }
    let indent_of = |at: usize| -> String {
        text[line_start(text, at)..at]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect()
    };
    let (at, indent, comma) = match entries.last() {
        Some((k, v)) => {
            let indent = indent_of(k.span.start);
            let mut at = v.span.end;
            let after = &text[at..];
            let trimmed = after.trim_start_matches([' ', '\t']);
            let comma = trimmed.starts_with(',');
            if comma {
                at += after.len() - trimmed.len() + 1;
            }
            (at, indent, !comma)
        }
        None => {
            let open = plans.span.start + 1;
            let indent = format!("{}    ", indent_of(plans.span.start));
            (open, indent, false)
        }
    };
    let body: Vec<String> = vars
        .iter()
        .map(|(k, v)| format!("{indent}    {k:?}: {v:?},"))
        .collect();
    let insert = format!(
        "{}\n{indent}{name:?}: {{\n{}\n{indent}}},",
        if comma { "," } else { "" },
        body.join("\n")
    );
    let mut out = String::with_capacity(text.len() + insert.len());
    out.push_str(&text[..at]);
    out.push_str(&insert);
    out.push_str(&text[at..]);
    Ok(out)
}

/// Where `plan --write` wrote, and what to tell the user about it.
#[derive(Debug)]
pub struct WriteBack {
    /// The file written (a symlink's target when the scenario path is a link).
    pub path: std::path::PathBuf,
    /// A note for stderr (a scenario written beside a graph, hard links left behind).
    pub note: Option<String>,
}

/// Adds plan `name` (variables → layouts) to the scenario file at `path`, whose text was
/// `read` when the scenario was loaded. `check` must accept the new text (it parses it and
/// resolves the new plan). The file is replaced atomically under its lock
/// (`mnsim_reports::atomic::update`): if another writer changed it meanwhile, the plan is
/// added to the text as it is now, so both writers' plans land.
///
/// `fields` (see [`add_fields`]) are added to the program's ops first, then `ops` (see
/// [`add_ops`]) inserted; both are placed by index, so a file another writer changed
/// meanwhile is then refused rather than edited.
///
/// A oneDNN Graph JSON file (`imported`) is never rewritten: the scenario, with the plan
/// added, is written beside it as `G.ron`, and an existing `G.ron` is not overwritten
/// (`plan G.ron --write NAME` adds to it).
pub fn write_back(
    path: &Path,
    read: &str,
    imported: bool,
    name: &str,
    (vars, ops, fields): (&[(String, String)], &[OpText], &[OpField]),
    check: &dyn Fn(&str, &str) -> Result<(), Report>,
) -> Result<WriteBack, Report> {
    let make = |base: &str, shown: &str| -> Result<String, Report> {
        let text = add_fields(base, fields)
            .and_then(|t| add_ops(&t, ops))
            .and_then(|t| add_plan(&t, name, vars))
            .map_err(|e| miette!("error: {shown}: {e}"))?;
        check(&text, shown)?;
        Ok(text)
    };
    if imported {
        let ron = path.with_extension("ron");
        let shown = ron.display().to_string();
        let text = make(read, &shown)?;
        let w = mnsim_reports::atomic::update(&ron, |cur| match cur {
            Some(_) => Err(format!(
                "{shown} exists: --write on a graph writes the scenario beside it and never \
                 overwrites one; add the plan to it with `mnsim plan {shown} --write {name}`, \
                 or remove it"
            )),
            None => Ok(text.into_bytes()),
        })
        .map_err(|e| miette!("error: cannot write {shown}: {e}"))?;
        return Ok(WriteBack {
            note: Some(format!(
                "{} is a graph and stays as it is: the scenario with plan `{name}` is {}",
                path.display(),
                w.path.display()
            )),
            path: w.path,
        });
    }
    let shown = path.display().to_string();
    let prepared = make(read, &shown)?;
    let w = mnsim_reports::atomic::update(path, |cur| {
        let cur = cur.ok_or("the file was removed while planning")?;
        let cur = std::str::from_utf8(cur).map_err(|_| "the file is no longer UTF-8 text")?;
        if cur == read {
            Ok(prepared.into_bytes())
        } else if !ops.is_empty() || !fields.is_empty() {
            Err(
                "it changed while planning, and the plan's Relayouts and algorithms go \
                 before and into ops by their place in the program: plan it again"
                    .to_string(),
            )
        } else {
            // Changed since it was read (another `plan --write`): add to it as it is now.
            make(cur, &shown)
                .map(String::into_bytes)
                .map_err(|e| e.to_string())
        }
    })
    .map_err(|e| miette!("error: cannot write {shown}: {e}"))?;
    let note = (w.other_links > 0).then(|| {
        format!(
            "{} had {} other hard link(s): they keep the old text (the file is replaced, \
             not rewritten in place)",
            w.path.display(),
            w.other_links
        )
    });
    Ok(WriteBack { path: w.path, note })
}
