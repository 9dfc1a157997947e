//! The elementwise kernels: `Unary`, `Binary` (numpy broadcasting), `Select`, `Clamp`,
//! `Elu`, `BiasAdd`. Each output element reads its inputs at its own position.

use super::{Fetch, KernelFamily, Traits, Visit};
use crate::kernel::{BinaryOp, ErrorKind, KernelError, UnaryOp, fmt_dims};
use crate::reference::{linear, unravel};
use crate::shape::{AxisSource, InputMap, broadcast, err, index::aligned};
use crate::view::View;
use std::fmt;

/// The map of a kernel whose one input has the output's axes.
fn same_axes(out_rank: usize) -> Vec<InputMap> {
    vec![InputMap {
        axes: (0..out_rank).map(AxisSource::Out).collect(),
    }]
}

/// Every input aligned to the output's trailing axes (numpy broadcasting).
fn broadcast_maps(in_shapes: &[&[u64]], out_shape: &[u64]) -> Vec<InputMap> {
    let out_rank = out_shape.len();
    (in_shapes.iter())
        .map(|s| InputMap {
            axes: aligned(s, out_rank - s.len(), out_shape),
        })
        .collect()
}

/// The host reference of a one-input kernel that maps each element by `g`.
fn map_each(inputs: &[(&[u64], &[f64])], g: impl Fn(f64) -> f64) -> Vec<f64> {
    inputs[0].1.iter().map(|&v| g(v)).collect()
}

/// The index into an operand of shape `s` of output index `idx`: its axes align to the
/// trailing output axes, and an axis of size 1 reads 0 (numpy broadcasting).
fn aligned_index(s: &[u64], idx: &[u64]) -> Vec<u64> {
    let off = idx.len() - s.len();
    s.iter()
        .enumerate()
        .map(|(a, &d)| if d == 1 { 0 } else { idx[off + a] })
        .collect()
}

/// The host reference of a kernel of broadcast operands, `g` of their values at each
/// output index.
fn broadcast_each(
    inputs: &[(&[u64], &[f64])],
    out_shape: &[u64],
    g: impl Fn(&[f64]) -> f64,
) -> Vec<f64> {
    let mut idx = vec![0u64; out_shape.len()];
    let mut val = Vec::with_capacity(inputs.len());
    (0..crate::kernel::numel(out_shape))
        .map(|l| {
            unravel(out_shape, l, &mut idx);
            val.clear();
            val.extend(
                inputs
                    .iter()
                    .map(|(s, v)| v[linear(s, &aligned_index(s, &idx))]),
            );
            g(&val)
        })
        .collect()
}

/// The (up to three) inputs of Binary or Select at output index `out_idx`, numpy
/// broadcast; the missing ones are 0.
fn broadcast_operands(out_idx: &[u64], fetch: Fetch<'_>, in_shapes: &[&[u64]]) -> [f64; 3] {
    let r = out_idx.len();
    let mut idx = Vec::with_capacity(r);
    let mut val = [0.0; 3];
    for (j, s) in in_shapes.iter().take(3).enumerate() {
        let off = r - s.len();
        idx.clear();
        idx.extend(
            s.iter()
                .enumerate()
                .map(|(a, &d)| if d == 1 { 0 } else { out_idx[off + a] }),
        );
        val[j] = fetch(j, &idx);
    }
    val
}

/// `out = op(x)`, same shape.
pub struct Unary(pub UnaryOp);

impl KernelFamily for Unary {
    fn name(&self) -> &'static str {
        "Unary"
    }
    fn label(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Unary {}", self.0.name())
    }
    fn traits(&self) -> Traits {
        if self.0 == UnaryOp::Copy {
            Traits::MOVES
        } else {
            Traits::VECTOR
        }
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, self.0.flops_per_element())
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(inputs[0].to_vec())
    }
    fn index_map(&self, _: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(same_axes(out_shape.len()))
    }
    fn view(&self) -> Option<View> {
        (self.0 == UnaryOp::Copy).then_some(View::Same)
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, _: &[&[u64]]) -> f64 {
        self.0.apply(fetch(0, out_idx))
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], _: &[u64]) -> Vec<f64> {
        map_each(inputs, |v| self.0.apply(v))
    }
}

/// `out = op(a, b)` with numpy broadcasting.
pub struct Binary(pub BinaryOp);

impl KernelFamily for Binary {
    fn name(&self) -> &'static str {
        "Binary"
    }
    fn label(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Binary {}", self.0.name())
    }
    fn arity(&self) -> usize {
        2
    }
    fn traits(&self) -> Traits {
        Traits::BROADCASTS
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, self.0.flops_per_element())
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (x, b) = (inputs[0], inputs[1]);
        broadcast(x, b).ok_or_else(|| {
            err(
                ErrorKind::Broadcast,
                format!(
                    "Binary {}: shapes {} and {} do not broadcast (aligned to the trailing axes, each pair of sizes must be equal or one of them 1)",
                    self.0.name(),
                    fmt_dims(x),
                    fmt_dims(b)
                ),
            )
        })
    }
    fn index_map(&self, s: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(broadcast_maps(s, out_shape))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, s: &[&[u64]]) -> f64 {
        let val = broadcast_operands(out_idx, fetch, s);
        self.0.apply(val[0], val[1])
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        broadcast_each(inputs, out_shape, |v| self.0.apply(v[0], v[1]))
    }
}

/// `out = cond ? a : b` elementwise, numpy broadcasting of all three.
pub struct Select;

impl KernelFamily for Select {
    fn name(&self) -> &'static str {
        "Select"
    }
    fn arity(&self) -> usize {
        3
    }
    fn operand_name(&self, i: usize) -> String {
        ["cond", "a", "b"][i.min(2)].into()
    }
    fn traits(&self) -> Traits {
        Traits::BROADCASTS
    }
    fn first_data_input(&self) -> usize {
        1
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    /// `a` and `b` broadcast numpy-style; `cond` broadcasts one way to that shape (it
    /// may not enlarge it).
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (c, a, b) = (inputs[0], inputs[1], inputs[2]);
        let ab = broadcast(a, b).ok_or_else(|| {
            err(
                ErrorKind::Broadcast,
                format!(
                    "Select: `a` {} and `b` {} do not broadcast (aligned to the trailing axes, each pair of sizes must be equal or one of them 1)",
                    fmt_dims(a),
                    fmt_dims(b)
                ),
            )
        })?;
        match broadcast(&ab, c) {
            Some(o) if o == ab => Ok(o),
            _ => Err(err(
                ErrorKind::Broadcast,
                format!(
                    "Select: the condition {} does not broadcast to the shape {} of `a` and `b` (aligned to the trailing axes, each of its sizes must be 1 or equal)",
                    fmt_dims(c),
                    fmt_dims(&ab)
                ),
            )),
        }
    }
    fn index_map(&self, s: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(broadcast_maps(s, out_shape))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, s: &[&[u64]]) -> f64 {
        let val = broadcast_operands(out_idx, fetch, s);
        if val[0] != 0.0 { val[1] } else { val[2] }
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        broadcast_each(inputs, out_shape, |v| if v[0] != 0.0 { v[1] } else { v[2] })
    }
}

/// `min(max(x, min), max)`.
pub struct Clamp {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
}

impl KernelFamily for Clamp {
    fn name(&self) -> &'static str {
        "Clamp"
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 2)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(inputs[0].to_vec())
    }
    fn index_map(&self, _: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(same_axes(out_shape.len()))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, _: &[&[u64]]) -> f64 {
        fetch(0, out_idx).max(self.min).min(self.max)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], _: &[u64]) -> Vec<f64> {
        map_each(inputs, |v| v.max(self.min).min(self.max))
    }
}

/// `x` for `x > 0`, else `alpha · (eˣ − 1)`.
pub struct Elu {
    /// The scale of the negative part.
    pub alpha: f64,
}

impl Elu {
    fn of(&self, v: f64) -> f64 {
        if v > 0.0 {
            v
        } else {
            self.alpha * (v.exp() - 1.0)
        }
    }
}

impl KernelFamily for Elu {
    fn name(&self) -> &'static str {
        "Elu"
    }
    /// An exp, a subtract, a multiply, a select.
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 9)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(inputs[0].to_vec())
    }
    fn index_map(&self, _: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(same_axes(out_shape.len()))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, _: &[&[u64]]) -> f64 {
        self.of(fetch(0, out_idx))
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], _: &[u64]) -> Vec<f64> {
        map_each(inputs, |v| self.of(v))
    }
}

/// `x + bias`, where the rank-1 `bias` runs along `axis` of `x`.
pub struct BiasAdd {
    /// The axis of `x` that `bias` runs along.
    pub axis: usize,
}

impl KernelFamily for BiasAdd {
    fn name(&self) -> &'static str {
        "BiasAdd"
    }
    fn arity(&self) -> usize {
        2
    }
    fn operand_name(&self, i: usize) -> String {
        ["x", "bias"][i.min(1)].into()
    }
    fn traits(&self) -> Traits {
        Traits::BROADCASTS
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    /// `x`, whose channel axis `axis` the vector `b` matches.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (axis, x, b) = (self.axis, inputs[0], inputs[1]);
        if axis >= x.len() {
            return Err(err(
                ErrorKind::Axis,
                format!(
                    "BiasAdd: the channel axis {axis} is out of range for `x` {} (axes 0..{})",
                    fmt_dims(x),
                    x.len()
                ),
            ));
        }
        if b.len() != 1 || b[0] != x[axis] {
            return Err(err(
                ErrorKind::Broadcast,
                format!(
                    "BiasAdd: `bias` must be a vector of the channel axis {axis} of `x` {} ({} elements), got shape {}",
                    fmt_dims(x),
                    x[axis],
                    fmt_dims(b)
                ),
            ));
        }
        Ok(x.to_vec())
    }
    fn index_map(&self, _: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        let mut maps = same_axes(out_shape.len());
        maps.push(InputMap {
            axes: vec![AxisSource::Out(self.axis)],
        });
        Ok(maps)
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, _: &[&[u64]]) -> f64 {
        fetch(0, out_idx) + fetch(1, &[out_idx[self.axis]])
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        let ((_, x), (_, bias)) = (inputs[0], inputs[1]);
        let mut idx = vec![0u64; out_shape.len()];
        (x.iter().enumerate())
            .map(|(l, &v)| {
                unravel(out_shape, l as u64, &mut idx);
                v + bias[idx[self.axis] as usize]
            })
            .collect()
    }
}
