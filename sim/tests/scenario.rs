//! Scenario files: loading, resolution, located errors, `mnsim check`.

mod common;

use miette::{GraphicalReportHandler, GraphicalTheme, Report};
use mnsim_kernels::Kernel;
use mnsim_sim::program::{EntityRef as _, LayoutRef, OpId};
use mnsim_sim::scenario::{
    self, Init, KernelOp, MachineRef, Mode, Op, PlanValue, Resolved, Scenario, Shorthand, Source,
    UnaryOp,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The diagnostic as a terminal shows it, without colour.
fn render(r: &Report) -> String {
    let mut s = String::new();
    GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .with_width(400)
        .render_report(&mut s, r.as_ref())
        .expect("renders");
    s
}

fn load(name: &str) -> (Scenario, Source) {
    scenario::load(&data(name)).unwrap_or_else(|e| panic!("{name}: {}", render(&e)))
}

fn resolve(sc: &Scenario, src: &Source, plan: Option<&str>) -> Result<Resolved, Report> {
    scenario::resolve(sc, src, plan, &[], &BTreeMap::new())
}

fn source(name: &str, text: &str) -> Source {
    Source {
        path: name.to_string(),
        text: text.to_string(),
    }
}

// ---------------------------------------------------------------------------
// The docs/scenarios.md example
// ---------------------------------------------------------------------------

#[test]
fn spec_example_loads_as_written() {
    let (sc, _) = load("spec_example.ron");
    assert_eq!(sc.name, "mlp block");
    assert_eq!(sc.machine, MachineRef::Preset("mncore2".into()));
    assert_eq!(sc.overrides["links.L1B.distribute.parent"], 1024.0);
    assert_eq!(sc.mode, Mode::Functional);
    assert_eq!(sc.bind["batch"], 48);
    assert_eq!(sc.tensors.len(), 3);
    assert_eq!(sc.tensors["x"].init, Some(Init::Random { seed: 1 }));
    assert_eq!(sc.tensors["w1"].shape, "f16[1024,4096]{0,1}");
    assert_eq!(sc.tensors["h"].init, None);
    assert_eq!(sc.program.len(), 5);
    assert_eq!(
        sc.program[3],
        Op::Kernel(KernelOp {
            kernel: Kernel::Unary(UnaryOp::Relu),
            inputs: vec!["h".into()],
            out: "h".into(),
            layout: None,
            buffers: None,
            algorithm: None,
            written: Some(Shorthand::Unary),
        })
    );
    assert_eq!(sc.plans["cols"]["act_out"], PlanValue::Any);
    assert_eq!(sc.plans["rows"]["act"], PlanValue::Layout("...".into()));
    assert!(sc.verify);
    assert_eq!(sc.description, None);
}

#[test]
fn spec_example_placeholder_layouts_are_located_errors() {
    let (sc, src) = load("spec_example.ron");
    for (plan, line) in [("cols", 21), ("rows", 20)] {
        let e = resolve(&sc, &src, Some(plan)).expect_err("`...` is not a layout");
        let msg = e.to_string();
        assert!(msg.contains("bad layout `...`"), "{msg}");
        assert!(msg.contains(&format!("plan `{plan}`, `$act`")), "{msg}");
        let r = render(&e);
        assert!(
            r.contains(&format!("spec_example.ron:{line}:26]")),
            "{plan}: {r}"
        );
        assert!(r.contains("used by op 0"), "{r}");
    }
    let e = resolve(&sc, &src, None).expect_err("variables need a plan");
    assert!(e.to_string().contains("no plan is selected"), "{e}");
}

#[test]
fn spec_example_with_real_layouts_resolves_with_a_warning() {
    let (sc, src) = load("mlp_mncore2.ron");
    assert_eq!(
        scenario::plans_to_run(&sc),
        vec![Some("cols".to_string()), Some("rows".to_string())]
    );
    for plan in ["rows", "cols"] {
        let r = resolve(&sc, &src, Some(plan)).unwrap_or_else(|e| panic!("{}", render(&e)));
        assert_eq!(r.machine.name, "mncore2");
        assert_eq!(r.mode, Mode::Functional);
        assert!(r.verify);
        assert_eq!(
            r.overrides,
            vec![("links.L1B.distribute.parent".to_string(), 1024.0)]
        );
        assert_eq!(
            mnsim_arch::get_knob(&r.machine, "links.L1B.distribute.parent").unwrap(),
            1024.0
        );
        assert_eq!(r.program.named("x").unwrap().dims_at_bound, vec![64, 1024]);
        assert_eq!(r.program.named("x").unwrap().runtime_dims, vec![64, 1024]);
        assert!(
            r.warnings.iter().any(|w| w.contains("`batch`")),
            "{:?}",
            r.warnings
        );
        assert_eq!(r.program.ops.len(), 5);
        assert!(matches!(
            r.program.ops[OpId::new(0)].layout,
            Some(LayoutRef::Bound(_))
        ));
        assert!(r.program.ops[OpId::new(3)].layout.is_none());
        assert!(r.program.ops[OpId::new(4)].layout.is_none());
    }
    let r = resolve(&sc, &src, Some("cols")).unwrap();
    assert_eq!(
        r.program.ops[OpId::new(2)].layout,
        Some(LayoutRef::Any("act_out".into()))
    );
    assert_eq!(
        r.program.ops[OpId::new(2)].layout_text.as_deref(),
        Some("$act_out")
    );
    assert_eq!(
        r.program.ops[OpId::new(0)].layout_text.as_deref(),
        Some("((4_PE, 16), (8_L2B, 8_L1B, 4_MAB, 4_W))")
    );
}

// ---------------------------------------------------------------------------
// A valid toy4 scenario
// ---------------------------------------------------------------------------

fn bound(r: &Resolved, op: usize) -> &mnsim_arch::TensorLayout {
    match &r.program.ops[OpId::new(op)].layout {
        Some(LayoutRef::Bound(l)) => l,
        other => panic!("op {op}: {other:?}"),
    }
}

#[test]
fn toy4_plans_bind_their_layouts() {
    let (sc, src) = load("toy4_rows_cols.ron");
    let rows = resolve(&sc, &src, Some("rows")).unwrap();
    let cols = resolve(&sc, &src, Some("cols")).unwrap();
    for r in [&rows, &cols] {
        assert_eq!(r.machine.name, "toy4");
        assert_eq!(r.mode, Mode::Timing);
        assert!(!r.verify);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        let x = &r.program.named("x").unwrap();
        assert_eq!(x.dims_at_bound, vec![12, 8]);
        assert_eq!(x.runtime_dims, vec![12, 8]);
        assert_eq!(x.init, Some(Init::Iota));
        assert_eq!(r.program.ops.len(), 2);
        assert_eq!(r.program.ops[OpId::new(1)].layout, None);
        let span = r.program.ops[OpId::new(0)].span.clone().unwrap();
        assert!(src.text[span].starts_with("Load(tensor: \"x\""));
    }
    assert_eq!(rows.plan.as_deref(), Some("rows"));
    // docs/layout.md worked examples: element (5,3).
    let p = bound(&rows, 0).place(&[5, 3]).unwrap();
    assert_eq!((p.pos.clone(), p.addr), (vec![Some(1)], 19));
    assert_eq!(
        rows.program.ops[OpId::new(0)].layout_text.as_deref(),
        Some("((4_PE, 3:8), (8:1))")
    );
    let p = bound(&cols, 0).place(&[5, 3]).unwrap();
    assert_eq!((p.pos.clone(), p.addr), (vec![Some(1)], 11));
    assert_eq!(
        cols.program.ops[OpId::new(0)].layout_text.as_deref(),
        Some("((12:2), (4_PE, 2:1))")
    );
}

#[test]
fn dynamic_dimensions_bind_and_pad() {
    let text = r#"Scenario(
        name: "dyn",
        machine: Preset("toy4"),
        bind: {"batch": 12},
        tensors: {
            "x": (dtype: F32, shape: "f32[batch<=16,8]", init: Ones),
            "y": (dtype: F32, shape: "f32[n,8]", init: Fill(value: 0.5)),
        },
        program: [
            Load(tensor: "x", layout: "((4_PE, 4:8), (8:1))"),
            Load(tensor: "y", layout: "((4_PE, 3:8), (8:1))"),
            Binary(op: Add, a: "x", b: "x", out: "x"),
            Free(tensor: "y"),
        ],
    )"#;
    let sc = scenario::parse(text, "dyn.ron").unwrap();
    let src = source("dyn.ron", text);
    let binds = BTreeMap::from([("n".to_string(), 12u64)]);
    let r = scenario::resolve(&sc, &src, None, &[], &binds).unwrap();
    let x = &r.program.named("x").unwrap();
    assert_eq!(x.dims_at_bound, vec![16, 8]);
    assert_eq!(x.runtime_dims, vec![12, 8]);
    assert_eq!(x.shape.to_string(), "f32[12,8]");
    assert_eq!(x.declared.to_string(), "f32[batch<=16,8]");
    assert_eq!(r.program.named("y").unwrap().dims_at_bound, vec![12, 8]);
    assert_eq!(
        r.program.named("y").unwrap().init,
        Some(Init::Fill { value: 0.5 })
    );
    assert_eq!(
        r.bind,
        vec![("batch".to_string(), 12), ("n".to_string(), 12)]
    );
    assert_eq!(bound(&r, 0).logical_shape(), &[16, 8]);
    // The command line wins over the file.
    let binds = BTreeMap::from([("batch".to_string(), 5u64), ("n".to_string(), 12)]);
    let r = scenario::resolve(&sc, &src, None, &[("levels.PE.count".into(), 4.0)], &binds).unwrap();
    assert_eq!(r.program.named("x").unwrap().runtime_dims, vec![5, 8]);
    assert_eq!(r.overrides, vec![("levels.PE.count".to_string(), 4.0)]);
    // ... and is checked against the bound too.
    let binds = BTreeMap::from([("batch".to_string(), 17u64), ("n".to_string(), 12)]);
    let e = scenario::resolve(&sc, &src, None, &[], &binds).unwrap_err();
    assert!(e.to_string().contains("--bind sets batch=17"), "{e}");
    assert!(render(&e).contains("[dyn.ron:6:43]"), "{}", render(&e));
    // Without `n`, `y` cannot be laid out.
    let e = resolve(&sc, &src, None).unwrap_err();
    assert!(e.to_string().contains("dimension 0 (`n`)"), "{e}");
    // Unknown `--set` knob.
    let e = scenario::resolve(&sc, &src, None, &[("nope".into(), 1.0)], &binds).unwrap_err();
    assert!(e.to_string().contains("unknown knob 'nope'"), "{e}");
}

#[test]
fn machine_files_are_relative_to_the_scenario() {
    let tmp = common::tmp::tempdir("scenario-test");
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("machines")).unwrap();
    std::fs::write(
        dir.join("machines/m.ron"),
        mnsim_arch::preset_source("toy4").unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("machines/broken.ron"),
        "(\n  name: \"b\",\n  oops\n)",
    )
    .unwrap();
    let scen = |machine: &str| {
        format!("Scenario(name: \"f\", machine: File(\"{machine}\"), tensors: {{}}, program: [])")
    };
    std::fs::write(dir.join("s.ron"), scen("machines/m.ron")).unwrap();
    std::fs::write(dir.join("b.ron"), scen("machines/broken.ron")).unwrap();
    std::fs::write(dir.join("m.ron"), scen("machines/missing.ron")).unwrap();

    let (sc, src) = scenario::load(&dir.join("s.ron")).unwrap();
    let r = resolve(&sc, &src, None).unwrap();
    assert_eq!(r.machine.name, "toy4");

    let (sc, src) = scenario::load(&dir.join("b.ron")).unwrap();
    let e = resolve(&sc, &src, None).unwrap_err();
    assert!(render(&e).contains("broken.ron:3:"), "{}", render(&e));

    let (sc, src) = scenario::load(&dir.join("m.ron")).unwrap();
    let e = resolve(&sc, &src, None).unwrap_err();
    assert!(e.to_string().contains("cannot read machine file"), "{e}");
    assert!(render(&e).contains("m.ron:1:35]"), "{}", render(&e));
}

// ---------------------------------------------------------------------------
// Errors point at the place
// ---------------------------------------------------------------------------

/// (file, plan, text in the message, `line:column` of the label)
const BAD: &[(&str, Option<&str>, &str, &str)] = &[
    ("bad_missing_comma.ron", None, "Expected comma", "3:5"),
    (
        "bad_unknown_field.ron",
        None,
        "Unexpected field named `tensorz` in `Scenario`, expected one of",
        "4:5",
    ),
    (
        "bad_unknown_field.ron",
        None,
        "did you mean `tensors`?",
        "4:5",
    ),
    (
        "bad_unknown_op.ron",
        None,
        "Unexpected variant named `Lod` in enum `Op`",
        "8:9",
    ),
    ("bad_unknown_op.ron", None, "did you mean `Load`?", "8:9"),
    (
        "toy4_rows_cols.ron",
        Some("diag"),
        "unknown plan `diag`; plans: cols, rows",
        "12:5",
    ),
    (
        "bad_unknown_var.ron",
        Some("rows"),
        "plan `rows` has no variable `y`; it sets: x",
        "8:35",
    ),
    (
        "bad_undeclared.ron",
        None,
        "op 1 (Unary -> `h`): tensor `h` is not declared in `tensors`",
        "9:42",
    ),
    (
        "bad_store_unloaded.ron",
        None,
        "op 0 (Store of `x`): tensor `x` is not resident in LM",
        "8:23",
    ),
    (
        "bad_lm_overflow.ron",
        None,
        "exceeds the PE's 4096-byte memory",
        "8:40",
    ),
    (
        "bad_plan_layout.ron",
        Some("rows"),
        "bad layout `((4_PE, 3:8), (8:1)` (plan `rows`, `$x`)",
        "11:43",
    ),
    (
        "bad_dtype.ron",
        None,
        "tensor `x`: dtype F16 does not match its shape `f32[12,8]`",
        "5:22",
    ),
    (
        "bad_knob.ron",
        None,
        "unknown knob 'links.Board.distribute.parnet'",
        "4:17",
    ),
    (
        "bad_unbound.ron",
        None,
        "dimension 0 (`?`) of `f32[?,8]` is dynamic with no bound and no binding",
        "5:39",
    ),
    (
        "bad_above_bound.ron",
        None,
        "sets batch=100, above the bound 64 of dimension 0",
        "6:39",
    ),
    (
        "bad_any_spelling.ron",
        None,
        "expected a layout string or `Any`, found `Anything`",
        "11:23",
    ),
    (
        "bad_shape.ron",
        None,
        "tensor `x`: bad shape `f32[12,8`",
        "5:43",
    ),
    ("bad_machine.ron", None, "unknown machine 'toy5'", "3:21"),
];

fn first_error(file: &str, plan: Option<&str>) -> Report {
    let path = data(file);
    let (sc, src) = match scenario::load(&path) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let plans = match plan {
        Some(p) => vec![Some(p.to_string())],
        None => scenario::plans_to_run(&sc),
    };
    for p in plans {
        if let Err(e) = resolve(&sc, &src, p.as_deref()) {
            return e;
        }
    }
    panic!("{file} has no error")
}

#[test]
fn errors_name_the_problem_and_point_at_it() {
    for (file, plan, text, at) in BAD {
        let e = first_error(file, *plan);
        let msg = e.to_string();
        assert!(msg.starts_with("error: "), "{file}: {msg}");
        assert!(msg.contains(text), "{file}: {msg}");
        assert!(msg.contains(&format!("{file}:{at}: ")), "{file}: {msg}");
        let r = render(&e);
        assert!(r.contains(&format!("{file}:{at}]")), "{file}: {r}");
    }
}

#[test]
fn more_resolution_errors() {
    let base = |program: &str, extra: &str| {
        format!(
            r#"Scenario(
    name: "t",
    machine: Preset("toy4"),
    tensors: {{
        "x": (dtype: F32, shape: "f32[12,8]", init: Iota),
        "y": (dtype: F32, shape: "f32[12,8]"),
        "z": (dtype: F32, shape: "f32[8,12]"),
    }},
    program: [{program}],
    {extra}
)"#
        )
    };
    let load_x = r#"Load(tensor: "x", layout: "((4_PE, 3:8), (8:1))"), "#;
    let cases: &[(String, &str)] = &[
        (
            base(r#"Load(tensor: "y", layout: "((4_PE, 3:8), (8:1))")"#, ""),
            "nothing in DRAM to load",
        ),
        (
            base(
                &format!(r#"{load_x}Free(tensor: "x"), Store(tensor: "x")"#),
                "",
            ),
            "it was freed by op 1",
        ),
        (
            base(
                &format!(r#"{load_x}Softmax(input: "x", axis: 2, out: "y")"#),
                "",
            ),
            "axis 2 is out of range for `x` of rank 2",
        ),
        (
            base(
                &format!(r#"{load_x}Transpose(input: "x", perm: [0], out: "z")"#),
                "",
            ),
            "`perm` must list each of the 2 axes",
        ),
        (
            base(
                &format!(r#"{load_x}ReduceAxes(op: Max, input: "x", axes: [1, 1], out: "y")"#),
                "",
            ),
            "axis 1 is repeated",
        ),
        (
            base(&format!(r#"{load_x}Reduce(tensor: "x", level: "MAB")"#), ""),
            "`MAB` is not an addressable level of toy4; levels: PE",
        ),
        (
            base(
                &format!(
                    r#"{load_x}Relayout(tensor: "x", layout: "((12:8), (8:1); B@[PE])", out: "z")"#
                ),
                "",
            ),
            "`out` tensor `z`",
        ),
        (
            base(
                r#"Broadcast(tensor: "x", layout: "((4_PE, 3:8), (8:1))")"#,
                "",
            ),
            "replicates over no level",
        ),
        (
            base(r#"Load(tensor: "x", layout: "$v")"#, ""),
            "the scenario has no `plans`",
        ),
        (
            base(
                r#"Load(tensor: "x", layout: "$v")"#,
                r#"plans: {"p": {"v": "$w"}},"#,
            ),
            "a plan value must be a layout, not another variable",
        ),
        (
            base(
                r#"Load(tensor: "x", layout: "((4_PE, 3:8), (8:1))")"#,
                r#"mode: Fast,"#,
            ),
            "Unexpected variant named `Fast`",
        ),
        (
            base(
                r#"Load(tensor: "x", layout: "((4_PE, 3:8), (8:1))", out: "y")"#,
                "",
            ),
            "Unexpected field named `out`",
        ),
        (
            base(
                r#"Load(tensor: "x", layout: "((4_PE, 3:8), (8:1))")"#,
                r#"verify: 3,"#,
            ),
            "Expected boolean",
        ),
        (
            base(
                &format!(
                    r#"{load_x}Kernel(kernel: Softmax(axis: 1), inputs: ["x", "x"], out: "y")"#
                ),
                "",
            ),
            "Softmax takes 1 input(s), `inputs` lists 2",
        ),
        (
            base(
                &format!(r#"{load_x}Kernel(kernel: Softmax(axis: 2), inputs: ["x"], out: "y")"#),
                "",
            ),
            "axis 2 is out of range for `x` of rank 2",
        ),
        (
            base(
                &format!(
                    r#"{load_x}Kernel(kernel: LayerNorm(axis: 1, eps: -1.0), inputs: ["x"], out: "y")"#
                ),
                "",
            ),
            "eps must be a finite number ≥ 0, got -1",
        ),
        (
            base(
                &format!(r#"{load_x}Kernel(kernel: Softmax(axes: 1), inputs: ["x"], out: "y")"#),
                "",
            ),
            "Unexpected field named `axes`",
        ),
        (
            base(
                &format!(r#"{load_x}Kernel(kernel: Frobnicate, inputs: ["x"], out: "y")"#),
                "",
            ),
            "Unexpected variant named `Frobnicate`",
        ),
    ];
    for (text, want) in cases {
        let src = source("t.ron", text);
        let err = match scenario::parse(text, "t.ron") {
            Err(e) => e,
            Ok(sc) => {
                let plan = scenario::plans_to_run(&sc).remove(0);
                resolve(&sc, &src, plan.as_deref()).expect_err(want)
            }
        };
        let msg = err.to_string();
        assert!(msg.contains(want), "want {want:?}, got {msg}");
        assert!(msg.starts_with("error: t.ron:"), "{msg}");
        assert!(render(&err).contains("[t.ron:"), "{}", render(&err));
    }
}

#[test]
fn broadcast_and_reduce_resolve() {
    let text = r#"Scenario(
    name: "b",
    machine: Preset("toy4"),
    tensors: {
        "x": (dtype: F32, shape: "f32[12,8]", init: Random(seed: 7)),
        "y": (dtype: F32, shape: "f32[12,8]"),
    },
    program: [
        Broadcast(tensor: "x", layout: "((12:8), (8:1); B@[PE])"),
        Relayout(tensor: "x", layout: "((4_PE, 3:8), (8:1))", out: "y"),
        Reduce(tensor: "y", level: "PE", op: Max),
        LayerNorm(input: "y", axis: 1, out: "y"),
        Store(tensor: "y"),
    ],
)"#;
    let sc = scenario::parse(text, "b.ron").unwrap();
    let r = resolve(&sc, &source("b.ron", text), None).unwrap();
    assert_eq!(r.plan, None);
    assert!(bound(&r, 0).levels()[0].replicated);
    assert!(matches!(
        &sc.program[3],
        Op::Kernel(KernelOp { kernel: Kernel::LayerNorm { eps, .. }, written: Some(Shorthand::LayerNorm), .. })
            if *eps == 1e-5
    ));
    assert!(matches!(
        sc.program[2],
        Op::Reduce {
            op: scenario::ReduceOp::Max,
            ..
        }
    ));
}

#[test]
fn every_op_kind_resolves() {
    let (sc, src) = load("toy4_ops.ron");
    assert_eq!(sc.description.as_deref(), Some("a tour of the op kinds"));
    for plan in scenario::plans_to_run(&sc) {
        let r = resolve(&sc, &src, plan.as_deref()).unwrap_or_else(|e| panic!("{}", render(&e)));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.program.ops.len(), sc.program.len());
        assert_eq!(r.program.named("x").unwrap().dims_at_bound, vec![12, 8]);
        assert_eq!(r.program.named("x").unwrap().runtime_dims, vec![10, 8]);
        assert_eq!(r.program.named("t").unwrap().runtime_dims, vec![8, 10]);
        for (i, op) in r.program.ops.values().enumerate() {
            assert_eq!(op.source.index(), i);
            assert!(op.span.is_some());
            assert_eq!(op.layout_text.is_some(), op.layout.is_some(), "op {i}");
        }
    }
    let r = resolve(&sc, &src, Some("planner")).unwrap();
    assert_eq!(
        r.program.ops[OpId::new(10)].layout,
        Some(LayoutRef::Any("vec".into()))
    );
    assert_eq!(
        r.program.ops[OpId::new(10)].layout_text.as_deref(),
        Some("$vec")
    );
}

// ---------------------------------------------------------------------------
// `mnsim check`
// ---------------------------------------------------------------------------

fn mnsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .output()
        .expect("runs mnsim")
}

#[test]
fn check_command() {
    let good = data("toy4_rows_cols.ron");
    let out = mnsim(&["check", good.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ok  plan rows: 2 ops, 1 tensors, machine toy4"),
        "{stdout}"
    );
    assert!(stdout.contains("ok  plan cols:"), "{stdout}");

    let out = mnsim(&[
        "check",
        good.to_str().unwrap(),
        "--plan",
        "rows",
        "--bind",
        "batch=4",
    ]);
    // A --bind that names no dimension is most likely misspelt: an error.
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--bind batch: no tensor has a dimension named `batch`")
    );
    let out = mnsim(&["check", good.to_str().unwrap(), "--plan", "rows"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("cols"), "{stdout}");

    // Its plan `rows` resolves but cannot run (MatMul's contraction split over L2B on one
    // operand only): check says so, as `run` does.
    let mlp = data("mlp_mncore2.ron");
    let out = mnsim(&["check", mlp.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    // (miette wraps long lines, where depends on the checkout's path: compare the words)
    let words = common::one_line(&err);
    assert!(
        words.contains("plan `rows`") && words.contains("input `w1` is split over L2B"),
        "{err}"
    );

    let mut bad: Vec<Vec<String>> = BAD
        .iter()
        .filter(|(f, _, _, _)| f.starts_with("bad_"))
        .map(|(f, _, _, _)| vec![data(f).display().to_string()])
        .collect();
    bad.push(vec![
        good.display().to_string(),
        "--plan".into(),
        "diag".into(),
    ]);
    bad.push(vec![
        good.display().to_string(),
        "--set".into(),
        "nope=1".into(),
    ]);
    bad.push(vec![
        good.display().to_string(),
        "--bind".into(),
        "x".into(),
    ]);
    bad.push(vec![data("spec_example.ron").display().to_string()]);
    bad.push(vec![data("no_such_file.ron").display().to_string()]);
    for args in bad {
        let mut all = vec!["check"];
        all.extend(args.iter().map(String::as_str));
        let out = mnsim(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("error"), "{args:?}: {stderr}");
    }
}

// ---------------------------------------------------------------------------
// Never a panic
// ---------------------------------------------------------------------------

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn mutated_scenarios_never_panic() {
    let text = std::fs::read_to_string(data("toy4_ops.ron")).unwrap();
    let alphabet: &[u8] = b"()[]{},:;\"$_/?<=>*#@ \n0123456789aAzZ_PEWBTimeLoadStorexyf32-.";
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0usize;
    let mut resolved = 0usize;
    // Half the edits land inside string literals (layouts, shapes, names), where the
    // result still parses and reaches resolution.
    let mut inside = Vec::new();
    let mut in_str = false;
    for (i, b) in text.bytes().enumerate() {
        if b == b'"' {
            in_str = !in_str;
        } else if in_str {
            inside.push(i);
        }
    }
    for round in 0..5000 {
        let mut bytes = text.clone().into_bytes();
        for _ in 0..1 + rng.below(3) {
            let at = if rng.below(2) == 0 {
                inside[rng.below(inside.len())].min(bytes.len().saturating_sub(1))
            } else {
                rng.below(bytes.len())
            };
            let c = alphabet[rng.below(alphabet.len())];
            match rng.below(3) {
                0 if !bytes.is_empty() => {
                    bytes.remove(at);
                }
                1 if rng.below(8) == 0 => {
                    // A character of several bytes.
                    let wide = ["é", "→", "𝔸", "\u{301}"][rng.below(4)];
                    let at = (0..=at)
                        .rev()
                        .find(|&k| !(0x80..0xc0).contains(&bytes.get(k).copied().unwrap_or(0)))
                        .unwrap_or(0);
                    for (k, b) in wide.bytes().enumerate() {
                        bytes.insert(at + k, b);
                    }
                }
                1 => bytes.insert(at, c),
                _ => {
                    if let Some(b) = bytes.get_mut(at) {
                        *b = c;
                    }
                }
            }
        }
        let mutated = String::from_utf8_lossy(&bytes).into_owned();
        let outcome = std::panic::catch_unwind(|| {
            let mut n = (0, 0);
            if let Ok(sc) = scenario::parse(&mutated, "m.ron") {
                n.0 = 1;
                let src = source("m.ron", &mutated);
                for plan in scenario::plans_to_run(&sc) {
                    if let Ok(r) = resolve(&sc, &src, plan.as_deref()) {
                        n.1 += 1;
                        let _ = r.program.ops.len();
                    } else if let Err(e) = resolve(&sc, &src, plan.as_deref()) {
                        let _ = render(&e);
                    }
                }
            } else if let Err(e) = scenario::parse(&mutated, "m.ron") {
                let _ = render(&e);
            }
            n
        });
        match outcome {
            Ok((p, r)) => {
                parsed += p;
                resolved += r;
            }
            Err(_) => panic!("round {round} panicked on:\n{mutated}"),
        }
    }
    eprintln!("{parsed} of 5000 mutations parsed, {resolved} plans resolved");
    // The mutations reach resolution, not only the parser.
    assert!(parsed > 500, "only {parsed} mutations parsed");
    assert!(resolved > 100, "only {resolved} plans resolved");
}

/// The generic `Kernel(kernel: ...)` op runs exactly as the named op of the same kernel:
/// the same values (verified) and the same cycles, op by op, in both modes.
#[test]
fn generic_kernel_op_runs_as_the_named_op() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let named = std::fs::read_to_string(root.join("layernorm.ron")).unwrap();
    let generic = named
        .replace(
            r#"LayerNorm(input: "x", axis: 1, out: "y")"#,
            r#"Kernel(kernel: LayerNorm(axis: 1, eps: 1e-5), inputs: ["x"], out: "y")"#,
        )
        .replace(
            r#"ReduceAxes(op: Add, input: "y", axes: [0], out: "m", layout"#,
            r#"Kernel(kernel: ReduceAxes(op: Add, axes: [0], keep_dims: false), inputs: ["y"], out: "m", layout"#,
        );
    assert_eq!(generic.matches("Kernel(kernel:").count(), 2);
    let run = |text: &str, plan: &str, mode: Mode| {
        let sc = scenario::parse(text, "ln.ron").unwrap();
        let src = source("ln.ron", text);
        let mut r = resolve(&sc, &src, Some(plan)).unwrap_or_else(|e| panic!("{}", render(&e)));
        r.mode = mode;
        mnsim_sim::run::run(&r).unwrap().report
    };
    for plan in ["mab", "pe"] {
        for mode in [Mode::Timing, Mode::Functional] {
            let a = run(&named, plan, mode);
            let b = run(&generic, plan, mode);
            assert_eq!(a.total_cycles, b.total_cycles, "{plan} {mode:?}");
            let cycles = |r: &mnsim_reports::Report| {
                r.ops
                    .iter()
                    .map(|o| (o.op.clone(), o.tensor.clone(), o.start, o.cycles))
                    .collect::<Vec<_>>()
            };
            assert_eq!(cycles(&a), cycles(&b), "{plan} {mode:?}");
            if mode == Mode::Functional {
                assert_eq!(b.verified, Some(true), "{plan}");
            }
        }
    }
}
