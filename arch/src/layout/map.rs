//! The placement map, its inverse, closed-form counts and the canonical form.

use super::{Class, Inverse, LevelUse, Placement, SubAxis, TensorLayout, invert, invert_into};
use crate::dtype::DType;
use std::fmt::Write as _;

/// Closed-form per-level figures (no element enumeration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelStat {
    pub name: String,
    pub fanout: u64,
    pub replicated: bool,
    /// Positions among siblings that hold data.
    pub used: u64,
    /// Positions among siblings that hold nothing (`fanout - used`).
    pub idle: u64,
    /// Distinct (padded) elements under one used node of this level, all time steps.
    pub elems_per_node: u64,
    /// Distinct LM words under one used node of this level, all time steps.
    pub words_per_node: u64,
    /// Used nodes of this level in the whole (addressable) tree.
    pub nodes_used: u64,
}

impl TensorLayout {
    /// The logical (unpadded) shape.
    pub fn logical_shape(&self) -> &[u64] {
        &self.logical
    }
    /// The padded shape (group products).
    pub fn padded_shape(&self) -> &[u64] {
        &self.padded
    }
    /// Resolved sub-axes per group.
    pub fn groups(&self) -> &[Vec<SubAxis>] {
        &self.groups
    }
    /// Use of every addressable level, root-most first.
    pub fn levels(&self) -> &[LevelUse] {
        &self.levels
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn word_bytes(&self) -> u64 {
        self.word_bytes
    }
    /// Element slots in one word.
    pub fn slots(&self) -> u64 {
        self.slots
    }
    /// LM words one PE's shard spans (max address + 1).
    pub fn footprint_words(&self) -> u64 {
        self.footprint_words
    }

    fn class_product(&self, want: impl Fn(Class) -> bool) -> u64 {
        self.groups
            .iter()
            .flatten()
            .filter(|s| want(s.class))
            .fold(1u64, |a, s| a.saturating_mul(s.size))
    }

    /// Words a PE holds per time step (distinct addresses used).
    pub fn words_per_step(&self) -> u64 {
        self.class_product(|c| c == Class::Mem)
    }
    /// Distinct time steps.
    pub fn time_steps(&self) -> u64 {
        self.class_product(|c| c == Class::Time)
    }
    /// Time steps the layout spans (max step + 1): steps run in sequence.
    pub fn time_span(&self) -> u64 {
        self.groups
            .iter()
            .flatten()
            .filter(|s| s.class == Class::Time)
            .fold(0u64, |a, s| {
                a.saturating_add((s.size - 1).saturating_mul(s.stride))
            })
            .saturating_add(1)
    }
    /// Padded elements one used PE holds over all time steps.
    pub fn elems_per_pe(&self) -> u64 {
        self.class_product(|c| !matches!(c, Class::Level(_)))
    }
    /// Words one used PE holds over all time steps.
    pub fn words_per_pe(&self) -> u64 {
        self.words_per_step().saturating_mul(self.time_steps())
    }
    /// Logical elements.
    pub fn logical_elems(&self) -> u64 {
        self.logical.iter().fold(1u64, |a, &b| a.saturating_mul(b))
    }
    /// Padded elements (one replica).
    pub fn padded_elems(&self) -> u64 {
        self.padded.iter().fold(1u64, |a, &b| a.saturating_mul(b))
    }
    /// Padding positions (one replica).
    pub fn padding_elems(&self) -> u64 {
        self.padded_elems() - self.logical_elems()
    }
    /// Copies of every element (product of replicated fan-outs).
    pub fn replicas(&self) -> u64 {
        self.levels
            .iter()
            .filter(|l| l.replicated)
            .fold(1u64, |a, l| a.saturating_mul(l.fanout))
    }
    /// PEs that hold data, in the whole addressable tree.
    pub fn pes_used(&self) -> u64 {
        self.levels
            .iter()
            .fold(1u64, |a, l| a.saturating_mul(l.used))
    }
    /// Distinct shards (PEs holding different data).
    pub fn distinct_shards(&self) -> u64 {
        self.levels
            .iter()
            .filter(|l| !l.replicated)
            .fold(1u64, |a, l| a.saturating_mul(l.used))
    }

    /// Per-level closed-form figures, root-most first.
    pub fn level_stats(&self) -> Vec<LevelStat> {
        let n = self.levels.len();
        let mut out = Vec::with_capacity(n);
        let mut nodes_used = 1u64;
        for (i, l) in self.levels.iter().enumerate() {
            nodes_used = nodes_used.saturating_mul(l.used);
            // Distinct data under one node: the split levels strictly below it.
            let below = self.levels[i + 1..]
                .iter()
                .filter(|b| !b.replicated)
                .fold(1u64, |a, b| a.saturating_mul(b.used));
            out.push(LevelStat {
                name: l.name.clone(),
                fanout: l.fanout,
                replicated: l.replicated,
                used: l.used,
                idle: l.fanout - l.used.min(l.fanout),
                elems_per_node: below.saturating_mul(self.elems_per_pe()),
                words_per_node: below.saturating_mul(self.words_per_pe()),
                nodes_used,
            });
        }
        out
    }

    /// The positions of addressable level `i` that hold data, ascending.
    /// Enumerates at most the level's fan-out.
    pub fn used_positions(&self, i: usize) -> Vec<u64> {
        let l = &self.levels[i];
        if l.replicated {
            return (0..l.fanout).collect();
        }
        let axes: Vec<SubAxis> = self
            .groups
            .iter()
            .flatten()
            .filter(|s| s.class == Class::Level(i))
            .copied()
            .collect();
        let mut out = vec![0u64];
        for a in axes {
            out = out
                .iter()
                .flat_map(|&b| (0..a.size).map(move |k| b + k * a.stride))
                .collect();
        }
        out.sort_unstable();
        out
    }

    /// Where logical element `index` lives. `None` if the index is out of range.
    pub fn place(&self, index: &[u64]) -> Option<Placement> {
        if index.len() != self.logical.len() || index.iter().zip(&self.logical).any(|(i, n)| i >= n)
        {
            return None;
        }
        Some(self.place_padded(index))
    }

    /// Like [`Self::place`] for any index of the padded shape (padding included).
    /// The index must be in range of the padded shape.
    pub fn place_padded(&self, index: &[u64]) -> Placement {
        let mut pos: Vec<Option<u64>> = self
            .levels
            .iter()
            .map(|l| (!l.replicated).then_some(0))
            .collect();
        let (mut addr, mut w, mut t) = (0u64, 0u64, 0u64);
        for &(g, s, radix) in &self.flat {
            let k = (index[g] / radix) % s.size;
            let v = k * s.stride;
            match s.class {
                Class::Mem => addr += v,
                Class::W => w += v,
                Class::Time => t += v,
                Class::Level(i) => {
                    if let Some(p) = pos[i].as_mut() {
                        *p += v;
                    }
                }
            }
        }
        Placement { pos, addr, w, t }
    }

    /// The logical element stored in a cell, if any: `pos` gives a position for every
    /// addressable level (ignored for replicated ones). `None` for idle positions,
    /// unused words or slots, and padding.
    pub fn element_at(&self, pos: &[u64], addr: u64, w: u64, t: u64) -> Option<Vec<u64>> {
        let padded = self.padded_element_at(pos, addr, w, t)?;
        padded
            .iter()
            .zip(&self.logical)
            .all(|(i, n)| i < n)
            .then_some(padded)
    }

    /// Like [`Self::element_at`] but returns padding positions too.
    pub fn padded_element_at(&self, pos: &[u64], addr: u64, w: u64, t: u64) -> Option<Vec<u64>> {
        if pos.len() != self.levels.len() {
            return None;
        }
        let mut sub_idx = vec![0u64; self.flat.len()];
        let mut solve = |class: Class, inv: &Inverse, value: u64| -> Option<()> {
            let ids: Vec<usize> = (0..self.flat.len())
                .filter(|&j| self.flat[j].1.class == class)
                .collect();
            let axes: Vec<SubAxis> = ids.iter().map(|&j| self.flat[j].1).collect();
            let idx = invert(inv, &axes, value)?;
            for (j, k) in ids.into_iter().zip(idx) {
                sub_idx[j] = k;
            }
            Some(())
        };
        solve(Class::Mem, &self.inv_mem, addr)?;
        solve(Class::W, &self.inv_w, w)?;
        solve(Class::Time, &self.inv_time, t)?;
        for (i, l) in self.levels.iter().enumerate() {
            if !l.replicated {
                if pos[i] >= l.fanout {
                    return None;
                }
                solve(Class::Level(i), &self.inv_levels[i], pos[i])?;
            } else if pos[i] >= l.fanout {
                return None;
            }
        }
        let mut index = vec![0u64; self.groups.len()];
        for (j, &(g, s, radix)) in self.flat.iter().enumerate() {
            let _ = s;
            index[g] += sub_idx[j] * radix;
        }
        Some(index)
    }

    /// The canonical text: explicit strides everywhere, `; B@[...]` listing every
    /// replicated level (root-most first), the pad prefix only when padding exists.
    pub fn canonical(&self) -> String {
        let mut s = String::new();
        if self.logical != self.padded {
            let p: Vec<String> = self.logical.iter().map(u64::to_string).collect();
            let _ = write!(s, "({})/", p.join(","));
        }
        s.push('(');
        for (gi, g) in self.groups.iter().enumerate() {
            if gi > 0 {
                s.push_str(", ");
            }
            s.push('(');
            for (k, a) in g.iter().enumerate() {
                if k > 0 {
                    s.push_str(", ");
                }
                let _ = write!(s, "{}", a.size);
                match a.class {
                    Class::Mem => {}
                    Class::W => s.push_str("_W"),
                    Class::Time => s.push_str("_Time"),
                    Class::Level(i) => {
                        let _ = write!(s, "_{}", self.levels[i].name);
                    }
                }
                let _ = write!(s, ":{}", a.stride);
            }
            s.push(')');
        }
        let rep: Vec<&str> = self
            .levels
            .iter()
            .filter(|l| l.replicated)
            .map(|l| l.name.as_str())
            .collect();
        if !rep.is_empty() {
            let _ = write!(s, "; B@[{}]", rep.join(","));
        }
        s.push(')');
        s
    }
}

impl std::fmt::Display for TensorLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// One PE's shard: the cells it holds, walked without inverting per element.
#[derive(Clone, Debug)]
pub struct Shard<'a> {
    pub(super) layout: &'a TensorLayout,
    /// Per flat sub-axis: fixed digit for level sub-axes, `None` for free ones.
    pub(super) fixed: Vec<Option<u64>>,
}

impl TensorLayout {
    /// The shard held by the PE at `pos` (a position per addressable level; ignored for
    /// replicated levels), or `None` if that PE holds nothing of this tensor.
    pub fn shard(&self, pos: &[u64]) -> Option<Shard<'_>> {
        if pos.len() != self.levels.len() {
            return None;
        }
        let mut fixed: Vec<Option<u64>> = vec![None; self.flat.len()];
        // Flat indices of one level's sub-axes (reused: one allocation per shard).
        let mut ids: Vec<usize> = Vec::with_capacity(self.flat.len());
        for (i, l) in self.levels.iter().enumerate() {
            if pos[i] >= l.fanout {
                return None;
            }
            if l.replicated {
                continue;
            }
            ids.clear();
            ids.extend((0..self.flat.len()).filter(|&j| self.flat[j].1.class == Class::Level(i)));
            invert_into(&self.inv_levels[i], &self.flat, &ids, pos[i], &mut fixed)?;
        }
        Some(Shard {
            layout: self,
            fixed,
        })
    }
}

impl Shard<'_> {
    /// Number of cells (padded elements) in the shard.
    pub fn len(&self) -> u64 {
        self.layout.elems_per_pe()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(padded_index, addr, w, t)` for every cell of the shard, in an order
    /// where the last free sub-axis varies fastest. `padded_index` may lie in the
    /// padding (compare with [`TensorLayout::logical_shape`]).
    pub fn for_each(&self, mut f: impl FnMut(&[u64], u64, u64, u64)) {
        self.walk(&[], &[], |idx, _, _, a, w, t| f(idx, a, w, t));
    }
}

impl Shard<'_> {
    /// Elements of the shard whose index is below `dims` on every axis (the real,
    /// unpadded elements when `dims` is the logical or runtime shape). Counts per axis —
    /// the shard is a product of per-axis index sets — without walking the cells.
    pub fn valid_elems(&self, dims: &[u64]) -> u64 {
        let l = self.layout;
        let mut total = 1u64;
        // Per axis the shard holds {fixed part + Σ free digit·radix}; each index tuple
        // of the product is one cell, so the valid cells multiply across axes.
        for (g, &limit) in dims.iter().enumerate().take(l.groups.len()) {
            let mut base = 0u64;
            let mut free: Vec<(u64, u64)> = Vec::new();
            for (j, &(gg, s, radix)) in l.flat.iter().enumerate() {
                if gg != g {
                    continue;
                }
                match self.fixed[j] {
                    Some(k) => base += k * radix,
                    None => free.push((s.size, radix)),
                }
            }
            let mut vals = vec![base];
            for (size, radix) in free {
                vals = vals
                    .iter()
                    .flat_map(|&v| (0..size).map(move |k| v + k * radix))
                    .collect();
            }
            let n = vals.iter().filter(|&&v| v < limit).count() as u64;
            total = total.saturating_mul(n);
        }
        total
    }
}

/// Per-axis placement tables: the contribution of every index value of every logical
/// axis to each level position, the word, the slot and the step. A placement is then
/// the sum of one row per axis — no allocation, no division per element.
#[derive(Clone, Debug)]
pub struct AxisTables {
    /// Values per row: one per addressable level, then addr, w, t.
    width: usize,
    /// `rows[g]` holds `padded[g] * width` values.
    rows: Vec<Vec<u64>>,
}

impl AxisTables {
    /// Values per row (levels + 3).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Writes into `out` (length `width()`): positions per level (replicated levels
    /// read 0), then addr, w, t. `idx` must be within the padded shape.
    #[inline]
    pub fn locate(&self, idx: &[u64], out: &mut [u64]) {
        out.fill(0);
        for (g, &i) in idx.iter().enumerate() {
            let row = &self.rows[g][i as usize * self.width..(i as usize + 1) * self.width];
            for (o, r) in out.iter_mut().zip(row) {
                *o += r;
            }
        }
    }
}

impl TensorLayout {
    /// Builds the per-axis placement tables (memory: Σ padded extents × (levels + 3)).
    pub fn axis_tables(&self) -> AxisTables {
        let nl = self.levels.len();
        let width = nl + 3;
        let rows = self
            .groups
            .iter()
            .enumerate()
            .map(|(g, subs)| {
                let n = self.padded[g] as usize;
                let mut row = vec![0u64; n * width];
                for i in 0..n {
                    let mut radix = 1u64;
                    for s in subs.iter().rev() {
                        let v = ((i as u64 / radix) % s.size) * s.stride;
                        let col = match s.class {
                            Class::Level(l) => l,
                            Class::Mem => nl,
                            Class::W => nl + 1,
                            Class::Time => nl + 2,
                        };
                        row[i * width + col] += v;
                        radix = radix.saturating_mul(s.size);
                    }
                }
                row
            })
            .collect();
        AxisTables { width, rows }
    }
}

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
    fn walk(
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
        let l = self.layout;
        let ng = l.groups.len();
        let Scratch { index, free, digit } = sc;
        index.clear();
        index.resize(ng, 0);
        for (j, &(g, _, radix)) in l.flat.iter().enumerate() {
            if let Some(k) = self.fixed[j] {
                index[g] += k * radix;
            }
        }
        let w_of = |g: usize| weights.get(g).copied().unwrap_or(0);
        let lim = |g: usize| limits.get(g).copied().unwrap_or(u64::MAX);
        let mut lin: u64 = (0..ng)
            .map(|g| index[g].wrapping_mul(w_of(g)))
            .fold(0u64, u64::wrapping_add);
        let mut bad = (0..ng).filter(|&g| index[g] >= lim(g)).count();
        free.clear();
        free.extend(
            l.flat
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
}
