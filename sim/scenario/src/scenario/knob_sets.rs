//! `--set` on the command line: one knob (`KNOB=VALUE`), or a knob group (`--set
//! 'links.Group.*=x2'`, `--set 'a,b=64'`; `mnsim_arch::knob_groups`) expanded on the
//! scenario's machine into one setting per knob.

use super::{Scenario, Source, machine};
use miette::{Report, miette};
use mnsim_arch::{KnobGroup, Machine};

/// The scenario's machine with its `overrides` applied (one that fails to apply is left
/// to resolution, which reports it where it is written): what a multiplier multiplies.
pub fn machine_with_overrides(sc: &Scenario, src: &Source) -> Result<Machine, Report> {
    let mut m = machine(sc, src)?;
    for (k, v) in &sc.overrides {
        let _ = mnsim_arch::set_knob(&mut m, k, *v);
    }
    Ok(m)
}

/// The settings of `--set` arguments for `sc`: a single knob's as written (checked when
/// the scenario resolves, as always), a group's one per knob it reaches, in the machine's
/// knob order, each value checked; a knob a group reaches is set to the group's value or
/// its own value (in the scenario's machine, `overrides` applied) times the multiplier.
pub fn knob_sets(
    sc: &Scenario,
    src: &Source,
    args: &[String],
) -> Result<Vec<(String, f64)>, Report> {
    let mut out = Vec::new();
    let mut base: Option<Machine> = None;
    for a in args {
        let bad = |e: &dyn std::fmt::Display| miette!("error: --set {a}: {e}");
        let (left, right) = a.split_once('=').unwrap_or((a, ""));
        if !left.contains(['*', ',']) && !right.trim_start().starts_with(['x', 'X', '×']) {
            // One knob: parsed and checked as it always was.
            out.push(mnsim_arch::parse_assignment(a).map_err(|e| bad(&e))?);
            continue;
        }
        let g = KnobGroup::parse(a).map_err(|e| bad(&e))?;
        let [amount] = g.amounts.as_slice() else {
            return Err(bad(&format!(
                "bad assignment '{a}': expected one value (several values make a sweep)"
            )));
        };
        let m = match &base {
            Some(m) => m,
            None => base.insert(machine_with_overrides(sc, src)?),
        };
        let knobs = g.knobs(m).map_err(|e| bad(&e))?;
        out.extend(KnobGroup::assignments(&knobs, *amount, m).map_err(|e| bad(&e))?);
    }
    Ok(out)
}
