//! Closed-form facts: per-PE facts of a layout (which data a PE holds, its bytes and
//! real elements) and a DRAM access's burst efficiency, from the layout alone.
//!
//! Invariant: pure functions of layouts and the machine; no element data is read. Timing
//! mode charges every op from these facts; functional mode counts the same facts while it
//! moves bytes, and a test asserts both agree.

use super::Engine;
use crate::net::{self, Facts, PeFact};
use mnsim_arch::layout::Class;
use mnsim_arch::{DType, TensorLayout, XlaLayout};
use std::collections::HashMap;

impl Engine {
    /// The key of the data a PE holds under `layout`: positions at split and partial
    /// levels (mixed radix); `NONE` if the PE holds nothing, or (with `one_replica`)
    /// if it is not the first replica. `skip` drops one level from the key (reduced key).
    pub(super) fn key(
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

    pub(super) fn used_table(layout: &TensorLayout) -> Vec<Vec<bool>> {
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

    /// The facts of `layout` as a product of per-level choices: per level, the
    /// positions that take part with their key digit and reduced-key digit (the same
    /// rule as `key`), the bytes of a PE's shard, and its real elements when no shard is
    /// padded.
    pub(super) fn closed_product(
        layout: &TensorLayout,
        partial: &[usize],
        runtime: &[u64],
        one_replica: bool,
        skip: Option<usize>,
    ) -> net::Product {
        let used = Self::used_table(layout);
        let levels = layout
            .levels()
            .iter()
            .enumerate()
            .map(|(i, lv)| {
                let part = partial.contains(&i);
                let digit = |p: u64, include: bool| {
                    let d = if include { p } else { 0 };
                    (d, if skip == Some(i) { 0 } else { d })
                };
                let positions = if lv.replicated {
                    let n = if one_replica && !part { 1 } else { lv.fanout };
                    (0..n)
                        .map(|p| {
                            let (d, r) = digit(p, part);
                            (p, d, r)
                        })
                        .collect()
                } else {
                    (0..lv.fanout)
                        .filter(|&p| used[i][p as usize])
                        .map(|p| {
                            let (d, r) = digit(p, true);
                            (p, d, r)
                        })
                        .collect()
                };
                net::Choices {
                    fanout: lv.fanout,
                    positions,
                }
            })
            .collect();
        net::Product {
            levels,
            bytes: layout.words_per_pe().saturating_mul(layout.word_bytes()),
            valid: (runtime == layout.padded_shape()).then(|| layout.elems_per_pe()),
        }
    }

    /// Per-PE facts in closed form (timing mode, and the source side of moves), of the
    /// PEs that take part only: the cartesian product of the positions each level lets
    /// take part ([`Engine::closed_product`]), walked in PE order. Work and memory follow
    /// the PEs the layout touches, not the machine's size.
    pub(super) fn closed_facts(
        &self,
        layout: &TensorLayout,
        partial: &[usize],
        runtime: &[u64],
        one_replica: bool,
        skip: Option<usize>,
    ) -> Facts {
        Self::expand(
            layout,
            &Self::closed_product(layout, partial, runtime, one_replica, skip),
            runtime,
            skip.is_some(),
        )
    }

    /// The per-PE facts a product stands for, in PE order.
    fn expand(
        layout: &TensorLayout,
        product: &net::Product,
        runtime: &[u64],
        reduced_keys: bool,
    ) -> Facts {
        let choices: Vec<&[(u64, u64, u64)]> = product
            .levels
            .iter()
            .map(|c| c.positions.as_slice())
            .collect();
        let count = choices
            .iter()
            .try_fold(1usize, |a, c| a.checked_mul(c.len()))
            .unwrap_or(usize::MAX);
        if count == 0 {
            return Vec::new();
        }
        let fan: Vec<u64> = product.levels.iter().map(|l| l.fanout).collect();
        let bytes = product.bytes;
        let mut valid_cache: HashMap<u64, u64> = HashMap::new();
        let mut out: Facts = Vec::with_capacity(count.min(1 << 20));
        // An odometer over the choices, most significant level first: PE order.
        let mut at = vec![0usize; choices.len()];
        let mut pos = vec![0u64; choices.len()];
        loop {
            let (mut pe, mut key, mut reduced) = (0u64, 0u64, 0u64);
            for (i, c) in choices.iter().enumerate() {
                let (p, d, r) = c[at[i]];
                pos[i] = p;
                pe = pe * fan[i] + p;
                key = key * fan[i] + d;
                reduced = reduced * fan[i] + r;
            }
            let valid = match product.valid {
                Some(v) => v,
                None => *valid_cache
                    .entry(key)
                    .or_insert_with(|| layout.shard(&pos).map_or(0, |s| s.valid_elems(runtime))),
            };
            out.push((
                pe,
                PeFact {
                    key,
                    reduced_key: if reduced_keys { reduced } else { key },
                    bytes,
                    valid,
                },
            ));
            // Next combination.
            let mut i = choices.len();
            loop {
                if i == 0 {
                    return out;
                }
                i -= 1;
                at[i] += 1;
                if at[i] < choices[i].len() {
                    break;
                }
                at[i] = 0;
            }
        }
    }

    /// Burst efficiency of reading (or writing) `layout`'s data from a DRAM in
    /// `xla`: contiguous runs of one DRAM node's portion along the DRAM's minor-most
    /// dimensions, in whole bursts.
    pub(super) fn burst_efficiency(
        &self,
        layout: &TensorLayout,
        xla: &XlaLayout,
        runtime: &[u64],
        dtype: DType,
    ) -> f64 {
        let burst = self.state.machine.dram.burst_bytes.max(1);
        let addr = self.state.machine.addressable_levels();
        let d = self.state.topo.chain[self.state.topo.dram_at];
        // A level sub-axis distinguishes DRAM nodes when it can reach another node's range.
        let distinguishing = |class: Class, size: u64, stride: u64| -> bool {
            let Class::Level(i) = class else { return false };
            let a = &addr[i];
            let r: u64 = a.folded.iter().filter(|&&k| k > d).fold(1u64, |x, &k| {
                x.saturating_mul(self.state.machine.levels[k].count)
            });
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
                    .fold(1u64, u64::saturating_mul);
                run = run.min(tile.max(1));
            }
        } else {
            return 1.0;
        }
        let run_bytes = run.saturating_mul(dtype.bytes()).max(1);
        run_bytes as f64 / (run_bytes.div_ceil(burst) * burst) as f64
    }
}
