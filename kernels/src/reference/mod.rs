//! Values: a plain host reference for whole tensors (here), and the per-element
//! evaluation the functional engine runs on each PE (`element`). Both compute in `f64`.

mod element;

pub use element::{eval, eval_share};

use crate::kernel::{Kernel, numel};

/// Row-major strides of `shape`.
pub(crate) fn strides(shape: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Row-major linear index of `idx` in `shape`.
pub(crate) fn linear(shape: &[u64], idx: &[u64]) -> usize {
    let mut l = 0u64;
    for (i, d) in idx.iter().zip(shape) {
        l = l * d + i;
    }
    l as usize
}

/// The row-major multi-index of linear position `l` in `shape`.
pub(crate) fn unravel(shape: &[u64], mut l: u64, out: &mut [u64]) {
    for i in (0..shape.len()).rev() {
        let d = shape[i].max(1);
        out[i] = l % d;
        l /= d;
    }
}

/// The output of `k` on whole inputs `(shape, row-major values)`, row-major.
/// `out_shape` must be [`crate::output_shape`] of the inputs.
///
/// Written for obviousness, not speed: direct loops in `f64`. GELU is the tanh
/// approximation; Softmax subtracts the maximum; LayerNorm uses the population
/// variance and no affine parameters.
///
/// # Panics
/// If the shapes do not fit `k` or the values do not fill their shapes.
pub fn reference(k: &Kernel, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
    let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
    let want =
        crate::shape::output_shape(k, &shapes).expect("reference: shapes do not fit the kernel");
    assert_eq!(want, out_shape, "reference: wrong output shape");
    for (s, v) in inputs {
        assert_eq!(
            numel(s) as usize,
            v.len(),
            "reference: values do not fill their shape"
        );
    }
    k.with_family(|f| f.reference(inputs, out_shape))
}
