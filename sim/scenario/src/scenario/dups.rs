//! Duplicate keys. `ron` reads a map into a `BTreeMap`, where a key given twice keeps
//! its last value without a word; a scenario file refuses it instead, pointing at the
//! second occurrence and naming the first.

use super::spans::Node;
use super::{Source, line_col, located_with};
use miette::Report;
use std::collections::HashMap;

/// The first key given twice in `overrides`, `bind`, `tensors`, `plans` or a plan's
/// variables, as an error at its second occurrence.
pub(super) fn check(root: &Node, src: &Source) -> Result<(), Report> {
    let mut maps: Vec<(String, &Node)> = Vec::new();
    for field in ["overrides", "bind", "tensors", "plans"] {
        if let Some(n) = root.field(field) {
            maps.push((format!("`{field}`"), n));
        }
    }
    if let Some(plans) = root.field("plans") {
        for (k, v) in plans.entries() {
            let name = k.str_value().unwrap_or("?");
            maps.push((format!("the variables of plan `{name}`"), v));
        }
    }
    for (what, map) in maps {
        // The first occurrence of every key (one pass: a large map stays fast).
        let mut seen: HashMap<&str, &Node> = HashMap::new();
        for (key, _) in map.entries() {
            let Some(name) = key.str_value() else {
                continue;
            };
            let Some(first) = seen.get(name).copied() else {
                seen.insert(name, key);
                continue;
            };
            let (line, col) = line_col(&src.text, first.span.start);
            return Err(located_with(
                src,
                Some(key.span.clone()),
                &format!(
                    "`{name}` is given twice in {what} (first at line {line}, column {col}); \
                     a key may appear once: remove or rename one"
                ),
                "given again here",
                &[(first.span.clone(), format!("`{name}` first given here"))],
            ));
        }
    }
    Ok(())
}
