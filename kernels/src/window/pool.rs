//! Max and average pooling and their gradients.

use super::{axes, err, rank_err, spatial, window_map, with_spatial};
use crate::conv::{WindowMap, each_combo};
use crate::kernel::{ErrorKind, KernelError, fmt_dims};

/// How a pooling window combines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PoolKind {
    /// The largest element of the window (padding never wins).
    Max,
    /// The mean of the window.
    Avg {
        /// Divide by the elements inside the input only (else by the whole window).
        exclude_pad: bool,
    },
}

/// A pooling: `backward` false is `(x) → y`; true is the gradient `(x, dy) → dx` for
/// Max (the maximum's position receives the gradient) and `(dy) → dx` for Avg.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Pool {
    /// Max or Avg.
    pub kind: PoolKind,
    /// The gradient.
    pub backward: bool,
    /// The window per spatial axis.
    pub kernel: Vec<u64>,
    /// The step between windows.
    pub strides: Vec<u64>,
    /// The step between window taps.
    pub dilations: Vec<u64>,
    /// Implicit padding before each spatial axis.
    pub pads_begin: Vec<u64>,
    /// Implicit padding after each spatial axis; negative crops the input's end (no
    /// window reaches those elements).
    pub pads_end: Vec<i64>,
    /// Round the number of windows up (`rounding_type: ceil`); a window must still
    /// start inside the input or its leading padding.
    pub ceil: bool,
    /// Data tensors hold the channels last.
    pub channels_last: bool,
    /// Backward: the shape of `dx`; forward: empty.
    pub shape: Vec<u64>,
}

impl Pool {
    /// The kernel's name in messages.
    pub fn name(&self) -> &'static str {
        match (self.kind, self.backward) {
            (PoolKind::Max, false) => "MaxPool",
            (PoolKind::Avg { .. }, false) => "AvgPool",
            (PoolKind::Max, true) => "MaxPoolBackward",
            (PoolKind::Avg { .. }, true) => "AvgPoolBackward",
        }
    }

    /// Inputs: 1, or 2 for MaxPoolBackward (`x`, `dy`).
    pub fn arity(&self) -> usize {
        if self.backward && self.kind == PoolKind::Max {
            2
        } else {
            1
        }
    }

    /// The number of windows along each axis of an input of spatial sizes `input`.
    fn windows(&self, input: &[u64]) -> Result<Vec<u64>, KernelError> {
        let d = self.kernel.len();
        let name = self.name();
        for (what, v) in [
            ("strides", &self.strides),
            ("dilations", &self.dilations),
            ("pads_begin", &self.pads_begin),
        ] {
            if v.len() != d {
                return Err(err(format!(
                    "{name}: `{what}` has {} entries but `kernel` has {d}",
                    v.len()
                )));
            }
        }
        if self.pads_end.len() != d {
            return Err(err(format!(
                "{name}: `pads_end` has {} entries but `kernel` has {d}",
                self.pads_end.len()
            )));
        }
        if input.len() != d {
            return Err(err(format!(
                "{name}: the data has {} spatial axes but `kernel` has {d}",
                input.len()
            )));
        }
        (0..d)
            .map(|i| {
                let (k, s, dl) = (self.kernel[i], self.strides[i], self.dilations[i]);
                let span = (k.max(1) - 1).checked_mul(dl).and_then(|v| v.checked_add(1));
                let padded = u64::try_from(
                    input[i] as i128 + self.pads_begin[i] as i128 + self.pads_end[i] as i128,
                )
                .ok();
                match (span, padded) {
                    (Some(sp), Some(p)) if k > 0 && s > 0 && dl > 0 && p >= sp => {
                        let mut n = if self.ceil {
                            (p - sp).div_ceil(s) + 1
                        } else {
                            (p - sp) / s + 1
                        };
                        if self.ceil && n > 1 && (n - 1) * s >= input[i] + self.pads_begin[i] {
                            n -= 1;
                        }
                        Ok(n)
                    }
                    _ => Err(err(format!(
                        "{name}: spatial axis {i}: the window {k} (stride {s}, dilation {dl}) does not fit the input {} padded by {}+{} (each of kernel, strides and dilations must be at least 1)",
                        input[i], self.pads_begin[i], self.pads_end[i]
                    ))),
                }
            })
            .collect()
    }

    /// The output shape.
    pub fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let name = self.name();
        let d = self.kernel.len();
        if inputs.len() != self.arity() {
            return Err(KernelError::new(
                ErrorKind::Arity,
                format!(
                    "{name} takes {} input(s), got {}",
                    self.arity(),
                    inputs.len()
                ),
            ));
        }
        let x = if self.backward {
            &self.shape[..]
        } else {
            inputs[0]
        };
        if x.len() != d + 2 {
            return Err(rank_err(name, "x", x, d));
        }
        let w = self.windows(spatial(self.channels_last, x))?;
        let y = with_spatial(self.channels_last, x, &w);
        if !self.backward {
            return Ok(y);
        }
        let dy = inputs[inputs.len() - 1];
        let src_ok = self.arity() == 1 || inputs[0] == x;
        if dy != y.as_slice() || !src_ok {
            return Err(KernelError::new(
                ErrorKind::Broadcast,
                format!(
                    "{name}: `dy` {} must be the pooled shape {} of `dx` {}{}",
                    fmt_dims(dy),
                    fmt_dims(&y),
                    fmt_dims(x),
                    if self.arity() == 2 {
                        format!(", and `x` {} the shape of `dx`", fmt_dims(inputs[0]))
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        Ok(x.to_vec())
    }

    /// Vector FLOP `(per first-input element, per output element)`: forward one per
    /// window tap (Avg one more to divide); backward two per window that can cover a
    /// `dx` element (`Π ⌈kernel/stride⌉`: a compare or scale, and an add).
    pub fn flops_per_element(&self) -> (u64, u64) {
        let taps: u64 = self.kernel.iter().product();
        if self.backward {
            let cover: u64 = self
                .kernel
                .iter()
                .zip(&self.strides)
                .map(|(k, s)| k.div_ceil((*s).max(1)))
                .product();
            return (0, 2u64.saturating_mul(cover));
        }
        match self.kind {
            PoolKind::Max => (0, taps),
            PoolKind::Avg { .. } => (0, taps.saturating_add(1)),
        }
    }

    /// The legality map.
    pub fn legality_map(&self, inputs: &[&[u64]]) -> Result<WindowMap, KernelError> {
        let out = self.output_shape(inputs)?;
        Ok(window_map(self.channels_last, out.len(), self.arity()))
    }

    /// Window `p` (a spatial position of `y`) on an input of spatial sizes `input`:
    /// its taps inside the input (spatial positions) and the divisor of Avg.
    fn taps(&self, p: &[u64], input: &[u64]) -> (Vec<Vec<u64>>, f64) {
        let d = self.kernel.len();
        let mut taps = vec![Vec::new(); d];
        for i in 0..d {
            for k in 0..self.kernel[i] {
                let v = (p[i] * self.strides[i] + k * self.dilations[i]) as i128
                    - self.pads_begin[i] as i128;
                if (0..input[i] as i128).contains(&v) {
                    taps[i].push(v as u64);
                }
            }
        }
        let count = match self.kind {
            PoolKind::Avg { exclude_pad: true } => taps.iter().map(|t| t.len() as f64).product(),
            _ => self.kernel.iter().map(|&k| k as f64).product(),
        };
        (taps, count)
    }

    /// The spatial position of the maximum of window `p` of `x` (the first in
    /// window order).
    fn argmax(
        &self,
        p: &[u64],
        input: &[u64],
        read: &mut dyn FnMut(&[u64]) -> f64,
    ) -> Option<Vec<u64>> {
        let (taps, _) = self.taps(p, input);
        let mut best: Option<(f64, Vec<u64>)> = None;
        each_combo(&taps, &mut |t| {
            let v = read(t);
            if best.as_ref().is_none_or(|b| v > b.0) {
                best = Some((v, t.to_vec()));
            }
        });
        best.map(|b| b.1)
    }

    /// One output element (`fetch(input, index)` reads an input element).
    pub fn eval(
        &self,
        out_idx: &[u64],
        fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
        in_shapes: &[&[u64]],
    ) -> f64 {
        let cl = self.channels_last;
        let (_, _, f) = axes(cl, out_idx.len());
        let d = self.kernel.len();
        let mut idx = out_idx.to_vec();
        if !self.backward {
            let input = spatial(cl, in_shapes[0]).to_vec();
            let (taps, count) = self.taps(&out_idx[f..f + d], &input);
            let mut acc = match self.kind {
                PoolKind::Max => f64::NEG_INFINITY,
                PoolKind::Avg { .. } => 0.0,
            };
            each_combo(&taps, &mut |t| {
                idx[f..f + d].copy_from_slice(t);
                let v = fetch(0, &idx);
                acc = match self.kind {
                    PoolKind::Max => acc.max(v),
                    PoolKind::Avg { .. } => acc + v,
                };
            });
            return match self.kind {
                PoolKind::Max => acc,
                PoolKind::Avg { .. } => acc / count,
            };
        }
        // dx at q: every window p with a tap on q.
        let input = spatial(cl, &self.shape).to_vec();
        let dy_in = self.arity() - 1;
        let out_sp = spatial(cl, in_shapes[dy_in]).to_vec();
        let q = out_idx[f..f + d].to_vec();
        let mut lists = vec![Vec::new(); d];
        for i in 0..d {
            for p in 0..out_sp[i] {
                let covers = (0..self.kernel[i]).any(|k| {
                    (p * self.strides[i] + k * self.dilations[i]) as i128
                        - self.pads_begin[i] as i128
                        == q[i] as i128
                });
                if covers {
                    lists[i].push(p);
                }
            }
        }
        let mut acc = 0.0;
        let mut xi = out_idx.to_vec();
        each_combo(&lists, &mut |p| {
            idx[f..f + d].copy_from_slice(p);
            let g = fetch(dy_in, &idx);
            match self.kind {
                PoolKind::Avg { .. } => acc += g / self.taps(p, &input).1,
                PoolKind::Max => {
                    let mut read = |t: &[u64]| {
                        xi[f..f + d].copy_from_slice(t);
                        fetch(0, &xi)
                    };
                    if self.argmax(p, &input, &mut read).as_deref() == Some(&q[..]) {
                        acc += g;
                    }
                }
            }
        });
        acc
    }

    /// The host reference: every window computed and (backward) scattered into `dx`.
    pub fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        let cl = self.channels_last;
        let r = out_shape.len();
        let (b, c, f) = axes(cl, r);
        let d = r - 2;
        let (ys, xs) = if self.backward {
            (inputs[inputs.len() - 1].0, out_shape)
        } else {
            (out_shape, inputs[0].0)
        };
        let lin = |s: &[u64], i: &[u64]| i.iter().zip(s).fold(0u64, |l, (a, d)| l * d + a) as usize;
        let input = spatial(cl, xs).to_vec();
        let mut out = vec![0.0; out_shape.iter().product::<u64>() as usize];
        let all = |n: u64| (0..n).collect::<Vec<u64>>();
        let mut lists = vec![all(ys[b]), all(ys[c])];
        lists.extend(spatial(cl, ys).iter().map(|&v| all(v)));
        let (mut yi, mut xi) = (vec![0u64; r], vec![0u64; r]);
        each_combo(&lists, &mut |t| {
            (yi[b], yi[c], xi[b], xi[c]) = (t[0], t[1], t[0], t[1]);
            yi[f..f + d].copy_from_slice(&t[2..]);
            let (taps, count) = self.taps(&t[2..], &input);
            let x = inputs[0].1;
            let mut best: Option<(f64, usize)> = None;
            let mut sum = 0.0;
            each_combo(&taps, &mut |s| {
                xi[f..f + d].copy_from_slice(s);
                let at = lin(xs, &xi);
                if self.backward {
                    if self.kind != PoolKind::Max {
                        out[at] += inputs[0].1[lin(ys, &yi)] / count;
                    } else if best.is_none_or(|b| x[at] > b.0) {
                        best = Some((x[at], at));
                    }
                } else {
                    sum += x[at];
                    if best.is_none_or(|b| x[at] > b.0) {
                        best = Some((x[at], at));
                    }
                }
            });
            let y = lin(ys, &yi);
            match (self.backward, self.kind) {
                (false, PoolKind::Max) => out[y] = best.map_or(f64::NEG_INFINITY, |b| b.0),
                (false, PoolKind::Avg { .. }) => out[y] = sum / count,
                (true, PoolKind::Max) => {
                    if let Some((_, at)) = best {
                        out[at] += inputs[1].1[y];
                    }
                }
                (true, PoolKind::Avg { .. }) => {}
            }
        });
        out
    }
}

impl crate::family::KernelFamily for Pool {
    fn name(&self) -> &'static str {
        "Pool"
    }
    fn label(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Pool::name(self))
    }
    fn arity(&self) -> usize {
        Pool::arity(self)
    }
    fn flops_per_element(&self) -> (u64, u64) {
        Pool::flops_per_element(self)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Pool::output_shape(self, inputs)
    }
    fn window_map(&self, in_shapes: &[&[u64]]) -> Result<Option<WindowMap>, KernelError> {
        self.legality_map(in_shapes).map(Some)
    }
    fn eval(
        &self,
        out_idx: &[u64],
        fetch: crate::family::Fetch<'_>,
        _: crate::family::Visit<'_>,
        in_shapes: &[&[u64]],
    ) -> f64 {
        Pool::eval(self, out_idx, fetch, in_shapes)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        Pool::reference(self, inputs, out_shape)
    }
}
