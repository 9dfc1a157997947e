//! Spread starts (docs/planner.md, spread starts): a plan spread whole over one level at
//! a time, one rule for every variable, so that producers and consumers agree without a
//! move of each: every position of the level a copy, or the level on the outermost axis
//! of one length in every tensor that has it (copies elsewhere).
//!
//! Moves of one variable at a time cannot do this: a chain of a model's activations
//! (hundreds of variables) that leaves copies one variable at a time is illegal or
//! slower at every step between. Over the boards of a node, splitting the tokens' length
//! is data (sequence) parallel: each board computes its tokens with every weight, and
//! what needs all of them (attention's keys) is gathered over the network by the
//! Relayouts the model inserts; splitting a weight's column length is tensor parallel.
//! On one board the same rules lay a whole model's activations out over the L2Bs, L1Bs,
//! MABs and PEs (a block spreads over the boards alone: `WHOLE_MODEL_OPS`). Each rule is
//! one evaluation; the levels spread root-most first, each from the best plan of the
//! level before, or its best few (a beam: [`How::beam`]; on many boards also with the
//! boards last: a plan of each board first); the best spread plans join the search's
//! starts, which the search then moves variable by variable. The same plans with two
//! levels of one fan-out exchanged ([`swapped`]) are the level swaps.

use super::model::{Key, LayoutId, Model};
use mnsim_arch::Machine;
use mnsim_arch::layout::AxisName;

/// How many spread plans join the starts (the best first).
const SPREAD_STARTS: usize = 2;

/// Programs of this many ops or more (a whole model: GPT-2 small's 2,188, a 4-layer
/// scan's 810; a block has at most a few hundred) spread over every level; smaller ones
/// over the boards alone.
const WHOLE_MODEL_OPS: usize = 500;

/// How many of the starts (the best first) are spread.
const SPREAD_FROM: usize = 2;

/// The levels a plan spreads over, root-most first, with their fan-outs: every level a
/// layout can name that has more than one position (mn3_node: `Board` 4, `L2B` 16,
/// `L1B` 8, `MAB` 16, `PE` 4).
pub fn spread_levels(m: &Machine) -> Levels {
    (m.levels.iter())
        .filter(|l| l.addressable && l.count > 1)
        .map(|l| (l.name.clone(), l.count))
        .collect()
}

/// [`spread_levels`] with the levels a network joins (the boards, the nodes) last: a
/// plan of each board first, then spread over the boards. `None` where that is the same
/// order (one board).
fn boards_last(levels: &Levels, m: &Machine) -> Option<Levels> {
    let joined = joined_levels(m);
    let mut out = levels.clone();
    out.sort_by_key(|level| joined.contains(level));
    (&out != levels).then_some(out)
}

/// The levels the machine's networks join (the boards of a node, the nodes of a zone),
/// root-most first, with their fan-outs; none on one board.
pub fn joined_levels(m: &Machine) -> Levels {
    (0..m.levels.len())
        .filter(|&k| m.network_at(k).is_some())
        .filter_map(|k| m.levels.get(k + 1))
        .filter(|l| l.addressable && l.count > 1)
        .map(|l| (l.name.clone(), l.count))
        .collect()
}

/// Levels to spread over, in order, with their fan-outs.
pub type Levels = Vec<(String, u64)>;

/// A rule that spreads a plan over one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Every position of the level a copy.
    Copies,
    /// The level on each tensor's outermost axis of this length; copies where none is.
    Length(u64),
}

/// The spread plans of the best [`SPREAD_FROM`] of `starts` (evaluated by `model`), best
/// first: at most [`SPREAD_STARTS`] of them, those that beat the best start. The levels
/// spread one after the other, root-most first, each from the best of the level before
/// (the plan it started from where no rule beats it). `stop` ends the rules early (a
/// limit). The model's Relayouts before tied reads are on while it evaluates them (a
/// spread plan needs its gathers), and stay on if a spread plan is returned
/// ([`Model::set_chain_inserts`]).
pub(super) fn spread_starts(
    model: &mut Model,
    starts: &[Vec<LayoutId>],
    stop: &mut dyn FnMut(&Model) -> bool,
) -> Vec<Vec<LayoutId>> {
    let m = &model.resolved().machine;
    // Over a board's own levels only for a whole model (WHOLE_MODEL_OPS ops or more),
    // whose search ends its budget inside its first round of moves; on a block the search
    // moves chains itself, and a spread start can draw its descent to a worse end, so a
    // block's own levels spread in a pass of their own after the search
    // ([`block_levels`]; docs/planner.md, spread starts).
    let levels = if is_whole_model(model) {
        spread_levels(m)
    } else {
        joined_levels(m)
    };
    let how = How {
        levels: &levels,
        beat: true,
        repair: false,
        beam: 1,
    };
    spread_over(model, starts, how, stop)
}

/// Each of `picks` with two levels of one fan-out exchanged in
/// every variable's layout (`LayoutExpr::swap_levels`; a layout that does not bind so
/// keeps its own), for every such pair of addressable levels: the same plan with the
/// levels' roles swapped. A search that split the tokens over the L2Bs and a weight's
/// columns over the L1Bs (the weight sent whole to every L2B) finds the other way round
/// (the weight split over the L2Bs, the tokens sent to each) only through a move of every
/// variable at once.
pub(super) fn swapped(model: &mut Model, picks: &[Vec<LayoutId>]) -> Vec<Vec<LayoutId>> {
    // Fan-outs as layouts address them (mncore2's 4 Groups of 2 L2Bs: 8 L2Bs).
    let levels: Levels = (model.resolved().machine.addressable_fanouts())
        .filter(|&(_, f)| f > 1)
        .map(|(n, f)| (n.to_string(), f))
        .collect();
    let mut out: Vec<Vec<LayoutId>> = Vec::new();
    for (i, (a, fa)) in levels.iter().enumerate() {
        for (b, fb) in &levels[i + 1..] {
            if fa != fb {
                continue;
            }
            for pick in picks {
                let p: Vec<LayoutId> = (pick.iter().enumerate())
                    .map(|(v, &id)| model.swapped(v, id, (a, b)).unwrap_or(id))
                    .collect();
                if &p != pick && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// Whether `model`'s program is a whole model ([`WHOLE_MODEL_OPS`] ops or more).
pub(super) fn is_whole_model(model: &Model) -> bool {
    model.resolved().program.ops.len() >= WHOLE_MODEL_OPS
}

/// The levels the spread pass spreads over (every level [`spread_levels`] gives: none
/// for a machine of one position per level), and whether its plans are repaired where
/// they fail ([`repaired`]): a whole model's are (among hundreds of ops one always
/// refuses a rule), a block's are not (its search moves past such an op itself, and
/// repaired starts drew three blocks' searches to worse ends).
pub(super) fn pass_levels(model: &Model) -> (Levels, bool) {
    (
        spread_levels(&model.resolved().machine),
        is_whole_model(model),
    )
}

/// How [`spread_over`] spreads.
pub(super) struct How<'a> {
    /// The levels, root-most first.
    pub levels: &'a Levels,
    /// Only the spread plans that beat the best start, else the best whatever (a pass of
    /// their own searches from them).
    pub beat: bool,
    /// Each spread plan [`repaired`].
    pub repair: bool,
    /// How many plans of each level are spread over the next (a beam: the rule best on
    /// one level is not always the one best once the levels below it are spread).
    pub beam: usize,
}

/// `starts` ranked by the model's key, best first, each once.
fn ranked<'a>(model: &mut Model, starts: &'a [Vec<LayoutId>]) -> Vec<(Key, &'a Vec<LayoutId>)> {
    let mut scored: Vec<(Key, &Vec<LayoutId>)> = (starts.iter())
        .map(|s| (model.evaluate(s).key(), s))
        .collect();
    scored.sort_by_key(|a| a.0);
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
}

/// Whether [`spread_over`] spreads `b` from starts it spreads `a` from, in the same
/// orders: `b`'s best [`SPREAD_FROM`] are among `a`'s, and its best is `a`'s best (the
/// plan spread with the boards last). Spreading `b` after `a` then spreads the same
/// plans again.
pub(super) fn spreads_within(model: &mut Model, b: &[Vec<LayoutId>], a: &[Vec<LayoutId>]) -> bool {
    let from = |model: &mut Model, s| -> Vec<Vec<LayoutId>> {
        (ranked(model, s).into_iter())
            .take(SPREAD_FROM)
            .map(|(_, p)| p.clone())
            .collect()
    };
    let (fa, fb) = (from(model, a), from(model, b));
    fb.first() == fa.first() && fb.iter().all(|p| fa.contains(p))
}

/// [`spread_starts`] as [`How`] says.
pub(super) fn spread_over(
    model: &mut Model,
    starts: &[Vec<LayoutId>],
    How {
        levels,
        beat,
        repair,
        beam,
    }: How,
    stop: &mut dyn FnMut(&Model) -> bool,
) -> Vec<Vec<LayoutId>> {
    if levels.is_empty() || starts.is_empty() {
        return Vec::new();
    }
    let scored = ranked(model, starts);
    let bar = scored.first().map(|s| s.0);
    let was = model.chain_inserts();
    model.set_chain_inserts(true);
    let mut found: Vec<(Key, Vec<LayoutId>)> = Vec::new();
    // Every order from the best starts; on many boards also the boards last from the best.
    let mut orders: Vec<(&Levels, Key, &Vec<LayoutId>)> = (scored.iter())
        .take(SPREAD_FROM)
        .map(|&(key, start)| (levels, key, start))
        .collect();
    let last = boards_last(levels, &model.resolved().machine);
    if let (Some(last), Some(&(key, start))) = (last.as_ref(), scored.first()) {
        orders.push((last, key, start));
    }
    let mut seen: std::collections::HashSet<Vec<LayoutId>> = (starts.iter()).cloned().collect();
    for (levels, key, start) in orders {
        // The best few plans of each level (and of the levels before, where none of
        // this one's beats them) are spread over the next.
        let mut bases: Vec<(Key, Vec<LayoutId>)> = vec![(key, start.clone())];
        for (level, fanout) in levels {
            let mut rules = vec![Rule::Copies];
            rules.extend(lengths(model, *fanout).into_iter().map(Rule::Length));
            let mut here: Vec<(Key, Vec<LayoutId>)> = Vec::new();
            for (_, base) in &bases {
                let tries = rules
                    .iter()
                    .flat_map(|&r| [(r, AxisName::Mem), (r, AxisName::Time)]);
                for (rule, freed) in tries {
                    if stop(model) {
                        break;
                    }
                    let pick = spread(model, base, (level, *fanout), (rule, freed.clone()));
                    // A plan evaluated already (its base, or the same plan by another
                    // rule: nothing freed, so memory and `Time` give one plan) is not
                    // again.
                    if !seen.insert(pick.clone()) {
                        continue;
                    }
                    // Only plans that run and might be kept are placed: one that fails,
                    // or is proved to rank after the beam and the plans returned, is not.
                    let cutoff = keeps(&bases, &here, &found, (beam, beat.then_some(bar)));
                    let (pick, e) = match repair {
                        true => repaired(model, base, pick, &mut seen, cutoff),
                        false => {
                            let e = model.evaluate_if_runs(&pick, cutoff).ok().flatten();
                            (pick, e)
                        }
                    };
                    if let Some(e) = e {
                        here.push((e.key(), pick));
                    }
                }
            }
            here.sort_by_key(|a| a.0);
            let mut next: Vec<(Key, Vec<LayoutId>)> = bases.iter().chain(&here).cloned().collect();
            next.sort_by_key(|a| a.0);
            next.truncate(beam.max(1));
            bases = next;
            found.extend(here);
        }
    }
    found.sort_by_key(|a| a.0);
    found.dedup_by(|a, b| a.1 == b.1);
    let out: Vec<Vec<LayoutId>> = (found.into_iter())
        .filter(|(k, _)| !beat || bar.is_some_and(|b| *k < b))
        .take(SPREAD_STARTS)
        .map(|(_, p)| p)
        .collect();
    model.set_chain_inserts(was || !out.is_empty());
    out
}

/// The key a spread plan must rank below to be kept by [`spread_over`] (`None`: any
/// plan might be): among the `beam` best of the level (its `bases` and the plans of the
/// level so far, `here`), or the [`SPREAD_STARTS`] best of all (`found` and `here`; and
/// below the best start's key `bar` where only plans that beat it are returned). Each
/// list only gains plans and keys sort stably, so a plan proved to rank no lower than
/// this would have been dropped by both: skipping it changes nothing.
fn keeps(
    bases: &[(Key, Vec<LayoutId>)],
    here: &[(Key, Vec<LayoutId>)],
    found: &[(Key, Vec<LayoutId>)],
    (beam, bar): (usize, Option<Option<Key>>),
) -> Option<Key> {
    let kth = |keys: Vec<Key>, k: usize| {
        let mut keys = keys;
        keys.sort_unstable();
        keys.get(k.max(1) - 1).copied()
    };
    let level = kth(bases.iter().chain(here).map(|p| p.0).collect(), beam)?;
    let all = found.iter().chain(here).map(|p| p.0);
    let returned = match bar {
        None => kth(all.collect(), SPREAD_STARTS),
        // Only plans below the best start's key are returned (none without a start
        // that runs).
        Some(bar) => {
            let bar = bar?;
            Some(kth(all.filter(|&k| k < bar).collect(), SPREAD_STARTS).unwrap_or(bar))
        }
    }?;
    Some(level.max(returned))
}

/// How many times a spread plan that fails at an op is repaired ([`repaired`]).
const REPAIRS: usize = 32;

/// `pick` (a spread of `base`), repaired where it fails, and its evaluation if it then
/// runs and its key may rank below `cutoff` ([`Model::evaluate_if_runs`]): up to
/// [`REPAIRS`] times, the variables of the tensors the failing op reads and writes (and
/// of the tensor the failure names) go back to their layouts in `base`, so that a rule
/// applies wherever it can and one op it does not suit (a concatenation it would leave
/// replicated, a tensor it would overflow LM with) does not discard it. Each repair is
/// one more evaluation (a walk of the ops up to the failure: a plan that fails is
/// dropped, so its ops are not placed); a repaired plan evaluated already (in `seen`)
/// stops the repairs.
fn repaired(
    model: &mut Model,
    base: &[LayoutId],
    mut pick: Vec<LayoutId>,
    seen: &mut std::collections::HashSet<Vec<LayoutId>>,
    cutoff: Option<Key>,
) -> (Vec<LayoutId>, Option<super::model::Eval>) {
    let mut run = model.evaluate_if_runs(&pick, cutoff);
    for _ in 0..REPAIRS {
        let Err((i, f)) = &run else {
            break;
        };
        let tensors = model.failure_tensors(*i, f);
        let mut changed = false;
        for v in 0..pick.len() {
            if pick[v] != base[v] && tensors.contains(&model.vars[v].tensor) {
                pick[v] = base[v];
                changed = true;
            }
        }
        if !changed || !seen.insert(pick.clone()) {
            break;
        }
        run = model.evaluate_if_runs(&pick, cutoff);
    }
    (pick, run.ok().flatten())
}

/// The axis lengths of the variables' tensors that `fanout` divides, smallest first.
fn lengths(model: &Model, fanout: u64) -> Vec<u64> {
    let mut out: Vec<u64> = (model.vars.iter())
        .flat_map(|v| model.tensor(v.tensor).dims_at_bound.iter().copied())
        .filter(|&d| d >= fanout && d.is_multiple_of(fanout))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `base` with every variable's layout spread over `level` by `rule`, the positions a
/// layout's split over the level leaves going to `freed` (memory, or `Time` steps where
/// memory would not hold them); a variable whose layout cannot take it keeps copies, or
/// failing that its own.
fn spread(
    model: &mut Model,
    base: &[LayoutId],
    (level, fanout): (&str, u64),
    (rule, freed): (Rule, AxisName),
) -> Vec<LayoutId> {
    (0..base.len())
        .map(|v| {
            let axis = match rule {
                Rule::Copies => None,
                Rule::Length(n) => {
                    let t = model.vars[v].tensor;
                    (model.tensor(t).dims_at_bound.iter()).position(|&d| d == n)
                }
            };
            let to =
                |m: &mut Model, a| m.relevelled(v, base[v], (level, fanout), (a, freed.clone()));
            (axis.and_then(|a| to(model, Some(a))))
                .or_else(|| to(model, None))
                .unwrap_or(base[v])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;

    const MLP: &str = r#"Scenario(
    name: "mlp",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "x": (dtype: F32, init: Zeros, shape: "f32[256,512]"),
        "w": (dtype: F32, init: Zeros, shape: "f32[512,1024]"),
        "h": (dtype: F32, shape: "f32[256,1024]"),
        "g": (dtype: F32, shape: "f32[256,1024]"),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Load(tensor: "w", layout: "$w"),
        MatMul(a: "x", b: "w", out: "h", layout: "$h"),
        Unary(op: Relu, input: "h", out: "g", layout: "$g"),
        Store(tensor: "g"),
    ],
    plans: {"auto": {"x": Any, "w": Any, "h": Any, "g": Any}},
    auto_reduce: true,
)"#;

    fn model() -> Model {
        crate::plan::model::testing::model(MLP, "mlp.ron")
    }

    /// A plan that runs is evaluated as `evaluate` evaluates it unless a cutoff no
    /// higher than its busiest resource's hold proves it no better; one that fails
    /// stops at the op `evaluate` names.
    #[test]
    fn evaluating_only_plans_that_run_agrees_with_evaluate() {
        let mut m = model();
        let (mut ran, mut failed, mut cut) = (0, 0, 0);
        // Each of a joint seed's variables moved to each of its first candidates.
        let seeds = m.joint_seeds(super::super::JOINT_WIDTH, &mut |_| false);
        let seed = seeds.first().expect("a joint seed").clone();
        let picks: Vec<Vec<LayoutId>> = (0..m.vars.len())
            .flat_map(|v| (m.vars[v].candidates.iter().take(40)).map(move |&c| (v, c)))
            .map(|(v, c)| {
                let mut p = seed.clone();
                p[v] = c;
                p
            })
            .collect();
        for pick in picks {
            let e = m.evaluate(&pick);
            match (m.evaluate_if_runs(&pick, None), &e.failure) {
                (Ok(Some(r)), None) => {
                    assert_eq!((r.total_cycles, r.key()), (e.total_cycles, e.key()));
                    ran += 1;
                    // Above its key it is placed; at a cutoff no higher than its run it
                    // may be proved no better, never at a cutoff above it.
                    let (done, ops, _) = e.key();
                    let above = (done, ops, e.total_cycles + 1);
                    let r = m.evaluate_if_runs(&pick, Some(above)).unwrap();
                    assert_eq!(r.map(|r| r.total_cycles), Some(e.total_cycles));
                    let least = (done, ops, 1);
                    if m.evaluate_if_runs(&pick, Some(least)).unwrap().is_none() {
                        cut += 1;
                    }
                }
                (Err((at, _)), Some((i, _))) => {
                    assert_eq!(at, *i);
                    failed += 1;
                }
                (r, f) => panic!("{:?} against {f:?}", r.map(|r| r.map(|e| e.total_cycles))),
            }
        }
        assert!(
            ran > 0 && failed > 0 && cut > 0,
            "{ran} ran, {failed} failed, {cut} cut"
        );
    }

    /// The cutoff is the later of the beam's last key and the last key returned, and
    /// none while either list has room.
    #[test]
    fn the_cutoff_is_what_both_lists_keep() {
        let k = |c: u64| ((false, Reverse(10), c), Vec::new());
        let bases = vec![k(50)];
        let here = vec![k(40), k(70)];
        let found = vec![k(30), k(60)];
        // Beam 2 keeps 40 and 50; the two returned are 30 and 40.
        assert_eq!(keeps(&bases, &here, &found, (2, None)), Some(k(50).0));
        // Beam 1 keeps 40; the returned keep 40 too.
        assert_eq!(keeps(&bases, &here, &found, (1, None)), Some(k(40).0));
        // Only plans below 35 are returned: one is, so the bar cuts at 35, the beam at 40.
        assert_eq!(
            keeps(&bases, &here, &found, (1, Some(Some(k(35).0)))),
            Some(k(40).0)
        );
        // Only plans below 45 are returned, and 40 alone is: the cutoff is 45.
        assert_eq!(
            keeps(&bases, &here, &[k(60)], (1, Some(Some(k(45).0)))),
            Some(k(45).0)
        );
        // A beam of 4 has room: nothing is cut.
        assert_eq!(keeps(&bases, &here, &found, (4, None)), None);
        // No start runs: none is returned, and the cutoff is left to the beam's (none
        // here: a plan is cut only where that is certain).
        assert_eq!(keeps(&bases, &here, &[], (1, Some(None))), None);
    }
}
