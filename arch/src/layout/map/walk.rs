//! The shard walker: by runs of the innermost free sub-axis (`for_each_run`) or per
//! cell (`for_each_linear`), keeping the linear offset, the cell and the validity by
//! additions only.

use super::Shard;
use crate::layout::Class;

/// What every cell of a [`Run`] advances by over the one before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStep {
    /// The logical axis the run walks, and the index step along it.
    pub g: usize,
    pub radix: u64,
    /// Linear offset (`Σ index · weight`, wrapping), LM word, slot and time step.
    pub lin: u64,
    pub addr: u64,
    pub w: u64,
    pub t: u64,
}

/// Cells of a shard along its innermost free sub-axis: the first at `lin`, `addr`, `w`,
/// `t`, each next one `step` further; the first `valid` lie within the limits walked
/// against (the real elements), the rest are padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub valid: u64,
    pub len: u64,
    pub lin: u64,
    pub addr: u64,
    pub w: u64,
    pub t: u64,
    pub step: RunStep,
}

/// A free sub-axis of a shard walk.
#[derive(Clone, Copy, Debug)]
struct Free {
    g: usize,
    size: u64,
    radix: u64,
    class: Class,
    stride: u64,
    dlin: u64,
}

/// The buffers of a shard walk.
#[derive(Default)]
struct Scratch {
    index: Vec<u64>,
    free: Vec<Free>,
    digit: Vec<u64>,
}

impl Shard<'_> {
    /// Walks the shard like [`Shard::for_each`], keeping incrementally a linear offset
    /// `Σ index[g] · weights[g]` and whether the index lies below `limits` on every axis.
    /// Calls `f(valid, linear, addr, w, t)`: no index slice, no per-element arithmetic
    /// beyond a few additions — the fast path of functional moves.
    pub fn for_each_linear(
        &self,
        weights: &[u64],
        limits: &[u64],
        mut f: impl FnMut(bool, u64, u64, u64, u64),
    ) {
        self.walk(weights, limits, |_, ok, lin, a, w, t| f(ok, lin, a, w, t));
    }

    /// Walks the shard by runs: one call per step of the outer sub-axes, covering the
    /// whole innermost free sub-axis (`len` cells, the first `valid` of them below
    /// `limits`), with the steps every cell of the run advances by in `step`. A mover
    /// copies a run whose cells are contiguous in both source and destination in one go.
    pub fn for_each_run(&self, weights: &[u64], limits: &[u64], mut f: impl FnMut(&Run)) {
        self.walk_runs(weights, limits, |_, r| f(r));
    }

    /// Per cell: `f(index, valid, linear, addr, w, t)`, expanded from the runs.
    pub(super) fn walk(
        &self,
        weights: &[u64],
        limits: &[u64],
        mut f: impl FnMut(&[u64], bool, u64, u64, u64, u64),
    ) {
        let mut idx: Vec<u64> = Vec::new();
        self.walk_runs(weights, limits, |index, r| {
            idx.clear();
            idx.extend_from_slice(index);
            let (mut l, mut a, mut w, mut t) = (r.lin, r.addr, r.w, r.t);
            for k in 0..r.len {
                f(&idx, k < r.valid, l, a, w, t);
                if let Some(x) = idx.get_mut(r.step.g) {
                    *x += r.step.radix;
                }
                l = l.wrapping_add(r.step.lin);
                a += r.step.addr;
                w += r.step.w;
                t += r.step.t;
            }
        });
    }

    /// The one walker: `f(index, run)` per run of the innermost free sub-axis, the outer
    /// ones by an odometer; the linear offset, the count of axes out of `limits` and the
    /// cell move by additions only. `index` is the run's first cell.
    fn walk_runs(&self, weights: &[u64], limits: &[u64], mut f: impl FnMut(&[u64], &Run)) {
        // Scratch reused across the shards a thread walks: a move walks one shard per PE,
        // and three allocations per shard were most of a small move's cost. A walk
        // inside `f` (none today) finds the scratch taken and allocates its own.
        thread_local! {
            static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
        }
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut sc) => self.walk_runs_in(&mut sc, weights, limits, &mut f),
            Err(_) => self.walk_runs_in(&mut Scratch::default(), weights, limits, &mut f),
        })
    }

    fn walk_runs_in(
        &self,
        sc: &mut Scratch,
        weights: &[u64],
        limits: &[u64],
        f: &mut impl FnMut(&[u64], &Run),
    ) {
        let lim = |g: usize| limits.get(g).copied().unwrap_or(u64::MAX);
        let (mut lin, mut bad) = self.start(sc, weights, limits);
        let Scratch { index, free, digit } = sc;
        let (mut addr, mut w, mut t) = (0u64, 0u64, 0u64);
        digit.clear();
        digit.resize(free.len(), 0);
        // The innermost free sub-axis runs as a tight loop: its validity is a prefix of
        // the run, known at the run's start. The odometer turns the outer digits only.
        let Some(inner) = free.last() else {
            f(
                index,
                &Run {
                    valid: (bad == 0) as u64,
                    len: 1,
                    lin,
                    addr,
                    w,
                    t,
                    step: RunStep::default(),
                },
            );
            return;
        };
        let (da, dw, dt) = match inner.class {
            Class::Mem => (inner.stride, 0, 0),
            Class::W => (0, inner.stride, 0),
            Class::Time => (0, 0, inner.stride),
            Class::Level(_) => (0, 0, 0),
        };
        let step = RunStep {
            g: inner.g,
            radix: inner.radix,
            lin: inner.dlin,
            addr: da,
            w: dw,
            t: dt,
        };
        let outer = free.len() - 1;
        loop {
            let base = index[inner.g];
            let limit = lim(inner.g);
            let others_bad = bad - (base >= limit) as usize;
            let n_valid = if others_bad > 0 || base >= limit {
                0
            } else {
                inner.size.min((limit - base).div_ceil(inner.radix))
            };
            f(
                index,
                &Run {
                    valid: n_valid,
                    len: inner.size,
                    lin,
                    addr,
                    w,
                    t,
                    step,
                },
            );
            let mut d = outer;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                let a = &free[d];
                let was_bad = index[a.g] >= lim(a.g);
                let (step_i, step_lin, step_s): (i64, u64, i64);
                if digit[d] + 1 < a.size {
                    digit[d] += 1;
                    step_i = a.radix as i64;
                    step_lin = a.dlin;
                    step_s = a.stride as i64;
                } else {
                    let back = a.size - 1;
                    digit[d] = 0;
                    step_i = -((back * a.radix) as i64);
                    step_lin = (back.wrapping_mul(a.dlin)).wrapping_neg();
                    step_s = -((back * a.stride) as i64);
                }
                index[a.g] = (index[a.g] as i64 + step_i) as u64;
                lin = lin.wrapping_add(step_lin);
                match a.class {
                    Class::Mem => addr = (addr as i64 + step_s) as u64,
                    Class::W => w = (w as i64 + step_s) as u64,
                    Class::Time => t = (t as i64 + step_s) as u64,
                    Class::Level(_) => {}
                }
                let now_bad = index[a.g] >= lim(a.g);
                if was_bad != now_bad {
                    if now_bad {
                        bad += 1;
                    } else {
                        bad -= 1;
                    }
                }
                if step_i > 0 {
                    break;
                }
            }
        }
    }

    /// Fills `sc` for a walk from the shard's first cell: the index of the fixed sub-axes
    /// (the free ones at 0) and the free sub-axes in order, innermost last. Returns the
    /// first cell's linear offset and how many axes it has out of `limits`.
    fn start(&self, sc: &mut Scratch, weights: &[u64], limits: &[u64]) -> (u64, usize) {
        let l = self.layout;
        let ng = l.groups.len();
        let Scratch { index, free, .. } = sc;
        index.clear();
        index.resize(ng, 0);
        for (j, &(g, _, radix)) in l.flat().iter().enumerate() {
            if let Some(k) = self.fixed[j] {
                index[g] += k * radix;
            }
        }
        let w_of = |g: usize| weights.get(g).copied().unwrap_or(0);
        let lim = |g: usize| limits.get(g).copied().unwrap_or(u64::MAX);
        let lin: u64 = (0..ng)
            .map(|g| index[g].wrapping_mul(w_of(g)))
            .fold(0u64, u64::wrapping_add);
        let bad = (0..ng).filter(|&g| index[g] >= lim(g)).count();
        free.clear();
        free.extend(
            l.flat()
                .iter()
                .enumerate()
                .filter(|(j, _)| self.fixed[*j].is_none())
                .map(|(_, &(g, s, radix))| Free {
                    g,
                    size: s.size,
                    radix,
                    class: s.class,
                    stride: s.stride,
                    dlin: radix.wrapping_mul(w_of(g)),
                }),
        );
        (lin, bad)
    }
}
