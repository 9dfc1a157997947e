//! Identical layers move as one (docs/planner.md, identical layers): a deeper stack of
//! the same layer plans as near its bound as a shallower one, and the layers that follow
//! another take its layouts.

mod common;

use common::graphs::plan_and_run;

/// A StableHLO module of `n` layers `x = tanh(x · Wᵢ)`, `x` 128×256 f32, each `Wᵢ`
/// 256×256 an argument.
fn stack(n: usize) -> String {
    let d = 256;
    let mut args = vec![format!("%x: tensor<128x{d}xf32>")];
    args.extend((0..n).map(|i| format!("%w{i}: tensor<{d}x{d}xf32>")));
    let mut out = vec![
        "module @jit_layers {".to_string(),
        format!(
            "  func.func public @main({}) -> (tensor<128x{d}xf32>) {{",
            args.join(", ")
        ),
    ];
    let mut prev = "%x".to_string();
    for i in 0..n {
        out.push(format!(
            "    %h{i} = stablehlo.dot_general {prev}, %w{i}, contracting_dims = [1] x [0] : \
             (tensor<128x{d}xf32>, tensor<{d}x{d}xf32>) -> tensor<128x{d}xf32>"
        ));
        out.push(format!(
            "    %t{i} = stablehlo.tanh %h{i} : tensor<128x{d}xf32>"
        ));
        prev = format!("%t{i}");
    }
    out.push(format!("    return {prev} : tensor<128x{d}xf32>"));
    out.push("  }".into());
    out.push("}".into());
    out.join("\n")
}

/// Planned cycles ÷ the bound of a stack of `n` layers, as `mnsim run` plans it.
fn times_bound(n: usize) -> f64 {
    let dir = common::tmp::tempdir("layers");
    let path = dir.path().join(format!("stack{n}.mlir"));
    std::fs::write(&path, stack(n)).unwrap();
    let r = plan_and_run(&path);
    // Every layer is in the report's layers (the importer found the repeated block).
    let layers = r.places.iter().filter(|p| p.layer.is_some()).count();
    assert!(layers > 1, "{n} layers: {layers} in the report");
    r.total_cycles as f64 / r.bound_cycles as f64
}

#[test]
fn twice_the_layers_plan_as_near_their_bound() {
    let (a, b) = (times_bound(100), times_bound(200));
    eprintln!("100 layers: {a:.2}× the bound; 200 layers: {b:.2}×");
    // Before layers moved as one, 200 layers planned at 18.1× the bound (100: 2.37×).
    assert!(b <= a * 1.5, "100 layers {a:.2}×, 200 layers {b:.2}×");
}
