//! The per-element evaluation the functional engine runs on each PE: one output
//! element from the input elements it reads, in `f64` (each family's
//! [`crate::KernelFamily::eval`]).

use crate::family::Visit;
use crate::kernel::Kernel;
use std::ops::Range;

/// One output element of `k` at `out_idx`, from its inputs, in `f64`.
///
/// `fetch(input, index)` reads an input element at a logical index. `reduced(r)` is
/// the range of reduced variable `r` (see [`crate::reduced_extents`]) this unit holds:
/// the whole range normally, the local part where the output is partial (the result
/// is then this unit's partial sum; an empty range gives the reduction's identity).
/// For Softmax and LayerNorm it must be the whole normalised axis.
/// `in_shapes` are the inputs' logical shapes (for broadcasting and batch axes).
/// When the local part is not a range, use [`eval_share`].
pub fn eval(
    k: &Kernel,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    reduced: &dyn Fn(usize) -> Range<u64>,
    in_shapes: &[&[u64]],
) -> f64 {
    eval_core(
        k,
        out_idx,
        fetch,
        &|r, f| {
            for t in reduced(r) {
                f(t)
            }
        },
        in_shapes,
    )
}

/// Like [`eval`], with the values of every reduced variable this unit holds given as a
/// list per variable (as [`crate::reduced_share`] computes them).
pub fn eval_share(
    k: &Kernel,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    share: &[Vec<u64>],
    in_shapes: &[&[u64]],
) -> f64 {
    eval_core(
        k,
        out_idx,
        fetch,
        &|r, f| {
            for &t in &share[r] {
                f(t)
            }
        },
        in_shapes,
    )
}

/// One output element of `k` at `out_idx` (for [`eval`] and [`eval_share`]), `visit`
/// giving the values of each reduced variable the unit holds.
fn eval_core(
    k: &Kernel,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    visit: Visit<'_>,
    in_shapes: &[&[u64]],
) -> f64 {
    k.with_family(|f| f.eval(out_idx, fetch, visit, in_shapes))
}
