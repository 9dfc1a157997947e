//! Planning rounds (docs/planner.md, rounds): once a planning has found its best plan,
//! the program is planned again with that plan's Relayouts written into it and the
//! plan itself as a seed, while a round gains.
//!
//! The search moves the layouts of variables; a Relayout the model inserted (before a
//! kernel that reads a tensor in another layout) is a choice the search made once and
//! cannot weigh again as a program op. Written into the program, each becomes a fixed
//! op, and the pipeline (the starts, the search, the spread, swap and hot passes; a whole
//! model's search lighter: `passes::search`) runs again around it from the best plan;
//! its passes run again inside one round found nothing more (they score the plans on the
//! same program as the first time).
//! Every round's plans are confirmed by timing runs and mapped back to the program as
//! written (each Relayout before the op it precedes there), so the rounds' best is never
//! slower than the first round's.

use super::model::{LayoutId, Model};
use super::{InsertedOp, Outcome, PlanOptions, Planned, inserted_ops, plan_round};
use crate::program::EntityRef as _;
use crate::scenario::{self, PlanValue, Scenario, Source};
use std::collections::BTreeMap;
use std::time::Instant;

/// Rounds at most, by default ([`PlanOptions::rounds`]): a second costs about what the
/// first did (its own work budget) and gains most (GPT-2's prefill, its decode step and
/// the LLaMA scan: see docs/planner.md, rounds); a third gained little more.
pub const ROUNDS: usize = 2;

/// A round of a planning: the best plan's cycles after it (of every round so far) and
/// the round's seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    pub total_cycles: u64,
    pub seconds: f64,
}

/// What a round needs of its caller: the plan, the sets and the binds.
type Why<'a> = (&'a str, &'a [(String, f64)], &'a BTreeMap<String, u64>);

/// `first` (the first round's outcome) improved by more rounds while one gains and the
/// best plan needs Relayouts (without them the program, and so the planning, would be
/// the same). A round that fails (it cannot, as its seed ran) leaves the outcome as it
/// was; each round has what is left of the time limit, counted from `started`.
pub(super) fn again(
    first: Outcome,
    (sc, src): (&Scenario, &Source),
    (plan, sets, binds): Why,
    opts: &PlanOptions,
    started: Instant,
    progress: &mut dyn FnMut(u64, u64),
) -> Outcome {
    let mut out = first;
    if let Some(b) = out.best.first() {
        out.rounds.push(Round {
            total_cycles: b.total_cycles,
            seconds: out.total_seconds,
        });
    }
    for _ in 1..opts.rounds {
        let Some(best) = out.best.first() else { break };
        if best.inserted.is_empty() {
            break;
        }
        // The whole work budget again, and what is left of the time limit.
        let opts = super::boards::shared(opts, 1, started);
        if opts.search.time_limit.is_some_and(|t| t.is_zero()) {
            break;
        }
        let mut written = sc.clone();
        written.insert_ops(inserted_ops(&best.inserted));
        let Some(from) = with_plan(&written, plan, &best.layouts) else {
            break;
        };
        let Ok(res) = scenario::resolve(&written, src, Some(plan), sets, binds) else {
            break;
        };
        let why = (plan, sets, binds);
        let round_started = Instant::now();
        let Ok(next) = plan_round((&written, src), why, &opts, Some(&from), progress) else {
            break;
        };
        let sources: Vec<usize> = (res.program.ops.values())
            .map(|o| o.source.index())
            .collect();
        let mapped: Vec<Planned> = (next.best.iter())
            .map(|p| back(p, &best.inserted, (&sources, sc.program.len())))
            .collect();
        let clock = res.machine.clock_ghz;
        let score = |p: &Planned| opts.objective.score(p.total_cycles, p.energy_j, clock);
        let gained = mapped
            .first()
            .is_some_and(|m| score(m) < score(best) || m.total_cycles < best.total_cycles);
        merge(&mut out, next, mapped, (opts.search.top, &score));
        out.total_seconds = started.elapsed().as_secs_f64();
        out.rounds.push(Round {
            total_cycles: out.best.first().map_or(0, |b| b.total_cycles),
            seconds: round_started.elapsed().as_secs_f64(),
        });
        if !gained {
            break;
        }
    }
    out
}

/// `sc` with plan `plan`'s variables set to `layouts` (the seed of the next round, or
/// the one-board plan over every board); `None` where the scenario has no such plan.
pub(super) fn with_plan(
    sc: &Scenario,
    plan: &str,
    layouts: &[(String, String)],
) -> Option<Scenario> {
    let mut sc = sc.clone();
    let values = sc.plans.get_mut(plan)?;
    for (var, layout) in layouts {
        values.insert(var.clone(), PlanValue::Layout(layout.clone()));
    }
    Some(sc)
}

/// The layouts `from`'s plan `plan` (a plan [`with_plan`] filled) gives `model`'s
/// variables, as a seed; `None` where they do not resolve.
pub(super) fn seed(
    from: &Scenario,
    src: &Source,
    (plan, sets, binds): Why,
    model: &mut Model,
) -> Option<Vec<LayoutId>> {
    let res = scenario::resolve(from, src, Some(plan), sets, binds).ok()?;
    super::passes::seed_of(model, &res)
}

/// Where an op of the round's program came from: an op of the program as written, or
/// the previous round's inserted Relayout (by its place in that list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Op(usize),
    Inserted(usize),
}

/// The origin of each op of a program that is the written one with `prior` inserted
/// (in their order, as [`Scenario::insert_ops`] places them), by its index there.
fn origins(prior: &[InsertedOp], len: usize) -> Vec<Origin> {
    let mut order: Vec<usize> = (0..prior.len()).collect();
    order.sort_by_key(|&k| prior[k].before);
    let mut out = Vec::with_capacity(len + prior.len());
    let mut next = order.iter().peekable();
    for op in 0..len {
        while let Some(&&k) = next.peek().filter(|&&&k| prior[k].before <= op) {
            out.push(Origin::Inserted(k));
            next.next();
        }
        out.push(Origin::Op(op));
    }
    out.extend(next.map(|&k| Origin::Inserted(k)));
    out
}

/// A plan of the round's program (the written one, of `len` ops, with `prior` inserted;
/// `sources` the index in the round's program of each of its resolved ops) as a plan of the program as written: the
/// prior Relayouts first, then its own, each before the written op it precedes, in the
/// order the round's program runs them; an inserted op's cycles are the op's it precedes
/// (as the first round counts them); the algorithm chosen for a prior Relayout is set on
/// it.
fn back(p: &Planned, prior: &[InsertedOp], (sources, len): (&[usize], usize)) -> Planned {
    let origin = origins(prior, len);
    // The written op at or after the round's index `at`.
    let op_at = |at: usize| {
        (origin.iter().skip(at))
            .find_map(|o| match o {
                Origin::Op(op) => Some(*op),
                Origin::Inserted(_) => None,
            })
            .unwrap_or(len)
    };
    // Every Relayout with its place in the round's program (its own before the op they
    // precede there, so ahead of a prior one at the same index).
    let mut all: Vec<((usize, u8), InsertedOp)> = Vec::new();
    for (at, o) in origin.iter().enumerate() {
        if let Origin::Inserted(k) = *o {
            let mut i = prior[k].clone();
            i.before = op_at(at);
            if let Some(c) = p.algorithms.iter().find(|c| c.op == at) {
                i.algorithm = i.algorithm.or(Some(c.algorithm));
            }
            all.push(((at, 1), i));
        }
    }
    for i in &p.inserted {
        let mut i = i.clone();
        let at = i.before;
        i.before = op_at(at);
        all.push(((at, 0), i));
    }
    all.sort_by_key(|(key, _)| *key);
    // Per resolved op, the prior Relayouts' cycles go to the next op of the written
    // program (as the first round counts an inserted Relayout's).
    let mut op_cycles = Vec::with_capacity(p.op_cycles.len());
    let mut carry = 0u64;
    for (k, &c) in p.op_cycles.iter().enumerate() {
        let from_prior = sources
            .get(k)
            .is_some_and(|&s| matches!(origin.get(s), Some(Origin::Inserted(_))));
        if from_prior {
            carry = carry.saturating_add(c);
        } else {
            op_cycles.push(c.saturating_add(std::mem::take(&mut carry)));
        }
    }
    if let Some(last) = op_cycles.last_mut() {
        *last = last.saturating_add(carry);
    }
    let algorithms = (p.algorithms.iter())
        .filter_map(|c| match origin.get(c.op) {
            Some(Origin::Op(op)) => Some(super::ChosenAlgorithm { op: *op, ..*c }),
            Some(Origin::Inserted(_)) | None => None,
        })
        .collect();
    Planned {
        layouts: p.layouts.clone(),
        inserted: all.into_iter().map(|(_, i)| i).collect(),
        total_cycles: p.total_cycles,
        energy_j: p.energy_j,
        op_cycles,
        algorithms,
    }
}

/// `out` (the rounds so far) joined by round `next`, whose plans are `mapped` to the
/// program as written: the plans of both ranked (by `score`, ties by cycles) and cut to
/// `top`; the work of both counted; the search's figures the last round's.
fn merge(
    out: &mut Outcome,
    next: Outcome,
    mapped: Vec<Planned>,
    (top, score): (usize, &dyn Fn(&Planned) -> f64),
) {
    let mut best = std::mem::take(&mut out.best);
    best.extend(mapped);
    best.sort_by(|a, b| {
        score(a)
            .total_cmp(&score(b))
            .then(a.total_cycles.cmp(&b.total_cycles))
    });
    best.dedup_by(|a, b| a.layouts == b.layouts && a.inserted == b.inserted);
    best.truncate(top.max(1));
    out.best = best;
    out.evaluated += next.evaluated;
    out.bounded += next.bounded;
    out.measured += next.measured;
    out.work.evaluated += next.work.evaluated;
    out.work.runs += next.work.runs;
    out.work.booked += next.work.booked;
    out.work.legal_checks += next.work.legal_checks;
    out.seconds += next.seconds;
    out.timed_out |= next.timed_out;
    out.work_spent |= next.work_spent;
    out.tried = next.tried;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::TensorId;

    fn ins(before: usize) -> InsertedOp {
        InsertedOp {
            before,
            tensor: TensorId::new(0),
            tensor_name: format!("t{before}"),
            layout: "((4:1))".into(),
            cycles: 1,
            algorithm: None,
        }
    }

    #[test]
    fn origins_place_the_prior_relayouts_before_their_ops() {
        let prior = [ins(2), ins(0), ins(2)];
        let o = origins(&prior, 3);
        use Origin::*;
        assert_eq!(
            o,
            vec![Inserted(1), Op(0), Op(1), Inserted(0), Inserted(2), Op(2)]
        );
    }

    #[test]
    fn a_rounds_relayouts_map_back_before_the_written_ops() {
        // Written ops 0..3; prior Relayouts before 1; the round's program: 0, R, 1, 2.
        let prior = [ins(1)];
        let sources = [0, 1, 2, 3];
        let mut own = ins(3); // before the round's op 3 = written op 2
        own.tensor_name = "own".into();
        let mut before_prior = ins(1); // before the round's op 1 = the prior Relayout
        before_prior.tensor_name = "first".into();
        let p = Planned {
            layouts: vec![],
            inserted: vec![own, before_prior],
            total_cycles: 10,
            energy_j: 0.0,
            op_cycles: vec![1, 2, 3, 4],
            algorithms: vec![],
        };
        let b = back(&p, &prior, (&sources, 3));
        let got: Vec<(usize, &str)> = (b.inserted.iter())
            .map(|i| (i.before, i.tensor_name.as_str()))
            .collect();
        assert_eq!(got, vec![(1, "first"), (1, "t1"), (2, "own")]);
        // The prior Relayout's 2 cycles go to written op 1.
        assert_eq!(b.op_cycles, vec![1, 5, 4]);
        assert_eq!(b.op_cycles.iter().sum::<u64>(), 10);
    }
}
