//! The hot pass (docs/planner.md, the hot pass): the chains that hold the best plan's
//! cycles, searched again. A search of a whole model spends its budget in its first
//! round of moves, on the variables many layers share; a chain of one part that holds
//! most of the run (GPT-2's tied LM head: the embedding table loaded with a broadcast,
//! its product's K split and reduced) is never moved. This pass ranks the chains of the
//! best plan by the model's cycles of the ops whose layouts they decide
//! ([`Model::chain_heat`]), hottest first, and moves the first [`HOT_CHAINS`] of them
//! over their core candidates (each move a whole chain, Relayouts before tied reads
//! on), on a work budget of its own.

use super::model::{Key, LayoutId, Model};
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

/// The hot pass from the first plan of `found` (the cycles pass's best) and from its
/// best by the model's cycles where that is another (`found` holds each pass's best in
/// pass order and the spread pass's after them, so its first is not always its best):
/// the plans of each descent that beat the plan it started from go first among
/// `found`'s; otherwise the model is left as it was.
pub(super) fn hot_pass(
    model: &mut Model,
    found: &mut search::Searched,
    opts: &PlanOptions,
    started: Instant,
    progress: &mut dyn FnMut(u64, u64),
) {
    let deadline = (opts.search.time_limit).and_then(|t| started.checked_add(t));
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return;
    }
    let first = (found.best.first())
        .filter(|b| b.eval.failure.is_none())
        .map(|b| (b.eval.key(), b.pick.clone()));
    let objective = model.objective;
    let was = model.chain_inserts();
    model.objective = Objective::Cycles;
    // Relayouts before tied reads on (as the chain phase has them): a chain moved
    // alone needs them where it meets the chains that stay.
    model.set_chain_inserts(true);
    let best = (found.best.iter())
        .map(|f| (model.evaluate(&f.pick), &f.pick))
        .filter(|(e, _)| e.failure.is_none())
        .map(|(e, p)| (e.key(), p.clone()))
        .min_by_key(|(k, _)| *k);
    let mut bases: Vec<(Key, Vec<LayoutId>)> = first.into_iter().collect();
    if let Some(b) = best.filter(|b| bases.iter().all(|(_, p)| *p != b.1)) {
        bases.push(b);
    }
    let mut wins: Vec<search::Found> = Vec::new();
    for (bar, pick) in bases {
        let mut from = vec![pick.clone()];
        if let Some(f) = kernel_pass(model, &pick, bar, opts, deadline) {
            from.push(f.pick.clone());
            if !found.best.iter().chain(&wins).any(|g| g.pick == f.pick) {
                wins.push(f);
            }
        }
        let descended: Vec<search::Found> = from
            .iter()
            .flat_map(|p| descend_hot(model, p, opts, deadline, progress))
            .collect();
        for f in descended {
            let beats = f.eval.failure.is_none() && f.eval.key() < bar;
            let new = !found.best.iter().chain(&wins).any(|g| g.pick == f.pick);
            if beats && new {
                wins.push(f);
            }
        }
    }
    for f in &wins {
        model.keep_layouts(&f.pick);
    }
    model.set_chain_inserts(was || !wins.is_empty());
    found.best.splice(0..0, wins);
    model.objective = objective;
}

/// The kernels the kernel pass moves: the hottest this many.
pub(super) const HOT_KERNELS: usize = 4;

/// The kernel pass's share of the work budget, against the cycles pass's whole budget.
/// A kernel move is a whole-program evaluation (a few milliseconds on a whole model),
/// and a kernel has up to a few hundred strategies: GPT-2's prefill spends about three
/// budgets in under a second on its four hottest kernels.
const KERNEL_SHARE: u64 = 4;

/// The kernel pass (docs/planner.md): from `pick` (key `bar`), the operands of each of
/// the [`HOT_KERNELS`] hottest kernels moved together to each of the kernel's
/// strategies ([`Model::kernel_moves`]), the best move kept before the next kernel's;
/// the plan reached, where it beats `pick`. More sweeps, over the hottest kernels of
/// the plan reached, were tried: GPT-2's prefill planned 6.50 M cycles with four
/// against 4.66 M with one (the search after it starts from elsewhere).
fn kernel_pass(
    model: &mut Model,
    pick: &[LayoutId],
    bar: Key,
    opts: &PlanOptions,
    deadline: Option<Instant>,
) -> Option<search::Found> {
    let work_end = (opts.search.work_limit)
        .map(|w| search::work(model).saturating_add(w.saturating_mul(KERNEL_SHARE)));
    let over = |m: &Model| {
        deadline.is_some_and(|d| Instant::now() >= d)
            || work_end.is_some_and(|w| search::work(m) >= w)
    };
    let mut cur: Option<search::Found> = None;
    for k in model.hot_kernels(pick, HOT_KERNELS) {
        let base = cur.as_ref().map_or(pick.to_vec(), |f| f.pick.clone());
        let mut best = cur.clone();
        for m in model.kernel_moves(&base, k) {
            if over(model) {
                break;
            }
            let b = best.as_ref().map_or(bar, |f| f.eval.key());
            if let Some(e) = model.evaluate_below(&m, Some(b))
                && e.failure.is_none()
                && e.key() < b
            {
                best = Some(search::Found { pick: m, eval: e });
            }
        }
        cur = best;
    }
    cur
}

/// The [`HOT_CHAINS`] hottest chains of `pick` moved, one after another, on the hot
/// pass's budget: the plans the descent kept (none where the model has no heat for it).
fn descend_hot(
    model: &mut Model,
    pick: &[LayoutId],
    opts: &PlanOptions,
    deadline: Option<Instant>,
    progress: &mut dyn FnMut(u64, u64),
) -> Vec<search::Found> {
    let Some(heat) = model.chain_heat(pick) else {
        return Vec::new();
    };
    let mut roots: Vec<usize> = (0..heat.len()).filter(|&v| heat[v] > 0).collect();
    roots.sort_by_key(|&v| (std::cmp::Reverse(heat[v]), v));
    roots.truncate(HOT_CHAINS);
    let mut sopts = opts.search.clone();
    sopts.top = opts.search.top.max(1);
    sopts.work_limit = (opts.search.work_limit).map(|w| w / HOT_SHARE);
    sopts.time_limit = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    search::descend_vars(model, pick, &roots, &sopts, progress).best
}
