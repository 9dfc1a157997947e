//! A scenario printed as RON text: what `mnsim import` writes, and the one place a
//! typed scenario becomes text (the importers build the [`Scenario`] itself, and
//! `import -o` prints it). Fields left at their default are not written; comments
//! (the file's header, a note after a tensor, a line before an op) come beside the
//! scenario in [`Comments`]. Parsing the text gives the same scenario
//! (`sim/tests/import.rs`).

use super::{PlanValue, Scenario, Schedule};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Comments printed with a scenario.
#[derive(Clone, Debug, Default)]
pub struct Comments {
    /// Lines before `Scenario(`, without `// `.
    pub head: Vec<String>,
    /// A note after a tensor's declaration, by tensor name.
    pub tensors: BTreeMap<String, String>,
    /// The order to print tensors and plan variables in (an import's declaration
    /// order); those it does not name follow by name.
    pub order: Vec<String>,
    /// A line before an op, by the op's position in `program`.
    pub ops: BTreeMap<usize, String>,
    /// Lines before the scenario's last field (`auto_reduce`, `verify` or `plans`).
    pub tail: Vec<String>,
}

/// `v` as RON on one line (`Binary(op: Add, a: "x", b: "y", out: "z")`), `Some`
/// implicit and `None` fields left out.
pub fn one_line<T: Serialize + ?Sized>(v: &T) -> String {
    let cfg = ron::ser::PrettyConfig::default()
        .compact_structs(true)
        .compact_arrays(true)
        .compact_maps(true)
        .new_line(" ")
        .indentor("");
    // `Some` is implicit, as the scenario parser reads it (no `#![enable]` header).
    let opts =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    // The scenario's types are plain data and always serialize; an error would be a
    // bug of `ron`, and its message is then the text (which fails to parse, naming it).
    let text = opts
        .to_string_pretty(v, cfg)
        .unwrap_or_else(|e| format!("<{e}>"));
    drop_none_fields(&text)
}

/// The scenario's RON text, with `c`'s comments.
pub fn print(sc: &Scenario, c: &Comments) -> String {
    // Every field named: a new one must say how it prints.
    let Scenario {
        name,
        description,
        machine,
        overrides,
        mode,
        bind,
        tensors,
        program,
        places,
        plans,
        verify,
        auto_reduce,
        schedule,
    } = sc;
    let mut t = String::new();
    for l in &c.head {
        let _ = writeln!(t, "// {l}");
    }
    t.push_str("Scenario(\n");
    let _ = writeln!(t, "    name: {},", one_line(name));
    if let Some(d) = description {
        let _ = writeln!(t, "    description: {},", one_line(d));
    }
    let _ = writeln!(t, "    machine: {},", one_line(machine));
    if !overrides.is_empty() {
        let _ = writeln!(t, "    overrides: {},", one_line(overrides));
    }
    let _ = writeln!(t, "    mode: {},", one_line(mode));
    if !bind.is_empty() {
        let _ = writeln!(t, "    bind: {},", one_line(bind));
    }
    t.push_str("    tensors: {\n");
    for (tname, d) in ordered(tensors, &c.order) {
        let note = c
            .tensors
            .get(tname)
            .map(|n| format!(" // {n}"))
            .unwrap_or_default();
        let _ = writeln!(t, "        {}: {},{note}", one_line(tname), one_line(d));
    }
    t.push_str("    },\n    program: [\n");
    for (i, op) in program.iter().enumerate() {
        if let Some(l) = c.ops.get(&i) {
            let _ = writeln!(t, "        // {l}");
        }
        let _ = writeln!(t, "        {},", one_line(op));
    }
    t.push_str("    ],\n");
    if !places.is_empty() {
        t.push_str("    places: [\n");
        for p in places {
            let _ = writeln!(t, "        {},", one_line(p));
        }
        t.push_str("    ],\n");
    }
    if !plans.is_empty() {
        t.push_str("    plans: {\n");
        for (plan, vars) in plans {
            let _ = writeln!(t, "        {}: {{", one_line(plan));
            for (v, value) in ordered(vars, &c.order) {
                let _ = writeln!(t, "            {}: {},", one_line(v), plan_value(value));
            }
            t.push_str("        },\n");
        }
        t.push_str("    },\n");
    }
    for l in &c.tail {
        let _ = writeln!(t, "    // {l}");
    }
    if *verify {
        t.push_str("    verify: true,\n");
    }
    if *auto_reduce {
        t.push_str("    auto_reduce: true,\n");
    }
    if *schedule != Schedule::default() {
        let _ = writeln!(t, "    schedule: {},", one_line(schedule));
    }
    t.push_str(")\n");
    t
}

/// `map`'s entries, those `order` names first in its order, the rest by key.
fn ordered<'a, V>(map: &'a BTreeMap<String, V>, order: &'a [String]) -> Vec<(&'a str, &'a V)> {
    let mut out = Vec::with_capacity(map.len());
    let mut seen = BTreeSet::new();
    for k in order.iter().chain(map.keys()) {
        if let Some((k, v)) = map.get_key_value(k)
            && seen.insert(k.as_str())
        {
            out.push((k.as_str(), v));
        }
    }
    out
}

fn plan_value(v: &PlanValue) -> String {
    match v {
        PlanValue::Any => "Any".into(),
        PlanValue::Layout(l) => one_line(l),
    }
}

/// RON text without its `name: None` fields (outside string literals), which the
/// scenario format defaults.
fn drop_none_fields(text: &str) -> String {
    // Split into tokens: string literals kept whole, the rest char by char.
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut code = String::new();
    let flush = |code: &mut String, out: &mut String| {
        out.push_str(&drop_in_code(code));
        code.clear();
    };
    while let Some((_, c)) = chars.next() {
        if c == '"' {
            flush(&mut code, &mut out);
            out.push(c);
            while let Some((_, d)) = chars.next() {
                out.push(d);
                if d == '\\' {
                    if let Some((_, e)) = chars.next() {
                        out.push(e);
                    }
                } else if d == '"' {
                    break;
                }
            }
        } else {
            code.push(c);
        }
    }
    flush(&mut code, &mut out);
    out
}

/// Drops `ident: None` (`ident:None`) with its separating comma from RON text holding
/// no string literal.
fn drop_in_code(code: &str) -> String {
    let mut s = code.to_string();
    let mut from = 0;
    while let Some(k) = s[from..].find("None") {
        let at = from + k;
        let end = at + "None".len();
        let ident_after = s[end..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let colon = s[..at].trim_end();
        let Some(field_end) = colon.strip_suffix(':').map(|c| c.trim_end().len()) else {
            from = end;
            continue;
        };
        if ident_after {
            from = end;
            continue;
        }
        // The field name before the colon.
        let start = s[..field_end]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let before = s[..start].trim_end();
        let after = s[end..].trim_start();
        let (before, after) = if let Some(a) = after.strip_prefix(',') {
            (before.to_string(), a.trim_start().to_string())
        } else if let Some(b) = before.strip_suffix(',') {
            (b.to_string(), after.to_string())
        } else {
            (before.to_string(), after.to_string())
        };
        from = before.len();
        // Keep a space after a comma or an opening parenthesis where one was.
        s = if before.ends_with(',') && !after.is_empty() {
            before + " " + &after
        } else {
            before + &after
        };
    }
    s
}
