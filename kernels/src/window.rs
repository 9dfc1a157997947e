//! Window kernels on the vector unit (docs/kernels.md, Pooling and Interpolate):
//! max and average pooling, nearest and (multi)linear interpolation, and their
//! gradients. Data tensors are `[N, C, X..]` or `[N, X.., C]` (`channels_last`); every
//! output element reads a window of the spatial axes, so those must be whole on the PE
//! (the batch and channel axes split freely).

use crate::conv::{WindowMap, each_combo};
use crate::kernel::Kernel;
use crate::legality::{bcast_with, group_text};
use mnsim_arch::layout::{Class, TensorLayout};
use crate::kernel::{ErrorKind, KernelError, fmt_dims};
use crate::shape::{AxisSource, InputMap};

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
    /// Implicit padding after each spatial axis.
    pub pads_end: Vec<u64>,
    /// Round the number of windows up (`rounding_type: ceil`); a window must still
    /// start inside the input or its leading padding.
    pub ceil: bool,
    /// Data tensors hold the channels last.
    pub channels_last: bool,
    /// Backward: the shape of `dx`; forward: empty.
    pub shape: Vec<u64>,
}

fn err(msg: String) -> KernelError {
    KernelError::new(ErrorKind::Layout, msg)
}

fn rank_err(name: &str, what: &str, s: &[u64], d: usize) -> KernelError {
    KernelError::new(
        ErrorKind::Rank,
        format!(
            "{name}: `{what}` {} must have rank {} (batch, channels and {d} spatial axes)",
            fmt_dims(s),
            d + 2
        ),
    )
}

/// `(batch axis, channel axis, first spatial axis)`.
fn axes(channels_last: bool, rank: usize) -> (usize, usize, usize) {
    if channels_last {
        (0, rank - 1, 1)
    } else {
        (0, 1, 2)
    }
}

/// The spatial sizes of a data tensor.
fn spatial(channels_last: bool, s: &[u64]) -> &[u64] {
    let (_, _, f) = axes(channels_last, s.len());
    &s[f..f + s.len() - 2]
}

fn with_spatial(channels_last: bool, s: &[u64], sp: &[u64]) -> Vec<u64> {
    let mut v = s.to_vec();
    let (_, _, f) = axes(channels_last, s.len());
    v[f..f + sp.len()].copy_from_slice(sp);
    v
}

/// The map of a window kernel: batch and channels follow the output, spatial axes are
/// whole and each output spatial axis reads a halo of every input.
fn window_map(channels_last: bool, rank: usize, inputs: usize) -> WindowMap {
    let (b, c, f) = axes(channels_last, rank);
    let mut m = vec![AxisSource::Broadcast; rank];
    m[b] = AxisSource::Out(b);
    m[c] = AxisSource::Out(c);
    WindowMap {
        maps: vec![InputMap { axes: m }; inputs],
        halo: (f..f + rank - 2)
            .flat_map(|a| (0..inputs).map(move |j| (a, j)))
            .collect(),
    }
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
            ("pads_end", &self.pads_end),
        ] {
            if v.len() != d {
                return Err(err(format!(
                    "{name}: `{what}` has {} entries but `kernel` has {d}",
                    v.len()
                )));
            }
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
                let padded = input[i]
                    .checked_add(self.pads_begin[i])
                    .and_then(|v| v.checked_add(self.pads_end[i]));
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
                format!("{name} takes {} input(s), got {}", self.arity(), inputs.len()),
            ));
        }
        let x = if self.backward { &self.shape[..] } else { inputs[0] };
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
    fn argmax(&self, p: &[u64], input: &[u64], read: &mut dyn FnMut(&[u64]) -> f64) -> Option<Vec<u64>> {
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
    pub fn eval(&self, out_idx: &[u64], fetch: &mut dyn FnMut(usize, &[u64]) -> f64, in_shapes: &[&[u64]]) -> f64 {
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
                    (p * self.strides[i] + k * self.dilations[i]) as i128 - self.pads_begin[i] as i128
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

/// How Interpolate reads between input positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum InterpMode {
    /// The nearest input position: `round((o + ½)·I/O − ½)`, halves away from zero.
    Nearest,
    /// Linear along every spatial axis (`linear`, `bilinear`, `trilinear`).
    Linear,
}

/// Where output position `o` of `O` sits on an input axis of `I` (linear mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CoordMode {
    /// `(o + ½)·I/O − ½`, clamped to `[0, I−1]`.
    HalfPixel,
    /// `o·(I−1)/(O−1)`.
    AlignCorners,
}

/// Resizing the spatial axes: `backward` false is `(x) → y`, true the gradient
/// `(dy) → dx` (each `dy` element spread over the input positions it read, with their
/// weights).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Interp {
    /// Nearest or linear.
    pub mode: InterpMode,
    /// The coordinate transformation (linear mode).
    pub coord: CoordMode,
    /// The gradient.
    pub backward: bool,
    /// Data tensors hold the channels last.
    pub channels_last: bool,
    /// The output's spatial sizes (`y` forward, `dx` backward).
    pub sizes: Vec<u64>,
}

impl Interp {
    /// The kernel's name in messages.
    pub fn name(&self) -> &'static str {
        if self.backward {
            "InterpolateBackward"
        } else {
            "Interpolate"
        }
    }

    /// The output shape of `(x)` (or `(dy)`).
    pub fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let name = self.name();
        if inputs.len() != 1 {
            return Err(KernelError::new(
                ErrorKind::Arity,
                format!("{name} takes 1 input, got {}", inputs.len()),
            ));
        }
        let x = inputs[0];
        let d = self.sizes.len();
        if x.len() != d + 2 || d == 0 {
            return Err(rank_err(name, "x", x, d));
        }
        if self.sizes.contains(&0) || spatial(self.channels_last, x).contains(&0) {
            return Err(err(format!(
                "{name}: spatial sizes must be at least 1 (input {}, output {})",
                fmt_dims(x),
                fmt_dims(&self.sizes)
            )));
        }
        Ok(with_spatial(self.channels_last, x, &self.sizes))
    }

    /// Vector FLOP `(per first-input element, per output element)`: forward nearest
    /// `(0, 1)`, linear `(0, 3·2^d)` (a weight, a multiply and an add per corner);
    /// backward: the same per `dy` element, scattered.
    pub fn flops_per_element(&self) -> (u64, u64) {
        let corners = 1u64 << self.sizes.len().min(32);
        let f = match self.mode {
            InterpMode::Nearest => 1,
            InterpMode::Linear => 3u64.saturating_mul(corners),
        };
        if self.backward { (f, 0) } else { (0, f) }
    }

    /// The legality map.
    pub fn legality_map(&self, inputs: &[&[u64]]) -> Result<WindowMap, KernelError> {
        let out = self.output_shape(inputs)?;
        Ok(window_map(self.channels_last, out.len(), 1))
    }

    /// The input positions output position `o` of `big_o` reads on an axis of `big_i`,
    /// with their weights.
    fn taps(&self, o: u64, big_o: u64, big_i: u64) -> Vec<(u64, f64)> {
        let (o, fo, fi) = (o as f64, big_o as f64, big_i as f64);
        match self.mode {
            InterpMode::Nearest => {
                let v = ((o + 0.5) * fi / fo - 0.5).round().clamp(0.0, fi - 1.0);
                vec![(v as u64, 1.0)]
            }
            InterpMode::Linear => {
                let s = match self.coord {
                    CoordMode::HalfPixel => (o + 0.5) * fi / fo - 0.5,
                    CoordMode::AlignCorners if big_o > 1 => o * (fi - 1.0) / (fo - 1.0),
                    CoordMode::AlignCorners => 0.0,
                }
                .clamp(0.0, fi - 1.0);
                let i0 = s.floor();
                let w1 = s - i0;
                let i1 = (i0 + 1.0).min(fi - 1.0);
                vec![(i0 as u64, 1.0 - w1), (i1 as u64, w1)]
            }
        }
    }

    /// One output element.
    pub fn eval(&self, out_idx: &[u64], fetch: &mut dyn FnMut(usize, &[u64]) -> f64, in_shapes: &[&[u64]]) -> f64 {
        let cl = self.channels_last;
        let (_, _, f) = axes(cl, out_idx.len());
        let d = self.sizes.len();
        let other = spatial(cl, in_shapes[0]).to_vec();
        // Per axis: the (input position, weight) pairs this element combines.
        let per_axis: Vec<Vec<(u64, f64)>> = (0..d)
            .map(|i| {
                let q = out_idx[f + i];
                if self.backward {
                    // Every dy position whose taps include q.
                    (0..other[i])
                        .flat_map(|o| {
                            self.taps(o, other[i], self.sizes[i])
                                .into_iter()
                                .filter(move |t| t.0 == q)
                                .map(move |t| (o, t.1))
                        })
                        .collect()
                } else {
                    self.taps(q, self.sizes[i], other[i])
                }
            })
            .collect();
        let lists: Vec<Vec<u64>> = per_axis.iter().map(|v| (0..v.len() as u64).collect()).collect();
        let mut idx = out_idx.to_vec();
        let mut acc = 0.0;
        each_combo(&lists, &mut |t| {
            let mut w = 1.0;
            for i in 0..d {
                let (p, wi) = per_axis[i][t[i] as usize];
                idx[f + i] = p;
                w *= wi;
            }
            acc += w * fetch(0, &idx);
        });
        acc
    }

    /// The host reference: forward gathers the corners; backward scatters each `dy`
    /// element onto them.
    pub fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        let cl = self.channels_last;
        let r = out_shape.len();
        let (b, c, f) = axes(cl, r);
        let d = r - 2;
        let (ys, xs) = if self.backward {
            (inputs[0].0, out_shape)
        } else {
            (out_shape, inputs[0].0)
        };
        let (xsp, ysp) = (spatial(cl, xs).to_vec(), spatial(cl, ys).to_vec());
        let lin = |s: &[u64], i: &[u64]| i.iter().zip(s).fold(0u64, |l, (a, d)| l * d + a) as usize;
        let mut out = vec![0.0; out_shape.iter().product::<u64>() as usize];
        let all = |n: u64| (0..n).collect::<Vec<u64>>();
        let mut lists = vec![all(ys[b]), all(ys[c])];
        lists.extend(ysp.iter().map(|&v| all(v)));
        let (mut yi, mut xi) = (vec![0u64; r], vec![0u64; r]);
        each_combo(&lists, &mut |t| {
            (yi[b], yi[c], xi[b], xi[c]) = (t[0], t[1], t[0], t[1]);
            yi[f..f + d].copy_from_slice(&t[2..]);
            let taps: Vec<Vec<(u64, f64)>> = (0..d)
                .map(|i| self.taps(t[2 + i], ysp[i], xsp[i]))
                .collect();
            let corners: Vec<Vec<u64>> = taps.iter().map(|v| (0..v.len() as u64).collect()).collect();
            let y = lin(ys, &yi);
            let mut acc = 0.0;
            each_combo(&corners, &mut |k| {
                let mut w = 1.0;
                for i in 0..d {
                    let (p, wi) = taps[i][k[i] as usize];
                    xi[f + i] = p;
                    w *= wi;
                }
                let x = lin(xs, &xi);
                if self.backward {
                    out[x] += w * inputs[0].1[y];
                } else {
                    acc += w * inputs[0].1[x];
                }
            });
            if !self.backward {
                out[y] = acc;
            }
        });
        out
    }
}

/// The legality map of a window kernel (Conv, Pool, Interp); `None` for the kernels
/// with a per-axis index map or none at all.
pub fn map_of(k: &Kernel, in_shapes: &[&[u64]]) -> Result<Option<WindowMap>, KernelError> {
    match k {
        Kernel::Conv(c) => crate::conv::legality_map(c, in_shapes).map(Some),
        Kernel::Pool(p) => p.legality_map(in_shapes).map(Some),
        Kernel::Interp(i) => i.legality_map(in_shapes).map(Some),
        Kernel::Unary(_)
        | Kernel::Binary(_)
        | Kernel::MatMul
        | Kernel::BatchMatMul
        | Kernel::ReduceAxes { .. }
        | Kernel::Softmax { .. }
        | Kernel::LayerNorm { .. }
        | Kernel::Transpose { .. }
        | Kernel::Select
        | Kernel::Clamp { .. }
        | Kernel::Elu { .. }
        | Kernel::BiasAdd { .. }
        | Kernel::GeneralMatMul { .. }
        | Kernel::Reshape { .. }
        | Kernel::Concat { .. } => Ok(None),
    }
}

/// Whether `l` splits its axis `a` over addressable level `x`.
fn splits(l: &TensorLayout, a: usize, x: usize) -> bool {
    l.groups()[a]
        .iter()
        .any(|s| s.class == Class::Level(x) && s.size > 1)
}

/// The window rule, at every level down to the unit's: an axis an output element reads
/// through a window (or a channel group) must be whole on the unit wherever the input
/// is not replicated, and an output axis reading a halo may be split only where that
/// input is replicated.
pub(crate) fn check_whole(
    k: &Kernel,
    w: &WindowMap,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    names: &[String],
    unit_level: usize,
) -> Result<(), KernelError> {
    let illegal = |operand, level, msg| KernelError::new(ErrorKind::Illegal { operand, level }, msg);
    let on = if matches!(k, Kernel::Conv(_)) { "unit" } else { "PE" };
    let why = if matches!(k, Kernel::Conv(_)) {
        "; only a window of 1 with stride 1 and no padding lets a convolution split a spatial axis"
    } else {
        ""
    };
    let levels = out.levels().len();
    for x in 0..=unit_level.min(levels.saturating_sub(1)) {
        let lv = &out.levels()[x].name;
        for (j, l) in inputs.iter().enumerate() {
            if l.levels()[x].replicated {
                continue;
            }
            for (a, src) in w.maps[j].axes.iter().enumerate() {
                if *src == AxisSource::Broadcast && splits(l, a, x) {
                    return Err(illegal(
                        j,
                        x,
                        format!(
                            "{k}: input `{}` is split over {lv} along its axis {a} = {}, which every output element reads \
                             across (a window's halo, or a channel group), so each {on} needs the whole axis{why}. \
                             Relayout `{}` so axis {a} has no {lv} sub-axis (keep it in memory, W or Time), or \
                             replicate it over {lv} ({})",
                            names[j],
                            group_text(l, a),
                            names[j],
                            bcast_with(l, x)
                        ),
                    ));
                }
            }
        }
        if out.levels()[x].replicated {
            continue;
        }
        for &(h, j) in &w.halo {
            if !inputs[j].levels()[x].replicated && splits(out, h, x) {
                let no = &names[inputs.len()];
                return Err(illegal(
                    inputs.len(),
                    x,
                    format!(
                        "{k}: the output `{no}` is split over {lv} along its axis {h} = {}, but each of its \
                         elements reads a window of input `{}` across that split (a halo) and `{}` is not \
                         replicated over {lv}{why}. Relayout `{no}` so axis {h} has no {lv} sub-axis, or replicate \
                         `{}` over {lv} ({})",
                        group_text(out, h),
                        names[j],
                        names[j],
                        names[j],
                        bcast_with(inputs[j], x)
                    ),
                ));
            }
        }
    }
    Ok(())
}
