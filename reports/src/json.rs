//! `report.json`.

use crate::model::Report;

/// `report.json`: the report as pretty-printed JSON (two-space indent, keys in the order of the
/// model's fields, a final newline). The keys are documented in `docs/report-schema.md` and
/// described by `reports/schema/report.schema.json`.
pub fn to_json(r: &Report) -> String {
    // The model holds only strings, numbers, options and vectors (no maps with non-string keys):
    // serialising it cannot fail. A non-finite float is written as `null`.
    let mut s = serde_json::to_string_pretty(r).expect("a report always serialises");
    s.push('\n');
    s
}
