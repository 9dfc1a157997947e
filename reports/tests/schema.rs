//! `reports/schema/report.schema.json` against the model: the schema is valid JSON, and walking a
//! serialised sample report alongside it, every key of the sample is in the schema and every key
//! the schema lists is in the sample, with matching types. So the schema cannot silently fall
//! behind (or ahead of) the struct.

mod common;

use serde_json::Value;
use std::collections::BTreeSet;

const SCHEMA_FILE: &str = include_str!("../schema/report.schema.json");

fn schema() -> Value {
    serde_json::from_str(SCHEMA_FILE).expect("report.schema.json is valid JSON")
}

/// Follows `$ref` (local `#/$defs/...` only), recording which definitions were used.
fn resolve<'a>(node: &'a Value, root: &'a Value, used: &mut BTreeSet<String>) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r
                .strip_prefix("#/$defs/")
                .unwrap_or_else(|| panic!("non-local $ref {r}"));
            used.insert(name.to_string());
            resolve(&root["$defs"][name], root, used)
        }
        None => node,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `node`'s `type`/`const`/`enum` admits `v` (a missing `type` admits anything).
fn admits(node: &Value, v: &Value) -> bool {
    if let Some(c) = node.get("const") {
        return c == v;
    }
    if let Some(e) = node.get("enum").and_then(Value::as_array) {
        return e.contains(v);
    }
    let t = type_name(v);
    let ok = |s: &str| s == t || (s == "number" && t == "integer");
    match node.get("type") {
        None => true,
        Some(Value::String(s)) => ok(s),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).any(ok),
        Some(other) => panic!("bad type {other}"),
    }
}

fn walk(
    v: &Value,
    node: &Value,
    root: &Value,
    path: &str,
    used: &mut BTreeSet<String>,
    errors: &mut Vec<String>,
) {
    let mut node = resolve(node, root, used);
    if let Some(alts) = node
        .get("anyOf")
        .or_else(|| node.get("oneOf"))
        .and_then(Value::as_array)
    {
        let alts: Vec<&Value> = alts.iter().map(|a| resolve(a, root, used)).collect();
        match alts.iter().find(|a| admits(a, v)) {
            Some(a) => node = a,
            None => {
                errors.push(format!("{path}: no alternative admits {}", type_name(v)));
                return;
            }
        }
    }
    if !admits(node, v) {
        errors.push(format!(
            "{path}: schema does not admit a {} ({v})",
            type_name(v)
        ));
        return;
    }
    match v {
        Value::Object(map) => {
            let Some(props) = node.get("properties").and_then(Value::as_object) else {
                errors.push(format!(
                    "{path}: an object without properties in the schema"
                ));
                return;
            };
            for (k, child) in map {
                match props.get(k) {
                    Some(p) => {
                        if p.get("description").is_none() {
                            errors.push(format!("{path}.{k}: no description"));
                        }
                        walk(child, p, root, &format!("{path}.{k}"), used, errors);
                    }
                    None => errors.push(format!("{path}.{k}: key missing from the schema")),
                }
            }
            for k in props.keys() {
                if !map.contains_key(k) {
                    errors.push(format!("{path}.{k}: in the schema but not in the report"));
                }
            }
            let required: BTreeSet<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let keys: BTreeSet<&str> = props.keys().map(String::as_str).collect();
            if required != keys {
                errors.push(format!(
                    "{path}: `required` {required:?} is not the keys {keys:?}"
                ));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let prefix = node.get("prefixItems").and_then(Value::as_array);
                let child = match prefix.and_then(|p| p.get(i)) {
                    Some(c) => c,
                    None => match node.get("items") {
                        Some(Value::Bool(false)) | None => {
                            errors.push(format!("{path}[{i}]: item not allowed by the schema"));
                            continue;
                        }
                        Some(c) => c,
                    },
                };
                walk(item, child, root, &format!("{path}[{i}]"), used, errors);
            }
        }
        _ => {}
    }
}

#[test]
fn schema_is_draft_2020_12() {
    let s = schema();
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(s["properties"]["schema"]["const"], mnsim_reports::SCHEMA);
}

#[test]
fn schema_covers_every_key_of_a_report() {
    let root = schema();
    let sample = common::with_energy();
    // The sample exercises every key: optional values present somewhere, every vector non-empty.
    assert!(
        sample
            .ops
            .iter()
            .any(|o| o.ready_cycles.is_some() && o.layout.is_some())
    );
    assert!(sample.ops.iter().any(|o| o.flops.is_some()));
    let v: Value = serde_json::from_str(&mnsim_reports::to_json(&sample)).unwrap();
    let mut used = BTreeSet::new();
    let mut errors = Vec::new();
    walk(&v, &root, &root, "$", &mut used, &mut errors);
    assert!(
        errors.is_empty(),
        "schema and report disagree:\n{}",
        errors.join("\n")
    );
    let defs: BTreeSet<String> = root["$defs"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(used, defs, "every definition is reached from a report");
}

#[test]
fn walk_catches_a_key_the_schema_lacks() {
    let root = schema();
    let mut v: Value = serde_json::from_str(&mnsim_reports::to_json(&common::sample())).unwrap();
    v["ops"][0]["new_key"] = Value::from(1);
    v.as_object_mut().unwrap().remove("lm_bytes");
    let mut errors = Vec::new();
    walk(&v, &root, &root, "$", &mut BTreeSet::new(), &mut errors);
    assert!(
        errors.iter().any(|e| e.starts_with("$.ops[0].new_key")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("$.lm_bytes")),
        "{errors:?}"
    );
}
