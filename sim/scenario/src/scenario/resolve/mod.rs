//! Resolving a scenario for one plan: machine, bindings, shapes, plan variables,
//! residency, layouts. Everything that can be checked before running is checked here,
//! and every error points into the scenario file.
//!
//! This file walks the scenario in order: machine and knobs, bindings, tensors, the
//! plan, then the program op by op (declared names, residency, layouts). Its parts:
//! `resolved.rs` (what resolving yields), `ctx.rs` (where things are in the file),
//! `machine_of.rs` (the machine a scenario names), `tensors.rs` (a tensor's shape
//! bound), `program.rs` (the walk over the program's ops) and `checks.rs` (an op's
//! axes and numbers).

mod checks;
mod ctx;
mod lower;
mod machine_of;
mod program;
mod resolved;
mod tensors;

pub use lower::LowerError;
pub use machine_of::machine;
pub use resolved::Resolved;

use super::spans;
use super::{Init, Scenario, Source, closest};
use crate::program::Tensor;
use ctx::Ctx;
use machine_of::load_machine;
use miette::{Report, miette};
use mnsim_arch::{KnobError, Machine};
use program::{PlanVars, resolve_program};
use std::collections::{BTreeMap, BTreeSet};
use tensors::{resolve_tensor, unknown_bind};

/// The plans to run, in name order, or `[None]` for a scenario without plans.
pub fn plans_to_run(sc: &Scenario) -> Vec<Option<String>> {
    if sc.plans.is_empty() {
        vec![None]
    } else {
        sc.plans.keys().cloned().map(Some).collect()
    }
}

/// Resolves `sc` for `plan` (`None`: no plan) with knobs `sets` and bindings `binds`
/// from the command line, which win over the scenario's.
pub fn resolve(
    sc: &Scenario,
    src: &Source,
    plan: Option<&str>,
    sets: &[(String, f64)],
    binds: &BTreeMap<String, u64>,
) -> Result<Resolved, Report> {
    let cx = Ctx {
        src,
        root: spans::scan(&src.text),
    };
    let mut warnings = Vec::new();
    let (machine, overrides) = configure_machine(sc, &cx, sets)?;
    let bind = bindings(sc, binds);
    let tensors = resolve_tensors(sc, &cx, &machine, &bind, binds, &mut warnings)?;
    let plan_vars = select_plan(sc, &cx, plan)?;
    let mut ops = resolve_program(&cx, sc, &machine, &tensors, plan_vars, &mut warnings)?;
    let places = crate::scenario::places_of(&sc.places, sc.program.len()).map_err(|(i, why)| {
        let node = cx.field("places");
        let at = node.and_then(|n| n.item(i)).or(node);
        cx.err(
            at.map(|n| n.span.clone()),
            &format!("`places` entry {i} {why}"),
            "this run",
        )
    })?;
    for (o, p) in ops.iter_mut().zip(places) {
        o.place = p;
    }
    let program = lower::lower(tensors, ops, &machine).map_err(|e| {
        let span = e.op.and_then(|i| cx.op(i)).map(|n| n.span.clone());
        cx.err(span, &e.message, "here")
    })?;

    Ok(Resolved {
        scenario: sc.name.clone(),
        plan: plan.map(str::to_string),
        machine,
        mode: sc.mode,
        verify: sc.verify,
        auto_reduce: sc.auto_reduce,
        schedule: sc.schedule,
        program,
        overrides,
        bind: bind.into_iter().collect(),
        warnings,
    })
}

/// The scenario's machine with its `overrides`, then the command line's `sets`,
/// applied; and the knobs applied, in that order.
fn configure_machine(
    sc: &Scenario,
    cx: &Ctx,
    sets: &[(String, f64)],
) -> Result<(Machine, Vec<(String, f64)>), Report> {
    // Machine, overrides, --set.
    let mut machine = load_machine(sc, cx)?;
    let mut overrides = Vec::new();
    for (k, v) in &sc.overrides {
        mnsim_arch::set_knob(&mut machine, k, *v).map_err(|e| {
            let entry = cx.field("overrides").and_then(|o| o.entry(k));
            let span = match &e {
                KnobError::Unknown { .. } => entry.map(|(k, _)| k.span.clone()),
                _ => entry.map(|(_, v)| v.span.clone()),
            };
            cx.err(
                span.or_else(|| cx.field("overrides").map(|n| n.span.clone())),
                &format!("in `overrides`: {e}"),
                match e {
                    KnobError::Unknown { .. } => "unknown knob",
                    _ => "this value",
                },
            )
        })?;
        overrides.push((k.clone(), *v));
    }
    for (k, v) in sets {
        mnsim_arch::set_knob(&mut machine, k, *v)
            .map_err(|e| miette!("error: --set {k}={}: {e}", mnsim_arch::Num(*v)))?;
        overrides.push((k.clone(), *v));
    }
    Ok((machine, overrides))
}

/// The bindings in force: the scenario's `bind`, overridden by the command line's.
fn bindings(sc: &Scenario, binds: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    // Bindings.
    let mut bind = sc.bind.clone();
    for (k, v) in binds {
        bind.insert(k.clone(), *v);
    }
    bind
}

/// Every declared tensor with its shape bound and checked to fit in DRAM; a binding
/// no dimension is named for is an error from the command line (`cli_binds`), else a
/// warning.
fn resolve_tensors(
    sc: &Scenario,
    cx: &Ctx,
    machine: &Machine,
    bind: &BTreeMap<String, u64>,
    cli_binds: &BTreeMap<String, u64>,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Tensor>, Report> {
    let from_cli = |k: &str| cli_binds.contains_key(k);

    // Tensors.
    let mut tensors = BTreeMap::new();
    let mut dim_names = BTreeSet::new();
    for (name, decl) in &sc.tensors {
        let t = resolve_tensor(cx, name, decl, bind, &from_cli)?;
        crate::program::check_dram(machine, name, t.dtype, &t.runtime_dims).map_err(|e| {
            let node = cx.tensor(name);
            cx.err(
                node.and_then(|n| n.field("shape"))
                    .or(node)
                    .map(|n| n.span.clone()),
                &e.to_string(),
                "does not fit in DRAM",
            )
        })?;
        for d in &t.declared.dims {
            if let Some(n) = d.name() {
                dim_names.insert(n.to_string());
            }
        }
        tensors.insert(name.clone(), t);
    }
    for (k, v) in bind {
        // An integer input named instead of a dimension: its value (a run-time index,
        // a position), every element of it.
        if !dim_names.contains(k)
            && let Some(t) = tensors.get_mut(k)
            && t.dtype.is_int()
            && t.init.is_some()
        {
            let value = *v as f64;
            if let Some(why) = t.dtype.check_value(value) {
                return Err(miette!("error: bind {k}={v}: {why}"));
            }
            t.init = Some(Init::Fill { value });
            continue;
        }
        if !dim_names.contains(k) {
            if from_cli(k) {
                return Err(unknown_bind(k, &dim_names));
            }
            warnings.push(format!(
                "`bind` sets `{k}`, but no tensor has a dimension named `{k}` \
                 (name one in its shape, e.g. `f16[{k}<=64,1024]`)"
            ));
        }
    }
    Ok(tensors)
}

/// The plan `plan` names, with its variables (`None`: no plan selected); an unknown
/// name is an error pointing at the scenario's `plans`.
fn select_plan<'a>(
    sc: &'a Scenario,
    cx: &Ctx,
    plan: Option<&'a str>,
) -> Result<PlanVars<'a>, Report> {
    // The plan.
    let plan_names: Vec<&str> = sc.plans.keys().map(String::as_str).collect();
    let plan_vars = match plan {
        None => None,
        Some(p) => match sc.plans.get(p) {
            Some(v) => Some((p, v)),
            None => {
                let mut msg = if plan_names.is_empty() {
                    format!("unknown plan `{p}`: the scenario has no plans")
                } else {
                    format!("unknown plan `{p}`; plans: {}", plan_names.join(", "))
                };
                if let Some(n) = closest(p, &plan_names) {
                    msg.push_str(&format!("; did you mean `{n}`?"));
                }
                let span = cx
                    .root
                    .as_ref()
                    .and_then(|r| r.field_name_span("plans"))
                    .or_else(|| cx.root.as_ref().map(|r| r.span.start..r.span.start + 1));
                return Err(cx.err(span, &msg, "the plans are defined here"));
            }
        },
    };
    Ok(plan_vars)
}
