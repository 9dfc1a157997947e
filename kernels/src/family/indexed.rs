//! The kernels that place elements by a shape or by indices read when they run:
//! `Expand`, `DynamicSlice`, `DynamicUpdateSlice` (their rules in [`crate::indexed`]),
//! and `Pad`. They only move data; a dynamic or padded axis is a reduced variable of the
//! index map (read whole).

use super::{Fetch, KernelFamily, Traits, Visit};
use crate::indexed as ix;
use crate::kernel::{ErrorKind, KernelError};
use crate::shape::{AxisSource, InputMap};
use crate::view::View;

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
    /// A view where the copies are held by levels the input is copied over.
    fn view(&self) -> Option<View> {
        Some(View::Broadcast)
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

/// `x` padded with `value`: `low` before, `high` after and `interior` between the
/// elements of each axis.
pub struct Pad<'a> {
    /// Elements before each axis.
    pub low: &'a [u64],
    /// Elements after each axis.
    pub high: &'a [u64],
    /// Elements between every two of each axis.
    pub interior: &'a [u64],
    /// The padding value.
    pub value: f64,
}

impl Pad<'_> {
    /// The padded axes (any width not 0), in order: the reduced variables.
    fn padded(&self) -> Vec<usize> {
        (0..self.low.len())
            .filter(|&a| self.low[a] + self.high[a] + self.interior[a] > 0)
            .collect()
    }
}

impl KernelFamily for Pad<'_> {
    fn name(&self) -> &'static str {
        "Pad"
    }
    fn traits(&self) -> Traits {
        Traits {
            reduced: "a padded axis",
            ..Traits::MOVES
        }
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    /// `low + high + n + (n − 1)·interior` on each axis of length `n`.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let x = inputs[0];
        let r = x.len();
        if [self.low.len(), self.high.len(), self.interior.len()] != [r; 3] {
            return Err(KernelError::new(
                ErrorKind::Rank,
                format!(
                    "Pad: `low`, `high` and `interior` need one width per axis of `x` (rank {r}), got {}, {} and {}",
                    self.low.len(),
                    self.high.len(),
                    self.interior.len()
                ),
            ));
        }
        (0..r)
            .map(|a| {
                let gaps = x[a].saturating_sub(1).checked_mul(self.interior[a]);
                gaps.and_then(|g| g.checked_add(x[a]))
                    .and_then(|n| n.checked_add(self.low[a]))
                    .and_then(|n| n.checked_add(self.high[a]))
                    .ok_or_else(|| {
                        KernelError::new(ErrorKind::Rank, format!("Pad: axis {a} overflows"))
                    })
            })
            .collect()
    }
    /// A padded axis is read whole (a reduced variable); the others at the output's
    /// position.
    fn index_map(&self, s: &[&[u64]], _: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        let padded = self.padded();
        let axes = (0..s[0].len())
            .map(|a| match padded.iter().position(|&p| p == a) {
                Some(r) => AxisSource::Reduced(r),
                None => AxisSource::Out(a),
            })
            .collect();
        Ok(vec![InputMap { axes }])
    }
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(self.padded().iter().map(|&a| s[0][a]).collect())
    }
    /// The input element the output index holds, or the padding value.
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, s: &[&[u64]]) -> f64 {
        let mut idx = Vec::with_capacity(out_idx.len());
        for (a, &o) in out_idx.iter().enumerate() {
            let step = self.interior[a] + 1;
            let Some(j) = o.checked_sub(self.low[a]) else {
                return self.value;
            };
            if j % step != 0 || j / step >= s[0][a] {
                return self.value;
            }
            idx.push(j / step);
        }
        fetch(0, &idx)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        ix::reference(inputs, out_shape, |o, f, s| self.eval(o, f, &|_, _| {}, s))
    }
    /// A copy of input elements or the padding value: exact.
    fn roundings(&self, _: u64) -> Option<u64> {
        None
    }
}
