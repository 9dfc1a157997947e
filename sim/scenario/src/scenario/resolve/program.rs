//! The program walked op by op: each op's `buffers:`, its names declared, what it needs
//! resident in LM or DRAM, its arguments, and its layout (a plan variable substituted,
//! parsed and bound); then the plan variables and tensors no op uses.

use super::checks::{check_axes, check_numbers};
use super::ctx::Ctx;
use super::resolved::ResolvedOp;
use crate::program::{LayoutRef, Tensor};
use crate::scenario::spans::Node;
use crate::scenario::{Buffers, Op, PlanValue, Scenario, closest, located_with, plan_variable};
use miette::Report;
use mnsim_arch::{LayoutExpr, Machine, TensorLayout};
use std::collections::{BTreeMap, BTreeSet};

/// The plan selected, if any: its name and its variables.
pub(super) type PlanVars<'a> = Option<(&'a str, &'a BTreeMap<String, PlanValue>)>;

/// A layout taken from a plan: its text, the node it is written at in `plans`, and a
/// note naming the plan and the variable for messages.
type Substituted<'a> = (String, Option<&'a Node>, Option<String>);

/// Resolves the program op by op, then warns of the plan's variables and the tensors
/// no op uses.
pub(super) fn resolve_program(
    cx: &Ctx,
    sc: &Scenario,
    machine: &Machine,
    tensors: &BTreeMap<String, Tensor>,
    plan_vars: PlanVars,
    warnings: &mut Vec<String>,
) -> Result<Vec<ResolvedOp>, Report> {
    let mut walk = Walk::new(cx, sc, machine, tensors, plan_vars);
    for (i, op) in sc.program.iter().enumerate() {
        walk.op(i, op)?;
    }
    walk.warn_unused(warnings);
    Ok(walk.ops)
}

/// The walk over the program: what the scenario gives it, and what the ops so far
/// have left resident, stored, freed and used.
struct Walk<'a> {
    cx: &'a Ctx<'a>,
    sc: &'a Scenario,
    machine: &'a Machine,
    tensors: &'a BTreeMap<String, Tensor>,
    plan_vars: PlanVars<'a>,
    plan_names: Vec<&'a str>,
    declared: Vec<&'a str>,
    ops: Vec<ResolvedOp>,
    resident: BTreeSet<String>,
    freed_by: BTreeMap<String, usize>,
    in_dram: BTreeSet<String>,
    used_vars: BTreeSet<String>,
    used_tensors: BTreeSet<String>,
}

impl<'a> Walk<'a> {
    /// The walk before the first op: only the tensors with an `init` are in DRAM.
    fn new(
        cx: &'a Ctx<'a>,
        sc: &'a Scenario,
        machine: &'a Machine,
        tensors: &'a BTreeMap<String, Tensor>,
        plan_vars: PlanVars<'a>,
    ) -> Self {
        Walk {
            cx,
            sc,
            machine,
            tensors,
            plan_vars,
            plan_names: sc.plans.keys().map(String::as_str).collect(),
            declared: sc.tensors.keys().map(String::as_str).collect(),
            ops: Vec::with_capacity(sc.program.len()),
            resident: BTreeSet::new(),
            freed_by: BTreeMap::new(),
            in_dram: sc
                .tensors
                .iter()
                .filter(|(_, d)| d.init.is_some())
                .map(|(n, _)| n.clone())
                .collect(),
            used_vars: BTreeSet::new(),
            used_tensors: BTreeSet::new(),
        }
    }

    /// Checks and resolves op `i`, then records what it leaves resident and in DRAM.
    fn op(&mut self, i: usize, op: &Op) -> Result<(), Report> {
        let cx = self.cx;
        let what = format!("op {i} ({})", op.describe());
        let buffers = self.buffers(i, &what, op)?;
        self.check_declared(i, &what, op)?;
        self.check_residency(i, &what, op)?;

        // Axis arguments.
        check_axes(cx, i, &what, op, self.tensors)?;
        check_numbers(cx, i, &what, op, self.tensors)?;

        self.check_moved_copy(i, &what, op)?;
        self.check_gather(i, &what, op)?;

        // Layout: substitute, parse, bind.
        let mut op_out = op.clone();
        if let Some(b) = buffers {
            op_out.set_buffers(b);
        }
        let layout = self.layout(i, &what, op, &mut op_out)?;
        self.ops.push(ResolvedOp {
            index: i,
            op: op_out,
            layout,
            span: cx.op(i).map(|n| n.span.clone()),
            place: Default::default(),
        });
        apply_residency(
            op,
            &mut self.resident,
            &mut self.in_dram,
            &mut self.freed_by,
            i,
        );
        Ok(())
    }

    /// Op `i`'s `buffers:`: a count ≥ 1, or a plan variable holding one (`None`: the
    /// default).
    fn buffers(&mut self, i: usize, what: &str, op: &Op) -> Result<Option<i64>, Report> {
        let cx = self.cx;
        // `buffers:`: a count ≥ 1, or a plan variable holding one.
        let buffers = match op.buffers_field() {
            None => None,
            Some(Buffers::Count(b)) => Some(*b),
            Some(Buffers::Var(text)) => {
                let span = cx.op_span(i, "buffers");
                let Some(var) = plan_variable(text) else {
                    return Err(cx.err(
                        span,
                        &format!("{what}: `buffers: \"{text}\"`: give an integer ≥ 1 or a plan variable `$name`"),
                        "not a count",
                    ));
                };
                let Some((pname, vars)) = self.plan_vars else {
                    return Err(cx.err(
                        span,
                        &format!("{what}: `buffers: \"${var}\"` refers to a plan variable, but no plan is selected"),
                        "plan variable",
                    ));
                };
                self.used_vars.insert(var.to_string());
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
        Ok(buffers)
    }

    /// Every tensor op `i` names is declared; each counts as used.
    fn check_declared(&mut self, i: usize, what: &str, op: &Op) -> Result<(), Report> {
        let cx = self.cx;
        // Every name is declared.
        let mut names = op.inputs();
        names.extend(op.dram_input());
        names.extend(op.output());
        for (field, name) in &names {
            self.used_tensors.insert(name.to_string());
            if !self.sc.tensors.contains_key(*name) {
                let mut msg = format!("{what}: tensor `{name}` is not declared in `tensors`");
                if let Some(n) = closest(name, &self.declared) {
                    msg.push_str(&format!("; did you mean `{n}`?"));
                }
                return Err(cx.err(cx.op_span(i, field), &msg, "not declared"));
            }
        }
        Ok(())
    }

    /// Op `i` finds what it reads: in DRAM for a Load, in LM or DRAM for a Broadcast,
    /// in LM otherwise; a Reduce also combines over levels, at an addressable level.
    fn check_residency(&self, i: usize, what: &str, op: &Op) -> Result<(), Report> {
        let cx = self.cx;
        let machine = self.machine;
        // Residency.
        match op {
            Op::Load { tensor, .. } => {
                if !self.in_dram.contains(tensor) {
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
            Op::Gather { table, indices, .. } => {
                if !self.in_dram.contains(table) {
                    return Err(cx.err(
                        cx.op_span(i, "table"),
                        &format!(
                            "{what}: table `{table}` has no `init` and no earlier op stores it, \
                             so there is nothing in DRAM to gather from"
                        ),
                        "nothing to gather",
                    ));
                }
                self.need_resident(i, what, indices, "indices")?;
            }
            Op::Broadcast { tensor, .. } => {
                if !self.resident.contains(tensor) && !self.in_dram.contains(tensor) {
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
                self.need_resident(i, what, tensor, "tensor")?;
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
                    self.need_resident(i, what, name, field)?;
                }
            }
        }
        Ok(())
    }

    /// Tensor `name`, which op `i` reads through `field`, is resident in LM.
    fn need_resident(&self, i: usize, what: &str, name: &str, field: &str) -> Result<(), Report> {
        let cx = self.cx;
        if self.resident.contains(name) {
            return Ok(());
        }
        let why = match self.freed_by.get(name) {
            Some(j) => format!("it was freed by op {j}"),
            None => "no earlier op loads or computes it".to_string(),
        };
        Err(cx.err(
            cx.op_span(i, field),
            &format!("{what}: tensor `{name}` is not resident in LM at this point: {why}"),
            "not in LM here",
        ))
    }

    /// The `out` of a Relayout, Broadcast or Reduce (a moved copy) keeps its input's
    /// dtype and shape.
    fn check_moved_copy(&self, i: usize, what: &str, op: &Op) -> Result<(), Report> {
        let cx = self.cx;
        let tensors = self.tensors;
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
        Ok(())
    }

    /// A Gather's `out` is of its `indices`' shape followed by its `table`'s without
    /// the first axis, in the table's dtype; the indices are integers.
    fn check_gather(&self, i: usize, what: &str, op: &Op) -> Result<(), Report> {
        let Op::Gather {
            table,
            indices,
            out,
            ..
        } = op
        else {
            return Ok(());
        };
        let (t, ix, o) = (
            &self.tensors[table],
            &self.tensors[indices],
            &self.tensors[out],
        );
        if ix.dtype.is_float() || ix.dtype == mnsim_arch::DType::Pred {
            return Err(self.cx.err(
                self.cx.op_span(i, "indices"),
                &format!("{what}: indices `{indices}` are {}, not integers", ix.dtype),
                "not integers",
            ));
        }
        let want: Vec<u64> = (ix.dims_at_bound.iter())
            .chain(t.dims_at_bound.iter().skip(1))
            .copied()
            .collect();
        if o.dtype != t.dtype || o.dims_at_bound != want {
            return Err(self.cx.err(
                self.cx.op_span(i, "out"),
                &format!(
                    "{what}: `out` tensor `{out}` ({}) must be {} {want:?}: the shape of `{indices}` \
                     followed by `{table}`'s ({}) without its first axis",
                    o.laid_out(),
                    t.dtype,
                    t.laid_out()
                ),
                "wrong dtype or shape",
            ));
        }
        Ok(())
    }

    /// Op `i`'s layout, if it has one: a plan variable substituted (its text set on
    /// `op_out`), parsed and bound to its output tensor; a Broadcast's must replicate.
    /// A plan's `Any` is left to a planner, unbound.
    fn layout(
        &mut self,
        i: usize,
        what: &str,
        op: &Op,
        op_out: &mut Op,
    ) -> Result<Option<LayoutRef>, Report> {
        let cx = self.cx;
        let Some(text) = op.layout() else {
            return Ok(None);
        };
        let target = op.output().map_or("", |(_, t)| t);
        let t = &self.tensors[target];
        let field_node = cx.op_field(i, "layout");
        let (text, node, via_plan) = match plan_variable(text) {
            None => (text.to_string(), field_node, None),
            Some(var) => match self.plan_layout(i, what, var, field_node)? {
                Some(found) => found,
                None => return Ok(Some(LayoutRef::Any(var.to_string()))),
            },
        };
        op_out.set_layout(text.clone());
        let bound = LayoutExpr::parse(&text).and_then(|expr| {
            TensorLayout::bind(
                &expr,
                self.machine,
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
        if matches!(op, Op::Broadcast { .. }) && !l.levels().iter().any(|lv| lv.replicated) {
            return Err(cx.err(
                node.map(|n| n.span.clone()).or(cx.op_span(i, "layout")),
                &format!(
                    "{what}: layout `{text}` replicates over no level; a Broadcast needs \
                     one (`B@[...]`), otherwise use Load or Relayout"
                ),
                "replicates nothing",
            ));
        }
        Ok(Some(LayoutRef::Bound(l)))
    }

    /// Layout `$var` of op `i` looked up in the selected plan: its text, the node it
    /// is written at and a note naming the plan, or `None` for `Any`.
    fn plan_layout(
        &mut self,
        i: usize,
        what: &str,
        var: &str,
        field_node: Option<&'a Node>,
    ) -> Result<Option<Substituted<'a>>, Report> {
        let cx = self.cx;
        let var_span = field_node
            .map(|n| n.span.clone())
            .or(cx.op_span(i, "layout"));
        let Some((pname, vars)) = self.plan_vars else {
            let msg = if self.plan_names.is_empty() {
                format!(
                    "{what}: layout `${var}` refers to a plan variable, \
                     but the scenario has no `plans`"
                )
            } else {
                format!(
                    "{what}: layout `${var}` refers to a plan variable, \
                     but no plan is selected; plans: {}",
                    self.plan_names.join(", ")
                )
            };
            return Err(cx.err(var_span, &msg, "plan variable"));
        };
        self.used_vars.insert(var.to_string());
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
                Err(cx.err(var_span, &msg, "unknown plan variable"))
            }
            Some(PlanValue::Any) => Ok(None),
            Some(PlanValue::Layout(v)) => {
                let pnode = cx
                    .field("plans")
                    .and_then(|p| p.get(pname))
                    .and_then(|p| p.get(var));
                if plan_variable(v).is_some() {
                    return Err(cx.err(
                        pnode.map(|n| n.span.clone()),
                        &format!(
                            "plan `{pname}`, variable `{var}`: a plan value must be \
                             a layout, not another variable (`{v}`)"
                        ),
                        "not a layout",
                    ));
                }
                Ok(Some((
                    v.clone(),
                    pnode,
                    Some(format!(" (plan `{pname}`, `${var}`)")),
                )))
            }
        }
    }

    /// Warns of the selected plan's variables and the declared tensors no op uses.
    fn warn_unused(&self, warnings: &mut Vec<String>) {
        if let Some((pname, vars)) = self.plan_vars {
            for v in vars.keys() {
                if !self.used_vars.contains(v) {
                    warnings.push(format!("plan `{pname}` sets `{v}`, but no op uses `${v}`"));
                }
            }
        }
        for name in self.sc.tensors.keys() {
            if !self.used_tensors.contains(name) {
                warnings.push(format!("tensor `{name}` is declared but no op uses it"));
            }
        }
    }
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
