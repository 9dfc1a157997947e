//! A shard walk in closed form: the nested loops of its free sub-axes (count and step of
//! each), computed once per shard, so a mover copies with tight loops instead of a call
//! per run or per cell.

use super::Class;
use super::map::Shard;

/// Where a cell of a shard lies: the linear offset `Σ index[g] · weights[g]` (wrapping),
/// the LM word, the slot in the word and the time step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    pub lin: u64,
    pub addr: u64,
    pub w: u64,
    pub t: u64,
}

/// One loop of a [`Nest`]: `count` iterations, each `step` further than the one before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loop {
    pub count: u64,
    pub step: Cell,
}

/// A shard as nested loops: its cells are `start + Σ digit[k] · loops[k].step` for every
/// `digit[k]` in `0..loops[k].count`, each cell once. Loops are outer first, in the order
/// of [`Shard::for_each`] (the last one varies fastest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nest {
    pub start: Cell,
    pub loops: Vec<Loop>,
}

impl Nest {
    /// Cells of the shard.
    pub fn cells(&self) -> u64 {
        self.loops
            .iter()
            .fold(1u64, |a, l| a.saturating_mul(l.count))
    }

    /// Cells in slot 0 of their word (the words the shard touches, counted the way the
    /// per-cell walk counts them): steps never go back, so a cell is in slot 0 exactly
    /// when the start is and every loop that moves the slot is at its first iteration.
    pub fn words(&self) -> u64 {
        if self.start.w != 0 {
            return 0;
        }
        self.loops
            .iter()
            .filter(|l| l.step.w == 0)
            .fold(1u64, |a, l| a.saturating_mul(l.count))
    }

    /// Every cell, in walk order (the last loop fastest). For tests and small shards.
    pub fn for_each_cell(&self, mut f: impl FnMut(Cell)) {
        let mut digit = vec![0u64; self.loops.len()];
        if self.loops.iter().any(|l| l.count == 0) {
            return;
        }
        loop {
            let mut c = self.start;
            for (d, l) in digit.iter().zip(&self.loops) {
                c.lin = c.lin.wrapping_add(d.wrapping_mul(l.step.lin));
                c.addr += d * l.step.addr;
                c.w += d * l.step.w;
                c.t += d * l.step.t;
            }
            f(c);
            let mut k = digit.len();
            loop {
                if k == 0 {
                    return;
                }
                k -= 1;
                digit[k] += 1;
                if digit[k] < self.loops[k].count {
                    break;
                }
                digit[k] = 0;
            }
        }
    }
}

impl Shard<'_> {
    /// The shard's cells as nested loops over a linear offset `Σ index[g] · weights[g]`
    /// (a missing weight is 0) — when every cell lies below `limits` on every axis (a
    /// missing limit is no limit). `None` when some cell is out of `limits` (padding, or a
    /// run-time shape below its bound): walk it by runs ([`Shard::for_each_run`]).
    /// Closed form: one pass over the sub-axes, nothing per cell.
    pub fn nest(&self, weights: &[u64], limits: &[u64]) -> Option<Nest> {
        let l = self.layout;
        let ng = l.groups.len();
        let w_of = |g: usize| weights.get(g).copied().unwrap_or(0);
        // Per axis: the fixed part of the index and its largest value over the shard.
        let mut base = vec![0u64; ng];
        let mut top = vec![0u64; ng];
        for (j, &(g, s, radix)) in l.flat().iter().enumerate() {
            let v = match self.fixed[j] {
                Some(k) => {
                    base[g] += k * radix;
                    k * radix
                }
                None => (s.size - 1) * radix,
            };
            top[g] += v;
        }
        if (0..ng).any(|g| limits.get(g).is_some_and(|&n| top[g] >= n)) {
            return None;
        }
        let start = Cell {
            lin: (0..ng)
                .map(|g| base[g].wrapping_mul(w_of(g)))
                .fold(0u64, u64::wrapping_add),
            ..Cell::default()
        };
        let loops = l
            .flat()
            .iter()
            .zip(&self.fixed)
            .filter(|(_, f)| f.is_none())
            .map(|(&(g, s, radix), _)| {
                let mut step = Cell {
                    lin: radix.wrapping_mul(w_of(g)),
                    ..Cell::default()
                };
                match s.class {
                    Class::Mem => step.addr = s.stride,
                    Class::W => step.w = s.stride,
                    Class::Time => step.t = s.stride,
                    // Level sub-axes are fixed in a shard.
                    Class::Level(_) => {}
                }
                Loop {
                    count: s.size,
                    step,
                }
            })
            .collect();
        Some(Nest { start, loops })
    }
}
