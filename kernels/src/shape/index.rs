//! Index maps: which input elements an output element reads, axis by axis (each
//! family's, [`crate::KernelFamily::index_map`], after the output shape is checked).

use super::{AxisSource, InputMap, err, output_shape};
use crate::kernel::{ErrorKind, Kernel, KernelError, fmt_dims};

/// Per input, how each of its axes takes its index: from an output axis, from a
/// reduced variable, or fixed at 0 (broadcast). `out_shape` must be the output shape
/// of `k` on `in_shapes`.
///
/// For Softmax and LayerNorm the normalised axis of the input is `Reduced(0)`: the
/// output element at position `i` of that axis needs every position of it.
pub fn index_map(
    k: &Kernel,
    in_shapes: &[&[u64]],
    out_shape: &[u64],
) -> Result<Vec<InputMap>, KernelError> {
    let want = output_shape(k, in_shapes)?;
    if want != out_shape {
        return Err(err(
            ErrorKind::Layout,
            format!(
                "{k}: the output shape is {}, but {} was given",
                fmt_dims(&want),
                fmt_dims(out_shape)
            ),
        ));
    }
    k.with_family(|f| f.index_map(in_shapes, out_shape))
}

/// The axes `s` aligned to the output's trailing axes from `off` on (numpy
/// broadcasting): each takes its output axis's index, or 0 where it is 1 and the output
/// is larger.
pub(crate) fn aligned(s: &[u64], off: usize, out_shape: &[u64]) -> Vec<AxisSource> {
    (s.iter().enumerate())
        .map(|(a, &d)| {
            if d == 1 && out_shape[off + a] != 1 {
                AxisSource::Broadcast
            } else {
                AxisSource::Out(off + a)
            }
        })
        .collect()
}
