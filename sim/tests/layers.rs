//! The library's modules depend one way (ARCHITECTURE.md, layers): this test reads
//! `sim/src/**/*.rs`, collects every top-level module each module reaches through
//! `crate::` or `super::` paths (comments and strings left out; unit tests' `tests.rs`
//! files left out), and fails naming each edge that goes up a layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top first. A module may use modules of its own layer and of any layer
/// below; never one above.
const LAYERS: &[&[&str]] = &[
    &["load"],
    &["import"],
    &["plan"],
    &["run"],
    &["apply"],
    &["bound", "energy", "gap", "memory", "verify", "waits"],
    &["scenario"],
    &["engine"],
    &["lowering"],
    &["net", "world"],
    &["timeline"],
    &["program"],
    &["diag", "ids", "input", "limits", "signals"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The text with comments, string and char literals blanked (lengths kept).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
                out.push(' ');
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                    out.push_str("  ");
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    out.push_str("  ");
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                    out.push(' ');
                }
            }
        } else if b[i] == b'"' {
            // A raw string `r#"..."#` is opened by `r` and hashes already pushed.
            let hashes = text[..i].chars().rev().take_while(|&c| c == '#').count();
            let raw = i > hashes && b[i - hashes - 1] == b'r';
            i += 1;
            out.push(' ');
            while i < b.len() {
                if !raw && b[i] == b'\\' {
                    i += 2;
                    out.push_str("  ");
                    continue;
                }
                if b[i] == b'"' && b[i + 1..].iter().take(hashes).all(|&c| c == b'#') {
                    i += 1;
                    out.push(' ');
                    break;
                }
                out.push(if b[i] == b'\n' { '\n' } else { ' ' });
                i += 1;
            }
        } else if b[i] == b'\'' && (b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\')) {
            // A char literal ('x', '\n', '\''); a lifetime has no closing quote.
            let from = if b[i + 1] == b'\\' { i + 3 } else { i + 2 };
            let end = (from..b.len().min(i + 12)).find(|&j| b[j] == b'\'');
            let end = end.unwrap_or(i);
            out.extend(std::iter::repeat_n(' ', end + 1 - i));
            i = end + 1;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segments of a `{...}` group (`{a::B, c, d::{e, f}}` → a, c, d).
fn group_heads(s: &str) -> Vec<&str> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    start = true;
                    continue;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => {
                start = true;
                continue;
            }
            _ => {}
        }
        if depth == 1 && start && !c.is_whitespace() {
            start = false;
            let id = ident_at(&s[i..]);
            if !id.is_empty() {
                heads.push(id);
            }
        }
    }
    heads
}

/// The module path of a file below `src/` (`engine/kernel.rs` → [engine, kernel],
/// `engine/mod.rs` → [engine], `run.rs` → [run]).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Every (top-level module, line, path head) a file reaches through `crate::` or
/// `super::`; `super::` chains resolve against the file's module path.
fn reached(rel: &Path, text: &str) -> Vec<(usize, String)> {
    let code = code_only(text);
    let me = module_path(rel);
    let mut out = Vec::new();
    for (ln, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(k) = rest.find(['c', 's']) {
            let at = &rest[k..];
            let boundary = k == 0
                || !rest[..k]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
            let (base, after): (Option<Vec<String>>, &str) =
                if boundary && at.starts_with("crate::") {
                    (Some(Vec::new()), &at["crate::".len()..])
                } else if boundary && at.starts_with("super::") {
                    let mut base = me.clone();
                    let mut a = at;
                    while let Some(r) = a.strip_prefix("super::") {
                        base.pop();
                        a = r;
                    }
                    (Some(base), a)
                } else {
                    (None, &at[1..])
                };
            if let Some(base) = base {
                let heads: Vec<&str> = if after.starts_with('{') {
                    group_heads(after)
                } else {
                    vec![ident_at(after)]
                };
                for h in heads {
                    let top = match base.first() {
                        Some(t) => t.clone(),
                        None => h.to_string(),
                    };
                    out.push((ln + 1, top));
                }
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_module_uses_only_its_layer_and_those_below() {
    let src = src();
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    let layer: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.iter().map(move |m| (*m, i)))
        .collect();
    // Every module of the library has its place (a new module is placed on purpose).
    for m in &declared {
        assert!(
            layer.contains_key(m.as_str()),
            "module `{m}` is in no layer: add it to LAYERS here and to ARCHITECTURE.md"
        );
    }
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut upward = Vec::new();
    let mut edges = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let me = module_path(rel);
        // The binary (main.rs, cmd/) sits above every layer and reaches the library as
        // `mnsim_sim::`.
        let Some(top) = me.first().filter(|t| declared.contains(*t)) else {
            continue;
        };
        // A module's unit tests (`tests.rs`, compiled only for tests) may drive it with
        // the modules that use it (the schedule's tests lower walks with `lowering`).
        if rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (line, to) in reached(rel, &text) {
            // A head that is no module (`crate::SomeItem`) is no edge.
            let (Some(&from_l), Some(&to_l)) = (layer.get(top.as_str()), layer.get(to.as_str()))
            else {
                continue;
            };
            edges += 1;
            if to_l < from_l {
                upward.push(format!(
                    "{}:{line}: `{top}` (layer {from_l}) uses `{to}` (layer {to_l}, above it)",
                    rel.display()
                ));
            }
        }
    }
    assert!(edges > 50, "only {edges} edges found: the scan is broken");
    assert!(
        upward.is_empty(),
        "dependencies that go up a layer:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_scan_sees_groups_super_chains_and_ignores_comments_and_strings() {
    let text = "use crate::{engine::Engine, net, run::{a, b}};\n\
                // crate::plan in a comment\n\
                let s = \"crate::import\";\n\
                use super::super::scenario::Op;\n\
                fn f() { super::g(); }\n";
    let got = reached(Path::new("plan/model/walk.rs"), text);
    let tops: Vec<(usize, &str)> = got.iter().map(|(l, t)| (*l, t.as_str())).collect();
    assert_eq!(
        tops,
        vec![
            (1, "engine"),
            (1, "net"),
            (1, "run"),
            (4, "plan"),
            (5, "plan")
        ]
    );
    // From a top-level file, `super::` is the crate root.
    let got = reached(Path::new("run.rs"), "use super::engine::X;");
    assert_eq!(got, vec![(1, "engine".to_string())]);
}
