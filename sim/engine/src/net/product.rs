//! A transfer's facts in closed form: node figures from the layout's per-level choices,
//! in work proportional to the levels' fan-outs, not to the PEs.
//!
//! The PEs a closed-form layout touches are the cartesian product of the positions each
//! layout level lets take part, and a PE's key is the mixed-radix number of one digit
//! per level (`engine::facts`). A node of the tree covers a contiguous range of PEs: the
//! levels above it are fixed, the levels below it free, and one level may be split
//! between the two (the node holds `lo` consecutive positions of it). So a node's
//! distinct bytes are its bytes per PE times the product, over the levels, of the
//! distinct digits among the positions it holds; nodes that differ only in the
//! positions of fixed levels have the same figures, and one class stands for them all.
//! [`super::cost_product`] charges a route from these classes as [`super::cost`] does
//! from per-PE facts, and a test compares the two on random layouts.

use super::{NodeStat, StageNodes};

/// A position that takes part: (position, key digit, reduced-key digit).
pub type Position = (u64, u64, u64);

/// One layout level of a [`Product`]: its fan-out and the positions that take part, in
/// position order, each with its key digit and its reduced-key digit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choices {
    pub fanout: u64,
    /// (position, key digit, reduced-key digit); digits are below the fan-out.
    pub positions: Vec<Position>,
}

/// The facts of a transfer's PEs as a product of per-level choices (root-most level
/// first): every PE of the product takes part, with `bytes` of LM and, when every shard
/// is whole, `valid` real elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Product {
    pub levels: Vec<Choices>,
    /// LM bytes of every PE's shard.
    pub bytes: u64,
    /// Real elements of every PE's shard, when they are all the same (no padding);
    /// `None` when they vary, and a DRAM stage must then be charged per PE.
    pub valid: Option<u64>,
}

/// Which digit of a position a count reads.
#[derive(Clone, Copy)]
enum Digit {
    Key,
    Reduced,
}

/// The digit `d` of a position.
fn digit(x: &Position, d: Digit) -> u64 {
    match d {
        Digit::Key => x.1,
        Digit::Reduced => x.2,
    }
}

/// The distinct digits among `positions`: counted in one pass when they do not decrease
/// (a split level's digits are its positions, a replicated level's all 0), else sorted.
fn distinct(positions: &[Position], d: Digit) -> u64 {
    if positions
        .windows(2)
        .all(|w| digit(&w[0], d) <= digit(&w[1], d))
    {
        let steps = positions
            .windows(2)
            .filter(|w| digit(&w[0], d) != digit(&w[1], d))
            .count();
        return (!positions.is_empty()) as u64 + steps as u64;
    }
    let mut v: Vec<u64> = positions.iter().map(|x| digit(x, d)).collect();
    v.sort_unstable();
    v.dedup();
    v.len() as u64
}

/// Whether two runs of positions have the same set of key digits: walked in step where
/// both runs' digits do not decrease (a split level's), else sorted.
fn same_digits(a: &[Position], b: &[Position]) -> bool {
    let rising = |s: &[Position]| s.windows(2).all(|w| w[0].1 <= w[1].1);
    if rising(a) && rising(b) {
        let mut x = a.iter().map(|p| p.1);
        let mut y = b.iter().map(|p| p.1);
        let (mut px, mut py) = (None, None);
        loop {
            let nx = x.by_ref().find(|&d| Some(d) != px);
            let ny = y.by_ref().find(|&d| Some(d) != py);
            if nx != ny {
                return false;
            }
            if nx.is_none() {
                return true;
            }
            (px, py) = (nx, ny);
        }
    }
    let set = |s: &[Position]| {
        let mut v: Vec<u64> = s.iter().map(|x| x.1).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    set(a) == set(b)
}

/// The prefixes a node's children are under (see [`Product::link`]): how many, and
/// whether they are all one.
#[derive(Clone, Copy)]
struct Prefixes {
    count: u64,
    alike: bool,
}

/// Adds to `out` the children of a node that stands for `many` alike: under each of
/// `prefixes` (in order) the runs `kids`, each with the bytes it receives. Returns the
/// most bytes a child receives.
fn children(
    out: &mut StageNodes,
    prefixes: Prefixes,
    kids: &[(&[Position], u64)],
    many: u64,
) -> u64 {
    if prefixes.count == 0 {
        return 0;
    }
    let maxc = kids.iter().map(|k| k.1).max().unwrap_or(0);
    // The children that receive bytes are (prefix, run) for every prefix and every such
    // run; they all receive the same data when they share the first's prefix and digits.
    let mut sending = (kids.iter().filter(|k| k.1 > 0)).map(|k| k.0);
    if let Some(r0) = sending.next() {
        let more = sending.clone().next().is_some();
        if prefixes.count > 1 || more {
            out.any_multi = true;
            if !prefixes.alike || sending.any(|r| !same_digits(r, r0)) {
                out.all_same = false;
            }
        }
    }
    let sum = (kids.iter().map(|k| k.1))
        .fold(0, u64::saturating_add)
        .saturating_mul(prefixes.count);
    out.total_child = out.total_child.saturating_add(sum.saturating_mul(many));
    out.max_child = out.max_child.max(maxc);
    maxc
}

/// Where nodes with `per` PEs under each cut the levels: (the level they split, how many
/// consecutive positions of it one node holds). `None` if `per` does not fall on the
/// levels' positions.
fn cut(levels: &[Choices], per: u64) -> Option<(usize, u64)> {
    let per = per.max(1);
    let mut under = 1u64;
    for i in (0..levels.len()).rev() {
        let fan = levels[i].fanout.max(1);
        let above = under.checked_mul(fan)?;
        if above <= per {
            if i == 0 {
                // One node holds every PE.
                return Some((0, fan));
            }
            under = above;
            continue;
        }
        if !per.is_multiple_of(under) {
            return None;
        }
        let lo = per / under;
        return fan.is_multiple_of(lo).then_some((i, lo));
    }
    None
}

impl Product {
    /// The PEs that take part.
    pub fn pes(&self) -> u64 {
        self.above(self.levels.len())
    }

    /// The positions of level `i` a node holding the `lo` positions from `hi · lo` has
    /// (positions are in order: a run of them).
    fn held(&self, i: usize, lo: u64, hi: u64) -> &[Position] {
        let all = &self.levels[i].positions;
        let from = all.partition_point(|x| x.0 < hi.saturating_mul(lo));
        let to = all.partition_point(|x| x.0 < hi.saturating_add(1).saturating_mul(lo));
        &all[from..to]
    }

    /// Distinct digits of the levels below `i` (all their positions).
    fn below(&self, i: usize, d: Digit) -> u64 {
        self.levels[i + 1..]
            .iter()
            .map(|l| distinct(&l.positions, d))
            .fold(1u64, u64::saturating_mul)
    }

    /// How many nodes cut at level `i` share each class: the nodes differ above `i` only
    /// in the positions taking part there, and have the same figures.
    fn above(&self, i: usize) -> u64 {
        self.levels[..i]
            .iter()
            .fold(1u64, |a, l| a.saturating_mul(l.positions.len() as u64))
    }

    /// Node classes of nodes with `per` PEs under each: per class, (the range `hi` of
    /// the cut level, distinct digits of `d`, how many nodes). `None` if `per` does not
    /// fall on the levels.
    fn classes(&self, per: u64, d: Digit) -> Option<Vec<(u64, u64, u64)>> {
        let (i, lo) = cut(&self.levels, per)?;
        let many = self.above(i);
        let rest = self.below(i, d);
        let fan = self.levels[i].fanout.max(1);
        let mut out = Vec::new();
        if many == 0 || rest == 0 {
            return Some(out);
        }
        for hi in 0..fan / lo {
            let n = distinct(self.held(i, lo, hi), d);
            if n > 0 {
                out.push((hi, n.saturating_mul(rest), many));
            }
        }
        Some(out)
    }

    /// The prefixes of the children of the node holding the `lo` positions from
    /// `hi · lo` of level `i`, cut at level `j` > `i`: the key digits of their positions
    /// at the levels from `i` to `j`, mixed radix, in the order of the positions.
    fn prefixes(&self, i: usize, (lo, hi): (u64, u64), j: usize) -> Prefixes {
        let held = self.held(i, lo, hi);
        let mids = &self.levels[i + 1..j];
        let count = (mids.iter()).fold(held.len() as u64, |a, l| {
            a.saturating_mul(l.positions.len() as u64)
        });
        let one = |s: &[Position]| s.iter().all(|x| x.1 == s[0].1);
        if one(held) && mids.iter().all(|l| one(&l.positions)) {
            return Prefixes { count, alike: true };
        }
        // Digits below their fan-outs and no overflow: distinct digits give distinct
        // prefixes, and some level has two.
        let top = held.iter().map(|x| x.1).max().unwrap_or(0);
        let fits = mids.iter().try_fold(top, |p, l| {
            let d = l.positions.iter().map(|x| x.1).max().unwrap_or(0);
            (d < l.fanout).then_some(())?;
            p.checked_mul(l.fanout)?.checked_add(d)
        });
        if fits.is_some() {
            return Prefixes {
                count,
                alike: false,
            };
        }
        let mut all: Vec<u64> = held.iter().map(|x| x.1).collect();
        for l in mids {
            all = (all.iter())
                .flat_map(|&p| {
                    let f = l.fanout;
                    (l.positions.iter()).map(move |x| p.saturating_mul(f).saturating_add(x.1))
                })
                .collect();
        }
        Prefixes {
            count: all.len() as u64,
            alike: all.iter().all(|&p| Some(&p) == all.first()),
        }
    }

    /// A link stage's nodes: each node of `per` PEs sends its distinct bytes (by reduced
    /// keys when `reduce`) to its children of `child` PEs, each of which receives its
    /// own distinct bytes.
    pub(super) fn link(&self, per: u64, child: u64, reduce: bool) -> Option<StageNodes> {
        let parent = if reduce { Digit::Reduced } else { Digit::Key };
        let (i, lo) = cut(&self.levels, per)?;
        let (j, lo2) = cut(&self.levels, child)?;
        if j < i || (j == i && !lo.is_multiple_of(lo2)) {
            return None;
        }
        let mut out = StageNodes::empty();
        let classes = self.classes(per, parent)?;
        let below_j = self.below(j, Digit::Key);
        // A child's run of level `j`'s positions and the bytes it receives (none when
        // it holds no position).
        let kid = |hi2: u64| -> Option<(&[Position], u64)> {
            let run = self.held(j, lo2, hi2);
            if run.is_empty() || below_j == 0 {
                return None;
            }
            let b = distinct(run, Digit::Key)
                .saturating_mul(below_j)
                .saturating_mul(self.bytes);
            Some((run, b))
        };
        // Below level `i`, every node's children hold the same runs of level `j` (one
        // per `hi2`), once per prefix of fixed digits of the levels from `i` to `j`.
        let fan2 = self.levels[j].fanout.max(1);
        let runs: Vec<(&[Position], u64)> = if j == i {
            Vec::new()
        } else {
            (0..fan2 / lo2).filter_map(kid).collect()
        };
        let mut own: Vec<(&[Position], u64)> = Vec::new();
        for (hi, pd, many) in classes {
            // The node's children: per prefix (the key digits of their positions at the
            // levels from `i` to `j`, mixed radix; one prefix, 0, when `j == i`) the runs.
            let prefixes = if j == i {
                own.clear();
                own.extend((hi * (lo / lo2)..(hi + 1) * (lo / lo2)).filter_map(kid));
                Prefixes {
                    count: 1,
                    alike: true,
                }
            } else {
                self.prefixes(i, (lo, hi), j)
            };
            let kids = if j == i { &own } else { &runs };
            let max_child = children(&mut out, prefixes, kids, many);
            out.nodes.push(NodeStat {
                n: 0,
                bytes: pd.saturating_mul(self.bytes),
                max_child,
                count: many,
            });
        }
        Some(out)
    }

    /// A DRAM stage's nodes of `per` PEs each: the real bytes of their distinct shards.
    /// `None` when the shards' real elements vary.
    pub(super) fn dram(&self, per: u64, elem_bytes: u64) -> Option<Vec<NodeStat>> {
        let valid = self.valid?;
        let each = valid.saturating_mul(elem_bytes);
        Some(
            self.classes(per, Digit::Key)?
                .into_iter()
                .map(|(_, n, many)| NodeStat {
                    n: 0,
                    bytes: n.saturating_mul(each),
                    max_child: 0,
                    count: many,
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests;
