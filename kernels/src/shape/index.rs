//! Index maps: which input elements an output element reads, axis by axis.

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
    use AxisSource::*;
    let out_rank = out_shape.len();
    let map = |axes: Vec<AxisSource>| InputMap { axes };
    Ok(match k {
        Kernel::Unary(_)
        | Kernel::Clamp { .. }
        | Kernel::Elu { .. }
        | Kernel::Softmax { .. }
        | Kernel::LayerNorm { .. } => {
            let axes = (0..out_rank)
                .map(|h| match k {
                    Kernel::Softmax { axis } | Kernel::LayerNorm { axis, .. } if *axis == h => {
                        Reduced(0)
                    }
                    _ => Out(h),
                })
                .collect();
            vec![map(axes)]
        }
        Kernel::Binary(_) | Kernel::Select => in_shapes
            .iter()
            .map(|s| map(aligned(s, out_rank - s.len(), out_shape)))
            .collect(),
        Kernel::MatMul | Kernel::BatchMatMul => {
            let batch: Vec<AxisSource> = (0..out_rank - 2).map(Out).collect();
            let mut a = batch.clone();
            a.extend([Out(out_rank - 2), Reduced(0)]);
            let mut b = batch;
            b.extend([Reduced(0), Out(out_rank - 1)]);
            vec![map(a), map(b)]
        }
        Kernel::ReduceAxes {
            axes, keep_dims, ..
        } => vec![map(reduce_axes_map(in_shapes[0].len(), axes, *keep_dims))],
        Kernel::BiasAdd { axis } => {
            vec![map((0..out_rank).map(Out).collect()), map(vec![Out(*axis)])]
        }
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => {
            let nb = out_rank - 2;
            let side = |s: &[u64], t: bool, first: AxisSource, second: AxisSource| {
                let mut m = aligned(&s[..s.len() - 2], nb - (s.len() - 2), out_shape);
                m.extend(if t { [second, first] } else { [first, second] });
                map(m)
            };
            vec![
                side(in_shapes[0], *transpose_a, Out(nb), Reduced(0)),
                side(in_shapes[1], *transpose_b, Reduced(0), Out(nb + 1)),
            ]
        }
        Kernel::Reshape { .. }
        | Kernel::Concat { .. }
        | Kernel::Slice { .. }
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_) => {
            return Err(err(
                ErrorKind::Layout,
                format!(
                    "{k}: an output element does not read its input along fixed axes (no per-axis index map)"
                ),
            ));
        }
        Kernel::Eltwise(e) => e.index_map(in_shapes, out_shape),
        Kernel::Expand { .. } => crate::indexed::expand_map(in_shapes[0], out_shape),
        Kernel::DynamicSlice { dynamic, .. } => {
            crate::indexed::dynamic_slice_map(in_shapes, dynamic)
        }
        Kernel::DynamicUpdateSlice { dynamic } => {
            crate::indexed::dynamic_update_map(in_shapes, dynamic)
        }
        Kernel::Norm(n) => n.index_map(in_shapes),
        Kernel::Quant(q) => q.index_map(in_shapes, out_shape),
        Kernel::Transpose { perm } => {
            let mut m = vec![Broadcast; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                m[p] = Out(i);
            }
            vec![map(m)]
        }
    })
}

/// The axes `s` aligned to the output's trailing axes from `off` on (numpy
/// broadcasting): each takes its output axis's index, or 0 where it is 1 and the output
/// is larger.
fn aligned(s: &[u64], off: usize, out_shape: &[u64]) -> Vec<AxisSource> {
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

/// ReduceAxes's input map over `rank` axes: the reduced ones in the order `axes` names
/// them, the others the output's axes in order (a kept reduced axis takes an output
/// axis of length 1 too).
fn reduce_axes_map(rank: usize, axes: &[usize], keep_dims: bool) -> Vec<AxisSource> {
    let mut h = 0;
    (0..rank)
        .map(|a| match axes.iter().position(|&x| x == a) {
            Some(r) => {
                h += usize::from(keep_dims);
                AxisSource::Reduced(r)
            }
            None => {
                h += 1;
                AxisSource::Out(h - 1)
            }
        })
        .collect()
}
