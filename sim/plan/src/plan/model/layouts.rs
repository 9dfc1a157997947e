//! The model's interned layouts and states: candidates generated once per shape, a
//! layout interned by (shape, bound layout), a state by (layout, partial levels).

use super::super::candidates;
use super::super::cost::Held;
use super::{HashMap, HashSet, LayoutId, Model, ShapeKey, StateId};
use crate::program::TensorId;
use crate::scenario::Resolved;
use mnsim_arch::TensorLayout;
use std::collections::hash_map::Entry;

impl Model {
    /// The shape key of tensor `t`: its dims, dtype and whether it is padded.
    pub(super) fn shape_key(&self, t: TensorId) -> ShapeKey {
        let rt = self.tensor(t);
        (
            rt.dims_at_bound.clone(),
            rt.dtype,
            rt.dims_at_bound != rt.runtime_dims,
        )
    }

    /// Candidates of tensor `t` (before pruning), interned, the core first, and how many
    /// are core; tensors of one shape and dtype share them (generated once).
    pub(super) fn generate(&mut self, t: TensorId) -> (Vec<LayoutId>, usize) {
        let key = self.shape_key(t);
        if let Some(c) = self.generated.get(&key) {
            return c.clone();
        }
        let pad = self.contraction_shapes().contains(&key);
        let c = candidates::generate(&self.res.machine, &key.0, key.1, key.2, self.space, pad);
        self.intern_generated(key, c)
    }

    /// The shapes of the tensors a contraction (a matmul kernel) reads or writes, and of
    /// those a transpose or a copy makes its operands from: their candidates include
    /// their padded shape's (`candidates::padded_dims`), where an odd length would
    /// otherwise leave matrix units idle (GPT-2's tied LM head reads the embedding
    /// table, 50257 × 768, through a transpose: the table's layout is the one the
    /// search moves, and without its padded candidates no layout of it splits the
    /// vocabulary); other tensors keep their exact candidates alone.
    pub(super) fn contraction_shapes(&self) -> HashSet<ShapeKey> {
        let mut tensors: HashSet<TensorId> = HashSet::default();
        for o in self.ops.iter() {
            if (self.kernel(o.op)).is_some_and(mnsim_kernels::Kernel::is_matmul) {
                tensors.extend(o.reads.iter().chain(o.writes.iter()).copied());
            }
        }
        // Back through the views that make them, last op first (a view's input is
        // written before it).
        for o in self.ops.iter().rev() {
            let view = (self.kernel(o.op)).and_then(mnsim_kernels::view_of);
            let keeps_axes = matches!(
                view,
                Some(mnsim_kernels::View::Transpose(_) | mnsim_kernels::View::Same)
            );
            if keeps_axes && o.writes.is_some_and(|t| tensors.contains(&t)) {
                tensors.extend(o.reads.iter().copied());
            }
        }
        tensors.iter().map(|&t| self.shape_key(t)).collect()
    }

    /// Interns the candidates `c` generated for shape `key`, the core first as
    /// generated, and keeps them for the shape: their ids and how many are core.
    pub(super) fn intern_generated(
        &mut self,
        key: ShapeKey,
        c: Vec<candidates::Candidate>,
    ) -> (Vec<LayoutId>, usize) {
        if let Some(g) = self.generated.get(&key) {
            return g.clone();
        }
        let core = c.iter().filter(|c| c.core).count();
        // Room for them all at once: no layout is hashed again as the map grows.
        let room = self.layout_ids.entry(key.clone()).or_default();
        room.reserve(c.len());
        self.layouts.reserve(c.len());
        self.footprint.reserve(c.len());
        let ids: Vec<LayoutId> = c
            .into_iter()
            .map(|c| self.intern_as(&key, c.layout))
            .collect();
        self.generated.insert(key, (ids.clone(), core));
        (ids, core)
    }

    /// Interns a bound layout of tensor `t`.
    pub fn intern(&mut self, t: TensorId, l: TensorLayout) -> LayoutId {
        let key = self.shape_key(t);
        self.intern_as(&key, l)
    }

    /// Interns layout `l` of a tensor of shape `key`: one id per bound layout (two of
    /// one canonical text are one layout, on a machine whose level names read apart
    /// from `W`, `Time` and each other, as every preset's do).
    pub(super) fn intern_as(&mut self, key: &ShapeKey, l: TensorLayout) -> LayoutId {
        let ids = match self.layout_ids.get_mut(key) {
            Some(ids) => ids,
            None => self.layout_ids.entry(key.clone()).or_default(),
        };
        // Hashed once, looked up and inserted alike.
        match ids.entry(l) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let id = self.layouts.len() as LayoutId;
                self.footprint.push(e.key().footprint_words());
                self.layouts.push(e.key().clone());
                e.insert(id);
                id
            }
        }
    }

    /// Interns `layout` for the tensor of variable `v` and adds it to its candidates
    /// (first) if it is not there.
    pub fn seed(&mut self, v: usize, layout: &TensorLayout) -> LayoutId {
        let t = self.vars[v].tensor;
        let id = self.intern(t, layout.clone());
        self.vars[v].add_first(id);
        id
    }

    /// The stream variant of layout `id` of variable `v` in `steps` `Time` steps that
    /// steps none of the axes `skip` ([`candidates::streamed`]), added to its
    /// candidates; `None` if it has none. In one step, the layout whole: its own `Time`
    /// steps in memory.
    pub fn streamed(
        &mut self,
        v: usize,
        id: LayoutId,
        (skip, steps): (&[usize], u64),
    ) -> Option<LayoutId> {
        let s = self.streamed_apart(v, id, (skip, steps))?;
        self.vars[v].add_first(s);
        Some(s)
    }

    /// [`Model::streamed`] without adding it to the variable's candidates (a variant
    /// that may not be kept: [`Model::keep_layouts`] adds it).
    pub fn streamed_apart(
        &mut self,
        v: usize,
        id: LayoutId,
        (skip, steps): (&[usize], u64),
    ) -> Option<LayoutId> {
        let t = self.vars[v].tensor;
        let key = self.shape_key(t);
        let c = candidates::streamed(
            &self.res.machine,
            &self.layouts[id as usize],
            (&key.0, key.1, key.2),
            skip,
            steps,
        )?;
        Some(self.intern(t, c.layout))
    }

    /// Adds the layouts of `pick` to their variables' candidates (first, in the core)
    /// where they are not there: a variant kept.
    pub fn keep_layouts(&mut self, pick: &[LayoutId]) {
        for (v, &id) in pick.iter().enumerate() {
            self.vars[v].add_first(id);
        }
    }

    /// Layout `id` of variable `v` with level `level` (`fanout` positions) moved onto
    /// axis `axis`, or to copies (`None`), the positions it leaves to `freed` (memory or
    /// `Time`): `LayoutExpr::relevel_to`, bound for the tensor and added to its
    /// candidates; `None` where it does not move or bind.
    pub fn relevelled(
        &mut self,
        v: usize,
        id: LayoutId,
        (level, fanout): (&str, u64),
        (axis, freed): (Option<usize>, mnsim_arch::layout::AxisName),
    ) -> Option<LayoutId> {
        let t = self.vars[v].tensor;
        let (dims, dtype, implicit_pad) = self.shape_key(t);
        let expr = mnsim_arch::LayoutExpr::parse(&self.layouts[id as usize].canonical()).ok()?;
        let moved = expr.relevel_to(level, fanout, axis, freed)?;
        let m = &self.res.machine;
        let l = TensorLayout::bind(&moved, m, Some(&dims), dtype, implicit_pad).ok()?;
        Some(self.seed(v, &l))
    }

    /// Layout `id` of variable `v` with levels `a` and `b` exchanged
    /// (`LayoutExpr::swap_levels`), bound for the tensor (not added to its candidates:
    /// [`Model::keep_layouts`] adds a plan kept); `None` where it does not bind.
    pub fn swapped(&mut self, v: usize, id: LayoutId, (a, b): (&str, &str)) -> Option<LayoutId> {
        let t = self.vars[v].tensor;
        let (dims, dtype, implicit_pad) = self.shape_key(t);
        let expr = mnsim_arch::LayoutExpr::parse(&self.layouts[id as usize].canonical()).ok()?;
        let m = &self.res.machine;
        let l = TensorLayout::bind(&expr.swap_levels(a, b), m, Some(&dims), dtype, implicit_pad)
            .ok()?;
        Some(self.intern(t, l))
    }

    /// The largest rank of a variable's tensor.
    pub fn max_rank(&self) -> usize {
        self.vars
            .iter()
            .map(|v| self.tensor(v.tensor).dims_at_bound.len())
            .max()
            .unwrap_or(0)
    }

    /// Layouts interned so far (candidates, relayout targets, measured outputs).
    pub fn layout_count(&self) -> usize {
        self.layouts.len()
    }

    pub fn layout(&self, id: LayoutId) -> &TensorLayout {
        &self.layouts[id as usize]
    }

    /// The canonical text of layout `id`.
    pub fn text(&self, id: LayoutId) -> String {
        self.layouts[id as usize].canonical()
    }

    /// The resolved program the model was built from.
    pub fn resolved(&self) -> &Resolved {
        &self.res
    }

    pub(super) fn state(&mut self, l: LayoutId, partial: Vec<usize>) -> StateId {
        if let Some(&s) = self.state_ids.get(&(l, partial.clone())) {
            return s;
        }
        let s = self.states.len() as StateId;
        self.states.push((l, partial.clone()));
        self.state_ids.insert((l, partial), s);
        s
    }

    pub(super) fn held(&self, s: StateId) -> Held {
        let (l, p) = &self.states[s as usize];
        Held {
            layout: self.layouts[*l as usize].clone(),
            partial: p.clone(),
        }
    }

    /// Every variable's candidates. The variables' shapes generate them on every core
    /// at once (each shape's are a pure function of it); they are interned in variable
    /// order, so the ids are the same whatever the thread count.
    pub(super) fn generate_candidates(&mut self) {
        let m = self;
        let mut shapes: Vec<ShapeKey> = Vec::new();
        for v in &m.vars {
            let key = m.shape_key(v.tensor);
            if !shapes.contains(&key) {
                shapes.push(key);
            }
        }
        let pads = m.contraction_shapes();
        let (machine, space) = (&m.res.machine, m.space);
        let generate =
            |k: &ShapeKey| candidates::generate(machine, &k.0, k.1, k.2, space, pads.contains(k));
        let made: Vec<Vec<candidates::Candidate>> = if rayon::current_num_threads() > 1 {
            use rayon::prelude::*;
            shapes.par_iter().map(generate).collect()
        } else {
            // One thread: on this one, which frees them (a thread freeing another's
            // allocations takes the allocator's slower path).
            shapes.iter().map(generate).collect()
        };
        let mut made: HashMap<ShapeKey, Vec<candidates::Candidate>> =
            shapes.into_iter().zip(made).collect();
        for vi in 0..m.vars.len() {
            let tensor = m.vars[vi].tensor;
            let key = m.shape_key(tensor);
            let (ids, core) = match made.remove(&key) {
                Some(c) => m.intern_generated(key, c),
                None => m.generate(tensor),
            };
            m.vars[vi].core = core;
            m.vars[vi].candidates = ids;
        }
    }
}
