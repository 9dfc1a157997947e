//! The kernels that only move data: `Transpose` (a per-axis index map), and `Reshape`,
//! `Concat` and `Slice`, which have none (their legality is decided by element
//! positions, [`ByPositions`]). Each charges one move per output element and reports 0
//! useful FLOP; each is a view where its output keeps every element in its cell
//! ([`crate::is_view`]).

use super::{ByPositions, Fetch, KernelFamily, Traits, Visit};
use crate::kernel::{ErrorKind, KernelError, fmt_dims, numel};
use crate::reference::{linear, unravel};
use crate::shape::{AxisSource, InputMap, checked_numel, err};
use crate::view::View;

/// The host reference of a one-input move: each output element is `x` at the index
/// `src` gives from the output index (`src(out_idx, in_idx)` fills `in_idx`).
fn gather(
    (xs, x): (&[u64], &[f64]),
    out_shape: &[u64],
    src: impl Fn(&[u64], &mut [u64]),
) -> Vec<f64> {
    let mut idx = vec![0u64; out_shape.len()];
    let mut xi = vec![0u64; xs.len()];
    (0..numel(out_shape))
        .map(|l| {
            unravel(out_shape, l, &mut idx);
            src(&idx, &mut xi);
            x[linear(xs, &xi)]
        })
        .collect()
}

/// Output axis `i` is input axis `perm[i]`.
pub struct Transpose<'a> {
    /// A permutation of the input's axes.
    pub perm: &'a [usize],
}

impl KernelFamily for Transpose<'_> {
    fn name(&self) -> &'static str {
        "Transpose"
    }
    fn traits(&self) -> Traits {
        Traits::MOVES
    }
    /// One move per element.
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    /// `x`'s axes in the order `perm` names them.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (perm, x) = (self.perm, inputs[0]);
        let mut seen = vec![false; x.len()];
        let ok = perm.len() == x.len()
            && perm
                .iter()
                .all(|&p| p < x.len() && !std::mem::replace(&mut seen[p], true));
        if !ok {
            return Err(err(
                ErrorKind::Perm,
                format!(
                    "Transpose: perm {perm:?} is not a permutation of the {} axes of {} (each of 0..{} exactly once)",
                    x.len(),
                    fmt_dims(x),
                    x.len()
                ),
            ));
        }
        Ok(perm.iter().map(|&p| x[p]).collect())
    }
    fn index_map(&self, _: &[&[u64]], _: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        let mut m = vec![AxisSource::Broadcast; self.perm.len()];
        for (i, &p) in self.perm.iter().enumerate() {
            m[p] = AxisSource::Out(i);
        }
        Ok(vec![InputMap { axes: m }])
    }
    fn view(&self) -> Option<View> {
        Some(View::Transpose(self.perm.to_vec()))
    }
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, _: &[&[u64]]) -> f64 {
        let mut idx = vec![0u64; self.perm.len()];
        for (i, &p) in self.perm.iter().enumerate() {
            idx[p] = out_idx[i];
        }
        fetch(0, &idx)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        gather(inputs[0], out_shape, |idx, xi| {
            for (i, &p) in self.perm.iter().enumerate() {
                xi[p] = idx[i];
            }
        })
    }
}

/// The same elements, row-major, in a new shape.
pub struct Reshape<'a> {
    /// The output shape.
    pub shape: &'a [u64],
}

impl KernelFamily for Reshape<'_> {
    fn name(&self) -> &'static str {
        "Reshape"
    }
    fn traits(&self) -> Traits {
        Traits::MOVES
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    /// `shape`, which must hold as many elements as `x`.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (x, shape) = (inputs[0], self.shape);
        let (n_in, n_out) = (checked_numel(x), checked_numel(shape));
        if n_in.is_none() || n_in != n_out {
            return Err(err(
                ErrorKind::Layout,
                format!(
                    "Reshape: {} and {} do not hold the same number of elements",
                    fmt_dims(x),
                    fmt_dims(shape)
                ),
            ));
        }
        Ok(shape.to_vec())
    }
    fn by_positions(&self) -> Option<ByPositions<'_>> {
        Some(ByPositions::Reshape)
    }
    fn view(&self) -> Option<View> {
        Some(View::Reshape)
    }
    /// The input element at the same row-major position.
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, s: &[&[u64]]) -> f64 {
        let mut l = 0u64;
        for (i, d) in out_idx.iter().zip(self.shape) {
            l = l * d + i;
        }
        let mut idx = vec![0u64; s[0].len()];
        unravel(s[0], l, &mut idx);
        fetch(0, &idx)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], _: &[u64]) -> Vec<f64> {
        inputs[0].1.to_vec()
    }
}

/// `inputs` tensors joined along `axis` (all other axes equal).
pub struct Concat {
    /// The joined axis.
    pub axis: usize,
    /// The number of inputs.
    pub inputs: usize,
}

impl KernelFamily for Concat {
    fn name(&self) -> &'static str {
        "Concat"
    }
    fn arity(&self) -> usize {
        self.inputs
    }
    fn operand_name(&self, i: usize) -> String {
        format!("x{i}")
    }
    fn traits(&self) -> Traits {
        Traits::MOVES
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    /// The inputs joined along `axis`, every other axis equal.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let (axis, x) = (self.axis, inputs[0]);
        if axis >= x.len() {
            return Err(err(
                ErrorKind::Axis,
                format!(
                    "Concat: axis {axis} is out of range for {} (axes 0..{})",
                    fmt_dims(x),
                    x.len()
                ),
            ));
        }
        let mut out = x.to_vec();
        for (j, s) in inputs.iter().enumerate().skip(1) {
            let fits = s.len() == x.len()
                && s.iter()
                    .zip(x)
                    .enumerate()
                    .all(|(a, (p, q))| a == axis || p == q);
            if !fits {
                return Err(err(
                    ErrorKind::Broadcast,
                    format!(
                        "Concat: input {j} {} does not match input 0 {} on every axis but the joined axis {axis}",
                        fmt_dims(s),
                        fmt_dims(x)
                    ),
                ));
            }
            out[axis] = out[axis]
                .checked_add(s[axis])
                .ok_or_else(|| err(ErrorKind::Layout, "Concat: the joined axis overflows"))?;
        }
        Ok(out)
    }
    fn by_positions(&self) -> Option<ByPositions<'_>> {
        Some(ByPositions::Concat { axis: self.axis })
    }
    fn view(&self) -> Option<View> {
        Some(View::Concat(self.axis))
    }
    /// From the input whose part of the axis holds it (NaN past the last).
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, s: &[&[u64]]) -> f64 {
        let axis = self.axis;
        let mut idx = out_idx.to_vec();
        let mut i = idx[axis];
        for (j, s) in s.iter().enumerate() {
            if i < s[axis] {
                idx[axis] = i;
                return fetch(j, &idx);
            }
            i -= s[axis];
        }
        f64::NAN
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        let axis = self.axis;
        let mut out = vec![0.0; numel(out_shape) as usize];
        let mut idx = vec![0u64; out_shape.len()];
        let mut xi = vec![0u64; out_shape.len()];
        for (l, o) in out.iter_mut().enumerate() {
            unravel(out_shape, l as u64, &mut idx);
            let mut i = idx[axis];
            for (s, v) in inputs {
                if i < s[axis] {
                    xi.copy_from_slice(&idx);
                    xi[axis] = i;
                    *o = v[linear(s, &xi)];
                    break;
                }
                i -= s[axis];
            }
        }
        out
    }
}

/// A strided block of `x`: along every axis `a`, output index `h` reads input index
/// `start[a] + stride[a]·h`, for the indices below `limit[a]`.
pub struct Slice<'a> {
    /// The first input index read on each axis.
    pub start: &'a [u64],
    /// The end (exclusive) of each axis's range, at most the axis's length.
    pub limit: &'a [u64],
    /// The step on each axis, at least 1.
    pub stride: &'a [u64],
}

impl KernelFamily for Slice<'_> {
    fn name(&self) -> &'static str {
        "Slice"
    }
    fn traits(&self) -> Traits {
        Traits::MOVES
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 1)
    }
    /// `ceil((limit − start) / stride)` per axis, after checking that `start`, `limit`
    /// and `stride` name every axis, `start ≤ limit ≤` the axis's length and
    /// `stride ≥ 1`.
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let x = inputs[0];
        let (start, limit, stride) = (self.start, self.limit, self.stride);
        for (name, v) in [("start", start), ("limit", limit), ("stride", stride)] {
            if v.len() != x.len() {
                return Err(err(
                    ErrorKind::Rank,
                    format!(
                        "Slice: `{name}` has {} entries, but `x` {} has {} axes (one entry per axis)",
                        v.len(),
                        fmt_dims(x),
                        x.len()
                    ),
                ));
            }
        }
        (0..x.len())
            .map(|a| {
                let (s, l, k) = (start[a], limit[a], stride[a]);
                if s > l || l > x[a] || k == 0 {
                    let why = if k == 0 {
                        "the stride must be at least 1".to_string()
                    } else if s > l {
                        format!("the start {s} is past the limit {l}")
                    } else {
                        format!("the limit {l} is past the axis's length {}", x[a])
                    };
                    return Err(err(
                        ErrorKind::Axis,
                        format!(
                            "Slice: axis {a} of `x` {}: {s}:{l}:{k} (start:limit:stride) does not fit: {why}",
                            fmt_dims(x)
                        ),
                    ));
                }
                Ok((l - s).div_ceil(k))
            })
            .collect()
    }
    fn by_positions(&self) -> Option<ByPositions<'_>> {
        Some(ByPositions::Slice {
            start: self.start,
            limit: self.limit,
            stride: self.stride,
        })
    }
    fn view(&self) -> Option<View> {
        Some(View::Slice {
            start: self.start.to_vec(),
            limit: self.limit.to_vec(),
            stride: self.stride.to_vec(),
        })
    }
    /// A copy of input elements, in its dtype: exact.
    fn roundings(&self, _: u64) -> Option<u64> {
        None
    }
    /// The input element at `start + stride · out_idx`.
    fn eval(&self, out_idx: &[u64], fetch: Fetch<'_>, _: Visit<'_>, _: &[&[u64]]) -> f64 {
        let idx: Vec<u64> = out_idx
            .iter()
            .zip(self.start.iter().zip(self.stride))
            .map(|(&h, (&s, &k))| s + k * h)
            .collect();
        fetch(0, &idx)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        gather(inputs[0], out_shape, |idx, xi| {
            for a in 0..xi.len() {
                xi[a] = self.start[a] + self.stride[a] * idx[a];
            }
        })
    }
}
