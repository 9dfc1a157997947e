//! Joint seeds: layouts chosen together for the operands of each kernel, so that a plan
//! with every layout `Any` and no hand plan starts from assignments that run.
//!
//! A kernel's **variables** are its output axes and its reduced (contraction) variables
//! (`mnsim_kernels::shape::index_map`). A **strategy** gives each addressable level of
//! the machine to one variable (all of its fan-out, or the power-of-two part the
//! variable's extent allows) or to none, may step one or two variables over `Time` (the
//! fewest steps that make the operands fit LM together) and packs each operand's last
//! axis into the words' slots. Every operand's layout follows from the strategy: an axis
//! takes the levels of its variable (root-most first), the rest of it stays in memory;
//! a level none of its axes takes is replicated. So the operands of a matmul whose M is
//! split over L2B and K over L1B are `a = ((8_L2B, ..), (8_L1B, ..))`,
//! `b = ((8_L1B, ..), (..))`, `c = ((8_L2B, ..), (..))` replicated (partial) over L1B:
//! legal by construction, and checked with the kernel's legality rule before anything
//! is measured.
//!
//! The seeds are built by a beam over the kernels in program order: each state of the
//! beam is a partial assignment; a kernel extends it with every strategy that agrees with
//! the operands already decided (their layouts as the state has them, a consumer's need
//! shaping the producer's layout), or, when only its output is free, with the layouts of
//! its inputs of the output's shape. Each extension is evaluated (variables not decided
//! yet take their first candidate; an assignment that fails later ranks by how far it
//! got, then by its cycles so far) and the best `width` states are kept.

use super::strategy::{self, Operand, Strategy, splits, texts, time_options};
use super::{Eval, Key, LayoutId, Model};
use crate::plan::candidates;
use crate::program::{EntityRef as _, TensorId};
use mnsim_arch::TensorLayout;
use mnsim_kernels::shape::{AxisSource, index_map, reduced_extents};
use std::collections::{BinaryHeap, HashSet};

/// A decided operand: bound to this layout in the state.
type Decided = Option<LayoutId>;

/// A state extended at a kernel.
type Extension = Vec<Decided>;

/// One of a kernel's strategies with its operands' layouts bound (inputs, then the
/// output), and whether the kernel is legal on them (asked when a state first agrees
/// with them).
pub(super) struct Bound {
    pub(super) ids: Vec<LayoutId>,
    legal: Option<bool>,
}

/// A kernel's strategies bound, once for every state of the beam: those that give
/// every level up to the kernel's unit a variable, then the others (each list built
/// when first needed).
type Strategies = [Option<Vec<Bound>>; 2];

/// Kernel `k`'s operands in one state: who decides each (a variable, or a fixed layout
/// or nothing), the layouts known, the operands still free.
struct Ctx<'a> {
    k: usize,
    who: Vec<Result<usize, Option<LayoutId>>>,
    known: Vec<Option<LayoutId>>,
    free: Vec<usize>,
    state: &'a [Decided],
}

impl Model {
    /// Joint seeds for the variables (see the module's documentation): at most `width`
    /// complete assignments, best first. Layouts they use are added to the variables'
    /// candidates.
    ///
    /// `stop()` is asked before every evaluation (a work budget or a deadline): when it
    /// says so, the beam keeps what it has and the seeds are its states completed.
    pub fn joint_seeds(
        &mut self,
        width: usize,
        stop: &mut dyn FnMut(&Model) -> bool,
    ) -> Vec<Vec<LayoutId>> {
        // The beam decides each layer's kernels in turn, the later layers' variables
        // undecided: every op walked ([`super::repeat`]).
        self.walking_all(|m| m.joint_beam(width, stop))
    }

    /// [`Model::joint_seeds`], walking as the model is set to.
    fn joint_beam(
        &mut self,
        width: usize,
        stop: &mut dyn FnMut(&Model) -> bool,
    ) -> Vec<Vec<LayoutId>> {
        let nv = self.vars.len();
        if nv == 0 {
            return Vec::new();
        }
        let mut beam: Vec<(Vec<Decided>, Option<Eval>)> = vec![(vec![None; nv], None)];
        let mut stopped = false;
        for k in 0..self.ops.len() {
            if stopped {
                break;
            }
            if !self.ops[k].is_kernel {
                continue;
            }
            let Some(shape) = self.kernel_shape(k) else {
                continue;
            };
            let mut next: Vec<(Vec<Decided>, Eval)> = Vec::new();
            // The `width` least keys so far: a state no better than the most of them
            // cannot be kept (the sort below is stable), so it need not be placed.
            let mut kept: BinaryHeap<Key> = BinaryHeap::new();
            let mut seen: HashSet<Vec<Decided>> = HashSet::new();
            let mut strategies: Strategies = [None, None];
            'states: for (state, _) in &beam {
                for ext in self.extensions(k, &shape, state, &mut strategies) {
                    if !seen.insert(ext.clone()) {
                        continue;
                    }
                    if stop(self) {
                        stopped = true;
                        break 'states;
                    }
                    let pick = self.filled(&ext);
                    let bar = (kept.len() >= width.max(1)).then(|| kept.peek().copied());
                    if let Some(e) = self.evaluate_below(&pick, bar.flatten()) {
                        kept.push(e.key());
                        if kept.len() > width.max(1) {
                            kept.pop();
                        }
                        next.push((ext, e));
                    }
                }
            }
            if next.is_empty() {
                continue;
            }
            next.sort_by_key(|a| a.1.key());
            next.truncate(width.max(1));
            beam = next.into_iter().map(|(s, e)| (s, Some(e))).collect();
        }
        let mut out: Vec<Vec<LayoutId>> = Vec::new();
        for (state, _) in &beam {
            let pick = self.filled(state);
            for (v, &id) in pick.iter().enumerate() {
                self.vars[v].add_first(id);
            }
            if !out.contains(&pick) {
                out.push(pick);
            }
        }
        out
    }

    /// A state's variables completed: an undecided tied variable takes the layout its
    /// source's derives ([`super::ties`]: a view's, a reduction's, an elementwise
    /// kernel's), else an undecided kernel output takes the layout of its first input of
    /// the same shape (as the walk has it so far), so what a state means for the kernels
    /// after it is evaluated too; anything else undecided takes its first candidate.
    fn filled(&mut self, state: &[Decided]) -> Vec<LayoutId> {
        let mut st = state.to_vec();
        let mut layout_of: Vec<Option<LayoutId>> = vec![None; self.res.program.tensors.len()];
        for k in 0..self.ops.len() {
            let Some(w) = self.ops[k].writes else {
                continue;
            };
            let l = match (self.ops[k].var, self.ops[k].fixed) {
                (Some(v), _) => {
                    if st[v].is_none()
                        && let Some(src) = self.ties[v].as_ref().map(|t| t.source)
                        && let Some(from) = st[src]
                    {
                        st[v] = self.derived(v, from);
                    }
                    if st[v].is_none() && self.ops[k].is_kernel {
                        let dims = &self.tensor(w).dims_at_bound;
                        let from = self.ops[k].reads.iter().find_map(|&r| {
                            let same = &self.tensor(r).dims_at_bound == dims;
                            layout_of[r.index()].filter(|_| same)
                        });
                        if let Some(l) = from {
                            let text = self.layouts[l as usize].canonical();
                            st[v] = self.bind_for(w, &text);
                        }
                    }
                    st[v]
                }
                (None, f) => f,
            };
            layout_of[w.index()] = l;
        }
        st.iter()
            .zip(&self.vars)
            .map(|(d, v)| d.unwrap_or(v.candidates[0]))
            .collect()
    }

    /// Kernel op `k`'s operands (inputs, then the output) with their variables, and the
    /// variables' extents.
    pub(super) fn kernel_shape(&self, k: usize) -> Option<(Vec<Operand>, Vec<u64>)> {
        let kern = self.kernel(self.ops[k].op)?;
        let dims = |t: TensorId| self.tensor(t).dims_at_bound.clone();
        let slots = |t: TensorId| {
            let dt = self.tensor(t).dtype;
            (self.res.machine.word_bytes / dt.bytes().max(1)).max(1)
        };
        let reads = self.ops[k].reads.clone();
        let out = self.ops[k].writes?;
        let in_dims: Vec<Vec<u64>> = reads.iter().map(|&r| dims(r)).collect();
        let in_refs: Vec<&[u64]> = in_dims.iter().map(Vec::as_slice).collect();
        let out_dims = dims(out);
        let maps = index_map(kern, &in_refs, &out_dims).ok()?;
        let red = reduced_extents(kern, &in_refs).ok()?;
        let r = out_dims.len();
        let mut ext = out_dims.clone();
        ext.extend(&red);
        let mut ops: Vec<Operand> = Vec::new();
        for ((&t, d), m) in reads.iter().zip(in_dims).zip(maps) {
            let vars = m
                .axes
                .iter()
                .map(|a| match a {
                    AxisSource::Out(h) => Some(*h),
                    AxisSource::Reduced(j) => Some(r + j),
                    AxisSource::Broadcast => None,
                })
                .collect();
            ops.push(Operand {
                tensor: t,
                dims: d,
                vars,
                slots: slots(t),
                logical: None,
            });
        }
        ops.push(Operand {
            tensor: out,
            dims: out_dims,
            vars: (0..r).map(Some).collect(),
            slots: slots(out),
            logical: None,
        });
        Some((ops, ext))
    }

    /// Who decides operand `j` of kernel `k` (the inputs' last writers before `k`, then
    /// `k` itself for the output): a variable, or a fixed layout (`Err`), or nothing
    /// known (`Err(None)`).
    pub(super) fn decider(&self, k: usize, j: usize) -> Result<usize, Option<LayoutId>> {
        let reads = &self.ops[k].reads;
        let w = if j < reads.len() {
            let t = reads[j];
            match (0..k).rev().find(|&i| self.ops[i].writes == Some(t)) {
                Some(w) => w,
                None => return Err(None),
            }
        } else {
            k
        };
        match (self.ops[w].var, self.ops[w].fixed) {
            (Some(v), _) => Ok(v),
            (None, f) => Err(f),
        }
    }

    /// The states that extend `state` at kernel `k` (`strategies`: the kernel's, bound
    /// as far as earlier states needed them).
    fn extensions(
        &mut self,
        k: usize,
        shape: &(Vec<Operand>, Vec<u64>),
        state: &[Decided],
        strategies: &mut Strategies,
    ) -> Vec<Extension> {
        let (operands, _) = shape;
        let Some(ctx) = self.ctx(k, operands, state) else {
            return Vec::new();
        };
        let n = operands.len();
        let mut out: Vec<Extension> = Vec::new();
        // Only the output free: the inputs' layouts of its shape, as they are.
        if ctx.free == [n - 1] {
            let Ok(ov) = ctx.who[n - 1] else {
                return out;
            };
            let out_t = operands[n - 1].tensor;
            for j in 0..n - 1 {
                let Some(l) = ctx.known[j] else { continue };
                if operands[j].dims != operands[n - 1].dims {
                    continue;
                }
                let text = self.layouts[l as usize].canonical();
                if let Some(id) = self.bind_for(out_t, &text) {
                    let mut s = state.to_vec();
                    s[ov] = Some(id);
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
            }
        }
        // Strategies that give every level a variable first (a level none takes
        // repeats the kernel's work on each of its positions), then the others, only
        // when none of the first is legal.
        let before = out.len();
        for (pass, list) in strategies.iter_mut().enumerate() {
            if pass == 1 && out.len() > before {
                break;
            }
            let list = list.get_or_insert_with(|| self.bound_strategies(k, shape, pass == 0));
            self.agreeing(&ctx, list, &mut out);
        }
        out
    }

    /// Kernel `k`'s strategies (`full`: those that give every level up to its unit a
    /// variable; else the others), each with the fewest `Time` steps that make its
    /// operands fit LM, and their layouts bound; a strategy that does not divide an
    /// operand or whose layouts do not bind is left out.
    pub(super) fn bound_strategies(
        &mut self,
        k: usize,
        shape: &(Vec<Operand>, Vec<u64>),
        full: bool,
    ) -> Vec<Bound> {
        let levels = self.res.machine.addressable_levels();
        let Some(kern) = self.kernel(self.ops[k].op).cloned() else {
            return Vec::new();
        };
        let unit = self.unit_level(&kern, &levels);
        let mut out: Vec<Bound> = Vec::new();
        let mut seen: HashSet<Vec<LayoutId>> = HashSet::new();
        self.bind_strategies(shape, (unit, full), (&mut out, &mut seen));
        // A contraction whose output has too few factors of two to give every unit a
        // block of it (without splitting the contraction) is tried with its variables
        // padded too, after the exact strategies (docs/planner.md).
        let fanouts: Vec<u64> = levels.iter().map(|l| l.fanout).collect();
        let rank = shape.0.last().map_or(0, |o| o.dims.len());
        if kern.is_matmul()
            && !strategy::fills_units(&shape.1[..rank], &fanouts[..=unit.min(fanouts.len() - 1)])
            && let Some(padded) = strategy::padded(&shape.0, &shape.1)
        {
            self.bind_strategies(&padded, (unit, full), (&mut out, &mut seen));
        }
        out
    }

    /// Binds the strategies of `operands` with extents `ext` (see [`Self::bound_strategies`])
    /// into `out`, those not seen before.
    fn bind_strategies(
        &mut self,
        (operands, ext): &(Vec<Operand>, Vec<u64>),
        (unit, full): (usize, bool),
        (out, seen): (&mut Vec<Bound>, &mut HashSet<Vec<LayoutId>>),
    ) {
        let levels = self.res.machine.addressable_levels();
        let fanouts: Vec<u64> = levels.iter().map(|l| l.fanout).collect();
        let names: Vec<String> = levels.iter().map(|l| l.name.clone()).collect();
        let list = splits(ext, &fanouts)
            .into_iter()
            .filter(|s| s.iter().take(unit + 1).all(Option::is_some) == full);
        for split in list {
            let mut s = Strategy {
                split,
                time: Vec::new(),
            };
            for time in time_options(operands, ext, &s, self.lm_words) {
                s.time = time;
                let Some(texts) = texts(operands, &s, &names) else {
                    continue;
                };
                let ids: Option<Vec<LayoutId>> = (operands.iter().zip(&texts))
                    .map(|(op, (text, _))| self.bind_for(op.tensor, text))
                    .collect();
                if let Some(ids) = ids
                    && seen.insert(ids.clone())
                {
                    out.push(Bound { ids, legal: None });
                }
            }
        }
    }

    /// Who decides each operand of kernel `k` in `state`, what is known of it, and which
    /// are free; `None` when nothing is free.
    fn ctx<'a>(&self, k: usize, operands: &[Operand], state: &'a [Decided]) -> Option<Ctx<'a>> {
        let n = operands.len();
        let who: Vec<Result<usize, Option<LayoutId>>> =
            (0..n).map(|j| self.decider(k, j)).collect();
        let known: Vec<Option<LayoutId>> = who
            .iter()
            .map(|w| match w {
                Ok(v) => state[*v],
                Err(f) => *f,
            })
            .collect();
        let free: Vec<usize> = (0..n)
            .filter(|&j| matches!(who[j], Ok(v) if state[v].is_none()))
            .collect();
        (!free.is_empty()).then_some(Ctx {
            k,
            who,
            known,
            free,
            state,
        })
    }

    /// The addressable level (index) a kernel's locality is required at: the matrix
    /// unit's for a matmul that runs on it, else the leaf's.
    fn unit_level(
        &self,
        kern: &mnsim_kernels::Kernel,
        levels: &[mnsim_arch::machine::AddrLevel],
    ) -> usize {
        let leaf = levels.len().saturating_sub(1);
        if !kern.is_matmul() {
            return leaf;
        }
        // The level legality requires it at (`mnsim_kernels` folds a matrix level that
        // is not addressable into the first addressable one below it).
        let m = &self.res.machine;
        (m.level_index(&m.compute.matrix.level))
            .and_then(|li| m.addressable_of(li))
            .unwrap_or(leaf)
    }

    /// Adds to `out` the states the strategies of `list` give `ctx.state` at kernel
    /// `ctx.k`: those whose layouts agree with what is decided and make the kernel
    /// legal.
    fn agreeing(&self, ctx: &Ctx<'_>, list: &mut [Bound], out: &mut Vec<Extension>) {
        let Some(kern) = self.kernel(self.ops[ctx.k].op) else {
            return;
        };
        for b in list {
            let agrees = (b.ids.iter().zip(&ctx.known)).all(|(&id, k)| k.is_none_or(|l| l == id));
            if !agrees {
                continue;
            }
            let legal = *b.legal.get_or_insert_with(|| self.legal_on(kern, &b.ids));
            if !legal {
                continue;
            }
            let mut st = ctx.state.to_vec();
            for &j in &ctx.free {
                if let Ok(v) = ctx.who[j] {
                    st[v] = Some(b.ids[j]);
                }
            }
            if !out.contains(&st) {
                out.push(st);
            }
        }
    }

    /// Whether kernel `kern` is legal on the operand layouts `ids` (inputs, then the
    /// output).
    pub(super) fn legal_on(&self, kern: &mnsim_kernels::Kernel, ids: &[LayoutId]) -> bool {
        let Some((&out, ins)) = ids.split_last() else {
            return false;
        };
        let ins: Vec<&TensorLayout> = ins.iter().map(|&i| &self.layouts[i as usize]).collect();
        let out = &self.layouts[out as usize];
        mnsim_kernels::is_legal(kern, &ins, out, &self.res.machine)
    }

    /// The layout of kernel `k`'s input `j` that gives its output layout `out` for free:
    /// a view's input laid out as the view's inverse of the output (a transpose's, a
    /// reshape's), any other input of the output's shape laid out as the output.
    pub(super) fn producer_layout(
        &mut self,
        k: usize,
        j: usize,
        out: LayoutId,
    ) -> Option<LayoutId> {
        let t = *self.ops[k].reads.get(j)?;
        let w = self.ops[k].writes?;
        let in_dims = self.tensor(t).dims_at_bound.clone();
        let view = self.kernel(self.ops[k].op).and_then(mnsim_kernels::view_of);
        let m = &self.res.machine;
        let out_l = &self.layouts[out as usize];
        let text = match (view, j) {
            (Some(mnsim_kernels::View::Transpose(perm)), 0) => {
                let mut inv = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    *inv.get_mut(p)? = i;
                }
                out_l.transposed(&inv, m)?.canonical()
            }
            (Some(mnsim_kernels::View::Reshape), 0) => out_l.reshaped(&in_dims, m)?.canonical(),
            _ if in_dims == self.tensor(w).dims_at_bound => out_l.canonical(),
            _ => return None,
        };
        self.bind_for(t, &text)
    }

    /// `text` bound for tensor `t` and interned.
    /// Remembered: the beam's states repeat the same strategies, so the same texts.
    fn bind_for(&mut self, t: TensorId, text: &str) -> Option<LayoutId> {
        if let Some(&id) = self.bound_texts.get(&t).and_then(|m| m.get(text)) {
            return id;
        }
        let rt = self.tensor(t);
        let id = candidates::bind_text(
            &self.res.machine,
            text,
            &rt.dims_at_bound,
            rt.dtype,
            rt.dims_at_bound != rt.runtime_dims,
        )
        .map(|c| self.intern(t, c.layout));
        (self.bound_texts.entry(t).or_default()).insert(text.to_string(), id);
        id
    }
}
