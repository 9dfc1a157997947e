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
        g.window[i] == 1
            && self.strides[i] == 1
            && self.pads_begin[i] == 0
            && self.pads_end[i] == 0
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
    })
}

/// Calls `f` with every combination of one value from each list (the last fastest).
pub(crate) fn each_combo(lists: &[Vec<u64>], f: &mut dyn FnMut(&[u64])) {
    if lists.iter().any(Vec::is_empty) {
        return;
    }
    let mut at = vec![0usize; lists.len()];
    let mut v: Vec<u64> = lists.iter().map(|l| l[0]).collect();
    loop {
        f(&v);
        let mut j = lists.len();
        loop {
            if j == 0 {
                return;
            }
            j -= 1;
            at[j] += 1;
            if at[j] < lists[j].len() {
                v[j] = lists[j][at[j]];
                break;
            }
            at[j] = 0;
            v[j] = lists[j][0];
        }
    }
}

/// Input position `p·s + k·d − pb` on spatial axis `i`, if inside `0..len`.
fn tap(c: &Conv, i: usize, p: u64, k: u64, len: u64) -> Option<u64> {
    let v = p as i128 * c.strides[i] as i128 + k as i128 * c.dilations[i] as i128
        - c.pads_begin[i] as i128;
    (0..len as i128).contains(&v).then_some(v as u64)
}

/// One output element, gathering over the reduced variables' values `lists` (see
/// [`Conv::reduced_extents`]). `fetch(input, index)` reads an input element.
pub fn eval(
    c: &Conv,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    lists: &[Vec<u64>],
    in_shapes: &[&[u64]],
) -> f64 {
    let Ok(g) = c.geometry(in_shapes) else {
        return f64::NAN;
    };
    let d = c.strides.len();
    let r = d + 2;
    let (db, dc, ds) = c.data_axes(r);
    let (wo, wi, ws) = c.weight_axes(r);
    let (cg, og) = (g.c / c.groups, g.o / c.groups);
    let mut xi = vec![0u64; r];
    let mut wv = vec![0u64; r];
    let mut yi = vec![0u64; r];
    let mut acc = 0.0;
    match c.pass {
        ConvPass::Forward => {
            let (n, o) = (out_idx[db], out_idx[dc]);
            let grp = o / og;
            (xi[db], wv[wo]) = (n, o);
            each_combo(lists, &mut |t| {
                for i in 0..d {
                    match tap(c, i, out_idx[ds + i], t[1 + i], g.input[i]) {
                        Some(v) => xi[ds + i] = v,
                        None => return,
                    }
                    wv[ws + i] = t[1 + i];
                }
                xi[dc] = grp * cg + t[0];
                wv[wi] = t[0];
                acc += fetch(0, &xi) * fetch(1, &wv);
            });
        }
        ConvPass::BackwardData => {
            let (n, ch) = (out_idx[db], out_idx[dc]);
            let grp = ch / cg;
            (yi[db], wv[wi]) = (n, ch % cg);
            each_combo(lists, &mut |t| {
                for i in 0..d {
                    // dx position q is read by output position p where p·s = q + pb − k·d.
                    let num = out_idx[ds + i] as i128 + c.pads_begin[i] as i128
                        - t[1 + i] as i128 * c.dilations[i] as i128;
                    let s = c.strides[i] as i128;
                    if num < 0 || num % s != 0 || num / s >= g.output[i] as i128 {
                        return;
                    }
                    yi[ds + i] = (num / s) as u64;
                    wv[ws + i] = t[1 + i];
                }
                let o = grp * og + t[0];
                yi[dc] = o;
                wv[wo] = o;
                acc += fetch(0, &yi) * fetch(1, &wv);
            });
        }
        ConvPass::BackwardWeights => {
            let (o, ci) = (out_idx[wo], out_idx[wi]);
            let grp = o / og;
            (xi[dc], yi[dc]) = (grp * cg + ci, o);
            each_combo(lists, &mut |t| {
                for i in 0..d {
                    match tap(c, i, t[1 + i], out_idx[ws + i], g.input[i]) {
                        Some(v) => xi[ds + i] = v,
                        None => return,
                    }
                    yi[ds + i] = t[1 + i];
                }
                (xi[db], yi[db]) = (t[0], t[0]);
                acc += fetch(0, &xi) * fetch(1, &yi);
            });
        }
    }
    acc
}

fn linear(shape: &[u64], idx: &[u64]) -> usize {
    idx.iter().zip(shape).fold(0u64, |l, (i, d)| l * d + i) as usize
}

/// The host reference: every `(n, o, output position, c, window position)` tuple whose
/// input position is inside the input, scattered into the output (an independent
/// order from [`eval`], which gathers).
pub fn reference(c: &Conv, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
    let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
    let g = c.geometry(&shapes).expect("reference: shapes do not fit");
    let d = c.strides.len();
    let r = d + 2;
    let (db, dc, ds) = c.data_axes(r);
    let (wo, wi, ws) = c.weight_axes(r);
    let (cg, og) = (g.c / c.groups, g.o / c.groups);
    let xshape = c.data_shape(g.n, g.c, &g.input);
    let yshape = c.data_shape(g.n, g.o, &g.output);
    let wshape = c.weight_shape(g.o, cg, &g.window);
    let mut out = vec![0.0; out_shape.iter().product::<u64>() as usize];
    let all = |n: u64| (0..n).collect::<Vec<u64>>();
    let mut lists = vec![all(g.n), all(g.o), all(cg)];
    lists.extend(g.output.iter().map(|&v| all(v)));
    lists.extend(g.window.iter().map(|&v| all(v)));
    let (mut xi, mut yi, mut wv) = (vec![0u64; r], vec![0u64; r], vec![0u64; r]);
    each_combo(&lists, &mut |t| {
        let (n, o, ci) = (t[0], t[1], t[2]);
        for i in 0..d {
            let (p, k) = (t[3 + i], t[3 + d + i]);
            match tap(c, i, p, k, g.input[i]) {
                Some(v) => xi[ds + i] = v,
                None => return,
            }
            yi[ds + i] = p;
            wv[ws + i] = k;
        }
        (xi[db], xi[dc]) = (n, (o / og) * cg + ci);
        (yi[db], yi[dc]) = (n, o);
        (wv[wo], wv[wi]) = (o, ci);
        let (x, y, w) = (linear(&xshape, &xi), linear(&yshape, &yi), linear(&wshape, &wv));
        match c.pass {
            ConvPass::Forward => out[y] += inputs[0].1[x] * inputs[1].1[w],
            ConvPass::BackwardData => out[x] += inputs[0].1[y] * inputs[1].1[w],
            ConvPass::BackwardWeights => out[w] += inputs[0].1[x] * inputs[1].1[y],
        }
    });
    out
}

/// Cycles of a convolution as an implicit GEMM (docs/kernels.md): per unit, the groups
/// it holds times `⌈M/tm⌉·⌈N/tn⌉·⌈K/tk⌉` tiles, where (per group) Forward has
/// `M = batch × output positions`, `N = output channels`, `K = input channels × window`;
/// BackwardData `M = batch × input positions`, `N = input channels`, `K = output
/// channels × window`; BackwardWeights `M = output channels`, `N = input channels ×
/// window`, `K = batch × output positions`. The per-unit extents come from the
/// layouts' sub-axes below the unit (padded, as MatMul's). Without a matrix rate the
/// PE's vector unit does `2·M·N·K` per group.
pub(crate) fn cost(
    c: &Conv,
    inputs: &[&mnsim_arch::layout::TensorLayout],
    out: &mnsim_arch::layout::TensorLayout,
    legality: &crate::legality::Legality,
    m: &mnsim_arch::Machine,
    dtype: mnsim_arch::DType,
    runtime: &[&[u64]],
) -> Result<crate::cost::KernelCost, KernelError> {
    use crate::cost::{KernelCost, clamp, div_ceil, per_unit_extent, vector_rate};
    let logical: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    let g = c.geometry(&logical)?;
    let useful = c.flops(runtime)?;
    let matrix = (legality.unit == crate::legality::Unit::Mab)
        .then(|| {
            let mx = &m.compute.matrix;
            Some((*mx.flops.get(&dtype)?, *mx.tile.get(&dtype)?))
        })
        .flatten();
    let leaf = m.addressable_levels().len().saturating_sub(1);
    let u = if matrix.is_some() {
        legality.unit_level
    } else {
        leaf
    };
    let d = c.strides.len();
    let r = d + 2;
    let (db, dc, ds) = c.data_axes(r);
    let (wo, wi, ws) = c.weight_axes(r);
    let pu = |l: &mnsim_arch::layout::TensorLayout, a: usize| per_unit_extent(l, a, u) as u128;
    let prod = |l: &mnsim_arch::layout::TensorLayout, from: usize| -> u128 {
        (from..from + d).map(|a| pu(l, a)).product()
    };
    let (cg, og) = ((g.c / c.groups) as u128, (g.o / c.groups) as u128);
    // (groups on the unit, M, N, K) per group.
    let (gu, mu, nu, ku) = match c.pass {
        ConvPass::Forward => {
            let ou = pu(out, dc);
            let w = inputs[1];
            (
                ou.div_ceil(og.max(1)),
                pu(out, db) * prod(out, ds),
                ou.min(og),
                pu(w, wi) * prod(w, ws),
            )
        }
        ConvPass::BackwardData => {
            let cu = pu(out, dc);
            let w = inputs[1];
            (
                cu.div_ceil(cg.max(1)),
                pu(out, db) * prod(out, ds),
                cu.min(cg),
                pu(w, wo).min(og) * prod(w, ws),
            )
        }
        ConvPass::BackwardWeights => {
            let ou = pu(out, wo);
            let dy = inputs[1];
            (
                ou.div_ceil(og.max(1)),
                ou.min(og),
                pu(out, wi) * prod(out, ws),
                pu(dy, db) * prod(dy, ds),
            )
        }
    };
    if let Some((f, t)) = matrix {
        let per_tile = ((2 * t.m * t.n * t.k) as f64 / f).ceil() as u128;
        let tiles = gu
            * div_ceil(mu, t.m as u128)
            * div_ceil(nu, t.n as u128)
            * div_ceil(ku, t.k as u128);
        return Ok(KernelCost {
            cycles: clamp(tiles.saturating_mul(per_tile)),
            flops: clamp(useful),
            unit: "matrix",
            peak_flops_per_cycle: f * m.matrix_units() as f64,
        });
    }
    let rate = vector_rate(&crate::Kernel::Conv(c.clone()), m, dtype)?;
    let work = 2u128
        .saturating_mul(gu)
        .saturating_mul(mu)
        .saturating_mul(nu)
        .saturating_mul(ku);
    Ok(KernelCost {
        cycles: clamp((work as f64 / rate).ceil() as u128),
        flops: clamp(useful),
        unit: "vector",
        peak_flops_per_cycle: rate * m.leaf_count() as f64,
    })
}
