//! The search over the model: every seed (hand plan) first; then, when the space is
//! small enough, every assignment (exact); otherwise coordinate descent from every seed
//! and from seeded random starts (each variable in turn takes its best candidate with
//! the others fixed, in rounds until nothing improves). A time limit or a work budget
//! stops either; the work budget stops at the same point on every machine, so a search
//! bound by it alone gives the same plan everywhere.

use super::model::{Eval, Key, LayoutId, Model, WorkDone};
use std::time::{Duration, Instant};

/// How to search.
#[derive(Clone, Debug)]
pub struct Options {
    /// Stop evaluating after this long (the best found so far is kept).
    pub time_limit: Option<Duration>,
    /// Stop after this much work (the best found so far is kept), counted by [`work`].
    pub work_limit: Option<u64>,
    /// Keep this many best distinct assignments.
    pub top: usize,
    /// Enumerate every assignment when there are at most this many.
    pub exhaustive_limit: u128,
    /// Random starts after the seeds (local search only).
    pub restarts: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            time_limit: Some(Duration::from_secs(20)),
            work_limit: None,
            top: 5,
            exhaustive_limit: 200_000,
            restarts: 8,
        }
    }
}

/// The work of one run of the measuring engine (an op measured anew, or a Relayout it
/// tried) against that of an evaluation: about their ratio in time, on the shared graphs
/// (an op's cost in closed form, some 8 µs; an evaluation of memoised ops, some 2 µs).
pub const MEASURE_WORK: u64 = 4;

/// Walk steps and sends booked per unit of work (booking one takes some 40 ns).
pub const BOOKED_PER_WORK: u64 = 50;

/// Legality checks of candidate Relayout targets per unit of work (one takes some 1 µs;
/// an illegal kernel scans its input's candidates for a few legal targets).
pub const CHECKS_PER_WORK: u64 = 2;

/// The work `model` has done so far (see [`Options::work_limit`]): an evaluation counts
/// 1, a run of the measuring engine [`MEASURE_WORK`], [`BOOKED_PER_WORK`] walk steps or
/// sends booked (measuring or placing a plan) 1, and [`CHECKS_PER_WORK`] legality checks
/// of Relayout targets 1. Every count is a function of the plans evaluated, not of the
/// machine.
pub fn work(model: &Model) -> u64 {
    work_of(&model.work_done())
}

/// [`work`] of the counts `w`.
pub fn work_of(w: &WorkDone) -> u64 {
    w.evaluated
        .saturating_add(w.runs.saturating_mul(MEASURE_WORK))
        .saturating_add(w.booked / BOOKED_PER_WORK)
        .saturating_add(w.legal_checks / CHECKS_PER_WORK)
}

/// An assignment (a candidate id per variable) and its evaluation.
#[derive(Clone, Debug)]
pub struct Found {
    pub pick: Vec<LayoutId>,
    pub eval: Eval,
}

/// What a search did.
#[derive(Clone, Debug)]
pub struct Searched {
    /// Best first, at most `top`, distinct.
    pub best: Vec<Found>,
    /// `exhaustive` or `coordinate descent`.
    pub method: &'static str,
    /// Assignments evaluated (seeds included).
    pub evaluated: u64,
    /// Assignments in the space.
    pub space: u128,
    /// Whether every assignment of the space was evaluated.
    pub complete: bool,
    pub timed_out: bool,
    /// Whether the work budget stopped the search.
    pub work_spent: bool,
    pub seconds: f64,
    /// Per variable, how many of its candidates some evaluated assignment gave it.
    pub tried: Vec<usize>,
    /// Per variable and candidate index: whether an evaluated assignment gave it.
    pub tried_mask: Vec<Vec<bool>>,
    /// Where each descent ended (one per start, distinct, in the order descended): the
    /// basins the search reached, which `best` (all near its one best) may not show.
    pub basins: Vec<Vec<LayoutId>>,
}

struct Top {
    k: usize,
    v: Vec<Found>,
}

impl Top {
    /// The key an assignment must beat to be kept: the worst kept one's, once `k` are.
    fn bar(&self) -> Option<Key> {
        (self.v.len() >= self.k).then(|| self.v.last().map(|w| w.eval.key()))?
    }

    fn offer(&mut self, pick: &[LayoutId], eval: &Eval) {
        if self.v.iter().any(|f| f.pick == pick) {
            return;
        }
        if self.v.len() >= self.k && self.v.last().is_some_and(|w| w.eval.key() <= eval.key()) {
            return;
        }
        let at = self.v.partition_point(|f| f.eval.key() <= eval.key());
        self.v.insert(
            at,
            Found {
                pick: pick.to_vec(),
                eval: eval.clone(),
            },
        );
        self.v.truncate(self.k);
    }
}

/// splitmix64, for reproducible random starts.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// State shared by the phases of one search.
struct Run<'a> {
    top: Top,
    deadline: Option<Instant>,
    timed_out: bool,
    /// The work at which to stop, and whether it was reached.
    work_end: Option<u64>,
    work_spent: bool,
    before: u64,
    planned: u64,
    progress: &'a mut dyn FnMut(u64, u64),
    /// Per variable and candidate index: whether an evaluated assignment gave it.
    tried: Vec<Vec<bool>>,
    /// Where each descent ended, distinct.
    basins: Vec<Vec<LayoutId>>,
}

impl<'a> Run<'a> {
    /// A search's state at its start (`begun`), planning `planned` evaluations.
    fn new(
        model: &Model,
        opts: &Options,
        (begun, planned): (Instant, u64),
        progress: &'a mut dyn FnMut(u64, u64),
    ) -> Self {
        Run {
            top: Top {
                k: opts.top.max(1),
                v: Vec::new(),
            },
            // A limit past what an instant can hold is no limit.
            deadline: opts.time_limit.and_then(|d| begun.checked_add(d)),
            timed_out: false,
            work_end: opts.work_limit.map(|w| work(model).saturating_add(w)),
            work_spent: false,
            before: model.evaluated,
            planned,
            progress,
            tried: (model.vars.iter())
                .map(|v| vec![false; v.candidates.len()])
                .collect(),
            basins: Vec::new(),
        }
    }

    /// What the search begun at `begun` did: its progress reported a last time.
    fn finish(
        self,
        model: &Model,
        (method, space, complete): (&'static str, u128, bool),
        begun: Instant,
    ) -> Searched {
        let evaluated = model.evaluated - self.before;
        (self.progress)(evaluated, self.planned);
        Searched {
            best: self.top.v,
            method,
            evaluated,
            space,
            complete,
            timed_out: self.timed_out,
            work_spent: self.work_spent,
            seconds: begun.elapsed().as_secs_f64(),
            tried: (self.tried.iter())
                .map(|t| t.iter().filter(|x| **x).count())
                .collect(),
            tried_mask: self.tried,
            basins: self.basins,
        }
    }

    /// Records where a descent ended.
    fn basin(&mut self, pick: Vec<LayoutId>) {
        if !self.basins.contains(&pick) {
            self.basins.push(pick);
        }
    }

    /// Marks the candidates of `pick` as tried.
    fn mark(&mut self, model: &Model, pick: &[LayoutId]) {
        for (v, id) in pick.iter().enumerate() {
            if let Some(k) = model.vars[v].candidates.iter().position(|c| c == id) {
                self.tried[v][k] = true;
            }
        }
    }

    /// Whether a limit stops the search (and which, recorded).
    fn over(&mut self, model: &Model) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out = true;
        }
        if self.work_end.is_some_and(|end| work(model) >= end) {
            self.work_spent = true;
        }
        self.timed_out || self.work_spent
    }

    /// Every assignment of the first `width(v)` candidates of each variable. Returns
    /// whether it finished.
    fn exhaustive(&mut self, model: &mut Model, width: &[usize]) -> bool {
        let nvars = width.len();
        let mut idx = vec![0usize; nvars];
        let mut pick: Vec<LayoutId> = model.vars.iter().map(|v| v.candidates[0]).collect();
        let mut n = 0u64;
        'all: loop {
            model.follow_layers(&mut pick);
            // An assignment that cannot be kept need not be placed.
            if let Some(e) = model.evaluate_below(&pick, self.top.bar()) {
                self.top.offer(&pick, &e);
            }
            for (v, &k) in idx.iter().enumerate() {
                self.tried[v][k] = true;
            }
            n += 1;
            if n.is_multiple_of(256) {
                (self.progress)(model.evaluated - self.before, self.planned);
            }
            // Every evaluation: one can measure several ops (milliseconds each).
            if self.over(model) {
                return false;
            }
            // Next assignment, last variable fastest: consecutive assignments differ in
            // few variables, so most ops hit the memo.
            for v in (0..nvars).rev() {
                idx[v] += 1;
                if idx[v] < width[v] {
                    pick[v] = model.vars[v].candidates[idx[v]];
                    continue 'all;
                }
                idx[v] = 0;
                pick[v] = model.vars[v].candidates[0];
            }
            return true;
        }
    }

    /// Coordinate descent from `pick` over the first `width(v)` candidates of each
    /// variable; returns the local optimum.
    fn descend(
        &mut self,
        model: &mut Model,
        pick: Vec<LayoutId>,
        width: &[usize],
    ) -> Vec<LayoutId> {
        let movers = model.movers();
        self.descend_over(model, pick, width, (&movers, false))
    }

    /// Coordinate descent from `pick` moving the variables `moves` over their first
    /// `width(v)` candidates; with `tied`, every assignment has its tied variables
    /// derived from the ones they follow ([`Model::propagate`]): a move of a chain's
    /// first variable moves the chain. Returns the local optimum.
    fn descend_over(
        &mut self,
        model: &mut Model,
        mut pick: Vec<LayoutId>,
        width: &[usize],
        (moves, tied): (&[usize], bool),
    ) -> Vec<LayoutId> {
        model.follow_layers(&mut pick);
        if tied {
            model.propagate(&mut pick);
        }
        let mut cur = model.evaluate(&pick);
        self.top.offer(&pick, &cur);
        self.mark(model, &pick);
        loop {
            let mut improved = false;
            for &v in moves {
                let cands: Vec<LayoutId> = model.vars[v].candidates[..width[v]].to_vec();
                let mut best = pick.clone();
                for (k, &c) in cands.iter().enumerate() {
                    if c == best[v] {
                        continue;
                    }
                    let mut trial = best.clone();
                    trial[v] = c;
                    model.follow_layers(&mut trial);
                    if tied {
                        model.propagate(&mut trial);
                    }
                    // Placed only if it may be kept or beat the current assignment.
                    let bar = self.top.bar().map(|b| b.max(cur.key()));
                    self.tried[v][k] = true;
                    if let Some(e) = model.evaluate_below(&trial, bar) {
                        self.top.offer(&trial, &e);
                        if e.key() < cur.key() {
                            cur = e;
                            best = trial;
                            improved = true;
                        }
                    }
                    if k % 256 == 0 {
                        (self.progress)(model.evaluated - self.before, self.planned);
                    }
                    if self.over(model) {
                        return best;
                    }
                }
                pick = best;
            }
            if !improved {
                return pick;
            }
        }
    }

    /// Coordinate descent of variable `v` alone from `pick` over its first `width(v)`
    /// candidates, the tied variables of its chain derived from it (and only those: the
    /// rest of `pick` stays as it is). Returns the best assignment found.
    fn descend_chain(
        &mut self,
        model: &mut Model,
        pick: Vec<LayoutId>,
        width: &[usize],
        v: usize,
    ) -> Vec<LayoutId> {
        let mut cur = model.evaluate(&pick);
        self.top.offer(&pick, &cur);
        let mut best = pick;
        let cands: Vec<LayoutId> = model.vars[v].candidates[..width[v]].to_vec();
        for (k, &c) in cands.iter().enumerate() {
            let mut trial = best.clone();
            trial[v] = c;
            model.follow_layers(&mut trial);
            model.propagate_chain(&mut trial, v);
            if trial == best {
                continue;
            }
            let bar = self.top.bar().map(|b| b.max(cur.key()));
            self.tried[v][k] = true;
            if let Some(e) = model.evaluate_below(&trial, bar) {
                self.top.offer(&trial, &e);
                if e.key() < cur.key() {
                    cur = e;
                    best = trial;
                }
            }
            if self.over(model) {
                break;
            }
        }
        best
    }

    /// The core phase of local search: the core of the space exhaustively if it has at
    /// most `exhaustive_limit` assignments, else coordinate descent over it from every
    /// seed and from `restarts` random starts. Returns the starts descended from (none
    /// when exhaustive).
    fn core(
        &mut self,
        model: &mut Model,
        seeds: &[Vec<LayoutId>],
        (core, core_space): (&[usize], u128),
        opts: &Options,
    ) -> Vec<Vec<LayoutId>> {
        let mut starts: Vec<Vec<LayoutId>> = Vec::new();
        if core_space <= opts.exhaustive_limit {
            self.exhaustive(model, core);
        } else {
            starts = seeds.to_vec();
            starts.extend(random_starts(model, core, opts.restarts));
            for s in &starts {
                if self.over(model) {
                    break;
                }
                let end = self.descend(model, s.clone(), core);
                self.basin(end);
            }
        }
        starts
    }

    /// Coordinate descent over the whole space (`all` candidates of each variable) from
    /// each of the best assignments found so far.
    fn descend_from_best(&mut self, model: &mut Model, all: &[usize]) {
        let from: Vec<Vec<LayoutId>> = self.top.v.iter().map(|f| f.pick.clone()).collect();
        for s in from {
            if self.over(model) {
                break;
            }
            let end = self.descend(model, s, all);
            self.basin(end);
        }
    }

    /// Chains: the free variables moved with what follows them, from `starts` over the
    /// `core` candidates, on a budget of its own (half of `work_limit`).
    fn chains(
        &mut self,
        model: &mut Model,
        starts: Vec<Vec<LayoutId>>,
        core: &[usize],
        work_limit: Option<u64>,
    ) {
        let free: Vec<usize> = (model.free_vars().into_iter())
            .filter(|&v| model.leader(v) == v)
            .collect();
        self.work_end = work_limit.map(|w| work(model).saturating_add(w / 2));
        self.work_spent = false;
        // Before a tied variable's first reader a Relayout may now go too. Where the
        // chains find a better plan, the model keeps them on from then on (its
        // plans, and those later passes start from, are scored, explained and
        // confirmed with those Relayouts); else it is left as it was.
        let before = self.top.v.first().map(|f| f.eval.key());
        let was = model.chain_inserts();
        model.set_chain_inserts(true);
        for s in starts {
            if self.over(model) {
                break;
            }
            let end = self.descend_over(model, s, core, (&free, true));
            self.basin(end);
        }
        let won = before.is_none_or(|b| self.top.v.first().is_some_and(|f| f.eval.key() < b));
        model.set_chain_inserts(was || won);
    }
}

/// `n` random assignments over the first `core(v)` candidates of each variable, the same
/// on every run (splitmix64 from a fixed seed).
fn random_starts(model: &Model, core: &[usize], n: usize) -> Vec<Vec<LayoutId>> {
    let mut rng = 0x5eed_u64;
    (0..n)
        .map(|_| {
            model
                .vars
                .iter()
                .zip(core)
                .map(|(v, &w)| v.candidates[(next(&mut rng) % w as u64) as usize])
                .collect()
        })
        .collect()
}

/// The evaluations a search plans, for its progress: the whole space if it has at most
/// `exhaustive_limit` assignments; else the core phase's (the core's space when
/// exhaustive, else two rounds of descent over the core from each seed and random
/// start) and two rounds over the whole space from each of the `top` best.
fn planned(
    (space, core_space): (u128, u128),
    (all, core): (&[usize], &[usize]),
    seeds: usize,
    opts: &Options,
) -> u64 {
    if space <= opts.exhaustive_limit {
        return space as u64;
    }
    let per_round: u64 = all.iter().map(|&c| c as u64).sum();
    let first = if core_space <= opts.exhaustive_limit {
        core_space as u64
    } else {
        core.iter().map(|&c| c as u64).sum::<u64>() * (seeds + opts.restarts) as u64 * 2
    };
    first.saturating_add(per_round.saturating_mul(2 * opts.top.max(1) as u64))
}

/// Coordinate descent from `start` moving only the variables `moves`, one after another
/// (each over its core candidates, from where the one before ended, on an equal share
/// of `opts`' work budget; the tied variables of its chain derived from it): the hot
/// pass's search of the chains that hold a plan's cycles.
pub fn descend_vars(
    model: &mut Model,
    start: &[LayoutId],
    moves: &[usize],
    opts: &Options,
    progress: &mut dyn FnMut(u64, u64),
) -> Searched {
    let begun = Instant::now();
    let core: Vec<usize> = (model.vars.iter())
        .map(|v| v.core.clamp(1, v.candidates.len()))
        .collect();
    let planned: u64 = moves.iter().map(|&v| core[v] as u64).sum();
    let mut run = Run::new(model, opts, (begun, planned), progress);
    let share = opts.work_limit.map(|w| w / moves.len().max(1) as u64);
    let mut pick = start.to_vec();
    for &v in moves {
        run.work_end = share.map(|w| work(model).saturating_add(w));
        run.work_spent = false;
        pick = run.descend_chain(model, pick, &core, v);
        if run.timed_out {
            break;
        }
    }
    run.basin(pick);
    let space = model.space_size();
    run.finish(model, ("coordinate descent", space, false), begun)
}

/// Searches `model` from `seeds` (assignments, e.g. the hand plans). `progress` is
/// called now and then with (evaluated, the space or the evaluations planned).
///
/// Phases: the seeds; then, if the whole space has at most `exhaustive_limit`
/// assignments, all of them (exact). Otherwise the core of the space (whole fan-outs,
/// levels root-most first) exhaustively if it is small enough, else by coordinate
/// descent from every seed and from `restarts` random starts; then coordinate descent
/// over the whole space from the best assignments found.
pub fn search(
    model: &mut Model,
    seeds: &[Vec<LayoutId>],
    opts: &Options,
    progress: &mut dyn FnMut(u64, u64),
) -> Searched {
    let start = Instant::now();
    let space = model.space_size();
    // A variable that follows another layer for layer is not moved: one candidate.
    let moved = |v: usize, n: usize| if model.leader(v) == v { n } else { 1 };
    let all: Vec<usize> = (model.vars.iter().enumerate())
        .map(|(i, v)| moved(i, v.candidates.len()))
        .collect();
    let core: Vec<usize> = (model.vars.iter().enumerate())
        .map(|(i, v)| moved(i, v.core.clamp(1, v.candidates.len())))
        .collect();
    let core_space = core.iter().fold(1u128, |a, &c| a.saturating_mul(c as u128));
    let exhaustive = space <= opts.exhaustive_limit;
    let planned = planned((space, core_space), (&all, &core), seeds.len(), opts);
    let mut run = Run::new(model, opts, (start, planned), progress);
    for s in seeds {
        let e = model.evaluate(s);
        run.top.offer(s, &e);
        run.mark(model, s);
    }
    let mut complete = false;
    let method;
    if exhaustive {
        method = "exhaustive";
        complete = run.exhaustive(model, &all);
    } else {
        method = "coordinate descent";
        let starts = run.core(model, seeds, (&core, core_space), opts);
        run.descend_from_best(model, &all);
        if model.has_ties() && !run.timed_out {
            run.chains(model, starts, &core, opts.work_limit);
        }
    }
    run.finish(model, (method, space, complete), start)
}
