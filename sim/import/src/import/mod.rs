//! Import of oneDNN Graph JSON files (`mnsim import G.json`): the graph becomes a
//! scenario whose inputs are DRAM tensors with seeded random values, whose outputs are
//! stored, and whose every layout is a plan variable — `Any` in plan `auto`, the
//! import's default layout in plan `default`. See `docs/import.md`.
//!
//! `json` reads the text keeping spans, `graph` checks the document and (through
//! `connections`) orders the ops, `lower` turns each op into kernels, `layouts` chooses
//! the default layouts, and this module writes the scenario text.

mod connections;
mod conv;
pub mod graph;
mod infer;
pub mod json;
pub mod layouts;
pub mod lower;
pub mod onnx;
mod ops;
mod quant;
pub mod stablehlo;
mod train;

pub use lower::Strides;

use crate::scenario::print::{self, Comments};
use crate::scenario::{
    self, Init, MachineRef, Mode, Op, PlanValue, Scenario, Schedule, Source, TensorDecl,
};
use miette::{Report, miette};
use mnsim_arch::Machine;
use std::collections::{BTreeMap, BTreeSet};

/// Import options.
#[derive(Clone, Debug)]
pub struct Options {
    /// A preset name or a machine RON file.
    pub machine: String,
    /// Where graph inputs' DRAM layouts come from.
    pub strides: Strides,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            machine: "mncore2".into(),
            strides: Strides::File,
        }
    }
}

/// Tensors up to this many elements are small enough to verify in functional mode by
/// default (the import tests use the same bound).
pub const FUNCTIONAL_ELEMS: u64 = 1 << 21;

/// An imported graph.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The scenario.
    pub scenario: Scenario,
    /// The scenario in RON, with comments (what `import -o` writes).
    pub text: String,
    /// The op kinds of the graph, in order of first appearance.
    pub kinds: Vec<String>,
    /// Graph ops and the kernel ops they became.
    pub graph_ops: usize,
    pub kernels: usize,
    /// The largest tensor's element count.
    pub max_elems: u64,
}

/// Whether `path`/`text` hold a graph to import rather than a RON scenario: a JSON
/// graph (a `.json` extension, or text that starts with `{`) or StableHLO MLIR
/// ([`stablehlo::is_mlir`]). An ONNX model is binary: [`onnx::is_onnx`] tells it by
/// its path before any text is read.
pub fn is_graph(path: &std::path::Path, text: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || text.trim_start().starts_with('{')
        || stablehlo::is_mlir(path, text)
}

fn machine_of(name: &str) -> Result<(Machine, MachineRef), Report> {
    if name.ends_with(".ron") || name.contains('/') {
        let text = crate::input::read_text(std::path::Path::new(name))
            .map_err(|e| miette!("error: cannot read machine file {name}: {e}"))?;
        let m = mnsim_arch::from_ron(&text).map_err(|e| miette!("error: {name}: {e}"))?;
        let path = std::fs::canonicalize(name)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| name.to_string());
        Ok((m, MachineRef::File(path)))
    } else {
        let m = mnsim_arch::preset(name).map_err(|e| miette!("error: --machine: {e}"))?;
        Ok((m, MachineRef::Preset(name.to_string())))
    }
}

fn located(src: &Source, e: graph::At) -> Report {
    scenario::located(src, e.span, &e.message, "here")
}

/// Imports the graph in `src` (its path names the file in messages and comments).
pub fn import(src: &Source, opts: &Options) -> Result<Imported, Report> {
    let doc = json::parse(&src.text).map_err(|e| {
        scenario::located(
            src,
            Some(e.offset..e.offset),
            &format!("malformed JSON: {}", e.message),
            "here",
        )
    })?;
    let g = graph::read(&doc).map_err(|e| located(src, e))?;
    let low = lower::lower(&g, opts.strides).map_err(|e| located(src, e))?;
    let (machine, machine_ref) = machine_of(&opts.machine)?;
    // A tensor DRAM cannot hold is refused before any layout is looked for over its axes.
    for d in &low.decls {
        if let Err(e) = crate::program::check_dram(&machine, &d.name, d.dtype, &d.dims) {
            let span = d
                .graph_id
                .and_then(|id| g.tensors.get(&id))
                .map(|t| t.span.clone());
            let id = d
                .graph_id
                .map(|i| format!(" (graph tensor id {i})"))
                .unwrap_or_default();
            return Err(scenario::located(src, span, &format!("{e}{id}"), "here"));
        }
    }
    let mut kinds: Vec<String> = Vec::new();
    for op in &g.ops {
        if !kinds.contains(&op.kind) {
            kinds.push(op.kind.clone());
        }
    }
    let head = Header {
        title: format!(
            "a oneDNN Graph{} imported by `mnsim import`: {} ops ({})",
            g.version
                .as_deref()
                .map(|v| format!(" (version {v})"))
                .unwrap_or_default(),
            g.ops.len(),
            kinds.join(", ")
        ),
        inputs: "Graph inputs are DRAM tensors (their strides give the DRAM layout)",
        kinds,
        ops: g.ops.len(),
    };
    Ok(write(src, &head, &low, &machine, machine_ref))
}

/// Imports StableHLO MLIR text (`mnsim import model.mlir`), its symbolic dimensions
/// bound by `binds`.
pub fn import_mlir(
    src: &Source,
    opts: &Options,
    binds: &stablehlo::Binds,
) -> Result<Imported, Report> {
    let normal = stablehlo::normalised(src);
    let src = normal.as_ref().unwrap_or(src);
    let out = stablehlo::lower(src, binds)?;
    let (machine, machine_ref) = machine_of(&opts.machine)?;
    // A tensor DRAM cannot hold is refused before any layout is looked for over its
    // axes, at the parameter or op it comes from.
    for d in &out.low.decls {
        crate::program::check_dram(&machine, &d.name, d.dtype, &d.dims).map_err(|e| {
            scenario::located(src, out.spans.get(&d.name).cloned(), &e.to_string(), "here")
        })?;
    }
    let bound: Vec<String> = out
        .low
        .bind
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    let head = Header {
        title: format!(
            "StableHLO imported by `mnsim import`: {} ops ({}){}",
            out.ops,
            out.kinds.join(", "),
            if bound.is_empty() {
                String::new()
            } else {
                format!(
                    ", symbolic dimensions bound as {} (shapes inside the program are \
                     for these sizes: import again to change them)",
                    bound.join(", ")
                )
            }
        ),
        inputs: "Function arguments are DRAM tensors (row-major, or the file's \
                 `mhlo.layout_mode`), constants that meet a tensor are DRAM tensors too",
        kinds: out.kinds,
        ops: out.ops,
    };
    Ok(write(src, &head, &out.low, &machine, machine_ref))
}

/// Imports an ONNX model (`mnsim import model.onnx`) read from `path` as `bytes`, its
/// named dynamic dimensions bound by `binds`. The returned source names the file and
/// holds the scenario text (the model itself is binary).
pub fn import_onnx(
    path: &str,
    bytes: &[u8],
    opts: &Options,
    binds: &stablehlo::Binds,
) -> Result<(Imported, Source), Report> {
    let out = onnx::lower(path, bytes, binds)?;
    let (machine, machine_ref) = machine_of(&opts.machine)?;
    // A tensor DRAM cannot hold is refused before any layout is looked for over its axes.
    for d in &out.low.decls {
        crate::program::check_dram(&machine, &d.name, d.dtype, &d.dims)
            .map_err(|e| miette!("error: {path}: {e}"))?;
    }
    let bound: Vec<String> = out
        .low
        .bind
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    let head = Header {
        title: format!(
            "ONNX (opset {}, written by {}) imported by `mnsim import`: {} nodes ({}){}",
            out.opset,
            out.producer,
            out.ops,
            out.kinds.join(", "),
            if bound.is_empty() {
                String::new()
            } else {
                format!(
                    ", dynamic dimensions bound as {} (shapes inside the program are \
                     for these sizes: import again to change them)",
                    bound.join(", ")
                )
            }
        ),
        inputs: "Graph inputs and weights (initializers) are DRAM tensors (row-major; a weight \
                 read transposed keeps its bytes in place), constants that meet a tensor are \
                 DRAM tensors too",
        kinds: out.kinds,
        ops: out.ops,
    };
    let src = Source {
        path: path.to_string(),
        text: String::new(),
    };
    let imp = write(&src, &head, &out.low, &machine, machine_ref);
    Ok((imp, src))
}

/// What the scenario's opening comment says about the file.
struct Header {
    /// After `// {file}: `.
    title: String,
    /// How graph inputs become DRAM tensors.
    inputs: &'static str,
    kinds: Vec<String>,
    ops: usize,
}

fn stem(path: &str) -> String {
    std::path::Path::new(path)
        .file_stem()
        .map_or_else(|| path.to_string(), |s| s.to_string_lossy().into_owned())
}

fn write(
    src: &Source,
    head: &Header,
    low: &lower::Lowered,
    m: &Machine,
    machine: MachineRef,
) -> Imported {
    // Tensors the program touches; outputs that no kernel produces (unused statistics
    // of a LayerNorm, say) and are not inputs are dropped.
    let produced: BTreeSet<&str> = low.steps.iter().map(|s| s.out.as_str()).collect();
    let used: BTreeSet<&str> = low
        .steps
        .iter()
        .flat_map(|s| s.names().map(String::as_str))
        .collect();
    let outputs: Vec<&str> = low
        .outputs
        .iter()
        .map(String::as_str)
        .filter(|o| produced.contains(o) || low.inputs.iter().any(|i| i == o))
        .collect();
    let keep = |n: &str| used.contains(n) || outputs.contains(&n);
    let decls: Vec<&lower::Decl> = low.decls.iter().filter(|d| keep(&d.name)).collect();
    let owned: Vec<lower::Decl> = decls.iter().map(|d| (*d).clone()).collect();
    let outs: Vec<String> = outputs.iter().map(|o| o.to_string()).collect();
    let defaults = layouts::default_layouts(m, &owned, &low.steps, &outs, false);
    let split = layouts::default_layouts(m, &owned, &low.steps, &outs, true);
    let max_elems = decls
        .iter()
        .map(|d| d.dims.iter().fold(1u64, |a, &b| a.saturating_mul(b)))
        .max()
        .unwrap_or(0);
    let mode = if max_elems <= FUNCTIONAL_ELEMS {
        Mode::Functional
    } else {
        Mode::Timing
    };
    let file = stem(&src.path);
    let mut c = Comments {
        head: header(&file, head, mode),
        ..Comments::default()
    };
    let mut tensors = BTreeMap::new();
    for d in &decls {
        tensors.insert(d.name.clone(), decl(d));
        c.order.push(d.name.clone());
        let mut note = Vec::new();
        if d.seed.is_some() {
            note.push("graph input");
        }
        if d.init.is_some() {
            note.push("evaluated at import");
        }
        if d.constant {
            note.push("constant");
        }
        if outputs.contains(&d.name.as_str()) {
            note.push("graph output");
        }
        if !note.is_empty() {
            c.tensors.insert(d.name.clone(), note.join(", "));
        }
    }
    let (program, loaded, each) = program(low, &outputs, &produced, &mut c);
    let vars: Vec<&str> = decls
        .iter()
        .map(|d| d.name.as_str())
        .filter(|n| produced.contains(n) || loaded.contains(n))
        .collect();
    let plan = |f: &dyn Fn(&str) -> PlanValue| -> BTreeMap<String, PlanValue> {
        vars.iter().map(|v| (v.to_string(), f(v))).collect()
    };
    let mut plans = BTreeMap::new();
    plans.insert("auto".to_string(), plan(&|_| PlanValue::Any));
    plans.insert(
        "default".to_string(),
        plan(&|v| PlanValue::Layout(defaults[v].clone())),
    );
    // The defaults with sums and contractions split over the tree too (partial sums
    // completed by Reduces), where that gives other layouts: a second seed.
    if vars.iter().any(|v| split[*v] != defaults[*v]) {
        plans.insert(
            "default_split".to_string(),
            plan(&|v| PlanValue::Layout(split[v].clone())),
        );
    }
    c.tail = vec![
        "A kernel whose output is partial (a contraction split over levels) is followed".into(),
        "by the Reduces that complete it, so plans may split a MatMul's K axis.".into(),
    ];
    let scenario = Scenario {
        name: file,
        description: None,
        machine,
        overrides: BTreeMap::new(),
        mode,
        bind: low.bind.iter().cloned().collect(),
        tensors,
        program,
        places: scenario::runs_of(&each),
        plans,
        verify: true,
        // Partial sums of a split contraction are completed by tree Reduces (as `run`
        // inserts them), so the planner may split a MatMul's K axis.
        auto_reduce: true,
        schedule: Schedule::default(),
    };
    Imported {
        text: print::print(&scenario, &c),
        scenario,
        kinds: head.kinds.clone(),
        graph_ops: head.ops,
        kernels: low.steps.len(),
        max_elems,
    }
}

/// The opening comment: what the file is and how it became a scenario.
fn header(file: &str, head: &Header, mode: Mode) -> Vec<String> {
    let mut h = vec![
        format!("{file}: {}.", head.title),
        format!("{} with seeded random", head.inputs),
    ];
    h.extend(
        [
            "values; graph outputs are stored; every other tensor stays in LM and is freed after its",
            "last use. Every layout is a plan variable named after its tensor: plan `auto` leaves",
            "them to the planner (`Any`), plan `default` holds the import's default layouts",
            "(`default_split`, where present, the same with sums and contractions split over",
            "the tree, their partial sums completed by Reduces).",
        ]
        .map(String::from),
    );
    h.push(format!(
        "Mode: {} (functional when every tensor has at most 2^21 elements).",
        print::one_line(&mode)
    ));
    h
}

/// A tensor's declaration: its dtype and XLA shape (symbolic dimensions by name, `b?`),
/// and its DRAM contents.
fn decl(d: &lower::Decl) -> TensorDecl {
    let dims: Vec<String> = d
        .dims
        .iter()
        .enumerate()
        .map(|(i, v)| match d.dim_names.get(i) {
            Some(Some(n)) => format!("{n}?"),
            _ => v.to_string(),
        })
        .collect();
    let m2m: Vec<String> = d.minor_to_major.iter().map(usize::to_string).collect();
    let init = match (&d.init, d.seed) {
        (Some(i), _) => Some(i.clone()),
        (None, Some(seed)) => Some(Init::Random { seed }),
        (None, None) => None,
    };
    TensorDecl {
        dtype: d.dtype,
        shape: format!("{}[{}]{{{}}}", d.dtype, dims.join(","), m2m.join(",")),
        init,
    }
}

/// The program: each graph input loaded before its first use, each step with its
/// layout variable, every tensor but the outputs freed after its last use, the outputs
/// stored. Returns it with the tensors it loads and each op's place (a Load's and a
/// Free's that of the step they serve, a Store's unknown); notes each graph op's first
/// step in `c`.
fn program<'a>(
    low: &'a lower::Lowered,
    outputs: &[&'a str],
    produced: &BTreeSet<&str>,
    c: &mut Comments,
) -> (Vec<Op>, BTreeSet<&'a str>, Vec<scenario::Place>) {
    let var = |n: &str| format!("${n}");
    let load = |n: &str| Op::Load {
        tensor: n.to_string(),
        layout: var(n),
        buffers: None,
    };
    let free = |n: &str| Op::Free {
        tensor: n.to_string(),
    };
    // Last use of every tensor, by step.
    let mut last: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, s) in low.steps.iter().enumerate() {
        for n in s.inputs.iter().chain([&s.out]) {
            last.insert(n.as_str(), i);
        }
    }
    let mut ops = Vec::new();
    let mut each = Vec::new();
    let mut loaded: BTreeSet<&str> = BTreeSet::new();
    let inputs: BTreeSet<&str> = low.inputs.iter().map(String::as_str).collect();
    for (i, s) in low.steps.iter().enumerate() {
        if let Some(o) = &s.origin {
            c.ops.insert(ops.len(), o.clone());
        }
        for n in &s.inputs {
            if inputs.contains(n.as_str()) && loaded.insert(n.as_str()) {
                ops.push(load(n));
            }
        }
        ops.push(match &s.action {
            lower::Action::Kernel(k) => crate::scenario::pretty::kernel_op(
                k,
                s.inputs.clone(),
                s.out.clone(),
                if s.cast { "Cast" } else { k.name() },
                Some(var(&s.out)),
                None,
            ),
            lower::Action::Gather { table } => Op::Gather {
                table: table.clone(),
                indices: s.inputs.first().cloned().unwrap_or_default(),
                out: s.out.clone(),
                layout: var(&s.out),
                buffers: None,
            },
        });
        let mut freed: BTreeSet<&str> = BTreeSet::new();
        for n in s.inputs.iter().chain([&s.out]) {
            if last.get(n.as_str()) == Some(&i) && !outputs.contains(&n.as_str()) && freed.insert(n)
            {
                ops.push(free(n));
            }
        }
        each.resize(ops.len(), s.place);
    }
    for o in outputs {
        if !produced.contains(o) && loaded.insert(o) {
            ops.push(load(o));
        }
        ops.push(Op::Store {
            tensor: o.to_string(),
        });
    }
    each.resize(ops.len(), scenario::Place::default());
    (ops, loaded, each)
}

/// Loads a graph file as a scenario (for `run`, `plan`, `compare`, `check`): imports it
/// for mncore2 with the file's strides. The source names the file `G.json (imported)`
/// and holds the scenario text, so later errors point into the imported scenario.
pub fn load(path: &std::path::Path, text: &str) -> Result<(Scenario, Source), Report> {
    load_with(path, text, &BTreeMap::new())
}

/// Loads an ONNX model (read as `bytes`) as a scenario, like [`load_with`], for the
/// machine `opts` names.
pub fn load_onnx(
    path: &std::path::Path,
    bytes: &[u8],
    binds: &BTreeMap<String, u64>,
    opts: &Options,
) -> Result<(Scenario, Source), Report> {
    let name = path.display().to_string();
    let (imp, _) = import_onnx(&name, bytes, opts, binds)?;
    Ok((
        imp.scenario,
        Source {
            path: format!("{name} (imported)"),
            text: imp.text,
        },
    ))
}

/// [`load`] with the bindings of a StableHLO file's symbolic dimensions (`--bind`).
pub fn load_with(
    path: &std::path::Path,
    text: &str,
    binds: &BTreeMap<String, u64>,
) -> Result<(Scenario, Source), Report> {
    load_for(path, text, binds, &Options::default())
}

/// [`load_with`] for the machine `opts` names (`--machine`).
pub fn load_for(
    path: &std::path::Path,
    text: &str,
    binds: &BTreeMap<String, u64>,
    opts: &Options,
) -> Result<(Scenario, Source), Report> {
    let name = path.display().to_string();
    let src = Source {
        path: name.clone(),
        text: text.to_string(),
    };
    let imp = if stablehlo::is_mlir(path, text) {
        import_mlir(&src, opts, binds)?
    } else {
        import(&src, opts)?
    };
    let path = format!("{name} (imported)");
    Ok((
        imp.scenario,
        Source {
            path,
            text: imp.text,
        },
    ))
}

/// Whether a loaded source is an imported graph.
pub fn is_imported(src: &Source) -> bool {
    src.path.ends_with(" (imported)")
}
