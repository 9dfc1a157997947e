//! A sweep's axes from its `--set` and `--bind` arguments, and what each point sets.
//!
//! A `--set` is one knob (`links.L1B.distribute.parent=64,128`) or a knob group
//! (`--set 'links.Group.*=x1,x2,x4'`, `--set 'a,b=64,128'`; `mnsim_arch::knob_groups`):
//! an axis whose every value sets each of its knobs, or multiplies each knob's own value.
//! A group is expanded on the scenario's machine (its `overrides` applied) before any
//! point runs: its knobs are recorded in the axis (`sweep.json`), and every value is
//! checked on every knob then.

use miette::{Report, miette};
use mnsim_arch::{Amount, KnobGroup, Num};
use mnsim_reports::{AxisKind, SweepAxis};
use mnsim_sim::scenario::{self, Scenario, Source};
use std::collections::BTreeMap;

/// The axes of `--set` (`sets`) then `--bind` (`binds`), in the order given; a group's
/// knobs are filled in by [`Settings::expand`].
pub fn parse(sets: &[String], binds: &[String]) -> Result<Vec<SweepAxis>, Report> {
    let mut out: Vec<SweepAxis> = Vec::new();
    for s in sets {
        let g = KnobGroup::parse(s).map_err(|e| miette!("error: --set {s}: {e}"))?;
        let mut axis = SweepAxis::new(g.name(), AxisKind::Knob, g.numbers());
        axis.scale = g.scales();
        out.push(axis);
    }
    for b in binds {
        let (k, vs) = b.split_once('=').ok_or_else(|| {
            miette!("error: --bind {b}: expected NAME=SIZE[,SIZE...], e.g. batch=16,32")
        })?;
        let mut values = Vec::new();
        for v in vs.split(',') {
            let one = scenario::parse_binds(&[format!("{k}={v}")])?;
            values.extend(one.values().map(|&x| x as f64));
        }
        out.push(SweepAxis::new(k.trim(), AxisKind::Bind, values));
    }
    if out.is_empty() {
        return Err(miette!(
            "error: nothing to sweep: give a knob's values, e.g. --set links.L1B.distribute.parent=64,128,256"
        ));
    }
    for (i, x) in out.iter().enumerate() {
        if out[..i].iter().any(|y| y.name == x.name) {
            return Err(miette!("error: `{}` is swept twice", x.name));
        }
    }
    Ok(out)
}

/// Whether an axis is a knob group (several knobs, a pattern, or multipliers), whose
/// knobs [`Settings::expand`] lists.
fn is_group(a: &SweepAxis) -> bool {
    a.kind == AxisKind::Knob && (a.scale || a.name.contains(['*', ',']))
}

/// What each value of each axis sets: per axis, per value, the knob settings (a group's
/// every knob) or the binding.
pub struct Settings {
    per_axis: Vec<Vec<Vec<(String, f64)>>>,
}

impl Settings {
    /// Expands every knob group of `axes` on the scenario's machine (its `overrides`
    /// applied): its knobs go into the axis, and each value is checked on each knob
    /// before any point runs. A knob two axes set is an error. A machine that does not
    /// load leaves groups to fail at each point, as a single knob does.
    pub fn expand(sc: &Scenario, src: &Source, axes: &mut [SweepAxis]) -> Result<Settings, Report> {
        let machine = if axes.iter().any(is_group) {
            Some(scenario::machine_with_overrides(sc, src)?)
        } else {
            None
        };
        let mut per_axis = Vec::with_capacity(axes.len());
        for a in axes.iter_mut() {
            let per_value: Vec<Vec<(String, f64)>> = match (a.kind, &machine) {
                (AxisKind::Knob, Some(m)) if is_group(a) => {
                    let spec = format!("{}=…", a.name);
                    let bad = |e: &dyn std::fmt::Display| {
                        miette!("error: --set {spec}: {e} (checked before any point ran)")
                    };
                    let patterns = a.name.split(',').map(str::to_string).collect();
                    let group = KnobGroup {
                        patterns,
                        amounts: Vec::new(),
                    };
                    let knobs = group.knobs(m).map_err(|e| bad(&e))?;
                    a.knobs = knobs.iter().map(|(k, _)| k.clone()).collect();
                    a.values
                        .iter()
                        .map(|&v| {
                            let amount = if a.scale {
                                Amount::Times(v)
                            } else {
                                Amount::Value(v)
                            };
                            KnobGroup::assignments(&knobs, amount, m).map_err(|e| {
                                bad(&format!(
                                    "{}{}: {e}",
                                    if a.scale { "x" } else { "" },
                                    Num(v)
                                ))
                            })
                        })
                        .collect::<Result<_, _>>()?
                }
                (AxisKind::Knob, _) => a
                    .values
                    .iter()
                    .map(|&v| vec![(a.name.clone(), v)])
                    .collect(),
                (AxisKind::Bind, _) => Vec::new(),
            };
            per_axis.push(per_value);
        }
        // A knob is swept by one axis only.
        let mut owner: BTreeMap<String, &str> = BTreeMap::new();
        for (a, values) in axes.iter().zip(&per_axis) {
            let Some(first) = values.first() else {
                continue;
            };
            for (k, _) in first {
                if let Some(other) = owner.insert(k.clone(), &a.name) {
                    return Err(miette!(
                        "error: `{k}` is swept by `{other}` and by `{}`: give each knob one axis",
                        a.name
                    ));
                }
            }
        }
        Ok(Settings { per_axis })
    }

    /// The knob settings and the bindings of point `p` (row-major over `axes`, the last
    /// varying fastest).
    pub fn point(
        &self,
        axes: &[SweepAxis],
        mut p: usize,
    ) -> (Vec<(String, f64)>, BTreeMap<String, u64>) {
        let mut index = vec![0usize; axes.len()];
        for (i, a) in axes.iter().enumerate().rev() {
            let n = a.values.len().max(1);
            index[i] = p % n;
            p /= n;
        }
        let mut sets = Vec::new();
        let mut binds = BTreeMap::new();
        for (i, a) in axes.iter().enumerate() {
            match a.kind {
                AxisKind::Knob => sets.extend(self.per_axis[i][index[i]].iter().cloned()),
                AxisKind::Bind => {
                    binds.insert(a.name.clone(), a.values[index[i]] as u64);
                }
            }
        }
        (sets, binds)
    }
}
