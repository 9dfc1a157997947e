//! The op-by-op comparison of plans as JSON: what `mnsim compare` shows under the
//! ranking, for programs (the `ops` key of `compare.json`).

use crate::compare::{OpChange, OpPair, op_pairs, ranked, what_differs};
use crate::model::{OpReport, Report};
use crate::rows::plan_name;
use serde_json::{Value, json};

/// One side of a row: the op as that plan ran it.
fn side(o: Option<&OpReport>) -> Value {
    match o {
        Some(o) => json!({
            "index": o.index,
            "cycles": o.cycles,
            "bottleneck": o.bottleneck,
            "layout": o.layout,
        }),
        None => Value::Null,
    }
}

fn row(p: &OpPair) -> Value {
    let o = p.a.or(p.b);
    let (ca, cb) = (p.a.map_or(0, |x| x.cycles), p.b.map_or(0, |x| x.cycles));
    let differs: Vec<String> = match p.change {
        OpChange::Changed => what_differs(p).split(", ").map(str::to_string).collect(),
        OpChange::Same | OpChange::OnlyA | OpChange::OnlyB => Vec::new(),
    };
    json!({
        "op": o.map(|o| o.op.as_str()),
        "tensor": o.map(|o| o.tensor.as_str()),
        "change": match p.change {
            OpChange::Same => "same",
            OpChange::Changed => "changed",
            OpChange::OnlyA => "only_a",
            OpChange::OnlyB => "only_b",
        },
        "a": side(p.a),
        "b": side(p.b),
        "delta_cycles": i128::from(cb) - i128::from(ca),
        "differs_in": differs,
    })
}

/// Every plan against the fastest (`a`), op by op, as [`crate::compare_ops`] shows it:
/// one entry per other plan (`b`) in rank order, each with every aligned op (the same
/// ones included, `change: "same"`); empty with fewer than two plans.
pub fn op_diff_json(reports: &[Report]) -> Value {
    let order = ranked(reports);
    let Some((first, rest)) = order.split_first() else {
        return json!([]);
    };
    Value::Array(
        rest.iter()
            .map(|b| {
                let pairs = op_pairs(first, b);
                let same = pairs.iter().filter(|p| p.change == OpChange::Same);
                json!({
                    "a": plan_name(first),
                    "b": plan_name(b),
                    "a_total_cycles": first.total_cycles,
                    "b_total_cycles": b.total_cycles,
                    "same_ops": same.clone().count(),
                    "same_cycles": same.map(|p| p.a.map_or(0, |o| o.cycles)).sum::<u64>(),
                    "ops": pairs.iter().map(row).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}
