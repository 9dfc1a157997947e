//! Machine presets and loading machines from RON text.

use crate::machine::{Machine, MachineError};

/// Names of the built-in machines, in the order `mnsim machines` lists them.
pub const PRESETS: &[&str] = &[
    "mncore2",
    "mncore1",
    "toy4",
    "mn3_node",
    "mn3_zone",
    "mncore2_server",
];

/// The RON text of a preset, as shipped.
pub fn preset_source(name: &str) -> Option<&'static str> {
    match name {
        "mncore2" => Some(include_str!("../presets/mncore2.ron")),
        "mncore1" => Some(include_str!("../presets/mncore1.ron")),
        "toy4" => Some(include_str!("../presets/toy4.ron")),
        "mn3_node" => Some(include_str!("../presets/mn3_node.ron")),
        "mn3_zone" => Some(include_str!("../presets/mn3_zone.ron")),
        "mncore2_server" => Some(include_str!("../presets/mncore2_server.ron")),
        _ => None,
    }
}

/// A built-in machine by name (see [`PRESETS`]), parsed and validated.
pub fn preset(name: &str) -> Result<Machine, MachineError> {
    let text = preset_source(name).ok_or_else(|| {
        let mut msg = format!("unknown machine '{name}'");
        let near = closest(name, PRESETS);
        if !near.is_empty() {
            msg.push_str(&format!("; did you mean {}?", either(&near, '\'')));
        }
        msg.push_str(&format!(" (presets: {})", PRESETS.join(", ")));
        MachineError::new(msg)
    })?;
    from_ron(text)
}

/// Parses a machine from RON text and validates it. Syntax errors carry the line and
/// column; validation errors carry them too when the offending field can be found in
/// the text. `Option` fields may be written without `Some(..)`.
pub fn from_ron(text: &str) -> Result<Machine, MachineError> {
    let opts =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let m: Machine = opts.from_str(text).map_err(|e| {
        MachineError::new(ron_message(&e.code)).with_position(e.span.start.line, e.span.start.col)
    })?;
    m.validate()
        .map_err(|e| match e.path.as_deref().and_then(|p| locate(text, p)) {
            Some((l, c)) => e.with_position(l, c),
            None => e,
        })?;
    Ok(m)
}

/// The candidates closest to `name` (case-insensitive edit distance), if reasonably
/// close: all those at the smallest distance, at most 3.
fn closest<'a>(name: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(usize, &'a str)> = candidates
        .iter()
        .map(|c| (strsim::levenshtein(&lower, &c.to_lowercase()), *c))
        .filter(|&(d, c)| d <= (c.len().max(name.len()) / 3).max(2))
        .collect();
    scored.sort_by_key(|&(d, _)| d);
    let best = scored.first().map_or(0, |&(d, _)| d);
    scored
        .into_iter()
        .take_while(|&(d, _)| d == best)
        .take(3)
        .map(|(_, c)| c)
        .collect()
}

/// `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'` (with the given quote).
fn either(items: &[&str], q: char) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("{q}{i}{q}")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, init)) => format!("{} or {last}", init.join(", ")),
    }
}

/// RON's message, with a "did you mean" for a misspelt field or variant.
fn ron_message(code: &ron::Error) -> String {
    let base = code.to_string();
    let hint = match code {
        ron::Error::NoSuchStructField {
            expected, found, ..
        }
        | ron::Error::NoSuchEnumVariant {
            expected, found, ..
        } => closest(found, expected),
        _ => Vec::new(),
    };
    if hint.is_empty() {
        base
    } else {
        format!("{base}; did you mean {}?", either(&hint, '`'))
    }
}

/// Best-effort position of a dotted field path in RON text: each path segment is looked
/// for, as a bare or quoted word outside comments, after the previous one.
fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let masked = mask_comments(text);
    let bytes = masked.as_bytes();
    let mut from = 0usize;
    let mut found = None;
    for seg in path.split('.') {
        if seg.is_empty() {
            continue;
        }
        let mut hit = None;
        let mut start = from;
        while let Some(off) = masked.get(start..).and_then(|s| s.find(seg)) {
            let at = start + off;
            let end = at + seg.len();
            let word_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
            let before_ok = at == 0 || !word_char(bytes[at - 1]);
            let after_ok = end >= bytes.len() || !word_char(bytes[end]);
            if before_ok && after_ok {
                hit = Some(at);
                break;
            }
            start = end;
        }
        match hit {
            Some(at) => {
                found = Some(at);
                from = at + seg.len();
            }
            None => break,
        }
    }
    let at = found?;
    let before = text.get(..at)?;
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |s| s.chars().count()) + 1;
    Some((line, col))
}

/// `text` with comment bytes replaced by spaces (byte offsets unchanged).
fn mask_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        if in_str {
            match b[i] {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
            i += 1;
        } else if b[i] == b'"' {
            in_str = true;
            i += 1;
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out[i] = b' ';
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out[i] = b' ';
                    out[i + 1] = b' ';
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out[i] = b' ';
                    out[i + 1] = b' ';
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] != b'\n' {
                        out[i] = b' ';
                    }
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    // Only ASCII bytes were replaced by ASCII spaces, but a comment may hold multi-byte
    // characters whose bytes are now spaces: still valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_skips_comments() {
        let t = "// levels count\n(\n  levels: [ (name: \"A\", count: 0) ],\n)";
        assert_eq!(locate(t, "levels.A.count"), Some((3, 25)));
    }

    #[test]
    fn closest_is_case_insensitive() {
        assert_eq!(closest("MNCORE2", PRESETS), ["mncore2"]);
        assert_eq!(closest("mncore3", PRESETS), ["mncore2", "mncore1"]);
        assert!(closest("zzzzzzzz", PRESETS).is_empty());
    }
}
