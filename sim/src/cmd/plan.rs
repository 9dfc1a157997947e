//! `mnsim plan S.ron [--json] [--top K] [--time-limit S] [--write NAME]`: choose layouts
//! for the plan variables set to `Any`, beside the file's hand plans.

use super::run::ScenarioArgs;
use clap::Args;
use miette::{Report, miette};
use mnsim_sim::plan::{self, Outcome, PlanOptions, Planned};
use mnsim_sim::scenario::{self, PlanValue, Scenario};
use serde_json::{Map, Value, json};
use std::io::IsTerminal;

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub s: ScenarioArgs,
    /// Plan only this plan (default: every plan with an `Any` variable).
    #[arg(long)]
    pub plan: Option<String>,
    /// Print the result as JSON (one object; an array when several plans are planned).
    #[arg(long)]
    pub json: bool,
    /// Show the K best plans found (each confirmed by a timing run).
    #[arg(long, default_value_t = mnsim_sim::import::PLAN_TOP, value_name = "K")]
    pub top: usize,
    /// Stop planning after this many seconds and keep the best found (the plan may then
    /// depend on the machine's speed and load). No time limit unless given.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Stop searching after this much work and keep the best found: an evaluation
    /// counts 1, a run of the measuring engine 4, 50 walk steps 1, 2 legality checks 1
    /// (some 1.5–4 µs a unit). Unlike a time limit, it stops at the same point on every
    /// machine, so the plan is the same everywhere. Default: 300,000 when no
    /// --time-limit is given.
    #[arg(long, value_name = "UNITS")]
    pub work: Option<u64>,
    /// Plan at most this many rounds: each after the first plans again from the best
    /// plan, its Relayouts written into the program, while that gains (1: plan once).
    #[arg(long, default_value_t = mnsim_sim::plan::rounds::ROUNDS, value_name = "N")]
    pub rounds: usize,
    /// Add the chosen plan to the scenario file under this name.
    #[arg(long, value_name = "NAME")]
    pub write: Option<String>,
    /// What to minimise: cycles, energy (joules) or edp (joules × seconds).
    #[arg(long, value_enum, default_value = "cycles")]
    pub objective: super::sweep::ObjectiveArg,
}

/// Thousands separators.
fn th(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The plan's variables in the file's order, `Any` ones replaced by the choice. An `Any`
/// the search did not choose (a `buffers:` count) ran at the default, written `auto`:
/// every variable has a value, so the printed plan runs as it was timed.
fn filled(sc: &Scenario, plan: &str, best: &Planned) -> Vec<(String, String)> {
    sc.plans[plan]
        .iter()
        .map(
            |(v, val)| match (val, best.layouts.iter().find(|(x, _)| x == v)) {
                (_, Some((_, l))) => (v.clone(), l.clone()),
                (PlanValue::Layout(l), None) => (v.clone(), l.clone()),
                (PlanValue::Any, None) => (v.clone(), "auto".to_string()),
            },
        )
        .collect()
}

/// A count that may be astronomically large: exact below a million, else `≈ 3.4·10^38`
/// (`≥` when it saturated the counter).
fn big(n: u128) -> String {
    if n < 1_000_000 {
        return th(n as u64);
    }
    let l = (n as f64).log10();
    let e = l.floor();
    let m = 10f64.powf(l - e);
    let sign = if n == u128::MAX { "≥" } else { "≈" };
    format!("{sign} {m:.1}·10^{e}")
}

/// How much of the space the search covered: the share of assignments evaluated and,
/// for a local search, how many of each variable's candidates it tried.
fn coverage(o: &Outcome) -> String {
    if o.complete {
        return "100% of the space".into();
    }
    let why = if o.timed_out {
        "time limit reached"
    } else if o.work_spent {
        "work budget spent"
    } else {
        "local optimum"
    };
    let share = o.evaluated as f64 / o.space.max(1) as f64;
    let pct = if share >= 1e-3 {
        format!("{:.1}%", share * 100.0)
    } else {
        format!("{share:.1e} of the assignments")
    };
    let (tried, total): (usize, usize) = o
        .tried
        .iter()
        .zip(&o.candidates)
        .fold((0, 0), |(a, b), (t, (_, n))| (a + t, b + n));
    let low = o
        .tried
        .iter()
        .zip(&o.candidates)
        .map(|(t, (v, n))| (*t as f64 / (*n).max(1) as f64, v))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let per_var = match low {
        Some((f, v)) => format!(
            "; {} of {} candidates tried ({:.0}%, fewest ${v} {:.0}%)",
            th(tried as u64),
            th(total as u64),
            tried as f64 / total.max(1) as f64 * 100.0,
            f * 100.0
        ),
        None => String::new(),
    };
    format!("{pct}{per_var} ({why})")
}

fn to_json(o: &Outcome, sc: &Scenario) -> Value {
    let best = &o.best[0];
    let layouts: Map<String, Value> = best
        .layouts
        .iter()
        .map(|(v, l)| (v.clone(), Value::String(l.clone())))
        .collect();
    let ins = |p: &Planned| -> Vec<Value> {
        p.inserted
            .iter()
            .map(|i| {
                let mut v = json!({"before_op": i.before, "op": "Relayout", "tensor": i.tensor_name, "layout": i.layout, "cycles": i.cycles});
                if let Some(a) = i.algorithm {
                    v["algorithm"] = json!(a.name());
                }
                v
            })
            .collect()
    };
    // The algorithms chosen for the program's collectives over networks, when it runs
    // any (a plan of one board has none, and no such key).
    let with_algs = |mut v: Value, p: &Planned| -> Value {
        if !p.algorithms.is_empty() {
            v["algorithms"] = (p.algorithms.iter())
                .map(|c| json!({"op": c.op, "algorithm": c.algorithm.name(), "networks_own": c.networks_own}))
                .collect();
        }
        v
    };
    json!({
        "plan": o.plan,
        "objective": o.objective.name(),
        "best": with_algs(json!({
            "total_cycles": best.total_cycles,
            "energy_j": best.energy_j,
            "layouts": layouts,
            "plan": filled(sc, &o.plan, best).into_iter().map(|(k, v)| (k, Value::String(v))).collect::<Map<String, Value>>(),
            "inserted": ins(best),
        }), best),
        "top": o.best.iter().map(|p| with_algs(json!({
            "total_cycles": p.total_cycles,
            "energy_j": p.energy_j,
            "layouts": p.layouts.iter().map(|(v, l)| (v.clone(), Value::String(l.clone()))).collect::<Map<String, Value>>(),
            "inserted": ins(p),
        }), p)).collect::<Vec<_>>(),
        "rounds": o.rounds.iter().map(|r| json!({"total_cycles": r.total_cycles, "seconds": r.seconds})).collect::<Vec<_>>(),
        "one_board": o.one_board.map(|b| json!({"total_cycles": b.total_cycles, "seconds": b.seconds})),
        "hand_plans": o.hand_plans.iter().map(|h| json!({
            "plan": h.plan, "total_cycles": h.total_cycles, "energy_j": h.energy_j, "error": h.error, "seed": h.seed,
        })).collect::<Vec<_>>(),
        "candidates": o.candidates.iter().map(|(v, n)| (v.clone(), json!(n))).collect::<Map<String, Value>>(),
        "pruned": o.pruned,
        "method": o.method,
        "space": o.space.to_string(),
        "complete": o.complete,
        "timed_out": o.timed_out,
        "work_spent": o.work_spent,
        "evaluated": o.evaluated,
        "bounded": o.bounded,
        "measured_ops": o.measured,
        "work": {
            "total": mnsim_sim::plan::search::work_of(&o.work),
            "evaluations": o.work.evaluated,
            "engine_runs": o.work.runs,
            "booked": o.work.booked,
            "legality_checks": o.work.legal_checks,
        },
        "seconds": o.seconds,
        "total_seconds": o.total_seconds,
        "tried": o.candidates.iter().zip(&o.tried).map(|((v, _), t)| (v.clone(), json!(t))).collect::<Map<String, Value>>(),
        "evaluations_per_second": o.rate(),
        "bound_cycles": o.bound_cycles,
        "bound_resource": o.bound_resource,
        "times_bound": times_bound(best.total_cycles, o.bound_cycles),
    })
}

/// `cycles ÷ bound`, `None` without a bound.
fn times_bound(cycles: u64, bound: u64) -> Option<f64> {
    (bound > 0).then(|| cycles as f64 / bound as f64)
}

fn print_text(o: &Outcome, sc: &Scenario) -> Result<(), Report> {
    let best = &o.best[0];
    let hand_best = o
        .hand_plans
        .iter()
        .filter_map(|h| h.total_cycles.map(|c| (c, &h.plan)))
        .min();
    let versus = match hand_best {
        Some((c, p)) if c > best.total_cycles => format!(
            " — {:.2}× faster than the best hand plan `{p}` ({})",
            c as f64 / best.total_cycles.max(1) as f64,
            th(c)
        ),
        Some((c, p)) if c == best.total_cycles => {
            format!(" — as fast as the best hand plan `{p}`")
        }
        Some((c, p)) => format!(
            " — the hand plan `{p}` ({}) is faster: it differs in fixed variables",
            th(c)
        ),
        None => String::new(),
    };
    outln!(
        "plan {}: {} cycles, {} (timing run){versus}",
        o.plan,
        th(best.total_cycles),
        mnsim_reports::energy::human_joules(best.energy_j)
    );
    if let Some(x) = times_bound(best.total_cycles, o.bound_cycles) {
        outln!(
            "  {x:.2}× the bound of {} cycles (set by {}: the fewest any layout could give)",
            th(o.bound_cycles),
            o.bound_resource
        );
    }
    if o.objective != mnsim_reports::Objective::Cycles {
        outln!("  objective: {} (plans ranked by it)", o.objective.name());
    }
    let counts: Vec<String> = o
        .candidates
        .iter()
        .map(|(v, n)| format!("${v} {}", th(*n as u64)))
        .collect();
    outln!(
        "  search: {} over {} assignments (candidates {}; {} pruned as illegal)",
        o.method,
        big(o.space),
        counts.join(", "),
        th(o.pruned as u64)
    );
    outln!(
        "  {} evaluated in {:.2} s ({}/s, {} decided by a bound, {} ops measured; search {:.2} s): {}",
        th(o.evaluated),
        o.total_seconds,
        th(o.rate() as u64),
        th(o.bounded),
        th(o.measured),
        o.seconds,
        coverage(o)
    );
    if !o.hand_plans.is_empty() {
        let hs: Vec<String> = o
            .hand_plans
            .iter()
            .map(|h| match h.total_cycles {
                Some(c) => format!(
                    "{} {}{}",
                    h.plan,
                    th(c),
                    if h.seed { " (seed)" } else { "" }
                ),
                None => format!("{} (does not run)", h.plan),
            })
            .collect();
        outln!("  hand plans: {}", hs.join(" · "));
    }
    if let Some(b) = o.one_board {
        outln!(
            "  one board first: {} cycles on one board, planned in {:.2} s; that plan, a copy on every board, seeded the search",
            th(b.total_cycles),
            b.seconds
        );
    }
    if o.rounds.len() > 1 {
        let rs: Vec<String> = (o.rounds.iter())
            .map(|r| format!("{} ({:.2} s)", th(r.total_cycles), r.seconds))
            .collect();
        outln!(
            "  rounds: {} (each from the round before's best plan, its Relayouts in the program)",
            rs.join(" → ")
        );
    }
    if o.best.len() > 1 {
        let t: Vec<String> = o
            .best
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!(
                    "{}. {} ({})",
                    i + 1,
                    th(p.total_cycles),
                    mnsim_reports::energy::human_joules(p.energy_j)
                )
            })
            .collect();
        outln!("  best found: {}", t.join("  "));
    }
    for (v, l) in &best.layouts {
        outln!("  ${v} = {l}");
    }
    for i in &best.inserted {
        let alg = i
            .algorithm
            .map_or_else(String::new, |a| format!(", algorithm: {:?}", a.name()));
        outln!(
            "  inserted before op {}: Relayout(tensor: {:?}, layout: {:?}{alg}),  // {} cycles",
            i.before,
            i.tensor_name,
            i.layout,
            th(i.cycles)
        );
    }
    for c in &best.algorithms {
        let own = if c.networks_own {
            "the network's own"
        } else {
            "not the network's own"
        };
        outln!(
            "  op {} ({}): algorithm: {:?}  // the cheapest of ring, tree, direct; {own}",
            c.op,
            sc.program.get(c.op).map_or("?", |o| o.name()),
            c.algorithm.name()
        );
    }
    // The plan with its choices, ready to paste into the scenario.
    let vars: Vec<String> = filled(sc, &o.plan, best)
        .iter()
        .map(|(v, l)| format!("{v:?}: {l:?}"))
        .collect();
    outln!("  \"{}\": {{{}}},", o.plan, vars.join(", "));
    Ok(())
}

pub fn run(a: PlanArgs) -> Result<(), Report> {
    let binds = scenario::parse_binds(&a.s.binds)?;
    let (sc, src) = a.s.load()?;
    let sets = scenario::knob_sets(&sc, &src, &a.s.sets)?;
    let time_limit = a
        .time_limit
        .map(|t| super::parse_seconds("--time-limit", t))
        .transpose()?;
    if let Some(p) = &a.plan
        && !sc.plans.contains_key(p)
    {
        return Err(miette!("error: {}: no plan `{p}`", src.path));
    }
    let plans: Vec<String> = match &a.plan {
        Some(p) => vec![p.clone()],
        None => sc
            .plans
            .iter()
            .filter(|(_, vars)| vars.values().any(|v| *v == PlanValue::Any))
            .map(|(p, _)| p.clone())
            .collect(),
    };
    if plans.is_empty() {
        return Err(miette!(
            "error: {}: no plan sets a variable to `Any`: nothing to choose",
            src.path
        ));
    }
    if a.write.is_some() && plans.len() != 1 {
        return Err(miette!(
            "error: --write adds one plan; the file has {} plans with `Any` variables: choose one with --plan",
            plans.len()
        ));
    }
    if let Some(name) = &a.write
        && sc.plans.contains_key(name)
    {
        return Err(miette!(
            "error: {}: the scenario already has a plan `{name}`: choose another name for --write",
            src.path
        ));
    }
    let mut opts = PlanOptions::default();
    opts.search.time_limit = time_limit;
    // Without a time limit, a work budget stops the search: the same plan everywhere.
    opts.search.work_limit = match (a.work, time_limit) {
        (Some(w), _) => Some(w),
        (None, None) => Some(mnsim_sim::import::PLAN_WORK),
        (None, Some(_)) => None,
    };
    opts.search.top = a.top.max(1);
    opts.objective = a.objective.into();
    opts.rounds = a.rounds.max(1);
    let mut outs: Vec<Outcome> = Vec::new();
    for p in &plans {
        outs.push(plan_one(&sc, &src, p, (&sets, &binds), &opts)?);
    }
    if let Some(name) = &a.write {
        write_plan(&a, &sc, &src, name, &outs[0], (&sets, &binds))?;
    }
    if a.json {
        let v: Vec<Value> = outs.iter().map(|o| to_json(o, &sc)).collect();
        let v = if v.len() == 1 {
            v.into_iter().next().unwrap_or(Value::Null)
        } else {
            Value::Array(v)
        };
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| miette!("error: {e}"))?
        );
    } else {
        for o in &outs {
            print_text(o, &sc)?;
        }
    }
    Ok(())
}

/// Plans `p` of `sc`, with a progress bar on a terminal.
fn plan_one(
    sc: &scenario::Scenario,
    src: &scenario::Source,
    p: &str,
    (sets, binds): (&[(String, f64)], &std::collections::BTreeMap<String, u64>),
    opts: &PlanOptions,
) -> Result<Outcome, Report> {
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {human_pos}/{human_len} assignments {per_sec} {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b.set_message(format!("planning {p}"));
        b
    });
    let mut progress = |done: u64, total: u64| {
        if let Some(b) = &bar {
            b.set_length(total.max(done));
            b.set_position(done);
        }
    };
    let o = plan::plan_with(sc, src, p, sets, binds, opts, &mut progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    o
}

/// Writes the best plan of `o` into the scenario file as plan `name` (`--write`), once
/// the new text loads and the plan resolves.
fn write_plan(
    a: &PlanArgs,
    sc: &scenario::Scenario,
    src: &scenario::Source,
    name: &str,
    o: &Outcome,
    (sets, binds): (&[(String, f64)], &std::collections::BTreeMap<String, u64>),
) -> Result<(), Report> {
    let best = &o.best[0];
    let ops: Vec<(usize, String)> = plan::inserted_ops(&best.inserted)
        .iter()
        .map(|(at, op)| (*at, scenario::pretty::op_text(op)))
        .collect();
    let vars = filled(sc, &o.plan, best);
    // The algorithms chosen for the program's own ops (an inserted Relayout's is in its
    // text above).
    let fields: Vec<(usize, String)> = (best.algorithms.iter())
        .map(|c| (c.op, format!("algorithm: {:?}", c.algorithm.name())))
        .collect();
    // The new text must load and the new plan resolve before it replaces the old.
    let check = |text: &str, shown: &str| -> Result<(), Report> {
        let sc2 = scenario::parse(text, shown)?;
        let src2 = scenario::Source {
            path: shown.to_string(),
            text: text.to_string(),
        };
        scenario::resolve(&sc2, &src2, Some(name), sets, binds).map(|_| ())
    };
    let imported = mnsim_sim::import::is_imported(src);
    let w = plan::write::write_back(
        &a.s.scenario,
        &src.text,
        imported,
        name,
        (&vars, &ops, &fields),
        &check,
    )?;
    if let Some(n) = &w.note {
        eprintln!("note: {n}");
    }
    if !ops.is_empty() && !a.json {
        eprintln!(
            "note: the plan needs {} Relayout(s) the program did not have: they are written into \
             the program before the ops that read them (every plan of the file runs them)",
            ops.len()
        );
    }
    if !fields.is_empty() && !a.json {
        eprintln!(
            "note: the plan names the algorithm of {} op(s)' collectives over the network: \
             written into those ops (every plan of the file runs them so)",
            fields.len()
        );
    }
    if !a.json {
        eprintln!("wrote plan `{name}` to {}", w.path.display());
    }
    Ok(())
}
