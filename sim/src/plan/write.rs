//! `mnsim plan --write NAME`: adds a plan to the scenario file by inserting text after
//! the last entry of its `plans` map, so that everything else in the file (comments,
//! order, spacing) stays as written. The new text is parsed and the new plan resolved
//! before the file is replaced, and the file is replaced atomically (written beside it,
//! then renamed over it).

use crate::scenario::spans::{self, Kind};
use std::path::Path;

/// `text` with plan `name` (variables → layout text, in order) added to `plans`.
pub fn add_plan(text: &str, name: &str, vars: &[(String, String)]) -> Result<String, String> {
    let root = spans::scan(text).ok_or("the scenario file could not be scanned")?;
    let plans = root
        .field("plans")
        .ok_or("the scenario has no `plans` map: add `plans: {},` first")?;
    let Kind::Map(entries) = &plans.kind else {
        return Err("`plans` is not a map".into());
    };
    if entries.iter().any(|(k, _)| k.str_value() == Some(name)) {
        return Err(format!("the scenario already has a plan `{name}`"));
    }
    let line_start = |at: usize| text[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent_of = |at: usize| -> String {
        text[line_start(at)..at]
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

/// Replaces the file at `path` with `text` atomically.
pub fn replace_file(path: &Path, text: &str) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file = path
        .file_name()
        .ok_or_else(|| format!("{} is not a file", path.display()))?;
    let tmp = dir.join(format!(".{}.mnsim-write", file.to_string_lossy()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot replace {}: {e}", path.display())
    })
}
