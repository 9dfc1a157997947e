//! Kernels that place elements by a shape or by indices read at run time:
//!
//! - `Expand { shape }`: `x` broadcast numpy-style to `shape` (its axes aligned to the
//!   trailing axes of `shape`, each equal or 1), every element a copy;
//! - `DynamicSlice { sizes, dynamic }`: inputs `x`, then one scalar start index per
//!   axis of `dynamic`; the output (`sizes`) reads `x` from the start of each dynamic
//!   axis (the index's value clamped into `[0, dim − size]`, as StableHLO clamps it);
//!   every other axis is taken whole;
//! - `DynamicUpdateSlice { dynamic }`: inputs `update`, `x`, then one scalar start
//!   index per axis of `dynamic`; the output is `x` with `update` written from those
//!   starts (clamped alike), `update` as long as `x` on every other axis.
//!
//! A dynamic axis is read through an index only known when the kernel runs: it is a
//! reduced variable of the index map (any of its elements may be read, so it is never
//! split where its tensor is not replicated), and the index operands broadcast (every
//! unit reads them). The three only move data (0 useful FLOP); a DynamicUpdateSlice is
//! charged one move per element of `update`, the rest of `x` staying as it is.

use crate::family::Fetch;
use crate::kernel::{ErrorKind, KernelError, fmt_dims};
use crate::shape::{AxisSource, InputMap};

fn err(kind: ErrorKind, msg: impl Into<String>) -> KernelError {
    KernelError::new(kind, msg)
}

/// The start of a slice `size` long on an axis of length `dim`, from the index value
/// `v`, clamped into `[0, dim − size]`.
pub fn clamp_start(v: f64, dim: u64, size: u64) -> u64 {
    let hi = dim.saturating_sub(size);
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= hi as f64 {
        hi
    } else {
        v as u64
    }
}

/// `x` aligned to `shape`'s trailing axes, each equal to its axis or 1: `shape`.
pub(crate) fn expand_shape(x: &[u64], shape: &[u64]) -> Result<Vec<u64>, KernelError> {
    let off = shape.len().checked_sub(x.len());
    let fits = off.is_some_and(|off| {
        x.iter()
            .enumerate()
            .all(|(a, &d)| d == shape[off + a] || d == 1)
    });
    if !fits {
        return Err(err(
            ErrorKind::Broadcast,
            format!(
                "Expand: {} does not broadcast to {} (aligned to the trailing axes, each size must equal the target's or be 1)",
                fmt_dims(x),
                fmt_dims(shape)
            ),
        ));
    }
    Ok(shape.to_vec())
}

/// The axes of `dynamic`, checked against a rank-`rank` operand: in range, each once.
fn check_dynamic(k: &str, dynamic: &[usize], rank: usize) -> Result<(), KernelError> {
    for (i, &a) in dynamic.iter().enumerate() {
        if a >= rank || dynamic[..i].contains(&a) {
            return Err(err(
                ErrorKind::Axis,
                format!(
                    "{k}: `dynamic` {dynamic:?} names axis {a}, out of range or twice for rank {rank}"
                ),
            ));
        }
    }
    Ok(())
}

/// The start index operands (`inputs[from..]`): one scalar each (shape `[]` or `[1]`).
fn check_indices(k: &str, inputs: &[&[u64]], from: usize) -> Result<(), KernelError> {
    for (j, s) in inputs.iter().enumerate().skip(from) {
        if s.iter().product::<u64>() != 1 || s.len() > 1 {
            return Err(err(
                ErrorKind::Layout,
                format!(
                    "{k}: input {j} is a start index, one element (`[]` or `[1]`), got shape {}",
                    fmt_dims(s)
                ),
            ));
        }
    }
    Ok(())
}

/// DynamicSlice's output: `sizes`, at most `x`'s on every axis and equal to it off the
/// dynamic axes.
pub(crate) fn dynamic_slice_shape(
    k: &str,
    inputs: &[&[u64]],
    sizes: &[u64],
    dynamic: &[usize],
) -> Result<Vec<u64>, KernelError> {
    let x = inputs[0];
    check_dynamic(k, dynamic, x.len())?;
    check_indices(k, inputs, 1)?;
    if sizes.len() != x.len() {
        return Err(err(
            ErrorKind::Layout,
            format!(
                "{k}: `sizes` has {} entries for `x` {} (one per axis)",
                sizes.len(),
                fmt_dims(x)
            ),
        ));
    }
    for (a, (&s, &d)) in sizes.iter().zip(x).enumerate() {
        let ok = if dynamic.contains(&a) { s <= d } else { s == d };
        if !ok {
            return Err(err(
                ErrorKind::Layout,
                format!(
                    "{k}: axis {a} of `x` {} is {d} long; the slice takes {s} (at most that on a dynamic axis, all of it on the others)",
                    fmt_dims(x)
                ),
            ));
        }
    }
    Ok(sizes.to_vec())
}

/// DynamicUpdateSlice's output: `x` (input 1), `update` (input 0) of its rank, at most
/// as long on the dynamic axes and as long on the others.
pub(crate) fn dynamic_update_shape(
    k: &str,
    inputs: &[&[u64]],
    dynamic: &[usize],
) -> Result<Vec<u64>, KernelError> {
    let (u, x) = (inputs[0], inputs[1]);
    check_dynamic(k, dynamic, x.len())?;
    check_indices(k, inputs, 2)?;
    let fits = u.len() == x.len()
        && (0..x.len()).all(|a| {
            if dynamic.contains(&a) {
                u[a] <= x[a]
            } else {
                u[a] == x[a]
            }
        });
    if !fits {
        return Err(err(
            ErrorKind::Layout,
            format!(
                "{k}: `update` {} does not fit `x` {} (the same rank, at most as long on the dynamic axes {dynamic:?}, as long on the others)",
                fmt_dims(u),
                fmt_dims(x)
            ),
        ));
    }
    Ok(x.to_vec())
}

/// Expand's index map: `x` aligned to the output's trailing axes.
pub(crate) fn expand_map(x: &[u64], out: &[u64]) -> Vec<InputMap> {
    let off = out.len() - x.len();
    let axes = (x.iter().enumerate())
        .map(|(a, &d)| {
            if d == 1 && out[off + a] != 1 {
                AxisSource::Broadcast
            } else {
                AxisSource::Out(off + a)
            }
        })
        .collect();
    vec![InputMap { axes }]
}

/// The map of an operand whose `dynamic` axes are read through a run-time index
/// (reduced variable `r` for `dynamic[r]`), its other axes the output's.
fn through_index(rank: usize, dynamic: &[usize]) -> InputMap {
    InputMap {
        axes: (0..rank)
            .map(|a| match dynamic.iter().position(|&d| d == a) {
                Some(r) => AxisSource::Reduced(r),
                None => AxisSource::Out(a),
            })
            .collect(),
    }
}

/// A start index operand: read whole by every output element.
fn index_operand(s: &[u64]) -> InputMap {
    InputMap {
        axes: vec![AxisSource::Broadcast; s.len()],
    }
}

/// DynamicSlice's index map: `x` through its indices, then the indices.
pub(crate) fn dynamic_slice_map(inputs: &[&[u64]], dynamic: &[usize]) -> Vec<InputMap> {
    let mut v = vec![through_index(inputs[0].len(), dynamic)];
    v.extend(inputs[1..].iter().map(|s| index_operand(s)));
    v
}

/// DynamicUpdateSlice's index map: `update` through the indices, `x` at the output's
/// position, then the indices.
pub(crate) fn dynamic_update_map(inputs: &[&[u64]], dynamic: &[usize]) -> Vec<InputMap> {
    let rank = inputs[1].len();
    let mut v = vec![
        through_index(rank, dynamic),
        InputMap {
            axes: (0..rank).map(AxisSource::Out).collect(),
        },
    ];
    v.extend(inputs[2..].iter().map(|s| index_operand(s)));
    v
}

/// The reduced variables' extents: the dynamic axes of the operand read through them
/// (`x` of a DynamicSlice, `update` of a DynamicUpdateSlice).
pub(crate) fn dynamic_extents(operand: &[u64], dynamic: &[usize]) -> Vec<u64> {
    dynamic.iter().map(|&a| operand[a]).collect()
}

/// The starts of the dynamic axes of an operand of `dims` whose slice (or update) is
/// `sizes` long: input `first + r`'s value for `dynamic[r]`, clamped.
fn starts(
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    (first, in_shapes): (usize, &[&[u64]]),
    dims: &[u64],
    sizes: &[u64],
    dynamic: &[usize],
) -> Vec<u64> {
    let mut start = vec![0u64; dims.len()];
    for (r, &a) in dynamic.iter().enumerate() {
        let at = vec![0u64; in_shapes[first + r].len()];
        start[a] = clamp_start(fetch(first + r, &at), dims[a], sizes[a]);
    }
    start
}

/// One output element of Expand.
pub(crate) fn eval_expand(out_idx: &[u64], fetch: Fetch<'_>, in_shapes: &[&[u64]]) -> f64 {
    let x = in_shapes[0];
    let off = out_idx.len() - x.len();
    let idx: Vec<u64> = (x.iter().enumerate())
        .map(|(a, &d)| if d == 1 { 0 } else { out_idx[off + a] })
        .collect();
    fetch(0, &idx)
}

/// One output element of DynamicSlice.
pub(crate) fn eval_slice(
    (sizes, dynamic): (&[u64], &[usize]),
    out_idx: &[u64],
    fetch: Fetch<'_>,
    in_shapes: &[&[u64]],
) -> f64 {
    let start = starts(fetch, (1, in_shapes), in_shapes[0], sizes, dynamic);
    let idx: Vec<u64> = out_idx.iter().zip(&start).map(|(i, s)| i + s).collect();
    fetch(0, &idx)
}

/// One output element of DynamicUpdateSlice.
pub(crate) fn eval_update(
    dynamic: &[usize],
    out_idx: &[u64],
    fetch: Fetch<'_>,
    in_shapes: &[&[u64]],
) -> f64 {
    let (u, x) = (in_shapes[0], in_shapes[1]);
    let start = starts(fetch, (2, in_shapes), x, u, dynamic);
    let inside = (0..x.len()).all(|a| out_idx[a] >= start[a] && out_idx[a] - start[a] < u[a]);
    if inside {
        let idx: Vec<u64> = out_idx.iter().zip(&start).map(|(i, s)| i - s).collect();
        fetch(0, &idx)
    } else {
        fetch(1, out_idx)
    }
}

/// The whole output of a kernel whose every output element `one` computes from whole
/// inputs (the host reference), row-major.
pub(crate) fn reference(
    inputs: &[(&[u64], &[f64])],
    out_shape: &[u64],
    one: impl Fn(&[u64], Fetch<'_>, &[&[u64]]) -> f64,
) -> Vec<f64> {
    let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
    let linear = |s: &[u64], idx: &[u64]| -> usize {
        idx.iter().zip(s).fold(0u64, |l, (i, d)| l * d + i) as usize
    };
    let mut fetch = |i: usize, idx: &[u64]| -> f64 {
        let (s, v) = inputs[i];
        v[linear(s, idx)]
    };
    let n: u64 = out_shape.iter().product();
    let mut idx = vec![0u64; out_shape.len()];
    let mut out = Vec::with_capacity(n as usize);
    for l in 0..n {
        let mut r = l;
        for a in (0..out_shape.len()).rev() {
            idx[a] = r % out_shape[a].max(1);
            r /= out_shape[a].max(1);
        }
        out.push(one(&idx, &mut fetch, &shapes));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kernel;

    #[test]
    fn starts_clamp_as_stablehlo_does() {
        assert_eq!(clamp_start(-3.0, 10, 4), 0);
        assert_eq!(clamp_start(2.0, 10, 4), 2);
        assert_eq!(clamp_start(7.0, 10, 4), 6);
        assert_eq!(clamp_start(1e20, 10, 4), 6);
        assert_eq!(clamp_start(f64::NAN, 10, 4), 0);
    }

    #[test]
    fn the_reference_slices_updates_and_expands() {
        let x: Vec<f64> = (0..12).map(f64::from).collect();
        // x [3,4]; rows 1..3 from index 5 (clamped to 1).
        let k = Kernel::DynamicSlice {
            sizes: vec![2, 4],
            dynamic: vec![0],
        };
        let out = crate::reference(&k, &[(&[3, 4], &x), (&[1], &[5.0])], &[2, 4]);
        assert_eq!(out, (4..12).map(f64::from).collect::<Vec<_>>());
        // An update of row 2 (index -1 clamps to 0: row 0).
        let k = Kernel::DynamicUpdateSlice { dynamic: vec![0] };
        let u = [100.0, 101.0, 102.0, 103.0];
        let out = crate::reference(&k, &[(&[1, 4], &u), (&[3, 4], &x), (&[1], &[2.0])], &[3, 4]);
        assert_eq!(&out[8..], &u);
        assert_eq!(&out[..8], &x[..8]);
        let out = crate::reference(
            &k,
            &[(&[1, 4], &u), (&[3, 4], &x), (&[1], &[-1.0])],
            &[3, 4],
        );
        assert_eq!(&out[..4], &u);
        // [2,1] → [3,2,2]: each value repeated along the new and the size-1 axes.
        let k = Kernel::Expand {
            shape: vec![3, 2, 2],
        };
        let out = crate::reference(&k, &[(&[2, 1], &[7.0, 8.0])], &[3, 2, 2]);
        assert_eq!(out, [7.0, 7.0, 8.0, 8.0].repeat(3));
    }
}
