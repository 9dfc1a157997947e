//! The kernels that place elements by a shape or by indices read when they run:
//! `Expand`, `DynamicSlice`, `DynamicUpdateSlice` (their rules in [`crate::indexed`]).
//! They only move data; a dynamic axis is a reduced variable of the index map.

use super::{Fetch, KernelFamily, Traits, Visit};
use crate::indexed as ix;
use crate::kernel::KernelError;
use crate::shape::InputMap;

/// Integer start indices beside data of any type, and the dynamic axes named in
/// messages.
const THROUGH_INDEX: Traits = Traits {
    own_dtypes: true,
    reduced: "an axis read at a run-time index",
    ..Traits::MOVES
};

/// `x` broadcast numpy-style to `shape`: every element a copy.
pub struct Expand<'a> {
    /// The output shape.
    pub shape: &'a [u64],
}

impl KernelFamily for Expand<'_> {
    fn name(&self) -> &'static str {
        "Expand"
    }
    fn traits(&self) -> Traits {
        Traits::MOVES
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        ix::expand_shape(inputs[0], self.shape)
    }
    fn index_map(&self, s: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(ix::expand_map(s[0], out_shape))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, s: &[&[u64]]) -> f64 {
        ix::eval_expand(out_idx, fetch, s)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        ix::reference(inputs, out_shape, ix::eval_expand)
    }
}

/// A block of `x` (`sizes` long) from start indices read when it runs.
pub struct DynamicSlice<'a> {
    /// The output shape.
    pub sizes: &'a [u64],
    /// The axes sliced from a run-time index, in the order of their index inputs.
    pub dynamic: &'a [usize],
}

impl KernelFamily for DynamicSlice<'_> {
    fn name(&self) -> &'static str {
        "DynamicSlice"
    }
    fn arity(&self) -> usize {
        1 + self.dynamic.len()
    }
    fn operand_name(&self, i: usize) -> String {
        if i == 0 {
            "x".into()
        } else {
            format!("start{}", i - 1)
        }
    }
    fn traits(&self) -> Traits {
        THROUGH_INDEX
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        ix::dynamic_slice_shape(self.name(), inputs, self.sizes, self.dynamic)
    }
    fn index_map(&self, s: &[&[u64]], _: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(ix::dynamic_slice_map(s, self.dynamic))
    }
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(ix::dynamic_extents(s[0], self.dynamic))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, s: &[&[u64]]) -> f64 {
        ix::eval_slice((self.sizes, self.dynamic), out_idx, fetch, s)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        ix::reference(inputs, out_shape, |o, f, s| {
            ix::eval_slice((self.sizes, self.dynamic), o, f, s)
        })
    }
}

/// `x` with `update` written from start indices read when it runs.
pub struct DynamicUpdateSlice<'a> {
    /// The axes written from a run-time index, in the order of their index inputs.
    pub dynamic: &'a [usize],
}

impl KernelFamily for DynamicUpdateSlice<'_> {
    fn name(&self) -> &'static str {
        "DynamicUpdateSlice"
    }
    fn arity(&self) -> usize {
        2 + self.dynamic.len()
    }
    fn operand_name(&self, i: usize) -> String {
        match i {
            0 => "update".into(),
            1 => "x".into(),
            _ => format!("start{}", i - 2),
        }
    }
    fn traits(&self) -> Traits {
        THROUGH_INDEX
    }
    /// One move per element of `update` (the first input): the rest of `x` stays.
    fn flops_per_element(&self) -> (u64, u64) {
        (1, 0)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        ix::dynamic_update_shape(self.name(), inputs, self.dynamic)
    }
    fn index_map(&self, s: &[&[u64]], _: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(ix::dynamic_update_map(s, self.dynamic))
    }
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(ix::dynamic_extents(s[0], self.dynamic))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, s: &[&[u64]]) -> f64 {
        ix::eval_update(self.dynamic, out_idx, fetch, s)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        ix::reference(inputs, out_shape, |o, f, s| {
            ix::eval_update(self.dynamic, o, f, s)
        })
    }
}
