//! Kernels that are views (docs/layout.md, views): a transpose, a reshape, a slice, a
//! concatenation or a broadcast renames elements without moving them, so where its
//! output is laid out so that every element stays in its cell ([`is_view`]), it computes
//! nothing and moves no byte.

use crate::Kernel;
use mnsim_arch::{Machine, TensorLayout};

/// How a view kernel renames its inputs' elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum View {
    /// Output axis `i` is input axis `perm[i]`.
    Transpose(Vec<usize>),
    /// The same elements, row-major, in the output's shape.
    Reshape,
    /// The same elements in the same shape (a copy that stays in place).
    Same,
    /// A strided block of the input (per axis `start..limit` every `stride`): a window of
    /// its cells.
    Slice {
        /// The first input index read on each axis.
        start: Vec<u64>,
        /// The end (exclusive) of each axis's range.
        limit: Vec<u64>,
        /// The step on each axis.
        stride: Vec<u64>,
    },
    /// The inputs joined along this axis: each a window of the output's cells.
    Concat(usize),
    /// The input broadcast numpy-style to the output's shape: the copies held by levels
    /// the input is copied over.
    Broadcast,
}

/// The view kernel `k` is, if it is one (its family's [`crate::KernelFamily::view`]).
pub fn view_of(k: &Kernel) -> Option<View> {
    k.with_family(|f| f.view())
}

/// The layout of `k`'s output that keeps every element of its first input (laid out as
/// `input`) in its cell, for a kernel that is a view; `None` for any other kernel, or
/// where no layout of the output does (`out_dims` is the output's shape). A
/// concatenation's other inputs are taken laid out as the first.
pub fn view_layout(
    k: &Kernel,
    input: &TensorLayout,
    out_dims: &[u64],
    m: &Machine,
) -> Option<TensorLayout> {
    match view_of(k)? {
        View::Transpose(perm) => input.transposed(&perm, m),
        View::Reshape => input.reshaped(out_dims, m),
        View::Same => Some(input.clone()),
        View::Slice {
            start,
            limit,
            stride,
        } => input.sliced(&start, &limit, &stride, m),
        View::Concat(axis) => input.concatenated(axis, *out_dims.get(axis)?, m),
        View::Broadcast => input.broadcast_to(out_dims, m),
    }
}

/// Whether kernel `k` reading `inputs` and writing `output` is a view: a view kernel whose
/// output layout puts every element where its input's did (the same dtype): the view of
/// the input, a concatenation whose every input is a window of the output, a broadcast
/// whose output reads its input in place.
pub fn is_view(k: &Kernel, inputs: &[&TensorLayout], output: &TensorLayout, m: &Machine) -> bool {
    let Some(view) = view_of(k) else {
        return false;
    };
    if inputs.iter().any(|i| i.dtype() != output.dtype()) {
        return false;
    }
    let out_dims = output.logical_shape();
    match (view, inputs) {
        (View::Transpose(_) | View::Reshape | View::Same | View::Slice { .. }, [input]) => {
            view_layout(k, input, out_dims, m).is_some_and(|v| v.same_cells(output))
        }
        (View::Concat(axis), _) => concat_windows(axis, inputs, output, m),
        (View::Broadcast, [input]) => output
            .unbroadcast(input.logical_shape(), m)
            .is_some_and(|v| v.same_cells(input)),
        (
            View::Transpose(_) | View::Reshape | View::Same | View::Slice { .. } | View::Broadcast,
            _,
        ) => false,
    }
}

/// Whether each of `inputs`, joined along `axis`, is a window of `output`'s cells: the
/// output's slice of its part laid out as it is.
fn concat_windows(
    axis: usize,
    inputs: &[&TensorLayout],
    output: &TensorLayout,
    m: &Machine,
) -> bool {
    let dims = output.logical_shape();
    let rank = dims.len();
    let mut at = 0u64;
    !inputs.is_empty()
        && inputs.iter().all(|input| {
            let Some(&len) = input.logical_shape().get(axis) else {
                return false;
            };
            let (mut start, mut limit) = (vec![0; rank], dims.to_vec());
            start[axis] = at;
            at = at.saturating_add(len);
            limit[axis] = at;
            output
                .sliced(&start, &limit, &vec![1; rank], m)
                .is_some_and(|v| v.same_cells(input))
        })
}
