//! The per-level rules of the view kernels (Reshape, Concat, Slice): every element
//! keeps its position.

use super::axis_fn::{AxisFn, axis_fns, flat, position, same};
use super::messages::{bcast_with, group_text, needs_replica};
use crate::kernel::{ErrorKind, Kernel, KernelError, fmt_dims};
use mnsim_arch::layout::TensorLayout;

/// Reshape at level `x`: every element must keep its position. The row-major index
/// splits into groups of axes where the two shapes' suffix products meet; the
/// position is a sum of per-group parts, each zero at index 0, so the rule holds
/// when it holds within every group. Within a group, both positions are constant
/// between change points of their axes' functions, so only the first element of each
/// such block is checked (the first element that moves is one of them).
pub(super) fn reshape_level(
    k: &Kernel,
    input: &TensorLayout,
    out: &TensorLayout,
    names: &[String],
    x: usize,
) -> Result<(), KernelError> {
    if input.levels()[x].replicated {
        return Ok(());
    }
    if out.levels()[x].replicated {
        return Err(needs_replica(k, input, &names[0], &names[1], 0, x));
    }
    let (a, b) = (input.logical_shape(), out.logical_shape());
    let (fa, fb) = (axis_fns(input, x), axis_fns(out, x));
    let lv = &out.levels()[x].name;
    let mut ia = vec![0u64; a.len()];
    let mut ib = vec![0u64; b.len()];
    for (lo_a, hi_a, lo_b, hi_b) in crate::shape::reshape_groups(a, b) {
        // Where both sides' terms are digits of the group's index, equal terms need no
        // walk over its blocks (which a cyclic split makes one per element).
        let (ta, tb) = (
            flat(&a[lo_a..hi_a], &fa[lo_a..hi_a]),
            flat(&b[lo_b..hi_b], &fb[lo_b..hi_b]),
        );
        if ta.is_some() && ta == tb {
            continue;
        }
        let n = a[lo_a..hi_a].iter().fold(1u64, |p, &d| p.saturating_mul(d));
        let mut t = 0u64;
        while t < n {
            let next_a = block_end(t, &a[lo_a..hi_a], &fa[lo_a..hi_a], &mut ia[lo_a..hi_a]);
            let next_b = block_end(t, &b[lo_b..hi_b], &fb[lo_b..hi_b], &mut ib[lo_b..hi_b]);
            let pa = position(&fa[lo_a..hi_a], &ia[lo_a..hi_a]);
            let pb = position(&fb[lo_b..hi_b], &ib[lo_b..hi_b]);
            if pa != pb {
                let (na, nb) = (&names[0], &names[1]);
                return Err(KernelError::new(
                    ErrorKind::Illegal {
                        operand: 0,
                        level: x,
                    },
                    format!(
                        "{k}: element {} of `{na}` is at {lv} position {pa} but the output `{nb}` puts it (as {}) at {lv} \
                         position {pb}; every element must stay where it is. Relayout `{na}` to split over {lv} only \
                         along axes the reshape keeps whole, as the output does, or replicate it over {lv} ({})",
                        fmt_dims(&ia),
                        fmt_dims(&ib),
                        bcast_with(input, x)
                    ),
                ));
            }
            t = next_a.min(next_b).max(t + 1);
        }
        for v in ia[lo_a..hi_a].iter_mut().chain(ib[lo_b..hi_b].iter_mut()) {
            *v = 0;
        }
    }
    Ok(())
}

/// Writes the digits of row-major index `t` over `dims` into `idx`, and returns the
/// least index past `t` where the position through `fns` may change: the least, over
/// the axes, of the index where that axis's digit reaches its function's next change
/// point (the lower digits zero). Below it no digit passes a change point of its
/// function, nor wraps.
fn block_end(t: u64, dims: &[u64], fns: &[AxisFn], idx: &mut [u64]) -> u64 {
    let mut rest = t;
    let mut radix = 1u64;
    let mut end = u64::MAX;
    for ax in (0..dims.len()).rev() {
        let d = dims[ax].max(1);
        let i = rest % d;
        rest /= d;
        idx[ax] = i;
        let next = fns[ax].next_change(i, d);
        let base = t - t % radix;
        end = end.min(base.saturating_add((next - i).saturating_mul(radix)));
        radix = radix.saturating_mul(d);
    }
    end
}

/// Concat at level `x`: input `j`'s element `i` on the joined axis is the output's
/// element `i + offset_j`; both must be at the same position, and every other axis
/// split alike.
pub(super) fn concat_level(
    k: &Kernel,
    axis: usize,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    names: &[String],
    x: usize,
) -> Result<(), KernelError> {
    let oname = &names[inputs.len()];
    let fo = axis_fns(out, x);
    let lv = &out.levels()[x].name;
    let mut offset = 0u64;
    for (j, l) in inputs.iter().enumerate() {
        let shape = l.logical_shape();
        let n = shape[axis];
        let base = offset;
        offset += n;
        if l.levels()[x].replicated {
            continue;
        }
        if out.levels()[x].replicated {
            return Err(needs_replica(k, l, &names[j], oname, j, x));
        }
        let fi = axis_fns(l, x);
        for (a, f) in fi.iter().enumerate() {
            let ok = if a == axis {
                (0..n).all(|i| f.at(i) == fo[a].at(i + base))
            } else {
                same(f, &fo[a], shape[a].max(1))
            };
            if !ok {
                return Err(KernelError::new(
                    ErrorKind::Illegal {
                        operand: j,
                        level: x,
                    },
                    format!(
                        "{k}: input `{}` is laid out over {lv} along its axis {a} = {} unlike its part of the output \
                         `{oname}` (axis {a} = {}, from index {}); Relayout `{}` to split over {lv} like that part, \
                         or replicate it over {lv} ({})",
                        names[j],
                        group_text(l, a),
                        group_text(out, a),
                        if a == axis { base } else { 0 },
                        names[j],
                        bcast_with(l, x)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Slice at level `x`: output element `h` of axis `a` is input element `start[a] +
/// stride[a]·h`; both must be at the same position. A position is a sum of per-axis
/// contributions, each 0 at index 0 and never negative, so the rule holds exactly when
/// it holds on every axis alone: `f_in(start + stride·h) = f_out(h)` for every `h` of
/// the output's extent (an axis the slice keeps whole is compared as the elementwise
/// kernels compare it).
pub(super) fn slice_level(
    k: &Kernel,
    (start, limit, stride): (&[u64], &[u64], &[u64]),
    input: &TensorLayout,
    out: &TensorLayout,
    names: &[String],
    x: usize,
) -> Result<(), KernelError> {
    if input.levels()[x].replicated {
        return Ok(());
    }
    let (na, nb) = (&names[0], &names[1]);
    if out.levels()[x].replicated {
        return Err(needs_replica(k, input, na, nb, 0, x));
    }
    let shape = out.logical_shape();
    let (fi, fo) = (axis_fns(input, x), axis_fns(out, x));
    let lv = &out.levels()[x].name;
    for a in 0..shape.len() {
        let (s, l, t, n) = (start[a], limit[a], stride[a], shape[a]);
        let whole = s == 0 && t == 1;
        let moved = if whole && same(&fi[a], &fo[a], n.max(1)) {
            None
        } else {
            (0..n).find(|&h| fi[a].at(s + t * h) != fo[a].at(h))
        };
        let Some(h) = moved else { continue };
        let (pi, po) = (fi[a].at(s + t * h), fo[a].at(h));
        let keep = if whole {
            format!("split its axis {a} over {lv} like the output's axis {a}")
        } else {
            format!(
                "keep its axis {a} (sliced {s}:{l}:{t}) unsplit over {lv}, as well as the output's axis {a} \
                 (no {lv} sub-axis in either: memory, W or Time)"
            )
        };
        return Err(KernelError::new(
            ErrorKind::Illegal {
                operand: 0,
                level: x,
            },
            format!(
                "{k}: output element {h} of axis {a} of `{nb}` = {} is at {lv} position {po}, but it reads \
                 element {} of `{na}`'s axis {a} = {}, at {lv} position {pi}; every element must stay where \
                 it is. Relayout `{na}` to {keep}, or replicate it over {lv} ({})",
                group_text(out, a),
                s + t * h,
                group_text(input, a),
                bcast_with(input, x)
            ),
        ));
    }
    Ok(())
}
