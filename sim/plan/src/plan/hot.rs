//! The hot pass (docs/planner.md, the hot pass): the chains that hold the best plan's
//! cycles, searched again. A search of a whole model spends its budget in its first
//! round of moves, on the variables many layers share; a chain of one part that holds
//! most of the run (GPT-2's tied LM head: the embedding table loaded with a broadcast,
//! its product's K split and reduced) is never moved. This pass ranks the chains of the
//! best plan by the model's cycles of the ops whose layouts they decide
//! ([`Model::chain_heat`]), hottest first, and moves the first [`HOT_CHAINS`] of them
//! over their core candidates (each move a whole chain, Relayouts before tied reads
//! on), on a work budget of its own.

use super::model::Model;
use super::{PlanOptions, search};
use mnsim_reports::Objective;
use std::time::Instant;

/// The chains the hot pass moves: the hottest this many.
pub(super) const HOT_CHAINS: usize = 8;

/// The hot pass's share of the work budget, against the cycles pass's whole budget: all
/// of it again (a whole model's moves are dear in work and cheap in time: GPT-2's
/// decode step planned 5,729,827 cycles with a quarter, 5,021,815 with the whole, in
/// the same 23 s).
const HOT_SHARE: u64 = 1;

/// The hot pass from the best plan of `found`: its plans that beat that plan by the
/// model's cycles go first among `found`'s; otherwise the model is left as it was.
pub(super) fn hot_pass(
    model: &mut Model,
    found: &mut search::Searched,
    opts: &PlanOptions,
    started: Instant,
    progress: &mut dyn FnMut(u64, u64),
) {
    let Some(best) = found.best.first().filter(|b| b.eval.failure.is_none()) else {
        return;
    };
    let deadline = (opts.search.time_limit).and_then(|t| started.checked_add(t));
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return;
    }
    let (pick, bar) = (best.pick.clone(), best.eval.key());
    let objective = model.objective;
    let was = model.chain_inserts();
    model.objective = Objective::Cycles;
    // Relayouts before tied reads on (as the chain phase has them): a chain moved
    // alone needs them where it meets the chains that stay.
    model.set_chain_inserts(true);
    let mut wins = Vec::new();
    if let Some(heat) = model.chain_heat(&pick) {
        let mut roots: Vec<usize> = (0..heat.len()).filter(|&v| heat[v] > 0).collect();
        roots.sort_by_key(|&v| (std::cmp::Reverse(heat[v]), v));
        roots.truncate(HOT_CHAINS);
        let mut sopts = opts.search.clone();
        sopts.top = opts.search.top.max(1);
        sopts.work_limit = (opts.search.work_limit).map(|w| w / HOT_SHARE);
        sopts.time_limit = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let searched = search::descend_vars(model, &pick, &roots, &sopts, progress);
        wins = (searched.best.into_iter())
            .filter(|f| f.eval.failure.is_none() && f.eval.key() < bar)
            .filter(|f| !found.best.iter().any(|g| g.pick == f.pick))
            .collect();
    }
    for f in &wins {
        model.keep_layouts(&f.pick);
    }
    model.set_chain_inserts(was || !wins.is_empty());
    found.best.splice(0..0, wins);
    model.objective = objective;
}
