//! Measuring one op for the memo (a miss): by the engine through [`Coster`], with a
//! Relayout of one input inserted where the kernel is illegal for the layouts its inputs
//! arrive in.

use super::super::cost::{Held, Measured, StreamFrom, input_region, input_slot};
use super::{
    Effect, Failure, Inserted, LayoutId, Model, Moved, NO_LAYOUT, OpOut, Relayouted, StateId,
    TARGETS_MEASURED,
};
use crate::ids::RegionId;
use crate::program::{EntityRef as _, OpId, TensorId};
use crate::timeline::{self, Resource, SendList, Task};
use mnsim_arch::TensorLayout;
use mnsim_kernels::shape::AxisSource;

/// One past the largest of an op's own (non-input) regions in `tasks`.
fn span_of(tasks: &[Task]) -> u32 {
    tasks
        .iter()
        .flat_map(|t| {
            t.reads
                .iter()
                .chain(&t.writes)
                .chain(t.frees_before.iter().map(|f| &f.0))
                .chain(t.frees_after.iter().map(|f| &f.0))
                .chain(
                    t.walk
                        .iter()
                        .flat_map(|w| w.inputs.iter().map(|i| &i.region)),
                )
        })
        .filter(|r| input_slot(**r).is_none())
        .map(|r| r.0 + 1)
        .max()
        .unwrap_or(0)
}

/// The layouts of an op's inputs (it reads `reads`, held as `helds`) with tensor `t`,
/// wherever the op reads it, laid out as `l`.
fn with_input<'a>(
    reads: &[TensorId],
    t: TensorId,
    helds: &'a [Held],
    l: &'a TensorLayout,
) -> Vec<&'a TensorLayout> {
    (reads.iter().zip(helds))
        .map(|(&r, h)| if r == t { l } else { &h.layout })
        .collect()
}

/// Every region a task names, through `f`.
pub(super) fn remap(t: &mut Task, f: impl Fn(RegionId) -> RegionId) {
    for r in t.reads.iter_mut().chain(t.writes.iter_mut()) {
        *r = f(*r);
    }
    for (r, _) in t.frees_before.iter_mut().chain(t.frees_after.iter_mut()) {
        *r = f(*r);
    }
    for input in t.walk.iter_mut().flat_map(|w| w.inputs.iter_mut()) {
        input.region = f(input.region);
    }
}

impl Model {
    /// Measures op `i` (a memo miss).
    /// `producers[k]`: the task of the kernel whose output stream input `k` is (this op
    /// its first reader), and the slices LM holds of it by default.
    pub(super) fn measure(
        &mut self,
        i: usize,
        states: &[StateId],
        layout: LayoutId,
        producers: &[Option<(Task, u64)>],
    ) -> Result<OpOut, Failure> {
        self.measured += 1;
        let mut out = self.measure_op(i, states, layout, producers);
        if let Ok(o) = &mut out {
            self.share_walks(&mut o.tasks);
        }
        out
    }

    /// Points the walks of `tasks` at the step vectors the memo holds already where they
    /// are equal (most are: an op's walk depends on its layouts only, not on what else
    /// its measurement keys), so that the memo keeps one copy of each.
    fn share_walks(&mut self, tasks: &mut [Task]) {
        for w in tasks.iter_mut().filter_map(|t| t.walk.as_mut()) {
            self.step_vectors.share(&mut w.out);
            for input in &mut w.inputs {
                self.step_vectors.share(&mut input.need);
                match &mut input.sends {
                    SendList::Lagged { slices, .. } => self.step_vectors.share(slices),
                    SendList::Table(t) => self.send_vectors.share(t),
                }
            }
        }
    }

    /// [`Model::measure`]'s measurement.
    fn measure_op(
        &mut self,
        i: usize,
        states: &[StateId],
        layout: LayoutId,
        producers: &[Option<(Task, u64)>],
    ) -> Result<OpOut, Failure> {
        let ops = std::sync::Arc::clone(&self.ops);
        let op = &ops[i];
        let helds: Vec<Held> = states.iter().map(|&s| self.held(s)).collect();
        let lay = (layout != NO_LAYOUT).then(|| self.layouts[layout as usize].clone());
        let inputs: Vec<(TensorId, &Held)> = op.reads.iter().copied().zip(helds.iter()).collect();
        let loads: Vec<bool> = (op.streamed.iter())
            .map(|s| s.is_some_and(|w| self.ops[w].effect == Effect::Load))
            .collect();
        let from = |k: usize, s: Option<usize>| {
            let w = s?;
            match producers.get(k).and_then(Option::as_ref) {
                // A kernel's stream, or a later read of a stream held whole.
                Some((task, held)) => Some(StreamFrom::Kernel(OpId::new(w), task, *held)),
                // A kernel's output that is no stream (or not one this op reads first).
                None if !loads.get(k).copied().unwrap_or(false) => None,
                None => Some(StreamFrom::Load(OpId::new(w))),
            }
        };
        let streams: Vec<Option<StreamFrom>> =
            (0..op.reads.len()).map(|k| from(k, op.source(k))).collect();
        let first = self
            .coster
            .measure(OpId::new(i), &inputs, lay.as_ref(), &streams);
        let err = match first {
            Ok(m) => return Ok(self.out_of(i, m, None)),
            Err(e) if !op.is_kernel || e.is_lm_full() => return Err(e.into()),
            Err(e) => e,
        };
        // A kernel that its inputs' layouts make illegal: relayout one input.
        let mut best: Option<(u64, OpOut)> = None;
        for (slot, &r) in op.reads.iter().enumerate() {
            if op.reads[..slot].contains(&r) || !self.may_insert(i, slot) {
                continue;
            }
            // Legality reads layouts only: the other inputs' layouts (not their partial
            // sums) key the targets.
            let others: Vec<LayoutId> = states
                .iter()
                .enumerate()
                .map(|(k, &st)| {
                    if op.reads[k] == r {
                        LayoutId::MAX
                    } else {
                        self.states[st as usize].0
                    }
                })
                .collect();
            let tkey = (i, slot, others, layout);
            if !self.legal_targets.contains_key(&tkey) {
                let t = self.relayout_targets(i, slot, &helds, lay.as_ref());
                self.legal_targets.insert(tkey.clone(), t);
            }
            for target in self.legal_targets[&tkey].clone() {
                let to = self.layouts[target as usize].clone();
                let Some((rc, rtasks, rregion, rj)) =
                    self.relayout(r, (states[slot], &helds[slot]), target)
                else {
                    continue;
                };
                let mut moved = helds.clone();
                for (k, &rr) in op.reads.iter().enumerate() {
                    if rr == r {
                        moved[k] = Held {
                            layout: to.clone(),
                            partial: Vec::new(),
                        };
                    }
                }
                let inputs: Vec<(TensorId, &Held)> =
                    op.reads.iter().copied().zip(moved.iter()).collect();
                // The moved input is the Relayout's output now, no longer the stream.
                let streams: Vec<Option<StreamFrom>> = (op.reads.iter().enumerate())
                    .map(|(k, &rr)| from(k, op.source(k).filter(|_| rr != r)))
                    .collect();
                let Ok(m) = self
                    .coster
                    .measure(OpId::new(i), &inputs, lay.as_ref(), &streams)
                else {
                    continue;
                };
                let total = m.cycles.saturating_add(rc);
                if best.as_ref().is_some_and(|(b, _)| *b <= total) {
                    continue;
                }
                let s = self.state(target, Vec::new());
                let ins = Inserted {
                    before: self.res.program.ops[OpId::new(i)].source.index(),
                    tensor: op.reads[slot],
                    layout: target,
                    cycles: rc,
                };
                let mut out = self.out_of(i, m, Some((slot, rtasks, rregion, s, ins)));
                out.cycles = total;
                out.dynamic_j += rj;
                best = Some((total, out));
            }
        }
        best.map(|(_, o)| o).ok_or(err.into())
    }

    /// The inserted Relayout of tensor `t` from `state` (held as `held`) to layout
    /// `target`: its cycles, tasks (the tensor as input slot 0), the region it moves the
    /// tensor to and its dynamic joules; `None` where it fails. It depends on nothing
    /// else, so each is measured once.
    fn relayout(
        &mut self,
        t: TensorId,
        (state, held): (StateId, &Held),
        target: LayoutId,
    ) -> Option<Relayouted> {
        if let Some(r) = self.relayouts.get(&(t, state, target)) {
            return r.clone();
        }
        let to = &self.layouts[target as usize];
        let r = (self.coster.relayout(t, held, to).ok())
            .map(|(rc, tasks, region)| (rc, tasks, region, self.coster.dynamic_j()));
        self.relayouts.insert((t, state, target), r.clone());
        r
    }

    /// The model's record of a measured op; `relayout` is an inserted Relayout before
    /// it: (input slot, its tasks and the region it moves the input to, both symbolic
    /// with the input as slot 0, the input's new state, the insert).
    fn out_of(
        &mut self,
        i: usize,
        m: Measured,
        relayout: Option<(usize, Vec<Task>, RegionId, StateId, Inserted)>,
    ) -> OpOut {
        let output = m.output.map(|(t, h, region)| {
            let l = self.intern(t, h.layout);
            (t, self.state(l, h.partial), region)
        });
        let mut tasks = m.tasks;
        let mut span = span_of(&tasks);
        let mut moved = Vec::new();
        if let Some((slot, mut rtasks, rregion, state, insert)) = relayout {
            // The Relayout's own regions after the kernel's; the kernel reads the moved
            // input (every slot of it) from where the Relayout put it.
            let shift = span;
            let reads = &self.ops[i].reads;
            let tensor = reads[slot];
            let same: Vec<usize> = (0..reads.len()).filter(|&k| reads[k] == tensor).collect();
            let local = |r: RegionId| match input_slot(r) {
                Some(0) => input_region(slot),
                Some(_) => r,
                None => RegionId(r.0 + shift),
            };
            for t in &mut rtasks {
                remap(t, local);
            }
            let landed = local(rregion);
            for t in &mut tasks {
                remap(t, |r| match input_slot(r) {
                    Some(k) if same.contains(&k) => landed,
                    _ => r,
                });
            }
            span = shift + span_of(&rtasks);
            let task = rtasks.len().saturating_sub(1);
            rtasks.append(&mut tasks);
            tasks = rtasks;
            moved.push(Moved {
                tensor,
                state,
                region: landed,
                task,
                insert,
            });
        }
        let mut busy: Vec<(Resource, u64)> = Vec::new();
        for h in tasks.iter().flat_map(|t| &t.holds) {
            timeline::tally(&mut busy, h.resource, h.cycles);
        }
        OpOut {
            dynamic_j: m.dynamic_j,
            cycles: m.cycles,
            output,
            moved,
            tasks,
            span,
            busy,
        }
    }

    /// A few layouts of input `slot` of kernel op `i` that make it legal, fewest words
    /// per PE first (ties by id): the candidates are kept in that order, so the scan
    /// stops at the first few legal ones.
    fn relayout_targets(
        &mut self,
        i: usize,
        slot: usize,
        helds: &[Held],
        out: Option<&TensorLayout>,
    ) -> Vec<LayoutId> {
        let t = self.ops[i].reads[slot];
        if !self.targets.contains_key(&t) {
            let (mut ids, _) = self.generate(t);
            // Fewest words per PE first: the first legal ones are the targets. What a
            // scan reads of each is worked out once, for every kernel that scans them.
            ids.sort_by_cached_key(|&c| (self.layouts[c as usize].words_per_pe(), c));
            let layouts = ids.iter().map(|&c| &self.layouts[c as usize]);
            let set = mnsim_kernels::ScanSet::new(layouts, self.coster.machine());
            self.targets.insert(t, (ids, set));
        }
        let Some(kern) = self.kernel(self.ops[i].op).cloned() else {
            return Vec::new();
        };
        // A replicated input is available at every level, so if the kernel is illegal
        // with this input replicated, no layout of it makes the kernel legal (its output
        // layout fixed): the scan of every candidate is skipped. Legality reads levels
        // only, so where the replica does not fit LM, one held in `Time` steps stands in.
        if let Some(o) = out {
            if !self.replicas.contains_key(&t) {
                let r = self.replicated(t).or_else(|| self.replicated_in_time(t));
                self.replicas.insert(t, r);
            }
            if let Some(rep) = &self.replicas[&t] {
                let ins = with_input(&self.ops[i].reads, t, helds, rep);
                if !mnsim_kernels::is_legal(&kern, &ins, o, self.coster.machine()) {
                    // ... but for one laid out as the output reads it, which steps
                    // through `Time` with the output (in the chain phase).
                    return self
                        .fallback_target(i, slot, helds, out)
                        .into_iter()
                        .collect();
                }
            }
        }
        // The kernel's work on the other operands is done once for the scan; the
        // input's own layout fills `slot` (and its repeats).
        let (ids, set) = &self.targets[&t];
        let Some(slot_layout) = ids.first().map(|&c| &self.layouts[c as usize]) else {
            return Vec::new();
        };
        let ins = with_input(&self.ops[i].reads, t, helds, slot_layout);
        // A scan varies one operand: an input read twice, or one that is also the output
        // (no output layout given), is checked whole.
        let repeats = (self.ops[i].reads.iter()).filter(|&&r| r == t).count() > 1;
        let scan = match out {
            Some(o) if !repeats => Some(mnsim_kernels::Scan::new(
                &kern,
                &ins,
                slot,
                o,
                self.coster.machine(),
            )),
            _ => None,
        };
        let mut memo = scan.as_ref().map(|s| s.memo(set));
        let mut legal: Vec<LayoutId> = Vec::new();
        for (k, &c) in ids.iter().enumerate() {
            let cand = &self.layouts[c as usize];
            self.legal_checks += 1;
            let ok = match (&scan, &mut memo) {
                (Some(scan), Some(memo)) => scan.is_legal_in(cand, (set, k), memo),
                _ => {
                    let ins = with_input(&self.ops[i].reads, t, helds, cand);
                    let m = self.coster.machine();
                    mnsim_kernels::is_legal(&kern, &ins, out.unwrap_or(ins[0]), m)
                }
            };
            if ok {
                legal.push(c);
                if legal.len() == TARGETS_MEASURED {
                    break;
                }
            }
        }
        if legal.is_empty() {
            legal.extend(self.fallback_target(i, slot, helds, out));
        }
        legal
    }

    /// In the chain phase, before the first reader of a tied variable's tensor, where no
    /// candidate of input `slot` makes kernel op `i` legal: the input laid out as the
    /// output reads it (each of its axes the output also has keeps the output's
    /// sub-axes; the others in memory), else replicated, the first that is legal. A
    /// layout chosen for a chain of elementwise ops reaches the chain's other operands
    /// this way (a bias, a mask, a row statistic).
    fn fallback_target(
        &mut self,
        i: usize,
        slot: usize,
        helds: &[Held],
        out: Option<&TensorLayout>,
    ) -> Option<LayoutId> {
        if !(self.chain_inserts() && self.ops[i].insert_tied[slot]) {
            return None;
        }
        let o = out?;
        let kern = self.kernel(self.ops[i].op).cloned()?;
        let reads = self.ops[i].reads.clone();
        let t = reads[slot];
        let m = self.coster.machine().clone();
        let shapes: Vec<Vec<u64>> = (reads.iter())
            .map(|&r| self.tensor(r).dims_at_bound.clone())
            .collect();
        let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        let out_dims = o.logical_shape();
        let (dims, dtype) = (shapes[slot].clone(), self.tensor(t).dtype);
        let from_output = mnsim_kernels::shape::index_map(&kern, &refs, out_dims)
            .ok()
            .and_then(|maps| {
                let from: Vec<Option<usize>> = (maps[slot].axes.iter().zip(&dims))
                    .map(|(a, &d)| match *a {
                        AxisSource::Out(h) => (out_dims.get(h) == Some(&d)).then_some(h),
                        AxisSource::Reduced(_) | AxisSource::Broadcast => None,
                    })
                    .collect();
                o.derived(&from, &dims, &m)?.with_dtype(dtype, &m)
            });
        for l in from_output.into_iter().chain(self.replicated(t)) {
            self.legal_checks += 1;
            let ins = with_input(&reads, t, helds, &l);
            if l.logical_shape() == dims
                && super::ties::binds_again(&l, &dims, dtype, &m)
                && mnsim_kernels::is_legal(&kern, &ins, o, &m)
            {
                return Some(self.intern(t, l));
            }
        }
        None
    }
}
