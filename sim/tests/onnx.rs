//! The ONNX exports of `scenarios/workloads/onnx/` (PyTorch's `torch.onnx.export`,
//! TorchScript and dynamo exporters): every model imports, prints back to the same
//! scenario, plans and runs; the small ones verify in functional mode; the GPT-2 blocks
//! give the cycles of the StableHLO exports of the same blocks within 10%. Models built
//! here node by node cover the op types a transformer, a CNN and an MLP export use
//! (shape subgraphs folded at import, `Gemm`'s attributes, slices, splits, `Where`,
//! `Expand`, `Pow`, convolutions and pooling) and verify in functional mode; unsupported
//! op types, unbound dynamic dimensions, old opsets, declared shapes that disagree and
//! bytes that are not ONNX are errors naming the node or the dimension. Mutations of the
//! real files never panic.

mod common;

use mnsim_sim::import::onnx::proto::{
    self, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
    attribute_proto::AttributeType,
    tensor_shape_proto::{Dimension, dimension},
};
use mnsim_sim::import::{self, Imported, Options};
use mnsim_sim::scenario::{self, Mode};
use prost::Message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/workloads/onnx");
    assert!(d.is_dir(), "{} is missing", d.display());
    d
}

fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    v.sort();
    assert!(v.len() >= 8, "{} files", v.len());
    v
}

fn binds() -> BTreeMap<String, u64> {
    [("batch".to_string(), 4)].into()
}

fn import_bytes(
    name: &str,
    bytes: &[u8],
    binds: &BTreeMap<String, u64>,
) -> Result<Imported, String> {
    import::import_onnx(name, bytes, &Options::default(), binds)
        .map(|(imp, _)| imp)
        .map_err(|e| common::one_line(&format!("{e:?}")))
}

fn import_file(path: &Path) -> Result<Imported, String> {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    import_bytes(&name, &std::fs::read(path).unwrap(), &binds())
}

// ---- building models -------------------------------------------------------------

fn attr_i(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(i),
        ..Default::default()
    }
}

fn attr_f(name: &str, f: f32) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Float as i32),
        f: Some(f),
        ..Default::default()
    }
}

fn attr_is(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Ints as i32),
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn node(
    op: &str,
    name: &str,
    ins: &[&str],
    outs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        attribute: attrs,
        ..Default::default()
    }
}

const F32: i32 = proto::tensor_proto::DataType::Float as i32;
const I64: i32 = proto::tensor_proto::DataType::Int64 as i32;

/// A value of element type `elem` whose dims are sizes or names (`"batch"`).
fn value(name: &str, elem: i32, dims: &[&str]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d.parse::<i64>() {
                Ok(v) => dimension::Value::DimValue(v),
                Err(_) => dimension::Value::DimParam(d.to_string()),
            }),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(elem),
                    shape: Some(TensorShapeProto { dim }),
                },
            )),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A weight of the given dims whose values are external data (not shipped).
fn weight(name: &str, dims: &[i64]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(F32),
        dims: dims.to_vec(),
        data_location: Some(proto::tensor_proto::DataLocation::External as i32),
        external_data: vec![proto::StringStringEntryProto {
            key: Some("location".into()),
            value: Some("w.data".into()),
        }],
        ..Default::default()
    }
}

fn ints(name: &str, v: &[i64]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(I64),
        dims: vec![v.len() as i64],
        int64_data: v.to_vec(),
        ..Default::default()
    }
}

fn floats(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(F32),
        dims: dims.to_vec(),
        raw_data: Some(v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        ..Default::default()
    }
}

fn model(
    opset: i64,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    init: Vec<TensorProto>,
) -> Vec<u8> {
    ModelProto {
        ir_version: Some(8),
        producer_name: Some("tests".into()),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(opset),
        }],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: inputs,
            output: outputs,
            initializer: init,
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// Runs plan `default` of an imported model: its report.
fn run(imp: &Imported, name: &str, mode: Mode) -> mnsim_reports::Report {
    common::graphs::run_imported(imp, name, "default", &[], mode).report
}

// ---- the committed exports ----------------------------------------------------------

/// Every export imports and its printed scenario parses back to the same value; it
/// plans (plan `auto` within `run`'s work budget) and runs no faster than its bound.
/// The figures (cycles, × bound) are printed for the docs.
#[test]
fn every_export_imports_prints_back_plans_and_runs() {
    for path in files() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let imp = import_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let sc = scenario::parse(&imp.text, &name).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(sc, imp.scenario, "{name}: the printed scenario parses back");
        assert!(imp.kernels > 0, "{name}");
        if name.starts_with("gpt2_small") {
            // Its token embedding: the rows of the table at the input ids, on the chip.
            assert!(
                (sc.program.iter()).any(|o| matches!(o, scenario::Op::Gather { .. })),
                "{name}"
            );
        }
        let b = if sc.bind.is_empty() {
            BTreeMap::new()
        } else {
            binds()
        };
        let (mut sc, mut src) = mnsim_sim::load::load_with(&path, &b).unwrap();
        let note = import::plan_auto(&mut sc, &mut src, &[], &b);
        assert!(note.starts_with("planned "), "{name}: {note}");
        let mut res = scenario::resolve(&sc, &src, Some("auto"), &[], &b).unwrap();
        res.mode = Mode::Timing;
        let r = mnsim_sim::run::run(&res).unwrap().report;
        assert!(
            r.total_cycles >= r.bound_cycles && r.bound_cycles > 0,
            "{name}"
        );
        let x = r.total_cycles as f64 / r.bound_cycles as f64;
        eprintln!(
            "{name}: {} ops, {} cycles, bound {} ({x:.1}×)",
            r.ops.len(),
            r.total_cycles,
            r.bound_cycles,
        );
        // The exports that plan within the target of 2× their bound stay there (the BERT
        // layer since the hot pass descends from the model's best plan too: 9.5× before;
        // the GPT-2 block and the small GPT-2 since the kernel pass: 3.8× and 2.4×).
        if WITHIN_2X.iter().any(|w| name.starts_with(w)) {
            assert!(x <= 2.0, "{name}: {x:.2}× its bound");
        }
    }
}

/// The committed exports planned within 2× their bound (docs/import.md, ONNX).
const WITHIN_2X: [&str; 5] = [
    "bert_layer",
    "gpt2_block",
    "gpt2_mlp_gelu",
    "gpt2_small",
    "mlp_784",
];

/// The MLP (every tensor at most 2^21 elements) imports in functional mode, and its
/// planned run verifies against the host reference. (The ResNet-style CNN imports in
/// functional mode too and verifies from the command line, in about a minute and
/// 1.5 GiB: too long for the suite, whose CNN built below covers the same op types.)
#[test]
fn small_exports_verify_in_functional_mode() {
    for name in ["mlp_784_dynB_f32.onnx", "resnet_cifar_f32.onnx"] {
        let imp = import_file(&dir().join(name)).unwrap();
        assert!(imp.max_elems <= import::FUNCTIONAL_ELEMS, "{name}");
        assert_eq!(imp.scenario.mode, Mode::Functional, "{name}");
    }
    let path = dir().join("mlp_784_dynB_f32.onnx");
    let (mut sc, mut src) = mnsim_sim::load::load_with(&path, &binds()).unwrap();
    let note = import::plan_auto(&mut sc, &mut src, &[], &binds());
    assert!(note.starts_with("planned "), "{note}");
    let mut res = scenario::resolve(&sc, &src, Some("auto"), &[], &binds()).unwrap();
    res.mode = Mode::Functional;
    let r = mnsim_sim::run::run(&res).unwrap().report;
    assert_eq!(r.verified, Some(true));
}

fn planned_cycles(path: &Path, work: &str) -> u64 {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(["plan", path.to_str().unwrap(), "--work", work, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["best"]["total_cycles"].as_u64().unwrap()
}

/// PyTorch's GPT-2 attention and MLP blocks give the cycles of JAX's StableHLO exports
/// of the same blocks (same shapes) within 10%, both planned with `run`'s work budget.
/// PyTorch exports `LayerNormalization` and `Softmax` as ops (mnsim's fused kernels)
/// where JAX writes them out, so the programs differ by those kernels. (Before the
/// kernel pass the attention blocks planned 1.46 apart with this budget, and the test
/// gave them 2,000,000.)
#[test]
fn gpt2_blocks_match_their_stablehlo_exports() {
    let shlo = dir().join("../stablehlo");
    for (onnx, mlir, work) in [
        (
            "gpt2_attn_block_s128_f32.onnx",
            "gpt2_attn_block_s128_f32.mlir",
            "300000",
        ),
        (
            "gpt2_mlp_gelu_s128_f32.onnx",
            "gpt2_mlp_gelu_s128_f32.mlir",
            "300000",
        ),
    ] {
        let a = planned_cycles(&dir().join(onnx), work);
        let b = planned_cycles(&shlo.join(mlir), work);
        let ratio = a as f64 / b as f64;
        eprintln!("{onnx}: {a} cycles, {mlir}: {b} ({ratio:.3})");
        assert!((0.9..=1.1).contains(&ratio), "{onnx} {a} vs {mlir} {b}");
    }
}

/// The TorchScript and the dynamo exports of one block are the same program.
#[test]
fn both_exporters_give_one_program() {
    let a = import_file(&dir().join("gpt2_attn_block_s128_f32.onnx")).unwrap();
    let b = import_file(&dir().join("gpt2_attn_block_s128_f32_dynamo.onnx")).unwrap();
    let kernels = |i: &Imported| -> Vec<String> {
        i.scenario
            .program
            .iter()
            .filter_map(|op| op.kernel().map(|k| k.kernel.to_string()))
            .collect()
    };
    let (ka, kb) = (kernels(&a), kernels(&b));
    // dynamo reads the causal mask from a tensor (a buffer), TorchScript folds it.
    assert_eq!(ka.len(), kb.len(), "{ka:?}\n{kb:?}");
    assert_eq!(ka, kb);
}

// ---- models built here ----------------------------------------------------------------

/// A transformer-style graph as the exporters write one: a shape subgraph (`Shape`,
/// `Gather`, `Unsqueeze`, `Concat`) driving a `Reshape`, `Gemm` with `transB`, alpha and
/// beta, `Split`, `Slice`, `Transpose`, `MatMul`, `Where` on a constant causal mask
/// (`Trilu`), `Softmax`, `Pow` 3, `Expand` read by an `Add`, `ReduceMean`,
/// `LayerNormalization`, `Squeeze`/`Unsqueeze`: it imports in functional mode and
/// verifies.
#[test]
fn a_transformer_style_graph_folds_its_shapes_and_verifies() {
    let nodes = vec![
        node("Shape", "shape", &["x"], &["s"], vec![]),
        node(
            "Gather",
            "g0",
            &["s", "i0"],
            &["d0"],
            vec![attr_i("axis", 0)],
        ),
        node("Unsqueeze", "u0", &["d0", "ax0"], &["d0u"], vec![]),
        node(
            "Concat",
            "cat",
            &["d0u", "c8", "c4"],
            &["shp"],
            vec![attr_i("axis", 0)],
        ),
        node(
            "Gemm",
            "gemm",
            &["x", "w", "bias"],
            &["y"],
            vec![
                attr_i("transB", 1),
                attr_f("alpha", 0.5),
                attr_f("beta", 2.0),
            ],
        ),
        node(
            "Split",
            "split",
            &["y", "sp"],
            &["q", "k"],
            vec![attr_i("axis", 1)],
        ),
        node("Reshape", "rq", &["q", "shp"], &["q3"], vec![]),
        node("Reshape", "rk", &["k", "shp"], &["k3"], vec![]),
        node(
            "Transpose",
            "tk",
            &["k3"],
            &["kt"],
            vec![attr_is("perm", &[0, 2, 1])],
        ),
        node("MatMul", "qk", &["q3", "kt"], &["att"], vec![]),
        node("ConstantOfShape", "ones", &["mshape"], &["one"], vec![]),
        node(
            "Trilu",
            "tril",
            &["one"],
            &["tri"],
            vec![attr_i("upper", 0)],
        ),
        node("Cast", "mask", &["tri"], &["m"], vec![attr_i("to", 9)]),
        node("Where", "where", &["m", "att", "neg"], &["masked"], vec![]),
        node(
            "Softmax",
            "sm",
            &["masked"],
            &["p"],
            vec![attr_i("axis", -1)],
        ),
        node("Pow", "cube", &["p", "three"], &["p3"], vec![]),
        node("Slice", "sl", &["p3", "st", "en", "sax"], &["ps"], vec![]),
        node("Expand", "ex", &["row", "eshape"], &["rowx"], vec![]),
        node("Add", "add", &["ps", "rowx"], &["sum"], vec![]),
        node(
            "ReduceMean",
            "mean",
            &["sum"],
            &["mu"],
            vec![attr_is("axes", &[-1]), attr_i("keepdims", 1)],
        ),
        node("Sub", "sub", &["sum", "mu"], &["c"], vec![]),
        node(
            "LayerNormalization",
            "ln",
            &["c", "gamma"],
            &["n"],
            vec![attr_i("axis", -1), attr_f("epsilon", 1e-5)],
        ),
        node("Squeeze", "sq", &["n", "ax0"], &["out"], vec![]),
    ];
    let init = vec![
        weight("w", &[16, 8]),
        weight("bias", &[16]),
        TensorProto {
            dims: Vec::new(),
            ..ints("i0", &[0])
        },
        ints("ax0", &[0]),
        ints("c8", &[8]),
        ints("c4", &[-1]),
        ints("sp", &[8, 8]),
        ints("mshape", &[8, 8]),
        floats("neg", &[], &[-1e9]),
        floats("three", &[], &[3.0]),
        ints("st", &[2]),
        ints("en", &[6]),
        ints("sax", &[2]),
        weight("row", &[4]),
        ints("eshape", &[1, 8, 4]),
        weight("gamma", &[4]),
    ];
    let bytes = model(
        17,
        nodes,
        vec![value("x", F32, &["1", "8"])],
        vec![value("out", F32, &["8", "4"])],
        init,
    );
    // `x` is [1, 8]: the reshape target [1, 8, -1] folds from its shape.
    let imp = import_bytes("t.onnx", &bytes, &binds()).unwrap_or_else(|e| panic!("{e}"));
    let text = &imp.text;
    for k in [
        "GeneralMatMul",
        "Slice",
        "Softmax",
        "Select",
        "LayerNorm",
        "ReduceAxes",
    ] {
        assert!(text.contains(k), "{k} missing:\n{text}");
    }
    for t in ["s", "d0", "d0u", "shp", "one", "tri", "m"] {
        assert!(
            !imp.scenario.tensors.contains_key(t),
            "`{t}` folds away at import"
        );
    }
    assert_eq!(imp.scenario.mode, Mode::Functional);
    let r = run(&imp, "t.onnx", Mode::Functional);
    assert_eq!(r.verified, Some(true));
}

/// A CNN as the TorchScript exporter writes one: `Conv` with padding, stride and bias,
/// `BatchNormalization`, `Relu`, `MaxPool`, a residual `Add`, `GlobalAveragePool`,
/// `Flatten`, `Gemm`: it verifies in functional mode, and the Conv's FLOP are those of
/// its shapes.
#[test]
fn a_cnn_verifies_and_counts_its_conv_flop() {
    let nodes = vec![
        node(
            "Conv",
            "c1",
            &["x", "w1", "b1"],
            &["y1"],
            vec![
                attr_is("pads", &[1, 1, 1, 1]),
                attr_is("strides", &[1, 1]),
                attr_is("kernel_shape", &[3, 3]),
            ],
        ),
        node(
            "BatchNormalization",
            "bn",
            &["y1", "g", "b", "m", "v"],
            &["y2"],
            vec![attr_f("epsilon", 1e-5)],
        ),
        node("Relu", "r", &["y2"], &["y3"], vec![]),
        node(
            "MaxPool",
            "mp",
            &["y3"],
            &["y4"],
            vec![
                attr_is("kernel_shape", &[2, 2]),
                attr_is("strides", &[2, 2]),
            ],
        ),
        node(
            "Conv",
            "c2",
            &["y4", "w2"],
            &["y5"],
            vec![attr_is("pads", &[1, 1, 1, 1])],
        ),
        node("Add", "res", &["y4", "y5"], &["y6"], vec![]),
        node("GlobalAveragePool", "gap", &["y6"], &["y7"], vec![]),
        node("Flatten", "fl", &["y7"], &["y8"], vec![attr_i("axis", 1)]),
        node(
            "Gemm",
            "fc",
            &["y8", "wf", "bf"],
            &["out"],
            vec![attr_i("transB", 1)],
        ),
    ];
    let init = vec![
        weight("w1", &[8, 3, 3, 3]),
        weight("b1", &[8]),
        weight("g", &[8]),
        weight("b", &[8]),
        weight("m", &[8]),
        weight("v", &[8]),
        weight("w2", &[8, 8, 3, 3]),
        weight("wf", &[10, 8]),
        weight("bf", &[10]),
    ];
    let bytes = model(
        17,
        nodes,
        vec![value("x", F32, &["2", "3", "8", "8"])],
        vec![value("out", F32, &["2", "10"])],
        init,
    );
    let imp = import_bytes("cnn.onnx", &bytes, &binds()).unwrap_or_else(|e| panic!("{e}"));
    let r = run(&imp, "cnn.onnx", Mode::Functional);
    assert_eq!(r.verified, Some(true));
    let conv_flop: Vec<u64> = r
        .ops
        .iter()
        .filter(|o| o.op == "Conv")
        .map(|o| o.flops.unwrap_or(0))
        .collect();
    // 2·N·O·OH·OW·C·KH·KW: 8×8 outputs, then 4×4 after the pool.
    assert_eq!(
        conv_flop,
        vec![2 * 2 * 8 * 8 * 8 * 3 * 3 * 3, 2 * 2 * 8 * 4 * 4 * 8 * 3 * 3]
    );
}

// ---- errors -------------------------------------------------------------------------

fn one_node(op: &str) -> Vec<u8> {
    model(
        17,
        vec![node(op, "the_node", &["x"], &["out"], vec![])],
        vec![value("x", F32, &["4", "4"])],
        vec![value("out", F32, &["4", "4"])],
        vec![],
    )
}

#[test]
fn an_unsupported_op_type_is_named_with_its_node() {
    let e = import_bytes("u.onnx", &one_node("Hardmax"), &binds()).unwrap_err();
    assert!(
        e.contains("u.onnx: node 0 `the_node` (Hardmax): op type `Hardmax` is not supported"),
        "{e}"
    );
    assert!(
        e.contains("MatMul") && e.contains("LayerNormalization"),
        "lists what is: {e}"
    );
}

#[test]
fn an_unbound_dynamic_dimension_is_named() {
    let path = dir().join("mlp_784_dynB_f32.onnx");
    let e = import_bytes("m.onnx", &std::fs::read(&path).unwrap(), &BTreeMap::new()).unwrap_err();
    assert!(
        e.contains("the dynamic dimension `batch`") && e.contains("--bind batch=8"),
        "{e}"
    );
    let imp = import_bytes(
        "m.onnx",
        &std::fs::read(&path).unwrap(),
        &[("batch".to_string(), 3)].into(),
    )
    .unwrap();
    assert!(
        imp.text.contains("bind: {\"batch\": 3}") && imp.text.contains("f32[batch?,784]"),
        "{}",
        imp.text
    );
}

#[test]
fn old_opsets_and_bytes_that_are_not_onnx_are_refused() {
    let mut b = one_node("Relu");
    let e = import_bytes(
        "o.onnx",
        &model(
            12,
            vec![node("Relu", "r", &["x"], &["out"], vec![])],
            vec![value("x", F32, &["4"])],
            vec![value("out", F32, &["4"])],
            vec![],
        ),
        &binds(),
    )
    .unwrap_err();
    assert!(
        e.contains("opset 12; mnsim reads opset 13 and later"),
        "{e}"
    );
    b.truncate(b.len() / 2);
    let e = import_bytes("t.onnx", &b, &binds()).unwrap_err();
    assert!(e.contains("t.onnx:"), "{e}");
    let e = import_bytes("n.onnx", b"Scenario(name: \"x\")", &binds()).unwrap_err();
    assert!(
        e.contains("n.onnx: not an ONNX model") || e.contains("no graph"),
        "{e}"
    );
}

#[test]
fn a_declared_shape_that_disagrees_names_the_node() {
    let bytes = model(
        17,
        vec![node("Relu", "r", &["x"], &["out"], vec![])],
        vec![value("x", F32, &["4", "4"])],
        vec![value("out", F32, &["4", "5"])],
        vec![],
    );
    let e = import_bytes("d.onnx", &bytes, &binds()).unwrap_err();
    assert!(
        e.contains(
            "node 0 `r` (Relu): output `out` is f32[4, 4] here, but the file declares f32[4, 5]"
        ),
        "{e}"
    );
}

#[test]
fn a_gather_at_run_time_indices_names_its_node() {
    let bytes = model(
        17,
        vec![node("Gather", "emb", &["table", "ids"], &["out"], vec![])],
        vec![value("ids", I64, &["1", "4"])],
        vec![value("out", F32, &["1", "4", "8"])],
        vec![weight("table", &[16, 8])],
    );
    match import_bytes("g.onnx", &bytes, &binds()) {
        Ok(imp) => assert!(imp.text.contains("Gather"), "{}", imp.text),
        Err(e) => assert!(e.contains("node 0 `emb` (Gather)"), "{e}"),
    }
}

// ---- the command line -------------------------------------------------------------

#[test]
fn the_cli_imports_and_checks_onnx() {
    let exe = env!("CARGO_BIN_EXE_mnsim");
    let file = dir().join("mlp_784_dynB_f32.onnx");
    let tmp = common::tmp::tempdir("onnx");
    let out = tmp.path().join("mlp.ron");
    let run = |args: &[&str]| std::process::Command::new(exe).args(args).output().unwrap();
    let ok = run(&[
        "import",
        file.to_str().unwrap(),
        "--bind",
        "batch=2",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("ONNX (opset 17") && text.contains("f32[batch?,784]"),
        "{text}"
    );
    std::fs::remove_file(&out).unwrap();
    let bad = run(&[
        "import",
        file.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--bind batch="));
    assert!(!out.exists(), "nothing written");
    let check = run(&["check", file.to_str().unwrap(), "--bind", "batch=2"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let r = run(&[
        "run",
        file.to_str().unwrap(),
        "--bind",
        "batch=2",
        "--plan",
        "default",
        "--json",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v[0]["verified"], serde_json::Value::Bool(true), "{v}");
}

// ---- mutations ----------------------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

const OPS: &[&str] = &[
    "MatMul",
    "Add",
    "Reshape",
    "Transpose",
    "Softmax",
    "Relu",
    "Gemm",
    "Slice",
    "Concat",
    "Conv",
    "Split",
    "Where",
    "Hardmax",
    "Gather",
];

/// A structural mutation of a decoded model (or of its bytes).
fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut m = ModelProto::decode(bytes).unwrap();
    let g = m.graph.as_mut().unwrap();
    let n = g.node.len();
    match rng.below(7) {
        0 => {
            let mut b = bytes.to_vec();
            b.truncate(rng.below(b.len()));
            return b;
        }
        1 => {
            let mut b = bytes.to_vec();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] = rng.below(256) as u8;
            }
            return b;
        }
        2 => g.node[rng.below(n)].op_type = Some(OPS[rng.below(OPS.len())].into()),
        3 => {
            g.node.remove(rng.below(n));
        }
        4 => {
            let nd = &mut g.node[rng.below(n)];
            if let Some(a) = nd.attribute.first_mut() {
                a.i = Some([-3, 0, 1, 7, i64::MAX][rng.below(5)]);
                a.ints
                    .iter_mut()
                    .for_each(|x| *x = [-1, 0, 5][rng.below(3)]);
            }
        }
        5 => {
            let i = rng.below(g.initializer.len().max(1));
            if let Some(t) = g.initializer.get_mut(i) {
                if let Some(d) = t.dims.first_mut() {
                    *d = [0, 1, 3, -2, 1 << 40][rng.below(5)];
                }
                t.int64_data
                    .iter_mut()
                    .for_each(|x| *x = [-1, 0, 2][rng.below(3)]);
            }
        }
        _ => {
            let nd = &mut g.node[rng.below(n)];
            if !nd.input.is_empty() {
                let i = rng.below(nd.input.len());
                nd.input[i] = ["", "nope", "x"][rng.below(3)].to_string();
            }
        }
    }
    m.encode_to_vec()
}

/// A few hundred mutations of the real files: each imports to a scenario that runs
/// (timing mode, default layouts) or ends in an error — never a panic.
#[test]
fn mutated_exports_never_panic() {
    let mut rng = Rng(0x0a11_5eed_0f0a_1234);
    let small: Vec<(String, Vec<u8>)> = [
        "mlp_784_dynB_f32.onnx",
        "resnet_cifar_f32.onnx",
        "gpt2_attn_block_s128_f32.onnx",
        "bert_layer_s128_f32_dynamo.onnx",
    ]
    .iter()
    .map(|n| (n.to_string(), std::fs::read(dir().join(n)).unwrap()))
    .collect();
    let (mut imported, mut ran, mut errors) = (0, 0, 0);
    for k in 0..300 {
        let (name, bytes) = &small[k % small.len()];
        let b = mutate(bytes, &mut rng);
        match import_bytes(name, &b, &binds()) {
            Err(_) => errors += 1,
            Ok(imp) => {
                imported += 1;
                let sc =
                    scenario::parse(&imp.text, name).unwrap_or_else(|e| panic!("{name}: {e:?}"));
                assert_eq!(sc, imp.scenario, "{name}: the printed scenario parses back");
                let src = scenario::Source {
                    path: name.clone(),
                    text: imp.text.clone(),
                };
                if let Ok(mut res) =
                    scenario::resolve(&sc, &src, Some("default"), &[], &BTreeMap::new())
                {
                    res.mode = Mode::Timing;
                    if mnsim_sim::run::run(&res).is_ok() {
                        ran += 1;
                    }
                }
            }
        }
    }
    eprintln!("300 mutations: {imported} imported ({ran} ran), {errors} errors");
    assert!(imported > 0 && errors > 0);
}
