//! The engine: tensors in DRAM and LM, the transfers (Load, Store, Relayout, Reduce)
//! in timing and functional mode, and the report of every op.
//!
//! Timing mode never touches element data: per-PE facts come from the layout's closed
//! forms. Functional mode moves real bytes between real buffers, in parallel over the
//! PEs (rayon), and counts the same facts from what it moved; both feed one cost model
//! ([`crate::net::cost`]), so both modes give the same cycles.

use crate::ids::RegionId;
use crate::lowering;
use crate::net::{self, Dir, DramSpec, PeFact, Route, StageSpec, Topo};
use crate::timeline::{Schedule, Task, Timeline};
use crate::world::{Lm, Pe, PortStats, Ready, SimWorld, WorldBusy};
use hdrhistogram::Histogram;
use mnsim_arch::layout::Class;
use mnsim_arch::machine::AddrLevel;
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};
use mnsim_kernels::elem::{self, Combine};
use mnsim_reports::{OpReport, Percentiles};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};

pub use crate::scenario::Mode;

/// A simulation error: a message for the user (the op and tensor named in it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SimError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, SimError> {
    Err(SimError(msg.into()))
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

/// LM regions in use: first fit over word ranges (the same on every PE: SIMD).
#[derive(Clone, Debug, Default)]
struct Alloc {
    /// offset → (words, resident footprint charged against LM, region id).
    used: BTreeMap<u64, (u64, u64, RegionId)>,
    high_water: u64,
    next: u32,
}

impl Alloc {
    fn charged(&self) -> u64 {
        self.used.values().map(|&(_, c, _)| c).sum()
    }
    fn alloc(&mut self, words: u64, charge: u64) -> (u64, RegionId) {
        let mut at = 0u64;
        for (&o, &(w, _, _)) in &self.used {
            if o >= at + words {
                break;
            }
            at = at.max(o + w);
        }
        let region = RegionId(self.next);
        self.next = self.next.saturating_add(1);
        self.used.insert(at, (words, charge, region));
        self.high_water = self.high_water.max(at + words);
        (at, region)
    }
    /// A region id for data placed without an allocation (the planner's fixed inputs).
    fn fresh(&mut self) -> RegionId {
        let region = RegionId(self.next);
        self.next = self.next.saturating_add(1);
        region
    }
    /// Frees the region at `offset`: its id and the words it was charged.
    fn free(&mut self, offset: u64) -> Option<(RegionId, u64)> {
        self.used.remove(&offset).map(|(_, c, r)| (r, c))
    }
}

/// Regions freed while an op runs, for its task: before its own allocation (their space
/// is not charged to it) or after (charged to it, released when it ends).
#[derive(Clone, Debug, Default)]
struct Frees {
    before: Vec<(RegionId, u64)>,
    after: Vec<(RegionId, u64)>,
    /// The op has allocated its output: later frees come after it.
    allocated: bool,
    /// LM words charged while the op runs.
    lm_words: u64,
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
    pub records: Vec<(Vec<net::Stage>, Option<usize>)>,
    /// Every op lowered, in program order (the timeline's input).
    pub tasks: Vec<Task>,
    /// Where every op sits in time.
    pub timeline: Timeline,
    frees: Frees,
    /// Every PE's position per addressable level, in PE order (fixed by the machine).
    positions: Vec<Vec<u64>>,
}

/// Raw pointer that may cross threads: PEs write disjoint DRAM elements (a layout's
/// placement map is injective, and only one replica writes).
#[derive(Clone, Copy)]
struct SyncPtr(*mut u8);
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}

/// Offsets of logical elements in a DRAM buffer.
struct DramAddr {
    dims: Vec<u64>,
    /// Untiled: element stride per logical axis.
    strides: Option<Vec<u64>>,
    layout: XlaLayout,
}

impl DramAddr {
    /// Walks a shard, calling `cell(real, dram_element, addr, w, t)` per cell: untiled
    /// DRAM keeps the offset incrementally, tiled DRAM computes it per element.
    fn walk(
        &self,
        shard: &mnsim_arch::layout::Shard<'_>,
        runtime: &[u64],
        mut cell: impl FnMut(bool, u64, u64, u64, u64),
    ) {
        match &self.strides {
            Some(st) => shard.for_each_linear(st, runtime, &mut cell),
            None => shard.for_each(|idx, a, w, t| {
                let ok = idx.iter().zip(runtime).all(|(i, n)| i < n);
                cell(ok, if ok { self.offset(idx) } else { 0 }, a, w, t)
            }),
        }
    }

    /// Walks a shard by runs (see [`mnsim_arch::layout::Run`]; the run's `lin` is the DRAM
    /// element of its first cell) when DRAM is untiled; `false` when it is tiled and the
    /// caller must walk per cell.
    fn runs(
        &self,
        shard: &mnsim_arch::layout::Shard<'_>,
        runtime: &[u64],
        f: impl FnMut(&mnsim_arch::layout::Run),
    ) -> bool {
        match &self.strides {
            Some(st) => {
                shard.for_each_run(st, runtime, f);
                true
            }
            None => false,
        }
    }

    fn new(layout: &XlaLayout, dims: &[u64]) -> DramAddr {
        let strides = layout.tiles.is_empty().then(|| {
            let mut s = vec![0u64; dims.len()];
            let mut acc = 1u64;
            for &d in &layout.minor_to_major {
                s[d] = acc;
                acc = acc.saturating_mul(dims[d]);
            }
            s
        });
        DramAddr {
            dims: dims.to_vec(),
            strides,
            layout: layout.clone(),
        }
    }
    #[inline]
    fn offset(&self, idx: &[u64]) -> u64 {
        match &self.strides {
            Some(s) => idx.iter().zip(s).map(|(i, s)| i * s).sum(),
            None => self.layout.linear_index(&self.dims, idx).unwrap_or(0),
        }
    }
}

/// The LM byte of a run's first cell (region at word `base`, `fp` words per time step)
/// and the bytes between its cells.
#[inline]
fn run_bytes(
    r: &mnsim_arch::layout::Run,
    base: usize,
    fp: usize,
    wb: usize,
    eb: usize,
) -> (usize, usize) {
    let at = |t: u64, a: u64, w: u64| (t as usize * fp + a as usize) * wb + w as usize * eb;
    (
        base * wb + at(r.t, r.addr, r.w),
        at(r.step.t, r.step.addr, r.step.w),
    )
}

/// Cells of a run that start a word (slot 0): the words the run touches.
#[inline]
fn run_words(r: &mnsim_arch::layout::Run) -> u64 {
    match (r.w, r.step.w) {
        (0, 0) => r.len,
        (0, _) => 1,
        _ => 0,
    }
}

/// Copies one element of `eb` bytes; fixed sizes compile to single moves.
#[inline(always)]
fn copy_elem(dst: &mut [u8], src: &[u8], eb: usize) {
    match eb {
        1 => dst[0] = src[0],
        2 => dst[..2].copy_from_slice(&src[..2]),
        4 => dst[..4].copy_from_slice(&src[..4]),
        8 => dst[..8].copy_from_slice(&src[..8]),
        _ => dst[..eb].copy_from_slice(&src[..eb]),
    }
}

/// Percentiles of per-PE cycles through an hdrhistogram at 3 significant digits (within
/// 0.1%); min and max are exact, and no percentile exceeds the max.
/// Runs `f` on the shard of every PE that takes part in a move (in parallel over the
/// PEs) and returns their facts in PE order. `f` gets the PE, its LM, the key of its
/// data and its shard, and returns the words it moved and the real elements among them.
fn walk_shards(
    world: &mut bevy_ecs::world::World,
    layout: &TensorLayout,
    partial: &[usize],
    one_replica: bool,
    wb: u64,
    f: impl Fn(&Pe, &mut Lm, u64, mnsim_arch::layout::Shard<'_>) -> (u64, u64) + Sync,
) -> Vec<PeFact> {
    let used = Engine::used_table(layout);
    let mut q = world.query::<(&Pe, &mut Lm)>();
    let mut pes: Vec<(&Pe, &mut Lm)> = q
        .iter_mut(world)
        .map(|(p, l)| (p, l.into_inner()))
        .collect();
    let mut facts: Vec<(u64, PeFact)> = pes
        .par_iter_mut()
        .map(|(pe, lm)| {
            let key = Engine::key(layout, &used, partial, &pe.pos, one_replica, None);
            let Some(shard) = layout.shard(&pe.pos).filter(|_| key != net::NONE) else {
                return (pe.global, PeFact::IDLE);
            };
            let (words, valid) = f(pe, lm, key, shard);
            (
                pe.global,
                PeFact {
                    key,
                    reduced_key: key,
                    bytes: words * wb,
                    valid,
                },
            )
        })
        .collect();
    facts.sort_unstable_by_key(|f| f.0);
    facts.into_iter().map(|f| f.1).collect()
}

fn percentiles(values: impl Iterator<Item = u64>) -> Option<Percentiles> {
    let values: Vec<u64> = values.collect();
    let (lo, hi) = (values.iter().copied().min()?, values.iter().copied().max()?);
    // Bounds from the data: a histogram over the whole u64 range would allocate tens of MB.
    let mut h = Histogram::<u64>::new_with_bounds(1, hi.max(2), 3).ok()?;
    for &v in &values {
        h.saturating_record(v.max(1));
    }
    let q = |x: f64| h.value_at_quantile(x).min(hi);
    Some(Percentiles {
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        max: hi,
        min: lo,
        count: values.len() as u64,
    })
}

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
        return err(format!("tensor `{name}` is too large to address"));
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

    /// An engine whose ops are placed by `schedule`.
    pub fn with_schedule(machine: Machine, mode: Mode, schedule: Schedule) -> Engine {
        let topo = Topo::new(&machine);
        let sw = SimWorld::build(&machine);
        let positions = Self::positions_of(&sw);
        let lm_words = machine.leaf_memory_bytes() / machine.word_bytes.max(1);
        Engine {
            records: Vec::new(),
            tasks: Vec::new(),
            timeline: Timeline::new(schedule, lm_words),
            frees: Frees::default(),
            machine,
            topo,
            sw,
            mode,
            tensors: BTreeMap::new(),
            alloc: Alloc::default(),
            lm_peak_bytes: 0,
            ops: Vec::new(),
            positions,
        }
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
        let n: u64 = t.runtime.iter().product();
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
            .ok_or_else(|| SimError(format!("unknown tensor `{name}`")))
    }

    fn resident(&self, name: &str) -> Result<&Resident, SimError> {
        self.state(name)?
            .lm
            .as_ref()
            .ok_or_else(|| SimError(format!("tensor `{name}` is not in LM: Load it first")))
    }

    /// Every PE's position per addressable level, in PE order (read from the world once).
    fn positions_of(sw: &SimWorld) -> Vec<Vec<u64>> {
        sw.pes()
            .iter()
            .map(|&e| {
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
        let charged = self.alloc.charged();
        if charged.saturating_add(fp) > lm_words {
            return err(format!(
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
            ));
        }
        let (off, region) = self.alloc.alloc(words, fp);
        self.frees.allocated = true;
        self.frees.lm_words = self.frees.lm_words.max(self.alloc.charged());
        let wb = self.machine.word_bytes;
        self.lm_peak_bytes = self.lm_peak_bytes.max(self.alloc.charged() * wb);
        if self.mode == Mode::Functional {
            let need = (self.alloc.high_water * wb) as usize;
            let mut q = self.sw.world.query::<&mut Lm>();
            let mut lms: Vec<&mut Lm> = q
                .iter_mut(&mut self.sw.world)
                .map(|m| m.into_inner())
                .collect();
            lms.par_iter_mut().for_each(|lm| {
                if lm.data.len() < need {
                    lm.data.resize(need, 0);
                }
            });
        }
        Ok((off, words, region))
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

    /// A fresh region id that holds no LM space: for data put in place from outside a
    /// run (the planner measures ops on inputs placed this way).
    pub fn fresh_region(&mut self) -> RegionId {
        self.alloc.fresh()
    }

    /// Frees a tensor's LM region.
    pub fn free(&mut self, name: &str) -> Result<(), SimError> {
        let t = self
            .tensors
            .get_mut(name)
            .ok_or_else(|| SimError(format!("unknown tensor `{name}`")))?;
        if let Some(r) = t.lm.take() {
            self.release(r.offset);
        }
        Ok(())
    }

    /// The key of the data a PE holds under `layout`: positions at split and partial
    /// levels (mixed radix); `NONE` if the PE holds nothing, or (with `one_replica`)
    /// if it is not the first replica. `skip` drops one level from the key (reduced key).
    fn key(
        layout: &TensorLayout,
        used: &[Vec<bool>],
        partial: &[usize],
        pos: &[u64],
        one_replica: bool,
        skip: Option<usize>,
    ) -> u64 {
        let mut key = 0u64;
        for (i, lv) in layout.levels().iter().enumerate() {
            let p = pos[i];
            let include = if lv.replicated {
                if one_replica && p != 0 && !partial.contains(&i) {
                    return net::NONE;
                }
                partial.contains(&i)
            } else {
                if !used[i][p as usize] {
                    return net::NONE;
                }
                true
            };
            key = key * lv.fanout + if include && skip != Some(i) { p } else { 0 };
        }
        key
    }

    fn used_table(layout: &TensorLayout) -> Vec<Vec<bool>> {
        (0..layout.levels().len())
            .map(|i| {
                let mut v = vec![false; layout.levels()[i].fanout as usize];
                for p in layout.used_positions(i) {
                    v[p as usize] = true;
                }
                v
            })
            .collect()
    }

    /// Per-PE facts in closed form (timing mode, and the source side of moves).
    fn closed_facts(
        &self,
        layout: &TensorLayout,
        partial: &[usize],
        runtime: &[u64],
        one_replica: bool,
        skip: Option<usize>,
    ) -> Vec<PeFact> {
        let used = Self::used_table(layout);
        let bytes = layout.words_per_pe().saturating_mul(layout.word_bytes());
        let full = runtime == layout.padded_shape();
        let mut valid_cache: HashMap<u64, u64> = HashMap::new();
        self.positions
            .iter()
            .map(|pos| {
                let key = Self::key(layout, &used, partial, pos, one_replica, None);
                if key == net::NONE {
                    return PeFact::IDLE;
                }
                let reduced_key = if skip.is_some() {
                    Self::key(layout, &used, partial, pos, one_replica, skip)
                } else {
                    key
                };
                let valid = if full {
                    layout.elems_per_pe()
                } else {
                    *valid_cache
                        .entry(key)
                        .or_insert_with(|| layout.shard(pos).map_or(0, |s| s.valid_elems(runtime)))
                };
                PeFact {
                    key,
                    reduced_key,
                    bytes,
                    valid,
                }
            })
            .collect()
    }

    /// Burst efficiency of reading (or writing) `layout`'s data from a DRAM in
    /// `xla`: contiguous runs of one DRAM node's portion along the DRAM's minor-most
    /// dimensions, in whole bursts.
    fn burst_efficiency(
        &self,
        layout: &TensorLayout,
        xla: &XlaLayout,
        runtime: &[u64],
        dtype: DType,
    ) -> f64 {
        let burst = self.machine.dram.burst_bytes.max(1);
        let addr = self.machine.addressable_levels();
        let d = self.topo.chain[0];
        // A level sub-axis distinguishes DRAM nodes when it can reach another node's range.
        let distinguishing = |class: Class, size: u64, stride: u64| -> bool {
            let Class::Level(i) = class else { return false };
            let a = &addr[i];
            let r: u64 = a
                .folded
                .iter()
                .filter(|&&k| k > d)
                .map(|&k| self.machine.levels[k].count)
                .product();
            r < a.fanout && (size - 1) * stride >= r
        };
        let mut run = 1u64;
        let mut stopped = false;
        for &g in &xla.minor_to_major {
            let subs = &layout.groups()[g];
            let mut inner = 1u64;
            let mut cut = false;
            for s in subs.iter().rev() {
                if distinguishing(s.class, s.size, s.stride) {
                    cut = true;
                    break;
                }
                inner = inner.saturating_mul(s.size);
            }
            let extent = runtime.get(g).copied().unwrap_or(1);
            if cut {
                run = run.saturating_mul(inner.min(extent));
                stopped = true;
                break;
            }
            run = run.saturating_mul(extent);
        }
        if stopped {
            if let Some(t) = xla.tiles.first() {
                let tile: u64 = t
                    .dims
                    .iter()
                    .map(|x| match x {
                        mnsim_arch::shape::TileDim::Size(n) => *n,
                        mnsim_arch::shape::TileDim::Combine => 1,
                    })
                    .product();
                run = run.min(tile.max(1));
            }
        } else {
            return 1.0;
        }
        let run_bytes = run.saturating_mul(dtype.bytes()).max(1);
        run_bytes as f64 / (run_bytes.div_ceil(burst) * burst) as f64
    }

    /// Records an op: lowers it to a task, places it on the timeline (resource state on
    /// the world's entities), updates port statistics and ready cycles.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        op: &str,
        tensor: &str,
        layout: Option<&TensorLayout>,
        runtime: &[u64],
        c: net::Cost,
        reads: &[RegionId],
        writes: &[RegionId],
    ) -> OpReport {
        let frees = std::mem::take(&mut self.frees);
        let task = lowering::task(
            &c,
            reads,
            writes,
            frees.lm_words.max(self.alloc.charged()),
            frees.before,
            frees.after,
        );
        let placed = self
            .timeline
            .push_on(&task, &mut WorldBusy::new(&mut self.sw));
        self.tasks.push(task);
        let (start, end) = (placed.start, placed.end);
        let clock = self.sw.clock().max(end);
        self.sw.set_clock(clock);
        // Port statistics on the chain nodes.
        for port in &c.ports {
            let k = self.topo.chain[port.link];
            for (n, (&t, &b)) in port.cycles.iter().zip(&port.bytes).enumerate() {
                if let Some(&e) = self.sw.nodes[k].get(n)
                    && let Some(mut ps) = self.sw.world.get_mut::<PortStats>(e)
                {
                    ps.busy_cycles += t;
                    match port.dir {
                        Dir::Down => ps.bytes_down += b,
                        Dir::Up => ps.bytes_up += b,
                    }
                }
            }
        }
        for &(p, r) in &c.ready {
            let e = self.sw.pes()[p as usize];
            if let Some(mut rd) = self.sw.world.get_mut::<Ready>(e) {
                rd.0 = start + r;
            }
        }
        let ready = percentiles(c.ready.iter().map(|&(_, r)| start + r));
        let (util, pad, padded) = match layout {
            Some(l) => {
                let total: u64 = l.levels().iter().map(|x| x.fanout).product();
                let real: u64 = runtime.iter().product();
                let u = l.pes_used() as f64 / total.max(1) as f64 * real as f64
                    / l.padded_elems().max(1) as f64;
                (
                    u,
                    l.padded_elems() - real.min(l.padded_elems()),
                    l.padded_elems(),
                )
            }
            None => (0.0, 0, 0),
        };
        let r = OpReport {
            index: self.ops.len(),
            op: op.to_string(),
            tensor: tensor.to_string(),
            layout: layout.map(|l| l.canonical()),
            start,
            end,
            cycles: c.cycles,
            bottleneck: c
                .bottleneck
                .map(|b| c.stages[b].bottleneck_name(&self.machine))
                .unwrap_or_default(),
            stages: c.stages.iter().map(|s| s.report(&self.machine)).collect(),
            exposed_cycles: c.cycles,
            ready_cycles: ready,
            flops: None,
            utilisation: util,
            padding_elems: pad,
            padded_elems: padded,
        };
        self.ops.push(r.clone());
        self.records.push((c.stages, c.bottleneck));
        r
    }

    fn down_route(&self, steps: u64, dram: Option<DramSpec>) -> Route {
        let n = self.topo.chain.len();
        Route {
            stages: (0..n - 1)
                .map(|link| StageSpec {
                    link,
                    dir: Dir::Down,
                    reduce: false,
                    second: false,
                })
                .collect(),
            dram,
            local_copy: false,
            steps,
        }
    }

    /// Load: DRAM (the tensor's XLA layout) → LM in `layout`.
    pub fn load(&mut self, name: &str, layout: TensorLayout) -> Result<OpReport, SimError> {
        let t = self.state(name)?;
        let Some(dram) = t.dram.as_ref() else {
            return err(format!(
                "tensor `{name}` is not in DRAM: give it an `init` or Store it first"
            ));
        };
        if layout.logical_shape() != t.dims.as_slice() {
            return err(format!(
                "layout {} is for shape {:?} but tensor `{name}` has shape {:?}",
                layout.canonical(),
                layout.logical_shape(),
                t.dims
            ));
        }
        let (dtype, runtime, xla) = (t.dtype, t.runtime.clone(), dram.layout.clone());
        if self.mode == Mode::Functional && dram.data.is_empty() {
            return err(format!("tensor `{name}` has no data in DRAM"));
        }
        if t.lm.is_some() {
            self.free(name)?;
        }
        let (offset, words, region) = self.allocate(name, &layout)?;
        let facts = match self.mode {
            Mode::Timing => self.closed_facts(&layout, &[], &runtime, false, None),
            Mode::Functional => self.move_load(name, &layout, offset),
        };
        let eff = self.burst_efficiency(&layout, &xla, &runtime, dtype);
        let route = self.down_route(
            layout.time_span(),
            Some(DramSpec {
                dir: Dir::Down,
                elem_bytes: dtype.bytes(),
                efficiency: eff,
                second: false,
            }),
        );
        let c = net::cost(&self.machine, &self.topo, &route, [&facts, &facts]);
        let op = self.finish("Load", name, Some(&layout), &runtime, c, &[], &[region]);
        let t = self.tensors.get_mut(name).expect("checked");
        t.lm = Some(Resident {
            layout,
            offset,
            words,
            partial: Vec::new(),
            region,
        });
        Ok(op)
    }

    fn move_load(&mut self, name: &str, layout: &TensorLayout, offset: u64) -> Vec<PeFact> {
        let t = &self.tensors[name];
        let dram = t.dram.as_ref().expect("checked");
        let addr = DramAddr::new(&dram.layout, &t.runtime);
        let (eb, wb) = (t.dtype.bytes() as usize, self.machine.word_bytes as usize);
        let fp = layout.footprint_words() as usize;
        let (runtime, src, base) = (&t.runtime, &dram.data, offset as usize);
        walk_shards(
            &mut self.sw.world,
            layout,
            &[],
            false,
            wb as u64,
            |_, lm, _, shard| {
                let (mut words, mut valid) = (0u64, 0u64);
                // By runs: a run contiguous in DRAM and in LM is one copy.
                let by_runs = addr.runs(&shard, runtime, |r| {
                    let (lm0, lm_step) = run_bytes(r, base, fp, wb, eb);
                    words += run_words(r);
                    let n = r.valid as usize;
                    let src0 = r.lin as usize * eb;
                    if n > 0 && lm_step == eb && r.step.lin == 1 {
                        lm.data[lm0..lm0 + n * eb].copy_from_slice(&src[src0..src0 + n * eb]);
                    } else if n > 0 {
                        let src_step = r.step.lin as usize * eb;
                        for k in 0..n {
                            copy_elem(
                                &mut lm.data[lm0 + k * lm_step..],
                                &src[src0 + k * src_step..],
                                eb,
                            );
                        }
                    }
                    for k in n..r.len as usize {
                        let p = lm0 + k * lm_step;
                        lm.data[p..p + eb].fill(0);
                    }
                    valid += r.valid;
                });
                if !by_runs {
                    addr.walk(&shard, runtime, |ok, elem, a, w, t| {
                        let dst = (base + t as usize * fp + a as usize) * wb + w as usize * eb;
                        words += (w == 0) as u64;
                        if ok {
                            copy_elem(&mut lm.data[dst..], &src[elem as usize * eb..], eb);
                            valid += 1;
                        } else {
                            lm.data[dst..dst + eb].fill(0);
                        }
                    });
                }
                (words, valid)
            },
        )
    }

    /// Store: LM → DRAM (the tensor's XLA layout), reading one replica.
    pub fn store(&mut self, name: &str, xla: XlaLayout) -> Result<OpReport, SimError> {
        let r = self.resident(name)?.clone();
        if let Some(&p) = r.partial.first() {
            return err(format!(
                "tensor `{name}` holds partial results over {}: Reduce it over that level before storing",
                r.layout.levels()[p].name
            ));
        }
        let t = self.state(name)?;
        let (dtype, runtime) = (t.dtype, t.runtime.clone());
        let facts = match self.mode {
            Mode::Timing => self.closed_facts(&r.layout, &[], &runtime, true, None),
            Mode::Functional => self.move_store(name, &r, &xla),
        };
        let n = self.topo.chain.len();
        let eff = self.burst_efficiency(&r.layout, &xla, &runtime, dtype);
        let route = Route {
            stages: (0..n - 1)
                .rev()
                .map(|link| StageSpec {
                    link,
                    dir: Dir::Up,
                    reduce: false,
                    second: false,
                })
                .collect(),
            dram: Some(DramSpec {
                dir: Dir::Up,
                elem_bytes: dtype.bytes(),
                efficiency: eff,
                second: false,
            }),
            local_copy: false,
            steps: r.layout.time_span(),
        };
        let c = net::cost(&self.machine, &self.topo, &route, [&facts, &facts]);
        if self.mode == Mode::Timing {
            self.set_in_dram(name, xla);
        }
        Ok(self.finish(
            "Store",
            name,
            Some(&r.layout),
            &runtime,
            c,
            &[r.region],
            &[],
        ))
    }

    fn move_store(&mut self, name: &str, r: &Resident, xla: &XlaLayout) -> Vec<PeFact> {
        let t = self.tensors.get_mut(name).expect("checked");
        let eb = t.dtype.bytes() as usize;
        let runtime = t.runtime.clone();
        let buf = xla.buffer_elements(&runtime).unwrap_or(0) as usize * eb;
        let dram = t.dram.get_or_insert_with(|| DramTensor {
            layout: xla.clone(),
            data: Vec::new(),
        });
        dram.layout = xla.clone();
        dram.data.clear();
        dram.data.resize(buf, 0);
        let ptr = SyncPtr(dram.data.as_mut_ptr());
        let addr = DramAddr::new(xla, &runtime);
        let wb = self.machine.word_bytes as usize;
        let fp = r.layout.footprint_words() as usize;
        walk_shards(
            &mut self.sw.world,
            &r.layout,
            &[],
            true,
            wb as u64,
            |_, lm, _, shard| {
                let p = ptr;
                let (mut words, mut valid) = (0u64, 0u64);
                let base = r.offset as usize;
                let by_runs = addr.runs(&shard, &runtime, |run| {
                    let (lm0, lm_step) = run_bytes(run, base, fp, wb, eb);
                    words += run_words(run);
                    let n = run.valid as usize;
                    if n == 0 {
                        return;
                    }
                    let d0 = run.lin as usize * eb;
                    let d_step = run.step.lin as usize * eb;
                    let (d_last, s_last) = (d0 + (n - 1) * d_step, lm0 + (n - 1) * lm_step);
                    assert!(d_last + eb <= buf && s_last + eb <= lm.data.len());
                    // SAFETY: every cell of the run lies within the buffer (its last one is
                    // checked above, and the steps are non-negative), and no other PE writes
                    // it: the placement map is injective and only the first replica (the
                    // key) writes.
                    unsafe {
                        if lm_step == eb && d_step == eb {
                            std::ptr::copy_nonoverlapping(
                                lm.data.as_ptr().add(lm0),
                                p.0.add(d0),
                                n * eb,
                            );
                        } else {
                            for k in 0..n {
                                std::ptr::copy_nonoverlapping(
                                    lm.data.as_ptr().add(lm0 + k * lm_step),
                                    p.0.add(d0 + k * d_step),
                                    eb,
                                );
                            }
                        }
                    }
                    valid += run.valid;
                });
                if by_runs {
                    return (words, valid);
                }
                addr.walk(&shard, &runtime, |ok, elem, a, w, tt| {
                    words += (w == 0) as u64;
                    if ok {
                        let s = (r.offset as usize + tt as usize * fp + a as usize) * wb
                            + w as usize * eb;
                        let d = elem as usize * eb;
                        assert!(d + eb <= buf && s + eb <= lm.data.len());
                        // SAFETY: `d` is within the buffer (checked above), and no other PE
                        // writes it: the placement map is injective and only the first
                        // replica (the key) writes.
                        unsafe {
                            std::ptr::copy_nonoverlapping(lm.data.as_ptr().add(s), p.0.add(d), eb)
                        };
                        valid += 1;
                    }
                });
                (words, valid)
            },
        )
    }

    /// Whether data must cross addressable level `i` to go from `src` to `dst`: the
    /// source is split (or partial) there and the destination does not hold each
    /// element at the same position. Compared per axis: a level position is a sum of
    /// per-axis contributions, so equal per-axis functions mean equal maps.
    fn crosses(src: &TensorLayout, dst: &TensorLayout, i: usize, dims: &[u64]) -> bool {
        if src.levels()[i].replicated {
            return false;
        }
        if dst.levels()[i].replicated {
            return true;
        }
        let contrib = |l: &TensorLayout, g: usize, x: u64| -> u64 {
            let subs = &l.groups()[g];
            let mut radix = 1u64;
            let mut v = 0u64;
            for s in subs.iter().rev() {
                if s.class == Class::Level(i) {
                    v += ((x / radix) % s.size) * s.stride;
                }
                radix = radix.saturating_mul(s.size);
            }
            v
        };
        (0..dims.len()).any(|g| (0..dims[g]).any(|x| contrib(src, g, x) != contrib(dst, g, x)))
    }

    /// Global PE index of a position tuple.
    fn pe_index(addr: &[AddrLevel], pos: &[u64]) -> usize {
        pos.iter()
            .zip(addr)
            .fold(0u64, |a, (p, l)| a * l.fanout + p) as usize
    }

    /// Copies every PE's bytes of a region out of the LMs (a snapshot for moves that
    /// read one PE and write another).
    fn snapshot(&mut self, offset: u64, words: u64) -> Vec<Vec<u8>> {
        let wb = self.machine.word_bytes as usize;
        let (a, b) = (offset as usize * wb, (offset + words) as usize * wb);
        let mut q = self.sw.world.query::<(&Pe, &Lm)>();
        let mut v: Vec<(u64, Vec<u8>)> = q
            .iter(&self.sw.world)
            .map(|(p, l)| (p.global, l.data[a..b].to_vec()))
            .collect();
        v.sort_unstable_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    }

    fn up_down_route(&self, meet: usize, reduce_at_meet: bool, steps: u64) -> Route {
        let n = self.topo.chain.len();
        let mut stages: Vec<StageSpec> = (meet..n - 1)
            .rev()
            .map(|link| StageSpec {
                link,
                dir: Dir::Up,
                reduce: reduce_at_meet && link == meet,
                second: false,
            })
            .collect();
        stages.extend((meet..n - 1).map(|link| StageSpec {
            link,
            dir: Dir::Down,
            reduce: false,
            second: true,
        }));
        Route {
            stages,
            dram: None,
            local_copy: false,
            steps,
        }
    }

    /// Relayout (also Broadcast from LM): layout A → layout B through the lowest common
    /// ancestor. `out` names the result (default: the tensor itself, moved).
    pub fn relayout(
        &mut self,
        op: &str,
        name: &str,
        layout: TensorLayout,
        out: Option<&str>,
    ) -> Result<OpReport, SimError> {
        let src = self.resident(name)?.clone();
        if let Some(&p) = src.partial.first() {
            return err(format!(
                "tensor `{name}` holds partial results over {}: Reduce it before moving it",
                src.layout.levels()[p].name
            ));
        }
        let dst_name = out.unwrap_or(name).to_string();
        let t = self.state(name)?;
        let (dtype, dims, runtime) = (t.dtype, t.dims.clone(), t.runtime.clone());
        let d = self.state(&dst_name)?;
        if d.dtype != dtype || d.dims != dims {
            return err(format!(
                "`{dst_name}` ({} {:?}) cannot hold `{name}` ({dtype} {dims:?})",
                d.dtype, d.dims
            ));
        }
        if layout.logical_shape() != dims.as_slice() {
            return err(format!(
                "layout {} is for shape {:?}, not {dims:?}",
                layout.canonical(),
                layout.logical_shape()
            ));
        }
        if dst_name != name && d.lm.is_some() {
            self.free(&dst_name)?;
        }
        let (offset, words, region) = self.allocate(&dst_name, &layout)?;
        let addr = self.machine.addressable_levels();
        let crossing = (0..addr.len())
            .filter(|&i| Self::crosses(&src.layout, &layout, i, &runtime))
            .min();
        let src_facts = self.closed_facts(&src.layout, &[], &runtime, true, None);
        let dst_facts = match self.mode {
            Mode::Timing => self.closed_facts(&layout, &[], &runtime, false, None),
            Mode::Functional => self.move_relayout(&src, &layout, offset, &runtime, dtype),
        };
        let steps = src.layout.time_span().max(layout.time_span());
        let c = match crossing {
            Some(i) => {
                let meet = self.topo.meet_above(addr[i].level_index);
                let route = self.up_down_route(meet, false, steps);
                net::cost(&self.machine, &self.topo, &route, [&src_facts, &dst_facts])
            }
            None => {
                // No level to cross: a copy inside each LM (the larger of the two shards).
                let facts: Vec<PeFact> = src_facts
                    .iter()
                    .zip(&dst_facts)
                    .map(|(a, b)| {
                        if b.key == net::NONE {
                            PeFact::IDLE
                        } else {
                            PeFact {
                                bytes: a.bytes.max(b.bytes),
                                ..*b
                            }
                        }
                    })
                    .collect();
                let route = Route {
                    stages: Vec::new(),
                    dram: None,
                    local_copy: true,
                    steps,
                };
                net::cost(&self.machine, &self.topo, &route, [&facts, &facts])
            }
        };
        if dst_name == name {
            self.release(src.offset);
        }
        let rep = self.finish(
            op,
            &dst_name,
            Some(&layout),
            &runtime,
            c,
            &[src.region],
            &[region],
        );
        self.tensors.get_mut(&dst_name).expect("checked").lm = Some(Resident {
            layout,
            offset,
            words,
            partial: Vec::new(),
            region,
        });
        Ok(rep)
    }

    fn move_relayout(
        &mut self,
        src: &Resident,
        layout: &TensorLayout,
        offset: u64,
        runtime: &[u64],
        dtype: DType,
    ) -> Vec<PeFact> {
        let snap = self.snapshot(src.offset, src.words);
        let addr = self.machine.addressable_levels();
        let (eb, wb) = (dtype.bytes() as usize, self.machine.word_bytes as usize);
        let (sfp, dfp) = (
            src.layout.footprint_words() as usize,
            layout.footprint_words() as usize,
        );
        walk_shards(
            &mut self.sw.world,
            layout,
            &[],
            false,
            wb as u64,
            |pe, lm, _, shard| {
                let (mut words, mut valid) = (0u64, 0u64);
                let mut spos = pe.pos.clone();
                shard.for_each(|idx, a, w, t| {
                    let dst =
                        (offset as usize + t as usize * dfp + a as usize) * wb + w as usize * eb;
                    words += (w == 0) as u64;
                    if idx.iter().zip(runtime).all(|(i, n)| i < n) {
                        let p = src.layout.place(idx).expect("in range");
                        // A replicated source level: read the copy at our own position.
                        for (k, x) in p.pos.iter().enumerate() {
                            spos[k] = x.unwrap_or(pe.pos[k]);
                        }
                        let from = &snap[Self::pe_index(&addr, &spos)];
                        let s = (p.t as usize * sfp + p.addr as usize) * wb + p.w as usize * eb;
                        copy_elem(&mut lm.data[dst..], &from[s..], eb);
                        valid += 1;
                    } else {
                        lm.data[dst..dst + eb].fill(0);
                    }
                });
                (words, valid)
            },
        )
    }

    /// Reduce: combine the copies of a tensor over a level on which it is partial (or
    /// replicated: the copies are combined as they are). The result is replicated over
    /// that level, in the same layout, under `out` (default: the tensor itself).
    pub fn reduce(
        &mut self,
        name: &str,
        level: &str,
        op: Combine,
        out: Option<&str>,
    ) -> Result<OpReport, SimError> {
        let src = self.resident(name)?.clone();
        let Some(i) = src.layout.levels().iter().position(|l| l.name == level) else {
            return err(format!(
                "`{level}` is not an addressable level of {} ({})",
                self.machine.name,
                src.layout
                    .levels()
                    .iter()
                    .map(|l| l.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        if !src.layout.levels()[i].replicated {
            return err(format!(
                "tensor `{name}` is split over {level}, not partial: there is nothing to reduce over {level}"
            ));
        }
        let t = self.state(name)?;
        let (dtype, runtime) = (t.dtype, t.runtime.clone());
        let dst_name = out.unwrap_or(name).to_string();
        let layout = src.layout.clone();
        let (offset, words, region) = if dst_name == name {
            (src.offset, src.words, src.region)
        } else {
            if self.state(&dst_name)?.lm.is_some() {
                self.free(&dst_name)?;
            }
            self.allocate(&dst_name, &layout)?
        };
        let mut partial = src.partial.clone();
        if !partial.contains(&i) {
            partial.push(i);
        }
        let up = self.closed_facts(&layout, &partial, &runtime, true, Some(i));
        let rest: Vec<usize> = src.partial.iter().copied().filter(|&p| p != i).collect();
        let down = match self.mode {
            Mode::Timing => self.closed_facts(&layout, &rest, &runtime, false, None),
            Mode::Functional => self.move_reduce(&src, i, op, offset, dtype, &runtime),
        };
        let addr = self.machine.addressable_levels();
        let meet = self.topo.meet_above(addr[i].level_index);
        let route = self.up_down_route(meet, true, layout.time_span());
        let c = net::cost(&self.machine, &self.topo, &route, [&up, &down]);
        let rep = self.finish(
            "Reduce",
            &dst_name,
            Some(&layout),
            &runtime,
            c,
            &[src.region],
            &[region],
        );
        self.tensors.get_mut(&dst_name).expect("checked").lm = Some(Resident {
            layout,
            offset,
            words,
            partial: rest,
            region,
        });
        Ok(rep)
    }

    #[allow(clippy::too_many_arguments)]
    fn move_reduce(
        &mut self,
        src: &Resident,
        level: usize,
        op: Combine,
        offset: u64,
        dtype: DType,
        runtime: &[u64],
    ) -> Vec<PeFact> {
        let snap = self.snapshot(src.offset, src.words);
        let addr = self.machine.addressable_levels();
        let layout = &src.layout;
        let (eb, wb) = (dtype.bytes() as usize, self.machine.word_bytes as usize);
        let fp = layout.footprint_words() as usize;
        let fan = layout.levels()[level].fanout;
        let rest: Vec<usize> = src
            .partial
            .iter()
            .copied()
            .filter(|&p| p != level)
            .collect();
        walk_shards(
            &mut self.sw.world,
            layout,
            &rest,
            false,
            wb as u64,
            |pe, lm, _, shard| {
                let (mut words, mut valid) = (0u64, 0u64);
                let mut pos = pe.pos.clone();
                let mut acc = vec![0u8; eb];
                shard.for_each(|idx, a, w, t| {
                    let cell = (t as usize * fp + a as usize) * wb + w as usize * eb;
                    words += (w == 0) as u64;
                    // Combine the copies in position order: deterministic at any thread count.
                    for p in 0..fan {
                        pos[level] = p;
                        let from = &snap[Self::pe_index(&addr, &pos)];
                        if p == 0 {
                            acc.copy_from_slice(&from[cell..cell + eb]);
                        } else {
                            elem::combine(dtype, op, &mut acc, &from[cell..cell + eb]);
                        }
                    }
                    let dst = offset as usize * wb + cell;
                    lm.data[dst..dst + eb].copy_from_slice(&acc);
                    if idx.iter().zip(runtime).all(|(i, n)| i < n) {
                        valid += 1;
                    }
                });
                (words, valid)
            },
        )
    }
}

/// One input of a kernel, snapshotted for reading by logical index from any PE.
struct InputView {
    snap: Vec<Vec<u8>>,
    tables: mnsim_arch::layout::AxisTables,
    replicated: Vec<bool>,
    fanout: Vec<u64>,
    dtype: DType,
    eb: usize,
    wb: usize,
    fp: usize,
}

impl InputView {
    /// Reads element `idx`: from where it lives on split levels, from the copy at
    /// `own` on replicated ones.
    #[inline]
    fn read(&self, idx: &[u64], own: &[u64], scratch: &mut [u64]) -> f64 {
        self.tables.locate(idx, scratch);
        let nl = self.fanout.len();
        let mut pe = 0u64;
        for i in 0..nl {
            let p = if self.replicated[i] {
                own[i]
            } else {
                scratch[i]
            };
            pe = pe * self.fanout[i] + p;
        }
        let (a, w, t) = (
            scratch[nl] as usize,
            scratch[nl + 1] as usize,
            scratch[nl + 2] as usize,
        );
        let off = (t * self.fp + a) * self.wb + w * self.eb;
        elem::read(self.dtype, &self.snap[pe as usize][off..off + self.eb])
    }
}

impl Engine {
    fn input_view(&mut self, r: &Resident, dtype: DType) -> InputView {
        let l = &r.layout;
        InputView {
            snap: self.snapshot(r.offset, r.words),
            tables: l.axis_tables(),
            replicated: l.levels().iter().map(|x| x.replicated).collect(),
            fanout: l.levels().iter().map(|x| x.fanout).collect(),
            dtype,
            eb: dtype.bytes() as usize,
            wb: self.machine.word_bytes as usize,
            fp: l.footprint_words() as usize,
        }
    }

    /// Runs a SIMD kernel: checks legality (SPEC §5), computes (functional mode),
    /// charges the compute unit. The output is partial over the levels where a split
    /// contraction leaves partial sums; a Reduce completes it.
    pub fn kernel(
        &mut self,
        op: &str,
        k: &mnsim_kernels::Kernel,
        inputs: &[&str],
        out: &str,
        layout: Option<TensorLayout>,
    ) -> Result<OpReport, SimError> {
        let mut res: Vec<Resident> = Vec::new();
        let mut in_dims: Vec<Vec<u64>> = Vec::new();
        let mut in_rt: Vec<Vec<u64>> = Vec::new();
        let mut in_dtypes: Vec<DType> = Vec::new();
        for name in inputs {
            let r = self.resident(name)?.clone();
            if let Some(&p) = r.partial.first() {
                return err(format!(
                    "`{name}` holds partial sums over {}: Reduce it over {} first",
                    r.layout.levels()[p].name,
                    r.layout.levels()[p].name
                ));
            }
            let t = self.state(name)?;
            in_dims.push(t.dims.clone());
            in_rt.push(t.runtime.clone());
            in_dtypes.push(t.dtype);
            res.push(r);
        }
        let dims_ref: Vec<&[u64]> = in_dims.iter().map(|d| d.as_slice()).collect();
        let rt_ref: Vec<&[u64]> = in_rt.iter().map(|d| d.as_slice()).collect();
        let want = mnsim_kernels::output_shape(k, &dims_ref).map_err(|e| SimError(e.message))?;
        let want_rt = mnsim_kernels::output_shape(k, &rt_ref).map_err(|e| SimError(e.message))?;
        let o = self.state(out)?;
        let (out_dtype, out_dims, out_rt) = (o.dtype, o.dims.clone(), o.runtime.clone());
        if out_dims != want {
            return err(format!(
                "{op} of {} gives shape {want:?}, but `{out}` is declared with shape {out_dims:?}",
                inputs.join(", ")
            ));
        }
        if out_rt != want_rt {
            return err(format!(
                "{op} of {} gives run-time shape {want_rt:?}, but `{out}` has run-time shape {out_rt:?}",
                inputs.join(", ")
            ));
        }
        let layout = match layout {
            Some(l) => l,
            None => match res.first() {
                Some(r)
                    if r.layout.logical_shape() == out_dims.as_slice()
                        && in_dtypes[0] == out_dtype =>
                {
                    r.layout.clone()
                }
                _ => {
                    return err(format!(
                        "{op} needs an output layout for `{out}` (its shape or type differs from its input's): give `layout:`"
                    ));
                }
            },
        };
        let in_layouts: Vec<&TensorLayout> = res.iter().map(|r| &r.layout).collect();
        let mut names: Vec<&str> = inputs.to_vec();
        names.push(out);
        let legal = mnsim_kernels::check(k, &in_layouts, &layout, &self.machine, &names)
            .map_err(|e| SimError(format!("{op}: {}", e.message)))?;
        let cost = mnsim_kernels::cost(
            k,
            &in_layouts,
            &layout,
            &legal,
            &self.machine,
            out_dtype,
            Some(&rt_ref),
        )
        .map_err(|e| SimError(format!("{op}: {}", e.message)))?;
        // The output gets a fresh region (it may replace one of the inputs).
        let old = self
            .tensors
            .get(out)
            .and_then(|t| t.lm.as_ref())
            .map(|r| r.offset);
        let (offset, words, region) = self.allocate(out, &layout)?;
        let facts = match self.mode {
            Mode::Timing => self.closed_facts(&layout, &legal.partial, &out_rt, false, None),
            Mode::Functional => {
                let views: Vec<InputView> = res
                    .iter()
                    .zip(&in_dtypes)
                    .map(|(r, &d)| self.input_view(r, d))
                    .collect();
                self.move_kernel(
                    k,
                    &views,
                    &rt_ref,
                    &layout,
                    offset,
                    &out_rt,
                    out_dtype,
                    &legal,
                    &in_layouts,
                )
            }
        };
        if let Some(o) = old {
            self.release(o);
        }
        let unit = self.machine.addressable_levels()[legal.unit_level].level_index;
        let units = facts.iter().filter(|f| f.key != net::NONE).count() as u64;
        let place = net::Place::Compute {
            level: crate::ids::LevelId::of(unit),
            leaf: unit + 1 == self.machine.levels.len(),
        };
        let stage = net::endpoint_stage(place, net::StageKind::Compute, 0, 0, units, cost.cycles);
        let c = net::Cost {
            stages: vec![stage],
            cycles: cost.cycles,
            ready: facts
                .iter()
                .enumerate()
                .filter(|(_, f)| f.key != net::NONE)
                .map(|(p, _)| (p as u64, cost.cycles))
                .collect(),
            bottleneck: Some(0),
            ports: Vec::new(),
        };
        let reads: Vec<RegionId> = res.iter().map(|r| r.region).collect();
        let mut rep = self.finish(op, out, Some(&layout), &out_rt, c, &reads, &[region]);
        rep.flops = Some(cost.flops);
        rep.utilisation = cost.utilisation();
        if let Some(last) = self.ops.last_mut() {
            last.flops = rep.flops;
            last.utilisation = rep.utilisation;
        }
        self.tensors.get_mut(out).expect("checked").lm = Some(Resident {
            layout,
            offset,
            words,
            partial: legal.partial.clone(),
            region,
        });
        Ok(rep)
    }

    /// Functional kernel: every distinct output shard is computed once (replicas are
    /// copies: SIMD repeats the work, the simulator need not), then copied to every PE
    /// that holds it. Where the output is partial, each reduced variable runs only over
    /// the indices this shard's position holds.
    #[allow(clippy::too_many_arguments)]
    fn move_kernel(
        &mut self,
        k: &mnsim_kernels::Kernel,
        views: &[InputView],
        in_rt: &[&[u64]],
        layout: &TensorLayout,
        offset: u64,
        out_rt: &[u64],
        dtype: DType,
        legal: &mnsim_kernels::Legality,
        in_layouts: &[&TensorLayout],
    ) -> Vec<PeFact> {
        let partial = legal.partial.as_slice();
        // Reduced variables run over their real (run-time) extents.
        let extents = mnsim_kernels::reduced_extents(k, in_rt).unwrap_or_default();
        let eb = dtype.bytes() as usize;
        let wb = self.machine.word_bytes as usize;
        let fp = layout.footprint_words() as usize;
        let region = (layout.footprint_words() * layout.time_span()) as usize * wb;
        let used = Self::used_table(layout);
        let width = views.iter().map(|v| v.tables.width()).max().unwrap_or(3);
        // One representative PE per distinct shard.
        let positions = &self.positions;
        let mut reps: Vec<(u64, usize)> = positions
            .iter()
            .enumerate()
            .map(|(p, pos)| (Self::key(layout, &used, partial, pos, false, None), p))
            .filter(|(key, _)| *key != net::NONE)
            .collect();
        reps.sort_unstable();
        reps.dedup_by_key(|x| x.0);
        let computed: Vec<(u64, Vec<u8>, u64, u64)> = reps
            .par_iter()
            .map(|&(key, p)| {
                let pos = &positions[p];
                let mut buf = vec![0u8; region];
                let (mut words, mut valid) = (0u64, 0u64);
                let Some(shard) = layout.shard(pos) else {
                    return (key, buf, 0, 0);
                };
                // The values of each reduced variable this shard works on: all of them,
                // or this position's share where the output is partial.
                let share = match mnsim_kernels::reduced_share(k, in_layouts, legal, pos) {
                    Ok(sh) => sh
                        .into_iter()
                        .zip(&extents)
                        .map(|(v, &n)| v.into_iter().filter(|&x| x < n).collect::<Vec<u64>>())
                        .collect::<Vec<_>>(),
                    Err(_) => extents.iter().map(|&n| (0..n).collect()).collect(),
                };
                let mut scratch = vec![0u64; width];
                shard.for_each(|idx, a, w, t| {
                    let dst = (t as usize * fp + a as usize) * wb + w as usize * eb;
                    words += (w == 0) as u64;
                    if idx.iter().zip(out_rt).all(|(i, n)| i < n) {
                        let mut fetch = |i: usize, at: &[u64]| views[i].read(at, pos, &mut scratch);
                        let v = mnsim_kernels::eval_share(k, idx, &mut fetch, &share, in_rt);
                        elem::write(dtype, v, &mut buf[dst..dst + eb]);
                        valid += 1;
                    }
                });
                (key, buf, words, valid)
            })
            .collect();
        let by_key: HashMap<u64, usize> =
            computed.iter().enumerate().map(|(i, c)| (c.0, i)).collect();
        let base = offset as usize * wb;
        walk_shards(
            &mut self.sw.world,
            layout,
            partial,
            false,
            wb as u64,
            |_, lm, key, _| match by_key.get(&key) {
                Some(&i) => {
                    let (_, buf, words, valid) = &computed[i];
                    lm.data[base..base + region].copy_from_slice(buf);
                    (*words, *valid)
                }
                None => (0, 0),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_do_not_depend_on_the_histogram_bound() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..25u64 {
            let n = 1 + round % 97;
            let scale = [10u64, 1_000, 100_000, 10_000_000, 1 << 40][round as usize % 5];
            let values: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % scale
                })
                .collect();
            let mut wide = Histogram::<u64>::new_with_bounds(1, u64::MAX / 4, 3).unwrap();
            for &v in &values {
                wide.saturating_record(v.max(1));
            }
            let hi = *values.iter().max().unwrap();
            let p = percentiles(values.iter().copied()).unwrap();
            let q = |x: f64| wide.value_at_quantile(x).min(hi);
            assert_eq!(
                (p.p50, p.p90, p.p99),
                (q(0.5), q(0.9), q(0.99)),
                "{values:?}"
            );
            assert_eq!(
                (p.min, p.max, p.count),
                (*values.iter().min().unwrap(), hi, n)
            );
        }
        assert_eq!(percentiles(std::iter::empty()), None);
    }
}
