//! The library's modules depend one way (ARCHITECTURE.md, crates and layers). `sim/`
//! is several crates, one above the other; Cargo keeps a crate from using one above it,
//! and this test keeps the inside of each in order: it reads every crate's `src/**/*.rs`,
//! collects every top-level module each module reaches through `crate::`, `super::` or a
//! sim crate's name (`mnsim_engine::`; comments and strings left out; unit tests'
//! `tests.rs` files left out), and fails naming each edge that goes up a layer. It also
//! holds each crate's manifest to the sim crates it may know.

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

/// The crates of `sim/` (directory below `sim/`, package), top first, and the sim crates
/// each may depend on: what is not listed, it must not know.
const CRATES: &[(&str, &str, &[&str])] = &[
    (
        ".",
        "mnsim-sim",
        &[
            "mnsim-core",
            "mnsim-scenario",
            "mnsim-engine",
            "mnsim-run",
            "mnsim-plan",
            "mnsim-import",
        ],
    ),
    ("import", "mnsim-import", &["mnsim-core", "mnsim-scenario"]),
    (
        "plan",
        "mnsim-plan",
        &["mnsim-core", "mnsim-scenario", "mnsim-engine", "mnsim-run"],
    ),
    (
        "run",
        "mnsim-run",
        &["mnsim-core", "mnsim-scenario", "mnsim-engine"],
    ),
    ("engine", "mnsim-engine", &["mnsim-core"]),
    ("scenario", "mnsim-scenario", &["mnsim-core"]),
    ("core", "mnsim-core", &[]),
];

fn sim() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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

/// The length of a sim crate's name (`mnsim_engine::`, with the colons) at the start of
/// `s`, when `s` starts with one.
fn sim_crate_prefix(s: &str) -> Option<usize> {
    CRATES.iter().find_map(|(_, package, _)| {
        let name = format!("{}::", package.replace('-', "_"));
        s.starts_with(&name).then_some(name.len())
    })
}

/// Every (top-level module, line, path head) a file reaches through `crate::`, a sim
/// crate's name or `super::`; `super::` chains resolve against the file's module path.
fn reached(rel: &Path, text: &str) -> Vec<(usize, String)> {
    let code = code_only(text);
    let me = module_path(rel);
    let mut out = Vec::new();
    for (ln, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(k) = rest.find(['c', 's', 'm']) {
            let at = &rest[k..];
            let boundary = k == 0
                || !rest[..k]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
            let (base, after): (Option<Vec<String>>, &str) =
                if boundary && at.starts_with("crate::") {
                    (Some(Vec::new()), &at["crate::".len()..])
                } else if let Some(n) = sim_crate_prefix(at).filter(|_| boundary) {
                    (Some(Vec::new()), &at[n..])
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

/// The modules a crate declares (`pub mod NAME;` in its `lib.rs`).
fn declared(krate: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(krate.join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect()
}

#[test]
fn every_module_uses_only_its_layer_and_those_below() {
    let layer: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.iter().map(move |m| (*m, i)))
        .collect();
    let mut upward = Vec::new();
    let mut edges = 0;
    for (dir, package, _) in CRATES {
        let krate = sim().join(dir);
        let src = krate.join("src");
        let declared = declared(&krate);
        // Every module of the library has its place (a new module is placed on purpose).
        for m in &declared {
            assert!(
                layer.contains_key(m.as_str()),
                "{package}: module `{m}` is in no layer: add it to LAYERS here and to ARCHITECTURE.md"
            );
        }
        let mut files = Vec::new();
        rs_files(&src, &mut files);
        for f in &files {
            let rel = f.strip_prefix(&src).unwrap();
            let me = module_path(rel);
            // The binary (main.rs, cmd/) sits above every layer and reaches the library as
            // `mnsim_sim::`; a crate's `lib.rs` declares and re-exports.
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
                let (Some(&from_l), Some(&to_l)) =
                    (layer.get(top.as_str()), layer.get(to.as_str()))
                else {
                    continue;
                };
                edges += 1;
                if to_l < from_l {
                    upward.push(format!(
                        "sim/{dir}/src/{}:{line}: `{top}` (layer {from_l}) uses `{to}` (layer {to_l}, above it)",
                        rel.display()
                    ));
                }
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

/// The sim crates a manifest depends on (`mnsim-NAME` keys of `[dependencies]`).
fn sim_deps(manifest: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]" || line == "[dev-dependencies]";
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("");
        let sim_crate = CRATES.iter().any(|(_, p, _)| *p == key);
        if in_deps && sim_crate {
            deps.insert(key.to_string());
        }
    }
    deps
}

#[test]
fn each_crate_depends_only_on_the_sim_crates_below_it() {
    let mut wrong = Vec::new();
    for (i, (dir, package, allowed)) in CRATES.iter().enumerate() {
        let manifest = std::fs::read_to_string(sim().join(dir).join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains(&format!("name = \"{package}\"")),
            "sim/{dir}/Cargo.toml is not {package}"
        );
        for dep in sim_deps(&manifest) {
            // Only crates listed after this one (below it), and only those it may know.
            let below = CRATES[i + 1..].iter().any(|(_, p, _)| *p == dep);
            if !below || !allowed.contains(&dep.as_str()) {
                wrong.push(format!("{package} depends on {dep}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Each crate holds whole layers: a module is declared by one crate only, except
    // `import`, whose planning of an import (`plan_auto`) sits in `mnsim-sim` above the
    // planner.
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for (dir, package, _) in CRATES {
        for m in declared(&sim().join(dir)) {
            if let Some(other) = seen.insert(m.clone(), package) {
                assert!(
                    m == "import" && *package == "mnsim-import" && other == "mnsim-sim",
                    "module `{m}` is declared by {other} and {package}"
                );
            }
        }
    }
    assert!(seen.len() == LAYERS.iter().map(|l| l.len()).sum::<usize>());
}

#[test]
fn the_manifest_scan_sees_dependencies_and_dev_dependencies_only() {
    let manifest = "[package]\nname = \"mnsim-run\"\n\n[dependencies]\nmnsim-core.workspace = true\n\
                    mnsim-arch.workspace = true\nmnsim-engine = { path = \"../engine\" }\n\n\
                    [dev-dependencies]\nmnsim-plan.workspace = true\n";
    let got: Vec<String> = sim_deps(manifest).into_iter().collect();
    assert_eq!(got, ["mnsim-core", "mnsim-engine", "mnsim-plan"]);
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
    // A sim crate's name reaches its modules as `crate::` does.
    let got = reached(
        Path::new("run.rs"),
        "use mnsim_engine::{net::Topo, timeline};",
    );
    assert_eq!(
        got,
        vec![(1, "net".to_string()), (1, "timeline".to_string())]
    );
    // From a top-level file, `super::` is the crate root.
    let got = reached(Path::new("run.rs"), "use super::engine::X;");
    assert_eq!(got, vec![(1, "engine".to_string())]);
}
