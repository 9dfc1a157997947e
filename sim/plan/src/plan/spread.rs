//! Plans across boards (docs/planner.md, many boards): the starts that spread a plan
//! over the levels a machine's networks join (the boards of a node, the nodes of a zone).
//!
//! A plan found for the levels of one board is spread whole, one rule for every
//! variable, so that producers and consumers agree without a move of each: every board
//! a copy (each board does all the work on its own data), or the boards on the outermost
//! axis of one length in every tensor that has it and copies elsewhere. Splitting the
//! tokens' length is data (sequence) parallel: each board computes its tokens with every
//! weight, and what needs all of them (attention's keys) is gathered over the network by
//! the Relayouts the model inserts. Splitting a weight's column length is tensor
//! parallel: each board holds a part of each weight, and partial sums meet in an
//! all-reduce. Each rule is one evaluation; the best spread plans join the search's
//! starts, which the search then moves variable by variable. A machine of one board has
//! no such level, and its starts are what they were.

use super::model::{Key, LayoutId, Model};
use mnsim_arch::Machine;
use mnsim_arch::layout::AxisName;

/// How many spread plans join the starts (the best first).
const SPREAD_STARTS: usize = 2;

/// The levels the machine's networks join, with their fan-outs, root-most first: the
/// boards of a node (`Board`, 4 on mn3_node), the nodes of a zone. Empty on one board.
pub fn spread_levels(m: &Machine) -> Vec<(String, u64)> {
    (0..m.levels.len())
        .filter(|&k| m.network_at(k).is_some())
        .filter_map(|k| m.levels.get(k + 1))
        .filter(|l| l.addressable && l.count > 1)
        .map(|l| (l.name.clone(), l.count))
        .collect()
}

/// A rule that spreads a plan over one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Every board a copy.
    Copies,
    /// The level on each tensor's outermost axis of this length; copies where none is.
    Length(u64),
}

/// The spread plans of `starts` (evaluated by `model`), best first: at most
/// [`SPREAD_STARTS`] of them, those that beat the best start; none on a machine of one
/// board. The levels spread one after the other, each from the best spread of the level
/// before. `stop` ends the rules early (a limit). The model's Relayouts before tied reads
/// are on while it evaluates them (a spread plan needs its gathers), and stay on if a
/// spread plan is returned ([`Model::set_chain_inserts`]).
pub(super) fn spread_starts(
    model: &mut Model,
    starts: &[Vec<LayoutId>],
    stop: &mut dyn FnMut(&Model) -> bool,
) -> Vec<Vec<LayoutId>> {
    let levels = spread_levels(&model.resolved().machine);
    if levels.is_empty() || starts.is_empty() {
        return Vec::new();
    }
    let bar = (starts.iter()).map(|s| model.evaluate(s).key()).min();
    let was = model.chain_inserts();
    model.set_chain_inserts(true);
    let mut found: Vec<(Key, Vec<LayoutId>)> = Vec::new();
    for start in starts {
        let mut base = start.clone();
        for (level, fanout) in &levels {
            let mut rules = vec![Rule::Copies];
            rules.extend(lengths(model, *fanout).into_iter().map(Rule::Length));
            let mut here: Vec<(Key, Vec<LayoutId>)> = Vec::new();
            let tries = rules
                .iter()
                .flat_map(|&r| [(r, AxisName::Mem), (r, AxisName::Time)]);
            for (rule, freed) in tries {
                if stop(model) {
                    break;
                }
                let pick = spread(model, &base, (level, *fanout), (rule, freed));
                let e = model.evaluate(&pick);
                if e.failure.is_none() {
                    here.push((e.key(), pick));
                }
            }
            here.sort_by_key(|a| a.0);
            // The next level spreads the best plan of this one.
            if let Some((_, p)) = here.first() {
                base = p.clone();
            }
            found.extend(here);
        }
    }
    found.sort_by_key(|a| a.0);
    found.dedup_by(|a, b| a.1 == b.1);
    let out: Vec<Vec<LayoutId>> = (found.into_iter())
        .filter(|(k, _)| bar.is_some_and(|b| *k < b))
        .take(SPREAD_STARTS)
        .map(|(_, p)| p)
        .collect();
    model.set_chain_inserts(was || !out.is_empty());
    out
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
