//! Identical layers move as one (docs/planner.md, identical layers): a deeper stack of
//! the same layer plans as near its bound as a shallower one, and the layers that follow
//! another take its layouts.

mod common;

use common::graphs::plan_and_run;

/// A StableHLO module of `n` layers `x = tanh(x · Wᵢ)`, `x` 128×256 f32, each `Wᵢ`
/// 256×256 an argument.
fn stack(n: usize) -> String {
    stack_of(n, 256)
}

/// [`stack`] of width `d`: `x` 128×`d`, each `Wᵢ` `d`×`d`.
fn stack_of(n: usize, d: usize) -> String {
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

/// The model of plan `auto` of the StableHLO module `text` (every layout left to the
/// planner), read as `name`.
fn model_of(text: &str, name: &str) -> mnsim_sim::plan::model::Model {
    let dir = common::tmp::tempdir("skip");
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let (sc, src) = mnsim_sim::load::load(&path).unwrap();
    let res =
        mnsim_sim::scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default()).unwrap();
    mnsim_sim::plan::model::Model::new(&res, Default::default()).unwrap()
}

/// Evaluates `m`'s joint seeds (plans that run), each with every layer following the
/// first like it, skipping layers and walking every op: the skipped score is the whole
/// walk's within a thousandth (cycles and joules). A plan whose skipped layers differ
/// from the walked ones is walked whole, to the same evaluation. Returns how many ran.
fn check_skipped_scores(m: &mut mnsim_sim::plan::model::Model) -> usize {
    let mut checked = 0;
    for (k, mut pick) in m.joint_seeds(4, &mut |_| false).into_iter().enumerate() {
        m.follow_layers(&mut pick);
        m.set_skipping(false);
        let whole = m.evaluate(&pick);
        m.set_skipping(true);
        assert!(
            m.skips(&pick),
            "{k}: a plan that lays out every layer alike"
        );
        let skipped = m.evaluate(&pick);
        assert_eq!(whole.failure.is_some(), skipped.failure.is_some(), "{k}");
        if whole.failure.is_some() {
            continue;
        }
        let near = |a: f64, b: f64| (a - b).abs() <= b * 1e-3;
        assert!(
            near(skipped.total_cycles as f64, whole.total_cycles as f64),
            "{k}: skipped {} whole {}",
            skipped.total_cycles,
            whole.total_cycles
        );
        assert!(near(skipped.energy_j, whole.energy_j), "{k}");
        checked += 1;
        // A skipped layer laid out unlike the walked ones: every op walked.
        let v = (0..m.vars.len())
            .find(|&v| m.leader(v) != v && m.vars[v].candidates.len() > 1)
            .unwrap();
        let mut other = pick.clone();
        other[v] = *m.vars[v]
            .candidates
            .iter()
            .find(|&&c| c != pick[v])
            .unwrap();
        m.set_skipping(false);
        let whole = m.evaluate(&other);
        m.set_skipping(true);
        assert!(!m.skips(&other), "{k}");
        assert_eq!(
            m.evaluate(&other),
            whole,
            "{k}: a plan unlike the walked layers"
        );
    }
    checked
}

/// Identical layers walked twice (docs/planner.md): a stack of 12 like layers (48
/// steps, 4 a layer, as the importer groups them) is evaluated walking the first two of
/// its like run, the rest charged as copies of the second, to the whole walk's score.
#[test]
fn like_layers_are_walked_twice_and_scored_as_all_of_them() {
    let mut m = model_of(&stack(48), "stack48.mlir");
    let (from, to, times) = m.skipped().expect("a run of like layers");
    assert!(times >= 8, "{times} layers skipped of 12 ({from}..{to})");
    assert!(check_skipped_scores(&mut m) > 0, "no plan ran");
}

/// Stack [`stack_of`] of `n` steps and width `d` returning each layer's last step.
fn every_layer_returned(n: usize, d: usize) -> String {
    let ty = format!("tensor<128x{d}xf32>");
    // Each layer's last step (the importer groups 4 steps a layer).
    let outs = (0..n).skip(3).step_by(4);
    let types = vec![ty.as_str(); outs.len()].join(", ");
    let outs = outs
        .map(|i| format!("%t{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    (stack_of(n, d))
        .replace(
            &format!("    return %t{} : {ty}", n - 1),
            &format!("    return {outs} : {types}"),
        )
        .replace(&format!(") -> ({ty}) {{"), &format!(") -> ({types}) {{"))
}

/// Where the ops after the layers read what every layer wrote (as a decode step
/// concatenates every layer's cache at its end), LM holds each skipped layer's output
/// beside the walked layers' until then: scored as the whole walk.
#[test]
fn layers_whose_outputs_are_all_read_after_them_are_scored_as_all_of_them() {
    let mut m = model_of(&every_layer_returned(48, 64), "every_output.mlir");
    assert!(m.skipped().is_some());
    assert!(check_skipped_scores(&mut m) > 0, "no plan ran");
}
