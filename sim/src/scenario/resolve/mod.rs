//! Resolving a scenario for one plan: machine, bindings, shapes, plan variables,
//! residency, layouts. Everything that can be checked before running is checked here,
//! and every error points into the scenario file.
//!
//! This file walks the scenario in order: machine and knobs, bindings, tensors, the
//! plan, then the program op by op (declared names, residency, layouts). Its parts:
//! `resolved.rs` (what resolving yields), `ctx.rs` (where things are in the file),
//! `machine_of.rs` (the machine a scenario names), `tensors.rs` (a tensor's shape
//! bound) and `checks.rs` (an op's axes and numbers).

mod checks;
mod ctx;
mod machine_of;
mod resolved;
mod tensors;

pub use machine_of::machine;
pub use resolved::{LayoutRef, Resolved, ResolvedOp, ResolvedTensor};

use super::spans;
use super::{Op, PlanValue, Scenario, Source, closest, located_with};
use checks::{check_axes, check_numbers};
use ctx::Ctx;
use machine_of::load_machine;
use miette::{Report, miette};
use mnsim_arch::{KnobError, LayoutExpr, TensorLayout};
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

    // Machine, overrides, --set.
    let mut machine = load_machine(sc, &cx)?;
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

    // Bindings.
    let mut bind = sc.bind.clone();
    for (k, v) in binds {
        bind.insert(k.clone(), *v);
    }
    let from_cli = |k: &str| binds.contains_key(k);

    // Tensors.
    let mut tensors = BTreeMap::new();
    let mut dim_names = BTreeSet::new();
    for (name, decl) in &sc.tensors {
        let t = resolve_tensor(&cx, name, decl, &bind, &from_cli)?;
        crate::engine::check_dram(&machine, name, t.dtype, &t.runtime_dims).map_err(|e| {
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
    for k in bind.keys() {
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

    // The program.
    let mut ops = Vec::with_capacity(sc.program.len());
    let mut resident: BTreeSet<String> = BTreeSet::new();
    let mut freed_by: BTreeMap<String, usize> = BTreeMap::new();
    let mut in_dram: BTreeSet<String> = sc
        .tensors
        .iter()
        .filter(|(_, d)| d.init.is_some())
        .map(|(n, _)| n.clone())
        .collect();
    let mut used_vars = BTreeSet::new();
    let mut used_tensors = BTreeSet::new();
    let declared: Vec<&str> = sc.tensors.keys().map(String::as_str).collect();

    for (i, op) in sc.program.iter().enumerate() {
        let what = format!("op {i} ({})", op.describe());
        // `buffers:`: a count ≥ 1, or a plan variable holding one.
        let buffers = match op.buffers_field() {
            None => None,
            Some(super::Buffers::Count(b)) => Some(*b),
            Some(super::Buffers::Var(text)) => {
                let span = cx.op_span(i, "buffers");
                let Some(var) = super::plan_variable(text) else {
                    return Err(cx.err(
                        span,
                        &format!("{what}: `buffers: \"{text}\"`: give an integer ≥ 1 or a plan variable `$name`"),
                        "not a count",
                    ));
                };
                let Some((pname, vars)) = plan_vars else {
                    return Err(cx.err(
                        span,
                        &format!("{what}: `buffers: \"${var}\"` refers to a plan variable, but no plan is selected"),
                        "plan variable",
                    ));
                };
                used_vars.insert(var.to_string());
                match vars.get(var) {
                    // `auto` (or `Any`, left to a planner): the default (2 slices when
                    // they fit, else 1).
                    Some(PlanValue::Layout(v)) if v.trim() == "auto" => None,
                    Some(PlanValue::Any) => None,
                    Some(PlanValue::Layout(v)) => match v.trim().parse::<i64>() {
                        Ok(b) => Some(b),
                        Err(_) => {
                            return Err(cx.err(
                                span,
                                &format!("{what}: `buffers: \"${var}\"`: plan `{pname}` sets `{var}` to `{v}`, not an integer ≥ 1 or `auto`"),
                                "not a count",
                            ));
                        }
                    },
                    _ => {
                        return Err(cx.err(
                            span,
                            &format!("{what}: `buffers: \"${var}\"`: plan `{pname}` gives no count for `{var}`"),
                            "unknown plan variable",
                        ));
                    }
                }
            }
        };
        if let Some(b) = buffers
            && b < 1
        {
            return Err(cx.err(
                cx.op_span(i, "buffers"),
                &format!(
                    "{what}: `buffers: {b}`: LM must hold at least one slice of a stream (give an integer ≥ 1)"
                ),
                "at least 1",
            ));
        }
        // Every name is declared.
        let mut names = op.inputs();
        names.extend(op.output());
        for (field, name) in &names {
            used_tensors.insert(name.to_string());
            if !sc.tensors.contains_key(*name) {
                let mut msg = format!("{what}: tensor `{name}` is not declared in `tensors`");
                if let Some(n) = closest(name, &declared) {
                    msg.push_str(&format!("; did you mean `{n}`?"));
                }
                return Err(cx.err(cx.op_span(i, field), &msg, "not declared"));
            }
        }

        // Residency.
        let need_resident = |name: &str, field: &str, resident: &BTreeSet<String>| {
            if resident.contains(name) {
                return Ok(());
            }
            let why = match freed_by.get(name) {
                Some(j) => format!("it was freed by op {j}"),
                None => "no earlier op loads or computes it".to_string(),
            };
            Err(cx.err(
                cx.op_span(i, field),
                &format!("{what}: tensor `{name}` is not resident in LM at this point: {why}"),
                "not in LM here",
            ))
        };
        match op {
            Op::Load { tensor, .. } => {
                if !in_dram.contains(tensor) {
                    return Err(cx.err(
                        cx.op_span(i, "tensor"),
                        &format!(
                            "{what}: tensor `{tensor}` has no `init` and no earlier op stores it, \
                             so there is nothing in DRAM to load"
                        ),
                        "nothing to load",
                    ));
                }
            }
            Op::Broadcast { tensor, .. } => {
                if !resident.contains(tensor) && !in_dram.contains(tensor) {
                    return Err(cx.err(
                        cx.op_span(i, "tensor"),
                        &format!(
                            "{what}: tensor `{tensor}` is neither resident in LM nor in DRAM \
                             (no `init`, not stored by an earlier op)"
                        ),
                        "nothing to broadcast",
                    ));
                }
            }
            Op::Reduce {
                tensor, level, op, ..
            } => {
                need_resident(tensor, "tensor", &resident)?;
                if !op.combines_over_levels() {
                    return Err(cx.err(
                        cx.op_span(i, "op"),
                        &format!(
                            "{what}: a tree Reduce combines with Add, Max or Min, not {op:?} \
                             ({op:?} is a ReduceAxes reduction)"
                        ),
                        "not a tree combination",
                    ));
                }
                let levels: Vec<String> = machine
                    .addressable_levels()
                    .into_iter()
                    .map(|l| l.name)
                    .collect();
                if !levels.iter().any(|l| l == level) {
                    let mut msg = format!(
                        "{what}: `{level}` is not an addressable level of {}; levels: {}",
                        machine.name,
                        levels.join(", ")
                    );
                    if let Some(n) = closest(level, &levels) {
                        msg.push_str(&format!("; did you mean `{n}`?"));
                    }
                    return Err(cx.err(cx.op_span(i, "level"), &msg, "unknown level"));
                }
            }
            _ => {
                for (field, name) in op.inputs() {
                    need_resident(name, field, &resident)?;
                }
            }
        }

        // Axis arguments.
        check_axes(&cx, i, &what, op, &tensors)?;
        check_numbers(&cx, i, &what, op, &tensors)?;

        // A moved copy keeps dtype and shape.
        if let Op::Relayout {
            tensor,
            out: Some(out),
            ..
        }
        | Op::Broadcast {
            tensor,
            out: Some(out),
            ..
        }
        | Op::Reduce {
            tensor,
            out: Some(out),
            ..
        } = op
        {
            let (a, b) = (&tensors[tensor], &tensors[out]);
            if a.dtype != b.dtype || a.dims_at_bound != b.dims_at_bound {
                return Err(cx.err(
                    cx.op_span(i, "out"),
                    &format!(
                        "{what}: `out` tensor `{out}` ({}) must have the dtype and shape of \
                         `{tensor}` ({})",
                        b.laid_out(),
                        a.laid_out()
                    ),
                    "different dtype or shape",
                ));
            }
        }

        // Layout: substitute, parse, bind.
        let mut op_out = op.clone();
        if let Some(b) = buffers {
            op_out.set_buffers(b);
        }
        let layout = match op.layout() {
            None => None,
            Some(text) => {
                let target = op.output().map_or("", |(_, t)| t);
                let t = &tensors[target];
                let field_node = cx.op_field(i, "layout");
                let (text, node, via_plan) = match super::plan_variable(text) {
                    None => (text.to_string(), field_node, None),
                    Some(var) => {
                        let var_span = field_node
                            .map(|n| n.span.clone())
                            .or(cx.op_span(i, "layout"));
                        let Some((pname, vars)) = plan_vars else {
                            let msg = if plan_names.is_empty() {
                                format!(
                                    "{what}: layout `${var}` refers to a plan variable, \
                                     but the scenario has no `plans`"
                                )
                            } else {
                                format!(
                                    "{what}: layout `${var}` refers to a plan variable, \
                                     but no plan is selected; plans: {}",
                                    plan_names.join(", ")
                                )
                            };
                            return Err(cx.err(var_span, &msg, "plan variable"));
                        };
                        used_vars.insert(var.to_string());
                        match vars.get(var) {
                            None => {
                                let known: Vec<&str> = vars.keys().map(String::as_str).collect();
                                let mut msg = format!(
                                    "{what}: plan `{pname}` has no variable `{var}`; it sets: {}",
                                    if known.is_empty() {
                                        "nothing".to_string()
                                    } else {
                                        known.join(", ")
                                    }
                                );
                                if let Some(n) = closest(var, &known) {
                                    msg.push_str(&format!("; did you mean `${n}`?"));
                                }
                                return Err(cx.err(var_span, &msg, "unknown plan variable"));
                            }
                            Some(PlanValue::Any) => {
                                ops.push(ResolvedOp {
                                    index: i,
                                    op: op_out,
                                    layout: Some(LayoutRef::Any(var.to_string())),
                                    span: cx.op(i).map(|n| n.span.clone()),
                                });
                                apply_residency(op, &mut resident, &mut in_dram, &mut freed_by, i);
                                continue;
                            }
                            Some(PlanValue::Layout(v)) => {
                                let pnode = cx
                                    .field("plans")
                                    .and_then(|p| p.get(pname))
                                    .and_then(|p| p.get(var));
                                if super::plan_variable(v).is_some() {
                                    return Err(cx.err(
                                        pnode.map(|n| n.span.clone()),
                                        &format!(
                                            "plan `{pname}`, variable `{var}`: a plan value must be \
                                             a layout, not another variable (`{v}`)"
                                        ),
                                        "not a layout",
                                    ));
                                }
                                (
                                    v.clone(),
                                    pnode,
                                    Some(format!(" (plan `{pname}`, `${var}`)")),
                                )
                            }
                        }
                    }
                };
                op_out.set_layout(text.clone());
                let bound = LayoutExpr::parse(&text).and_then(|expr| {
                    TensorLayout::bind(
                        &expr,
                        &machine,
                        Some(&t.dims_at_bound),
                        t.dtype,
                        t.is_dynamic(),
                    )
                });
                let l = bound.map_err(|e| {
                    let span = node.map(|n| n.inner_span(e.span.clone()));
                    let mut more = Vec::new();
                    if via_plan.is_some()
                        && let Some(s) = cx.op_span(i, "layout")
                    {
                        more.push((s, format!("used by op {i}")));
                    }
                    located_with(
                        cx.src,
                        span.or(cx.op_span(i, "layout")),
                        &format!(
                            "{what}: bad layout `{text}`{} for tensor `{target}` ({}): {}",
                            via_plan.as_deref().unwrap_or(""),
                            t.laid_out(),
                            e.message
                        ),
                        "here",
                        &more,
                    )
                })?;
                if matches!(op, Op::Broadcast { .. }) && !l.levels().iter().any(|lv| lv.replicated)
                {
                    return Err(cx.err(
                        node.map(|n| n.span.clone()).or(cx.op_span(i, "layout")),
                        &format!(
                            "{what}: layout `{text}` replicates over no level; a Broadcast needs \
                             one (`B@[...]`), otherwise use Load or Relayout"
                        ),
                        "replicates nothing",
                    ));
                }
                Some(LayoutRef::Bound(l))
            }
        };
        ops.push(ResolvedOp {
            index: i,
            op: op_out,
            layout,
            span: cx.op(i).map(|n| n.span.clone()),
        });
        apply_residency(op, &mut resident, &mut in_dram, &mut freed_by, i);
    }

    if let Some((pname, vars)) = plan_vars {
        for v in vars.keys() {
            if !used_vars.contains(v) {
                warnings.push(format!("plan `{pname}` sets `{v}`, but no op uses `${v}`"));
            }
        }
    }
    for name in sc.tensors.keys() {
        if !used_tensors.contains(name) {
            warnings.push(format!("tensor `{name}` is declared but no op uses it"));
        }
    }

    Ok(Resolved {
        scenario: sc.name.clone(),
        plan: plan.map(str::to_string),
        machine,
        mode: sc.mode,
        verify: sc.verify,
        auto_reduce: sc.auto_reduce,
        schedule: sc.schedule,
        tensors,
        ops,
        overrides,
        bind: bind.into_iter().collect(),
        warnings,
    })
}

/// What an op leaves resident in LM and in DRAM.
fn apply_residency(
    op: &Op,
    resident: &mut BTreeSet<String>,
    in_dram: &mut BTreeSet<String>,
    freed_by: &mut BTreeMap<String, usize>,
    i: usize,
) {
    match op {
        Op::Store { tensor } => {
            in_dram.insert(tensor.clone());
        }
        Op::Free { tensor } => {
            resident.remove(tensor);
            freed_by.insert(tensor.clone(), i);
        }
        _ => {
            if let Some((_, t)) = op.output() {
                resident.insert(t.to_string());
                freed_by.remove(t);
            }
        }
    }
}
