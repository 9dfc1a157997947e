//! The machine's state in a run: the machine and its world, the tensors by id (DRAM
//! and LM), the LM allocator and the streams it holds. What ops are recorded is the
//! recorder's ([`super::Recorder`]); nothing here knows about reports or the planner.

use super::alloc::{Alloc, Frees};
use super::dataplane::DramAddr;
use super::{
    DramTensor, ErrorKind, LmFull, Partial, Resident, SimError, StreamState, TensorState, buffers,
};
use crate::ids::{LevelId, RegionId};
use crate::net::Topo;
use crate::program::{Mode, PrimaryMap, TensorId, check_dram};
use crate::world::{Nodes, Pe, SimWorld};
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};
use std::collections::BTreeMap;

/// What the machine holds while a program runs.
pub struct MachineState {
    pub machine: Machine,
    pub topo: Topo,
    pub sw: SimWorld,
    pub mode: Mode,
    /// The declared tensors, by the id [`MachineState::declare`] gave each.
    pub tensors: PrimaryMap<TensorId, TensorState>,
    pub(super) alloc: Alloc,
    /// Peak LM bytes charged per PE.
    pub lm_peak_bytes: u64,
    /// What the next op's task frees before and after it allocates.
    pub(super) frees: Frees,
    /// LM words charged after every allocation (the LM peak, should a stream give back a slice).
    pub(super) charge_log: Vec<u64>,
    /// Every `Time`-stepped tensor placed in LM (a stream), by region.
    pub streams: BTreeMap<RegionId, StreamState>,
    /// Every PE's position per addressable level, in PE order (functional mode only:
    /// timing mode walks the positions a layout touches).
    pub(super) positions: Vec<Vec<u64>>,
}

impl MachineState {
    /// A machine with nothing declared; functional mode holds every PE's LM, timing
    /// mode spawns what its ops touch.
    pub(super) fn new(machine: Machine, mode: Mode) -> MachineState {
        let sw = SimWorld::build(
            &machine,
            match mode {
                Mode::Functional => Nodes::All,
                Mode::Timing => Nodes::Touched,
            },
        );
        MachineState {
            topo: Topo::new(&machine),
            positions: Self::positions_of(&sw),
            machine,
            sw,
            mode,
            tensors: PrimaryMap::new(),
            alloc: Alloc::default(),
            lm_peak_bytes: 0,
            frees: Frees::default(),
            charge_log: Vec::new(),
            streams: BTreeMap::new(),
        }
    }

    /// Forgets what LM holds, keeping the machine, the world and the declared tensors.
    pub(super) fn clear(&mut self) {
        for t in self.tensors.values_mut() {
            t.lm = None;
        }
        self.alloc = Alloc::default();
        self.frees = Frees::default();
        self.charge_log.clear();
        self.streams.clear();
        self.sw.clear_busy();
        self.lm_peak_bytes = 0;
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

    pub fn tensor(&self, t: TensorId) -> Result<&TensorState, SimError> {
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

    /// The id of the machine's level named `name`, for tests and tools that name levels
    /// (the simulator itself never looks a level up by name).
    pub fn level_id(&self, name: &str) -> Option<LevelId> {
        self.machine.level_index(name).map(LevelId::of)
    }

    /// Tensor `t`'s name, for messages.
    pub fn name(&self, t: TensorId) -> &str {
        self.tensors.get(t).map_or("?", |s| s.name.as_str())
    }

    pub(super) fn resident(&self, t: TensorId) -> Result<&Resident, SimError> {
        let s = self.tensor(t)?;
        (s.lm.as_ref()).ok_or_else(|| ErrorKind::NotInLm(s.name.clone()).into())
    }

    /// The error of tensor `t`, partial over addressable level `level` of `layout`,
    /// about to be used as `before` says.
    pub(super) fn partial(
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
    pub(super) fn positions_of(sw: &SimWorld) -> Vec<Vec<u64>> {
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
    pub(super) fn allocate(
        &mut self,
        t: TensorId,
        layout: &TensorLayout,
        (buffers, producer): (Option<i64>, usize),
    ) -> Result<(u64, u64, RegionId), SimError> {
        let fp = layout.footprint_words();
        let words = fp.saturating_mul(layout.time_span());
        let lm_words = self.machine.leaf_memory_bytes() / self.machine.word_bytes.max(1);
        // Streams that took two slices by default give one back while this does not fit.
        while self.alloc.charged().saturating_add(fp) > lm_words && self.give_back(t, fp) {}
        let charged = self.alloc.charged();
        // A stream is charged the slices LM holds of it.
        let (held, need, fallback, requested) =
            self.hold(t, layout, (charged, lm_words), buffers)?;
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
                    producer,
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
    pub(super) fn release(&mut self, offset: u64) {
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
    pub(super) fn resident_list(&self) -> String {
        let mut held: Vec<(&str, u64)> = (self.tensors.values())
            .filter_map(|t| Some((t.name.as_str(), t.lm.as_ref()?.layout.footprint_words())))
            .collect();
        held.sort();
        let list: Vec<String> = held.iter().map(|(n, w)| format!("{n} {w}")).collect();
        list.join(", ")
    }

    /// The slices of `layout` LM holds when `charged` of `lm` words are in use, and the
    /// words that charges: `buffers:` if the op gave it (0 or less is an error), else
    /// 2 when two slices fit, else 1.
    pub(super) fn hold(
        &mut self,
        t: TensorId,
        layout: &TensorLayout,
        (charged, lm): (u64, u64),
        buffers: Option<i64>,
    ) -> Result<(u64, u64, Option<String>, Option<u64>), SimError> {
        let fp = layout.footprint_words();
        let steps = layout.time_span();
        let requested = match buffers {
            Some(b) if b < 1 => {
                return Err(ErrorKind::NoBuffers {
                    buffers: b,
                    tensor: self.name(t).to_string(),
                }
                .into());
            }
            Some(b) => Some(b as u64),
            None => None,
        };
        let free = lm.saturating_sub(charged);
        let (held, fallback) = match requested {
            _ if steps <= 1 => (1, None),
            Some(b) => (b.min(steps), None),
            None if fp.saturating_mul(2) <= free => (2, None),
            None => (
                1,
                Some(format!(
                    "LM full: two slices need {} words, {free} of {lm} free",
                    fp.saturating_mul(2)
                )),
            ),
        };
        let need = fp.saturating_mul(held);
        if held > 1 && need > free {
            return Err(LmFull::Buffers {
                held,
                tensor: self.name(t).to_string(),
                slice: fp,
                need,
                free,
                lm,
            }
            .into());
        }
        Ok((held, need, fallback, requested))
    }

    /// A stream not yet read that holds two slices by default gives one back so that
    /// `name` (`fp` words) fits: the default is two slices only when they fit with
    /// everything else live. The latest such stream first; `false` when there is none.
    pub(super) fn give_back(&mut self, t: TensorId, fp: u64) -> bool {
        let alloc = &self.alloc;
        // Streams not yet read first (they hold one slice from the start), then streams
        // already read (one slice from now on).
        let pick = |unread: bool| {
            self.streams
                .iter()
                .rev()
                .find(|(r, st)| {
                    st.requested.is_none()
                        && st.buffers >= 2
                        && st.consumer.is_none() == unread
                        && alloc.holds(**r)
                })
                .map(|(r, _)| *r)
        };
        let Some(region) = pick(true).or_else(|| pick(false)) else {
            return false;
        };
        let name = self.tensors.get(t).map_or("?", |s| s.name.as_str());
        let Some(st) = self.streams.get_mut(&region) else {
            return false;
        };
        st.buffers = 1;
        st.fallback = Some(format!(
            "LM full: two slices ({} words) do not fit beside `{name}` ({fp} words)",
            st.slice_words.saturating_mul(2)
        ));
        let (words, at) = (st.slice_words, st.log_at);
        let unread = st.consumer.is_none();
        self.alloc.recharge(region, words);
        if !unread {
            return true;
        }
        for v in self.charge_log.iter_mut().skip(at) {
            *v = v.saturating_sub(words);
        }
        let peak = self.charge_log.iter().copied().max().unwrap_or(0);
        self.lm_peak_bytes = peak.saturating_mul(self.machine.word_bytes);
        true
    }
}
