//! One board first (docs/planner.md, one board first): on a machine of many boards, the
//! plan is first planned on one board (every level a network joins cut to one position),
//! and that plan, each layout a copy on every board, seeds the search over all of them.
//!
//! A search over the boards from the file's hand plans and the spread rules must find a
//! whole model's per-board layouts and its split over the boards at once; from the
//! one-board plan it needs only the second. The seed runs as one board runs (each board
//! computes the same), and the seeds are among the plans the confirming runs compare, so
//! no plan over many boards is slower than the one-board plan copied on each; the spread
//! rules and the search split it over the boards from there.

use super::model::{LayoutId, Model};
use super::spread::Levels;
use super::{PlanOptions, plan_with};
use crate::scenario::{PlanValue, Scenario, Source};
use mnsim_arch::LayoutExpr;
use mnsim_arch::layout::AxisName;
use std::collections::BTreeMap;
use std::time::Instant;

/// The one-board planning's share of the work budget (and of what is left of the time
/// limit), as a divisor: a half. The planning over every board that follows keeps its
/// whole budget, as without it (with a quarter, GPT-2's 4-board prefill planned
/// 9,274,331 cycles, with the whole 8,659,558).
pub(super) const ONE_BOARD_SHARE: u64 = 2;

/// The one-board plan of a many-board planning: its cycles on one board (the timing
/// run that confirmed it) and the seconds it took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OneBoard {
    pub total_cycles: u64,
    pub seconds: f64,
}

/// The one-board plan of `plan` as a seed of `model` (planned over every board of the
/// machine `sets` resolve to), with what it cost; `None` where the machine has one
/// board (no level a network joins) or the one-board planning fails (a program that
/// does not fit one board): the search then starts as it would without it. `opts` are
/// the one-board planning's (its share of the budget).
pub(super) fn one_board_seed(
    (sc, src): (&Scenario, &Source),
    (plan, sets, binds): (&str, &[(String, f64)], &BTreeMap<String, u64>),
    opts: &PlanOptions,
    model: &mut Model,
) -> Option<(Vec<LayoutId>, OneBoard)> {
    let joined = super::spread::joined_levels(&model.resolved().machine);
    if joined.is_empty() {
        return None;
    }
    let started = Instant::now();
    let mut one: Vec<(String, f64)> = sets.to_vec();
    one.extend((joined.iter()).map(|(level, _)| (format!("levels.{level}.count"), 1.0)));
    let on_one = on_one_board(sc, &joined);
    // As many rounds as a planning on one board plans (the seed is that plan: with one
    // round, the LLaMA scan's 2-board plan, 3.60 M cycles, was slower than its two-round
    // one-board plan, 2.48 M).
    let planned = plan_with(&on_one, src, plan, &one, binds, opts, &mut |_, _| {}).ok()?;
    let best = planned.best.first()?;
    // The plan with the one-board layouts for its variables, resolved over every board:
    // a layout that names no board is a copy on each.
    let sc = super::rounds::with_plan(sc, plan, &best.layouts)?;
    let pick = super::rounds::seed(&sc, src, (plan, sets, binds), model)?;
    let cost = OneBoard {
        total_cycles: best.total_cycles,
        seconds: started.elapsed().as_secs_f64(),
    };
    Some((pick, cost))
}

/// `sc` with every layout its plans give copied over the levels in `joined`, the
/// positions a split over one leaves going to `Time` steps (a board's share of the
/// tensor, a step at a time): its hand plans run on one board and seed the planning
/// there as they seed the planning over every board. A layout that does not parse is
/// left as it is (its plan then does not run on one board, as it did not before).
fn on_one_board(sc: &Scenario, joined: &Levels) -> Scenario {
    let mut sc = sc.clone();
    for value in sc.plans.values_mut().flat_map(|p| p.values_mut()) {
        let PlanValue::Layout(text) = value else {
            continue;
        };
        let Ok(mut e) = LayoutExpr::parse(text) else {
            continue;
        };
        for (level, fanout) in joined {
            if let Some(copied) = e.relevel_to(level, *fanout, None, AxisName::Time) {
                e = copied;
            }
        }
        *text = e.to_string();
    }
    sc
}

/// `opts` with a share of their budget for a planning that starts now: the work budget,
/// and what is left of the time limit (counted from `started`), divided by `share`.
pub(super) fn shared(opts: &PlanOptions, share: u64, started: Instant) -> PlanOptions {
    let mut o = opts.clone();
    o.search.work_limit = opts.search.work_limit.map(|w| w / share.max(1));
    let share = u32::try_from(share.max(1)).unwrap_or(u32::MAX);
    o.search.time_limit =
        (opts.search.time_limit).map(|t| t.saturating_sub(started.elapsed()) / share);
    o
}
