//! How close a simulated result must be to the host reference for `verify`.
//!
//! A result `got` matches the reference `want` when `|got − want| ≤ abs + rel·|want|`
//! (see [`within`]). The engine computes each element in `f64` and rounds it once to
//! the tensor's dtype; partial results combine in the dtype's own precision. The
//! tolerances cover that rounding with room to spare, growing with √n for a reduction
//! of length n (random rounding errors add up like a random walk), for operands of
//! magnitude about 1:
//!
//! | dtype | abs = rel |
//! |---|---|
//! | f64 | 1e-12 · √n |
//! | f32 | 1e-5 · √n |
//! | f16 | 1e-2 · √n (unit roundoff 4.9e-4: loose) |
//! | bf16 | 4e-2 · √n (unit roundoff 3.9e-3: loose) |
//! | f8_e4m3 | 0.125 · √n (unit roundoff 2⁻⁴) |
//! | f8_e5m2 | 0.25 · √n (unit roundoff 2⁻³) |
//! | integers | abs 1, rel 0 (the result truncates toward zero; compare after converting the reference through the dtype) |
//! | pred | exact |
//!
//! A Slice is exact in every dtype (it copies its input's elements: `(0, 0)`).
//!
//! n is the reduction length for MatMul, BatchMatMul, GeneralMatMul, Conv (the
//! contraction), ReduceAxes Add, Mean, L1 and L2, Softmax, LayerNorm and Norm (the
//! normalised axes), and 1 for everything else: each family's
//! [`crate::KernelFamily::roundings`].

use crate::kernel::Kernel;
use mnsim_arch::DType;

/// `(abs, rel)` tolerance for the output of `k` in `dtype`, where `reduction_len` is
/// the length of the kernel's reduction (the contraction, the reduced elements per
/// output, the normalised axis; ignored for elementwise kernels).
pub fn tolerance(dtype: DType, k: &Kernel, reduction_len: u64) -> (f64, f64) {
    // A copy of input elements (a slice), in its dtype, is exact.
    let Some(n) = k.with_family(|f| f.roundings(reduction_len)) else {
        return (0.0, 0.0);
    };
    let grow = (n as f64).sqrt();
    let base = match dtype {
        DType::F64 => 1e-12,
        DType::F32 => 1e-5,
        DType::F16 => 1e-2,
        DType::BF16 => 4e-2,
        DType::F8E4M3 => 0.125,
        DType::F8E5M2 => 0.25,
        DType::Pred => return (0.0, 0.0),
        _ => return (1.0, 0.0),
    };
    (base * grow, base * grow)
}

/// Whether `got` matches `want` within `(abs, rel)`: `|got − want| ≤ abs + rel·|want|`.
/// Two NaNs match, and infinities match themselves.
pub fn within(got: f64, want: f64, tol: (f64, f64)) -> bool {
    if got.is_nan() || want.is_nan() {
        return got.is_nan() && want.is_nan();
    }
    if got == want {
        return true;
    }
    (got - want).abs() <= tol.0 + tol.1 * want.abs()
}
