//! Load and Store: a tensor's bytes from its DRAM buffer into the PEs' LMs and back, per
//! shard in closed form, by runs or per cell.

use super::dram_addr::DramAddr;
use super::elem_copy::{copy_elem, copy_strided, copy_strided_raw, run_bytes, run_words};
use super::{Functional, SyncPtr, walk_shards};
use crate::engine::buffers::zeroed;
use crate::engine::copy::LmGeometry;
use crate::engine::{DramTensor, Engine, ErrorKind, Resident, SimError};
use crate::net::Facts;
use crate::program::TensorId;
use mnsim_arch::{TensorLayout, XlaLayout};

impl Engine {
    pub(in crate::engine) fn move_load(
        &mut self,
        _: Functional,
        id: TensorId,
        layout: &TensorLayout,
        offset: u64,
    ) -> Result<Facts, SimError> {
        let t = &self.state.tensors[id];
        let dram = (t.dram.as_ref()).ok_or_else(|| ErrorKind::NotInDram(t.name.clone()))?;
        let addr = DramAddr::new(&dram.layout, &t.runtime);
        let (eb, wb) = (
            t.dtype.bytes() as usize,
            self.state.machine.word_bytes as usize,
        );
        let fp = layout.footprint_words() as usize;
        let (runtime, src, base) = (&t.runtime, &dram.data, offset as usize);
        Ok(walk_shards(
            &mut self.state.sw.world,
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
        ))
    }

    pub(in crate::engine) fn move_store(
        &mut self,
        _: Functional,
        id: TensorId,
        r: &Resident,
        xla: &XlaLayout,
    ) -> Facts {
        let t = &mut self.state.tensors[id];
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
        let wb = self.state.machine.word_bytes as usize;
        let fp = r.layout.footprint_words() as usize;
        walk_shards(
            &mut self.state.sw.world,
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
}
