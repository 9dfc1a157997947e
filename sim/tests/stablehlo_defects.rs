//! StableHLO input the import once got wrong: literals out of their type's range and
//! integer division by zero folded to a saturated value; a dimension bound past what
//! `get_dimension_size`'s `i32` holds; a full reduction to a scalar and a select of
//! `-inf` that imported but failed when run; a value defined twice, `exp` of integers
//! and a `dense` literal nested deeper than its type, accepted; a broadcast whose
//! element count overflows (a panic); inlining one function many times (quadratic);
//! line numbers of a file with CR-only line endings; a tensor DRAM cannot hold named
//! without its place in the file. Each is an error at its line:column, or runs and
//! holds the values the StableHLO spec gives.

mod common;

use common::shlo::{close, col, import_text, run_inline};
use std::collections::BTreeMap;

fn none() -> BTreeMap<String, u64> {
    BTreeMap::new()
}

#[test]
fn an_integer_literal_out_of_range_is_an_error_at_its_line() {
    for (lit, ty) in [
        ("300", "i8"),
        ("-129", "i8"),
        ("4294967296", "i32"),
        ("-1", "ui8"),
        ("[1, 2, 3, 256]", "ui8"),
        ("1.5", "i32"),
    ] {
        let text = format!(
            "func.func public @main(%arg0: tensor<4x{ty}>) -> tensor<4x{ty}> {{
  %c = stablehlo.constant dense<{lit}> : tensor<4x{ty}>
  %0 = stablehlo.add %arg0, %c : tensor<4x{ty}>
  return %0 : tensor<4x{ty}>
}}
"
        );
        let e = import_text("lit.mlir", &text, &none()).unwrap_err();
        assert!(
            e.contains("lit.mlir:2:3") && e.contains(&format!("not a value of {}", dt(ty))),
            "{lit} as {ty}: {e}"
        );
    }
}

/// The dtype name the messages use for an MLIR element type.
fn dt(ty: &str) -> &'static str {
    match ty {
        "i8" => "s8",
        "i32" => "s32",
        "ui8" => "u8",
        _ => unreachable!(),
    }
}

#[test]
fn integer_division_by_zero_and_overflow_at_import_are_errors() {
    for (a, b, op) in [
        ("7", "0", "divide"),
        ("0", "0", "divide"),
        ("2147483647", "1", "add"),
        ("65536", "65536", "multiply"),
    ] {
        let text = format!(
            "func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {{
  %a = stablehlo.constant dense<{a}> : tensor<4xi32>
  %b = stablehlo.constant dense<{b}> : tensor<4xi32>
  %c = stablehlo.{op} %a, %b : tensor<4xi32>
  %0 = stablehlo.add %arg0, %c : tensor<4xi32>
  return %0 : tensor<4xi32>
}}
"
        );
        let e = import_text("d.mlir", &text, &none()).unwrap_err();
        assert!(
            e.contains("d.mlir:4:3") && e.contains("s32"),
            "{a} {op} {b}: {e}"
        );
    }
    // Integer division truncates toward zero, as StableHLO's does.
    let text = "func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {
  %a = stablehlo.constant dense<[7, -7, 9, -9]> : tensor<4xi32>
  %b = stablehlo.constant dense<[2, 2, -4, -4]> : tensor<4xi32>
  %c = stablehlo.divide %a, %b : tensor<4xi32>
  %0 = stablehlo.add %arg0, %c : tensor<4xi32>
  return %0 : tensor<4xi32>
}
";
    let ran = run_inline("div.mlir", text);
    let want: Vec<f64> = [3.0, -3.0, -2.0, 2.0]
        .iter()
        .zip(&ran.args[0])
        .map(|(c, a)| a + c)
        .collect();
    close(ran.out(), &want, "7/2, -7/2, 9/-4, -9/-4");
}

const DYN: &str = "func.func public @main(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %c = stablehlo.constant dense<4> : tensor<1xi32>
  %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %cst = stablehlo.constant dense<1.0> : tensor<f32>
  %3 = stablehlo.dynamic_broadcast_in_dim %cst, %2, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x4xf32>
  %4 = stablehlo.add %arg0, %3 : tensor<?x4xf32>
  return %4 : tensor<?x4xf32>
}
";

#[test]
fn a_binding_past_what_get_dimension_size_holds_is_named() {
    let big: BTreeMap<String, u64> = [("arg0_d0".to_string(), 1u64 << 31)].into();
    let e = import_text("dyn.mlir", DYN, &big).unwrap_err();
    assert!(
        e.contains("dyn.mlir:2:3")
            && e.contains("2147483648")
            && e.contains("s32")
            && !e.contains("operand shapes differ"),
        "{e}"
    );
    // The largest size an i32 holds is read as it is.
    let ok: BTreeMap<String, u64> = [("arg0_d0".to_string(), 2)].into();
    assert!(import_text("dyn.mlir", DYN, &ok).is_ok());
}

#[test]
fn a_full_reduction_to_a_scalar_runs_and_verifies() {
    for (dims, ty) in [("4x6", "tensor<4x6xf32>"), ("5", "tensor<5xf32>")] {
        let text = format!(
            "func.func public @main(%arg0: {ty}) -> tensor<f32> {{
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [{}] : ({ty}, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}}
",
            if dims.contains('x') { "0, 1" } else { "0" }
        );
        let ran = run_inline("sum.mlir", &text);
        let want: f64 = ran.args[0].iter().map(|&x| x as f32 as f64).sum();
        close(ran.out(), &[want], dims);
    }
}

#[test]
fn a_select_of_minus_infinity_runs_and_verifies() {
    let text = "func.func public @main(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %z = stablehlo.constant dense<0.000000e+00> : tensor<4x6xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<4x6xf32>
  %0 = stablehlo.compare GT, %arg0, %z, FLOAT : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %1 = stablehlo.select %0, %arg0, %ninf : tensor<4x6xi1>, tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}
";
    let ran = run_inline("where.mlir", text);
    let want: Vec<f64> = ran.args[0]
        .iter()
        .map(|&x| if x > 0.0 { x } else { f64::NEG_INFINITY })
        .collect();
    assert!(want.contains(&f64::NEG_INFINITY));
    close(ran.out(), &want, "where(x > 0, x, -inf)");
}

#[test]
fn a_value_defined_twice_is_an_error_at_the_second() {
    let text = "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
  %0 = stablehlo.multiply %arg0, %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
";
    let e = import_text("twice.mlir", text, &none()).unwrap_err();
    assert!(
        e.contains("`%0` is defined twice") && e.contains("twice.mlir:3:3"),
        "{e}"
    );
    // A parameter redefined too.
    let text = text.replace("%0 = stablehlo.add", "%arg0 = stablehlo.add");
    let e = import_text("twice.mlir", &text, &none()).unwrap_err();
    assert!(e.contains("`%arg0` is defined twice"), "{e}");
}

#[test]
fn float_functions_of_integers_are_errors() {
    for op in [
        "exponential",
        "log",
        "sqrt",
        "rsqrt",
        "tanh",
        "logistic",
        "round_nearest_even",
    ] {
        let text = format!(
            "func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {{
  %0 = stablehlo.{op} %arg0 : tensor<4xi32>
  return %0 : tensor<4xi32>
}}
"
        );
        let e = import_text("e.mlir", &text, &none()).unwrap_err();
        assert!(
            e.contains("e.mlir:2:") && e.contains("floating-point") && e.contains("s32"),
            "{op}: {e}"
        );
        // On an integer constant too.
        let text = text.replace(
            "%0 = stablehlo.",
            "%c = stablehlo.constant dense<2> : tensor<4xi32>\n  %0 = stablehlo.",
        );
        let text = text.replace(
            " %arg0 : tensor<4xi32>\n  return",
            " %c : tensor<4xi32>\n  return",
        );
        assert!(
            import_text("e.mlir", &text, &none()).is_err(),
            "{op} of a constant"
        );
    }
    // negate and abs are integer ops.
    let text = "func.func public @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {
  %0 = stablehlo.negate %arg0 : tensor<4xi32>
  %1 = stablehlo.abs %0 : tensor<4xi32>
  return %1 : tensor<4xi32>
}
";
    assert!(import_text("n.mlir", text, &none()).is_ok());
}

#[test]
fn a_dense_literal_must_nest_as_its_type() {
    for (lit, ty) in [
        ("[[[1.0, 2.0]]]", "2xf32"),
        ("[[1.0, 2.0]]", "2xf32"),
        ("[1.0, 2.0, 3.0, 4.0]", "2x2xf32"),
        ("[[1.0, 2.0, 3.0], [4.0]]", "2x2xf32"),
        ("[[1.0], [2.0, 3.0, 4.0]]", "2x2xf32"),
    ] {
        let text = format!(
            "func.func public @main(%arg0: tensor<{ty}>) -> tensor<{ty}> {{
  %c = stablehlo.constant dense<{lit}> : tensor<{ty}>
  %0 = stablehlo.add %arg0, %c : tensor<{ty}>
  return %0 : tensor<{ty}>
}}
"
        );
        let e = import_text("deep.mlir", &text, &none()).unwrap_err();
        assert!(
            e.contains("deep.mlir:2:3") && e.contains("nest"),
            "{lit} as {ty}: {e}"
        );
    }
    let text = "func.func public @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %c = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %0 = stablehlo.add %arg0, %c : tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
";
    let ran = run_inline("ok.mlir", text);
    let want: Vec<f64> = ran.args[0]
        .iter()
        .zip([1.0, 2.0, 3.0, 4.0])
        .map(|(a, c)| (*a as f32 + c as f32) as f64)
        .collect();
    close(ran.out(), &want, "nested literal");
}

#[test]
fn a_broadcast_whose_element_count_overflows_is_an_error() {
    for (out, dims) in [
        ("4294967296x4294967296x4", "[2]"),
        ("18446744073709551615x2x4", "[2]"),
    ] {
        let text = format!(
            "func.func public @main(%arg0: tensor<4xf32>) -> tensor<{out}xf32> {{
  %0 = stablehlo.broadcast_in_dim %arg0, dims = {dims} : (tensor<4xf32>) -> tensor<{out}xf32>
  %1 = stablehlo.exponential %0 : tensor<{out}xf32>
  return %1 : tensor<{out}xf32>
}}
"
        );
        let e = import_text("b.mlir", &text, &none()).unwrap_err();
        assert!(e.contains("b.mlir:1:") || e.contains("b.mlir:2:"), "{e}");
        assert!(e.contains("elements"), "{e}");
    }
}

/// One function called `k` times.
fn calls(k: usize) -> String {
    let mut s = String::from("func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n");
    let mut prev = "%arg0".to_string();
    for i in 0..k {
        s.push_str(&format!(
            "  %{i} = call @f({prev}) : (tensor<4xf32>) -> tensor<4xf32>\n"
        ));
        prev = format!("%{i}");
    }
    s.push_str(&format!("  return {prev} : tensor<4xf32>\n}}\n"));
    s.push_str(
        "func.func private @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<2.0> : tensor<4xf32>
  %0 = stablehlo.multiply %arg0, %c : tensor<4xf32>
  return %0 : tensor<4xf32>
}
",
    );
    s
}

#[test]
fn inlining_one_function_many_times_is_linear() {
    let time = |k: usize| {
        let text = calls(k);
        let t = std::time::Instant::now();
        let imp = import_text("calls.mlir", &text, &none()).unwrap();
        assert_eq!(imp.kernels, k);
        t.elapsed().as_secs_f64()
    };
    // Warm up, then 2,000 and 16,000 calls: eight times the calls in well under the
    // 64 times a quadratic import takes (16,000 took 80 s).
    time(500);
    let (small, large) = (time(2_000), time(16_000));
    eprintln!("2,000 calls: {small:.3} s, 16,000 calls: {large:.3} s");
    assert!(large < 20.0, "16,000 calls took {large:.1} s");
    assert!(
        large < 24.0 * small.max(0.01),
        "2,000 calls {small:.3} s, 16,000 {large:.3} s"
    );
}

#[test]
fn cr_only_line_endings_count_lines_as_other_endings_do() {
    let lines = [
        "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {",
        "  %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>",
        "  %1 = stablehlo.cosine %0 : tensor<4xf32>",
        "  return %1 : tensor<4xf32>",
        "}",
        "",
    ];
    for end in ["\n", "\r\n", "\r"] {
        let text = lines.join(end);
        let e = import_text("cr.mlir", &text, &none()).unwrap_err();
        let at = format!(
            "cr.mlir:3:{}",
            col(&lines.join("\n"), 3, "stablehlo.cosine")
        );
        assert!(e.contains(&at), "{end:?}: {e}");
        // The snippet shows line 3 as its own line.
        assert!(
            e.contains(" 3 │") || e.contains("3 %1 = stablehlo.cosine"),
            "{end:?}: {e}"
        );
        assert!(
            !e.contains("tensor<4xf32> %1 = stablehlo.cosine"),
            "{end:?}: {e}"
        );
        let ok = text.replace("stablehlo.cosine", "stablehlo.negate");
        let imp = import_text("cr.mlir", &ok, &none()).unwrap();
        assert!(imp.text.contains("add (line 2)"), "{end:?}: {}", imp.text);
        assert!(
            imp.text.contains("negate (line 3)"),
            "{end:?}: {}",
            imp.text
        );
    }
}

#[test]
fn a_tensor_dram_cannot_hold_is_named_at_its_place() {
    let text = "func.func public @main(%arg0: tensor<100000x100000x10xf32>) -> tensor<100000x100000x10xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<100000x100000x10xf32>
  return %0 : tensor<100000x100000x10xf32>
}
";
    let e = import_text("big.mlir", text, &none()).unwrap_err();
    assert!(
        e.contains(&format!("big.mlir:1:{}", col(text, 1, "tensor<"))) && e.contains("DRAM"),
        "{e}"
    );
    // A computed tensor too large: at the op that makes it.
    let text = "func.func public @main(%arg0: tensor<100000x1xf32>, %arg1: tensor<1x100000xf32>) -> tensor<100000x100000xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<100000x1xf32>, tensor<1x100000xf32>) -> tensor<100000x100000xf32>
  %1 = stablehlo.exponential %0 : tensor<100000x100000xf32>
  return %1 : tensor<100000x100000xf32>
}
";
    let e = import_text("big2.mlir", text, &none()).unwrap_err();
    assert!(e.contains("big2.mlir:2:3") && e.contains("DRAM"), "{e}");
}

#[test]
fn a_single_result_while_is_read() {
    let text = "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.while(%iterArg = %c) : tensor<i32>
    cond {
    %c_1 = stablehlo.constant dense<5> : tensor<i32>
    %1 = stablehlo.compare LT, %iterArg, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %1 = stablehlo.add %iterArg, %c_1 : tensor<i32>
    stablehlo.return %1 : tensor<i32>
  }
  %2 = stablehlo.convert %0 : (tensor<i32>) -> tensor<f32>
  %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %4 = stablehlo.add %arg0, %3 : tensor<4xf32>
  return %4 : tensor<4xf32>
}
";
    // 0, 2, 4 → 6: the counter is known at import.
    let ran = run_inline("w.mlir", text);
    let want: Vec<f64> = ran.args[0].iter().map(|a| a + 6.0).collect();
    close(ran.out(), &want, "x + 6");
}
