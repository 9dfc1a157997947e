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
use crate::timeline::{Schedule, Task, Timeline};
use crate::world::{Nodes, Pe, SimWorld, WorldBusy};
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};
use mnsim_reports::OpReport;
use std::collections::BTreeMap;

/// How a scenario runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// Move and compute real values.
    Functional,
    /// Count bytes and cycles only (same cycles as functional).
    #[default]
    Timing,
}

impl Mode {
    /// `"functional"` or `"timing"`, as reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Functional => "functional",
            Mode::Timing => "timing",
        }
    }
}

mod alloc;
mod buffers;
mod contract;
mod conv;
mod copy;
mod dataplane;
mod facts;
mod kernel;
mod record;
mod streams;
mod transfers;

pub use record::Record;
pub use streams::StreamState;

use alloc::{Alloc, Frees};
pub(crate) use buffers::zeroed;
use dataplane::DramAddr;

/// A simulation error: a message for the user (the op and tensor named in it) and its
/// kind, so that callers (the planner) act on the kind, not on the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// A kernel that cannot run as asked: `context` names the op, `error.kind` says why
    /// (`Illegal`: the operand and level a relayout must fix; `Layout`, `Rate`, ...).
    #[error("{context}{error}")]
    Kernel {
        context: String,
        error: mnsim_kernels::KernelError,
    },
    /// LM cannot hold what the op needs (a tensor, or the slices of a stream).
    #[error("{0}")]
    LmFull(String),
    /// Anything else: an unknown tensor, one not in LM, a missing layout, a shape that
    /// does not match.
    #[error("{0}")]
    Other(String),
}

impl SimError {
    /// The same error, its message after `prefix` (e.g. the op it stopped at).
    pub fn context(self, prefix: &str) -> SimError {
        match self {
            SimError::Kernel { context, error } => SimError::Kernel {
                context: format!("{prefix}{context}"),
                error,
            },
            SimError::LmFull(m) => SimError::LmFull(format!("{prefix}{m}")),
            SimError::Other(m) => SimError::Other(format!("{prefix}{m}")),
        }
    }

    /// Whether LM could not hold what the op needs.
    pub fn is_lm_full(&self) -> bool {
        matches!(self, SimError::LmFull(_))
    }

    /// The kernel error this is, if any (with its kind).
    pub fn kernel(&self) -> Option<&mnsim_kernels::KernelError> {
        match self {
            SimError::Kernel { error, .. } => Some(error),
            _ => None,
        }
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, SimError> {
    Err(SimError::Other(msg.into()))
}

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

/// A declared tensor.
#[derive(Clone, Debug)]
pub struct TensorState {
    pub dtype: DType,
    /// Shape as laid out in LM (bounded dynamic dimensions at their bound).
    pub dims: Vec<u64>,
    /// Shape of the real data (bound dynamic dimensions at their binding).
    pub runtime: Vec<u64>,
    pub dram: Option<DramTensor>,
    pub lm: Option<Resident>,
}

/// The simulator for one run.
pub struct Engine {
    pub machine: Machine,
    pub topo: Topo,
    pub sw: SimWorld,
    pub mode: Mode,
    pub tensors: BTreeMap<String, TensorState>,
    alloc: Alloc,
    /// Peak LM bytes charged per PE.
    pub lm_peak_bytes: u64,
    pub ops: Vec<OpReport>,
    /// Every op's stages, typed (the report holds them converted), and its slowest stage.
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
    /// Timing mode: a Load's charge and walk by (tensor, layout), which depend on
    /// nothing else the engine holds; kept across [`Engine::clear`], so the planner's
    /// measurements, which load a stream before its reader, compute each once.
    load_memo: std::collections::HashMap<String, LoadMemo>,
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

/// DRAM bytes of the whole machine: every DRAM node's.
pub fn dram_capacity(m: &Machine) -> u64 {
    let nodes = m.dram_level_index().map_or(1, |d| m.nodes_at(d));
    m.dram.bytes.saturating_mul(nodes)
}

/// Checks that a tensor of `runtime` elements of `dtype` fits the machine's DRAM;
/// returns its bytes.
pub fn check_dram(m: &Machine, name: &str, dtype: DType, runtime: &[u64]) -> Result<u64, SimError> {
    let elems = runtime.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
    let Some(bytes) = elems.and_then(|e| e.checked_mul(dtype.bytes())) else {
        return err(format!(
            "tensor `{name}` ({}{runtime:?}) is too large to address: its size in bytes exceeds 2^64",
            dtype.name()
        ));
    };
    let cap = dram_capacity(m);
    if bytes > cap {
        return err(format!(
            "tensor `{name}` needs {bytes} bytes of DRAM but {} has {cap}",
            m.name
        ));
    }
    Ok(bytes)
}

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
        self.tensors.clear();
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
            tensors: BTreeMap::new(),
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
    pub(crate) fn set_legality_hint(&mut self, legal: Option<mnsim_kernels::Legality>) {
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

    /// Declares a tensor. `data` (functional mode) is its initial content in row-major
    /// order over `runtime`, `dtype.bytes()` per element; it is written to DRAM in
    /// `dram_layout`. A tensor without data has no DRAM copy until it is stored.
    pub fn declare(
        &mut self,
        name: &str,
        dtype: DType,
        dims: Vec<u64>,
        runtime: Vec<u64>,
        dram_layout: XlaLayout,
        data: Option<Vec<u8>>,
    ) -> Result<(), SimError> {
        check_dram(&self.machine, name, dtype, &runtime)?;
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
        self.tensors.insert(
            name.to_string(),
            TensorState {
                dtype,
                dims,
                runtime,
                dram,
                lm: None,
            },
        );
        Ok(())
    }

    /// Marks a declared tensor as present in DRAM (timing mode: no data).
    pub fn set_in_dram(&mut self, name: &str, layout: XlaLayout) {
        if let Some(t) = self.tensors.get_mut(name)
            && t.dram.is_none()
        {
            t.dram = Some(DramTensor {
                layout,
                data: Vec::new(),
            });
        }
    }

    /// The tensor's DRAM content in row-major order over its runtime shape.
    pub fn dram_row_major(&self, name: &str) -> Option<Vec<u8>> {
        let t = self.tensors.get(name)?;
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

    fn state(&self, name: &str) -> Result<&TensorState, SimError> {
        self.tensors
            .get(name)
            .ok_or_else(|| SimError::Other(format!("unknown tensor `{name}`")))
    }

    fn resident(&self, name: &str) -> Result<&Resident, SimError> {
        self.state(name)?
            .lm
            .as_ref()
            .ok_or_else(|| SimError::Other(format!("tensor `{name}` is not in LM: Load it first")))
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
        name: &str,
        layout: &TensorLayout,
    ) -> Result<(u64, u64, RegionId), SimError> {
        let fp = layout.footprint_words();
        let words = fp.saturating_mul(layout.time_span());
        let lm_words = self.machine.leaf_memory_bytes() / self.machine.word_bytes.max(1);
        // Streams that took two slices by default give one back while this does not fit.
        while self.alloc.charged().saturating_add(fp) > lm_words && self.give_back(name, fp) {}
        let charged = self.alloc.charged();
        // A stream is charged the slices LM holds of it.
        let (held, need, fallback, requested) = self.hold(name, layout, charged, lm_words)?;
        if charged.saturating_add(fp) > lm_words {
            return Err(SimError::LmFull(format!(
                "tensor `{name}` needs {fp} LM words per PE but only {} of {lm_words} are free (resident: {})",
                lm_words - charged.min(lm_words),
                self.tensors
                    .iter()
                    .filter_map(|(n, t)| t
                        .lm
                        .as_ref()
                        .map(|r| format!("{n} {}", r.layout.footprint_words())))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let (off, region) = self.alloc.alloc(words, need);
        self.charge_log.push(self.alloc.charged());
        if layout.time_span() > 1 {
            self.streams.insert(
                region,
                StreamState {
                    tensor: name.to_string(),
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
            let need = usize::try_from(self.lm_high_water_bytes()).map_err(|_| {
                SimError::Other(format!("tensor `{name}`: LM regions too large to hold"))
            })?;
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
    pub fn free(&mut self, name: &str) -> Result<(), SimError> {
        let t = self
            .tensors
            .get_mut(name)
            .ok_or_else(|| SimError::Other(format!("unknown tensor `{name}`")))?;
        if let Some(r) = t.lm.take() {
            self.release(r.offset);
        }
        Ok(())
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
