//! The planner on every real graph of `scenarios/workloads/graphs/`: each plans within its time
//! limit (which covers the whole planning, candidates included), says how much of the
//! space it covered, and is never slower than the import's default layouts (a seed)
//! under either schedule.

mod common;

use mnsim_sim::import::{self, Options, Strides};
use mnsim_sim::plan::{self, PlanOptions};
use mnsim_sim::scenario::{self, Mode, PlanValue, Source};
use mnsim_sim::timeline::Schedule;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::graphs::files as graph_files;

/// The graph at `path` imported for mncore2, with the source the scenario's errors
/// point into (named after the file).
fn imported(path: &Path) -> (scenario::Scenario, Source) {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    // Its input strides are not dense: it imports with `--strides row-major`.
    let strides = if name == "matmul_select.json" {
        Strides::RowMajor
    } else {
        Strides::File
    };
    let file = Source {
        path: path.display().to_string(),
        text: std::fs::read_to_string(path).unwrap(),
    };
    let opts = Options {
        strides,
        ..Options::default()
    };
    let imp = import::import(&file, &opts).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let sc = scenario::parse(&imp.text, &name).unwrap();
    let src = Source {
        path: name,
        text: imp.text,
    };
    (sc, src)
}

/// Timing cycles of `plan` of `sc` with `layouts` (an independent run).
fn cycles(
    sc: &scenario::Scenario,
    src: &scenario::Source,
    plan: &str,
    layouts: &[(String, String)],
) -> u64 {
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

#[test]
fn every_graph_plans_within_its_time_limit_and_never_slower_than_its_default_layouts() {
    let limit = Duration::from_secs(1);
    let mut table = Vec::new();
    let files = graph_files();
    assert!(files.len() >= 20, "{}", files.len());
    for (i, path) in files.iter().enumerate() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let (mut sc, src) = imported(path);
        // Both schedules over the files, alternately (every file once, to keep it short).
        let schedule = [Schedule::Overlapped, Schedule::Sequential][i % 2];
        sc.schedule = schedule;
        let mut opts = PlanOptions::default();
        opts.search.time_limit = Some(limit);
        let o = plan::plan_with(
            &sc,
            &src,
            "auto",
            &[],
            &BTreeMap::new(),
            &opts,
            &mut |_, _| {},
        )
        .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let default = cycles(&sc, &src, "default", &[]);
        let best = &o.best[0];
        assert!(
            best.total_cycles <= default,
            "{name} ({}): planned {}, default {default}",
            schedule.name(),
            best.total_cycles
        );
        if best.inserted.is_empty() {
            assert_eq!(cycles(&sc, &src, "auto", &best.layouts), best.total_cycles);
        }
        // The search stops at the limit; the confirming runs after it are short.
        assert!(
            o.seconds <= limit.as_secs_f64() + 0.5,
            "{name}: searched {:.2} s",
            o.seconds
        );
        assert!(o.total_seconds < 15.0, "{name}: {:.2} s", o.total_seconds);
        // Coverage is reported: every variable had at least one candidate tried.
        assert_eq!(o.tried.len(), o.candidates.len());
        assert!(o.tried.iter().all(|&t| t >= 1), "{name}: {:?}", o.tried);
        assert!(o.complete || o.timed_out || o.evaluated > 0);
        table.push(format!(
            "{name}: {} cycles ({}; default {default}) planned in {:.2} s, {} evaluated",
            best.total_cycles,
            schedule.name(),
            o.total_seconds,
            o.evaluated
        ));
    }
    eprintln!("{}", table.join("\n"));
}

/// A search bound by work alone (as `run` plans a graph) stops at the same point on
/// every run: the same evaluations, the same plan, whatever the machine's speed.
#[test]
fn a_work_budget_gives_the_same_plan_every_time() {
    let path = graph_files()
        .into_iter()
        .find(|p| p.ends_with("MHA-GPT-inf-fp32-bs1.json"))
        .expect("the GPT attention graph");
    let (sc, src) = imported(&path);
    let once = |work: u64| {
        let mut opts = PlanOptions::default();
        opts.search.time_limit = None;
        opts.search.work_limit = Some(work);
        let o = plan::plan_with(
            &sc,
            &src,
            "auto",
            &[],
            &BTreeMap::new(),
            &opts,
            &mut |_, _| {},
        );
        o.unwrap()
    };
    let (a, b) = (once(40_000), once(40_000));
    assert!(a.work_spent && !a.timed_out, "the budget stops the search");
    assert_eq!((a.evaluated, a.measured), (b.evaluated, b.measured));
    assert_eq!(a.best[0].layouts, b.best[0].layouts);
    assert_eq!(a.best[0].total_cycles, b.best[0].total_cycles);
    // A larger budget goes further, and is never worse than the hand plans it starts
    // from. (Not always better than a smaller one: the phases share the budget, so a
    // larger one moves where each phase stops; docs/planner.md.)
    let c = once(120_000);
    assert!(c.evaluated > a.evaluated);
    for h in c.hand_plans.iter().filter(|h| h.seed) {
        if let Some(cycles) = h.total_cycles {
            assert!(c.best[0].total_cycles <= cycles, "{}: {cycles}", h.plan);
        }
    }
}
