//! The shares of the reduced variables a unit works on where a kernel's output is
//! partial.

use super::Legality;
use super::axis_fn::AxisFn;
use crate::kernel::{ErrorKind, Kernel, KernelError};
use crate::shape::{AxisSource, index_map, output_shape, reduced_extents};
use mnsim_arch::layout::TensorLayout;

/// The values of each reduced variable (see [`crate::reduced_extents`]) that the unit at
/// `pos` works on, where the output is partial: on every level of `legality.partial`,
/// the values whose contribution to the position of the splitting input (the first
/// input not replicated there) is the unit's own. Elsewhere every value. `pos` gives a
/// position per addressable level (root-most first); only the partial levels are read.
///
/// The shares need not be ranges: a contraction split on a minor digit (`(2, 2_L1B)`)
/// gives every other value. A position the split does not reach gets empty shares (its
/// partial sums are the identity, 0). Feed the result to [`crate::eval_share`].
pub fn reduced_share(
    k: &Kernel,
    inputs: &[&TensorLayout],
    legality: &Legality,
    pos: &[u64],
) -> Result<Vec<Vec<u64>>, KernelError> {
    let in_shapes: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    let out_shape = output_shape(k, &in_shapes)?;
    let ext = reduced_extents(k, &in_shapes)?;
    if legality.partial.is_empty() {
        return Ok(ext.iter().map(|&n| (0..n).collect()).collect());
    }
    let maps = match crate::window::map_of(k, &in_shapes)? {
        Some(w) => w.maps,
        None => index_map(k, &in_shapes, &out_shape)?,
    };
    let mut shares: Vec<Vec<u64>> = ext.iter().map(|&n| (0..n).collect()).collect();
    for &x in &legality.partial {
        let Some(&p) = pos.get(x) else {
            return Err(KernelError::new(
                ErrorKind::Layout,
                format!(
                    "{k}: the position {pos:?} names no level {x} (a position per addressable level is needed)"
                ),
            ));
        };
        let Some(j) =
            (0..inputs.len()).find(|&j| inputs[j].levels().get(x).is_some_and(|u| !u.replicated))
        else {
            continue;
        };
        // The splitting input's contribution for every reduced variable at level x.
        let fns: Vec<AxisFn> = (0..ext.len())
            .map(|r| {
                let src = AxisSource::Reduced(r);
                match maps[j].axes.iter().position(|&a| a == src) {
                    Some(axis) => AxisFn::of(inputs[j], axis, x, ext[r]),
                    None => AxisFn::zero(),
                }
            })
            .collect();
        // The images of the split variables; the position decomposes into one value of
        // each (the layout's level map is injective).
        let split: Vec<usize> = (0..ext.len()).filter(|&r| !fns[r].is_zero()).collect();
        let images: Vec<Vec<u64>> = split
            .iter()
            .map(|&r| {
                let mut v: Vec<u64> = (0..ext[r]).map(|t| fns[r].at(t)).collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let mut pick = vec![0u64; split.len()];
        if !decompose(p, &images, 0, &mut pick) {
            return Ok(ext.iter().map(|_| Vec::new()).collect());
        }
        for (i, &r) in split.iter().enumerate() {
            shares[r].retain(|&t| fns[r].at(t) == pick[i]);
        }
    }
    Ok(shares)
}

/// Finds one value per image summing to `p` (depth-first).
fn decompose(p: u64, images: &[Vec<u64>], i: usize, pick: &mut [u64]) -> bool {
    if i == images.len() {
        return p == 0;
    }
    for &v in &images[i] {
        if v <= p {
            pick[i] = v;
            if decompose(p - v, images, i + 1, pick) {
                return true;
            }
        }
    }
    false
}
