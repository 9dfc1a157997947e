//! The JAX exports of `scenarios/workloads/stablehlo/`: every file imports (the symbolic ones
//! with their dimensions bound), loads back, runs in timing mode under the import's
//! default layouts, and verifies in functional mode when every tensor has at most 2^21
//! elements; the MatMul FLOP in the report equal 2·M·N·K·batch computed here from each
//! `dot_general` line of the file; the attention blocks split their fused QKV
//! projection with three Slice kernels. Small inline modules of `convolution`, `pad`,
//! `slice` (unaligned, strided, several axes, of a broadcast, `real_dynamic_slice`) and
//! `compare` + `select` run in functional mode, verify, and hold the values the
//! StableHLO spec gives, computed here from the arguments (the Conv FLOP from the
//! shapes). Unbound symbolic dimensions, failed shape assertions, unsupported ops and
//! unmapped attributes are errors naming the dimension, the op or the attribute at its
//! line:column. Mutations of the real files never panic.

mod common;

use mnsim_reports::Report;
use mnsim_sim::import::{self, Imported, Options};
use mnsim_sim::scenario::{self, Mode, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `scenarios/workloads/stablehlo`: JAX's exports of model blocks.
fn dir() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/workloads/stablehlo");
    assert!(d.is_dir(), "{} is missing", d.display());
    d
}

fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlir"))
        .collect();
    v.sort();
    assert!(v.len() >= 14, "{} files", v.len());
    v
}

/// Symbolic dimensions bound to one size, so that every `?` of the file is it.
const SIZE: u64 = 4;

fn binds() -> BTreeMap<String, u64> {
    [("b".to_string(), SIZE), ("t".to_string(), SIZE)].into()
}

fn src_of(path: &Path) -> Source {
    Source {
        path: path.display().to_string(),
        text: std::fs::read_to_string(path).unwrap(),
    }
}

fn import_text(name: &str, text: &str, binds: &BTreeMap<String, u64>) -> Result<Imported, String> {
    let src = Source {
        path: name.into(),
        text: text.into(),
    };
    // Messages as one line (the rendering wraps them).
    import::import_mlir(&src, &Options::default(), binds)
        .map_err(|e| common::one_line(&format!("{e:?}")))
}

/// The attention blocks' live set (the residual input, q, k and v) overflows LM under
/// the import's default layouts: they run with LM doubled (a what-if knob).
fn sets_for(name: &str) -> Vec<(String, f64)> {
    if name.starts_with("gpt2_attn") {
        vec![("levels.PE.memory.bytes".into(), 65536.0)]
    } else {
        Vec::new()
    }
}

fn run_plan(imp: &Imported, name: &str, mode: Mode) -> Report {
    common::graphs::run_imported(imp, name, "default", &sets_for(name), mode).report
}

/// The integers of the first `[...]` after `key = ` and of the `[...]` after ` x `.
fn pair(line: &str, key: &str) -> (Vec<usize>, Vec<usize>) {
    let Some(i) = line.find(&format!("{key} = [")) else {
        return (Vec::new(), Vec::new());
    };
    let rest = &line[i + key.len() + 3..];
    let ints = |s: &str| -> Vec<usize> {
        s.split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| x.trim().parse().unwrap())
            .collect()
    };
    let a_end = rest.find(']').unwrap();
    let a = ints(&rest[1..a_end]);
    let rest = &rest[a_end..];
    let b_start = rest.find('[').unwrap();
    let b_end = b_start + rest[b_start..].find(']').unwrap();
    let b = ints(&rest[b_start + 1..b_end]);
    (a, b)
}

/// `?x12x128xf32` → dims, every `?` taken as [`SIZE`].
fn dims(ty: &str) -> Vec<u64> {
    let parts: Vec<&str> = ty.split('x').collect();
    parts[..parts.len() - 1]
        .iter()
        .map(|d| if *d == "?" { SIZE } else { d.parse().unwrap() })
        .collect()
}

/// 2·(result elements)·(contracted size) for every `dot_general` line of the file.
fn dot_flops(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.contains("stablehlo.dot_general")) {
        let types: Vec<Vec<u64>> = line
            .split("tensor<")
            .skip(1)
            .map(|s| dims(&s[..s.find('>').unwrap()]))
            .collect();
        let (lc, _) = pair(line, "contracting_dims");
        let k: u64 = lc.iter().map(|&a| types[0][a]).product();
        let n: u64 = types[2].iter().product();
        out.push(2 * n * k);
    }
    out.sort_unstable();
    out
}

#[test]
fn every_export_imports_loads_back_runs_and_verifies() {
    let mut table = Vec::new();
    for path in files() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let src = src_of(&path);
        let imp = import_text(&name, &src.text, &binds()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let sc = scenario::parse(&imp.text, &name).unwrap();
        assert_eq!(sc, imp.scenario, "{name}: the printed scenario parses back");
        assert!(
            sc.plans["auto"]
                .values()
                .all(|v| *v == scenario::PlanValue::Any)
        );
        let symbolic = src.text.contains("tensor<?");
        assert_eq!(!sc.bind.is_empty(), symbolic, "{name}: bind");
        let timing = run_plan(&imp, &name, Mode::Timing);
        assert!(timing.total_cycles > 0, "{name}");
        let mut got: Vec<u64> = timing
            .ops
            .iter()
            .filter(|o| o.op.contains("MatMul"))
            .map(|o| o.flops.unwrap())
            .collect();
        got.sort_unstable();
        assert_eq!(got, dot_flops(&src.text), "{name}: dot_general FLOP");
        // Data movement reports no matrix-unit FLOP: only the dot_generals do.
        let verified =
            if imp.max_elems <= import::FUNCTIONAL_ELEMS && !name.starts_with("gpt2_attn") {
                let f = run_plan(&imp, &name, Mode::Functional);
                assert_eq!(f.verified, Some(true), "{name}: functional verification");
                assert_eq!(f.total_cycles, timing.total_cycles, "{name}: modes agree");
                "verified"
            } else {
                "timing"
            };
        table.push(format!(
            "{name}: {} cycles, {verified}",
            timing.total_cycles
        ));
    }
    eprintln!("{}", table.join("\n"));
}

/// The small attention block imports with its causal mask as a constant.
#[test]
fn the_causal_mask_is_a_constant() {
    let path = dir().join("gpt2_attn_block_s128_f32.mlir");
    let src = src_of(&path);
    let imp = import_text("a.mlir", &src.text, &BTreeMap::new()).unwrap();
    // tril of [128,128] row-major: row i holds i+1 ones, then 127-i zeros.
    assert!(
        imp.text
            .contains("init: Runs([(1, 1.0), (127, 0.0), (2, 1.0), (126, 0.0),"),
        "the causal mask"
    );
    assert!(imp.text.contains("shape: \"pred[128,128]{1,0}\""));
}

#[test]
fn an_unbound_symbolic_dimension_is_named() {
    for (file, dim) in [
        ("softmax_dynB_12x128x128_f32.mlir", "b"),
        ("gpt2_attn_block_dynB_dynT_f32.mlir", "t"),
    ] {
        let src = src_of(&dir().join(file));
        let only_b: BTreeMap<String, u64> = [("b".to_string(), 2)].into();
        let binds = if dim == "b" { BTreeMap::new() } else { only_b };
        let e = import_text(file, &src.text, &binds).unwrap_err();
        assert!(
            e.contains(&format!("the symbolic dimension `{dim}`"))
                && e.contains(&format!("--bind {dim}=")),
            "{file}: {e}"
        );
    }
}

#[test]
fn a_failed_shape_assertion_is_an_error_with_jax_message() {
    let src = src_of(&dir().join("softmax_dynB_12x128x128_f32.mlir"));
    let zero: BTreeMap<String, u64> = [("b".to_string(), 0)].into();
    let e = import_text("s.mlir", &src.text, &zero).unwrap_err();
    assert!(e.contains("shape assertion failed"), "{e}");
    assert!(
        e.contains("Expected value >= 1 for dimension variable 'b'"),
        "{e}"
    );
    assert!(
        e.contains("s.mlir:8:5"),
        "points at the custom_call's line: {e}"
    );
}

#[test]
fn the_symbolic_binding_reaches_the_scenario() {
    let src = src_of(&dir().join("llama_gated_mlp_dynB_s128_f32.mlir"));
    let b: BTreeMap<String, u64> = [("b".to_string(), 3)].into();
    let imp = import_text("l.mlir", &src.text, &b).unwrap();
    assert!(
        imp.text.contains("bind: {\"b\": 3}"),
        "{}",
        &imp.text[..600]
    );
    assert!(imp.text.contains("shape: \"f32[b?,128,4096]{2,1,0}\""));
    // The private functions were inlined: SiLU's ops are in the program.
    assert!(imp.text.contains("Unary(op: Exp"));
}

#[test]
fn an_unsupported_op_is_named_at_its_line_and_column() {
    let src = src_of(&dir().join("gpt2_mlp_gelu_s128_f32.mlir"));
    let text = src.text.replace("stablehlo.tanh", "stablehlo.cosine");
    let e = import_text("g.mlir", &text, &BTreeMap::new()).unwrap_err();
    assert!(
        e.contains("the op `stablehlo.cosine` is not supported"),
        "{e}"
    );
    assert!(e.contains("g.mlir:16:11"), "{e}");
    // The exact GELU's erf is a kernel.
    let text = src.text.replace("stablehlo.tanh", "chlo.erf");
    let imp = import_text("g.mlir", &text, &BTreeMap::new()).unwrap();
    assert!(imp.text.contains("Unary(op: Erf"));
    let conv = "func.func public @main(%a: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32> {\n  %0 = stablehlo.convolution(%a, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32>\n  return %0 : tensor<1x6x6x8xf32>\n}\n";
    let imp = import_text("c.mlir", conv, &BTreeMap::new()).unwrap();
    assert!(imp.text.contains("Conv("), "{}", imp.text);
}

#[test]
fn syntax_errors_point_into_the_file() {
    for (text, want, at) in [
        (
            "module {\n  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = stablehlo.add %a, %b : tensor<4xf32>\n    return %0 : tensor<4xf32>\n  }\n}\n",
            "`%b` is not defined",
            "x.mlir:3:28",
        ),
        (
            "module {\n  func.func public @main(%a: tensor<4xq7>) -> tensor<4xf32> {\n",
            "unsupported element type `q7`",
            "x.mlir:2:30",
        ),
        (
            "module {\n  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = stablehlo.add %a, %a : tensor<4xf32>\n",
            "never closed",
            "x.mlir:",
        ),
        ("hello", "unexpected `hello`", "x.mlir:1:1"),
    ] {
        let e = import_text("x.mlir", text, &BTreeMap::new()).unwrap_err();
        assert!(e.contains(want) && e.contains(at), "{want}: {e}");
    }
}

/// xorshift64: deterministic mutations.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

const OPS: [&str; 12] = [
    "stablehlo.add",
    "stablehlo.dot_general",
    "stablehlo.reduce",
    "stablehlo.broadcast_in_dim",
    "stablehlo.reshape",
    "stablehlo.transpose",
    "stablehlo.slice",
    "stablehlo.select",
    "stablehlo.cosine",
    "call",
    "return",
    "stablehlo.constant",
];

fn mutate(text: &str, rng: &mut Rng) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match rng.below(5) {
        0 => {
            let mut cut = rng.below(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text[..cut].to_string()
        }
        1 => {
            let digits: Vec<usize> = text
                .bytes()
                .enumerate()
                .filter(|(_, b)| b.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            let i = digits[rng.below(digits.len())];
            let mut b = text.as_bytes().to_vec();
            b[i] = [b'0', b'1', b'7', b'9'][rng.below(4)];
            String::from_utf8(b).unwrap()
        }
        2 => {
            let from = OPS[rng.below(OPS.len())];
            let to = OPS[rng.below(OPS.len())];
            text.replacen(from, to, 1 + rng.below(3))
        }
        3 => {
            let drop = rng.below(lines.len());
            let kept: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != drop)
                .map(|(_, l)| *l)
                .collect();
            kept.join("\n")
        }
        _ => {
            // A type's dimension becomes `?` or an element type changes.
            let i = rng.below(text.len());
            let mut j = i;
            while j < text.len() && !text.is_char_boundary(j) {
                j += 1;
            }
            let rest = &text[j..];
            match rest.find("tensor<") {
                Some(k) => {
                    let at = j + k + 7;
                    let r = ["?x", "0x", "bf16>", "i1>", ""][rng.below(5)];
                    format!("{}{r}{}", &text[..at], &text[at..])
                }
                None => text.to_string(),
            }
        }
    }
}

/// A few hundred mutations of the real files: each imports to a scenario that runs
/// (timing mode, default layouts) or ends in an error — never a panic.
#[test]
fn mutated_exports_never_panic() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let small: Vec<PathBuf> = files()
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("layernorm")
                || n.starts_with("softmax")
                || n.starts_with("rmsnorm")
                || n.starts_with("gpt2_attn_block_dynB_dynT")
        })
        .collect();
    let (mut imported, mut ran, mut errors) = (0, 0, 0);
    for k in 0..300 {
        let path = &small[k % small.len()];
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = mutate(&src_of(path).text, &mut rng);
        let small_binds: BTreeMap<String, u64> =
            [("b".to_string(), 1), ("t".to_string(), 2)].into();
        match import_text(&name, &text, &small_binds) {
            Err(_) => errors += 1,
            Ok(imp) => {
                imported += 1;
                let sc = scenario::parse(&imp.text, &name)
                    .unwrap_or_else(|e| panic!("{name}: the printed scenario: {e:?}"));
                assert_eq!(sc, imp.scenario, "{name}: the printed scenario parses back");
                let src = Source {
                    path: name.clone(),
                    text: imp.text.clone(),
                };
                if let Ok(mut res) = scenario::resolve(
                    &sc,
                    &src,
                    Some("default"),
                    &sets_for(&name),
                    &Default::default(),
                ) {
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

/// The command line: `import` and `check` take a `.mlir` with `--bind`, and without
/// it fail naming the dimension, writing nothing.
#[test]
fn the_cli_imports_and_checks_mlir() {
    let exe = env!("CARGO_BIN_EXE_mnsim");
    let file = dir().join("softmax_dynB_12x128x128_f32.mlir");
    let tmp = common::tmp::tempdir("shlo");
    let out = tmp.path().join("shlo.ron");
    let ok = std::process::Command::new(exe)
        .args([
            "import",
            file.to_str().unwrap(),
            "--bind",
            "b=2",
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("bind: {\"b\": 2}") && text.contains("f32[b?,12,128,128]"));
    std::fs::remove_file(&out).unwrap();
    let bad = std::process::Command::new(exe)
        .args([
            "import",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(
        e.contains("symbolic dimension") && e.contains("--bind b="),
        "{e}"
    );
    assert!(!out.exists(), "nothing written");
    let check = std::process::Command::new(exe)
        .args(["check", file.to_str().unwrap(), "--bind", "b=2"])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// `Runs` must cover the tensor exactly.
#[test]
fn runs_that_miss_the_element_count_are_an_error() {
    let text = r#"Scenario(name: "r", machine: Preset("toy4"), mode: Functional,
        tensors: {"x": (dtype: F32, shape: "f32[4]", init: Runs([(1, 1.0), (2, 0.0)]))},
        program: [Load(tensor: "x", layout: "((4_PE))"), Store(tensor: "x")])"#;
    let sc = scenario::parse(text, "r.ron").unwrap();
    let src = Source {
        path: "r.ron".into(),
        text: text.into(),
    };
    let e = format!(
        "{:?}",
        scenario::resolve(&sc, &src, None, &[], &Default::default()).unwrap_err()
    );
    assert!(
        e.contains("count 3 elements where") && e.contains("the tensor has 4"),
        "{e}"
    );
}

/// `Unary Erf` (the exact GELU's `chlo.erf`) against tabulated values.
#[test]
fn erf_matches_its_table() {
    for (x, want) in [
        (0.0, 0.0),
        (1e-9, 1.128_379_167_095_512_6e-9),
        (0.3, 0.328_626_759_459_127_4),
        (-0.49, -0.511_668_261_188_523),
        (1.0, 0.842_700_792_949_714_9),
        (2.0, 0.995_322_265_018_952_7),
        (-3.5, -0.999_999_256_901_627_7),
    ] {
        let got = mnsim_kernels::UnaryOp::Erf.apply(x);
        let tol = if f64::abs(x) < 0.5 { 1e-15 } else { 3e-7 };
        assert!(
            (got - want).abs() <= tol * f64::abs(want).max(1e-300),
            "erf({x}) = {got}, want {want}"
        );
    }
}

/// An inline module imported and run under the import's default layouts in functional
/// mode (verified against the host reference, the same cycles as timing mode): the
/// report, the arguments' values (`arg0`, `arg1`, ...) and the stored result's, each
/// row-major.
struct Ran {
    imp: Imported,
    report: Report,
    args: Vec<Vec<f64>>,
    out: Vec<f64>,
}

fn run_inline(name: &str, text: &str) -> Ran {
    let imp = import_text(name, text, &BTreeMap::new()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let timing = run_plan(&imp, name, Mode::Timing);
    let run = common::graphs::run_imported(&imp, name, "default", &[], Mode::Functional);
    assert_eq!(
        run.report.verified,
        Some(true),
        "{name}: functional verification\n{}",
        imp.text
    );
    assert_eq!(
        run.report.total_cycles, timing.total_cycles,
        "{name}: modes agree"
    );
    let values = |t: &str| -> Option<Vec<f64>> {
        let dtype = imp.scenario.tensors.get(t)?.dtype;
        let b = run
            .engine
            .state
            .dram_row_major(run.engine.state.tensor_id(t)?)?;
        Some(
            b.chunks_exact(dtype.bytes() as usize)
                .map(|c| mnsim_kernels::elem::read(dtype, c))
                .collect(),
        )
    };
    let args: Vec<Vec<f64>> = (0..).map_while(|i| values(&format!("arg{i}"))).collect();
    let stored = imp
        .scenario
        .program
        .iter()
        .rev()
        .find_map(|op| match op {
            scenario::Op::Store { tensor } => Some(tensor.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: nothing stored"));
    let out = values(&stored).unwrap_or_else(|| panic!("{name}: `{stored}` stored"));
    Ran {
        imp,
        report: run.report,
        args,
        out,
    }
}

/// One list of `dim_numbers`: `b`, `f`, `i`, `o` or a spatial index per axis.
fn dn_list(s: &str) -> Vec<String> {
    s.trim_matches(['[', ']'])
        .split(',')
        .map(|x| x.trim().to_string())
        .collect()
}

fn pos(l: &[String], what: &str) -> usize {
    l.iter().position(|x| x == what).unwrap()
}

/// A convolution as the StableHLO spec defines it, computed here from the module's
/// own attributes: `dn` `[..]x[..]->[..]`, per spatial dimension stride, (lo, hi)
/// pads and rhs dilation, feature groups.
struct ConvCase {
    dn: &'static str,
    x: Vec<u64>,
    w: Vec<u64>,
    y: Vec<u64>,
    stride: Vec<u64>,
    pad: Vec<(u64, u64)>,
    dil: Vec<u64>,
    groups: u64,
}

fn ty(d: &[u64]) -> String {
    let s: Vec<String> = d.iter().map(|x| x.to_string()).collect();
    format!("tensor<{}xf32>", s.join("x"))
}

impl ConvCase {
    fn lists(&self) -> [Vec<String>; 3] {
        let (l, rest) = self.dn.split_once('x').unwrap();
        let (r, o) = rest.split_once("->").unwrap();
        [dn_list(l), dn_list(r), dn_list(o)]
    }

    fn module(&self) -> String {
        let l = |v: &[u64]| {
            let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            format!("[{}]", s.join(", "))
        };
        let pads: Vec<String> = self
            .pad
            .iter()
            .map(|(a, b)| format!("[{a}, {b}]"))
            .collect();
        format!(
            "module @jit_f {{\n  func.func public @main(%arg0: {x}, %arg1: {w}) -> ({y} {{jax.result_info = \"\"}}) {{\n    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = {dn}, window = {{stride = {s}, pad = [{p}], rhs_dilate = {d}}} {{batch_group_count = 1 : i64, feature_group_count = {g} : i64}} : ({x}, {w}) -> {y}\n    return %0 : {y}\n  }}\n}}\n",
            x = ty(&self.x),
            w = ty(&self.w),
            y = ty(&self.y),
            dn = self.dn,
            s = l(&self.stride),
            p = pads.join(", "),
            d = l(&self.dil),
            g = self.groups
        )
    }

    /// 2·N·OC·Π(output spatial)·(IC/groups)·Π(window).
    fn flops(&self) -> u64 {
        let [_, r, o] = self.lists();
        let sp = |l: &[String], d: &[u64]| -> u64 {
            (0..l.len())
                .filter(|&a| l[a].parse::<usize>().is_ok())
                .map(|a| d[a])
                .product()
        };
        2 * self.y[pos(&o, "b")]
            * self.y[pos(&o, "f")]
            * sp(&o, &self.y)
            * self.w[pos(&r, "i")]
            * sp(&r, &self.w)
    }

    /// The result, row-major, from the arguments' values.
    fn reference(&self, x: &[f64], w: &[f64]) -> Vec<f64> {
        let [l, r, o] = self.lists();
        let d = self.stride.len();
        let strides = |dims: &[u64]| -> Vec<u64> {
            let mut s = vec![1u64; dims.len()];
            for a in (0..dims.len() - 1).rev() {
                s[a] = s[a + 1] * dims[a + 1];
            }
            s
        };
        let (xs, ws, ys) = (strides(&self.x), strides(&self.w), strides(&self.y));
        let sp = |list: &[String], k: usize| pos(list, &k.to_string());
        let icg = self.w[pos(&r, "i")];
        let ocg = self.y[pos(&o, "f")] / self.groups;
        let win: Vec<u64> = (0..d).map(|k| self.w[sp(&r, k)]).collect();
        let n_win: u64 = win.iter().product();
        let total: u64 = self.y.iter().product();
        (0..total)
            .map(|i| {
                let yi: Vec<u64> = (0..self.y.len()).map(|a| (i / ys[a]) % self.y[a]).collect();
                let (n, oc) = (yi[pos(&o, "b")], yi[pos(&o, "f")]);
                let g = oc / ocg;
                let mut acc = 0.0;
                for c in 0..icg {
                    'tap: for t in 0..n_win {
                        let mut xo = n * xs[pos(&l, "b")] + (g * icg + c) * xs[pos(&l, "f")];
                        let mut wo = c * ws[pos(&r, "i")] + oc * ws[pos(&r, "o")];
                        let mut rem = t;
                        for k in (0..d).rev() {
                            let wk = rem % win[k];
                            rem /= win[k];
                            let at = (yi[sp(&o, k)] * self.stride[k] + wk * self.dil[k]) as i64
                                - self.pad[k].0 as i64;
                            if at < 0 || at >= self.x[sp(&l, k)] as i64 {
                                continue 'tap;
                            }
                            xo += at as u64 * xs[sp(&l, k)];
                            wo += wk * ws[sp(&r, k)];
                        }
                        acc += x[xo as usize] * w[wo as usize];
                    }
                }
                acc
            })
            .collect()
    }
}

fn close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "{what}: element {i} is {g}, want {w}"
        );
    }
}

/// `convolution` becomes the Conv kernel (with transposes for dimension numbers it
/// does not read): each case verifies, its values are the spec's convolution of the
/// arguments, and the Conv op's FLOP are 2·N·OC·Π(output)·(IC/groups)·Π(window).
#[test]
fn convolutions_run_verify_and_count_their_flop() {
    let cases = [
        // NHWC with padding and stride 2.
        ConvCase {
            dn: "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
            x: vec![1, 9, 9, 4],
            w: vec![3, 3, 4, 8],
            y: vec![1, 5, 5, 8],
            stride: vec![2, 2],
            pad: vec![(1, 1), (1, 1)],
            dil: vec![1, 1],
            groups: 1,
        },
        // Grouped: 4 groups of 2 input and 3 output channels, uneven padding.
        ConvCase {
            dn: "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
            x: vec![2, 6, 6, 8],
            w: vec![3, 3, 2, 12],
            y: vec![2, 5, 6, 12],
            stride: vec![1, 1],
            pad: vec![(0, 1), (1, 1)],
            dil: vec![1, 1],
            groups: 4,
        },
        // NCHW with rhs dilation.
        ConvCase {
            dn: "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
            x: vec![1, 3, 10, 10],
            w: vec![6, 3, 3, 3],
            y: vec![1, 6, 6, 8],
            stride: vec![1, 1],
            pad: vec![(0, 0), (1, 1)],
            dil: vec![2, 2],
            groups: 1,
        },
        // 1-D.
        ConvCase {
            dn: "[b, 0, f]x[0, i, o]->[b, 0, f]",
            x: vec![2, 16, 4],
            w: vec![3, 4, 5],
            y: vec![2, 16, 5],
            stride: vec![1],
            pad: vec![(1, 1)],
            dil: vec![1],
            groups: 1,
        },
        // 3-D, depthwise.
        ConvCase {
            dn: "[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]",
            x: vec![1, 4, 5, 4, 3],
            w: vec![2, 2, 2, 1, 3],
            y: vec![1, 3, 2, 3, 3],
            stride: vec![1, 2, 1],
            pad: vec![(0, 0), (0, 0), (0, 0)],
            dil: vec![1, 1, 1],
            groups: 3,
        },
        // Dimension numbers the kernel does not read: every operand transposed.
        ConvCase {
            dn: "[b, 1, 0, f]x[i, 0, o, 1]->[f, 0, 1, b]",
            x: vec![2, 7, 6, 3],
            w: vec![3, 3, 4, 2],
            y: vec![4, 4, 6, 2],
            stride: vec![1, 1],
            pad: vec![(0, 0), (0, 0)],
            dil: vec![1, 1],
            groups: 1,
        },
        // The weights in IOX, the data NCX.
        ConvCase {
            dn: "[b, f, 0]x[i, o, 0]->[b, f, 0]",
            x: vec![1, 4, 12],
            w: vec![4, 6, 5],
            y: vec![1, 6, 4],
            stride: vec![3],
            pad: vec![(2, 1)],
            dil: vec![1],
            groups: 1,
        },
    ];
    for (k, c) in cases.iter().enumerate() {
        let name = format!("conv{k}.mlir");
        let ran = run_inline(&name, &c.module());
        assert!(ran.imp.text.contains("Conv("), "{name}: {}", ran.imp.text);
        let convs: Vec<u64> = ran
            .report
            .ops
            .iter()
            .filter(|o| o.op.contains("Conv"))
            .map(|o| o.flops.unwrap())
            .collect();
        assert_eq!(convs, vec![c.flops()], "{name}: FLOP");
        close(&ran.out, &c.reference(&ran.args[0], &ran.args[1]), &name);
    }
}

/// The convolutions mnsim does not map are errors naming the attribute at its
/// line:column: a transposed convolution, batch groups, a reversed window, negative
/// padding, an unknown precision.
#[test]
fn unmapped_convolution_attributes_are_named_at_their_place() {
    let head = "func.func public @main(%a: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32> {\n";
    let tail = " : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32>\n  return %0 : tensor<1x6x6x8xf32>\n}\n";
    let op = "  %0 = stablehlo.convolution(%a, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], ";
    for (attrs, key, says) in [
        (
            "window = {stride = [1, 1], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}",
            "lhs_dilate",
            "transposed convolution",
        ),
        (
            "window = {reverse = [1, 0]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}",
            "reverse",
            "reversed window",
        ),
        (
            "window = {reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}",
            "reverse",
            "reversed window",
        ),
        (
            "window = {} {batch_group_count = 2 : i64, feature_group_count = 1 : i64}",
            "batch_group_count",
            "`batch_group_count` 2 is not supported",
        ),
        (
            "window = {pad = [[1, -1], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}",
            "pad",
            "negative `pad`",
        ),
        (
            "window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision FAST>, #stablehlo<precision DEFAULT>]}",
            "precision_config",
            "`precision_config` must hold",
        ),
    ] {
        let line = format!("{op}{attrs}");
        let text = format!("{head}{line}{tail}");
        let e = import_text("c.mlir", &text, &BTreeMap::new()).unwrap_err();
        let col = line.find(&format!("{key} =")).unwrap() + 1;
        assert!(
            e.contains(says) && e.contains(&format!("c.mlir:2:{col}")),
            "{key}: want `{says}` at 2:{col}: {e}"
        );
    }
    // Every precision JAX writes imports (mnsim computes at the operands' dtype), and
    // a result type that disagrees with the window is an error at the type.
    let ok = format!(
        "{head}{op}window = {{}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision DEFAULT>]}}{tail}"
    );
    import_text("c.mlir", &ok, &BTreeMap::new()).unwrap();
    let bad = ok.replace("window = {}", "window = {stride = [2, 2]}");
    let e = import_text("c.mlir", &bad, &BTreeMap::new()).unwrap_err();
    assert!(
        e.contains("the result type says [1, 6, 6, 8], but the operands give [1, 3, 3, 8]"),
        "{e}"
    );
}

/// `exp` of the argument padded with zeros on two axes.
const PAD_EXP: &str = "func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<6x7xf32> {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.exponential %arg0 : tensor<3x4xf32>
  %1 = stablehlo.pad %0, %cst, low = [1, 0], high = [2, 3], interior = [0, 0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<6x7xf32>
  return %1 : tensor<6x7xf32>
}
";

/// The argument padded with -1.5 on three axes (the same constant at both ends of one).
const PAD_VALUE: &str = "func.func public @main(%arg0: tensor<2x3x4xf32>) -> tensor<3x5x6xf32> {
  %cst = stablehlo.constant dense<-1.500000e+00> : tensor<f32>
  %0 = stablehlo.pad %arg0, %cst, low = [0, 2, 1], high = [1, 0, 1], interior = [0, 0, 0] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<3x5x6xf32>
  return %0 : tensor<3x5x6xf32>
}
";

/// A pad of a constant (interior, negative), evaluated at import.
const PAD_FOLDED: &str = "func.func public @main(%arg0: tensor<5xf32>) -> tensor<5xf32> {
  %c = stablehlo.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
  %z = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %p = stablehlo.pad %c, %z, low = [1], high = [-1], interior = [1] : (tensor<3xf32>, tensor<f32>) -> tensor<5xf32>
  %0 = stablehlo.add %arg0, %p : tensor<5xf32>
  return %0 : tensor<5xf32>
}
";

/// `x` of `dims` padded by `low`/`high` elements of `value` per axis (negative:
/// cropped), row-major: result element `y` of an axis is `x`'s `y − low` when that is
/// inside `x`, else `value`.
fn pad_ref(x: &[f64], dims: &[u64], low: &[i64], high: &[i64], value: f64) -> Vec<f64> {
    let out: Vec<u64> = (0..dims.len())
        .map(|a| (dims[a] as i64 + low[a] + high[a]) as u64)
        .collect();
    let total: u64 = out.iter().product();
    (0..total)
        .map(|i| {
            let mut rem = i;
            let mut src = 0u64;
            let mut inside = true;
            for a in (0..out.len()).rev() {
                let y = (rem % out[a]) as i64;
                rem /= out[a];
                let stride: u64 = dims[a + 1..].iter().product();
                let at = y - low[a];
                if at < 0 || at >= dims[a] as i64 {
                    inside = false;
                } else {
                    src += at as u64 * stride;
                }
            }
            if inside { x[src as usize] } else { value }
        })
        .collect()
}

/// Interior padding of a computed tensor: one Pad kernel (edges and gaps).
const PAD_INTERIOR: &str = "func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<7x11xf32> {
  %cst = stablehlo.constant dense<-2.000000e+00> : tensor<f32>
  %0 = stablehlo.exponential %arg0 : tensor<3x4xf32>
  %1 = stablehlo.pad %0, %cst, low = [1, 0], high = [2, 1], interior = [0, 2] : (tensor<3x4xf32>, tensor<f32>) -> tensor<6x11xf32>
  %2 = stablehlo.pad %1, %cst, low = [0, 0], high = [0, 0], interior = [1, 0] : (tensor<6x11xf32>, tensor<f32>) -> tensor<11x11xf32>
  %3 = stablehlo.slice %2 [0:7, 0:11] : (tensor<11x11xf32>) -> tensor<7x11xf32>
  return %3 : tensor<7x11xf32>
}
";

/// Negative padding crops (a Slice), then the rest pads (a Concat per padded axis).
const PAD_CROP: &str = "func.func public @main(%arg0: tensor<5x6xf32>) -> tensor<6x3xf32> {
  %cst = stablehlo.constant dense<2.500000e+00> : tensor<f32>
  %0 = stablehlo.exponential %arg0 : tensor<5x6xf32>
  %1 = stablehlo.pad %0, %cst, low = [-1, 1], high = [2, -4], interior = [0, 0] : (tensor<5x6xf32>, tensor<f32>) -> tensor<6x3xf32>
  return %1 : tensor<6x3xf32>
}
";

/// `pad` of a computed tensor becomes Concats with constants filled with the padding
/// value (and a Slice where it crops); it verifies and holds the operand where the
/// spec puts it. A pad of a constant (interior and negative padding included) is
/// evaluated at import.
#[test]
fn pads_run_and_verify() {
    let ran = run_inline("p0.mlir", PAD_EXP);
    assert_eq!(
        ran.imp.text.matches("Concat(").count(),
        2,
        "{}",
        ran.imp.text
    );
    let e: Vec<f64> = ran.args[0].iter().map(|x| x.exp()).collect();
    close(&ran.out, &pad_ref(&e, &[3, 4], &[1, 0], &[2, 3], 0.0), "p0");
    let ran = run_inline("p1.mlir", PAD_VALUE);
    assert!(
        ran.imp.text.contains("Fill(value: -1.5)"),
        "{}",
        ran.imp.text
    );
    close(
        &ran.out,
        &pad_ref(&ran.args[0], &[2, 3, 4], &[0, 2, 1], &[1, 0, 1], -1.5),
        "p1",
    );
    // [1, 2, 3] with one zero before, one between neighbours, one cut at the end.
    let ran = run_inline("p2.mlir", PAD_FOLDED);
    assert!(!ran.imp.text.contains("Concat("), "{}", ran.imp.text);
    let want: Vec<f64> = ran.args[0]
        .iter()
        .zip([0.0, 1.0, 0.0, 2.0, 0.0])
        .map(|(x, c)| x + c)
        .collect();
    close(&ran.out, &want, "p2");
    // Cropping: rows 1..5 and columns 0..2 kept, then padded with 2.5.
    let ran = run_inline("p3.mlir", PAD_CROP);
    assert_eq!(
        ran.imp.text.matches("Slice(").count(),
        1,
        "{}",
        ran.imp.text
    );
    assert_eq!(
        ran.imp.text.matches("Concat(").count(),
        2,
        "{}",
        ran.imp.text
    );
    let e: Vec<f64> = ran.args[0].iter().map(|x| x.exp()).collect();
    close(
        &ran.out,
        &pad_ref(&e, &[5, 6], &[-1, 1], &[2, -4], 2.5),
        "p3",
    );
    // Interior padding: two Pad kernels, the values where the spec puts them: `exp(x)`
    // at rows 2·(1 + i) (one row before, a gap between rows), columns 3·j (two gaps).
    let ran = run_inline("p4.mlir", PAD_INTERIOR);
    assert_eq!(ran.imp.text.matches("Pad(").count(), 2, "{}", ran.imp.text);
    let e: Vec<f64> = ran.args[0].iter().map(|x| x.exp()).collect();
    let want: Vec<f64> = (0..7 * 11)
        .map(|k| {
            let (r, c) = (k / 11, k % 11);
            let inside = r >= 2 && r % 2 == 0 && (r - 2) / 2 < 3 && c % 3 == 0 && c / 3 < 4;
            if inside {
                e[(r - 2) / 2 * 4 + c / 3]
            } else {
                -2.0
            }
        })
        .collect();
    close(&ran.out, &want, "p4");
}

/// Interior padding of a computed tensor that also crops, a crop that leaves nothing of an axis, and
/// a padding value that is not a constant, are errors at their place.
#[test]
fn unmapped_pads_are_named_at_their_place() {
    let text = |attrs: &str, value: &str, out: &str| {
        format!(
            "func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<f32>) -> tensor<{out}xf32> {{
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.pad %arg0, {value}, {attrs} : (tensor<3x4xf32>, tensor<f32>) -> tensor<{out}xf32>
  return %0 : tensor<{out}xf32>
}}
"
        )
    };
    for (attrs, value, out, key, says) in [
        (
            "low = [0, -1], high = [1, 0], interior = [0, 1]",
            "%cst",
            "4x6",
            "interior",
            "interior padding of a computed tensor with negative edge padding",
        ),
        (
            "low = [-3, 1], high = [1, 0], interior = [0, 0]",
            "%cst",
            "1x5",
            "%0",
            "`pad` crops every element of axis 0 of a computed tensor",
        ),
        (
            "low = [1, 1], high = [0, 0], interior = [0, 0]",
            "%arg1",
            "4x5",
            "%0",
            "the padding value must be a scalar known at import",
        ),
    ] {
        let t = text(attrs, value, out);
        let line = t.lines().nth(2).unwrap();
        let col = line.find(key).unwrap() + 1;
        let e = import_text("p.mlir", &t, &BTreeMap::new()).unwrap_err();
        assert!(
            e.contains(says) && e.contains(&format!("p.mlir:3:{col}")),
            "{key}: want `{says}` at 3:{col}: {e}"
        );
    }
}

/// `x` of `dims` sliced: result index `h` of axis `a` reads `start[a] + stride[a]·h`.
fn slice_ref(x: &[f64], dims: &[u64], start: &[u64], stride: &[u64], out: &[u64]) -> Vec<f64> {
    let total: u64 = out.iter().product();
    (0..total)
        .map(|i| {
            let (mut rem, mut src) = (i, 0u64);
            for a in (0..out.len()).rev() {
                let h = rem % out[a];
                rem /= out[a];
                let stride_in: u64 = dims[a + 1..].iter().product();
                src += (start[a] + stride[a] * h) * stride_in;
            }
            x[src as usize]
        })
        .collect()
}

/// An unaligned block of a computed tensor.
const SLICE_BLOCK: &str = "func.func public @main(%arg0: tensor<4x9xf32>) -> tensor<2x5xf32> {
  %0 = stablehlo.exponential %arg0 : tensor<4x9xf32>
  %1 = stablehlo.slice %0 [1:3, 2:7] : (tensor<4x9xf32>) -> tensor<2x5xf32>
  return %1 : tensor<2x5xf32>
}
";

/// Strides on every axis of a rank-3 tensor, then a slice that takes all of it.
const SLICE_STRIDED: &str =
    "func.func public @main(%arg0: tensor<3x5x8xf32>) -> tensor<2x3x2xf32> {
  %0 = stablehlo.negate %arg0 : tensor<3x5x8xf32>
  %1 = stablehlo.slice %0 [1:3, 0:5:2, 3:8:4] : (tensor<3x5x8xf32>) -> tensor<2x3x2xf32>
  %2 = stablehlo.slice %1 [0:2, 0:3, 0:2] : (tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  return %2 : tensor<2x3x2xf32>
}
";

/// The fused QKV split: three aligned thirds of one computed tensor.
const SLICE_QKV: &str = "func.func public @main(%arg0: tensor<4x12xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.exponential %arg0 : tensor<4x12xf32>
  %1 = stablehlo.slice %0 [0:4, 0:4] : (tensor<4x12xf32>) -> tensor<4x4xf32>
  %2 = stablehlo.slice %0 [0:4, 4:8] : (tensor<4x12xf32>) -> tensor<4x4xf32>
  %3 = stablehlo.slice %0 [0:4, 8:12] : (tensor<4x12xf32>) -> tensor<4x4xf32>
  %4 = stablehlo.add %1, %2 : tensor<4x4xf32>
  %5 = stablehlo.multiply %4, %3 : tensor<4x4xf32>
  return %5 : tensor<4x4xf32>
}
";

/// A slice of a broadcast stays a broadcast of its sliced source.
const SLICE_BROADCAST: &str =
    "func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<6xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.exponential %arg1 : tensor<6xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<6xf32>) -> tensor<4x6xf32>
  %2 = stablehlo.slice %1 [1:3, 1:6:2] : (tensor<4x6xf32>) -> tensor<2x3xf32>
  %3 = stablehlo.add %arg0, %2 : tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}
";

/// `real_dynamic_slice` with bounds known at import.
const SLICE_DYNAMIC: &str = "func.func public @main(%arg0: tensor<6x4xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.exponential %arg0 : tensor<6x4xf32>
  %c = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %c_0 = stablehlo.constant dense<[6, 3]> : tensor<2xi64>
  %c_1 = stablehlo.constant dense<[3, 1]> : tensor<2xi64>
  %1 = stablehlo.real_dynamic_slice %0, %c, %c_0, %c_1 : (tensor<6x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
";

/// `slice` of a computed tensor becomes the Slice kernel (any start, limit and stride):
/// each module verifies in functional mode and holds the elements the spec's slice
/// takes, computed here from the arguments; the Slice ops report no FLOP.
#[test]
fn slices_of_computed_tensors_run_and_verify() {
    let exp = |v: &[f64]| -> Vec<f64> { v.iter().map(|x| x.exp()).collect() };
    let slices = |ran: &Ran| ran.imp.text.matches("Kernel(kernel: Slice(").count();
    let ran = run_inline("s0.mlir", SLICE_BLOCK);
    assert_eq!(slices(&ran), 1, "{}", ran.imp.text);
    assert!(
        ran.imp
            .text
            .contains("Slice(start: [1, 2], limit: [3, 7], stride: [1, 1])"),
        "{}",
        ran.imp.text
    );
    let want = slice_ref(&exp(&ran.args[0]), &[4, 9], &[1, 2], &[1, 1], &[2, 5]);
    close(&ran.out, &want, "s0");
    let op = ran
        .report
        .ops
        .iter()
        .find(|o| o.op.contains("Slice"))
        .unwrap();
    assert_eq!(op.flops, Some(0));
    assert!(op.cycles > 0);

    let ran = run_inline("s1.mlir", SLICE_STRIDED);
    assert_eq!(
        slices(&ran),
        1,
        "the whole-tensor slice is no op: {}",
        ran.imp.text
    );
    let neg: Vec<f64> = ran.args[0].iter().map(|x| -x).collect();
    let want = slice_ref(&neg, &[3, 5, 8], &[1, 0, 3], &[1, 2, 4], &[2, 3, 2]);
    close(&ran.out, &want, "s1");

    let ran = run_inline("s2.mlir", SLICE_QKV);
    assert_eq!(slices(&ran), 3, "{}", ran.imp.text);
    assert!(
        !ran.imp.text.contains("ReduceAxes"),
        "no masked sums: {}",
        ran.imp.text
    );
    let e = exp(&ran.args[0]);
    let third = |t: u64| slice_ref(&e, &[4, 12], &[0, 4 * t], &[1, 1], &[4, 4]);
    let (q, k, v) = (third(0), third(1), third(2));
    let want: Vec<f64> = (0..16).map(|i| (q[i] + k[i]) * v[i]).collect();
    close(&ran.out, &want, "s2");

    let ran = run_inline("s3.mlir", SLICE_BROADCAST);
    assert_eq!(slices(&ran), 1, "{}", ran.imp.text);
    assert!(
        ran.imp
            .text
            .contains("Slice(start: [1], limit: [6], stride: [2])"),
        "the source is sliced, not the broadcast: {}",
        ran.imp.text
    );
    let e = exp(&ran.args[1]);
    let want: Vec<f64> = (0..6)
        .map(|i| ran.args[0][i] + e[1 + 2 * (i % 3)])
        .collect();
    close(&ran.out, &want, "s3");

    let ran = run_inline("s4.mlir", SLICE_DYNAMIC);
    assert_eq!(slices(&ran), 1, "{}", ran.imp.text);
    let want = slice_ref(&exp(&ran.args[0]), &[6, 4], &[1, 0], &[3, 1], &[2, 3]);
    close(&ran.out, &want, "s4");
}

/// A slice whose bounds do not fit its operand, or that takes nothing, is an error at
/// the op.
#[test]
fn slices_that_do_not_fit_are_named() {
    for (bounds, out, says) in [
        (
            "[1:1, 0:9]",
            "0x9",
            "the slice of a computed tensor is empty (axis 0 has no elements)",
        ),
        ("[0:4, 2:10]", "4x8", "axis 1: 2:10:1 does not fit size 9"),
        ("[0:4, 0:9:0]", "4x9", "axis 1: 0:9:0 does not fit size 9"),
        ("[0:4]", "4x9", "the slice names 1 axes of a rank-2 operand"),
        ("[0:4, 2:7]", "4x4", "the result type says"),
    ] {
        let text = SLICE_BLOCK
            .replace("[1:3, 2:7]", bounds)
            .replace("-> tensor<2x5xf32>", &format!("-> tensor<{out}xf32>"))
            .replace(
                "return %1 : tensor<2x5xf32>",
                &format!("return %1 : tensor<{out}xf32>"),
            );
        let e = import_text("s.mlir", &text, &BTreeMap::new()).unwrap_err();
        assert!(e.contains(says) && e.contains("s.mlir:3:"), "{bounds}: {e}");
    }
}

/// The GPT-2 attention exports split the fused QKV projection with three Slice
/// kernels, each reading its third only: the QKV tensor has no other reader, nothing
/// multiplies it by a mask, and every export still runs in timing mode.
#[test]
fn the_attention_blocks_split_qkv_with_three_slices() {
    for path in files() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with("gpt2_attn") {
            continue;
        }
        let imp = import_text(&name, &src_of(&path).text, &binds()).unwrap();
        let slices: Vec<&str> = imp
            .text
            .lines()
            .filter(|l| l.contains("Kernel(kernel: Slice("))
            .collect();
        assert_eq!(slices.len(), 3, "{name}: {slices:#?}");
        let qkv = slices[0]
            .split("inputs: [\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap();
        let readers = imp
            .text
            .lines()
            .filter(|l| l.contains(&format!("\"{qkv}\"")) && l.contains(" out: "))
            .filter(|l| !l.contains(&format!("out: \"{qkv}\"")))
            .count();
        assert_eq!(readers, 3, "{name}: `{qkv}` is read by the slices only");
        let r = run_plan(&imp, &name, Mode::Timing);
        let ops: Vec<_> = r.ops.iter().filter(|o| o.op.contains("Slice")).collect();
        assert_eq!(ops.len(), 3, "{name}");
        assert!(
            ops.iter().all(|o| o.flops == Some(0) && o.cycles > 0),
            "{name}"
        );
        eprintln!("{name}: {} cycles", r.total_cycles);
    }
}

/// A ReLU written as JAX's `where(x > 0, x, 0)` over a row broadcast to every row,
/// then a compare of the argument with the broadcast.
const CMP_RELU: &str = "func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<6xf32>) -> tensor<4x6xf32> {
  %z = stablehlo.constant dense<0.000000e+00> : tensor<4x6xf32>
  %b = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<6xf32>) -> tensor<4x6xf32>
  %s = stablehlo.add %arg0, %b : tensor<4x6xf32>
  %0 = stablehlo.compare  GT, %s, %z,  FLOAT : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %1 = stablehlo.select %0, %s, %z : tensor<4x6xi1>, tensor<4x6xf32>
  %2 = stablehlo.compare  LT, %arg0, %b,  FLOAT : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %3 = stablehlo.select %2, %1, %arg0 : tensor<4x6xi1>, tensor<4x6xf32>
  return %3 : tensor<4x6xf32>
}
";

/// `compare` of computed tensors becomes the comparison kernel (`pred`), which a
/// `select` reads: every direction verifies and picks what the spec says, against
/// another argument and against a value equal to the operand where it is the larger.
#[test]
fn compares_of_computed_tensors_feed_a_select() {
    for dir in ["EQ", "NE", "GE", "GT", "LE", "LT"] {
        for rhs in ["%arg1", "%m"] {
            let text = format!(
                "func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<4x6xf32>) -> tensor<4x6xf32> {{
  %m = stablehlo.maximum %arg0, %arg1 : tensor<4x6xf32>
  %0 = stablehlo.compare  {dir}, %arg0, {rhs},  FLOAT : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %1 = stablehlo.select %0, %arg0, %arg1 : tensor<4x6xi1>, tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}}
"
            );
            let name = format!("cmp_{dir}_{}.mlir", &rhs[1..]);
            let ran = run_inline(&name, &text);
            assert!(ran.imp.text.contains("Compare("), "{}", ran.imp.text);
            let (a, b) = (&ran.args[0], &ran.args[1]);
            let want: Vec<f64> = (0..a.len())
                .map(|i| {
                    let r = if rhs == "%m" { a[i].max(b[i]) } else { b[i] };
                    let holds = match dir {
                        "EQ" => a[i] == r,
                        "NE" => a[i] != r,
                        "GE" => a[i] >= r,
                        "GT" => a[i] > r,
                        "LE" => a[i] <= r,
                        _ => a[i] < r,
                    };
                    if holds { a[i] } else { b[i] }
                })
                .collect();
            close(&ran.out, &want, &name);
        }
    }
    // A broadcast operand and a constant.
    let text = CMP_RELU;
    let ran = run_inline("relu.mlir", text);
    let (a, b) = (&ran.args[0], &ran.args[1]);
    let want: Vec<f64> = (0..24)
        .map(|i| {
            let s = (a[i] as f32 + b[i % 6] as f32) as f64;
            if a[i] < b[i % 6] { s.max(0.0) } else { a[i] }
        })
        .collect();
    close(&ran.out, &want, "relu");
    // A TOTALORDER comparison of computed tensors is an error at its type; on
    // constants it is evaluated.
    let total = text.replacen("GT, %s, %z,  FLOAT", "GT, %s, %z,  TOTALORDER", 1);
    let e = import_text("t.mlir", &total, &BTreeMap::new()).unwrap_err();
    let col = total.lines().nth(4).unwrap().find("TOTALORDER").unwrap() + 1;
    assert!(
        e.contains("`TOTALORDER` comparison") && e.contains(&format!("t.mlir:5:{col}")),
        "{e}"
    );
}

/// Mutations of the inline convolution, pad, compare and slice modules: each imports
/// to a scenario that runs (timing mode, default layouts) or ends in an error — never
/// a panic.
#[test]
fn mutated_convolutions_pads_compares_and_slices_never_panic() {
    let conv = |dn: &'static str, x: Vec<u64>, w: Vec<u64>, y: Vec<u64>, groups| {
        let d = x.len() - 2;
        ConvCase {
            dn,
            x,
            w,
            y,
            stride: vec![1; d],
            pad: vec![(1, 0); d],
            dil: vec![1; d],
            groups,
        }
        .module()
    };
    let texts = [
        conv(
            "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
            vec![1, 6, 6, 4],
            vec![3, 3, 2, 6],
            vec![1, 5, 5, 6],
            2,
        ),
        conv(
            "[b, f, 0]x[o, i, 0]->[b, f, 0]",
            vec![2, 3, 9],
            vec![4, 3, 2],
            vec![2, 4, 9],
            1,
        ),
        conv(
            "[b, 1, 0, f]x[i, 0, o, 1]->[f, 0, 1, b]",
            vec![2, 7, 6, 3],
            vec![3, 3, 4, 2],
            vec![4, 5, 7, 2],
            1,
        ),
        PAD_EXP.to_string(),
        PAD_VALUE.to_string(),
        PAD_FOLDED.to_string(),
        PAD_CROP.to_string(),
        CMP_RELU.to_string(),
        SLICE_BLOCK.to_string(),
        SLICE_STRIDED.to_string(),
        SLICE_QKV.to_string(),
        SLICE_BROADCAST.to_string(),
        SLICE_DYNAMIC.to_string(),
    ];
    let mut rng = Rng(0x5eed_c0de_0000_0002);
    let (mut imported, mut ran, mut errors) = (0, 0, 0);
    for k in 0..300 {
        let name = format!("m{k}.mlir");
        let text = mutate(&texts[k % texts.len()], &mut rng);
        match import_text(&name, &text, &BTreeMap::new()) {
            Err(_) => errors += 1,
            Ok(imp) => {
                imported += 1;
                let Ok(sc) = scenario::parse(&imp.text, &name) else {
                    continue;
                };
                let src = Source {
                    path: name.clone(),
                    text: imp.text.clone(),
                };
                if let Ok(mut res) =
                    scenario::resolve(&sc, &src, Some("default"), &[], &Default::default())
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

/// `mnsim run` on GPT-2's attention block: its tensors are small, so the import asks for
/// a functional run, but its layouts repeat the work on every replica (about 10^11
/// element values): the run is timing, in seconds, and says why; the small softmax
/// export still verifies.
#[test]
fn run_falls_back_to_timing_where_values_would_take_hours() {
    let exe = env!("CARGO_BIN_EXE_mnsim");
    let run = |file: &str, extra: &[&str]| {
        let f = dir().join(file);
        let start = std::time::Instant::now();
        let o = std::process::Command::new(exe)
            .args(["run", f.to_str().unwrap(), "--plan", "default", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let reports: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        (reports, err, start.elapsed())
    };
    let (r, err, took) = run("gpt2_attn_block_s128_f32.mlir", &[]);
    assert_eq!(r[0]["mode"], "timing", "{err}");
    assert_eq!(r[0]["verified"], serde_json::Value::Null);
    assert!(err.contains("ran in timing mode"), "{err}");
    assert!(took.as_secs() < 60, "{took:?}");
    let (r, err, _) = run("softmax_1x12x128x128_f32.mlir", &[]);
    assert_eq!(r[0]["mode"], "functional", "{err}");
    assert_eq!(r[0]["verified"], true);
    assert!(!err.contains("ran in timing mode"), "{err}");
}

/// An imported graph whose functional run would not fit the host's memory runs in
/// timing mode with a note; asked for values (`--mode functional`), it is refused.
#[test]
fn run_falls_back_to_timing_where_values_would_not_fit_in_memory() {
    let exe = env!("CARGO_BIN_EXE_mnsim");
    let f = dir().join("softmax_1x12x128x128_f32.mlir");
    let run = |extra: &[&str]| {
        std::process::Command::new(exe)
            .args(["run", f.to_str().unwrap(), "--plan", "default", "--json"])
            .args(extra)
            .env(mnsim_sim::memory::LIMIT_VAR, "1M")
            .output()
            .unwrap()
    };
    let o = run(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r[0]["mode"], "timing", "{err}");
    assert!(err.contains("ran in timing mode"), "{err}");
    let o = run(&["--mode", "functional"]);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
}
