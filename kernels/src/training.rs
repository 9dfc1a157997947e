//! What resolution asks of the training kernels ([`Kernel::Eltwise`], [`Kernel::Norm`]):
//! their `eps` and the axes they name. (Their host reference is every output element by
//! the kernels' own element functions: [`crate::KernelFamily::reference`]'s default.)

use crate::kernel::Kernel;

/// The `eps` of a training kernel that has one (BatchNorm, every Norm).
pub fn training_eps(k: &Kernel) -> Option<f64> {
    k.with_family(|f| f.training_eps())
}

/// The axes of its first input a training kernel names (Norm's normalised and
/// parameter axes, GenIndex's and BatchNormBackward's axis, Normalize's statistics and
/// parameter axes), for checks against its rank.
pub fn training_axes(k: &Kernel) -> Option<Vec<usize>> {
    k.with_family(|f| f.training_axes())
}
