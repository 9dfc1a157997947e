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
}

pub fn run(a: MachinesArgs) -> Result<(), Report> {
    let mut s = String::new();
    let Some(name) = a.name else {
        for p in mnsim_arch::PRESETS {
            let m = mnsim_arch::preset(p).map_err(|e| miette::miette!("error: {e}"))?;
            let _ = writeln!(s, "{:<10} {:>6} PE  {}", p, m.leaf_count(), m.description);
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
