//! The engine: tensors in DRAM and LM, the transfers (Load, Store, Relayout, Reduce)
//! in timing and functional mode, and the report of every op.
//!
//! Timing mode never touches element data: per-PE facts come from the layout's closed
//! forms. Functional mode moves real bytes between real buffers, in parallel over the
//! PEs (rayon), and counts the same facts from what it moved; both feed one cost model
//! ([`crate::net::cost`]), so both modes give the same cycles.

use crate::ids::RegionId;
use crate::lowering;
use crate::net::{self, Topo};
use crate::program::{PrimaryMap, TensorId};
use crate::timeline::{Schedule, Task, Timeline};
use crate::world::{Nodes, Pe, SimWorld, WorldBusy};
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};
use mnsim_reports::OpReport;
use std::collections::BTreeMap;

pub use crate::program::{Mode, check_dram, dram_capacity};

mod alloc;
mod buffers;
mod contract;
mod conv;
mod copy;
mod dataplane;
mod error;
mod facts;
mod gather;
mod kernel;
mod record;
mod streams;
mod transfers;

pub use error::{ErrorKind, LmFull, Partial, SimError};
pub use gather::row_of;
pub use streams::StreamState;

use alloc::{Alloc, Frees};
pub use buffers::zeroed;
use dataplane::DramAddr;

/// A tensor in DRAM.
#[derive(Clone, Debug)]
pub struct DramTensor {
    pub layout: XlaLayout,
    /// Element bytes in the XLA layout's order (functional mode only).
    pub data: Vec<u8>,
}

/// A tensor resident in every PE's LM.
#[derive(Clone, Debug)]
pub struct Resident {
    pub layout: TensorLayout,
    /// First LM word of the tensor's region (the same on every PE).
    pub offset: u64,
    /// Words of the region: footprint × time span (every step is kept).
    pub words: u64,
    /// Addressable levels (indices) over which copies hold different partial values.
    pub partial: Vec<usize>,
    /// This allocation, for the timeline's data dependencies.
    pub region: RegionId,
}

/// What the engine keeps of an op it ran, beside its report.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Its stages, typed: its own, then those of the stream slices it needed again (its
    /// re-sends: the producers' stages scaled to the slices sent again, charged to it in
    /// cycles and bytes).
    pub stages: Vec<net::Stage>,
    /// How many of `stages` are the op's own.
    pub own: usize,
    /// Its slowest stage (an index into `stages`, one of its own).
    pub bottleneck: Option<usize>,
    /// The tensor it moved or computed.
    pub tensor: TensorId,
    /// Its own stages done again, where that differs (`net::Cost::again`): what a
    /// consumer's re-send of one of its slices replays.
    pub again: Option<Vec<net::Stage>>,
}

impl Record {
    /// The op's own stages.
    pub fn own(&self) -> &[net::Stage] {
        &self.stages[..self.own]
    }

    /// The stages of the slices it needed again.
    pub fn resent(&self) -> &[net::Stage] {
        &self.stages[self.own..]
    }
}

/// A declared tensor.
#[derive(Clone, Debug)]
pub struct TensorState {
    /// Its name, for messages and reports.
    pub name: String,
    pub dtype: DType,
    /// Shape as laid out in LM (bounded dynamic dimensions at their bound).
    pub dims: Vec<u64>,
    /// Shape of the real data (bound dynamic dimensions at their binding).
    pub runtime: Vec<u64>,
    pub dram: Option<DramTensor>,
    pub lm: Option<Resident>,
    /// A program input not loaded yet: on a machine with a host its first Load brings
    /// it over the host's links (docs/model.md, the host).
    pub from_host: bool,
}

/// The simulator for one run.
pub struct Engine {
    pub machine: Machine,
    pub topo: Topo,
    pub sw: SimWorld,
    pub mode: Mode,
    /// The declared tensors, by the id [`Engine::declare`] gave each.
    pub tensors: PrimaryMap<TensorId, TensorState>,
    alloc: Alloc,
    /// Peak LM bytes charged per PE.
    pub lm_peak_bytes: u64,
    pub ops: Vec<OpReport>,
    /// Every op's record: its stages, typed (the report holds them converted), its
    /// slowest stage and the tensor it leaves.
    pub records: Vec<Record>,
    /// Every op lowered, in program order (the timeline's input).
    pub tasks: Vec<Task>,
    /// Where every op sits in time.
    pub timeline: Timeline,
    frees: Frees,
    /// `buffers:` of the op about to run (taken by its allocation).
    pub buffers: Option<i64>,
    /// LM words charged after every allocation (the LM peak, should a stream give back a slice).
    charge_log: Vec<u64>,
    /// Every `Time`-stepped tensor placed in LM (a stream), by region.
    pub streams: BTreeMap<RegionId, StreamState>,
    /// Every PE's position per addressable level, in PE order (functional mode only:
    /// timing mode walks the positions a layout touches).
    positions: Vec<Vec<u64>>,
    /// Timing mode: a Load's charge and walk by the tensor's DRAM layout and run-time
    /// dims, then its LM layout (which holds its dtype): what they depend on. Kept across
    /// [`Engine::clear`] and [`Engine::clear_all`], so the planner's measurements, which
    /// load a stream before its reader, compute each once.
    load_memo: std::collections::HashMap<(XlaLayout, Vec<u64>), LoadMemo>,
    /// Walks planned, by what they depend on; kept across [`Engine::clear`] (the
    /// planner measures many ops that walk alike).
    walk_memo: streams::WalkMemo,
    /// The sends of the memoised walks' inputs, by buffers.
    sends_memo: lowering::walk::SendsMemo,
    /// While measuring in timing mode: a Reduce's charge, and whether the closed form
    /// gave it, by what it depends on ([`ReduceKey`]); kept across [`Engine::clear`].
    reduce_memo:
        std::collections::HashMap<ReduceKey, (net::Cost, bool), foldhash::fast::FixedState>,
    /// Functional mode: evaluate every kernel element by element, matrix contractions
    /// and convolutions included (see [`Engine::set_per_element_kernels`]).
    per_element_kernels: bool,
    /// Measuring for the planner ([`Engine::set_measuring`]): what only a report reads
    /// (per-port statistics, PEs' ready cycles and their percentiles, the layout's
    /// canonical text, stage reports) is not computed.
    measuring: bool,
    /// An illegal kernel's error explains the fix ([`Engine::set_explaining`]).
    explaining: bool,
    /// The legality of the next kernel, checked by the caller under the layouts it
    /// runs in ([`Engine::set_legality_hint`]).
    legal_hint: Option<mnsim_kernels::Legality>,
    /// Walk steps of the kernels run (a planner counts its work in them).
    walked: u64,
    /// The work of placing ops on the timelines cleared so far ([`Engine::placed`]).
    placed_work: u64,
    /// While measuring: transfers charged in closed form, and those left to per-PE facts.
    closed: [u64; 2],
}

/// A tensor's Loads by layout (hashed with a fixed, fast hasher: the planner looks a
/// layout up for every Load it measures).
type LoadMemo = std::collections::HashMap<TensorLayout, LoadCharge, foldhash::fast::FixedState>;

/// What a Reduce's charge depends on: the layout, the levels its partial sums are over
/// before it, the level it reduces over and the runtime dims.
type ReduceKey = (TensorLayout, Vec<usize>, usize, Vec<u64>);

/// What a Load of one tensor in one layout is charged, and how it walks its steps.
type LoadCharge = (net::Cost, Option<(lowering::walk::WalkPlan, bool)>);

impl Engine {
    pub fn new(machine: Machine, mode: Mode) -> Engine {
        Self::with_schedule(machine, mode, Schedule::Sequential)
    }

    /// Forgets what LM holds and every op recorded, keeping the machine, the world and
    /// the declared tensors: the planner measures ops one at a time on one engine.
    pub fn clear(&mut self) {
        for t in self.tensors.values_mut() {
            t.lm = None;
        }
        self.legal_hint = None;
        self.alloc = Alloc::default();
        self.frees = Frees::default();
        self.buffers = None;
        self.charge_log.clear();
        self.streams.clear();
        self.ops.clear();
        self.records.clear();
        self.tasks.clear();
        self.placed_work = self.placed_work.saturating_add(self.timeline.work);
        self.timeline.reset();
        self.sw.clear_busy();
        self.lm_peak_bytes = 0;
    }

    /// [`Engine::clear`], and forgets every tensor too: the engine is as a new one to
    /// the next run (which declares its tensors), but for what it memoises.
    pub fn clear_all(&mut self) {
        self.clear();
        self.tensors = PrimaryMap::new();
    }

    /// An engine whose ops are placed by `schedule`.
    pub fn with_schedule(machine: Machine, mode: Mode, schedule: Schedule) -> Engine {
        let topo = Topo::new(&machine);
        // Functional mode holds every PE's LM; timing mode spawns what its ops touch.
        let sw = SimWorld::build(
            &machine,
            match mode {
                Mode::Functional => Nodes::All,
                Mode::Timing => Nodes::Touched,
            },
        );
        let positions = Self::positions_of(&sw);
        let lm_words = machine.leaf_memory_bytes() / machine.word_bytes.max(1);
        Engine {
            records: Vec::new(),
            tasks: Vec::new(),
            timeline: Timeline::new(schedule, lm_words),
            frees: Frees::default(),
            buffers: None,
            charge_log: Vec::new(),
            streams: BTreeMap::new(),
            load_memo: std::collections::HashMap::new(),
            machine,
            topo,
            sw,
            mode,
            tensors: PrimaryMap::new(),
            alloc: Alloc::default(),
            lm_peak_bytes: 0,
            ops: Vec::new(),
            positions,
            per_element_kernels: false,
            measuring: false,
            explaining: true,
            legal_hint: None,
            closed: [0; 2],
            walked: 0,
            walk_memo: Default::default(),
            sends_memo: Default::default(),
            reduce_memo: Default::default(),
            placed_work: 0,
        }
    }

    /// Functional mode computes a matrix contraction (`MatMul`, `BatchMatMul`,
    /// `GeneralMatMul`) shard by shard from its gathered rows and columns, and a
    /// convolution from its shards' listed window taps; with `true`, element by element
    /// through the kernels crate's `eval_share` as every other kernel. Both give the same bytes (tests compare them); timing mode ignores it.
    pub fn set_per_element_kernels(&mut self, on: bool) {
        self.per_element_kernels = on;
    }

    /// With `true`, ops are recorded for the planner's measurements only: their cycles,
    /// tasks, typed stages and FLOP, the same as otherwise, and none of what only a report
    /// reads (per-port statistics, ready-cycle percentiles, layout and stage texts).
    pub fn set_measuring(&mut self, on: bool) {
        self.measuring = on;
    }

    /// With `false`, a kernel its layouts make illegal fails with a short message (which
    /// operand, which level) instead of the one that explains the fix: the planner tries
    /// thousands of illegal combinations and reads few of their messages, and building
    /// one costs more than the rest of its measurement.
    pub fn set_explaining(&mut self, on: bool) {
        self.explaining = on;
    }

    /// The legality of the next kernel op, as [`Engine::kernel_legality`] gives it for
    /// the layouts its inputs and output will have (a planner keeps what it checked):
    /// that kernel takes it instead of checking again. `None` clears it; the caller
    /// clears it after the op, whatever happened.
    pub fn set_legality_hint(&mut self, legal: Option<mnsim_kernels::Legality>) {
        self.legal_hint = legal;
    }

    /// While measuring, how many transfers were charged in closed form, and how many
    /// were left to per-PE facts (the closed form does not apply to them).
    pub fn closed_form_charges(&self) -> (u64, u64) {
        (self.closed[0], self.closed[1])
    }

    /// The work of placing the ops so far on the timeline ([`Timeline::work`]), over
    /// every program since the engine was made.
    pub fn placed(&self) -> u64 {
        self.placed_work.saturating_add(self.timeline.work)
    }

    /// Walk steps of the kernels run so far, whatever became of them (an op that then
    /// fails, or a Relayout a planner only tried), a walk taken from the memo included:
    /// a planner's measure of the per-step work of lowering and placing them.
    pub fn walked(&self) -> u64 {
        self.walked
    }

    /// Declares a tensor; its id (the next one: tensors declared in a program's order
    /// get the program's ids). `data` (functional mode) is its initial content in
    /// row-major order over `runtime`, `dtype.bytes()` per element; it is written to DRAM
    /// in `dram_layout`. A tensor without data has no DRAM copy until it is stored.
    pub fn declare(
        &mut self,
        name: &str,
        dtype: DType,
        dims: Vec<u64>,
        runtime: Vec<u64>,
        dram_layout: XlaLayout,
        data: Option<Vec<u8>>,
    ) -> Result<TensorId, SimError> {
        check_dram(&self.machine, name, dtype, &runtime)?;
        if self.tensors.len() >= crate::program::Program::MAX_ENTRIES {
            return Err(ErrorKind::TooManyTensors(name.to_string()).into());
        }
        let dram = data.map(|d| {
            let addr = DramAddr::new(&dram_layout, &runtime);
            let buf_elems = dram_layout.buffer_elements(&runtime).unwrap_or(0);
            let eb = dtype.bytes() as usize;
            if dram_layout.tiles.is_empty()
                && dram_layout
                    .minor_to_major
                    .iter()
                    .rev()
                    .copied()
                    .eq(0..runtime.len())
            {
                return DramTensor {
                    layout: dram_layout,
                    data: d,
                };
            }
            let mut out = vec![0u8; buf_elems as usize * eb];
            let mut idx = vec![0u64; runtime.len()];
            for k in 0..(d.len() / eb.max(1)) {
                let mut r = k as u64;
                for a in (0..runtime.len()).rev() {
                    idx[a] = r % runtime[a];
                    r /= runtime[a];
                }
                let o = addr.offset(&idx) as usize * eb;
                out[o..o + eb].copy_from_slice(&d[k * eb..(k + 1) * eb]);
            }
            DramTensor {
                layout: dram_layout,
                data: out,
            }
        });
        Ok(self.tensors.push(TensorState {
            name: name.to_string(),
            dtype,
            dims,
            runtime,
            dram,
            lm: None,
            from_host: false,
        }))
    }

    /// Marks a declared tensor as a program input: its data starts on the host.
    pub fn set_from_host(&mut self, t: TensorId) {
        if let Some(t) = self.tensors.get_mut(t) {
            t.from_host = true;
        }
    }

    /// Marks a declared tensor as present in DRAM (timing mode: no data).
    pub fn set_in_dram(&mut self, t: TensorId, layout: XlaLayout) {
        if let Some(t) = self.tensors.get_mut(t)
            && t.dram.is_none()
        {
            t.dram = Some(DramTensor {
                layout,
                data: Vec::new(),
            });
        }
    }

    /// The tensor's DRAM content in row-major order over its runtime shape.
    pub fn dram_row_major(&self, t: TensorId) -> Option<Vec<u8>> {
        let t = self.tensors.get(t)?;
        let d = t.dram.as_ref()?;
        if d.data.is_empty() {
            return None;
        }
        let eb = t.dtype.bytes() as usize;
        let addr = DramAddr::new(&d.layout, &t.runtime);
        let n: u64 = t.runtime.iter().fold(1u64, |a, &b| a.saturating_mul(b));
        let mut out = vec![0u8; n as usize * eb];
        let mut idx = vec![0u64; t.runtime.len()];
        for k in 0..n as usize {
            let mut r = k as u64;
            for a in (0..t.runtime.len()).rev() {
                idx[a] = r % t.runtime[a];
                r /= t.runtime[a];
            }
            let o = addr.offset(&idx) as usize * eb;
            out[k * eb..(k + 1) * eb].copy_from_slice(&d.data[o..o + eb]);
        }
        Some(out)
    }

    fn state(&self, t: TensorId) -> Result<&TensorState, SimError> {
        self.tensors
            .get(t)
            .ok_or_else(|| ErrorKind::UnknownTensor(t).into())
    }

    /// The id of the tensor declared as `name`, for tests and tools that name tensors
    /// (a search of the declarations: the simulator itself never looks a tensor up by
    /// name).
    pub fn tensor_id(&self, name: &str) -> Option<TensorId> {
        self.tensors
            .iter()
            .find(|(_, t)| t.name == name)
            .map(|(id, _)| id)
    }

    /// Tensor `t`'s name, for messages.
    pub fn name(&self, t: TensorId) -> &str {
        self.tensors.get(t).map_or("?", |s| s.name.as_str())
    }

    fn resident(&self, t: TensorId) -> Result<&Resident, SimError> {
        let s = self.state(t)?;
        (s.lm.as_ref()).ok_or_else(|| ErrorKind::NotInLm(s.name.clone()).into())
    }

    /// The error of tensor `t`, partial over addressable level `level` of `layout`,
    /// about to be used as `before` says.
    fn partial(
        &self,
        before: Partial,
        t: TensorId,
        layout: &TensorLayout,
        level: usize,
    ) -> SimError {
        ErrorKind::Partial {
            before,
            tensor: self.name(t).to_string(),
            level: layout.levels()[level].name.to_string(),
        }
        .into()
    }

    /// Every spawned PE's position per addressable level, in PE order (read from the
    /// world once).
    fn positions_of(sw: &SimWorld) -> Vec<Vec<u64>> {
        sw.pes()
            .map(|e| {
                sw.world
                    .get::<Pe>(e)
                    .map(|p| p.pos.clone())
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Allocates an LM region for a layout; checks the capacity.
    fn allocate(
        &mut self,
        t: TensorId,
        layout: &TensorLayout,
    ) -> Result<(u64, u64, RegionId), SimError> {
        let fp = layout.footprint_words();
        let words = fp.saturating_mul(layout.time_span());
        let lm_words = self.machine.leaf_memory_bytes() / self.machine.word_bytes.max(1);
        // Streams that took two slices by default give one back while this does not fit.
        while self.alloc.charged().saturating_add(fp) > lm_words && self.give_back(t, fp) {}
        let charged = self.alloc.charged();
        // A stream is charged the slices LM holds of it.
        let (held, need, fallback, requested) = self.hold(t, layout, charged, lm_words)?;
        if charged.saturating_add(fp) > lm_words {
            return Err(LmFull::Tensor {
                tensor: self.name(t).to_string(),
                need: fp,
                free: lm_words - charged.min(lm_words),
                lm: lm_words,
                resident: self.resident_list(),
            }
            .into());
        }
        let (off, region) = self.alloc.alloc(words, need);
        self.charge_log.push(self.alloc.charged());
        if layout.time_span() > 1 {
            self.streams.insert(
                region,
                StreamState {
                    tensor: t,
                    producer: self.ops.len(),
                    slices: layout.time_span(),
                    slice_words: fp,
                    buffers: held,
                    requested,
                    fallback,
                    log_at: self.charge_log.len() - 1,
                    consumer: None,
                    sends: 0,
                    resends: 0,
                    resend_cycles: 0,
                    external: None,
                },
            );
        }
        self.frees.allocated = true;
        self.frees.lm_words = self.frees.lm_words.max(self.alloc.charged());
        let wb = self.machine.word_bytes;
        self.lm_peak_bytes = self.lm_peak_bytes.max(self.alloc.charged() * wb);
        if self.mode == Mode::Functional {
            let need = usize::try_from(self.lm_high_water_bytes())
                .map_err(|_| ErrorKind::LmTooLarge(self.name(t).to_string()))?;
            buffers::grow_lms(&mut self.sw.world, need);
        }
        Ok((off, words, region))
    }

    /// Bytes of every PE's LM the run's allocations reached (the allocator's high-water
    /// mark, a stream's region with all its `Time` steps): what a functional run holds
    /// per PE.
    pub fn lm_high_water_bytes(&self) -> u64 {
        self.alloc
            .high_water
            .saturating_mul(self.machine.word_bytes)
    }

    /// A region id no allocation uses, for a tensor placed in LM from outside the
    /// allocator (a planner's stand-in).
    pub fn fresh_region(&mut self) -> RegionId {
        self.alloc.fresh()
    }

    /// Frees the LM region at `offset`; the timeline learns when its space is free.
    fn release(&mut self, offset: u64) {
        if let Some(f) = self.alloc.free(offset) {
            if self.frees.allocated {
                self.frees.after.push(f);
            } else {
                self.frees.before.push(f);
            }
        }
    }

    /// Frees a tensor's LM region.
    pub fn free(&mut self, t: TensorId) -> Result<(), SimError> {
        let t = self.tensors.get_mut(t).ok_or(ErrorKind::UnknownTensor(t))?;
        if let Some(r) = t.lm.take() {
            self.release(r.offset);
        }
        Ok(())
    }

    /// The tensors in LM with their footprints, in name order, for messages:
    /// `"h 512, x 128"`.
    fn resident_list(&self) -> String {
        let mut held: Vec<(&str, u64)> = (self.tensors.values())
            .filter_map(|t| Some((t.name.as_str(), t.lm.as_ref()?.layout.footprint_words())))
            .collect();
        held.sort();
        let list: Vec<String> = held.iter().map(|(n, w)| format!("{n} {w}")).collect();
        list.join(", ")
    }
}

impl Engine {
    /// Ends the program on the timeline: streams nothing read slice by slice are sent,
    /// and every op's start, end and cycles (= end − start) are the timeline's.
    pub fn settle(&mut self) {
        self.timeline.settle(&mut WorldBusy::new(&mut self.sw));
        for (o, p) in self.ops.iter_mut().zip(&self.timeline.placed) {
            o.start = p.start;
            o.end = p.end;
            o.cycles = p.end - p.start;
        }
        let total = self.timeline.total();
        self.sw.set_clock(total);
    }
}
