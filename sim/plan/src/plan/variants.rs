//! Variants of the plans the search found, each one evaluation: stream variants (every
//! variable stepped on one axis index), chain streams (one large free variable stepped
//! over the axes its readers keep, the chain derived from it) and level swaps (two
//! levels of one fan-out exchanged in every layout). They reach plans no move of one
//! variable, nor of one chain, reaches: every variable changes at once (docs/planner.md,
//! streamed starts and level swaps).

use super::model::{self, LayoutId, Model};
use super::{candidates, search};
use mnsim_reports::Objective;

/// `best` (a search's best, best first) with the improving stream variant of each that
/// runs ([`streamed_variant`]) and its improving chain stream ([`chain_streams`]), best
/// first.
pub(super) fn with_stream_variants(model: &mut Model, best: &mut Vec<search::Found>) {
    let mut variants: Vec<search::Found> = Vec::new();
    for f in best.iter() {
        if f.eval.failure.is_some() {
            continue;
        }
        // The best of each kind apart: the model may rank a chain stream above a
        // variant that runs faster; the confirming runs choose.
        let chain = (chain_streams(model, &f.pick).into_iter())
            .filter(|(_, e)| e.key() < f.eval.key())
            .min_by_key(|(_, e)| e.key());
        for (pick, eval) in [streamed_variant(model, &f.pick, &f.eval), chain]
            .into_iter()
            .flatten()
        {
            if !best.iter().chain(&variants).any(|g| g.pick == pick) {
                model.keep_layouts(&pick);
                variants.push(search::Found { pick, eval });
            }
        }
    }
    best.extend(variants);
    best.sort_by_key(|f| f.eval.key());
}

/// The best of `pick`'s stream variants (every variable's layout in `Time` steps,
/// [`Model::streamed`]: from every axis, or from all but one, since a consumer's reduced
/// axis must not step) when it beats `eval`, with its evaluation. Per axis left out, the
/// step counts of [`candidates::STREAM_STEPS`] are tried from the most down, while fewer
/// steps (less latency) still gain.
pub(super) fn streamed_variant(
    model: &mut Model,
    pick: &[LayoutId],
    eval: &model::Eval,
) -> Option<(Vec<LayoutId>, model::Eval)> {
    let skips: Vec<Option<usize>> = std::iter::once(None)
        .chain((0..model.max_rank()).map(Some))
        .collect();
    let mut best: Option<(Vec<LayoutId>, model::Eval)> = None;
    for skip in skips {
        let mut last: Option<model::Eval> = None;
        for n in candidates::STREAM_STEPS {
            let p: Vec<LayoutId> = (pick.iter().enumerate())
                .map(|(v, &id)| model.streamed(v, id, (skip.as_slice(), n)).unwrap_or(id))
                .collect();
            if p == pick {
                break;
            }
            let e = model.evaluate(&p);
            let gains = last.as_ref().is_none_or(|l| e.key() < l.key());
            let to_beat = best.as_ref().map_or(eval, |b| &b.1);
            if e.key() < to_beat.key() {
                best = Some((p, e.clone()));
            }
            if !gains {
                break;
            }
            last = Some(e);
        }
    }
    best
}

/// How many of the largest free variables [`chain_streams`] streams, one at a time.
const CHAIN_STREAMS: usize = 4;

/// `pick`'s chain streams: one of its largest free variables streamed over the axes
/// its readers do not reduce ([`Model::reduced_axes`]) and the other free variables
/// whole, the tied ones derived ([`Model::propagate`]): its slices then pass down the
/// chain that follows it (a norm's rows through its reduction, the reduction's
/// broadcast back and the elementwise tail) and its small companions (a scale, a bias)
/// are loaded once. Each with its evaluation, in [`candidates::STREAM_STEPS`] steps
/// from the most down while fewer steps still gain.
fn chain_streams(model: &mut Model, pick: &[LayoutId]) -> Vec<(Vec<LayoutId>, model::Eval)> {
    let free = model.free_vars();
    let elems = |m: &Model, v: usize| -> u64 {
        let t = &m.tensor(m.vars[v].tensor).dims_at_bound;
        t.iter().fold(1u64, |a, &b| a.saturating_mul(b))
    };
    let mut big = free.clone();
    big.sort_by_key(|&v| (std::cmp::Reverse(elems(model, v)), v));
    big.truncate(CHAIN_STREAMS);
    // Layouts tried here join the candidates only in a variant kept ([`Model::keep_layouts`]).
    let mut whole = pick.to_vec();
    for &v in &free {
        whole[v] = model
            .streamed_apart(v, pick[v], (&[], 1))
            .unwrap_or(pick[v]);
    }
    let mut out = Vec::new();
    for f in big {
        let skip = model.reduced_axes(f);
        let mut last: Option<model::Eval> = None;
        let mut tried: Option<LayoutId> = None;
        for n in candidates::STREAM_STEPS {
            // Fewer steps asked may give the same layout (its shard had fewer).
            let Some(id) = model.streamed_apart(f, pick[f], (&skip, n)) else {
                break;
            };
            if tried.replace(id) == Some(id) {
                continue;
            }
            let mut p = whole.clone();
            p[f] = id;
            model.propagate(&mut p);
            if p == pick {
                break;
            }
            let e = model.evaluate(&p);
            let gains = last.as_ref().is_none_or(|l| e.key() < l.key());
            if e.failure.is_none() {
                out.push((p, e.clone()));
            }
            if !gains {
                break;
            }
            last = Some(e);
        }
    }
    out
}
/// How many of the plans found (the best by cycles, Relayouts on) are swapped, besides
/// the basins.
const SWAP_FROM: usize = 4;

/// The swap pass (docs/planner.md, level swaps): the best plans of `found` and the ends
/// of its descents (its basins) with two levels of one fan-out exchanged
/// ([`super::spread::swapped`]), scored by cycles with the Relayouts before tied reads on
/// (a swapped plan needs its gathers where the plan had them). Those that beat the best
/// of `found` join it, first, with their stream variants (their search never saw them),
/// and the confirming runs choose (each plan confirmed as it was scored:
/// [`model::Eval::chained`]).
pub(super) fn swap_pass(model: &mut Model, found: &mut search::Searched) {
    let objective = model.objective;
    model.objective = Objective::Cycles;
    let was = model.chain_inserts();
    model.set_chain_inserts(true);
    let picks: Vec<Vec<LayoutId>> = found.best.iter().map(|f| f.pick.clone()).collect();
    let mut scored: Vec<(model::Key, &Vec<LayoutId>)> = (picks.iter())
        .map(|p| (model.evaluate(p), p))
        .filter(|(e, _)| e.failure.is_none())
        .map(|(e, p)| (e.key(), p))
        .collect();
    scored.sort_by_key(|s| s.0);
    let bar = scored.first().map(|s| s.0);
    let mut best: Vec<Vec<LayoutId>> = (scored.iter().take(SWAP_FROM))
        .map(|s| s.1.clone())
        .collect();
    for b in &found.basins {
        if !best.contains(b) {
            best.push(b.clone());
        }
    }
    let mut joins: Vec<search::Found> = Vec::new();
    for pick in super::spread::swapped(model, &best) {
        let eval = model.evaluate(&pick);
        let beats = eval.failure.is_none() && bar.is_none_or(|k| eval.key() < k);
        if beats && !picks.contains(&pick) && !joins.iter().any(|f| f.pick == pick) {
            joins.push(search::Found { pick, eval });
        }
    }
    for f in &joins {
        model.keep_layouts(&f.pick);
    }
    with_stream_variants(model, &mut joins);
    model.set_chain_inserts(was || !joins.is_empty());
    found.best.splice(0..0, joins);
    model.objective = objective;
}
