//! Convolution as an implicit GEMM on the matrix unit (docs/kernels.md, Convolution):
//! its three passes (forward, backward data, backward weights) share one geometry and
//! one set of `(batch, output channel, output position, input channel, window
//! position)` tuples; they differ in which tensor is the output.
//!
//! - **Forward** `(x, w) → y`: `y[n,o,p] = Σ x[n, g·Cg+c, p·s + k·d − pb] · w[o,c,k]`.
//! - **BackwardData** `(dy, w) → dx`: the adjoint of the forward map in `x` (also
//!   `ConvTranspose`).
//! - **BackwardWeights** `(x, dy) → dw`: the adjoint in `w`, a contraction over the
//!   batch and the output positions.
//!
//! Legality (see [`legality_map`]): a channel or batch axis follows the generic
//! per-level rule (output channels split ⇒ weights split, data replicated; batch split
//! ⇒ data split, weights replicated; input channels split ⇒ partial sums a Reduce
//! completes); a spatial axis read through a window (a halo) must be whole on the unit
//! unless the window is 1 with stride 1 and no padding.

use crate::kernel::{ErrorKind, KernelError, fmt_dims};
use crate::shape::{AxisSource, InputMap};

mod cost;
mod values;

pub(crate) use values::each_combo;
pub use values::{eval, reference};

/// Which map a convolution computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ConvPass {
    /// `(x, w) → y`.
    Forward,
    /// `(dy, w) → dx`: the gradient in the data (and `ConvTranspose`).
    BackwardData,
    /// `(x, dy) → dw`: the gradient in the weights.
    BackwardWeights,
}

/// The order of the weights' axes. `O` is the channels of the forward convolution's
/// output, `I` those of its input per group, `X` the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum WeightsFormat {
    /// `[O, I, X..]`.
    OIX,
    /// `[X.., I, O]`.
    XIO,
    /// `[I, O, X..]`.
    IOX,
    /// `[X.., O, I]`.
    XOI,
}

/// A convolution: the forward geometry and the pass. Data tensors are `[N, C, X..]`
/// (`NCX`) or `[N, X.., C]` (`channels_last`, `NXC`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Conv {
    /// Which map.
    pub pass: ConvPass,
    /// Per spatial axis, the step between output positions.
    pub strides: Vec<u64>,
    /// Per spatial axis, the step between window taps.
    pub dilations: Vec<u64>,
    /// Per spatial axis, the implicit zeros before the input.
    pub pads_begin: Vec<u64>,
    /// Per spatial axis, the implicit zeros after the input.
    pub pads_end: Vec<u64>,
    /// Channel groups (input and output channels are split into this many groups).
    pub groups: u64,
    /// Data tensors hold the channels last (`NXC`).
    pub channels_last: bool,
    /// The weights' axis order.
    pub weights: WeightsFormat,
    /// BackwardData: the shape of `dx` (the forward input); BackwardWeights: the shape of
    /// `dw`; Forward: empty (the output follows from the inputs).
    pub shape: Vec<u64>,
}

/// The sizes of one convolution, in forward terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Batch.
    pub n: u64,
    /// Input channels (all groups).
    pub c: u64,
    /// Output channels (all groups).
    pub o: u64,
    /// Input spatial sizes.
    pub input: Vec<u64>,
    /// Output spatial sizes.
    pub output: Vec<u64>,
    /// Window sizes.
    pub window: Vec<u64>,
}

fn err(msg: String) -> KernelError {
    KernelError::new(ErrorKind::Layout, msg)
}

impl Conv {
    /// The kernel's name in messages.
    pub fn name(&self) -> &'static str {
        match self.pass {
            ConvPass::Forward => "Convolution",
            ConvPass::BackwardData => "ConvolutionBackwardData",
            ConvPass::BackwardWeights => "ConvolutionBackwardWeights",
        }
    }

    /// `(batch axis, channel axis, first spatial axis)` of a data tensor of `rank`.
    pub fn data_axes(&self, rank: usize) -> (usize, usize, usize) {
        if self.channels_last {
            (0, rank - 1, 1)
        } else {
            (0, 1, 2)
        }
    }

    /// `(O axis, I axis, first window axis)` of the weights of `rank`.
    pub fn weight_axes(&self, rank: usize) -> (usize, usize, usize) {
        match self.weights {
            WeightsFormat::OIX => (0, 1, 2),
            WeightsFormat::IOX => (1, 0, 2),
            WeightsFormat::XIO => (rank - 1, rank - 2, 0),
            WeightsFormat::XOI => (rank - 2, rank - 1, 0),
        }
    }

    fn data_shape(&self, n: u64, c: u64, sp: &[u64]) -> Vec<u64> {
        let mut v = vec![n];
        if !self.channels_last {
            v.push(c);
        }
        v.extend_from_slice(sp);
        if self.channels_last {
            v.push(c);
        }
        v
    }

    fn weight_shape(&self, o: u64, i: u64, k: &[u64]) -> Vec<u64> {
        match self.weights {
            WeightsFormat::OIX => [&[o, i][..], k].concat(),
            WeightsFormat::IOX => [&[i, o][..], k].concat(),
            WeightsFormat::XIO => [k, &[i, o][..]].concat(),
            WeightsFormat::XOI => [k, &[o, i][..]].concat(),
        }
    }

    /// `(n, c, spatial)` of a data tensor.
    fn data_dims(&self, s: &[u64], what: &str) -> Result<(u64, u64, Vec<u64>), KernelError> {
        let d = self.strides.len();
        if s.len() != d + 2 {
            return Err(KernelError::new(
                ErrorKind::Rank,
                format!(
                    "{}: `{what}` {} must have rank {} (batch, channels and {d} spatial axes, as `strides` has)",
                    self.name(),
                    fmt_dims(s),
                    d + 2
                ),
            ));
        }
        let (b, c, f) = self.data_axes(s.len());
        Ok((s[b], s[c], s[f..f + d].to_vec()))
    }

    /// `(o, i per group, window)` of the weights.
    fn weight_dims(&self, s: &[u64], what: &str) -> Result<(u64, u64, Vec<u64>), KernelError> {
        let d = self.strides.len();
        if s.len() != d + 2 {
            return Err(KernelError::new(
                ErrorKind::Rank,
                format!(
                    "{}: the weights `{what}` {} must have rank {} ({:?}: 2 channel axes and {d} window axes)",
                    self.name(),
                    fmt_dims(s),
                    d + 2,
                    self.weights
                ),
            ));
        }
        let (o, i, f) = self.weight_axes(s.len());
        Ok((s[o], s[i], s[f..f + d].to_vec()))
    }

    fn check_attrs(&self) -> Result<(), KernelError> {
        let d = self.strides.len();
        let name = self.name();
        if d == 0 {
            return Err(err(format!("{name}: at least one spatial axis is needed")));
        }
        for (what, v) in [
            ("dilations", &self.dilations),
            ("pads_begin", &self.pads_begin),
            ("pads_end", &self.pads_end),
        ] {
            if v.len() != d {
                return Err(err(format!(
                    "{name}: `{what}` has {} entries but `strides` has {d}",
                    v.len()
                )));
            }
        }
        if self.strides.contains(&0) || self.dilations.contains(&0) {
            return Err(err(format!(
                "{name}: strides and dilations must be at least 1"
            )));
        }
        if self.groups == 0 {
            return Err(err(format!("{name}: `groups` must be at least 1")));
        }
        Ok(())
    }

    /// The output spatial sizes of the forward convolution on `input` with `window`.
    fn forward_spatial(&self, input: &[u64], window: &[u64]) -> Result<Vec<u64>, KernelError> {
        (0..input.len())
            .map(|i| {
                let span = (window[i].max(1) - 1)
                    .checked_mul(self.dilations[i])
                    .and_then(|v| v.checked_add(1));
                let padded = input[i]
                    .checked_add(self.pads_begin[i])
                    .and_then(|v| v.checked_add(self.pads_end[i]));
                match (span, padded) {
                    (Some(sp), Some(p)) if window[i] > 0 && p >= sp => {
                        Ok((p - sp) / self.strides[i] + 1)
                    }
                    _ => Err(err(format!(
                        "{}: spatial axis {i}: the window {} (dilation {}) does not fit the input {} padded by {}+{}",
                        self.name(),
                        window[i],
                        self.dilations[i],
                        input[i],
                        self.pads_begin[i],
                        self.pads_end[i]
                    ))),
                }
            })
            .collect()
    }

    /// The forward geometry from the inputs' shapes, checked.
    pub fn geometry(&self, inputs: &[&[u64]]) -> Result<Geometry, KernelError> {
        self.check_attrs()?;
        let name = self.name();
        if inputs.len() != 2 {
            return Err(KernelError::new(
                ErrorKind::Arity,
                format!("{name} takes 2 inputs, got {}", inputs.len()),
            ));
        }
        let g = self.groups;
        let (n, c, input, o, cg, window, output) = match self.pass {
            ConvPass::Forward => {
                let (n, c, input) = self.data_dims(inputs[0], "x")?;
                let (o, cg, window) = self.weight_dims(inputs[1], "w")?;
                let output = self.forward_spatial(&input, &window)?;
                (n, c, input, o, cg, window, output)
            }
            ConvPass::BackwardData => {
                let (n, o, output) = self.data_dims(inputs[0], "dy")?;
                let (wo, cg, window) = self.weight_dims(inputs[1], "w")?;
                let (n2, c, input) = self.data_dims(&self.shape, "dx")?;
                if wo != o || n2 != n {
                    return Err(KernelError::new(
                        ErrorKind::Contraction,
                        format!(
                            "{name}: `dy` {} has {n} batches and {o} channels; the weights {} have {wo} output channels and `dx` {} has {n2} batches",
                            fmt_dims(inputs[0]),
                            fmt_dims(inputs[1]),
                            fmt_dims(&self.shape)
                        ),
                    ));
                }
                (n, c, input, o, cg, window, output)
            }
            ConvPass::BackwardWeights => {
                let (n, c, input) = self.data_dims(inputs[0], "x")?;
                let (n2, o, output) = self.data_dims(inputs[1], "dy")?;
                let (wo, cg, window) = self.weight_dims(&self.shape, "dw")?;
                if wo != o || n2 != n {
                    return Err(KernelError::new(
                        ErrorKind::Contraction,
                        format!(
                            "{name}: `x` {} and `dy` {} must have the same batch, and `dy`'s {o} channels must be the weights' {} {wo} output channels",
                            fmt_dims(inputs[0]),
                            fmt_dims(inputs[1]),
                            fmt_dims(&self.shape)
                        ),
                    ));
                }
                (n, c, input, o, cg, window, output)
            }
        };
        if [n, c, o, cg].contains(&0) {
            return Err(err(format!(
                "{name}: the batch and the channels must be at least 1 (batch {n}, input channels {c}, output channels {o}, per group {cg})"
            )));
        }
        if c != cg.saturating_mul(g) || o % g != 0 {
            return Err(KernelError::new(
                ErrorKind::Contraction,
                format!(
                    "{name}: with {g} group(s) the input's {c} channels must be {g} × the weights' {cg} input channels per group, and the {o} output channels a multiple of {g}"
                ),
            ));
        }
        let want = self.forward_spatial(&input, &window)?;
        if want != output {
            return Err(err(format!(
                "{name}: an input of spatial size {} gives an output of {} with these strides, dilations and pads, not {}",
                fmt_dims(&input),
                fmt_dims(&want),
                fmt_dims(&output)
            )));
        }
        Ok(Geometry {
            n,
            c,
            o,
            input,
            output,
            window,
        })
    }

    /// The output shape.
    pub fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let g = self.geometry(inputs)?;
        Ok(match self.pass {
            ConvPass::Forward => self.data_shape(g.n, g.o, &g.output),
            ConvPass::BackwardData | ConvPass::BackwardWeights => self.shape.clone(),
        })
    }

    /// The reduced variables: Forward `[C/g, X..]` (input channels per group, the
    /// window), BackwardData `[O/g, X..]`, BackwardWeights `[N, output positions..]`.
    pub fn reduced_extents(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let g = self.geometry(inputs)?;
        let mut v = match self.pass {
            ConvPass::Forward => vec![g.c / self.groups],
            ConvPass::BackwardData => vec![g.o / self.groups],
            ConvPass::BackwardWeights => vec![g.n],
        };
        v.extend(match self.pass {
            ConvPass::BackwardWeights => &g.output,
            _ => &g.window,
        });
        Ok(v)
    }

    /// Whether spatial axis `i` maps output position `p` to input position `p` (a
    /// window of 1, stride 1, no padding): no halo.
    fn pointwise(&self, g: &Geometry, i: usize) -> bool {
        g.window[i] == 1 && self.strides[i] == 1 && self.pads_begin[i] == 0 && self.pads_end[i] == 0
    }

    /// Useful FLOP: `2 · N · O · Π output · C/g · Π window`.
    pub fn flops(&self, inputs: &[&[u64]]) -> Result<u128, KernelError> {
        let g = self.geometry(inputs)?;
        let p = |v: &[u64]| v.iter().fold(1u128, |a, &b| a.saturating_mul(b as u128));
        Ok(2u128
            .saturating_mul(g.n as u128)
            .saturating_mul(g.o as u128)
            .saturating_mul(p(&g.output))
            .saturating_mul((g.c / self.groups) as u128)
            .saturating_mul(p(&g.window)))
    }
}

/// The per-axis index map the legality rule checks, with the axes that must be whole
/// on the unit marked [`AxisSource::Broadcast`] (a spatial axis read through a window,
/// or a channel axis that groups index), and the output axes that read such a window:
/// `(output axis, input)`.
pub struct WindowMap {
    /// One map per input.
    pub maps: Vec<InputMap>,
    /// Output axes whose elements read a window of an input's whole axis.
    pub halo: Vec<(usize, usize)>,
    /// What messages call the place that needs such an axis whole: `unit` (a
    /// convolution's) or `PE`.
    pub whole_on: &'static str,
    /// What messages add on when the kernel could split a spatial axis (a
    /// convolution's pointwise case), or nothing.
    pub split_note: &'static str,
}

/// The legality map of `c` (see [`WindowMap`]).
pub(crate) fn legality_map(c: &Conv, inputs: &[&[u64]]) -> Result<WindowMap, KernelError> {
    use AxisSource::{Broadcast, Out, Reduced};
    let g = c.geometry(inputs)?;
    let d = c.strides.len();
    let r = d + 2;
    let (db, dc, ds) = c.data_axes(r);
    let (wo, wi, ws) = c.weight_axes(r);
    let grouped = c.groups > 1;
    let depthwise = g.c == c.groups && g.o == c.groups;
    let mut halo = Vec::new();
    let mut m0 = vec![Broadcast; r];
    let mut m1 = vec![Broadcast; r];
    match c.pass {
        ConvPass::Forward | ConvPass::BackwardData => {
            // Input 0 is the data (x or dy) in the layout of the output; input 1 the weights.
            m0[db] = Out(db);
            m0[dc] = if !grouped {
                Reduced(0)
            } else if depthwise {
                Out(dc)
            } else {
                Broadcast
            };
            for i in 0..d {
                if c.pointwise(&g, i) {
                    m0[ds + i] = Out(ds + i);
                } else {
                    halo.push((ds + i, 0));
                }
                m1[ws + i] = Reduced(1 + i);
            }
            // The weights' axis that runs along the output's channels, and the one
            // contracted; grouped backward data indexes both by group (whole).
            let (own, other) = match c.pass {
                ConvPass::BackwardData if !depthwise => (wi, wo),
                _ => (wo, wi),
            };
            if c.pass == ConvPass::BackwardData && grouped && !depthwise {
                (m1[own], m1[other]) = (Broadcast, Broadcast);
            } else {
                (m1[own], m1[other]) = (Out(dc), Reduced(0));
            }
        }
        ConvPass::BackwardWeights => {
            // x, dy → dw (in the weights' layout).
            m0[db] = Reduced(0);
            m0[dc] = if !grouped {
                Out(wi)
            } else if depthwise {
                Out(wo)
            } else {
                Broadcast
            };
            m1[db] = Reduced(0);
            m1[dc] = Out(wo);
            for i in 0..d {
                if c.pointwise(&g, i) {
                    m0[ds + i] = Reduced(1 + i);
                } else {
                    halo.push((ws + i, 0));
                }
                m1[ds + i] = Reduced(1 + i);
            }
        }
    }
    Ok(WindowMap {
        maps: vec![InputMap { axes: m0 }, InputMap { axes: m1 }],
        halo,
        whole_on: "unit",
        split_note: "; only a window of 1 with stride 1 and no padding lets a convolution split a spatial axis",
    })
}

impl crate::family::KernelFamily for Conv {
    fn name(&self) -> &'static str {
        "Conv"
    }
    fn label(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Conv::name(self))
    }
    fn arity(&self) -> usize {
        2
    }
    fn traits(&self) -> crate::family::Traits {
        crate::family::Traits::CONTRACTION
    }
    /// On the vector unit: 2 per multiply-add.
    fn flops_per_element(&self) -> (u64, u64) {
        (0, 2)
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Conv::output_shape(self, inputs)
    }
    fn window_map(&self, in_shapes: &[&[u64]]) -> Result<Option<WindowMap>, KernelError> {
        legality_map(self, in_shapes).map(Some)
    }
    fn reduced_extents(&self, in_shapes: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Conv::reduced_extents(self, in_shapes)
    }
    /// The data's last axis.
    fn contracted_axis_a(&self, a: &[u64], _: &[u64]) -> Option<usize> {
        a.len().checked_sub(1)
    }
    /// Its multiply-adds: 2 · N · O · Π output · C/g · Π window.
    fn matrix_flops(&self, inputs: &[&[u64]], _: u128) -> Option<u128> {
        self.flops(inputs).ok()
    }
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        Some(reduction_len.max(1))
    }
    fn eval(
        &self,
        out_idx: &[u64],
        fetch: crate::family::Fetch<'_>,
        visit: crate::family::Visit<'_>,
        in_shapes: &[&[u64]],
    ) -> f64 {
        let n = Conv::reduced_extents(self, in_shapes).map_or(0, |e| e.len());
        let lists: Vec<Vec<u64>> = (0..n).map(|r| crate::family::held(visit, r)).collect();
        eval(self, out_idx, fetch, &lists, in_shapes)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        reference(self, inputs, out_shape)
    }
    /// Implicit GEMM on the matrix unit ([`cost`]).
    fn own_cost(
        &self,
        inputs: &[&mnsim_arch::TensorLayout],
        out: &mnsim_arch::TensorLayout,
        legality: &crate::Legality,
        m: &mnsim_arch::Machine,
        dtype: mnsim_arch::DType,
        runtime: &[&[u64]],
    ) -> Option<Result<crate::KernelCost, KernelError>> {
        Some(cost::cost(self, inputs, out, legality, m, dtype, runtime))
    }
}
