//! Resolving a scenario for one plan: machine, bindings, shapes, plan variables,
//! residency, layouts. Everything that can be checked before running is checked here,
//! and every error points into the scenario file.

use super::spans::{self, Node};
use super::{Init, Mode, Op, PlanValue, Scenario, Source, closest, located, located_with};
use miette::{Report, miette};
use mnsim_arch::shape::{self, Dim, Shape};
use mnsim_arch::{DType, KnobError, LayoutExpr, Machine, TensorLayout};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;

/// A scenario checked and bound for one plan.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The scenario's name.
    pub scenario: String,
    /// The plan, if one was selected.
    pub plan: Option<String>,
    /// The machine with the scenario's overrides and the command line's knobs applied.
    pub machine: Machine,
    /// Functional or timing.
    pub mode: Mode,
    /// Whether to compare outputs with a host reference.
    pub verify: bool,
    /// Insert a Reduce after every kernel whose output is partial.
    pub auto_reduce: bool,
    /// How ops are placed in time.
    pub schedule: super::Schedule,
    /// Every declared tensor, shapes bound.
    pub tensors: BTreeMap<String, ResolvedTensor>,
    /// The program, plan variables substituted, layouts bound.
    pub ops: Vec<ResolvedOp>,
    /// Every knob applied, in order: the scenario's `overrides`, then `--set`.
    pub overrides: Vec<(String, f64)>,
    /// Every binding in force (the scenario's `bind`, overridden by `--bind`).
    pub bind: Vec<(String, u64)>,
    /// Things that are allowed but probably not meant.
    pub warnings: Vec<String>,
}

/// A tensor with its shape bound.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedTensor {
    /// The tensor's name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// The shape with bindings applied (a bound dimension becomes static).
    pub shape: Shape,
    /// The shape as declared.
    pub declared: Shape,
    /// The size every dimension is laid out at: static size, bound, or (for an
    /// unbounded dimension) its binding. TensorLayouts of the tensor cover this shape.
    pub dims_at_bound: Vec<u64>,
    /// The size every dimension has at run time: its binding if it has one, else its
    /// size at the bound. Positions between the two are padding.
    pub runtime_dims: Vec<u64>,
    /// Initial DRAM contents (`None`: computed by the program).
    pub init: Option<Init>,
}

impl ResolvedTensor {
    /// Whether any dimension was declared dynamic (bounded or not).
    pub fn is_dynamic(&self) -> bool {
        !self.declared.is_static()
    }

    /// The shape layouts cover, as text: `f32[64,1024]`.
    pub fn laid_out(&self) -> String {
        let dims: Vec<String> = self.dims_at_bound.iter().map(u64::to_string).collect();
        format!("{}[{}]", self.dtype, dims.join(","))
    }
}

/// A layout after plan substitution.
// One per op: the size difference does not matter, direct matching does.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum LayoutRef {
    /// A layout bound to its tensor.
    Bound(TensorLayout),
    /// The plan leaves this variable to the planner (`Any`).
    Any(String),
}

/// One op of the program.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedOp {
    /// Position in the program (0-based).
    pub index: usize,
    /// The op, with `$var` layouts replaced by the plan's text (kept as `$var` when the
    /// plan says `Any`).
    pub op: Op,
    /// The op's layout, bound to the tensor it applies to (Load, Relayout, Broadcast:
    /// the moved tensor or `out`; Reduce: the result; kernels: `out`). `None` when the
    /// op has no layout (Store, Free, a kernel whose output layout is derived).
    pub layout: Option<LayoutRef>,
    /// Byte range of the op in the scenario file, when found.
    pub span: Option<Range<usize>>,
}

/// The plans to run, in name order, or `[None]` for a scenario without plans.
pub fn plans_to_run(sc: &Scenario) -> Vec<Option<String>> {
    if sc.plans.is_empty() {
        vec![None]
    } else {
        sc.plans.keys().cloned().map(Some).collect()
    }
}

/// `--bind NAME=...` for a name no tensor's dimension has: most likely a misspelling.
fn unknown_bind(k: &str, dims: &BTreeSet<String>) -> Report {
    let known: Vec<&str> = dims.iter().map(String::as_str).collect();
    let near = super::closest(k, &known)
        .map(|n| format!("did you mean `{n}`? "))
        .unwrap_or_default();
    let list = if known.is_empty() {
        "no tensor has a named dimension (name one in its shape, e.g. `f16[batch<=64,1024]`)"
            .to_string()
    } else {
        format!(
            "the named dimensions are {}",
            known
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    miette!("error: --bind {k}: no tensor has a dimension named `{k}`; {near}{list}")
}

/// Where things are: the scanned file, with fallbacks when the scan failed.
struct Ctx<'a> {
    src: &'a Source,
    root: Option<Node>,
}

impl Ctx<'_> {
    fn field(&self, name: &str) -> Option<&Node> {
        self.root.as_ref()?.field(name)
    }

    fn op(&self, i: usize) -> Option<&Node> {
        self.field("program")?.item(i)
    }

    fn op_field(&self, i: usize, f: &str) -> Option<&Node> {
        self.op(i)?.field(f)
    }

    /// The span of an op's field, or of the op.
    fn op_span(&self, i: usize, f: &str) -> Option<Range<usize>> {
        self.op_field(i, f)
            .or_else(|| self.op(i))
            .map(|n| n.span.clone())
    }

    fn tensor(&self, name: &str) -> Option<&Node> {
        self.field("tensors")?.get(name)
    }

    fn err(&self, span: Option<Range<usize>>, message: &str, label: &str) -> Report {
        located(self.src, span, message, label)
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

/// The machine a scenario names (before its `overrides`), loaded and validated.
pub fn machine(sc: &Scenario, src: &Source) -> Result<Machine, Report> {
    let cx = Ctx {
        src,
        root: spans::scan(&src.text),
    };
    load_machine(sc, &cx)
}

/// The machine a scenario names, loaded and validated.
fn load_machine(sc: &Scenario, cx: &Ctx) -> Result<Machine, Report> {
    let at = || {
        cx.field("machine")
            .and_then(|m| m.item(0))
            .or(cx.field("machine"))
    };
    let span = || at().map(|n| n.span.clone());
    match &sc.machine {
        super::MachineRef::Preset(name) => {
            mnsim_arch::preset(name).map_err(|e| cx.err(span(), &e.to_string(), "unknown machine"))
        }
        super::MachineRef::File(file) => {
            let base = Path::new(&cx.src.path)
                .parent()
                .unwrap_or_else(|| Path::new(""));
            let path = base.join(file);
            let shown = path.display().to_string();
            let text = crate::input::read_text(&path).map_err(|e| {
                cx.err(
                    span(),
                    &format!("cannot read machine file {shown}: {e}"),
                    "this file",
                )
            })?;
            mnsim_arch::from_ron(&text).map_err(|e| match (e.line, e.column) {
                (Some(l), c) => {
                    let off = super::offset_of(&text, l, c.unwrap_or(1));
                    let msrc = Source {
                        path: shown.clone(),
                        text: text.clone(),
                    };
                    located(&msrc, Some(off..off), &e.message, "here")
                }
                (None, _) => cx.err(
                    span(),
                    &format!("machine file {shown}: {}", e.message),
                    "this machine",
                ),
            })
        }
    }
}

/// Best-effort byte range of dimension `i` inside shape text.
fn dim_range(text: &str, i: usize) -> Option<Range<usize>> {
    let (open, close, sep) = if let Some(o) = text.find('[') {
        (o + 1, o + 1 + text[o + 1..].find(']')?, ',')
    } else {
        let o = text.find('<')? + 1;
        let end = text[o..].find([',', '>']).map_or(text.len(), |k| o + k);
        (o, end, 'x')
    };
    let mut start = open;
    for (k, part) in text[open..close].split(sep).enumerate() {
        if k == i {
            let lead = part.len() - part.trim_start().len();
            return Some(start + lead..start + part.trim_end().len());
        }
        start += part.len() + 1;
    }
    None
}

fn resolve_tensor(
    cx: &Ctx,
    name: &str,
    decl: &super::TensorDecl,
    bind: &BTreeMap<String, u64>,
    from_cli: &dyn Fn(&str) -> bool,
) -> Result<ResolvedTensor, Report> {
    let node = cx.tensor(name);
    let shape_node = node.and_then(|n| n.field("shape"));
    let shape_span = |r: Range<usize>| {
        shape_node
            .map(|n| n.inner_span(r))
            .or_else(|| node.map(|n| n.span.clone()))
    };
    let whole = 0..decl.shape.len();
    let declared = shape::parse(&decl.shape).map_err(|e| {
        let r = if e.offset == 0 && e.len == 0 {
            whole.clone()
        } else {
            e.offset..e.offset + e.len
        };
        cx.err(
            shape_span(r),
            &format!("tensor `{name}`: bad shape `{}`: {}", decl.shape, e.message),
            "here",
        )
    })?;
    if declared.dtype != decl.dtype {
        return Err(cx.err(
            node.and_then(|n| n.field("dtype"))
                .map(|n| n.span.clone())
                .or_else(|| shape_span(whole.clone())),
            &format!(
                "tensor `{name}`: dtype {:?} does not match its shape `{}` (element type {})",
                decl.dtype, decl.shape, declared.dtype
            ),
            "does not match the shape",
        ));
    }
    let mut dims_at_bound = Vec::with_capacity(declared.rank());
    let mut runtime_dims = Vec::with_capacity(declared.rank());
    for (i, d) in declared.dims.iter().enumerate() {
        let dim_span = || shape_span(dim_range(&decl.shape, i).unwrap_or(whole.clone()));
        let binding = d.name().and_then(|n| bind.get(n).map(|v| (n, *v)));
        let (at_bound, runtime) = match (d, binding) {
            (Dim::Static(n), _) => (*n, *n),
            (Dim::Bounded { bound, .. }, Some((n, v))) => {
                if v > *bound {
                    let whence = if from_cli(n) {
                        "--bind"
                    } else {
                        "the scenario's `bind`"
                    };
                    let mut more = Vec::new();
                    if !from_cli(n)
                        && let Some((k, _)) = cx.field("bind").and_then(|b| b.entry(n))
                    {
                        more.push((k.span.clone(), format!("{n} = {v}")));
                    }
                    return Err(located_with(
                        cx.src,
                        dim_span(),
                        &format!(
                            "tensor `{name}`: {whence} sets {n}={v}, above the bound {bound} of \
                             dimension {i} (`{d}`)"
                        ),
                        &format!("at most {bound}"),
                        &more,
                    ));
                }
                (*bound, v)
            }
            (Dim::Bounded { bound, .. }, None) => (*bound, *bound),
            (Dim::Dynamic { .. }, Some((_, v))) => (v, v),
            (Dim::Dynamic { name: dn }, None) => {
                let how = match dn {
                    Some(n) => format!("bind it (`bind: {{\"{n}\": 48}}` or `--bind {n}=48`)"),
                    None => "give it a name and bind it (`batch?` with `--bind batch=48`), \
                             or a bound (`<=64`)"
                        .to_string(),
                };
                return Err(cx.err(
                    dim_span(),
                    &format!(
                        "tensor `{name}`: dimension {i} (`{d}`) of `{}` is dynamic with no bound \
                         and no binding; {how}",
                        decl.shape
                    ),
                    "unbound dimension",
                ));
            }
        };
        if runtime == 0 || at_bound == 0 {
            // An empty tensor has nothing to lay out or move: the same error in both modes.
            let how = match binding {
                Some((n, _)) if from_cli(n) => format!(" (--bind {n}=0)"),
                Some((n, _)) => format!(" (`bind: {{\"{n}\": 0}}`)"),
                None => String::new(),
            };
            let fix = match d.name() {
                Some(n) => format!("bind `{n}` to at least 1"),
                None => "give it at least 1 element".to_string(),
            };
            return Err(cx.err(
                dim_span(),
                &format!(
                    "tensor `{name}`: dimension {i} (`{d}`) of `{}` has size 0{how}, so the \
                     tensor has no elements; {fix}",
                    decl.shape
                ),
                "size 0",
            ));
        }
        dims_at_bound.push(at_bound);
        runtime_dims.push(runtime);
    }
    if let Some(init) = &decl.init {
        let elems = runtime_dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let problem = match init {
            super::Init::Fill { value } => decl
                .dtype
                .check_value(*value)
                .map(|why| format!("Fill value {why}")),
            super::Init::Iota => elems.and_then(|n| {
                let last = n.saturating_sub(1) as f64;
                decl.dtype.check_value(last).map(|_| {
                    format!(
                        "Iota counts up to {last}, beyond the largest {} ({})",
                        decl.dtype,
                        decl.dtype.range().1
                    )
                })
            }),
            super::Init::Runs(runs) => {
                let total = runs.iter().try_fold(0u64, |a, &(n, _)| a.checked_add(n));
                if total != elems {
                    Some(format!(
                        "the runs of `Runs` count {} elements where the tensor has {}",
                        total.map_or("more than 2^64".to_string(), |t| t.to_string()),
                        elems.map_or("more than 2^64".to_string(), |t| t.to_string())
                    ))
                } else {
                    runs.iter().find_map(|&(_, v)| {
                        decl.dtype
                            .check_value(v)
                            .map(|why| format!("Runs value {why}"))
                    })
                }
            }
            _ => None,
        };
        if let Some(p) = problem {
            return Err(cx.err(
                node.and_then(|n| n.field("init"))
                    .or(node)
                    .map(|n| n.span.clone()),
                &format!("tensor `{name}`: {p}"),
                "this value",
            ));
        }
    }
    let shape = declared.bind(bind).map_err(|e| {
        cx.err(
            shape_span(whole.clone()),
            &format!("tensor `{name}`: {e}"),
            "here",
        )
    })?;
    Ok(ResolvedTensor {
        name: name.to_string(),
        dtype: decl.dtype,
        shape,
        declared,
        dims_at_bound,
        runtime_dims,
        init: decl.init.clone(),
    })
}

/// Numeric fields of ops are usable numbers, and a kernel's operands share one dtype
/// (mixed dtypes are rejected; see docs/kernels.md).
fn check_numbers(
    cx: &Ctx,
    i: usize,
    what: &str,
    op: &Op,
    tensors: &BTreeMap<String, ResolvedTensor>,
) -> Result<(), Report> {
    let eps = match op {
        Op::LayerNorm { eps, .. } => Some((*eps, "eps")),
        Op::Kernel {
            kernel: mnsim_kernels::Kernel::LayerNorm { eps, .. },
            ..
        } => Some((*eps, "kernel")),
        Op::Kernel { kernel, .. } => mnsim_kernels::training_eps(kernel).map(|e| (e, "kernel")),
        _ => None,
    };
    if let Some((eps, field)) = eps
        && !(eps.is_finite() && eps >= 0.0)
    {
        return Err(cx.err(
            cx.op_span(i, field),
            &format!("{what}: eps must be a finite number ≥ 0, got {eps}"),
            "this value",
        ));
    }
    if let Op::Kernel { kernel, inputs, .. } = op
        && inputs.len() != kernel.arity()
    {
        return Err(cx.err(
            cx.op_span(i, "inputs"),
            &format!(
                "{what}: {} takes {} input(s), `inputs` lists {}",
                kernel.name(),
                kernel.arity(),
                inputs.len()
            ),
            "here",
        ));
    }
    let operands: Vec<(&str, &str)> = match op {
        Op::Unary { input, out, .. }
        | Op::ReduceAxes { input, out, .. }
        | Op::Softmax { input, out, .. }
        | Op::LayerNorm { input, out, .. }
        | Op::Transpose { input, out, .. } => vec![("input", input), ("out", out)],
        Op::Binary { a, b, out, .. }
        | Op::MatMul { a, b, out, .. }
        | Op::BatchMatMul { a, b, out, .. } => vec![("a", a), ("b", b), ("out", out)],
        _ => return Ok(()),
    };
    let Some(&(_, first)) = operands.first() else {
        return Ok(());
    };
    let Some(d0) = tensors.get(first).map(|t| t.dtype) else {
        return Ok(());
    };
    // Mixed precision (docs/kernels.md): float operands and results mix freely (the
    // kernel computes in the widest and rounds once into the result); a matrix kernel's
    // integer operands may accumulate into an integer or a float result; integers and
    // floats otherwise meet only through an explicit Cast, Quantize or Dequantize.
    let family = |d: DType| {
        if d.is_float() {
            0
        } else if d == DType::Pred {
            2
        } else {
            1
        }
    };
    let matrix = matches!(op, Op::MatMul { .. } | Op::BatchMatMul { .. });
    for &(field, name) in &operands[1..] {
        if let Some(t) = tensors.get(name)
            && family(t.dtype) != family(d0)
            && !(matrix && field == "out" && family(d0) == 1 && t.dtype.is_float())
        {
            return Err(cx.err(
                cx.op_span(i, field),
                &format!(
                    "{what}: `{name}` is {} but `{first}` is {d0}: a kernel mixes float types (and a \
                     MatMul's integer operands accumulate into a wider result), but integers and \
                     floats meet only through an explicit Cast, Quantize or Dequantize; mnsim never \
                     converts implicitly between them",
                    t.dtype
                ),
                "another dtype",
            ));
        }
    }
    Ok(())
}

/// Axis numbers are within the input's rank; a permutation is a permutation.
fn check_axes(
    cx: &Ctx,
    i: usize,
    what: &str,
    op: &Op,
    tensors: &BTreeMap<String, ResolvedTensor>,
) -> Result<(), Report> {
    use mnsim_kernels::Kernel;
    let Some((kernel, inputs, _)) = op.kernel() else {
        return Ok(());
    };
    // The field that holds the axes: the named op's own, or the generic op's `kernel`.
    let named = |f: &'static str| {
        if matches!(op, Op::Kernel { .. }) {
            "kernel"
        } else {
            f
        }
    };
    let (axes, field, perm) = match &kernel {
        Kernel::ReduceAxes { axes, .. } => (axes.clone(), named("axes"), false),
        Kernel::Softmax { axis } | Kernel::LayerNorm { axis, .. } => {
            (vec![*axis], named("axis"), false)
        }
        Kernel::Transpose { perm } => (perm.clone(), named("perm"), true),
        Kernel::BiasAdd { axis } | Kernel::Concat { axis, .. } => {
            (vec![*axis], named("axis"), false)
        }
        Kernel::Quant(mnsim_kernels::Quant {
            params:
                mnsim_kernels::QuantParams::Static {
                    axis: Some(axis), ..
                },
            ..
        }) => (vec![*axis], named("axis"), false),
        Kernel::Quant(_) => return Ok(()),
        Kernel::Unary(_)
        | Kernel::Binary(_)
        | Kernel::MatMul
        | Kernel::BatchMatMul
        | Kernel::Select
        | Kernel::Clamp { .. }
        | Kernel::Elu { .. }
        | Kernel::GeneralMatMul { .. }
        | Kernel::Reshape { .. }
        | Kernel::Slice { .. }
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_) => return Ok(()),
        Kernel::Eltwise(_) | Kernel::Norm(_) => match mnsim_kernels::training_axes(&kernel) {
            Some(axes) => (axes, named("kernel"), false),
            None => return Ok(()),
        },
    };
    let Some(&input) = inputs.first() else {
        return Ok(());
    };
    let rank = tensors[input].dims_at_bound.len();
    let mut seen = vec![false; rank];
    for &a in &axes {
        let problem = if a >= rank {
            Some(format!(
                "axis {a} is out of range for `{input}` of rank {rank}"
            ))
        } else if seen[a] {
            Some(format!("axis {a} is repeated"))
        } else {
            seen[a] = true;
            None
        };
        if let Some(p) = problem {
            return Err(cx.err(cx.op_span(i, field), &format!("{what}: {p}"), "here"));
        }
    }
    if perm && axes.len() != rank {
        return Err(cx.err(
            cx.op_span(i, field),
            &format!(
                "{what}: `perm` must list each of the {rank} axes of `{input}` once, it has {}",
                axes.len()
            ),
            "not a permutation",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::dim_range;

    #[test]
    fn dims_in_text() {
        let t = "f16[ batch<=64 ,1024]{0,1}";
        assert_eq!(&t[dim_range(t, 0).unwrap()], "batch<=64");
        assert_eq!(&t[dim_range(t, 1).unwrap()], "1024");
        assert!(dim_range(t, 2).is_none());
        let t = "tensor<?x512xf32, #stablehlo.bounds<64, ?>>";
        assert_eq!(&t[dim_range(t, 0).unwrap()], "?");
        assert_eq!(&t[dim_range(t, 1).unwrap()], "512");
    }
}
