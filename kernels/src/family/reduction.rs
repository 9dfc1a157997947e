//! The reductions: `ReduceAxes` (its reduced axes dropped or kept), and the kernels
//! that normalise along an axis, `Softmax` and `LayerNorm` (the normalised axis is a
//! reduced variable every output element needs whole).

use super::{Fetch, KernelFamily, Traits, Visit, held};
use crate::elem::Combine;
use crate::kernel::{ErrorKind, KernelError, ReduceKind, fmt_dims, numel};
use crate::reference::{linear, strides, unravel};
use crate::shape::{AxisSource, InputMap, err};
use std::fmt;

/// Combines `x` along `axes`; the output drops them, or keeps them with size 1 when
/// `keep_dims`.
pub struct ReduceAxes<'a> {
    /// How elements combine.
    pub op: ReduceKind,
    /// The reduced axes of the input (reduced variable `r` is `axes[r]`).
    pub axes: &'a [usize],
    /// Keep the reduced axes in the output, with size 1.
    pub keep_dims: bool,
}

impl KernelFamily for ReduceAxes<'_> {
    fn name(&self) -> &'static str {
        "ReduceAxes"
    }
    fn label(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReduceAxes {}", self.op.name())
    }
    /// A Mean's partial results are partial sums of `x / n` (`n` the whole reduced
    /// extent), which add up to it.
    fn traits(&self) -> Traits {
        Traits {
            additive: matches!(self.op, ReduceKind::Add | ReduceKind::Mean),
            ..Traits::VECTOR
        }
    }
    /// [`ReduceKind::flops`] (`(1, 0)` for a sum: every input element is combined once).
    fn flops_per_element(&self) -> (u64, u64) {
        self.op.flops()
    }
    /// The reduced axes dropped, or kept as 1 with `keep_dims`.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (op, x) = (self.op.name(), inputs[0]);
        let mut seen = vec![false; x.len()];
        for &a in self.axes {
            if a >= x.len() {
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "ReduceAxes {op}: axis {a} is out of range for shape {} (axes 0..{})",
                        fmt_dims(x),
                        x.len()
                    ),
                ));
            }
            if seen[a] {
                return Err(err(
                    ErrorKind::Axis,
                    format!("ReduceAxes {op}: axis {a} is named twice"),
                ));
            }
            seen[a] = true;
        }
        let kept = x.iter().zip(&seen);
        if self.keep_dims {
            return Ok(kept.map(|(d, s)| if *s { 1 } else { *d }).collect());
        }
        Ok(kept.filter(|(_, s)| !**s).map(|(d, _)| *d).collect())
    }
    /// The reduced axes in the order `axes` names them, the others the output's axes in
    /// order (a kept reduced axis takes an output axis of length 1 too).
    fn index_map(&self, s: &[&[u64]], _: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        let mut h = 0;
        let axes = (0..s[0].len())
            .map(|a| match self.axes.iter().position(|&x| x == a) {
                Some(r) => {
                    h += usize::from(self.keep_dims);
                    AxisSource::Reduced(r)
                }
                None => {
                    h += 1;
                    AxisSource::Out(h - 1)
                }
            })
            .collect();
        Ok(vec![InputMap { axes }])
    }
    /// The reduced axes' lengths in the order `axes` names them.
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(self.axes.iter().map(|&a| s[0][a]).collect())
    }
    /// A sum grows with its length; the max, min and product take one rounding's (a
    /// product's is not grown with its length).
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        Some(match self.op {
            ReduceKind::Add | ReduceKind::Mean | ReduceKind::L1 | ReduceKind::L2 => {
                reduction_len.max(1)
            }
            ReduceKind::Max | ReduceKind::Min | ReduceKind::Prod => 1,
        })
    }
    /// Its partial results are always completed: a Max or Min by its own, the sums by
    /// addition.
    fn tree_reduce(&self) -> Option<Combine> {
        Some(self.op.partials_combine())
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, visit: Visit<'_>, s: &[&[u64]]) -> f64 {
        eval_reduce(self, out_idx, fetch, visit, s)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        let (op, axes) = (self.op, self.axes);
        let (xs, x) = inputs[0];
        let mut out = vec![op.identity(); numel(out_shape) as usize];
        let mut xi = vec![0u64; xs.len()];
        for (l, &v) in x.iter().enumerate() {
            unravel(xs, l as u64, &mut xi);
            let kept: Vec<u64> = (0..xs.len())
                .filter(|a| self.keep_dims || !axes.contains(a))
                .map(|a| if axes.contains(&a) { 0 } else { xi[a] })
                .collect();
            let o = &mut out[linear(out_shape, &kept)];
            *o = op.combine(*o, v);
        }
        let count: u64 = axes.iter().map(|&a| xs[a]).product();
        out.iter_mut().for_each(|o| *o = op.finish(*o, count));
        out
    }
}

/// One element of ReduceAxes: `op` over the values of the reduced axes the unit holds.
fn eval_reduce(
    k: &ReduceAxes<'_>,
    out_idx: &[u64],
    fetch: Fetch<'_>,
    visit: Visit<'_>,
    in_shapes: &[&[u64]],
) -> f64 {
    let (op, axes) = (k.op, k.axes);
    let rank = in_shapes[0].len();
    let mut idx = vec![0u64; rank];
    let mut h = 0;
    for (a, slot) in idx.iter_mut().enumerate() {
        if k.keep_dims {
            *slot = out_idx[a];
        } else if !axes.contains(&a) {
            *slot = out_idx[h];
            h += 1;
        }
    }
    let lists: Vec<Vec<u64>> = (0..axes.len()).map(|r| held(visit, r)).collect();
    let mut acc = op.identity();
    if lists.iter().any(Vec::is_empty) {
        return acc;
    }
    // A Mean divides by the whole reduced extent, also where this unit holds part
    // of it: its partial results are then partial sums of `x / n`, which a Reduce
    // adds up to the mean.
    let count: u64 = match op {
        ReduceKind::Mean => (axes.iter())
            .map(|&a| in_shapes[0].get(a).copied().unwrap_or(1))
            .product(),
        _ => lists.iter().map(|l| l.len() as u64).product(),
    };
    // Odometer over the reduced variables, the last one fastest.
    let mut at = vec![0usize; axes.len()];
    loop {
        for (j, &a) in axes.iter().enumerate() {
            idx[a] = lists[j][at[j]];
        }
        acc = op.combine(acc, fetch(0, &idx));
        let mut j = axes.len();
        loop {
            if j == 0 {
                return op.finish(acc, count);
            }
            j -= 1;
            at[j] += 1;
            if at[j] < lists[j].len() {
                break;
            }
            at[j] = 0;
        }
    }
}

/// `x`, whose axis `axis` (named in messages of `kernel`) must be in range.
fn normalised_shape(kernel: &str, axis: usize, x: &[u64]) -> Result<Vec<u64>, KernelError> {
    if axis >= x.len() {
        return Err(err(
            ErrorKind::Axis,
            format!(
                "{kernel}: axis {axis} is out of range for shape {} (axes 0..{})",
                fmt_dims(x),
                x.len()
            ),
        ));
    }
    Ok(x.to_vec())
}

/// The map of a kernel normalising along `axis`: that axis is `Reduced(0)` (the output
/// element at position `i` of it needs every position of it), the others the output's.
fn normalised_map(axis: usize, out_rank: usize) -> Vec<InputMap> {
    let axes = (0..out_rank)
        .map(|h| {
            if h == axis {
                AxisSource::Reduced(0)
            } else {
                AxisSource::Out(h)
            }
        })
        .collect();
    vec![InputMap { axes }]
}

/// The row along `axis` through `out_idx` (the values the unit holds), then the element
/// at `out_idx` itself.
fn normalised_row(
    axis: usize,
    out_idx: &[u64],
    fetch: Fetch<'_>,
    visit: Visit<'_>,
) -> (Vec<f64>, f64) {
    let mut idx = out_idx.to_vec();
    let mut row = Vec::new();
    visit(0, &mut |t| {
        idx[axis] = t;
        row.push(fetch(0, &idx));
    });
    let x = fetch(0, out_idx);
    (row, x)
}

/// The host reference of a kernel normalising along `axis`, row by row (every index
/// with 0 on the axis starts one): `row(x, at, out)` fills one, `at(t)` the linear
/// position of its element `t`.
fn normalise_rows(
    axis: usize,
    (xs, x): (&[u64], &[f64]),
    row: impl Fn(&[f64], &dyn Fn(u64) -> usize, u64, &mut [f64]),
) -> Vec<f64> {
    let mut out = vec![0.0; numel(xs) as usize];
    let len = xs[axis];
    let stride = strides(xs)[axis];
    let mut idx = vec![0u64; xs.len()];
    for l in 0..out.len() as u64 {
        unravel(xs, l, &mut idx);
        if idx[axis] != 0 {
            continue;
        }
        let at = |t: u64| (l + t * stride) as usize;
        row(x, &at, len, &mut out);
    }
    out
}

/// `exp(x − max) / Σ exp(x − max)` along `axis`.
pub struct Softmax {
    /// The normalised axis.
    pub axis: usize,
}

impl KernelFamily for Softmax {
    fn name(&self) -> &'static str {
        "Softmax"
    }
    fn traits(&self) -> Traits {
        Traits::NORMALISES
    }
    /// A max and a sum per input element; a subtraction, an exp (8) and a division (4)
    /// per output element.
    fn flops_per_element(&self) -> (u64, u64) {
        (2, 13)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        normalised_shape("Softmax", self.axis, inputs[0])
    }
    fn index_map(&self, _: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(normalised_map(self.axis, out_shape.len()))
    }
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(vec![s[0][self.axis]])
    }
    fn normalised_axis(&self) -> Option<usize> {
        Some(self.axis)
    }
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        Some(reduction_len.max(1))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, visit: Visit<'_>, _: &[&[u64]]) -> f64 {
        let (row, x) = normalised_row(self.axis, out_idx, fetch, visit);
        let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        (x - mx).exp() / sum
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], _: &[u64]) -> Vec<f64> {
        normalise_rows(self.axis, inputs[0], |x, at, len, out| {
            let mx = (0..len).map(|t| x[at(t)]).fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..len).map(|t| (x[at(t)] - mx).exp()).sum();
            for t in 0..len {
                out[at(t)] = (x[at(t)] - mx).exp() / sum;
            }
        })
    }
}

/// `(x − mean) / √(var + eps)` along `axis` (population variance, no affine
/// parameters).
pub struct LayerNorm {
    /// The normalised axis.
    pub axis: usize,
    /// Added to the variance.
    pub eps: f64,
}

impl KernelFamily for LayerNorm {
    fn name(&self) -> &'static str {
        "LayerNorm"
    }
    fn traits(&self) -> Traits {
        Traits::NORMALISES
    }
    /// A sum for the mean, a subtraction, a square and a sum for the variance per input
    /// element; a subtraction and a multiplication by 1/√(var+ε) per output element.
    fn flops_per_element(&self) -> (u64, u64) {
        (4, 2)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        normalised_shape("LayerNorm", self.axis, inputs[0])
    }
    fn index_map(&self, _: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(normalised_map(self.axis, out_shape.len()))
    }
    fn reduced_extents(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(vec![s[0][self.axis]])
    }
    fn normalised_axis(&self) -> Option<usize> {
        Some(self.axis)
    }
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        Some(reduction_len.max(1))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, visit: Visit<'_>, _: &[&[u64]]) -> f64 {
        let (row, x) = normalised_row(self.axis, out_idx, fetch, visit);
        let n = row.len() as f64;
        let mean = row.iter().sum::<f64>() / n;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        (x - mean) / (var + self.eps).sqrt()
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], _: &[u64]) -> Vec<f64> {
        let eps = self.eps;
        normalise_rows(self.axis, inputs[0], |x, at, len, out| {
            let mean = (0..len).map(|t| x[at(t)]).sum::<f64>() / len as f64;
            let var = (0..len).map(|t| (x[at(t)] - mean).powi(2)).sum::<f64>() / len as f64;
            for t in 0..len {
                out[at(t)] = (x[at(t)] - mean) / (var + eps).sqrt();
            }
        })
    }
}
