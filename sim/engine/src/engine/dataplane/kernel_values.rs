//! A kernel's values: every distinct output shard computed once from its inputs, read in
//! place from the LMs (matrix contractions and convolutions by their fast paths, any
//! other kernel element by element), then copied to every PE that holds it.

use super::{Functional, LmPtr, lm_ptrs};
use crate::engine::contract::{Contraction, OutCells};
use crate::engine::conv::ConvPlan;
use crate::engine::{Engine, Resident};
use crate::net::{self, Facts, PeFact};
use mnsim_arch::{DType, TensorLayout};
use mnsim_kernels::elem;
use rayon::prelude::*;

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
    fn input_view<'a>(&self, lms: &'a [LmPtr], r: &Resident, dtype: DType) -> InputView<'a> {
        let l = &r.layout;
        let wb = self.state.machine.word_bytes as usize;
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
    pub(in crate::engine) fn move_kernel(
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
        let wb = self.state.machine.word_bytes as usize;
        let fp = layout.footprint_words() as usize;
        let region = (layout.footprint_words() * layout.time_span()) as usize * wb;
        let base = offset as usize * wb;
        let used = Self::used_table(layout);
        let lms = lm_ptrs(&mut self.state.sw.world);
        let views: Vec<InputView> = inputs
            .iter()
            .map(|&(r, d)| self.input_view(&lms, r, d))
            .collect();
        let width = views.iter().map(|v| v.tables.width()).max().unwrap_or(3);
        // Matrix contractions: each shard's rows and columns gathered once, then a tight
        // loop (`contract.rs`), the same values as element by element.
        let contraction = (!self.opts.per_element_kernels && extents.len() == 1)
            .then(|| Contraction::new(k, inputs, in_rt, out_rt.len(), wb))
            .flatten();
        // Convolutions: each operand found by per-axis terms, each shard's window taps
        // listed once per output position (`conv.rs`), the same values again.
        let conv = (!self.opts.per_element_kernels)
            .then(|| ConvPlan::new(k, inputs, in_rt, wb))
            .flatten();
        let cells = OutCells { fp, wb, eb, dtype };
        // The PEs of every distinct shard, by key (PE order inside).
        let positions = &self.state.positions;
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
