//! Random programs for properties over runs: random presets cut down to a few PEs with
//! random what-if knobs, shapes, layouts from the planner's candidates and `Time`-stepped
//! streams, and every kind of op.

#![allow(dead_code)]

use mnsim_sim::run::SplitMix;

/// A machine: a preset cut down to a few PEs, with random what-if knobs.
fn machine(rng: &mut SplitMix) -> (&'static str, Vec<(String, f64)>) {
    let mut knobs: Vec<(String, f64)> = Vec::new();
    let preset = ["toy4", "mncore2", "mncore1"][(rng.next_u64() % 3) as usize];
    match preset {
        "mncore2" => {
            knobs.push(("levels.L1B.count".into(), 2.0));
            knobs.push(("levels.MAB.count".into(), 2.0));
        }
        "mncore1" => {
            knobs.push(("levels.L2B.count".into(), 2.0));
            knobs.push(("levels.L1B.count".into(), 2.0));
            knobs.push(("levels.MAB.count".into(), 2.0));
        }
        _ => {}
    }
    let link = match preset {
        "toy4" => "Board",
        _ => "L1B",
    };
    let choices = [
        (format!("links.{link}.broadcast.parent"), [2.0, 64.0]),
        (format!("links.{link}.distribute.child"), [1.0, 32.0]),
        (format!("links.{link}.gather.latency"), [0.0, 40.0]),
        ("dram.bytes_per_cycle".to_string(), [4.0, 1024.0]),
    ];
    for (k, vs) in choices {
        if rng.next_u64().is_multiple_of(3) {
            knobs.push((k, vs[(rng.next_u64() % 2) as usize]));
        }
    }
    (preset, knobs)
}

/// A random program as a scenario: loads in candidate layouts (some replicated and
/// `Time`-stepped, so that kernels stream), element-wise kernels, a matmul of
/// replicated operands, reductions, softmax, relayouts, broadcasts, stores and frees.
pub fn program(seed: u64) -> String {
    let mut rng = SplitMix(seed);
    let (preset, knobs) = machine(&mut rng);
    let m = {
        let mut m = mnsim_arch::preset(preset).unwrap();
        for (k, v) in &knobs {
            mnsim_arch::set_knob(&mut m, k, *v).unwrap();
        }
        m
    };
    let dtype = ["F32", "F16"][(rng.next_u64() % 2) as usize];
    let dt = match dtype {
        "F32" => mnsim_arch::DType::F32,
        _ => mnsim_arch::DType::F16,
    };
    let sizes = [8u64, 16, 32];
    let (r, c) = (
        sizes[(rng.next_u64() % 3) as usize],
        sizes[(rng.next_u64() % 3) as usize],
    );
    let cands = mnsim_sim::plan::candidates(&m, &[r, c], dt, false);
    let mut below = |n: usize| (rng.next_u64() % n.max(1) as u64) as usize;
    let layout = |below: &mut dyn FnMut(usize) -> usize| -> String {
        match below(4) {
            0 => format!("(({r}), ({c}))"),
            1 => format!("((2_Time, {}), ({c}))", r / 2),
            _ => cands[below(cands.len())].clone(),
        }
    };
    let dl = dtype.to_lowercase();
    let mut tensors = String::new();
    for i in 0..5 {
        tensors.push_str(&format!(
            "\"t{i}\": (dtype: {dtype}, shape: \"{dl}[{r},{c}]\", init: Random(seed: {i})),\n"
        ));
    }
    tensors.push_str(&format!(
        "\"w\": (dtype: {dtype}, shape: \"{dl}[{c},{c}]\", init: Random(seed: 9)),\n"
    ));
    tensors.push_str(&format!(
        "\"s\": (dtype: {dtype}, shape: \"{dl}[{r},1]\"),\n"
    ));
    let mut ops: Vec<String> = Vec::new();
    let mut lm = [false; 5];
    for _ in 0..(2 + below(8)) {
        let resident: Vec<usize> = (0..5).filter(|&i| lm[i]).collect();
        let pick = if resident.is_empty() { 0 } else { below(9) };
        let any = |below: &mut dyn FnMut(usize) -> usize| resident[below(resident.len())];
        let buffers = ["", ", buffers: 1", ", buffers: 2"][below(3)];
        match pick {
            0 => {
                let t = below(5);
                lm[t] = true;
                let l = layout(&mut below);
                ops.push(format!("Load(tensor: \"t{t}\", layout: \"{l}\"{buffers})"));
            }
            1 => {
                let (a, o) = (any(&mut below), below(5));
                lm[o] = true;
                ops.push(format!("Unary(op: Exp, input: \"t{a}\", out: \"t{o}\")"));
            }
            2 => {
                let (a, o) = (any(&mut below), below(5));
                lm[o] = true;
                ops.push(format!(
                    "Binary(op: Add, a: \"t{a}\", b: \"t{a}\", out: \"t{o}\")"
                ));
            }
            3 => {
                let a = any(&mut below);
                let l = layout(&mut below);
                ops.push(format!(
                    "Relayout(tensor: \"t{a}\", layout: \"{l}\"{buffers})"
                ));
            }
            4 => {
                // A matmul of a replicated (maybe streamed) operand and weight.
                let (a, o) = (any(&mut below), below(5));
                let wl = if below(2) == 0 {
                    format!("(({c}), ({c}))")
                } else {
                    format!("((2_Time, {}), ({c}))", c / 2)
                };
                ops.push(format!(
                    "Relayout(tensor: \"t{a}\", layout: \"(({r}), ({c}))\")"
                ));
                ops.push(format!("Load(tensor: \"w\", layout: \"{wl}\"{buffers})"));
                let l = layout(&mut below);
                ops.push(format!(
                    "MatMul(a: \"t{a}\", b: \"w\", out: \"t{o}\", layout: \"{l}\")"
                ));
                lm[o] = true;
            }
            5 => {
                let a = any(&mut below);
                ops.push(format!(
                    "ReduceAxes(op: Add, input: \"t{a}\", axes: [1], out: \"s\", keep_dims: true, layout: \"(({r}), (1))\")"
                ));
            }
            6 => {
                let (a, o) = (any(&mut below), below(5));
                lm[o] = true;
                ops.push(format!("Softmax(input: \"t{a}\", axis: 1, out: \"t{o}\")"));
            }
            7 => ops.push(format!("Store(tensor: \"t{}\")", any(&mut below))),
            _ => {
                let a = any(&mut below);
                lm[a] = false;
                ops.push(format!("Free(tensor: \"t{a}\")"));
            }
        }
    }
    let overrides: Vec<String> = knobs
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v:?}"))
        .collect();
    format!(
        "Scenario(name: \"random {seed}\", machine: Preset(\"{preset}\"), mode: Timing,\n\
         overrides: {{{}}},\n tensors: {{\n{tensors}}},\n program: [\n{}\n])",
        overrides.join(", "),
        ops.join(",\n")
    )
}
