//! The planner on real scenarios: runnable plans where the old search found none, never
//! slower than a hand plan, equal to exhaustive search on small cases, write-back that
//! keeps the file as written, and the command line's JSON.

mod common;

use common::model::hand_pick;
use mnsim_sim::plan::{self, PlanOptions, candidates::Space};
use mnsim_sim::scenario::{self, Mode, PlanValue, Scenario, Source};
use mnsim_sim::timeline::Schedule;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn load(file: &str) -> (Scenario, Source) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    let (mut sc, src) = scenario::load(&path).unwrap();
    // The attention block's figures (3,888 cycles for `rows`) are op after op; tests
    // that check the overlapped schedule set it themselves.
    sc.schedule = scenario::Schedule::Sequential;
    (sc, src)
}

/// A scenario written inline, and its source as error messages point into it.
fn parsed(text: &str, path: &str) -> (Scenario, Source) {
    let sc = scenario::parse(text, path).unwrap();
    let src = Source {
        path: path.into(),
        text: text.into(),
    };
    (sc, src)
}

fn opts(seconds: u64) -> PlanOptions {
    let mut o = PlanOptions::default();
    o.search.time_limit = Some(Duration::from_secs(seconds));
    o
}

/// Plans plan `auto` of `s` within `seconds`.
fn plan_auto(s: &Scenario, src: &Source, seconds: u64) -> plan::Outcome {
    plan::plan_with(
        s,
        src,
        "auto",
        &[],
        &BTreeMap::new(),
        &opts(seconds),
        &mut |_, _| {},
    )
    .unwrap()
}

/// The planner's best is no slower than the fastest of the `hand` plans.
fn assert_no_slower(o: &plan::Outcome, hand: &[(String, u64)]) {
    let min = hand.iter().map(|(_, c)| *c).min().unwrap();
    assert!(
        o.best[0].total_cycles <= min,
        "{} vs {hand:?}",
        o.best[0].total_cycles
    );
}

/// Cycles of plan `plan` of `sc` with `layouts` substituted, by an independent timing
/// run through the scenario file's own path (resolve, run).
fn cycles_with(sc: &Scenario, src: &Source, plan: &str, layouts: &[(String, String)]) -> u64 {
    let mut s = sc.clone();
    for (v, l) in layouts {
        s.plans
            .get_mut(plan)
            .unwrap()
            .insert(v.clone(), PlanValue::Layout(l.clone()));
    }
    let mut res = scenario::resolve(&s, src, Some(plan), &[], &BTreeMap::new()).unwrap();
    res.mode = Mode::Timing;
    mnsim_sim::run::run(&res).unwrap().report.total_cycles
}

/// Timing cycles of every plan without `Any`.
fn hand_cycles(sc: &Scenario, src: &Source) -> Vec<(String, u64)> {
    sc.plans
        .iter()
        .filter(|(_, v)| v.values().all(|x| *x != PlanValue::Any))
        .map(|(p, _)| (p.clone(), cycles_with(sc, src, p, &[])))
        .collect()
}

/// `sc` with a plan `auto` that leaves `vars` to the planner (the others as in `like`).
fn with_auto(sc: &Scenario, like: &str, vars: &[&str]) -> Scenario {
    let mut s = sc.clone();
    let mut p = s.plans[like].clone();
    for v in vars {
        p.insert(v.to_string(), PlanValue::Any);
    }
    s.plans.insert("auto".into(), p);
    s
}

#[test]
fn attention_with_q_and_kt_left_to_the_planner_runs_no_slower_than_the_hand_plan() {
    let (mut sc, src) = load("attention_block.ron");
    // The 3,888 cycles of `rows` are op after op (the sequential schedule); the
    // overlapped schedule is checked below.
    sc.schedule = Schedule::Sequential;
    let hand = hand_cycles(&sc, &src);
    let rows = hand.iter().find(|(p, _)| p == "rows").unwrap().1;
    assert_eq!(rows, 3888);
    let s = with_auto(&sc, "rows", &["q", "kt"]);
    let o = plan_auto(&s, &src, 10);
    let best = &o.best[0];
    assert!(best.total_cycles <= 3888, "{}", best.total_cycles);
    assert!(best.inserted.is_empty());
    // The layouts, pasted back into the file's plan, run at the cycles reported.
    assert_eq!(
        cycles_with(&s, &src, "auto", &best.layouts),
        best.total_cycles
    );
    // Both hand plans were seeds and are reported with their cycles.
    assert_eq!(o.hand_plans.len(), 2);
    assert!(
        o.hand_plans
            .iter()
            .all(|h| h.seed && h.total_cycles.is_some())
    );
    // Overlapped (the default schedule): no slower than the hand plans either.
    sc.schedule = Schedule::Overlapped;
    let hand = hand_cycles(&sc, &src);
    let s = with_auto(&sc, "rows", &["q", "kt"]);
    let o = plan_auto(&s, &src, 5);
    assert_no_slower(&o, &hand);
}

#[test]
fn attention_without_hand_plans_still_finds_a_runnable_plan() {
    // No seeds: the search alone must find layouts of q and kᵀ that run, as fast as
    // the slower hand plan at least.
    let (sc, src) = load("attention_block.ron");
    let mut s = with_auto(&sc, "rows", &["q", "kt"]);
    s.schedule = Schedule::Sequential;
    s.plans.retain(|p, _| p == "auto");
    let o = plan_auto(&s, &src, 20);
    assert!(o.hand_plans.is_empty());
    let best = &o.best[0];
    assert!(best.total_cycles <= 3888, "{}", best.total_cycles);
    assert_eq!(
        cycles_with(&s, &src, "auto", &best.layouts),
        best.total_cycles
    );
}

#[test]
fn mlp_with_all_six_layouts_left_to_the_planner_finds_a_runnable_plan() {
    let (sc, src) = load("mlp_block.ron");
    let vars = ["x", "w1", "h", "ga", "w2", "y"];
    // With the hand plans as seeds: no slower than either.
    let s = with_auto(&sc, "gather", &vars);
    let hand = hand_cycles(&sc, &src);
    let o = plan_auto(&s, &src, 5);
    assert_no_slower(&o, &hand);
}

#[test]
#[ignore = "a search of about 30 s that a loaded machine may not finish: run with --ignored"]
fn mlp_with_all_six_layouts_left_to_the_planner_and_no_hand_plan_finds_a_runnable_plan() {
    let (sc, src) = load("mlp_block.ron");
    let vars = ["x", "w1", "h", "ga", "w2", "y"];
    // Without seeds, in the core of the space (whole fan-outs, levels root-most first),
    // to keep the test short.
    let mut s = with_auto(&sc, "gather", &vars);
    s.plans.retain(|p, _| p == "auto");
    let mut o = opts(30);
    o.space = Space {
        level_orders: false,
        partial_fanout: false,
        ..Space::default()
    };
    let o = plan::plan_with(&s, &src, "auto", &[], &BTreeMap::new(), &o, &mut |_, _| {}).unwrap();
    let best = &o.best[0];
    assert_eq!(best.layouts.len(), 6);
    assert_eq!(
        cycles_with(&s, &src, "auto", &best.layouts),
        best.total_cycles
    );
}

#[test]
fn never_slower_than_any_hand_plan_of_a_shipped_scenario() {
    // Under both schedules: the planner scores plans on the timeline of the schedule
    // asked for, and its choice is never slower than the best hand plan under it.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut planned = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    names.sort();
    for path in names {
        for schedule in [Schedule::Overlapped, Schedule::Sequential] {
            let (mut sc, src) = scenario::load(&path).unwrap();
            sc.schedule = schedule;
            let hand = hand_cycles(&sc, &src);
            let Some(min) = hand.iter().map(|(_, c)| *c).min() else {
                continue;
            };
            // Every variable of every plan left to the planner.
            let mut auto: BTreeMap<String, PlanValue> = BTreeMap::new();
            for p in sc.plans.values() {
                for v in p.keys() {
                    auto.insert(v.clone(), PlanValue::Any);
                }
            }
            let mut s = sc.clone();
            s.plans.insert("auto".into(), auto);
            let o = plan::plan_with(
                &s,
                &src,
                "auto",
                &[],
                &BTreeMap::new(),
                &opts(2),
                &mut |_, _| {},
            )
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            let best = o.best[0].total_cycles;
            assert!(
                best <= min,
                "{} ({}): planned {best}, hand {hand:?}",
                path.display(),
                schedule.name()
            );
            assert_eq!(cycles_with(&s, &src, "auto", &o.best[0].layouts), best);
            planned += 1;
        }
    }
    assert!(planned >= 12, "{planned}");
}

const SMALL: &str = r#"Scenario(
    name: "small",
    machine: Preset("toy4"),
    mode: Timing,
    tensors: {
        "a": (dtype: F32, shape: "f32[8,4]", init: Random(seed: 1)),
        "b": (dtype: F32, shape: "f32[8,4]", init: Random(seed: 2)),
        "c": (dtype: F32, shape: "f32[8,4]"),
    },
    program: [
        Load(tensor: "a", layout: "$a"),
        Load(tensor: "b", layout: "$b"),
        Binary(op: Add, a: "a", b: "b", out: "c", layout: "((4_PE, 2), (4))"),
        Store(tensor: "c"),
    ],
    plans: {
        "auto": {"a": Any, "b": Any},
    },
)"#;

#[test]
fn equal_to_exhaustive_search_on_a_small_case() {
    let (sc, src) = parsed(SMALL, "small.ron");
    // Force the local search, then compare with every pair run for real.
    let mut o = opts(30);
    o.search.exhaustive_limit = 0;
    let local =
        plan::plan_with(&sc, &src, "auto", &[], &BTreeMap::new(), &o, &mut |_, _| {}).unwrap();
    let exact = plan_auto(&sc, &src, 30);
    assert_eq!(exact.method, "exhaustive");
    assert!(exact.complete);
    let m = mnsim_arch::preset("toy4").unwrap();
    let mut cands = plan::candidates(&m, &[8, 4], mnsim_arch::DType::F32, false);
    assert!(cands.len() > 5);
    // The planner also tries its starts as streams (`Time` steps from every axis, or all
    // but one): every candidate's stream variants are in the brute force's space too.
    let shape = (&[8u64, 4][..], mnsim_arch::DType::F32, false);
    let mut streams: Vec<String> = Vec::new();
    for c in &cands {
        let l = mnsim_arch::TensorLayout::parse(c, &m, Some(shape.0), shape.1).unwrap();
        for skip in [&[][..], &[0], &[1]] {
            for n in plan::candidates::STREAM_STEPS {
                if let Some(s) =
                    plan::candidates::streamed(&m, &l, shape, skip, n).map(|s| s.text())
                    && !cands.contains(&s)
                    && !streams.contains(&s)
                {
                    streams.push(s);
                }
            }
        }
    }
    assert!(!streams.is_empty());
    cands.extend(streams);
    let mut brute = u64::MAX;
    for a in &cands {
        for b in &cands {
            let mut s = sc.clone();
            let p = s.plans.get_mut("auto").unwrap();
            p.insert("a".into(), PlanValue::Layout(a.clone()));
            p.insert("b".into(), PlanValue::Layout(b.clone()));
            let mut res = scenario::resolve(&s, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
            res.mode = Mode::Timing;
            if let Ok(r) = mnsim_sim::run::run(&res) {
                brute = brute.min(r.report.total_cycles);
            }
        }
    }
    assert_eq!(exact.best[0].total_cycles, brute);
    assert_eq!(local.best[0].total_cycles, brute);
    // Pruning (the output's layout is fixed) leaves part of the space; the brute force
    // above ran all of it.
    assert!(exact.space <= (cands.len() * cands.len()) as u128);
}

#[test]
fn a_relayout_is_inserted_where_a_kernel_needs_one() {
    // y's layout is fixed and splits the softmax axis: the program cannot run as
    // written; the planner inserts a Relayout of y before the Softmax and counts it.
    let text = r#"Scenario(
    name: "needs a relayout",
    machine: Preset("toy4"),
    mode: Timing,
    tensors: {
        "x": (dtype: F32, shape: "f32[8,4]", init: Random(seed: 1)),
        "y": (dtype: F32, shape: "f32[8,4]"),
        "p": (dtype: F32, shape: "f32[8,4]"),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Unary(op: Relu, input: "x", out: "y", layout: "((8), (4_PE))"),
        Softmax(input: "y", axis: 1, out: "p", layout: "((4_PE, 2), (4))"),
        Store(tensor: "p"),
    ],
    plans: {"auto": {"x": Any}},
)"#;
    let (sc, src) = parsed(text, "r.ron");
    let o = plan_auto(&sc, &src, 30);
    let best = &o.best[0];
    assert_eq!(best.inserted.len(), 1, "{:?}", best.inserted);
    let ins = &best.inserted[0];
    assert_eq!((ins.before, ins.tensor_name.as_str()), (2, "y"));
    assert!(ins.cycles > 0);
    // The inserted op is costed: the per-op cycles (Softmax with its Relayout) add up
    // to the confirmed total.
    assert_eq!(best.op_cycles.iter().sum::<u64>(), best.total_cycles);
    // Finding it scanned y's candidates for legal targets: work the budget counts.
    let res = scenario::resolve(&sc, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
    let mut model = mnsim_sim::plan::model::Model::new(&res, Space::default()).unwrap();
    let pick: Vec<_> = model.vars.iter().map(|v| v.candidates[0]).collect();
    assert_eq!(model.evaluate(&pick).failure, None);
    let w = model.work_done();
    assert!(w.legal_checks > 0 && w.runs >= 2, "{w:?}");
}

/// An op that reads one tensor twice is legal only where both reads and its output
/// agree: the scan for a Relayout target of that tensor checks each candidate whole (a
/// scan varies one operand), against the op's own inputs.
#[test]
fn a_relayout_is_inserted_for_a_tensor_an_op_reads_twice() {
    let text = r#"Scenario(
    name: "squares a tensor laid out for another op",
    machine: Preset("toy4"),
    mode: Timing,
    tensors: {
        "x": (dtype: F32, shape: "f32[8,4]", init: Random(seed: 1)),
        "y": (dtype: F32, shape: "f32[8,4]"),
        "p": (dtype: F32, shape: "f32[8,4]"),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Unary(op: Relu, input: "x", out: "y", layout: "((8), (4_PE))"),
        Binary(op: Mul, a: "y", b: "y", out: "p", layout: "((4_PE, 2), (4))"),
        Store(tensor: "p"),
    ],
    plans: {"auto": {"x": Any}},
)"#;
    let (sc, src) = parsed(text, "sq.ron");
    let o = plan_auto(&sc, &src, 30);
    let best = &o.best[0];
    assert_eq!(best.inserted.len(), 1, "{:?}", best.inserted);
    let ins = &best.inserted[0];
    assert_eq!((ins.before, ins.tensor_name.as_str()), (2, "y"));
    assert_eq!(best.op_cycles.iter().sum::<u64>(), best.total_cycles);
}

#[test]
fn write_back_inserts_the_plan_and_keeps_the_file_as_written() {
    let (_, src) = load("attention_block.ron");
    let vars = vec![
        ("kt".to_string(), "((4_PE, 16:64), (64:1, 4_W))".to_string()),
        (
            "q".to_string(),
            "((8_L2B, 16_MAB, 2:16), (16:1, 4_W))".to_string(),
        ),
    ];
    let out = plan::write::add_plan(&src.text, "planned", &vars).unwrap();
    let sc = scenario::parse(&out, "x.ron").unwrap();
    assert_eq!(
        sc.plans["planned"]["q"],
        PlanValue::Layout(vars[1].1.clone())
    );
    // Only an insertion: every comment and line of the original is still there, in order.
    let added = out.len() - src.text.len();
    let at = src
        .text
        .bytes()
        .zip(out.bytes())
        .position(|(a, b)| a != b)
        .unwrap();
    assert_eq!(&out[..at], &src.text[..at]);
    assert_eq!(&out[at + added..], &src.text[at..]);
    // A second plan of the same name is refused.
    assert!(plan::write::add_plan(&out, "planned", &vars).is_err());
}

#[test]
fn cli_plan_json_and_write() {
    let dir = common::tmp::tempdir("plan");
    let file = dir.path().join("plan_layernorm.ron");
    let (_, src) = load("plan_layernorm.ron");
    std::fs::write(&file, &src.text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args([
            "plan",
            file.to_str().unwrap(),
            "--json",
            "--time-limit",
            "3",
            "--write",
            "planned",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let best = v["best"]["total_cycles"].as_u64().unwrap();
    let hand = v["hand_plans"][0]["total_cycles"].as_u64().unwrap();
    assert_eq!(v["hand_plans"][0]["plan"], "hand");
    assert!(best <= hand);
    assert!(v["evaluated"].as_u64().unwrap() > 0);
    assert!(v["seconds"].as_f64().unwrap() > 0.0);
    // The work by kind: every evaluation counted, and the total its budget's units.
    let w = &v["work"];
    let n = |k: &str| w[k].as_u64().unwrap_or_else(|| panic!("work.{k}: {w}"));
    assert_eq!(n("evaluations"), v["evaluated"].as_u64().unwrap());
    let units = n("evaluations")
        + n("engine_runs") * plan::search::MEASURE_WORK
        + n("booked") / plan::search::BOOKED_PER_WORK
        + n("legality_checks") / plan::search::CHECKS_PER_WORK;
    assert_eq!(n("total"), units, "{w}");
    assert!(
        n("engine_runs") >= v["measured_ops"].as_u64().unwrap(),
        "{w}"
    );
    let x = v["best"]["layouts"]["x"].as_str().unwrap().to_string();
    // The file now holds the plan, and it runs at the reported cycles.
    let (sc, src2) = scenario::load(&file).unwrap();
    assert_eq!(sc.plans["planned"]["x"], PlanValue::Layout(x));
    assert_eq!(cycles_with(&sc, &src2, "planned", &[]), best);
    assert!(src2.text.contains("// The planner at work"));
    // Writing the same name again fails and leaves the file alone.
    let again = Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args([
            "plan",
            file.to_str().unwrap(),
            "--time-limit",
            "1",
            "--write",
            "planned",
        ])
        .output()
        .unwrap();
    assert!(!again.status.success());
    // (miette wraps long lines: compare the words only)
    let err = common::one_line(&String::from_utf8_lossy(&again.stderr));
    assert!(err.contains("already has a plan `planned`"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), src2.text);
}

#[test]
fn the_model_scores_every_hand_plan_as_the_run_does_under_both_schedules() {
    // The model places each op's memoised tasks on the timeline: a hand plan's score is
    // the total of its timing run, overlapped or sequential, for every shipped scenario
    // and imported graph.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut names: Vec<_> = [dir.clone(), dir.join("graphs")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    names.sort();
    let mut checked = 0;
    let (mut streamed, mut exact) = (0, 0);
    for path in names {
        let (sc, src) = scenario::load(&path).unwrap();
        for schedule in [Schedule::Overlapped, Schedule::Sequential] {
            let mut sc = sc.clone();
            sc.schedule = schedule;
            let mut auto: BTreeMap<String, PlanValue> = BTreeMap::new();
            for p in sc.plans.values() {
                for v in p.keys() {
                    auto.insert(v.clone(), PlanValue::Any);
                }
            }
            if auto.is_empty() {
                continue;
            }
            sc.plans.insert("auto".into(), auto);
            let res = scenario::resolve(&sc, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
            let space = Space {
                max: 1,
                ..Space::default()
            };
            let mut model = mnsim_sim::plan::model::Model::new(&res, space).unwrap();
            for (name, hand) in hand_cycles(&sc, &src) {
                let hres =
                    scenario::resolve(&sc, &src, Some(&name), &[], &BTreeMap::new()).unwrap();
                let pick = hand_pick(&mut model, &hres, &name);
                let e = model.evaluate(&pick);
                assert_eq!(e.failure, None, "{} {name}", path.display());
                // Streams (`Time` steps) under the overlapped schedule: the first reader
                // of a Load's stream is measured reading it slice by slice, so the score
                // is the run's, but for the default `buffers:` (two slices when they fit
                // LM), which the model decides on an otherwise empty LM, and a
                // `buffers:` plan variable, which the model does not take (the auto plan
                // leaves it `Any`). Within 1/8 of the run; the rest exact.
                let streams = hres.program.ops.values().any(|o| {
                    matches!(&o.layout, Some(mnsim_sim::program::LayoutRef::Bound(l)) if l.time_span() > 1)
                });
                if streams && schedule == Schedule::Overlapped {
                    eprintln!(
                        "{} {name} ({}): model {} run {hand}",
                        path.display(),
                        schedule.name(),
                        e.total_cycles
                    );
                    if sc.plans[&name].contains_key("wb") {
                        continue;
                    }
                    assert!(
                        e.total_cycles.abs_diff(hand) <= hand / 8,
                        "{} plan {name}: model {} run {hand}",
                        path.display(),
                        e.total_cycles
                    );
                    streamed += 1;
                    exact += usize::from(e.total_cycles == hand);
                    continue;
                }
                assert_eq!(
                    e.total_cycles,
                    hand,
                    "{} plan {name}, {}",
                    path.display(),
                    schedule.name()
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked}");
    assert!(
        streamed >= 5 && exact + 1 >= streamed,
        "{exact} of {streamed} exact"
    );
}

/// Placing a plan from the timeline of the last one (after the tasks they share) gives
/// the totals of placing it from its first task: 300 assignments of the imported
/// attention and gated-MLP graphs (streams included), each from the one before by one
/// variable or all of them, under both schedules.
#[test]
fn resuming_the_last_plans_timeline_changes_no_total() {
    for file in [
        "graphs/MHA-GPT-inf-fp32-bs1.ron",
        "graphs/sdpa-plain-simplified-f16.ron",
        "double_buffer.ron",
    ] {
        for schedule in [Schedule::Overlapped, Schedule::Sequential] {
            let (mut on, mut off, picks) = walk_from_hand(file, schedule, true);
            let (mut ran, mut differ) = (0, 0);
            for (step, pick) in picks.iter().enumerate() {
                let (a, b) = (on.evaluate(pick), off.evaluate(pick));
                assert_eq!(a, b, "{file} step {step}, {}", schedule.name());
                ran += usize::from(a.failure.is_none());
                differ += usize::from(a.total_cycles != on.evaluate(pick).total_cycles);
            }
            assert_eq!(differ, 0);
            assert!(ran >= 10, "{file}: only {ran} of 300 assignments ran");
        }
    }
}

/// A kernel its layouts make illegal is found so before its streamed Loads are applied
/// (they ran without an error before): the same evaluations (failures word for word),
/// measurements and work as applying them first, on assignments of the attention and
/// gated-MLP graphs under both schedules, each from the one before by one variable, back
/// to a hand plan every 10.
#[test]
fn checking_legality_before_the_loads_changes_no_evaluation() {
    for (file, hand) in [
        ("graphs/gated-mlp-f32.ron", "default_split"),
        ("graphs/MHA-GPT-inf-fp32-bs1.ron", "default"),
    ] {
        for schedule in [Schedule::Overlapped, Schedule::Sequential] {
            let (mut sc, src) = load(file);
            sc.schedule = schedule;
            let auto: BTreeMap<String, PlanValue> = (sc.plans.values())
                .flat_map(|p| p.keys())
                .map(|v| (v.clone(), PlanValue::Any))
                .collect();
            sc.plans.insert("auto".into(), auto);
            let res = scenario::resolve(&sc, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
            let space = Space {
                max: 60,
                ..Space::default()
            };
            let mut first = mnsim_sim::plan::model::Model::new(&res, space).unwrap();
            let mut after = mnsim_sim::plan::model::Model::new(&res, space).unwrap();
            after.set_legality_first(false);
            let mut rng = 0x1e9a1_u64;
            let mut next = |n: usize| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % n as u64) as usize
            };
            let hres = scenario::resolve(&sc, &src, Some(hand), &[], &BTreeMap::new()).unwrap();
            let seed: Vec<_> = (0..first.vars.len())
                .map(|vi| {
                    match &hres.program.ops
                        [mnsim_sim::program::EntityRef::new(first.vars[vi].ops[0])]
                    .layout
                    {
                        Some(mnsim_sim::program::LayoutRef::Bound(l)) => {
                            after.seed(vi, l);
                            first.seed(vi, l)
                        }
                        other => panic!("{hand}: {other:?}"),
                    }
                })
                .collect();
            let mut pick = seed.clone();
            let mut ran = 0;
            for step in 0..400 {
                if step % 10 == 0 {
                    pick.clone_from(&seed);
                } else {
                    let k = next(pick.len());
                    pick[k] = first.vars[k].candidates[next(first.vars[k].candidates.len())];
                }
                let (a, b) = (first.evaluate(&pick), after.evaluate(&pick));
                assert_eq!(a, b, "{file} step {step}, {}", schedule.name());
                ran += usize::from(a.failure.is_none());
            }
            assert_eq!(first.work_done(), after.work_done(), "{file}");
            assert_eq!(first.measured, after.measured, "{file}");
            assert!(first.illegal_first() > 0, "{file}: the check never decided");
            assert_eq!(after.illegal_first(), 0);
            assert!(ran > 0, "{file}: no assignment ran");
        }
    }
}

/// The check before the Loads waits for them to have run without an error: where the
/// second stream does not fit LM beside the first, the measurement fails on LM (and no
/// Relayout is tried), as it does applying them, though the kernel is illegal too;
/// where they fit, the check decides the next illegal layouts alone, word for word.
#[test]
fn legality_before_the_loads_waits_for_loads_that_ran() {
    use mnsim_sim::plan::cost::{Coster, Held, StreamFrom};
    use mnsim_sim::program::{EntityRef, OpId};
    let text = r#"Scenario(
    name: "two streams",
    machine: Preset("toy4"),
    mode: Timing,
    tensors: {
        "a": (dtype: F32, shape: "f32[4,600]", init: Random(seed: 1)),
        "b": (dtype: F32, shape: "f32[4,600]", init: Random(seed: 2)),
        "c": (dtype: F32, shape: "f32[4,600]"),
    },
    program: [
        Load(tensor: "a", layout: "((4_Time), (600))"),
        Load(tensor: "b", layout: "((4_Time), (600))"),
        Binary(op: Add, a: "a", b: "b", out: "c", layout: "((4_Time), (600))"),
        Store(tensor: "c"),
    ],
)"#;
    let (sc, src) = parsed(text, "two.ron");
    let res = scenario::resolve(&sc, &src, None, &[], &BTreeMap::new()).unwrap();
    let m = &res.machine;
    let bind = |t: &str| {
        mnsim_arch::TensorLayout::parse(t, m, Some(&[4, 600]), mnsim_arch::DType::F32).unwrap()
    };
    let held = |t: &str| Held {
        layout: bind(t),
        partial: Vec::new(),
    };
    let streams = [
        Some(StreamFrom::Load(OpId::new(0))),
        Some(StreamFrom::Load(OpId::new(1))),
    ];
    let (mut first, mut after) = (Coster::new(&res).unwrap(), Coster::new(&res).unwrap());
    after.set_legality_first(false);
    // Measured by both: the result, and how many the check decided so far.
    let mut both = |a: &str, b: &str, c: &str| {
        let (a, b, c) = (held(a), held(b), bind(c));
        let ids = ["a", "b"].map(|n| res.program.tensor_id(n).unwrap());
        let inputs = [(ids[0], &a), (ids[1], &b)];
        let x = first.measure(OpId::new(2), &inputs, Some(&c), &streams);
        let y = after.measure(OpId::new(2), &inputs, Some(&c), &streams);
        let (x, y) = (x.map(|m| m.cycles), y.map(|m| m.cycles));
        assert_eq!(format!("{x:?}"), format!("{y:?}"));
        assert_eq!(after.illegal_first, 0);
        (x, first.illegal_first)
    };
    // b's slices (a row of 600 words on each of two PEs) do not fit beside a's.
    let (e, n) = both(
        "((4_Time), (600))",
        "((2_Time, 2_PE), (600))",
        "((4_Time), (600))",
    );
    assert!(e.is_err_and(|e| e.is_lm_full()) && n == 0);
    let (e, n) = both(
        "((4_Time), (600))",
        "((2_Time, 2_PE), (600))",
        "((2_Time, 2_PE), (600))",
    );
    assert!(e.is_err_and(|e| e.is_lm_full()) && n == 0);
    // b in 300 words a PE fits: the kernel is illegal, first with the Loads applied, then
    // decided before them.
    let b = "((4_Time), (2_PE, 300))";
    let (e, n) = both("((4_Time), (600))", b, "((4_Time), (600))");
    assert!(e.is_err_and(|e| !e.is_lm_full()) && n == 0);
    let (e, n) = both("((4_Time), (600))", b, "((2_Time, 2_PE), (600))");
    assert!(e.is_err_and(|e| !e.is_lm_full()) && n == 1);
}

/// The search's measurements keep a short error for a kernel its layouts make illegal
/// (building the explanation costs more than the measurement); the failure a user is
/// shown is explained, word for word as a run of that assignment says it.
#[test]
fn a_failure_shown_is_explained_as_the_run_explains_it() {
    let text = r#"Scenario(
    name: "illegal input",
    machine: Preset("toy4"),
    mode: Timing,
    tensors: {
        "x": (dtype: F32, shape: "f32[8,4]", init: Random(seed: 1)),
        "p": (dtype: F32, shape: "f32[8,4]"),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Softmax(input: "x", axis: 1, out: "p", layout: "((8), (4))"),
        Store(tensor: "p"),
    ],
    plans: {"auto": {"x": Any}},
)"#;
    let (sc, src) = parsed(text, "f.ron");
    let res = scenario::resolve(&sc, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
    let mut model = mnsim_sim::plan::model::Model::new(&res, Space::default()).unwrap();
    // A candidate of x the Softmax cannot read as it is (x's first reader: no Relayout).
    let (c, short) = (model.vars[0].candidates.clone().into_iter())
        .find_map(|c| match model.evaluate(&[c]).failure {
            Some((1, msg)) => Some((c, msg.to_string())),
            _ => None,
        })
        .expect("a candidate of x splits the softmax axis");
    let evaluated = model.evaluated;
    let (at, explained) = model.explained_failure(&[c]).unwrap();
    let explained = explained.to_string();
    assert_eq!((at, model.evaluated), (1, evaluated));
    assert!(explained.len() > short.len(), "{explained} / {short}");
    // The run of that assignment fails at the Softmax with the same words.
    let mut s = sc.clone();
    let auto = s.plans.get_mut("auto").unwrap();
    auto.insert("x".into(), PlanValue::Layout(model.text(c).to_string()));
    let mut res = scenario::resolve(&s, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
    res.mode = Mode::Timing;
    let run = mnsim_sim::run::run(&res)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(run.contains(&explained), "run: {run}\nplanner: {explained}");
    // Evaluated again after that, the same failure (explained or not) ranks the same.
    assert_eq!(model.evaluate(&[c]).failure.map(|f| f.0), Some(1));
}

/// The search's work (what its budget counts) is a function of the plans evaluated:
/// two models walking the same plans count the same evaluations, engine runs and
/// placing work. Placing every plan from its first task never does less placing than
/// resuming the last plan's timeline, and does more where the tasks a plan shares with
/// it walk streams (GPT attention's; double_buffer's plans differ in the Load whose
/// stream their first kernel walks, so there is nothing to skip); the evaluations and
/// runs are the same.
#[test]
fn the_work_is_a_function_of_the_plans_evaluated() {
    for file in ["double_buffer.ron", "graphs/MHA-GPT-inf-fp32-bs1.ron"] {
        let (mut on, mut off, picks) = walk_from_hand(file, Schedule::Overlapped, true);
        let (mut twin, _, _) = walk_from_hand(file, Schedule::Overlapped, false);
        for pick in &picks {
            on.evaluate(pick);
            off.evaluate(pick);
            twin.evaluate(pick);
        }
        let (a, b) = (on.work_done(), off.work_done());
        assert_eq!(a, twin.work_done(), "{file}");
        assert_eq!(a.evaluated, picks.len() as u64);
        assert!(a.runs >= on.measured && on.measured > 0, "{file}: {a:?}");
        assert!(a.booked > 0, "{file} streams: {a:?}");
        assert_eq!((b.evaluated, b.runs), (a.evaluated, a.runs));
        assert!(b.booked >= a.booked, "{file}: {b:?} {a:?}");
        assert!(plan::search::work(&on) <= plan::search::work(&off));
        if file.contains("GPT") {
            assert!(b.booked > a.booked, "{file}: {b:?} {a:?}");
        }
    }
}

/// An evaluation the model decides by a bound without placing it (`evaluate_below`) is
/// one whose full evaluation is no better than the cutoff; any other is the full
/// evaluation itself. Over the same random walks, with the cutoff the best key seen so
/// far (as the search's), a failing plan's, and one no plan reaches.
#[test]
fn an_evaluation_decided_by_a_bound_is_no_better_than_its_cutoff() {
    for file in ["graphs/MHA-GPT-inf-fp32-bs1.ron", "double_buffer.ron"] {
        for schedule in [Schedule::Overlapped, Schedule::Sequential] {
            let (mut model, mut full, picks) = walk_from_hand(file, schedule, false);
            let mut best: Option<mnsim_sim::plan::model::Key> = None;
            // The last failing plan's key: a plan failing at the same op is decided by
            // the cycles its busiest resource holds.
            let mut failed: Option<mnsim_sim::plan::model::Key> = None;
            let (mut decided, mut placed, mut by_cycles) = (0, 0, 0);
            for (step, pick) in picks.iter().enumerate() {
                let e = full.evaluate(pick);
                let fails = Some((true, std::cmp::Reverse(1), 0));
                let never = Some((false, std::cmp::Reverse(0), 0));
                for cutoff in [best, fails, never, failed] {
                    let Some(cutoff) = cutoff else { continue };
                    match model.evaluate_below(pick, Some(cutoff)) {
                        None => {
                            assert!(e.key() >= cutoff, "{file} step {step}: {e:?} < {cutoff:?}");
                            decided += 1;
                            let k = e.key();
                            by_cycles +=
                                usize::from(k.0 && cutoff.0 && k.1 == cutoff.1 && cutoff.2 > 0);
                        }
                        Some(b) => {
                            assert_eq!(b, e, "{file} step {step}");
                            placed += 1;
                        }
                    }
                }
                best = best.min(Some(e.key())).or(Some(e.key()));
                if e.failure.is_some() {
                    failed = Some(e.key());
                }
            }
            assert_eq!(model.bounded, decided);
            assert!(by_cycles > 0, "{file}: no failure decided by its cycles");
            assert!(
                decided >= 100 && placed >= 100,
                "{file}: {decided} decided, {placed} placed"
            );
        }
    }
}

/// A walk stops at the first op whose holds prove the cutoff: under a cutoff below every
/// plan that runs (and every plan that fails), each evaluation is decided after its first
/// op, and only that op is measured, once per layout its variable takes.
#[test]
fn a_walk_decided_by_a_bound_measures_no_op_after_it() {
    for file in ["graphs/MHA-GPT-inf-fp32-bs1.ron", "double_buffer.ron"] {
        let (mut model, mut full, picks) = walk_from_hand(file, Schedule::Overlapped, false);
        // Below every key: a plan that runs all n ops ranks at (false, Reverse(n), _).
        let cutoff = (false, std::cmp::Reverse(usize::MAX), 0);
        for pick in &picks {
            assert!(model.evaluate_below(pick, Some(cutoff)).is_none(), "{file}");
            full.evaluate(pick);
        }
        assert_eq!(model.bounded, picks.len() as u64, "{file}");
        let first = model.vars.iter().position(|v| v.ops.contains(&0));
        let layouts: std::collections::BTreeSet<_> =
            picks.iter().map(|p| first.map(|v| p[v])).collect();
        assert!(
            model.measured as usize <= layouts.len() && model.measured < full.measured,
            "{file}: {} measured under the cutoff, {} layouts of the first op, {} in full",
            model.measured,
            layouts.len(),
            full.measured
        );
    }
}

/// Two models of `file` with every variable `Any` (but `wb`), the first resuming
/// timelines and the second placing every plan from its first task when `resume_off`,
/// and 300 assignments each from the one before by one variable, back to the hand plan
/// every 10.
fn walk_from_hand(
    file: &str,
    schedule: Schedule,
    resume_off: bool,
) -> (
    mnsim_sim::plan::model::Model,
    mnsim_sim::plan::model::Model,
    Vec<Vec<mnsim_sim::plan::model::LayoutId>>,
) {
    let (mut sc, src) = load(file);
    sc.schedule = schedule;
    let mut auto: BTreeMap<String, PlanValue> = BTreeMap::new();
    for p in sc.plans.values() {
        for v in p.keys().filter(|v| v.as_str() != "wb") {
            auto.insert(v.clone(), PlanValue::Any);
        }
    }
    auto.insert("wb".into(), PlanValue::Layout("2".into()));
    sc.plans.insert("auto".into(), auto);
    let res = scenario::resolve(&sc, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
    let space = Space {
        max: 40,
        ..Space::default()
    };
    let mut on = mnsim_sim::plan::model::Model::new(&res, space).unwrap();
    let mut off = mnsim_sim::plan::model::Model::new(&res, space).unwrap();
    if resume_off {
        off.set_resume(false);
    }
    let mut rng = 0x5eed_u64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let hand = if file == "double_buffer.ron" {
        "double"
    } else {
        "default"
    };
    let hres = scenario::resolve(&sc, &src, Some(hand), &[], &BTreeMap::new()).unwrap();
    let seed: Vec<_> = (0..on.vars.len())
        .map(|vi| {
            match &hres.program.ops[mnsim_sim::program::EntityRef::new(on.vars[vi].ops[0])].layout {
                Some(mnsim_sim::program::LayoutRef::Bound(l)) => {
                    off.seed(vi, l);
                    on.seed(vi, l)
                }
                other => panic!("{hand}: {other:?}"),
            }
        })
        .collect();
    let mut pick = seed.clone();
    let mut picks = Vec::new();
    for step in 0..300 {
        if step % 10 == 0 {
            pick.clone_from(&seed);
        } else {
            let k = next(on.vars.len());
            pick[k] = on.vars[k].candidates[next(on.vars[k].candidates.len())];
        }
        picks.push(pick.clone());
    }
    (on, off, picks)
}

const CHAIN: &str = r#"Scenario(
    name: "two kernels on a stream",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "x": (dtype: F32, shape: "f32[128,1024]", init: Random(seed: 1)),
        "y": (dtype: F32, shape: "f32[128,1024]"),
        "z": (dtype: F32, shape: "f32[128,1024]"),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Unary(op: Relu, input: "x", out: "y", layout: "$y"),
        Unary(op: Neg, input: "y", out: "z", layout: "$z"),
        Store(tensor: "z"),
    ],
    plans: {
        "whole": {
            "x": "((8_L2B, 8_L1B, 2), (16_MAB, 4_PE, 8, 2_W))",
            "y": "((8_L2B, 8_L1B, 2), (16_MAB, 4_PE, 8, 2_W))",
            "z": "((8_L2B, 8_L1B, 2), (16_MAB, 4_PE, 8, 2_W))",
        },
        "streamed": {
            "x": "((8_L2B, 8_L1B, 2), (8_Time, 16_MAB, 4_PE, 2_W))",
            "y": "((8_L2B, 8_L1B, 2), (8_Time, 16_MAB, 4_PE, 2_W))",
            "z": "((8_L2B, 8_L1B, 2), (8_Time, 16_MAB, 4_PE, 2_W))",
        },
        "auto": {"x": Any, "y": Any, "z": Any},
    },
)"#;

#[test]
fn a_stream_through_two_kernels_to_its_store_is_scored_as_it_runs() {
    // The Load's stream is walked by the first kernel, whose output stream the second
    // walks (its steps between the first's: the vector unit is back-filled), whose
    // output stream the Store writes slice by slice: the Store overlaps the Load. The
    // model measures each kernel's output stream as its next reader reads it, so its
    // score is the run's, and the planner finds a plan at least as fast from nothing.
    let (sc, src) = parsed(CHAIN, "chain.ron");
    let res = scenario::resolve(&sc, &src, Some("auto"), &[], &BTreeMap::new()).unwrap();
    let mut model = mnsim_sim::plan::model::Model::new(&res, Space::default()).unwrap();
    let mut totals = BTreeMap::new();
    for name in ["whole", "streamed"] {
        let hres = scenario::resolve(&sc, &src, Some(name), &[], &BTreeMap::new()).unwrap();
        let pick = hand_pick(&mut model, &hres, name);
        let e = model.evaluate(&pick);
        let run = cycles_with(&sc, &src, name, &[]);
        assert_eq!(e.total_cycles, run, "{name}");
        totals.insert(name, run);
    }
    let mut res = scenario::resolve(&sc, &src, Some("streamed"), &[], &BTreeMap::new()).unwrap();
    res.mode = Mode::Timing;
    let r = mnsim_sim::run::run(&res).unwrap().report;
    let (load, store) = (&r.ops[0], &r.ops[3]);
    assert!(store.start < load.end, "{} {}", store.start, load.end);
    assert!(
        r.total_cycles < load.work_cycles + store.work_cycles,
        "{} {} {}",
        r.total_cycles,
        load.work_cycles,
        store.work_cycles
    );
    assert!(totals["streamed"] < totals["whole"], "{totals:?}");
    let o = plan_auto(&sc, &src, 60);
    assert!(
        o.best[0].total_cycles <= totals["streamed"],
        "{} {totals:?}",
        o.best[0].total_cycles
    );
}

/// The measuring engine charges an op's placed inputs against LM, as the run allocates
/// them, so the slices a stream holds by default are decided beside them: here `t1`'s
/// eight slices get one buffer (two do not fit beside `t0` and the MatMul's output), and
/// the Load and the MatMul take turns. The model scored this plan 122,028 cycles when it
/// decided on an LM holding nothing but the stream, against a run of 152,572.
#[test]
fn the_model_decides_a_streams_buffers_beside_the_ops_placed_inputs() {
    let text = r#"Scenario(
    name: "matmul then clamp, a stream that fits one buffer",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "t0": (dtype: F32, shape: "f32[384,4096]", init: Random(seed: 0)),
        "t1": (dtype: F32, shape: "f32[4096,1024]", init: Random(seed: 1)),
        "t168": (dtype: F32, shape: "f32[384,1024]"),
        "t2214": (dtype: F32, shape: "f32[384,1024]"),
    },
    program: [
        Load(tensor: "t0", layout: "$t0"),
        Load(tensor: "t1", layout: "$t1"),
        MatMul(a: "t0", b: "t1", out: "t168", layout: "$t168"),
        Free(tensor: "t0"),
        Free(tensor: "t1"),
        Clamp(input: "t168", min: -1.0, max: 1.0, out: "t2214", layout: "$t2214"),
        Free(tensor: "t168"),
        Store(tensor: "t2214"),
    ],
    plans: {
        "auto": {"t0": Any, "t1": Any, "t168": Any, "t2214": Any},
        "tight": {
            "t0": "((8_L1B:1, 48:64), (8_L2B:1, 4_PE:1, 64:1, 2_W:1); B@[MAB])",
            "t1": "((8_L2B:1, 4_PE:1, 128:4), (8_Time:1, 16_MAB:1, 4:1, 2_W:1); B@[L1B])",
            "t168": "((8_L1B:1, 48:8), (4_Time:1, 2:4, 16_MAB:1, 4:1, 2_W:1); B@[L2B,PE])",
            "t2214": "((8_L1B:1, 4_PE:1, 12:4), (8_L2B:1, 16_MAB:1, 4:1, 2_W:1))",
        },
    },
    auto_reduce: true,
)"#;
    let (e, report) = common::model::model_and_run(text, "tight.ron", "tight");
    let t1 = report.streams.iter().find(|s| s.tensor == "t1").unwrap();
    assert_eq!((t1.slices, t1.buffers), (8, 1), "{t1:?}");
    let hand = report.total_cycles;
    assert!(
        e.total_cycles.abs_diff(hand) <= hand / 100,
        "model {} run {hand}",
        e.total_cycles
    );
}
