//! Copies of a whole shard by nested loops in closed form (functional mode only): a
//! shard's [`Nest`] turned into byte strides on both sides, its loops ordered and merged
//! where they are contiguous, then copied with tight loops — one memcpy per contiguous
//! run, fixed-size moves otherwise — with one bounds check per shard.
//!
//! Invariant: only the data plane calls this module (timing mode never touches element
//! data). A [`Plan`] covers exactly the cells of its shard: the property test
//! `nest_matches_the_plain_walk` (arch) checks the nest against the per-element walk.

use super::dataplane::copy_strided_raw;
use mnsim_arch::layout::Nest;

/// One loop in bytes: `count` iterations, `dram` bytes apart in the DRAM buffer and `lm`
/// bytes apart in the LM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ByteLoop {
    count: usize,
    dram: usize,
    lm: usize,
}

/// A shard's cells as byte offsets: the first cell at `dram0` in the DRAM buffer and at
/// `lm0` in the LM, the loops outer first (the last one fastest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    dram0: usize,
    lm0: usize,
    loops: Vec<ByteLoop>,
    eb: usize,
    /// One past the last byte touched in DRAM and in LM.
    ends: (usize, usize),
}

/// Where an LM region lies and how its cells are addressed: the first byte, the bytes of
/// a word and of an element, and the words of one time step.
#[derive(Clone, Copy, Debug)]
pub(super) struct LmGeometry {
    pub base_bytes: usize,
    pub wb: usize,
    pub eb: usize,
    pub fp: usize,
}

impl Plan {
    /// The byte plan of `nest` (its linear offsets are DRAM elements), or `None` when a
    /// byte offset overflows. Loops of one iteration are dropped; the others are ordered
    /// by DRAM stride, largest outside (cells are independent: the order only changes
    /// locality), and a loop is merged with the one inside it when it continues it on
    /// both sides, so a contiguous run becomes one copy.
    pub(super) fn new(nest: &Nest, g: LmGeometry) -> Option<Plan> {
        let lm_of = |addr: u64, w: u64, t: u64| -> Option<usize> {
            let words = usize::try_from(t)
                .ok()?
                .checked_mul(g.fp)?
                .checked_add(usize::try_from(addr).ok()?)?;
            words
                .checked_mul(g.wb)?
                .checked_add(usize::try_from(w).ok()?.checked_mul(g.eb)?)
        };
        let dram0 = usize::try_from(nest.start.lin).ok()?.checked_mul(g.eb)?;
        let s = nest.start;
        let lm0 = g.base_bytes.checked_add(lm_of(s.addr, s.w, s.t)?)?;
        let mut loops = Vec::with_capacity(nest.loops.len());
        for l in &nest.loops {
            if l.count == 1 {
                continue;
            }
            loops.push(ByteLoop {
                count: usize::try_from(l.count).ok()?,
                dram: usize::try_from(l.step.lin).ok()?.checked_mul(g.eb)?,
                lm: lm_of(l.step.addr, l.step.w, l.step.t)?,
            });
        }
        loops.sort_by_key(|l| std::cmp::Reverse(l.dram));
        let mut merged: Vec<ByteLoop> = Vec::with_capacity(loops.len());
        for l in loops {
            match merged.last_mut() {
                Some(o)
                    if l.count.checked_mul(l.dram) == Some(o.dram)
                        && l.count.checked_mul(l.lm) == Some(o.lm) =>
                {
                    *o = ByteLoop {
                        count: o.count.checked_mul(l.count)?,
                        dram: l.dram,
                        lm: l.lm,
                    };
                }
                _ => merged.push(l),
            }
        }
        let (mut d, mut l) = (dram0.checked_add(g.eb)?, lm0.checked_add(g.eb)?);
        for x in &merged {
            d = d.checked_add((x.count - 1).checked_mul(x.dram)?)?;
            l = l.checked_add((x.count - 1).checked_mul(x.lm)?)?;
        }
        Some(Plan {
            dram0,
            lm0,
            loops: merged,
            eb: g.eb,
            ends: (d, l),
        })
    }

    /// One past the last byte the plan touches in DRAM and in LM: the buffers it needs.
    pub(super) fn ends(&self) -> (usize, usize) {
        self.ends
    }

    /// Copies every cell from the DRAM buffer to the LM.
    ///
    /// # Safety
    /// `dram` and `lm` point at buffers of at least [`Plan::ends`] bytes, which do not
    /// overlap, and no one else writes the cells meanwhile.
    pub(super) unsafe fn to_lm(&self, dram: *const u8, lm: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe { self.copy(dram, lm, true) }
    }

    /// Copies every cell from the LM to the DRAM buffer.
    ///
    /// # Safety
    /// As [`Plan::to_lm`].
    pub(super) unsafe fn to_dram(&self, lm: *const u8, dram: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe { self.copy(lm, dram, false) }
    }

    /// The copy: `src` is the DRAM buffer when `to_lm`, the LM otherwise. A contiguous
    /// run of a common size is a fixed-size move (no call per run).
    ///
    /// # Safety
    /// As [`Plan::to_lm`].
    unsafe fn copy(&self, src: *const u8, dst: *mut u8, to_lm: bool) {
        let eb = self.eb;
        // (count, source step, destination step) of a loop.
        let sides = |x: &ByteLoop| {
            if to_lm {
                (x.count, x.dram, x.lm)
            } else {
                (x.count, x.lm, x.dram)
            }
        };
        let (outer, (n, ss, ds)): (Vec<_>, _) = match self.loops.split_last() {
            Some((i, o)) => (o.iter().map(sides).collect(), sides(i)),
            None => (Vec::new(), (1, eb, eb)),
        };
        let start = if to_lm {
            (self.dram0, self.lm0)
        } else {
            (self.lm0, self.dram0)
        };
        let bytes = n * eb;
        // SAFETY (every call below): the caller's contract; each run starts at a cell of
        // the plan and covers `n` of its cells.
        unsafe {
            if ss == eb && ds == eb {
                match bytes {
                    16 => odometer(&outer, start, src, dst, |s, d| fixed::<16>(s, d)),
                    32 => odometer(&outer, start, src, dst, |s, d| fixed::<32>(s, d)),
                    64 => odometer(&outer, start, src, dst, |s, d| fixed::<64>(s, d)),
                    128 => odometer(&outer, start, src, dst, |s, d| fixed::<128>(s, d)),
                    _ => odometer(&outer, start, src, dst, |s, d| {
                        std::ptr::copy_nonoverlapping(s, d, bytes)
                    }),
                }
            } else {
                odometer(&outer, start, src, dst, |s, d| {
                    copy_strided_raw(d, ds, s, ss, n, eb)
                })
            }
        }
    }
}

/// Copies `N` bytes (a fixed-size move the compiler unrolls).
///
/// # Safety
/// Both ranges are valid and do not overlap.
#[inline(always)]
unsafe fn fixed<const N: usize>(s: *const u8, d: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(s, d, N) }
}

/// Runs too far apart in the source for the hardware to see them coming are fetched this
/// many runs ahead.
const AHEAD: usize = 8;

/// Calls `run(source, destination)` at every step of the `outer` loops (count, source
/// step, destination step; the last one fastest) from byte offsets `start`, by additions
/// only, asking the cache for the source `AHEAD` steps of the fastest loop ahead.
///
/// # Safety
/// Every offset the loops reach lies in both buffers, as `run` needs it.
#[inline(always)]
unsafe fn odometer(
    outer: &[(usize, usize, usize)],
    start: (usize, usize),
    src: *const u8,
    dst: *mut u8,
    mut run: impl FnMut(*const u8, *mut u8),
) {
    let ahead = outer.last().map_or(0, |o| o.1 * AHEAD);
    let mut digit = vec![0usize; outer.len()];
    let (mut s, mut d) = start;
    loop {
        prefetch(src.wrapping_add(s.wrapping_add(ahead)));
        // SAFETY: the caller's contract.
        run(unsafe { src.add(s) }, unsafe { dst.add(d) });
        let mut k = outer.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            let (count, os, od) = outer[k];
            if digit[k] + 1 < count {
                digit[k] += 1;
                s += os;
                d += od;
                break;
            }
            digit[k] = 0;
            s -= (count - 1) * os;
            d -= (count - 1) * od;
        }
    }
}

/// A hint that `p` is read soon (nothing on targets without one). Never faults, whatever
/// `p` is.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally: any address is fine.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnsim_arch::layout::{Cell, Loop};

    fn nest(loops: &[(u64, u64, u64, u64)]) -> Nest {
        Nest {
            start: Cell::default(),
            loops: loops
                .iter()
                .map(|&(count, lin, addr, w)| Loop {
                    count,
                    step: Cell { lin, addr, w, t: 0 },
                })
                .collect(),
        }
    }

    const F32_ON_8: LmGeometry = LmGeometry {
        base_bytes: 0,
        wb: 8,
        eb: 4,
        fp: 1 << 20,
    };

    #[test]
    fn contiguous_loops_merge_into_one_run() {
        // 4 rows 1024 apart in DRAM, 8 words of 2 slots: per row 16 f32 contiguous on
        // both sides, and rows follow each other in LM (16 elements = 8 words).
        let p = Plan::new(
            &nest(&[(4, 1024, 8, 0), (8, 2, 1, 0), (2, 1, 0, 1)]),
            F32_ON_8,
        )
        .unwrap();
        assert_eq!(
            p.loops,
            vec![
                ByteLoop {
                    count: 4,
                    dram: 4096,
                    lm: 64
                },
                ByteLoop {
                    count: 16,
                    dram: 4,
                    lm: 4
                },
            ]
        );
        assert_eq!(p.ends(), (3 * 4096 + 64, 4 * 64));
    }

    #[test]
    fn strided_loops_stay_apart_and_copy_every_cell() {
        // One f32 per word: 4 bytes apart in DRAM, 8 in LM.
        let p = Plan::new(&nest(&[(3, 1, 1, 0)]), F32_ON_8).unwrap();
        assert_eq!(
            p.loops,
            vec![ByteLoop {
                count: 3,
                dram: 4,
                lm: 8
            }]
        );
        let dram: Vec<u8> = (0..12).collect();
        let mut lm = vec![0u8; 24];
        let (de, le) = p.ends();
        assert!(de <= dram.len() && le <= lm.len());
        // SAFETY: both buffers hold the plan's cells (checked above) and do not overlap.
        unsafe { p.to_lm(dram.as_ptr(), lm.as_mut_ptr()) };
        assert_eq!(
            lm,
            [
                0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 7, 0, 0, 0, 0, 8, 9, 10, 11, 0, 0, 0, 0
            ]
        );
        let mut back = vec![0u8; 12];
        // SAFETY: as above.
        unsafe { p.to_dram(lm.as_ptr(), back.as_mut_ptr()) };
        assert_eq!(back, dram);
    }

    #[test]
    fn an_offset_past_usize_is_refused() {
        let n = nest(&[(2, u64::MAX, 0, 0)]);
        assert_eq!(Plan::new(&n, F32_ON_8), None);
    }
}
