//! Op costs in closed form (docs/planner.md, op costs): the engine the planner measures
//! with charges transfers from the layouts' per-level choices, not per PE. The per-PE
//! engine stays the reference: on every op of the shipped scenarios (every plan), of
//! every shared graph as `mnsim run` plans it, and of random programs, under both
//! schedules, both engines give every op the same cycles, the same typed stages and the
//! same tasks, and the run the same total.

mod common;

use mnsim_sim::engine::{Engine, Recording};
use mnsim_sim::run::{RunOutput, run_on};
use mnsim_sim::scenario::{self, Resolved, Schedule};
use std::path::Path;

/// Runs `res` on the reference engine and on a measuring one; asserts they agree op by
/// op. Returns, if the run ran (a program the engine refuses is refused by both), how
/// many transfers the measuring engine charged in closed form and how many per PE.
fn check(res: &Resolved, what: &str) -> Option<(u64, u64)> {
    let engine = |measuring: bool| {
        let mut e = Engine::with_schedule(res.machine.clone(), res.mode, res.schedule);
        if measuring {
            e.rec.kind = Recording::Measure(Box::default());
        }
        e
    };
    let reference = run_on(res, engine(false), &mut |_, _| {});
    let closed = run_on(res, engine(true), &mut |_, _| {});
    let (reference, closed): (RunOutput, RunOutput) = match (reference, closed) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{what}");
            return None;
        }
        (a, b) => panic!(
            "{what}: one engine ran, the other did not: {:?} / {:?}",
            a.err(),
            b.err()
        ),
    };
    let (a, b) = (&reference.engine, &closed.engine);
    assert_eq!(a.rec.ops.len(), b.rec.ops.len(), "{what}");
    for (k, (x, y)) in a.rec.ops.iter().zip(&b.rec.ops).enumerate() {
        assert_eq!(
            (x.cycles, x.start, x.end),
            (y.cycles, y.start, y.end),
            "{what}: op {k} {} {}",
            x.op,
            x.tensor
        );
    }
    assert_eq!(a.rec.records, b.rec.records, "{what}: typed stages");
    assert_eq!(a.rec.tasks, b.rec.tasks, "{what}: tasks");
    assert_eq!(
        reference.report.total_cycles, closed.report.total_cycles,
        "{what}"
    );
    // The planner confirms its plans on a measuring engine: their joules too.
    assert_eq!(
        reference.report.energy_j(),
        closed.report.energy_j(),
        "{what}: energy"
    );
    Some(b.closed_form_charges())
}

/// Runs and transfers charged: (runs, in closed form, per PE).
#[derive(Default)]
struct Tally(u64, u64, u64);

impl Tally {
    fn add(&mut self, c: Option<(u64, u64)>) {
        if let Some((a, b)) = c {
            self.0 += 1;
            self.1 += a;
            self.2 += b;
        }
    }

    /// At least `runs` runs, and most transfers charged in closed form.
    fn assert_enough(&self, runs: u64) {
        eprintln!(
            "{} runs; transfers in closed form {}, per PE {}",
            self.0, self.1, self.2
        );
        assert!(self.0 >= runs, "only {} runs", self.0);
        assert!(
            self.1 > 2 * self.2,
            "closed form {} / per PE {}",
            self.1,
            self.2
        );
    }
}

/// `res` under each schedule.
fn both(res: &Resolved) -> [Resolved; 2] {
    [Schedule::Overlapped, Schedule::Sequential].map(|s| {
        let mut r = res.clone();
        r.schedule = s;
        r.mode = scenario::Mode::Timing;
        r
    })
}

#[test]
fn every_shipped_scenario_costs_the_same_in_closed_form() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<_> = [dir.clone(), dir.join("graphs")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    let mut ran = Tally::default();
    for f in files {
        let (sc, src) = scenario::load(&f).unwrap();
        for plan in scenario::plans_to_run(&sc) {
            let Ok(res) = scenario::resolve(&sc, &src, plan.as_deref(), &[], &Default::default())
            else {
                continue;
            };
            for r in both(&res) {
                let what = format!("{} {plan:?} {:?}", f.display(), r.schedule);
                ran.add(check(&r, &what));
            }
        }
    }
    ran.assert_enough(40);
}

#[test]
fn every_shared_graph_costs_the_same_in_closed_form() {
    let mut ran = Tally::default();
    for path in common::graphs::files() {
        let Ok((mut sc, mut src)) = mnsim_sim::load::load(&path) else {
            // Does not import (`sim/tests/import.rs` says why).
            continue;
        };
        let note = mnsim_sim::import::plan_auto(&mut sc, &mut src, &[], &Default::default());
        assert!(note.starts_with("planned "), "{}: {note}", path.display());
        let res = scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default()).unwrap();
        for r in both(&res) {
            let what = format!("{} {:?}", path.display(), r.schedule);
            let c = check(&r, &what);
            assert!(c.is_some(), "{what} did not run");
            ran.add(c);
        }
    }
    ran.assert_enough(40);
}

#[test]
fn random_programs_cost_the_same_in_closed_form() {
    let cases: u64 = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(160);
    let mut ran = Tally::default();
    for seed in 0..cases {
        for (res, text) in random_plans(seed.wrapping_mul(0xD1B5_4A32_D192_ED03)) {
            for r in both(&res) {
                ran.add(check(&r, &format!("{:?}\n{text}", r.schedule)));
            }
        }
    }
    ran.assert_enough(cases / 2);
}

/// Every plan of the random program of `seed` that resolves, with the program's text.
fn random_plans(seed: u64) -> Vec<(Resolved, String)> {
    let text = common::random::program(seed);
    let Ok(sc) = scenario::parse(&text, "t.ron") else {
        return Vec::new();
    };
    let src = scenario::Source {
        path: "t.ron".into(),
        text: text.clone(),
    };
    (scenario::plans_to_run(&sc).iter())
        .filter_map(|plan| {
            scenario::resolve(&sc, &src, plan.as_deref(), &[], &Default::default()).ok()
        })
        .map(|res| (res, text.clone()))
        .collect()
}

/// The planner times its hand plans and its confirmed plans one after another on one
/// engine (`plan::Timer`, which keeps its memos across runs): every run reports as on a
/// new engine, whatever ran on it before (every plan of the shipped scenarios under both
/// schedules, then random programs, runs that fail among them).
#[test]
fn timing_runs_on_one_engine_report_as_on_new_ones() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    let mut programs: Vec<(Resolved, String)> = Vec::new();
    for f in files {
        let (sc, src) = scenario::load(&f).unwrap();
        for plan in scenario::plans_to_run(&sc) {
            if let Ok(res) = scenario::resolve(&sc, &src, plan.as_deref(), &[], &Default::default())
            {
                for r in both(&res) {
                    programs.push((r, format!("{} {plan:?}", f.display())));
                }
            }
        }
    }
    for seed in 0..40u64 {
        programs.extend(random_plans(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    }
    // The timer keeps its engine for the next run on the same machine and schedule:
    // programs of one machine and schedule go one after another.
    let key = |r: &Resolved| format!("{:?} {:?}", r.schedule, r.machine);
    programs.sort_by_cached_key(|(r, _)| key(r));
    let mut timer = mnsim_sim::plan::Timer::default();
    let (mut ran, mut failed, mut after) = (0, 0, 0);
    let mut last: Option<String> = None;
    for (res, what) in &programs {
        let alone = mnsim_sim::plan::Timer::default().time(res, false);
        assert_eq!(timer.time(res, false), alone, "{what}");
        if last.as_deref() == Some(key(res).as_str()) && alone.is_ok() {
            after += 1;
        }
        last = Some(key(res));
        match alone {
            Ok(_) => ran += 1,
            Err(_) => failed += 1,
        }
    }
    assert!(
        ran >= 60 && failed >= 1 && after >= 30,
        "{ran} ran ({after} after another of their machine), {failed} failed"
    );
}
