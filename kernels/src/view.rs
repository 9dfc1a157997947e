//! Kernels that are views (docs/layout.md, views): a transpose or a reshape renames
//! elements without moving them, so where its output is laid out as [`view_layout`]
//! derives from its input's layout (every element in the cell it was in), it computes
//! nothing and moves no byte.

use crate::Kernel;
use mnsim_arch::{Machine, TensorLayout};

/// How a view kernel renames its input's elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum View {
    /// Output axis `i` is input axis `perm[i]`.
    Transpose(Vec<usize>),
    /// The same elements, row-major, in the output's shape.
    Reshape,
    /// The same elements in the same shape (a copy that stays in place).
    Same,
}

/// The view kernel `k` is, if it is one (its family's [`crate::KernelFamily::view`]).
pub fn view_of(k: &Kernel) -> Option<View> {
    k.with_family(|f| f.view())
}

/// The layout of `k`'s output that keeps every element of its input (laid out as
/// `input`) in its cell, for a kernel that is a view; `None` for any other kernel, or
/// where no layout of the output does (`out_dims` is the output's shape).
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
    }
}

/// Whether kernel `k` reading `input` and writing `output` is a view: a view kernel whose
/// output layout puts every element where the input's did (the same dtype).
pub fn is_view(k: &Kernel, input: &TensorLayout, output: &TensorLayout, m: &Machine) -> bool {
    input.dtype() == output.dtype()
        && view_layout(k, input, output.logical_shape(), m).is_some_and(|v| v.same_cells(output))
}
