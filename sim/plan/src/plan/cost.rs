//! The cost of one op given the layouts of the tensors it touches, measured by the
//! engine in timing mode on a world built once.
//!
//! Before each measurement the engine's LM is emptied and the op's inputs are loaded in
//! the layouts asked for (their own cost is not counted); then the op runs as `run`
//! would run it — kernels followed by the tree Reduces that complete a partial output
//! (always after `ReduceAxes`, after any kernel with `auto_reduce`) — and the cycles of
//! every op the engine recorded are summed. The op's lowered tasks (what the timeline
//! places) are kept too, their LM regions named symbolically ([`input_region`] for the
//! placed inputs, small numbers for the op's own allocations) so that the planner can
//! renumber them for each plan it scores. Nothing here parses or resolves a scenario.

use crate::engine::{Engine, Resident, SimError};
use crate::ids::RegionId;
use crate::program::{OpId, OpKind, Program, TensorId};
use crate::scenario::Resolved;
use crate::timeline::Schedule;
use crate::timeline::Task;
use mnsim_arch::TensorLayout;
use mnsim_kernels::Legality;

/// The layout and partial levels of a tensor in LM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub layout: TensorLayout,
    pub partial: Vec<usize>,
}

/// What one measured op did.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Cycles of the op and of the Reduces it needed.
    pub cycles: u64,
    /// The op's output as it ends up in LM (tensor, layout, partial levels), and its
    /// region (symbolic, as in `tasks`).
    pub output: Option<(TensorId, Held, RegionId)>,
    /// The op lowered (the Reduces it needed included), in order. Regions are symbolic:
    /// [`input_region`]`(slot)` is the input of that slot; any other id is one of the op's
    /// own allocations. `lm_words` counts only the op's own allocations.
    pub tasks: Vec<Task>,
    /// Dynamic joules of the op and its Reduces (docs/model.md, energy).
    pub dynamic_j: f64,
}

/// Symbolic region ids of an op's inputs in [`Measured::tasks`] start here.
pub const INPUT_REGION: u32 = u32::MAX - 255;

/// The symbolic region of input `slot`.
pub fn input_region(slot: usize) -> RegionId {
    RegionId(INPUT_REGION + slot as u32)
}

/// The input slot a symbolic region stands for, if it is one.
pub fn input_slot(r: RegionId) -> Option<usize> {
    (r.0 >= INPUT_REGION).then(|| (r.0 - INPUT_REGION) as usize)
}

/// Where an input the measured op reads slice by slice (its first reader) comes from.
#[derive(Clone, Copy, Debug)]
pub enum StreamFrom<'a> {
    /// A Load (op id): the Load is applied before the op, so that the op's walk places
    /// its sends.
    Load(OpId),
    /// A kernel (op id) whose task was `Task`, its stream holding the given slices unless
    /// the op says `buffers:`: the input is placed and assumed to be its output stream
    /// ([`Engine::assume_stream`]).
    Kernel(OpId, &'a Task, u64),
}

/// An engine kept for measuring ops one at a time.
pub struct Coster {
    eng: Engine,
    /// The program measured (op ids are positions in the resolved program).
    program: Program,
    auto_reduce: bool,
    placed: u64,
    /// Ops the engine ran (measures and inserted Relayouts) since the coster was built.
    pub runs: u64,
    /// Regions of inputs loaded as streams for the op being measured, with their slot.
    loaded: Vec<(RegionId, usize)>,
    /// Regions of inputs placed for the op being measured, with their slot.
    inputs: Vec<(RegionId, usize)>,
    /// The sequences of streamed Loads (op, layout) a measurement applied without an
    /// error: applied again from an empty LM, they give none again (every tensor is in
    /// DRAM and allocation depends on the Loads before only).
    loads_ok: HashSet<Vec<(OpId, TensorLayout)>>,
    /// Whether a kernel's legality is checked before its streamed Loads are applied
    /// where that gives the same result ([`Coster::known_legality`]); on but in tests.
    legality_first: bool,
    /// Measurements that check found illegal without applying their Loads.
    pub illegal_first: u64,
    /// Kernel ops whose operands' and output's declared shapes check
    /// ([`Engine::kernel_shapes_ok`]).
    shapes_ok: HashSet<OpId>,
    /// Each program input's first Load: the one that brings it from the host, where the
    /// machine has one (docs/model.md, many boards), as in the run.
    first_loads: HashSet<OpId>,
}

/// Looked up only: any fixed hasher.
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

/// Offsets of placed inputs: far above any LM.
const PLACED_BASE: u64 = 1 << 60;
/// Region ids of placed inputs (an op allocates a few regions at most).
const PLACED_REGION: u32 = 64;

impl Coster {
    /// Builds the machine once and declares every tensor of `res` (timing mode: no data;
    /// every tensor counts as present in DRAM in its declared layout).
    pub fn new(res: &Resolved) -> Result<Coster, SimError> {
        let mut eng = Engine::measuring(res.machine.clone(), Schedule::Sequential);
        eng.set_explaining(false);
        // A collective over a network that the program does not fix runs the cheapest
        // algorithm: the planner's choice (docs/planner.md, collectives).
        eng.set_choosing_algorithms(true);
        for t in res.program.tensors.values() {
            let (id, layout) = crate::run::declare(&mut eng, t, None)?;
            eng.state.set_in_dram(id, layout);
        }
        let program = res.program.clone();
        let mut seen = HashSet::default();
        let first_loads = (program.ops.iter())
            .filter_map(|(id, po)| {
                let OpKind::Load { tensor } = po.kind else {
                    return None;
                };
                (program.tensors[tensor].init.is_some() && seen.insert(tensor)).then_some(id)
            })
            .collect();
        Ok(Coster {
            eng,
            program,
            auto_reduce: res.auto_reduce,
            placed: 0,
            runs: 0,
            loaded: Vec::new(),
            inputs: Vec::new(),
            loads_ok: HashSet::default(),
            legality_first: true,
            illegal_first: 0,
            shapes_ok: HashSet::default(),
            first_loads,
        })
    }

    /// Whether Load `op`, about to be applied, brings its tensor from the host.
    fn host_flag(&mut self, op: OpId) {
        if let OpKind::Load { tensor } = self.program.ops[op].kind
            && let Some(t) = self.eng.state.tensors.get_mut(tensor)
        {
            t.from_host = self.first_loads.contains(&op);
        }
    }

    /// Whether kernels are checked for legality before their streamed Loads are applied
    /// (the default; the results are the same either way).
    pub fn set_legality_first(&mut self, on: bool) {
        self.legality_first = on;
    }

    /// The legality [`Coster::measure`] of kernel op `op` finds, checked before its
    /// inputs' Loads are applied where nothing before the kernel's legality check can
    /// fail: no input holds partial sums or streams from a kernel, these Loads (`from`
    /// per input, `loads` in order) ran without an error before, and the op's shapes
    /// check. The engine's own check and message ([`Engine::kernel_legality`]): an
    /// illegal kernel's error is the measurement's, and a legal kernel's legality is
    /// handed to the engine, which does not check it again. `None` otherwise.
    fn known_legality(
        &mut self,
        op: OpId,
        inputs: &[(TensorId, &Held)],
        layout: Option<&TensorLayout>,
        (from, loads): (&[Option<StreamFrom>], &[(OpId, TensorLayout)]),
    ) -> Option<Result<Legality, SimError>> {
        let o = self.program.ops.get(op)?;
        let (
            OpKind::Kernel {
                kernel,
                inputs: ins,
                out,
            },
            Some(layout),
        ) = (&o.kind, layout)
        else {
            return None;
        };
        let clean = inputs.iter().all(|(_, h)| h.partial.is_empty())
            && !from
                .iter()
                .any(|f| matches!(f, Some(StreamFrom::Kernel(..))));
        if !self.legality_first || !clean || !(loads.is_empty() || self.loads_ok.contains(loads)) {
            return None;
        }
        // Declared shapes do not change: an op whose shapes checked once checks again.
        if !self.shapes_ok.contains(&op) {
            if !self.eng.kernel_shapes_ok(o.name, kernel, ins, *out) {
                return None;
            }
            self.shapes_ok.insert(op);
        }
        // Each operand as the measurement would hold it: placed or loaded in its layout.
        let in_layouts: Option<Vec<&TensorLayout>> = (ins.iter())
            .map(|t| inputs.iter().find(|(m, _)| m == t).map(|(_, h)| &h.layout))
            .collect();
        let in_layouts = in_layouts?;
        Some((self.eng).kernel_legality(o.name, kernel, (ins, *out), &in_layouts, layout))
    }

    /// Empties LM and the op log.
    fn reset(&mut self) {
        self.eng.clear();
        self.runs += 1;
        self.placed = 0;
        self.loaded.clear();
        self.inputs.clear();
    }

    /// Places tensor `t` (input `slot`) in LM as `held`, without moving anything. The
    /// region lies outside the engine's allocator (the planner's own walk charges LM), at
    /// an offset no allocation reaches, so freeing it is a no-op for the allocator.
    fn place(&mut self, t: TensorId, held: &Held, slot: usize) -> Result<(), SimError> {
        let words = held
            .layout
            .footprint_words()
            .saturating_mul(held.layout.time_span());
        self.placed += 1;
        let region = RegionId(PLACED_REGION + self.placed as u32);
        self.inputs.push((region, slot));
        // One slice of it counts against LM, as the run's allocation of it does (a
        // `Time`-stepped input the run may hold two slices of: the fewest it holds).
        self.eng.charge_placed(held.layout.footprint_words());
        let t = (self.eng.state.tensors.get_mut(t))
            .ok_or(crate::engine::ErrorKind::UnknownTensor(t))?;
        t.lm = Some(Resident {
            layout: held.layout.clone(),
            offset: PLACED_BASE + self.placed,
            words,
            partial: held.partial.clone(),
            // Ids the engine's allocator (restarted by `reset`) does not reach.
            region,
        });
        Ok(())
    }

    /// Moving tensor `t` from `from` into `to` in place (an inserted Relayout): its
    /// cycles, its tasks (the moved tensor is input 0) and the region it lands in.
    pub fn relayout(
        &mut self,
        t: TensorId,
        from: &Held,
        to: &TensorLayout,
    ) -> Result<(u64, Vec<Task>, RegionId), SimError> {
        self.reset();
        self.place(t, from, 0)?;
        self.eng.rec.ops.clear();
        let r = self.eng.relayout("Relayout", t, to.clone(), None)?;
        let region = (self.eng.state.tensors.get(t))
            .and_then(|t| t.lm.as_ref())
            .map_or(RegionId(0), |r| r.region);
        Ok((r.cycles, self.tasks(), self.symbol(region)))
    }

    /// A region of the measuring engine as [`Measured::tasks`] names it.
    fn symbol(&self, r: RegionId) -> RegionId {
        match self
            .loaded
            .iter()
            .chain(&self.inputs)
            .find(|(l, _)| *l == r)
        {
            Some(&(_, slot)) => input_region(slot),
            None => r,
        }
    }

    /// The engine's tasks of the op just measured (from task `from` on), regions made
    /// symbolic, less `loaded_words` of LM (inputs loaded as streams, which the
    /// planner's walk charges).
    fn tasks_from(&self, from: usize, loaded_words: u64) -> Vec<Task> {
        let mut out = self.eng.rec.tasks[from.min(self.eng.rec.tasks.len())..].to_vec();
        for t in &mut out {
            t.lm_words = t.lm_words.saturating_sub(loaded_words);
            for r in t.reads.iter_mut().chain(t.writes.iter_mut()) {
                *r = self.symbol(*r);
            }
            for (r, _) in t.frees_before.iter_mut().chain(t.frees_after.iter_mut()) {
                *r = self.symbol(*r);
            }
            for input in t.walk.iter_mut().flat_map(|w| w.inputs.iter_mut()) {
                input.region = self.symbol(input.region);
            }
        }
        out
    }

    /// The engine's tasks of the op just measured, regions made symbolic.
    fn tasks(&self) -> Vec<Task> {
        self.tasks_from(0, 0)
    }

    /// Measures op `op` with its inputs in LM as `inputs` and `layout` as its own
    /// layout, applied as the run applies it ([`crate::apply::apply`]). An input whose
    /// `streams` entry names its producer (a `Time`-stepped output of it, of which this
    /// op is the first reader) is read slice by slice as in the run: a Load's stream is
    /// loaded by the Load, not placed, so that its sends, the buffers they wait for and
    /// the slices sent again (docs/model.md, streams) are in the op's tasks (the Load's
    /// own task is not); a kernel's is placed as that kernel's output stream.
    pub fn measure(
        &mut self,
        op: OpId,
        inputs: &[(TensorId, &Held)],
        layout: Option<&TensorLayout>,
        streams: &[Option<StreamFrom>],
    ) -> Result<Measured, SimError> {
        self.reset();
        self.eng.rec.ops.clear();
        let from: Vec<Option<StreamFrom>> = (inputs.iter().enumerate())
            .map(|(slot, (n, h))| {
                streams.get(slot).copied().flatten().filter(|_| {
                    h.partial.is_empty()
                        && h.layout.time_span() > 1
                        && !inputs[..slot].iter().any(|(m, _)| m == n)
                })
            })
            .collect();
        let loads: Vec<(OpId, TensorLayout)> = (from.iter().zip(inputs))
            .filter_map(|(f, (_, h))| match f {
                Some(StreamFrom::Load(load)) => Some((*load, h.layout.clone())),
                Some(StreamFrom::Kernel(..)) | None => None,
            })
            .collect();
        let known = self.known_legality(op, inputs, layout, (&from, &loads));
        let hint = match known {
            Some(Err(e)) => {
                self.illegal_first += 1;
                return Err(e);
            }
            Some(Ok(legal)) => Some(legal),
            None => None,
        };
        for (slot, (&(n, h), from)) in inputs.iter().zip(from).enumerate() {
            // An operand read twice (`x * x`) is one tensor in LM: placed (or streamed)
            // once, as its first read has it.
            if inputs[..slot].iter().any(|(m, _)| *m == n) {
                continue;
            }
            match from {
                Some(StreamFrom::Load(load)) => {
                    let layout = Some(&h.layout);
                    self.host_flag(load);
                    let p = (&self.program, load);
                    crate::apply::apply(&mut self.eng, p, layout, (false, None), None)?;
                    if let Some(r) = self.eng.state.tensors.get(n).and_then(|t| t.lm.as_ref()) {
                        self.loaded.push((r.region, slot));
                    }
                }
                Some(StreamFrom::Kernel(k, task, held)) => {
                    self.place(n, h, slot)?;
                    let buffers = self.program.ops.get(k).and_then(|o| o.buffers);
                    self.eng.assume_stream(n, (buffers, held), task.clone())?;
                }
                None => self.place(n, h, slot)?,
            }
        }
        if !loads.is_empty() {
            self.loads_ok.insert(loads);
        }
        let (first_op, first_task) = (self.eng.rec.ops.len(), self.eng.rec.tasks.len());
        let loaded_words: u64 = self
            .loaded
            .iter()
            .filter_map(|(r, _)| self.eng.state.streams.get(r))
            .map(|st| st.slice_words.saturating_mul(st.buffers))
            .fold(0, u64::saturating_add);
        self.host_flag(op);
        // The kernel's legality as checked above (its layouts are those it runs in).
        crate::apply::apply(
            &mut self.eng,
            (&self.program, op),
            layout,
            (self.auto_reduce, hint),
            None,
        )?;
        let cycles = self.eng.rec.ops[first_op..].iter().map(|o| o.cycles).sum();
        let output = self.program.output(op).and_then(|out| {
            let t = match &self.program.ops[op].kind {
                // A Broadcast from DRAM lands in the tensor itself.
                OpKind::Broadcast { tensor, .. } if inputs.is_empty() => *tensor,
                OpKind::Load { .. }
                | OpKind::Gather { .. }
                | OpKind::Store { .. }
                | OpKind::Relayout { .. }
                | OpKind::Broadcast { .. }
                | OpKind::Reduce { .. }
                | OpKind::Free { .. }
                | OpKind::Kernel { .. } => out,
            };
            (self.eng.state.tensors)
                .get(t)
                .and_then(|s| s.lm.as_ref())
                .map(|r| {
                    (
                        t,
                        Held {
                            layout: r.layout.clone(),
                            partial: r.partial.clone(),
                        },
                        r.region,
                    )
                })
        });
        let output = output.map(|(n, h, r)| (n, h, self.symbol(r)));
        Ok(Measured {
            cycles,
            output,
            tasks: self.tasks_from(first_task, loaded_words),
            // The op's own joules (the Loads of its streamed inputs are theirs).
            dynamic_j: crate::energy::ops_dynamic_j(&self.eng, first_op),
        })
    }

    /// Whether an illegal kernel's error explains the fix (off by default: see
    /// [`Engine::set_explaining`]).
    pub fn set_explaining(&mut self, on: bool) {
        self.eng.set_explaining(on);
    }

    /// The work of placing the measuring engine's ops (see [`Engine::placed`]).
    pub fn placed(&self) -> u64 {
        self.eng.placed()
    }

    /// Walk steps the measuring engine planned (see [`Engine::walked`]).
    pub fn walked(&self) -> u64 {
        self.eng.walked()
    }

    /// Dynamic joules of what was measured last (a [`Coster::relayout`]).
    pub fn dynamic_j(&self) -> f64 {
        crate::energy::engine_dynamic_j(&self.eng)
    }

    /// The machine being measured.
    pub fn machine(&self) -> &mnsim_arch::Machine {
        &self.eng.state.machine
    }
}
