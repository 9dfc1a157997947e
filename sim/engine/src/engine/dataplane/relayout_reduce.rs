//! Relayout and Reduce: bytes moved from LM to LM, each PE reading the others' copies of a
//! snapshot of the source region.

use super::elem_copy::copy_elem;
use super::{Functional, walk_shards};
use crate::engine::{Engine, Resident};
use crate::net::Facts;
use crate::world::{Lm, Pe};
use mnsim_arch::{DType, TensorLayout};
use mnsim_kernels::elem::{self, Combine};

impl Engine {
    /// Copies every PE's bytes of a region out of the LMs (a snapshot for moves that
    /// read one PE and write another).
    fn snapshot(&mut self, offset: u64, words: u64) -> Vec<Vec<u8>> {
        let wb = self.state.machine.word_bytes as usize;
        let (a, b) = (offset as usize * wb, (offset + words) as usize * wb);
        let mut q = self.state.sw.world.query::<(&Pe, &Lm)>();
        let mut v: Vec<(u64, Vec<u8>)> = q
            .iter(&self.state.sw.world)
            .map(|(p, l)| (p.global, l.data[a..b].to_vec()))
            .collect();
        v.sort_unstable_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    }

    pub(in crate::engine) fn move_relayout(
        &mut self,
        _: Functional,
        src: &Resident,
        layout: &TensorLayout,
        offset: u64,
        runtime: &[u64],
        dtype: DType,
    ) -> Facts {
        let snap = self.snapshot(src.offset, src.words);
        let addr = self.state.machine.addressable_levels();
        let (eb, wb) = (
            dtype.bytes() as usize,
            self.state.machine.word_bytes as usize,
        );
        let (sfp, dfp) = (
            src.layout.footprint_words() as usize,
            layout.footprint_words() as usize,
        );
        walk_shards(
            &mut self.state.sw.world,
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
    pub(in crate::engine) fn move_reduce(
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
        let addr = self.state.machine.addressable_levels();
        let layout = &src.layout;
        let (eb, wb) = (
            dtype.bytes() as usize,
            self.state.machine.word_bytes as usize,
        );
        let fp = layout.footprint_words() as usize;
        let fan = layout.levels()[level].fanout;
        let rest: Vec<usize> = src
            .partial
            .iter()
            .copied()
            .filter(|&p| p != level)
            .collect();
        walk_shards(
            &mut self.state.sw.world,
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
