//! Nearest and linear interpolation and their gradients.

use super::{axes, err, rank_err, spatial, window_map, with_spatial};
use crate::conv::{WindowMap, each_combo};
use crate::kernel::{ErrorKind, KernelError, fmt_dims};

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
    pub fn eval(
        &self,
        out_idx: &[u64],
        fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
        in_shapes: &[&[u64]],
    ) -> f64 {
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
        let lists: Vec<Vec<u64>> = per_axis
            .iter()
            .map(|v| (0..v.len() as u64).collect())
            .collect();
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
            let corners: Vec<Vec<u64>> =
                taps.iter().map(|v| (0..v.len() as u64).collect()).collect();
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

impl crate::family::KernelFamily for Interp {
    fn name(&self) -> &'static str {
        "Interp"
    }
    fn label(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Interp::name(self))
    }
    fn flops_per_element(&self) -> (u64, u64) {
        Interp::flops_per_element(self)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Interp::output_shape(self, inputs)
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
        Interp::eval(self, out_idx, fetch, in_shapes)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        Interp::reference(self, inputs, out_shape)
    }
}
