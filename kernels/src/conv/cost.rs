//! A convolution's cycles as an implicit GEMM.

use super::{Conv, ConvPass};
use crate::kernel::KernelError;

/// Cycles of a convolution as an implicit GEMM (docs/kernels.md): per unit, the groups
/// it holds times `⌈M/tm⌉·⌈N/tn⌉·⌈K/tk⌉` tiles, where (per group) Forward has
/// `M = batch × output positions`, `N = output channels`, `K = input channels × window`;
/// BackwardData (a GEMM and a col2im) `M = batch × output positions`, `N = input
/// channels × window`, `K = output channels`; BackwardWeights `M = output channels`, `N = input channels ×
/// window`, `K = batch × output positions`. The per-unit extents come from the
/// layouts' sub-axes below the unit (padded, as MatMul's). Without a matrix rate the
/// PE's vector unit does `2·M·N·K` per group.
pub(crate) fn cost(
    c: &Conv,
    inputs: &[&mnsim_arch::layout::TensorLayout],
    out: &mnsim_arch::layout::TensorLayout,
    legality: &crate::legality::Legality,
    m: &mnsim_arch::Machine,
    dtype: mnsim_arch::DType,
    runtime: &[&[u64]],
) -> Result<crate::cost::KernelCost, KernelError> {
    use crate::cost::{KernelCost, clamp, div_ceil, per_unit_extent, vector_rate};
    let logical: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    let g = c.geometry(&logical)?;
    let useful = c.flops(runtime)?;
    let matrix = (legality.unit == crate::legality::Unit::Mab)
        .then(|| {
            let mx = &m.compute.matrix;
            Some((*mx.flops.get(&dtype)?, *mx.tile.get(&dtype)?))
        })
        .flatten();
    let leaf = m.addressable_count().saturating_sub(1);
    let u = if matrix.is_some() {
        legality.unit_level
    } else {
        leaf
    };
    let d = c.strides.len();
    let r = d + 2;
    let (db, dc, ds) = c.data_axes(r);
    let (wo, wi, ws) = c.weight_axes(r);
    let pu = |l: &mnsim_arch::layout::TensorLayout, a: usize| per_unit_extent(l, a, u) as u128;
    let prod = |l: &mnsim_arch::layout::TensorLayout, from: usize| -> u128 {
        (from..from + d).map(|a| pu(l, a)).product()
    };
    let (cg, og) = ((g.c / c.groups) as u128, (g.o / c.groups) as u128);
    // (groups on the unit, M, N, K) per group.
    let (gu, mu, nu, ku) = match c.pass {
        ConvPass::Forward => {
            let ou = pu(out, dc);
            let w = inputs[1];
            (
                ou.div_ceil(og.max(1)),
                pu(out, db) * prod(out, ds),
                ou.min(og),
                pu(w, wi) * prod(w, ws),
            )
        }
        ConvPass::BackwardData => {
            // dcol = wᵀ · dy, then col2im: M runs over the dy positions that reach the
            // unit's share of dx (in proportion, rounded up).
            let cu = pu(out, dc);
            let w = inputs[1];
            let positions: u128 = (0..d)
                .map(|i| {
                    let (share, whole) = (pu(out, ds + i), g.input[i].max(1) as u128);
                    (share * g.output[i] as u128).div_ceil(whole)
                })
                .product();
            (
                cu.div_ceil(cg.max(1)),
                pu(out, db) * positions,
                cu.min(cg) * prod(w, ws),
                pu(w, wo).min(og),
            )
        }
        ConvPass::BackwardWeights => {
            let ou = pu(out, wo);
            let dy = inputs[1];
            (
                ou.div_ceil(og.max(1)),
                ou.min(og),
                pu(out, wi) * prod(out, ws),
                pu(dy, db) * prod(dy, ds),
            )
        }
    };
    if let Some((f, t)) = matrix {
        let per_tile = ((2 * t.m * t.n * t.k) as f64 / f).ceil() as u128;
        let tiles =
            gu * div_ceil(mu, t.m as u128) * div_ceil(nu, t.n as u128) * div_ceil(ku, t.k as u128);
        return Ok(KernelCost {
            cycles: clamp(tiles.saturating_mul(per_tile)),
            flops: clamp(useful),
            unit: "matrix",
            peak_flops_per_cycle: f * m.matrix_units() as f64,
        });
    }
    let rate = vector_rate(&crate::family::Shown(c), m, dtype)?;
    let work = 2u128
        .saturating_mul(gu)
        .saturating_mul(mu)
        .saturating_mul(nu)
        .saturating_mul(ku);
    Ok(KernelCost {
        cycles: clamp((work as f64 / rate).ceil() as u128),
        flops: clamp(useful),
        unit: "vector",
        peak_flops_per_cycle: rate * m.leaf_count() as f64,
    })
}
