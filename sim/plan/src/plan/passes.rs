//! The planner's passes, in the order [`super::plan_with`] runs them: the file's hand
//! plans (their runs, and the seeds among them), pruning, the starts (hand plans, joint
//! seeds and their stream variants), the search, and the confirming timing runs.

use super::model::{self, LayoutId, Model};
use super::{
    ChosenAlgorithm, HandPlan, InsertedOp, JOINT_WIDTH, PlanOptions, Planned, apply,
    hand_plan_names, search,
};
use crate::program::{EntityRef as _, LayoutRef, OpKind};
use crate::scenario::{self, PlanValue, Resolved, Scenario, Source};
use mnsim_arch::machine::Algorithm;
use mnsim_reports::Objective;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The file's hand plans: their runs, the seeds among them (those that agree with the
/// planned plan on its fixed variables and define all its `Any` ones), and the longest
/// of their runs (what each confirming run will take).
pub(super) struct Hands {
    pub plans: Vec<HandPlan>,
    pub seeds: Vec<Vec<LayoutId>>,
    pub one_run: Duration,
    /// Whether this is a whole model's later round (docs/planner.md, rounds): the round
    /// before's best is among the seeds, and the search is lighter ([`search`]).
    pub light: bool,
}

/// Runs the hand plans of `sc` and seeds `model` with those that agree with `plan`.
pub(super) fn hand_plans(
    sc: &Scenario,
    src: &Source,
    (plan, sets, binds): (&str, &[(String, f64)], &BTreeMap<String, u64>),
    model: &mut Model,
) -> Hands {
    let fixed: BTreeMap<&String, &PlanValue> = sc.plans[plan]
        .iter()
        .filter(|(_, v)| **v != PlanValue::Any)
        .collect();
    let mut hands = Hands {
        plans: Vec::new(),
        seeds: Vec::new(),
        one_run: Duration::ZERO,
        light: false,
    };
    for name in hand_plan_names(sc) {
        let hp = &sc.plans[&name];
        let agrees = fixed.iter().all(|(k, v)| hp.get(*k) == Some(*v))
            && model.vars.iter().all(|v| hp.contains_key(&v.name));
        let hres = match scenario::resolve(sc, src, Some(&name), sets, binds) {
            Ok(r) => r,
            Err(e) => {
                hands.plans.push(HandPlan {
                    plan: name,
                    total_cycles: None,
                    energy_j: None,
                    error: Some(format!("{e}")),
                    seed: false,
                });
                continue;
            }
        };
        let t0 = Instant::now();
        // A hand plan runs as `run` runs it: each network's own algorithm.
        let run = model.timer.time(&hres, false);
        hands.one_run = hands.one_run.max(t0.elapsed());
        let mut seed = false;
        if agrees && let Some(pick) = seed_of(model, &hres) {
            hands.seeds.push(pick);
            seed = true;
        }
        hands.plans.push(HandPlan {
            plan: name,
            total_cycles: run.as_ref().ok().map(|r| r.total_cycles),
            energy_j: run.as_ref().ok().map(|r| r.energy_j()),
            error: run.err().map(|e| e.to_string()),
            seed,
        });
    }
    hands
}

/// The layouts `res` (the program resolved with a plan) gives `model`'s variables, as
/// a seed (each layout added to its variable's candidates); `None` where a variable's
/// first op has no bound layout.
pub(super) fn seed_of(model: &mut Model, res: &Resolved) -> Option<Vec<LayoutId>> {
    (0..model.vars.len())
        .map(|v| {
            let op = crate::program::OpId::new(model.vars[v].ops[0]);
            match res.program.ops.get(op).and_then(|o| o.layout.as_ref()) {
                Some(LayoutRef::Bound(l)) => Some(model.seed(v, l)),
                _ => None,
            }
        })
        .collect()
}

/// Prunes the candidates `model` can prove illegal, keeping the seeds' whatever;
/// returns how many it dropped, or the (tensor, variable) left with no candidate.
pub(super) fn prune(model: &mut Model, seeds: &[Vec<LayoutId>]) -> Result<usize, (String, String)> {
    let pruned = model.prune();
    // Seeds stay even if pruning would drop them (pruning keeps nothing it cannot
    // prove illegal, but a seed is kept whatever).
    for s in seeds {
        for (vi, &id) in s.iter().enumerate() {
            model.vars[vi].add_first(id);
        }
    }
    match model.vars.iter().find(|v| v.candidates.is_empty()) {
        Some(v) => Err((model.tensor(v.tensor).name.clone(), v.name.clone())),
        None => Ok(pruned),
    }
}

/// The search's starts: the seeds, the joint seeds (where `joint`), and the best stream
/// variant of each promising start.
pub(super) fn starts(
    model: &mut Model,
    seeds: &[Vec<LayoutId>],
    opts: &PlanOptions,
    started: Instant,
    joint: bool,
) -> Vec<Vec<LayoutId>> {
    // Joint seeds: layouts chosen together for each kernel's operands (a plan from
    // nothing starts from assignments that run). Searched from like the hand plans, but
    // only the search's best of them are confirmed.
    // They take at most half of the work budget, and stop at the time limit's half.
    let mut starts = seeds.to_vec();
    let work0 = search::work(model);
    let joint_work = opts.search.work_limit.map(|w| work0.saturating_add(w / 2));
    let joint_deadline = opts
        .search
        .time_limit
        .and_then(|t| started.checked_add(t.saturating_sub(started.elapsed()) / 2));
    let mut stop = |m: &Model| {
        joint_work.is_some_and(|w| search::work(m) >= w)
            || joint_deadline.is_some_and(|d| Instant::now() >= d)
    };
    let joints = match joint {
        true => model.joint_seeds(JOINT_WIDTH, &mut stop),
        false => Vec::new(),
    };
    for j in joints {
        if !starts.contains(&j) {
            starts.push(j);
        }
    }
    // Every start streamed too (each variable's layout with `Time` steps): a stream
    // pays only when its producer and consumers all step, which moves of one variable
    // at a time do not reach. The best variant that beats its start is searched from.
    // Only starts that run and score within 1.5× of the best start's are streamed.
    let evals: Vec<model::Eval> = starts.iter().map(|s| model.evaluate(s)).collect();
    let best_score = evals
        .iter()
        .filter(|e| e.failure.is_none())
        .map(|e| e.score)
        .min();
    for (s, e) in starts.clone().into_iter().zip(evals) {
        let promising =
            e.failure.is_none() && best_score.is_some_and(|b| e.score <= b.saturating_add(b / 2));
        if !promising {
            continue;
        }
        if let Some((p, _)) = super::variants::streamed_variant(model, &s, &e)
            && !starts.contains(&p)
        {
            starts.push(p);
        }
    }
    // The best starts spread whole over each level (`spread.rs`): a few dozen
    // evaluations, outside the joint seeds' budget (they may have spent it), within
    // the time limit.
    let deadline = (opts.search.time_limit).and_then(|t| started.checked_add(t));
    let mut late = |_: &Model| deadline.is_some_and(|d| Instant::now() >= d);
    for p in super::spread::spread_starts(model, &starts, &mut late) {
        if !starts.contains(&p) {
            starts.push(p);
        }
    }
    starts
}

/// The objectives the search passes minimise, in order, whatever the plan's objective:
/// so every objective confirms the same assignments and ranks them its own way, and the
/// plan chosen for one is never worse by it than the plan another would choose.
pub(super) const PASSES: [Objective; 3] = [Objective::Cycles, Objective::Energy, Objective::Edp];

/// The share of the search's time of each pass of [`PASSES`], in sixths; and of the work
/// budget, against the first's: the cycles pass has the whole budget (the search a plan
/// had before there were passes), the energy and energy × delay passes a quarter of it
/// each, and they also start from the best of the passes before them.
const PASS_SIXTHS: [u32; 3] = [4, 1, 1];

/// The search from `starts`, within what is left of the limits (less the confirming
/// runs), once per objective of [`PASSES`] (each pass also from the best of the passes
/// before it, on the model's memos), and the stream variants of each pass's best: each
/// pass's best first, in pass order; and the first pass's starts. A whole model's later
/// round (`hands.light`, docs/planner.md, rounds) searches once, by the plan's own
/// objective on the whole budget, and without the joint seeds: the round before's best,
/// a seed, starts it, and the joint seeds would be the first round's again (searching
/// from them, or by the other objectives, changed no second round's plan of the three
/// models, and took a third of its time; a block's second round gains from them).
pub(super) fn search(
    model: &mut Model,
    hands: &Hands,
    opts: &PlanOptions,
    started: Instant,
    progress: &mut dyn FnMut(u64, u64),
) -> (search::Searched, Vec<Vec<LayoutId>>) {
    let top = opts.search.top.max(1) + hands.seeds.len();
    // The confirming runs after the search: as long as a hand plan's run each, for every
    // pass's best and the seeds.
    let passes: Vec<(Objective, u32)> = match hands.light {
        true => vec![(opts.objective, PASS_SIXTHS[0])],
        false => PASSES.iter().copied().zip(PASS_SIXTHS).collect(),
    };
    let sixths: Vec<u32> = passes.iter().map(|p| p.1).collect();
    let confirm = hands
        .one_run
        .saturating_mul((passes.len() * top + hands.seeds.len()) as u32);
    let mut all: Option<search::Searched> = None;
    let mut before_best: Vec<Vec<LayoutId>> = Vec::new();
    let mut first_starts: Vec<Vec<LayoutId>> = Vec::new();
    let (mut done, mut planned) = (0u64, 0u64);
    for (pass, &(objective, sixth)) in passes.iter().enumerate() {
        model.objective = objective;
        // The pass's share of the work budget: the whole for the first.
        let share = u64::from(sixth);
        let mut popts = opts.clone();
        popts.search.top = top;
        popts.search.work_limit = (opts.search.work_limit).map(|w| match pass {
            0 => w,
            _ => w.saturating_mul(share) / u64::from(sixths[0]),
        });
        // The pass's own starts (ranked by its objective), then the best of the passes
        // before it.
        let mut from = starts(model, &hands.seeds, &popts, started, !hands.light);
        if pass == 0 {
            first_starts = from.clone();
        }
        for p in &before_best {
            if !from.contains(p) {
                from.push(p.clone());
            }
        }
        // Its share of what is left of the limit, less the confirming runs (at most half
        // of what is left), against the passes still to run.
        let later: u32 = sixths[pass..].iter().sum();
        popts.search.time_limit = opts.search.time_limit.map(|t| {
            let left = t.saturating_sub(started.elapsed());
            left.saturating_sub(confirm.min(left / 2)) * sixth / later
        });
        let sopts = popts.search;
        let before = model.evaluated;
        let mut offset = |e: u64, p: u64| progress(done + e, planned + p);
        let mut found = search::search(model, &from, &sopts, &mut offset);
        done += model.evaluated - before;
        planned += model.evaluated - before;
        // The pass's best streamed too (a layout it reached by moves, not a start): an
        // improving variant is confirmed first.
        super::variants::with_stream_variants(model, &mut found.best);
        for f in &found.best {
            if !before_best.contains(&f.pick) {
                before_best.push(f.pick.clone());
            }
        }
        all = Some(match all {
            None => found,
            Some(a) => joined(a, found),
        });
    }
    (all.expect("at least one pass"), first_starts)
}

/// The share of the work budget of the spread pass ([`spread_pass`]), against the
/// cycles pass's whole budget: a half.
const SPREAD_PASS_SHARE: u64 = 2;

/// The spread passes, each the beam it spreads with ([`super::spread::How`]'s: how many
/// plans of each level are spread over the next): one, the plan each level's best rule
/// gives; then six, the best few of each level, searched from where they differ from the
/// first pass's.
pub(super) const SPREAD_BEAMS: [usize; 2] = [1, 6];

/// The spread pass (docs/planner.md, spread starts): the first pass's starts and the
/// best plans `found` so far spread whole over each level of the machine
/// ([`super::spread::spread_over`]; a whole model's repaired where an op refuses them),
/// then searched from with cycles as the objective, on a share of the work budget of its
/// own ([`SPREAD_PASS_SHARE`]). The pass runs after the others so that it cannot change
/// what they find: its plans join theirs only where its best beats their best by the
/// model's cycles, and the confirming runs choose among them all. Each level spreads
/// the `beam` best plans of the level before (a whole model only one: its spread plans
/// are repaired, and a wider beam more than doubled its planning time); the spread plans
/// in `done` (an earlier spread pass searched from them) are not searched again, and
/// those searched here join `done`. `None` where the pass finds nothing better (the
/// model is left as it was), has nothing new to search from, or does not apply (a
/// machine of one position per level).
pub(super) fn spread_pass(
    model: &mut Model,
    (starts, found): (&[Vec<LayoutId>], &search::Searched),
    (beam, done): (usize, &mut Vec<Vec<LayoutId>>),
    opts: &PlanOptions,
    started: Instant,
    progress: &mut dyn FnMut(u64, u64),
) -> Option<search::Searched> {
    let (levels, repair) = super::spread::pass_levels(model);
    // A whole model (its spread plans repaired) spreads with the first beam only: each of
    // its evaluations walks thousands of ops, and a wider beam more than doubled its
    // planning time.
    if levels.is_empty() || (repair && beam > SPREAD_BEAMS[0]) {
        return None;
    }
    let deadline = (opts.search.time_limit).and_then(|t| started.checked_add(t));
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return None;
    }
    let objective = model.objective;
    let was = model.chain_inserts();
    model.objective = Objective::Cycles;
    // The plan to beat: the best by cycles of what the passes found, as the model scores
    // it now.
    let searched: Vec<Vec<LayoutId>> = found.best.iter().map(|f| f.pick.clone()).collect();
    let bar = (searched.iter())
        .map(|p| model.evaluate(p))
        .filter(|e| e.failure.is_none())
        .map(|e| e.key())
        .min();
    let mut late = |_: &Model| deadline.is_some_and(|d| Instant::now() >= d);
    // Spread from the starts (before the search's moves) and from the search's best.
    let how = || super::spread::How {
        levels: &levels,
        beat: false,
        repair,
        beam,
    };
    let mut spread = super::spread::spread_over(model, starts, how(), &mut late);
    // The search's best spread too, unless they are the starts just spread (the search
    // kept a start): a whole model's spread from them is some 3 s of placements that
    // give the same plans.
    if !super::spread::spreads_within(model, &searched, starts) {
        for p in super::spread::spread_over(model, &searched, how(), &mut late) {
            if !spread.contains(&p) {
                spread.push(p);
            }
        }
    }
    // And from the starts themselves that the model now scores above the passes' best:
    // a joint seed that failed in the first pass may run whole now that the search's
    // chain phase lets Relayouts go before tied variables' first readers.
    for p in starts {
        let e = model.evaluate(p);
        let beats = e.failure.is_none() && bar.is_none_or(|k| e.key() < k);
        if beats && !spread.contains(p) {
            spread.push(p.clone());
        }
    }
    // What an earlier spread pass searched from is not searched again.
    spread.retain(|p| !done.contains(p));
    done.extend(spread.iter().cloned());
    let mut out = None;
    if !spread.is_empty() {
        let mut sopts = opts.search.clone();
        sopts.top = opts.search.top.max(1);
        sopts.work_limit = (opts.search.work_limit).map(|w| w / SPREAD_PASS_SHARE);
        sopts.time_limit = (opts.search.time_limit)
            .map(|t| t.saturating_sub(started.elapsed()) / SPREAD_PASS_SHARE as u32);
        let mut searched = search::search(model, &spread, &sopts, progress);
        super::variants::with_stream_variants(model, &mut searched.best);
        let wins = (searched.best.first())
            .is_some_and(|b| b.eval.failure.is_none() && bar.is_none_or(|k| b.eval.key() < k));
        if wins {
            out = Some(searched);
        }
    }
    if out.is_none() {
        model.set_chain_inserts(was);
    }
    model.objective = objective;
    out
}

/// Two passes of the search as one: the first's method and space, both passes' best
/// (the first's first, an assignment once), evaluations, time and candidates tried.
pub(super) fn joined(mut a: search::Searched, b: search::Searched) -> search::Searched {
    for f in b.best {
        if !a.best.iter().any(|g| g.pick == f.pick) {
            a.best.push(f);
        }
    }
    for p in b.basins {
        if !a.basins.contains(&p) {
            a.basins.push(p);
        }
    }
    a.evaluated += b.evaluated;
    a.complete &= b.complete;
    a.timed_out |= b.timed_out;
    a.work_spent |= b.work_spent;
    a.seconds += b.seconds;
    for (m, n) in a.tried_mask.iter_mut().zip(&b.tried_mask) {
        for (x, y) in m.iter_mut().zip(n) {
            *x |= *y;
        }
    }
    a.tried = (a.tried_mask.iter())
        .map(|t| t.iter().filter(|x| **x).count())
        .collect();
    a
}

/// Confirms the search's best (`found`, best first) and the seeds with timing runs of
/// `res` under its schedule: the plans that ran, ranked by the objective (at most
/// `top`), and the first error met. The choice is the fastest confirmed, so it is never
/// slower than a seed even where the model's ranking and the run's schedule disagree.
pub(super) fn confirm(
    model: &mut Model,
    res: &Resolved,
    (found, seeds): (&[search::Found], &[Vec<LayoutId>]),
    opts: &PlanOptions,
    started: Instant,
) -> (Vec<Planned>, Option<String>) {
    let mut confirm: Vec<search::Found> = found.to_vec();
    for s in seeds {
        if !confirm.iter().any(|f| &f.pick == s) {
            let eval = model.evaluate(s);
            confirm.push(search::Found {
                pick: s.clone(),
                eval,
            });
        }
    }
    let mut best: Vec<Planned> = Vec::new();
    let mut last_error = None;
    for (k, f) in confirm.iter().enumerate() {
        // Past the time limit, only the search's best runnable assignment (and the
        // seeds, which the choice must not be slower than) are still confirmed.
        let over = opts
            .search
            .time_limit
            .is_some_and(|t| started.elapsed() >= t);
        if over && k < found.len() && !best.is_empty() {
            continue;
        }
        if f.eval.failure.is_some() {
            if last_error.is_none() {
                let explained = model.explained_failure(&f.pick);
                last_error = (explained.or_else(|| f.eval.failure.clone()))
                    .map(|(i, m)| format!("op {i}: {m}"));
            }
            continue;
        }
        // As it was scored: with the chain phase's Relayouts on only if they were then
        // (a plan found before a later pass turned them on runs as found).
        let was = model.chain_inserts();
        model.set_chain_inserts(f.eval.chained);
        let ran = planned(model, res, &f.pick);
        model.set_chain_inserts(was);
        match ran {
            Some(Ok(p)) => best.push(p),
            Some(Err(e)) => {
                last_error.get_or_insert(e.to_string());
            }
            None => {}
        }
    }
    // Ranked by the objective, ties by cycles (a stable sort keeps the search's order).
    let clock = res.machine.clock_ghz;
    let score = |p: &Planned| opts.objective.score(p.total_cycles, p.energy_j, clock);
    best.sort_by(|a, b| {
        score(a)
            .total_cmp(&score(b))
            .then(a.total_cycles.cmp(&b.total_cycles))
    });
    best.truncate(opts.search.top.max(1));
    (best, last_error)
}

/// The timing run of `pick` (with the Relayouts the model inserts): the confirmed plan,
/// the run's error, or `None` where its layouts do not apply to `res`.
fn planned(
    model: &mut Model,
    res: &Resolved,
    pick: &[LayoutId],
) -> Option<Result<Planned, crate::run::RunError>> {
    let (_, op_cycles, ins) = model.explain(pick);
    let layouts: Vec<(String, String)> = model
        .vars
        .iter()
        .zip(pick)
        .map(|(v, &id)| (v.name.clone(), model.text(id)))
        .collect();
    let inserted: Vec<InsertedOp> = ins
        .iter()
        .map(|i| InsertedOp {
            before: i.before,
            tensor: i.tensor,
            tensor_name: model.tensor(i.tensor).name.clone(),
            layout: model.text(i.layout),
            cycles: i.cycles,
            algorithm: None,
        })
        .collect();
    let applied = apply(res, &layouts, &inserted, &[]).ok()?;
    // The collectives the program leaves open run the cheapest algorithm, as the model
    // measured them; the run's report says which each ran.
    Some(model.timer.time(&applied, true).map(|r| {
        let mut inserted = inserted;
        let algorithms = chosen_algorithms(res, (&r, model.timer.records()), &mut inserted);
        Planned {
            layouts,
            inserted,
            total_cycles: r.total_cycles,
            energy_j: r.energy_j(),
            op_cycles,
            algorithms,
        }
    }))
}

/// The algorithms a plan's run `r` of program `res` (with `inserted` Relayouts; the
/// engine's `records` of its ops) ran over networks: an inserted Relayout's set on it,
/// the program ops' returned, in program order. An op whose collectives ran different
/// algorithms (a kernel's tree Reduces over two networks, each its own) names none.
fn chosen_algorithms(
    res: &Resolved,
    (r, records): (&mnsim_reports::Report, &[crate::engine::Record]),
    inserted: &mut [InsertedOp],
) -> Vec<ChosenAlgorithm> {
    let m = &res.machine;
    let written = |i: usize| (res.program.ops.values()).find(|o| o.source.index() == i);
    let mut out: Vec<(ChosenAlgorithm, bool)> = Vec::new();
    for (k, o) in r.ops.iter().enumerate() {
        let Some(a) = o.algorithm.as_deref().and_then(Algorithm::named) else {
            continue;
        };
        // What the op runs without naming one: every network it crossed runs `a`.
        let networks_own = (records.get(k).map_or(&[][..], |x| x.own()).iter())
            .filter_map(|s| match s.place {
                crate::net::Place::Link { level, .. } => m.network_at(level.index()),
                crate::net::Place::Dram { .. }
                | crate::net::Place::LocalCopy { .. }
                | crate::net::Place::Compute { .. } => None,
            })
            .all(|n| n.algorithm() == a);
        let op = o.inserted_after.unwrap_or(o.index);
        // An op that names its algorithm (or whose tree Reduces' algorithm its kernel
        // names) keeps it: nothing was chosen. An inserted Relayout names none.
        let itself = o.inserted_after.is_some() || written(op).is_some_and(|p| p.name == o.op);
        if itself && written(op).is_some_and(|p| p.algorithm.is_some()) {
            continue;
        }
        let is_kernel = written(op).is_some_and(|p| matches!(p.kind, OpKind::Kernel { .. }));
        if o.inserted_after.is_none() && is_kernel && o.op == "Relayout" {
            if let Some(i) = (inserted.iter_mut())
                .find(|i| i.before == op && i.tensor_name == o.tensor && i.algorithm.is_none())
            {
                i.algorithm = Some(a);
            }
            continue;
        }
        let c = ChosenAlgorithm {
            op,
            algorithm: a,
            networks_own,
        };
        match out.iter_mut().find(|(x, _)| x.op == op) {
            Some((x, agree)) => *agree &= x.algorithm == a,
            None => out.push((c, true)),
        }
    }
    out.into_iter()
        .filter_map(|(c, agree)| agree.then_some(c))
        .collect()
}
