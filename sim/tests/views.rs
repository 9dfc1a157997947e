//! Views (docs/layout.md): a transpose or reshape whose output keeps every element in
//! its cell costs 0 cycles and is marked in every report; with any other output layout
//! it is the kernel it is. Both compute the same values (functional mode, verified).

use mnsim_sim::plan::model::Model;
use mnsim_sim::scenario::{self, Mode};
use std::collections::BTreeMap;

/// `x: f32[8,16]` over 2 MABs and 4 L1Bs of mncore2 (a 4×4 block on each PE),
/// transposed into `y` laid out as `$y`, reshaped into `z: [16,2,4]` laid out as `$z`.
/// Plan `views` lays them out where the elements are; plan `moved` transposes each
/// PE's block in memory (the same nodes, other words).
const TEXT: &str = r#"Scenario(
    name: "views",
    machine: Preset("mncore2"),
    mode: Functional,
    tensors: {
        "x": (dtype: F32, shape: "f32[8,16]", init: Iota),
        "y": (dtype: F32, shape: "f32[16,8]"),
        "z": (dtype: F32, shape: "f32[16,2,4]"),
    },
    program: [
        Load(tensor: "x", layout: "((2_MAB:1, 4:4), (4_L1B:1, 4:1))"),
        Transpose(input: "x", perm: [1, 0], out: "y", layout: "$y"),
        Reshape(input: "y", shape: [16, 2, 4], out: "z", layout: "$z"),
        Store(tensor: "z"),
    ],
    plans: {
        "views": {"y": "((4_L1B:1, 4:1), (2_MAB:1, 4:4))", "z": "((4_L1B:1, 4:1), (2_MAB:1), (4:4))"},
        "moved": {"y": "((4_L1B:1, 4:4), (2_MAB:1, 4:1))", "z": "((4_L1B:1, 4:1), (2_MAB:1), (4:4))"},
    },
    verify: true,
)
"#;

fn run(plan: &str, mode: Mode) -> mnsim_reports::Report {
    run_text(TEXT, plan, mode)
}

/// Plan `plan` of the scenario `text`, run in `mode`.
fn run_text(text: &str, plan: &str, mode: Mode) -> mnsim_reports::Report {
    let sc = scenario::parse(text, "views.ron").unwrap();
    let src = scenario::Source {
        path: "views.ron".into(),
        text: text.into(),
    };
    let mut res = scenario::resolve(&sc, &src, Some(plan), &[], &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{plan}: {e:?}"));
    res.mode = mode;
    mnsim_sim::run::run(&res)
        .unwrap_or_else(|e| panic!("{plan}: {e}"))
        .report
}

#[test]
fn a_view_costs_nothing_and_is_marked() {
    for mode in [Mode::Timing, Mode::Functional] {
        let r = run("views", mode);
        let (t, z) = (&r.ops[1], &r.ops[2]);
        assert_eq!((t.op.as_str(), z.op.as_str()), ("Transpose", "Reshape"));
        assert!(t.view && z.view, "{:?} {:?}", t.label(), z.label());
        assert_eq!((t.cycles, z.cycles), (0, 0));
        assert_eq!(t.label(), "Transpose (view)");
        // Marked in the terminal summary, the HTML page and report.json.
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["ops"][1]["view"], true);
        assert!(mnsim_reports::html(&r).contains("Transpose (view)"));
        let moved = run("moved", mode);
        let (t2, z2) = (&moved.ops[1], &moved.ops[2]);
        assert!(!t2.view && !z2.view);
        assert!(
            t2.cycles > 0 && z2.cycles > 0,
            "{} {}",
            t2.cycles,
            z2.cycles
        );
        assert_eq!(
            serde_json::to_value(&moved).unwrap()["ops"][1].get("view"),
            None
        );
        assert!(r.total_cycles < moved.total_cycles);
        // No run beats its bound.
        assert!(r.total_cycles >= r.bound_cycles);
    }
}

/// A fused `qkv: f32[16,96]` with a row on each of 16 PEs (8 L2Bs × 2 MABs), its three
/// parts outermost in each PE's memory: `k` is its middle third (a Slice), `cat` the
/// three thirds joined again (a Concat), `bx` a bias copied over the rows (an Expand
/// from `b`, which every PE holds), and `y = k + bx` read back. Plan `views` lays each
/// result out where its elements are; plan `moved` lays the parts out one f32 a word
/// (and `cat` two again: its inputs are no windows of it).
const PARTS: &str = r#"Scenario(
    name: "parts",
    machine: Preset("mncore2"),
    mode: Functional,
    tensors: {
        "qkv": (dtype: F32, shape: "f32[16,96]", init: Iota),
        "b": (dtype: F32, shape: "f32[32]", init: Iota),
        "q": (dtype: F32, shape: "f32[16,32]"),
        "k": (dtype: F32, shape: "f32[16,32]"),
        "v": (dtype: F32, shape: "f32[16,32]"),
        "cat": (dtype: F32, shape: "f32[16,96]"),
        "bx": (dtype: F32, shape: "f32[16,32]"),
        "y": (dtype: F32, shape: "f32[16,32]"),
    },
    program: [
        Load(tensor: "qkv", layout: "((8_L2B, 2_MAB), (3:16, 16:1, 2_W:1))"),
        Load(tensor: "b", layout: "((16:1, 2_W:1); B@[L2B,L1B,MAB,PE])"),
        Kernel(kernel: Slice(start: [0, 0], limit: [16, 32], stride: [1, 1]), inputs: ["qkv"], out: "q", layout: "$part"),
        Kernel(kernel: Slice(start: [0, 32], limit: [16, 64], stride: [1, 1]), inputs: ["qkv"], out: "k", layout: "$part"),
        Kernel(kernel: Slice(start: [0, 64], limit: [16, 96], stride: [1, 1]), inputs: ["qkv"], out: "v", layout: "$part"),
        Kernel(kernel: Concat(axis: 1, inputs: 3), inputs: ["q", "k", "v"], out: "cat", layout: "$cat"),
        Kernel(kernel: Expand(shape: [16, 32]), inputs: ["b"], out: "bx", layout: "$bx"),
        Binary(op: Add, a: "k", b: "bx", out: "y", layout: "$part"),
        Store(tensor: "cat"),
        Store(tensor: "y"),
    ],
    plans: {
        "views": {
            "part": "((8_L2B:1, 2_MAB:1), (16:1, 2_W:1))",
            "cat": "((8_L2B:1, 2_MAB:1), (3:16, 16:1, 2_W:1))",
            "bx": "((8_L2B:1, 2_MAB:1), (16:1, 2_W:1))",
        },
        "moved": {
            "part": "((8_L2B:1, 2_MAB:1), (32:1))",
            "cat": "((8_L2B:1, 2_MAB:1), (48:1, 2_W:1))",
            "bx": "((8_L2B:1, 2_MAB:1), (32:1))",
        },
    },
    verify: true,
)
"#;

fn run_parts(plan: &str, mode: Mode) -> mnsim_reports::Report {
    run_text(PARTS, plan, mode)
}

#[test]
fn slices_a_concatenation_and_a_broadcast_where_the_elements_are_cost_nothing() {
    for mode in [Mode::Timing, Mode::Functional] {
        let r = run_parts("views", mode);
        let moved = run_parts("moved", mode);
        let names: Vec<&str> = r.ops[2..7].iter().map(|o| o.op.as_str()).collect();
        assert_eq!(names, ["Slice", "Slice", "Slice", "Concat", "Expand"]);
        for (o, m) in r.ops[2..7].iter().zip(&moved.ops[2..7]) {
            assert!(o.view, "{}", o.label());
            assert_eq!(o.cycles, 0, "{}", o.label());
            assert_eq!(o.label(), format!("{} (view)", o.op));
            assert!(!m.view && m.cycles > 0, "{} {}", m.label(), m.cycles);
        }
        assert!(mnsim_reports::html(&r).contains("Concat (view)"));
        assert!(r.total_cycles < moved.total_cycles);
        assert!(r.total_cycles >= r.bound_cycles);
    }
}

/// Plan `auto` of scenario `text` resolved, and the planner's model of it.
fn planner_model(text: &str, path: &str) -> (scenario::Resolved, Model) {
    let sc = scenario::parse(text, path).unwrap();
    let src = scenario::Source {
        path: path.into(),
        text: text.into(),
    };
    let res = scenario::resolve(&sc, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
    let model = Model::new(&res, mnsim_sim::plan::candidates::Space::default()).unwrap();
    (res, model)
}

/// The plan variable of tensor `name`.
fn var_named(res: &scenario::Resolved, model: &Model, name: &str) -> usize {
    (0..model.vars.len())
        .find(|&v| res.program.tensors[model.vars[v].tensor].name == name)
        .unwrap()
}

/// Layout `text` bound for an f32 tensor of `dims` on `res`'s machine.
fn bind_f32(res: &scenario::Resolved, text: &str, dims: &[u64]) -> mnsim_arch::TensorLayout {
    mnsim_arch::TensorLayout::parse(text, &res.machine, Some(dims), mnsim_arch::DType::F32).unwrap()
}

/// The planner's ties derive a slice's, a concatenation's and a broadcast's output from
/// its input's layout as the view (docs/planner.md, chains): one move of `qkv` lays `q`,
/// `k` and `v` out as its thirds and `cat` as `qkv` again, and one move of `b` lays `bx`
/// out over the levels `b` is copied over.
#[test]
fn the_planners_ties_derive_the_views_of_parts_and_copies() {
    let text = r#"Scenario(
    name: "tied parts",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "qkv": (dtype: F32, shape: "f32[16,96]", init: Iota),
        "b": (dtype: F32, shape: "f32[32]", init: Iota),
        "q": (dtype: F32, shape: "f32[16,32]"),
        "k": (dtype: F32, shape: "f32[16,32]"),
        "v": (dtype: F32, shape: "f32[16,32]"),
        "cat": (dtype: F32, shape: "f32[16,96]"),
        "bx": (dtype: F32, shape: "f32[128,32]"),
    },
    program: [
        Load(tensor: "qkv", layout: "$qkv"),
        Load(tensor: "b", layout: "$b"),
        Kernel(kernel: Slice(start: [0, 0], limit: [16, 32], stride: [1, 1]), inputs: ["qkv"], out: "q", layout: "$q"),
        Kernel(kernel: Slice(start: [0, 32], limit: [16, 64], stride: [1, 1]), inputs: ["qkv"], out: "k", layout: "$k"),
        Kernel(kernel: Slice(start: [0, 64], limit: [16, 96], stride: [1, 1]), inputs: ["qkv"], out: "v", layout: "$v"),
        Kernel(kernel: Concat(axis: 1, inputs: 3), inputs: ["q", "k", "v"], out: "cat", layout: "$cat"),
        Kernel(kernel: Expand(shape: [128, 32]), inputs: ["b"], out: "bx", layout: "$bx"),
        Store(tensor: "cat"),
        Store(tensor: "bx"),
    ],
    plans: {"auto": {"qkv": Any, "b": Any, "q": Any, "k": Any, "v": Any, "cat": Any, "bx": Any}},
)
"#;
    let (res, mut model) = planner_model(text, "tied.ron");
    let var = |model: &Model, name: &str| var_named(&res, model, name);
    let bind = |text: &str, dims: &[u64]| bind_f32(&res, text, dims);
    let qkv = bind("((8_L2B, 2_MAB), (3:16, 16:1, 2_W:1))", &[16, 96]);
    let b = bind("((16:1, 2_W:1); B@[L2B,L1B,MAB,PE])", &[32]);
    let mut pick: Vec<_> = model.vars.iter().map(|v| v.candidates[0]).collect();
    let (vq, vb) = (var(&model, "qkv"), var(&model, "b"));
    pick[vq] = model.seed(vq, &qkv);
    pick[vb] = model.seed(vb, &b);
    model.propagate(&mut pick);
    let part = bind("((8_L2B:1, 2_MAB:1), (16:1, 2_W:1); B@[L1B,PE])", &[16, 32]);
    for name in ["q", "k", "v"] {
        let l = model.layout(pick[var(&model, name)]);
        assert!(l.same_cells(&part), "{name}: {}", l.canonical());
    }
    let cat = model.layout(pick[var(&model, "cat")]);
    assert!(cat.same_cells(&qkv), "{}", cat.canonical());
    let bx = model.layout(pick[var(&model, "bx")]);
    assert_eq!(
        bx.canonical(),
        "((8_L2B:1, 16_MAB:1), (16:1, 2_W:1); B@[L1B,PE])"
    );
    // Planned this way, the five cost nothing and nothing is inserted.
    let (e, cycles, inserted) = model.explain(&pick);
    assert_eq!(e.failure, None);
    assert!(inserted.is_empty(), "{inserted:?}");
    assert_eq!(cycles[2..7], [0; 5], "{cycles:?}");
}

/// A tied LM head as JAX exports it: the embedding table `wte` (a vocabulary of 1,000,
/// padded to the 1,024 MABs of mncore2) read through a transpose by the product with
/// two tokens. Laid out so, the transpose is a view of the padded table, and the logits
/// follow the table (they share 500× more of its elements than of the tokens'), not the
/// tokens: the vocabulary stays split as the table splits it. The chain's heat (the
/// model's cycles of the ops its moves decide) goes to the table, the variable the
/// search moves.
#[test]
fn a_tied_heads_table_transposes_padded_and_its_logits_follow_it() {
    let text = r#"Scenario(
    name: "tied head",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "x": (dtype: F32, shape: "f32[1,2,64]", init: Iota),
        "wte": (dtype: F32, shape: "f32[1000,64]", init: Iota),
        "wt": (dtype: F32, shape: "f32[64,1000]"),
        "logits": (dtype: F32, shape: "f32[1,2,1000]"),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Load(tensor: "wte", layout: "$wte"),
        Transpose(input: "wte", perm: [1, 0], out: "wt", layout: "$wt"),
        Free(tensor: "wte"),
        GeneralMatMul(a: "x", b: "wt", out: "logits", transpose_a: false, transpose_b: false, layout: "$logits"),
        Store(tensor: "logits"),
    ],
    plans: {"auto": {"x": Any, "wte": Any, "wt": Any, "logits": Any}},
)
"#;
    let (res, mut model) = planner_model(text, "head.ron");
    let var = |model: &Model, name: &str| var_named(&res, model, name);
    let bind = |text: &str, dims: &[u64]| bind_f32(&res, text, dims);
    let m = &res.machine;
    let x = bind("((1), (2), (32, 2_W); B@[L2B,L1B,MAB,PE])", &[1, 2, 64]);
    let wte = bind(
        "(1000,64)/((8_L2B, 8_L1B, 16_MAB), (32, 2_W); B@[PE])",
        &[1000, 64],
    );
    let (vx, vw) = (var(&model, "x"), var(&model, "wte"));
    // The table's padded layouts are among its candidates (a transpose makes a
    // contraction's operand of it).
    let padded =
        (model.vars[vw].candidates.iter()).any(|&c| model.layout(c).padded_shape() != [1000, 64]);
    assert!(padded, "the table has padded candidates");
    let mut pick: Vec<_> = model.vars.iter().map(|v| v.candidates[0]).collect();
    pick[vx] = model.seed(vx, &x);
    pick[vw] = model.seed(vw, &wte);
    model.propagate(&mut pick);
    let wt = model.layout(pick[var(&model, "wt")]).clone();
    assert!(
        wt.same_cells(&wte.transposed(&[1, 0], m).unwrap()),
        "{}",
        wt.canonical()
    );
    let logits = model.layout(pick[var(&model, "logits")]);
    let want = wt
        .derived(&[None, None, Some(1)], &[1, 2, 1000], m)
        .unwrap();
    assert_eq!(logits.canonical(), want.canonical());
    assert!(
        logits.canonical().contains("16_MAB"),
        "{}",
        logits.canonical()
    );
    let (e, cycles, inserted) = model.explain(&pick);
    assert_eq!(e.failure, None);
    assert!(inserted.is_empty(), "{inserted:?}");
    assert_eq!(cycles[2], 0, "the transpose is a view: {cycles:?}");
    // The table's chain holds its Load, the view, the product and the Store; the tied
    // variables have no heat of their own.
    let heat = model.chain_heat(&pick).unwrap();
    let chain: u64 = [1, 2, 4, 5].iter().map(|&i| cycles[i]).sum();
    assert!(cycles[4] > 0 && cycles[1] > 0, "{cycles:?}");
    assert_eq!(heat[vw], chain, "{heat:?} {cycles:?}");
    assert_eq!(heat[vx], cycles[0] + cycles[4], "{heat:?} {cycles:?}");
    assert_eq!(heat[var(&model, "wt")], 0);
    assert_eq!(heat[var(&model, "logits")], 0);
}
