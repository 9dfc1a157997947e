//! Compute cycles of a kernel (docs/kernels.md): SIMD, so padding and idle PEs cost like real
//! work; rates come from the machine's per-dtype figures.
//!
//! - **Vector kernels** (and MatMul in a dtype without a matrix rate): every PE does the
//!   work of its own shard, all `Time` steps included:
//!   `cycles = ceil((in_per_pe · f_in + out_per_pe · f_out) / vector FLOP per cycle per PE)`
//!   with `(f_in, f_out)` from [`Kernel::flops_per_element`] and `*_per_pe` the padded
//!   elements one PE holds.
//! - **MatMul, BatchMatMul** on the matrix unit (one per node of the matrix level): each
//!   unit computes a block of `B_u` batches × `M_u × N_u` outputs over a contraction of
//!   `K_u`, counted from the sub-axes below the unit (memory, `W`, `Time`, levels
//!   below the unit level), each side padded up to the dtype's tile `(tm, tn, tk)`:
//!   `cycles = B_u · ceil(M_u/tm) · ceil(N_u/tn) · ceil(K_u/tk) · ceil(2·tm·tn·tk / FLOP per cycle per unit)`.
//!
//! The rates are those of the kernel's compute dtype ([`crate::precision::compute_dtype`]:
//! a matrix kernel's widest operand, a vector kernel's widest operand or result), or of
//! the type it is promoted to when the machine has none ([`crate::precision`]).

use crate::kernel::{ErrorKind, Kernel, KernelError, fmt_dims, numel};
use crate::legality::{Legality, Unit};
use crate::shape::output_shape;
use mnsim_arch::layout::{Class, TensorLayout};
use mnsim_arch::{DType, Machine};

/// The compute cost of one kernel call.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCost {
    /// Cycles of the whole machine (all units run in lock-step).
    pub cycles: u64,
    /// Useful FLOP: on the logical (or runtime) sizes, without padding, replicas or
    /// idle units. For vector kernels, the per-element FLOP of
    /// [`Kernel::flops_per_element`] times the real elements; 0 for a kernel that only
    /// moves data ([`Kernel::moves_data`]).
    pub flops: u64,
    /// `"matrix"` or `"vector"`.
    pub unit: &'static str,
    /// Peak FLOP per cycle of the whole machine on that unit in that dtype.
    pub peak_flops_per_cycle: f64,
}

impl KernelCost {
    /// Achieved useful FLOP per cycle (0 for zero cycles).
    pub fn flops_per_cycle(&self) -> f64 {
        if self.cycles == 0 {
            0.0
        } else {
            self.flops as f64 / self.cycles as f64
        }
    }

    /// Achieved fraction of peak, `flops_per_cycle / peak_flops_per_cycle`.
    pub fn utilisation(&self) -> f64 {
        if self.peak_flops_per_cycle > 0.0 {
            self.flops_per_cycle() / self.peak_flops_per_cycle
        } else {
            0.0
        }
    }
}

/// Padded length one unit at addressable level `unit_level` holds of `axis`: the
/// product of the sizes of the axis's sub-axes in memory, `W`, `Time`, or a level
/// below the unit.
pub fn per_unit_extent(l: &TensorLayout, axis: usize, unit_level: usize) -> u64 {
    l.groups()[axis]
        .iter()
        .filter(|s| match s.class {
            Class::Mem | Class::W | Class::Time => true,
            Class::Level(j) => j > unit_level,
        })
        .fold(1u64, |a, s| a.saturating_mul(s.size))
}

pub(crate) fn div_ceil(a: u128, b: u128) -> u128 {
    if b == 0 { 0 } else { a.div_ceil(b) }
}

pub(crate) fn clamp(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// The cost of `k` on `inputs` writing `out`, as [`crate::check`] found it legal,
/// in `dtype` on machine `m`.
///
/// `runtime` gives the inputs' runtime shapes when dynamic dimensions are bound below
/// the layouts' logical shapes; `None` uses the logical shapes. They only change the
/// useful FLOP: cycles follow the layouts (a bounded dimension is laid out, and
/// computed, at its bound).
///
/// Errors: layouts whose shapes do not fit the kernel; the machine has no vector rate
/// for `dtype` where the vector unit is used; runtime shapes that do not fit the kernel.
pub fn cost(
    k: &Kernel,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    legality: &Legality,
    m: &Machine,
    dtype: DType,
    runtime: Option<&[&[u64]]>,
) -> Result<KernelCost, KernelError> {
    let logical: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    let logical_in = logical.clone();
    let want = output_shape(k, &logical)?;
    if want != out.logical_shape() {
        return Err(KernelError::new(
            ErrorKind::Layout,
            format!(
                "{k}: the output has shape {}, but the inputs give {}",
                fmt_dims(out.logical_shape()),
                fmt_dims(&want)
            ),
        ));
    }
    let in_dtypes: Vec<DType> = inputs.iter().map(|l| l.dtype()).collect();
    let dtype = crate::precision::compute_dtype(k, &in_dtypes, dtype);
    k.with_family(|f| f.check_dtypes(in_dtypes[0], out.dtype()))?;
    let rt: Vec<&[u64]> = runtime.map_or(logical, <[&[u64]]>::to_vec);
    let out_rt = output_shape(k, &rt)?;
    let leaf = m.addressable_count().saturating_sub(1);

    if let Some(own) = k.with_family(|f| f.own_cost(inputs, out, legality, m, dtype, &rt)) {
        return own;
    }
    if k.is_matmul() {
        let r = out.logical_shape().len();
        let (a, b) = (inputs[0], inputs[1]);
        // The contraction's axis in each operand.
        let (la, lb) = (logical_in[0], logical_in[1]);
        let axes = k.with_family(|f| (f.contracted_axis_a(la, lb), f.contracted_axis_b(la, lb)));
        let (Some(ka), Some(kb)) = axes else {
            return Err(KernelError::new(
                ErrorKind::Layout,
                format!(
                    "{k}: no contraction axes in `a` {} and `b` {}",
                    fmt_dims(la),
                    fmt_dims(lb)
                ),
            ));
        };
        let kk = rt[0].get(ka).copied().unwrap_or(0);
        let useful = 2u128 * numel(&out_rt) as u128 * kk as u128;
        let matrix = (legality.unit == Unit::Mab)
            .then(|| crate::precision::matrix_rate(m, dtype).map(|(_, f, t)| (f, t)))
            .flatten();
        let u = if matrix.is_some() {
            legality.unit_level
        } else {
            leaf
        };
        let batch: u128 = (0..r - 2)
            .map(|h| per_unit_extent(out, h, u) as u128)
            .product();
        let mu = per_unit_extent(out, r - 2, u) as u128;
        let nu = per_unit_extent(out, r - 1, u) as u128;
        let ku = per_unit_extent(a, ka, u).min(per_unit_extent(b, kb, u)) as u128;
        if let Some((f, t)) = matrix {
            let per_tile = ((2 * t.m * t.n * t.k) as f64 / f).ceil() as u128;
            let tiles = batch
                * div_ceil(mu, t.m as u128)
                * div_ceil(nu, t.n as u128)
                * div_ceil(ku, t.k as u128);
            return Ok(KernelCost {
                cycles: clamp(tiles * per_tile),
                flops: clamp(useful),
                unit: "matrix",
                peak_flops_per_cycle: f * m.matrix_units() as f64,
            });
        }
        let rate = vector_rate(k, m, dtype)?;
        let work = 2 * batch * mu * nu * ku;
        return Ok(KernelCost {
            cycles: clamp((work as f64 / rate).ceil() as u128),
            flops: clamp(useful),
            unit: "vector",
            peak_flops_per_cycle: rate * m.leaf_count() as f64,
        });
    }

    let in_dtypes: Vec<DType> = inputs.iter().map(|l| l.dtype()).collect();
    let rate = vector_rate(k, m, k.rate_dtype(&in_dtypes, dtype))?;
    let (fin, fout) = k.flops_per_element();
    let work =
        inputs[0].elems_per_pe() as u128 * fin as u128 + out.elems_per_pe() as u128 * fout as u128;
    let useful = if k.moves_data() {
        0
    } else {
        numel(rt[0]) as u128 * fin as u128 + numel(&out_rt) as u128 * fout as u128
    };
    Ok(KernelCost {
        cycles: clamp((work as f64 / rate).ceil() as u128),
        flops: clamp(useful),
        unit: "vector",
        peak_flops_per_cycle: rate * m.leaf_count() as f64,
    })
}

pub(crate) fn vector_rate(
    k: &dyn std::fmt::Display,
    m: &Machine,
    dtype: DType,
) -> Result<f64, KernelError> {
    match crate::precision::vector_rate(m, dtype) {
        Some((_, r)) => Ok(r),
        None => {
            let have: Vec<String> = m.compute.vector.keys().map(|d| d.to_string()).collect();
            let mut chain = Vec::new();
            let mut c = crate::precision::promote(dtype);
            while let Some(d) = c {
                chain.push(d.to_string());
                c = crate::precision::promote(d);
            }
            Err(KernelError::new(
                ErrorKind::Rate,
                format!(
                    "{k}: {} has no vector rate for {dtype} nor for the types it would run at ({}) \
                     (compute.vector has {}); add `{dtype:?}: <FLOP per cycle per PE>` to the machine's compute.vector",
                    m.name,
                    chain.join(", "),
                    have.join(", ")
                ),
            ))
        }
    }
}
