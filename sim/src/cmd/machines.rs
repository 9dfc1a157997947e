//! `mnsim machines [NAME]`.

use super::{emit, load_machine};
use clap::Args;
use miette::Report;
use std::fmt::Write as _;

#[derive(Args)]
pub struct MachinesArgs {
    /// A preset name or a machine RON file; without it, list the presets.
    pub name: Option<String>,
    /// Override a knob before describing, e.g. --set links.L1B.distribute.parent=1024.
    #[arg(long = "set")]
    pub sets: Vec<String>,
    /// List every knob path of the machine.
    #[arg(long)]
    pub knobs: bool,
    /// Print the machine as RON (a starting point for a what-if machine file).
    #[arg(long)]
    pub ron: bool,
    /// Print JSON: the presets ({"name", "pes", "description"} each), or the machine with
    /// its PE count, peak FLOP/cycle per dtype and every knob.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: MachinesArgs) -> Result<(), Report> {
    let mut s = String::new();
    if a.json {
        return json(a);
    }
    let Some(name) = a.name else {
        for p in mnsim_arch::PRESETS {
            let m = mnsim_arch::preset(p).map_err(|e| miette::miette!("error: {e}"))?;
            let _ = writeln!(s, "{:<14} {:>7} PE  {}", p, m.leaf_count(), m.description);
        }
        return emit(&s);
    };
    let m = load_machine(&name, &a.sets)?;
    if a.knobs {
        for k in mnsim_arch::knobs::knob_paths(&m) {
            let v = mnsim_arch::knobs::get_knob(&m, &k).unwrap_or(f64::NAN);
            let _ = writeln!(s, "{k} = {v}");
        }
    } else if a.ron {
        let pretty = ron::ser::PrettyConfig::default();
        s = ron::ser::to_string_pretty(&m, pretty).map_err(|e| miette::miette!("error: {e}"))?;
        s.push('\n');
    } else {
        s = mnsim_arch::describe(&m);
    }
    emit(&s)
}

fn json(a: MachinesArgs) -> Result<(), Report> {
    let v = match &a.name {
        None => {
            let mut list = Vec::new();
            for p in mnsim_arch::PRESETS {
                let m = mnsim_arch::preset(p).map_err(|e| miette::miette!("error: {e}"))?;
                list.push(serde_json::json!({
                    "name": p,
                    "pes": m.leaf_count(),
                    "description": m.description,
                }));
            }
            serde_json::Value::Array(list)
        }
        Some(name) => {
            let m = load_machine(name, &a.sets)?;
            let knobs: serde_json::Map<String, serde_json::Value> =
                mnsim_arch::knobs::knob_paths(&m)
                    .into_iter()
                    .filter_map(|k| {
                        let v = mnsim_arch::knobs::get_knob(&m, &k).ok()?;
                        Some((k, serde_json::json!(v)))
                    })
                    .collect();
            let peaks: serde_json::Map<String, serde_json::Value> = mnsim_arch::DType::ALL
                .iter()
                .filter_map(|&d| {
                    let p = mnsim_arch::peak_flops_per_cycle(&m, d);
                    (p > 0.0).then(|| (d.name().to_string(), serde_json::json!(p)))
                })
                .collect();
            serde_json::json!({
                "name": m.name,
                "pes": m.leaf_count(),
                "peak_flops_per_cycle": peaks,
                "knobs": knobs,
                "machine": m,
            })
        }
    };
    emit(&format!(
        "{}\n",
        serde_json::to_string_pretty(&v).unwrap_or_default()
    ))
}
