//! The functional data plane: real bytes moved between DRAM buffers and the PEs' LMs
//! (Load, Store, Relayout, Reduce) and the kernels' values, in parallel over the PEs
//! (rayon). Each move returns the per-PE facts it counted, which the cost model charges.
//!
//! Invariant: only functional mode calls into this module (timing mode takes its facts
//! from `facts.rs`), so timing never touches element data. The types enforce it: every
//! move takes a [`Functional`] token, which only [`Engine::functional`] makes, and only
//! in functional mode. Parallel work is per PE and
//! its results are sorted by PE index: the bytes do not depend on the thread count.
//! Load and Store copy a shard whose cells are all real elements by its loop nest in
//! closed form (`copy.rs`), other shards by runs or per cell.

use super::buffers::zeroed;
use super::contract::{Contraction, OutCells};
use super::conv::ConvPlan;
use super::copy::{LmGeometry, Plan};
use super::{DramTensor, Engine, Resident};
use crate::net::{self, Facts, PeFact};
use crate::world::{Lm, Pe};
use mnsim_arch::{DType, TensorLayout, XlaLayout};
use mnsim_kernels::elem::{self, Combine};
use rayon::prelude::*;

/// Proof that the engine runs in functional mode: the key to every move of this module.
/// Its field is private, so [`Engine::functional`] is the only way to get one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Functional(());

impl Engine {
    /// The data plane's key, in functional mode only (`None` in timing mode).
    pub(super) fn functional(&self) -> Option<Functional> {
        (self.mode == super::Mode::Functional).then_some(Functional(()))
    }
}

/// Raw pointer that may cross threads: PEs write disjoint DRAM elements (a layout's
/// placement map is injective, and only one replica writes).
#[derive(Clone, Copy)]
pub(super) struct SyncPtr(*mut u8);
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}

/// Offsets of logical elements in a DRAM buffer.
pub(super) struct DramAddr {
    dims: Vec<u64>,
    /// Untiled: element stride per logical axis.
    strides: Option<Vec<u64>>,
    layout: XlaLayout,
}

impl DramAddr {
    /// Walks a shard, calling `cell(real, dram_element, addr, w, t)` per cell: untiled
    /// DRAM keeps the offset incrementally, tiled DRAM computes it per element.
    pub(super) fn walk(
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
    pub(super) fn runs(
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

    /// The shard's copy plan in closed form (see [`Plan`]) when DRAM is untiled, every
    /// cell of the shard is a real element and no offset overflows; `None` otherwise (walk
    /// by runs or per cell). With it, the words and real elements the shard moves.
    fn plan(
        &self,
        shard: &mnsim_arch::layout::Shard<'_>,
        runtime: &[u64],
        g: LmGeometry,
    ) -> Option<(Plan, u64, u64)> {
        let nest = shard.nest(self.strides.as_deref()?, runtime)?;
        let plan = Plan::new(&nest, g)?;
        Some((plan, nest.words(), nest.cells()))
    }

    pub(super) fn new(layout: &XlaLayout, dims: &[u64]) -> DramAddr {
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
    pub(super) fn offset(&self, idx: &[u64]) -> u64 {
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
pub(super) fn copy_elem(dst: &mut [u8], src: &[u8], eb: usize) {
    match eb {
        1 => dst[0] = src[0],
        2 => dst[..2].copy_from_slice(&src[..2]),
        4 => dst[..4].copy_from_slice(&src[..4]),
        8 => dst[..8].copy_from_slice(&src[..8]),
        _ => dst[..eb].copy_from_slice(&src[..eb]),
    }
}

/// Copies `n` elements of `N` bytes, `s_step` bytes apart from `s`, to `d_step` bytes
/// apart from `d`, by fixed-size moves.
///
/// # Safety
/// Every element of both runs lies in its buffer, the buffers do not overlap, and no
/// one else touches the destination elements meanwhile.
#[inline(always)]
unsafe fn strided<const N: usize>(
    d: *mut u8,
    d_step: usize,
    s: *const u8,
    s_step: usize,
    n: usize,
) {
    for k in 0..n {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(s.add(k * s_step), d.add(k * d_step), N) }
    }
}

/// [`strided`] for an element size `eb` known at run time: one dispatch per run.
///
/// # Safety
/// As [`strided`].
#[inline]
pub(super) unsafe fn copy_strided_raw(
    d: *mut u8,
    d_step: usize,
    s: *const u8,
    s_step: usize,
    n: usize,
    eb: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        match eb {
            1 => strided::<1>(d, d_step, s, s_step, n),
            2 => strided::<2>(d, d_step, s, s_step, n),
            4 => strided::<4>(d, d_step, s, s_step, n),
            8 => strided::<8>(d, d_step, s, s_step, n),
            _ => {
                for k in 0..n {
                    std::ptr::copy_nonoverlapping(s.add(k * s_step), d.add(k * d_step), eb)
                }
            }
        }
    }
}

/// Copies `n` elements of `eb` bytes from `src` (from byte `s.0`, `s.1` apart) to `dst`
/// (from byte `d.0`, `d.1` apart): one bounds check per run.
#[inline]
pub(super) fn copy_strided(
    dst: &mut [u8],
    d: (usize, usize),
    src: &[u8],
    s: (usize, usize),
    n: usize,
    eb: usize,
) {
    if n == 0 {
        return;
    }
    assert!(d.0 + (n - 1) * d.1 + eb <= dst.len() && s.0 + (n - 1) * s.1 + eb <= src.len());
    // SAFETY: both runs' last elements are in range (checked), steps are non-negative,
    // and `dst` is borrowed exclusively.
    unsafe {
        copy_strided_raw(
            dst.as_mut_ptr().add(d.0),
            d.1,
            src.as_ptr().add(s.0),
            s.1,
            n,
            eb,
        )
    }
}

/// Runs `f` on the shard of every PE that takes part in a move (in parallel over the
/// PEs) and returns the facts of those that take part, in PE order. `f` gets the PE, its LM, the key of its
/// data and its shard, and returns the words it moved and the real elements among them.
pub(super) fn walk_shards(
    world: &mut bevy_ecs::world::World,
    layout: &TensorLayout,
    partial: &[usize],
    one_replica: bool,
    wb: u64,
    f: impl Fn(&Pe, &mut Lm, u64, mnsim_arch::layout::Shard<'_>) -> (u64, u64) + Sync,
) -> Facts {
    let used = Engine::used_table(layout);
    let mut q = world.query::<(&Pe, &mut Lm)>();
    let mut pes: Vec<(&Pe, &mut Lm)> = q
        .iter_mut(world)
        .map(|(p, l)| (p, l.into_inner()))
        .collect();
    let mut facts: Facts = pes
        .par_iter_mut()
        .filter_map(|(pe, lm)| {
            let key = Engine::key(layout, &used, partial, &pe.pos, one_replica, None);
            let shard = layout.shard(&pe.pos).filter(|_| key != net::NONE)?;
            let (words, valid) = f(pe, lm, key, shard);
            Some((
                pe.global,
                PeFact {
                    key,
                    reduced_key: key,
                    bytes: words * wb,
                    valid,
                },
            ))
        })
        .collect();
    facts.sort_unstable_by_key(|f| f.0);
    facts
}

/// Every PE's LM in PE order, as raw pointers: moves read one PE's region and write
/// another's (always a different region: a move's destination is allocated while its
/// sources are resident), in parallel, without copying the sources first.
#[derive(Clone, Copy)]
pub(super) struct LmPtr {
    ptr: SyncPtr,
    len: usize,
}

impl LmPtr {
    /// `n` bytes at `at`.
    ///
    /// # Safety
    /// No one writes those bytes while the slice lives.
    #[inline]
    pub(super) unsafe fn bytes(&self, at: usize, n: usize) -> &[u8] {
        assert!(at + n <= self.len, "LM read out of range");
        // SAFETY: in range (checked); the caller guarantees no concurrent writer.
        unsafe { std::slice::from_raw_parts(self.ptr.0.add(at), n) }
    }

    /// `n` bytes at `at`, to write.
    ///
    /// # Safety
    /// No one else reads or writes those bytes while the slice lives.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    unsafe fn bytes_mut(&self, at: usize, n: usize) -> &mut [u8] {
        assert!(at + n <= self.len, "LM write out of range");
        // SAFETY: in range (checked); the caller guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.0.add(at), n) }
    }
}

/// The LM pointers of every PE of the world, in PE order.
fn lm_ptrs(world: &mut bevy_ecs::world::World) -> Vec<LmPtr> {
    let mut q = world.query::<(&Pe, &mut Lm)>();
    let mut v: Vec<(u64, LmPtr)> = q
        .iter_mut(world)
        .map(|(p, mut l)| {
            let len = l.data.len();
            (
                p.global,
                LmPtr {
                    ptr: SyncPtr(l.data.as_mut_ptr()),
                    len,
                },
            )
        })
        .collect();
    v.sort_unstable_by_key(|x| x.0);
    v.into_iter().map(|x| x.1).collect()
}

/// One input of a kernel, read by logical index from any PE's LM in place.
pub(super) struct InputView<'a> {
    lms: &'a [LmPtr],
    /// First byte of the input's region in every LM.
    base: usize,
    tables: mnsim_arch::layout::AxisTables,
    replicated: Vec<bool>,
    fanout: Vec<u64>,
    dtype: DType,
    eb: usize,
    wb: usize,
    fp: usize,
}

impl InputView<'_> {
    /// Reads element `idx`: from where it lives on split levels, from the copy at
    /// `own` on replicated ones.
    #[inline]
    pub(super) fn read(&self, idx: &[u64], own: &[u64], scratch: &mut [u64]) -> f64 {
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
        let off = self.base + (t * self.fp + a) * self.wb + w * self.eb;
        // SAFETY: inputs are resident regions; a kernel writes only its output's region,
        // allocated apart from every resident one.
        elem::read(self.dtype, unsafe {
            self.lms[pe as usize].bytes(off, self.eb)
        })
    }
}

impl Engine {
    pub(super) fn move_load(
        &mut self,
        _: Functional,
        name: &str,
        layout: &TensorLayout,
        offset: u64,
    ) -> Facts {
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
                let g = LmGeometry {
                    base_bytes: base * wb,
                    wb,
                    eb,
                    fp,
                };
                // In closed form: the shard's loop nest, one bounds check.
                if let Some((plan, words, valid)) = addr.plan(&shard, runtime, g) {
                    let (d_end, l_end) = plan.ends();
                    assert!(d_end <= src.len() && l_end <= lm.data.len());
                    // SAFETY: every cell lies in both buffers (checked above); the source
                    // is only read and this PE's LM is borrowed exclusively.
                    unsafe { plan.to_lm(src.as_ptr(), lm.data.as_mut_ptr()) };
                    return (words, valid);
                }
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
                        copy_strided(&mut lm.data, (lm0, lm_step), src, (src0, src_step), n, eb);
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

    pub(super) fn move_store(
        &mut self,
        _: Functional,
        name: &str,
        r: &Resident,
        xla: &XlaLayout,
    ) -> Facts {
        let t = self.tensors.get_mut(name).expect("checked");
        let eb = t.dtype.bytes() as usize;
        let runtime = t.runtime.clone();
        let buf = xla.buffer_elements(&runtime).unwrap_or(0) as usize * eb;
        let dram = t.dram.get_or_insert_with(|| DramTensor {
            layout: xla.clone(),
            data: Vec::new(),
        });
        // Every element is written below (the placement map covers the tensor, one
        // replica writes); positions between them (tile padding) are zero. A buffer of the
        // same layout and size already has them zero: no second pass over the bytes.
        if dram.layout != *xla || dram.data.len() != buf {
            dram.layout = xla.clone();
            if dram.data.capacity() < buf {
                // Not grown in place: a fresh zeroed buffer is not touched before the
                // copies below write it.
                dram.data = zeroed(buf);
            } else {
                dram.data.clear();
                dram.data.resize(buf, 0);
            }
        }
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
                let base = r.offset as usize;
                let g = LmGeometry {
                    base_bytes: base * wb,
                    wb,
                    eb,
                    fp,
                };
                if let Some((plan, words, valid)) = addr.plan(&shard, &runtime, g) {
                    let (d_end, l_end) = plan.ends();
                    assert!(d_end <= buf && l_end <= lm.data.len());
                    // SAFETY: every cell lies in both buffers (checked above), and no
                    // other PE writes these DRAM elements: the placement map is injective
                    // and only the first replica (the key) writes.
                    unsafe { plan.to_dram(lm.data.as_ptr(), p.0) };
                    return (words, valid);
                }
                let (mut words, mut valid) = (0u64, 0u64);
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
                    if lm_step == eb && d_step == eb {
                        // SAFETY: every cell of the run lies within the buffer (its last
                        // one is checked above), and no other PE writes it: the placement
                        // map is injective and only the first replica (the key) writes.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                lm.data.as_ptr().add(lm0),
                                p.0.add(d0),
                                n * eb,
                            )
                        };
                    } else {
                        // SAFETY: as above, for each cell of the run.
                        unsafe {
                            copy_strided_raw(
                                p.0.add(d0),
                                d_step,
                                lm.data.as_ptr().add(lm0),
                                lm_step,
                                n,
                                eb,
                            )
                        };
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

    pub(super) fn move_relayout(
        &mut self,
        _: Functional,
        src: &Resident,
        layout: &TensorLayout,
        offset: u64,
        runtime: &[u64],
        dtype: DType,
    ) -> Facts {
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

    #[allow(clippy::too_many_arguments)]
    pub(super) fn move_reduce(
        &mut self,
        _: Functional,
        src: &Resident,
        level: usize,
        op: Combine,
        offset: u64,
        dtype: DType,
        runtime: &[u64],
    ) -> Facts {
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

    fn input_view<'a>(&self, lms: &'a [LmPtr], r: &Resident, dtype: DType) -> InputView<'a> {
        let l = &r.layout;
        let wb = self.machine.word_bytes as usize;
        InputView {
            lms,
            base: r.offset as usize * wb,
            tables: l.axis_tables(),
            replicated: l.levels().iter().map(|x| x.replicated).collect(),
            fanout: l.levels().iter().map(|x| x.fanout).collect(),
            dtype,
            eb: dtype.bytes() as usize,
            wb,
            fp: l.footprint_words() as usize,
        }
    }

    /// Functional kernel: every distinct output shard is computed once (replicas are
    /// copies: SIMD repeats the work, the simulator need not), then copied to every PE
    /// that holds it. Where the output is partial, each reduced variable runs only over
    /// the indices this shard's position holds. Inputs are read in place from the LMs,
    /// and a shard's values live only until they are copied: the host holds the LMs and
    /// one shard per thread, not a second copy of the tensors.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn move_kernel(
        &mut self,
        func: Functional,
        k: &mnsim_kernels::Kernel,
        inputs: &[(&Resident, DType)],
        in_rt: &[&[u64]],
        layout: &TensorLayout,
        offset: u64,
        out_rt: &[u64],
        dtype: DType,
        legal: &mnsim_kernels::Legality,
        in_layouts: &[&TensorLayout],
    ) -> Facts {
        let partial = legal.partial.as_slice();
        // Reduced variables run over their real (run-time) extents.
        let extents = mnsim_kernels::reduced_extents(k, in_rt).unwrap_or_default();
        let eb = dtype.bytes() as usize;
        let wb = self.machine.word_bytes as usize;
        let fp = layout.footprint_words() as usize;
        let region = (layout.footprint_words() * layout.time_span()) as usize * wb;
        let base = offset as usize * wb;
        let used = Self::used_table(layout);
        let lms = lm_ptrs(&mut self.sw.world);
        let views: Vec<InputView> = inputs
            .iter()
            .map(|&(r, d)| self.input_view(&lms, r, d))
            .collect();
        let width = views.iter().map(|v| v.tables.width()).max().unwrap_or(3);
        // Matrix contractions: each shard's rows and columns gathered once, then a tight
        // loop (`contract.rs`), the same values as element by element.
        let contraction = (!self.per_element_kernels && extents.len() == 1)
            .then(|| Contraction::new(k, inputs, in_rt, out_rt.len(), wb))
            .flatten();
        // Convolutions: each operand found by per-axis terms, each shard's window taps
        // listed once per output position (`conv.rs`), the same values again.
        let conv = (!self.per_element_kernels)
            .then(|| ConvPlan::new(k, inputs, in_rt, wb))
            .flatten();
        let cells = OutCells { fp, wb, eb, dtype };
        // The PEs of every distinct shard, by key (PE order inside).
        let positions = &self.positions;
        let mut keyed: Vec<(u64, usize)> = positions
            .iter()
            .enumerate()
            .map(|(p, pos)| (Self::key(layout, &used, partial, pos, false, None), p))
            .filter(|(key, _)| *key != net::NONE)
            .collect();
        keyed.sort_unstable();
        let shards: Vec<&[(u64, usize)]> = keyed.chunk_by(|a, b| a.0 == b.0).collect();
        let mut facts: Facts = shards
            .par_iter()
            .flat_map_iter(|pes| {
                let (key, p) = pes[0];
                let pos = &positions[p];
                let Some(shard) = layout.shard(pos) else {
                    return Vec::new();
                };
                let mut buf = vec![0u8; region];
                let (mut words, mut valid) = (0u64, 0u64);
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
                let fast = contraction
                    .as_ref()
                    .and_then(|c| {
                        c.shard(func, &lms, &shard, pos, &share[0], out_rt, &cells, &mut buf)
                    })
                    .or_else(|| {
                        let c = conv.as_ref()?;
                        c.shard(func, &lms, &shard, pos, &share, out_rt, &cells, &mut buf)
                    });
                let mut scratch = vec![0u64; width];
                if let Some((w, v)) = fast {
                    (words, valid) = (w, v);
                } else {
                    shard.for_each(|idx, a, w, t| {
                        let dst = (t as usize * fp + a as usize) * wb + w as usize * eb;
                        words += (w == 0) as u64;
                        if idx.iter().zip(out_rt).all(|(i, n)| i < n) {
                            let mut fetch =
                                |i: usize, at: &[u64]| views[i].read(at, pos, &mut scratch);
                            let v = mnsim_kernels::eval_share(k, idx, &mut fetch, &share, in_rt);
                            elem::write(dtype, v, &mut buf[dst..dst + eb]);
                            valid += 1;
                        }
                    });
                }
                pes.iter()
                    .map(|&(_, p)| {
                        // SAFETY: the output's region of PE `p`: only this shard's task
                        // writes it (a PE holds one shard), and no input lies in it.
                        unsafe { lms[p].bytes_mut(base, region) }.copy_from_slice(&buf);
                        (
                            p as u64,
                            PeFact {
                                key,
                                reduced_key: key,
                                bytes: words * wb as u64,
                                valid,
                            },
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        facts.sort_unstable_by_key(|f| f.0);
        facts
    }
}
