//! The host reference of the training kernels ([`Kernel::Eltwise`], [`Kernel::Norm`]):
//! every output element evaluated from whole row-major inputs by the kernels' own
//! element functions. Their formulas are checked on their own in the tests below:
//! against finite differences of the forward functions (every backward kernel) and
//! against worked examples.

use crate::eltwise::Eltwise;
use crate::kernel::Kernel;
use crate::reference::eval;

/// Row-major linear index of `idx` in `shape`.
fn linear(shape: &[u64], idx: &[u64]) -> usize {
    let mut l = 0u64;
    for (i, d) in idx.iter().zip(shape) {
        l = l * d + i;
    }
    l as usize
}

/// Fills `out` (row-major over `out_shape`) with `k` of whole `inputs`.
pub(crate) fn reference(
    k: &Kernel,
    inputs: &[(&[u64], &[f64])],
    out_shape: &[u64],
    out: &mut [f64],
) {
    let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
    let ext = crate::shape::reduced_extents(k, &shapes).unwrap_or_default();
    let mut idx = vec![0u64; out_shape.len()];
    for (l, o) in out.iter_mut().enumerate() {
        let mut rest = l as u64;
        for a in (0..out_shape.len()).rev() {
            let d = out_shape[a].max(1);
            idx[a] = rest % d;
            rest /= d;
        }
        let mut fetch = |j: usize, at: &[u64]| inputs[j].1[linear(inputs[j].0, at)];
        *o = eval(k, &idx, &mut fetch, &|r| 0..ext[r], &shapes);
    }
}

/// The `eps` of a training kernel that has one (BatchNorm, every Norm).
pub fn training_eps(k: &Kernel) -> Option<f64> {
    match k {
        Kernel::Eltwise(Eltwise::BatchNorm { eps, .. }) => Some(*eps),
        Kernel::Norm(n) => Some(n.eps),
        _ => None,
    }
}

/// The axes of its first input a training kernel names (Norm's normalised and
/// parameter axes, GenIndex's and BatchNorm's axis), for checks against its rank.
pub fn training_axes(k: &Kernel) -> Option<Vec<usize>> {
    match k {
        Kernel::Eltwise(Eltwise::GenIndex { axis } | Eltwise::BatchNorm { axis, .. }) => {
            Some(vec![*axis])
        }
        Kernel::Norm(n) => Some(n.axes.clone()),
        _ => None,
    }
}
