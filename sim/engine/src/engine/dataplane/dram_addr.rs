//! Where a logical element lies in a DRAM buffer: its offset (untiled by strides, tiled
//! by the layout), and a shard's walk over DRAM per cell, by runs or in closed form.

use crate::engine::copy::{LmGeometry, Plan};
use mnsim_arch::XlaLayout;

/// Offsets of logical elements in a DRAM buffer.
pub(in crate::engine) struct DramAddr {
    dims: Vec<u64>,
    /// Untiled: element stride per logical axis.
    strides: Option<Vec<u64>>,
    layout: XlaLayout,
}

impl DramAddr {
    /// Walks a shard, calling `cell(real, dram_element, addr, w, t)` per cell: untiled
    /// DRAM keeps the offset incrementally, tiled DRAM computes it per element.
    pub(in crate::engine) fn walk(
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
    pub(in crate::engine) fn runs(
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
    pub(super) fn plan(
        &self,
        shard: &mnsim_arch::layout::Shard<'_>,
        runtime: &[u64],
        g: LmGeometry,
    ) -> Option<(Plan, u64, u64)> {
        let nest = shard.nest(self.strides.as_deref()?, runtime)?;
        let plan = Plan::new(&nest, g)?;
        Some((plan, nest.words(), nest.cells()))
    }

    pub(in crate::engine) fn new(layout: &XlaLayout, dims: &[u64]) -> DramAddr {
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
    pub(in crate::engine) fn offset(&self, idx: &[u64]) -> u64 {
        match &self.strides {
            Some(s) => idx.iter().zip(s).map(|(i, s)| i * s).sum(),
            None => self.layout.linear_index(&self.dims, idx).unwrap_or(0),
        }
    }
}
