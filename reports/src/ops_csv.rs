//! `ops.csv`: one row per op of a run, for spreadsheets and scripts.

use crate::model::Report;
use std::fmt::Write as _;

fn field(s: &str) -> String {
    let flat = s.replace(['\n', '\r'], " ");
    if flat.contains([',', '"']) {
        format!("\"{}\"", flat.replace('"', "\"\""))
    } else {
        flat
    }
}

/// The columns of [`ops_csv`].
pub const OPS_CSV_COLUMNS: &str = "index,op,tensor,layout,start,end,cycles,bottleneck,useful_work,flops,padding_elems,padded_elems,ready_min,ready_p50,ready_p90,ready_p99,ready_max,stages";

/// `ops.csv`: one row per op, in program order: the op's figures as in `report.json`
/// (`useful_work` is `utilisation`, a fraction 0..1), ready-cycle percentiles (empty when
/// the op readies no data), and `stages` as `level direction kind=cycles` items joined by
/// `;`.
pub fn ops_csv(r: &Report) -> String {
    let mut s = String::from(OPS_CSV_COLUMNS);
    s.push('\n');
    for op in &r.ops {
        let ready = match &op.ready_cycles {
            Some(p) => format!("{},{},{},{},{}", p.min, p.p50, p.p90, p.p99, p.max),
            None => ",,,,".to_string(),
        };
        let stages: Vec<String> = op
            .stages
            .iter()
            .map(|st| format!("{}={}", st.label(), st.cycles))
            .collect();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            op.index,
            field(&op.op),
            field(&op.tensor),
            field(op.layout.as_deref().unwrap_or("")),
            op.start,
            op.end,
            op.cycles,
            field(&op.bottleneck),
            op.utilisation,
            op.flops.map_or(String::new(), |f| f.to_string()),
            op.padding_elems,
            op.padded_elems,
            ready,
            field(&stages.join(";"))
        );
    }
    s
}
