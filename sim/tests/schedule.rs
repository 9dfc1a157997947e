//! The two schedules on random programs (docs/model.md, the schedule invariants), and write-after-read on
//! LM worked by hand.
//!
//! Programs are drawn from a seeded generator (the seed is the proptest input) over a
//! small MN-Core 2 (128 PEs): loads in random layouts (with `time`, some with `Time`
//! steps: streams, with random `buffers:`), element-wise kernels, relayouts, stores and
//! frees of six tensors.

use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};
use mnsim_kernels::{BinaryOp, Kernel, UnaryOp};
use mnsim_sim::engine::{Engine, Mode, OpSettings};
use mnsim_sim::run::{SplitMix, init_data};
use mnsim_sim::scenario::{Init, Schedule};
use mnsim_sim::timeline::{self, Cause};
use proptest::prelude::*;

/// mncore2 with 2 L1B per L2B and 2 MAB per L1B: 128 PEs.
fn machine() -> Machine {
    let mut m = mnsim_arch::preset("mncore2").expect("preset");
    mnsim_arch::set_knob(&mut m, "levels.L1B.count", 2.0).unwrap();
    mnsim_arch::set_knob(&mut m, "levels.MAB.count", 2.0).unwrap();
    m
}

const DIMS: [u64; 2] = [32, 64];
const TENSORS: usize = 6;

/// Layouts of a 32×64 tensor: split, replicated, mixed, and (with `time`) stepped.
fn layouts(time: bool) -> Vec<&'static str> {
    let mut v = vec![
        "((8_L2B, 4), (2_L1B, 2_MAB, 4_PE, 4))",
        "((32), (4_PE, 16))",
        "((8_L2B, 2_L1B, 2), (2_MAB, 4_PE, 8))",
        "((2_MAB, 16), (4_PE, 16))",
    ];
    if time {
        v.push("((8_L2B, 4_Time), (2_L1B, 2_MAB, 4_PE, 4))");
        v.push("((4_Time, 8), (4_PE, 16))");
    }
    v
}

fn bind(m: &Machine, text: &str) -> TensorLayout {
    TensorLayout::parse(text, m, Some(&DIMS), DType::F32)
        .unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

#[derive(Clone, Debug)]
enum Step {
    /// Load tensor, layout, `buffers:` (None: the default).
    Load(usize, usize, Option<i64>),
    Unary(usize, usize),
    Binary(usize, usize, usize),
    Relayout(usize, usize),
    Store(usize),
    Free(usize),
}

fn name(i: usize) -> String {
    format!("t{i}")
}

/// A random program: every step reads only tensors that are resident (with the same
/// layout, for a binary kernel).
fn program(seed: u64, time: bool) -> Vec<Step> {
    let mut rng = SplitMix(seed);
    let mut below = |n: usize| (rng.next_u64() % n as u64) as usize;
    let nl = layouts(time).len();
    // Resident tensors and their layout.
    let mut lm: Vec<Option<usize>> = vec![None; TENSORS];
    let mut steps = Vec::new();
    let len = 3 + below(12);
    while steps.len() < len {
        let resident: Vec<usize> = (0..TENSORS).filter(|&i| lm[i].is_some()).collect();
        let pick = if resident.is_empty() { 0 } else { below(6) };
        let step = match pick {
            0 => {
                let (t, l) = (below(TENSORS), below(nl));
                lm[t] = Some(l);
                let buffers = [None, Some(1), Some(2), Some(3)][below(4)];
                Step::Load(t, l, buffers)
            }
            1 => {
                let (a, o) = (resident[below(resident.len())], below(TENSORS));
                lm[o] = lm[a];
                Step::Unary(a, o)
            }
            2 => {
                let a = resident[below(resident.len())];
                let same: Vec<usize> = resident
                    .iter()
                    .copied()
                    .filter(|&b| lm[b] == lm[a])
                    .collect();
                let (b, o) = (same[below(same.len())], below(TENSORS));
                lm[o] = lm[a];
                Step::Binary(a, b, o)
            }
            3 => {
                let (a, l) = (resident[below(resident.len())], below(nl));
                lm[a] = Some(l);
                Step::Relayout(a, l)
            }
            4 => Step::Store(resident[below(resident.len())]),
            _ => {
                let a = resident[below(resident.len())];
                lm[a] = None;
                Step::Free(a)
            }
        };
        steps.push(step);
    }
    steps
}

/// Runs a program; `None` when an op is refused (a kernel's legality, LM).
fn run(steps: &[Step], time: bool, mode: Mode, schedule: Schedule) -> Option<Engine> {
    let m = machine();
    let ls: Vec<TensorLayout> = layouts(time).iter().map(|t| bind(&m, t)).collect();
    let mut e = Engine::with_schedule(m, mode, schedule);
    e.state.sw.log_bookings();
    for i in 0..TENSORS {
        let xla = XlaLayout::default_for(2);
        let data = (mode == Mode::Functional)
            .then(|| init_data(&Init::Random { seed: i as u64 }, DType::F32, &DIMS));
        e.state
            .declare(
                &name(i),
                DType::F32,
                DIMS.to_vec(),
                DIMS.to_vec(),
                xla.clone(),
                data,
            )
            .ok()?;
        e.state.set_in_dram(tid(i), xla);
    }
    for s in steps {
        let ok = match s {
            Step::Load(t, l, b) => {
                let s = OpSettings {
                    buffers: *b,
                    ..OpSettings::default()
                };
                e.op(s).load(tid(*t), ls[*l].clone()).is_ok()
            }
            Step::Unary(a, o) => e
                .kernel(
                    "Unary",
                    &Kernel::Unary(UnaryOp::Relu),
                    &[tid(*a)],
                    tid(*o),
                    None,
                )
                .is_ok(),
            Step::Binary(a, b, o) => e
                .kernel(
                    "Binary",
                    &Kernel::Binary(BinaryOp::Add),
                    &[tid(*a), tid(*b)],
                    tid(*o),
                    None,
                )
                .is_ok(),
            Step::Relayout(a, l) => e
                .relayout("Relayout", tid(*a), ls[*l].clone(), None)
                .is_ok(),
            Step::Store(a) => e.store(tid(*a), XlaLayout::default_for(2)).is_ok(),
            Step::Free(a) => e.state.free(tid(*a)).is_ok(),
        };
        if !ok {
            return None;
        }
    }
    e.settle();
    Some(e)
}

fn spans(e: &Engine) -> Vec<(u64, u64)> {
    e.rec.ops.iter().map(|o| (o.start, o.end)).collect()
}

fn config() -> ProptestConfig {
    let env = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig {
        cases: env.unwrap_or(48),
        max_global_rejects: 1 << 16,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn overlapped_is_within_sequential_and_above_every_resource(seed in any::<u64>(), time in any::<bool>()) {
        let steps = program(seed, time);
        let seq = run(&steps, time, Mode::Timing, Schedule::Sequential);
        prop_assume!(seq.is_some());
        let seq = seq.unwrap();
        let ovl = run(&steps, time, Mode::Timing, Schedule::Overlapped).expect("runs as sequential did");
        let what = format!("{steps:?}");
        let sum: u64 = seq.rec.ops.iter().map(|o| o.cycles).sum();
        prop_assert_eq!(seq.state.sw.clock(), sum, "{}", what);
        prop_assert!(ovl.state.sw.clock() <= seq.state.sw.clock(), "{}: {} > {}", what, ovl.state.sw.clock(), seq.state.sw.clock());
        // Every op costs the same under both (its task, re-sent slices included); only
        // where it sits differs, and a stream's ops may stretch over their slices.
        for (a, b) in seq.rec.ops.iter().zip(&ovl.rec.ops) {
            prop_assert_eq!(&a.stages, &b.stages);
        }
        prop_assert_eq!(&seq.rec.tasks, &ovl.rec.tasks, "{}", what);
        for (o, t) in seq.rec.ops.iter().zip(&seq.rec.tasks) {
            prop_assert_eq!(o.cycles, t.cycles);
        }
        // No resource is held for longer than the run (compute units included): the
        // compute of any one unit is serial, though a kernel's steps may run in the
        // pauses of another's walk. Every compute hold of the tasks (a kernel's slice
        // computed again for a re-send included) is in its unit's busy cycles.
        for u in &ovl.rec.timeline.resources {
            prop_assert!(u.busy_cycles <= ovl.state.sw.clock(), "{}: {:?}", what, u);
            if u.resource.is_compute() {
                let resent = (ovl.rec.tasks.iter().flat_map(|t| &t.walk))
                    .flat_map(|w| &w.inputs)
                    .flat_map(|i| i.resend_holds());
                let held: u64 = (ovl.rec.tasks.iter().flat_map(|t| t.holds.iter().copied()))
                    .chain(resent)
                    .filter(|h| h.resource == u.resource)
                    .map(|h| h.cycles)
                    .sum();
                prop_assert_eq!(u.busy_cycles, held, "{}", what);
            }
        }
        // The exposed cycles sum to the run's length.
        prop_assert_eq!(ovl.rec.timeline.exposed().iter().sum::<u64>(), ovl.state.sw.clock());
        // The pure schedule over the recorded tasks places them as the run did (with
        // its busy state on the world's entities).
        let lm = ovl.rec.timeline.lm_capacity;
        for (e, s) in [(&seq, Schedule::Sequential), (&ovl, Schedule::Overlapped)] {
            let pure = timeline::schedule(&e.rec.tasks, s, lm);
            prop_assert_eq!(&pure.placed, &e.rec.timeline.placed, "{}", what);
        }
    }

    #[test]
    fn a_chain_without_time_steps_gains_nothing(seed in any::<u64>()) {
        // Every op consumes the previous op's output.
        let mut rng = SplitMix(seed);
        let nl = layouts(false).len();
        let mut steps = vec![Step::Load(0, (rng.next_u64() % nl as u64) as usize, None)];
        let mut cur = 0usize;
        for _ in 0..(1 + rng.next_u64() % 6) {
            let next = (cur + 1 + (rng.next_u64() % 5) as usize) % TENSORS;
            steps.push(match rng.next_u64() % 2 {
                0 => Step::Unary(cur, next),
                _ => Step::Binary(cur, cur, next),
            });
            if rng.next_u64().is_multiple_of(3) {
                steps.push(Step::Relayout(next, (rng.next_u64() % nl as u64) as usize));
            }
            cur = next;
        }
        steps.push(Step::Store(cur));
        let seq = run(&steps, false, Mode::Timing, Schedule::Sequential);
        prop_assume!(seq.is_some());
        let ovl = run(&steps, false, Mode::Timing, Schedule::Overlapped).expect("runs");
        prop_assert_eq!(spans(&ovl), spans(&seq.unwrap()), "{:?}", steps);
    }

    #[test]
    fn both_modes_and_thread_counts_place_ops_alike(seed in any::<u64>(), time in any::<bool>()) {
        let steps = program(seed, time);
        for s in [Schedule::Sequential, Schedule::Overlapped] {
            let t = run(&steps, time, Mode::Timing, s);
            prop_assume!(t.is_some());
            let t = t.unwrap();
            let f = run(&steps, time, Mode::Functional, s).expect("runs in timing mode");
            prop_assert_eq!(spans(&t), spans(&f), "{:?} {:?}", s, steps);
            let pool = |n: usize| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
            let one = pool(1).install(|| run(&steps, time, Mode::Functional, s)).expect("runs");
            let two = pool(2).install(|| run(&steps, time, Mode::Functional, s)).expect("runs");
            prop_assert_eq!(&one.rec.ops, &two.rec.ops);
            prop_assert_eq!(spans(&one), spans(&f));
        }
    }
}

/// Stream programs: every load may take `Time` steps and random `buffers:`.
fn stream_config() -> ProptestConfig {
    ProptestConfig {
        cases: config().cases.max(400),
        ..config()
    }
}

proptest! {
    #![proptest_config(stream_config())]

    #[test]
    fn no_resource_serves_two_ops_at_once(seed in any::<u64>()) {
        // docs/model.md, a resource serves one op at a time: on random stream programs,
        // under both schedules, no two bookings of one resource overlap (the run's, on
        // the world's level entities, and the pure schedule's), and the run lasts at
        // least every resource's busy cycles.
        let steps = program(seed, true);
        for s in [Schedule::Sequential, Schedule::Overlapped] {
            let e = run(&steps, true, Mode::Timing, s);
            prop_assume!(e.is_some());
            let e = e.unwrap();
            let what = format!("{s:?} {steps:?}");
            let total = e.state.sw.clock();
            let booked = e.state.sw.bookings();
            prop_assert_eq!(timeline::overlap(&booked), None, "{}", what);
            for u in &e.rec.timeline.resources {
                prop_assert!(u.busy_cycles <= total, "{}: {:?} in {}", what, u, total);
                let held: u64 = booked
                    .iter()
                    .filter(|b| b.resource == u.resource)
                    .map(|b| b.end - b.start)
                    .sum();
                prop_assert_eq!(held, u.busy_cycles, "{}: {:?}", what, u.resource);
            }
            prop_assert!(booked.iter().all(|b| b.end <= total), "{}", what);
            // The pure schedule books the same holds on its one table.
            let mut busy = timeline::BusyTable::logging();
            let pure = timeline::schedule_on(&e.rec.tasks, s, e.rec.timeline.lm_capacity, &mut busy);
            prop_assert_eq!(&pure.placed, &e.rec.timeline.placed, "{}", what);
            let key = |b: &timeline::Booking| (b.resource, b.start, b.end, b.task);
            let mut a: Vec<_> = booked.iter().map(key).collect();
            let mut b: Vec<_> = busy.bookings().iter().map(key).collect();
            a.sort();
            b.sort();
            prop_assert_eq!(a, b, "{}", what);
        }
    }
}

#[test]
fn a_load_and_the_store_of_its_stream_take_turns_on_dram() {
    // toy4, x: f32[64,4] loaded in 2 Time steps and stored: the store walks the stream
    // slice by slice, and DRAM serves the load's slice k, then the store's step k.
    let text = r#"Scenario(
        name: "stream then store",
        machine: Preset("toy4"),
        mode: Timing,
        tensors: { "x": (dtype: F32, shape: "f32[64,4]", init: Random(seed: 1)) },
        program: [
            Load(tensor: "x", layout: "((2_Time, 8, 4_PE), (4))"),
            Store(tensor: "x"),
        ],
    )"#;
    let sc = mnsim_sim::scenario::parse(text, "t.ron").unwrap();
    let src = mnsim_sim::scenario::Source {
        path: "t.ron".into(),
        text: text.into(),
    };
    for s in [Schedule::Sequential, Schedule::Overlapped] {
        let mut res =
            mnsim_sim::scenario::resolve(&sc, &src, None, &[], &Default::default()).unwrap();
        res.schedule = s;
        let r = mnsim_sim::run::run(&res).unwrap().report;
        let dram = r.resources.iter().find(|u| u.name == "DRAM").unwrap();
        assert_eq!(dram.busy_cycles, 128, "{s:?}");
        assert!(
            r.total_cycles >= dram.busy_cycles,
            "{s:?}: {}",
            r.total_cycles
        );
        assert!(r.resources.iter().all(|u| u.utilisation <= 1.0), "{s:?}");
    }
}

/// One tensor of `words` LM words on every PE of the small machine.
fn big(m: &Machine, words: u64) -> TensorLayout {
    TensorLayout::parse(
        &format!("((8_L2B, 2_L1B, 2_MAB, 4_PE, {words}))"),
        m,
        Some(&[128 * words]),
        DType::F32,
    )
    .unwrap()
}

/// x, w1, w2 of 1200 words per PE each, y = x + w1; w1 freed before w2 loads.
fn war_program(schedule: Schedule, lm_knob: Option<f64>) -> Engine {
    let mut m = machine();
    if let Some(b) = lm_knob {
        mnsim_arch::set_knob(&mut m, "levels.PE.memory.bytes", b).unwrap();
    }
    let l = big(&m, 1200);
    let mut e = Engine::with_schedule(m, Mode::Timing, schedule);
    for t in ["x", "w1", "w2", "y"] {
        let xla = XlaLayout::default_for(1);
        e.state
            .declare(
                t,
                DType::F32,
                vec![128 * 1200],
                vec![128 * 1200],
                xla.clone(),
                None,
            )
            .unwrap();
        e.state.set_in_dram(e.state.tensor_id(t).unwrap(), xla);
    }
    e.load(e.state.tensor_id("x").unwrap(), l.clone()).unwrap();
    e.load(e.state.tensor_id("w1").unwrap(), l.clone()).unwrap();
    e.kernel(
        "Binary",
        &Kernel::Binary(BinaryOp::Mul),
        &[
            e.state.tensor_id("x").unwrap(),
            e.state.tensor_id("w1").unwrap(),
        ],
        e.state.tensor_id("y").unwrap(),
        None,
    )
    .unwrap();
    e.state.free(e.state.tensor_id("w1").unwrap()).unwrap();
    e.load(e.state.tensor_id("w2").unwrap(), l).unwrap();
    e
}

#[test]
fn a_load_into_space_still_read_waits_for_its_reader() {
    // 4096 words per PE: x, y and w2 fit (3600), w1 beside them would not (4800).
    let e = war_program(Schedule::Overlapped, None);
    let (kernel, load) = (&e.rec.ops[2], &e.rec.ops[3]);
    assert_eq!(
        load.start, kernel.end,
        "w2 reuses w1's space once y's kernel read it"
    );
    assert_eq!(e.rec.timeline.placed[3].cause, Cause::Memory);
    assert_eq!(e.rec.timeline.placed[3].after, Some(2));
    // With LM for all four, w2 loads while the kernel runs.
    let roomy = war_program(Schedule::Overlapped, Some(65536.0));
    assert!(
        roomy.rec.ops[3].start < roomy.rec.ops[2].end,
        "{:?}",
        spans(&roomy)
    );
    // Sequential: after the kernel either way.
    let seq = war_program(Schedule::Sequential, None);
    assert_eq!(seq.rec.ops[3].start, seq.rec.ops[2].end);
}

#[test]
fn every_stage_names_a_resource_the_report_counts() {
    // The report's resources (from the timeline) and the stages' resource names agree,
    // and a resource's busy cycles are the cycles of the stages that hold it.
    for file in [
        "mlp_block.ron",
        "attention_block.ron",
        "peak_matmul_fp16.ron",
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(file);
        let (sc, src) = mnsim_sim::scenario::load(&path).unwrap();
        for plan in mnsim_sim::scenario::plans_to_run(&sc) {
            let mut res =
                mnsim_sim::scenario::resolve(&sc, &src, plan.as_deref(), &[], &Default::default())
                    .unwrap();
            res.mode = Mode::Timing;
            let r = mnsim_sim::run::run(&res).unwrap().report;
            assert_eq!(r.schedule, "overlapped");
            for u in &r.resources {
                let held: u64 = r
                    .ops
                    .iter()
                    .flat_map(|o| &o.stages)
                    .filter(|s| s.resource() == u.name)
                    .map(|s| s.cycles)
                    .sum();
                assert_eq!(held, u.busy_cycles, "{file} {plan:?} {}", u.name);
                assert!(u.utilisation <= 1.0);
            }
            let stages: usize = r.ops.iter().map(|o| o.stages.len()).sum();
            let named = r
                .ops
                .iter()
                .flat_map(|o| &o.stages)
                .filter(|s| r.resources.iter().any(|u| u.name == s.resource()))
                .count();
            assert_eq!(named, stages, "{file} {plan:?}");
            if r.ops.iter().any(|o| o.op == "MatMul") {
                assert!(r.resources.iter().any(|u| u.kind == "matrix"));
                assert!(r.peak_flops_per_cycle.is_some());
            }
        }
    }
}

/// The id of tensor `i`, declared `i`-th.
fn tid(i: usize) -> mnsim_sim::program::TensorId {
    mnsim_sim::program::EntityRef::new(i)
}
