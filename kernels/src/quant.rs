//! Quantisation kernels (docs/kernels.md, quantisation): oneDNN's Quantize, Dequantize
//! and their dynamic forms, on the vector unit.
//!
//! - **Quantize** `q = round(x / scale) + zp`, saturated to the quantised type (the
//!   output's): integers round to nearest, ties to even (oneDNN's `nearbyint`), then
//!   saturate; the 8-bit floats take `x / scale` rounded by the type itself (no zero
//!   point).
//! - **Dequantize** `x = (q − zp) · scale`, rounded to the output's type.
//!
//! Scales and zero points are either **static** (attributes: one per tensor, or one per
//! channel along `axis`) or **dynamic** (inputs 1 and 2, broadcast numpy-style against
//! `x`: a per-channel or per-group form is imported as a reshape that makes them
//! broadcast, see docs/import.md).

use crate::kernel::{ErrorKind, Kernel, KernelError, fmt_dims};
use crate::shape::{AxisSource, InputMap, broadcast};
use mnsim_arch::DType;
use serde::{Deserialize, Serialize};

/// Which way a [`Quant`] converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum QuantDir {
    /// Real values to the quantised type.
    Quantize,
    /// The quantised type to real values.
    Dequantize,
}

/// Where scales and zero points come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum QuantParams {
    /// Given in the op: one value (per tensor, `axis: None`) or one per position of
    /// `axis`. `zps` is empty (all 0), or as long as `scales`.
    Static {
        /// The channel axis of a per-channel form.
        axis: Option<usize>,
        /// The scales.
        scales: Vec<f64>,
        /// The zero points (empty: 0).
        zps: Vec<f64>,
    },
    /// Input 1 holds the scales and, with `zps`, input 2 the zero points, each
    /// broadcasting numpy-style to `x`'s shape.
    Dynamic {
        /// Whether a zero-point input follows the scales.
        zps: bool,
    },
}

/// A quantisation kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quant {
    /// Quantize or Dequantize.
    pub dir: QuantDir,
    /// The quantised type: the output's for Quantize, the input's for Dequantize.
    /// Quantize rounds to an integer first when it is an integer type.
    pub qtype: DType,
    /// Scales and zero points.
    pub params: QuantParams,
}

impl Quant {
    /// Number of inputs: 1 (static), 2 or 3 (dynamic, with zero points).
    pub fn arity(&self) -> usize {
        match self.params {
            QuantParams::Static { .. } => 1,
            QuantParams::Dynamic { zps } => 2 + usize::from(zps),
        }
    }

    /// `Quantize` or `Dequantize` (with `Dynamic` in front for the dynamic form).
    pub fn name(&self) -> &'static str {
        match (&self.params, self.dir) {
            (QuantParams::Static { .. }, QuantDir::Quantize) => "Quantize",
            (QuantParams::Static { .. }, QuantDir::Dequantize) => "Dequantize",
            (QuantParams::Dynamic { .. }, QuantDir::Quantize) => "DynamicQuantize",
            (QuantParams::Dynamic { .. }, QuantDir::Dequantize) => "DynamicDequantize",
        }
    }

    /// Vector-unit FLOP per output element (assumed, docs/kernels.md): Quantize 5 (a
    /// multiply by the reciprocal scale, a round, an add of the zero point, a two-sided
    /// saturation); Dequantize 2 (a subtract and a multiply).
    pub fn flops_per_element(&self) -> u64 {
        match self.dir {
            QuantDir::Quantize => 5,
            QuantDir::Dequantize => 2,
        }
    }

    /// The output shape: `x`'s. Errors: a per-channel axis out of range, scales or zero
    /// points of the wrong length, dynamic scales or zero points that do not broadcast
    /// to `x`.
    pub fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let x = inputs[0];
        let name = self.name();
        match &self.params {
            QuantParams::Static { axis, scales, zps } => {
                let want = match axis {
                    None => 1,
                    Some(a) => *x.get(*a).ok_or_else(|| {
                        KernelError::new(
                            ErrorKind::Axis,
                            format!(
                                "{name}: axis {a} is out of range for `x` {} of rank {}",
                                fmt_dims(x),
                                x.len()
                            ),
                        )
                    })?,
                };
                for (what, v) in [("scales", scales), ("zero points", zps)] {
                    let ok = v.len() as u64 == want || (what == "zero points" && v.is_empty());
                    if !ok {
                        return Err(KernelError::new(
                            ErrorKind::Broadcast,
                            format!(
                                "{name}: {} {what} given, but {} needs {want} ({})",
                                v.len(),
                                fmt_dims(x),
                                match axis {
                                    None => "one per tensor".to_string(),
                                    Some(a) => format!("one per position of axis {a}"),
                                }
                            ),
                        ));
                    }
                }
                if let Some(bad) = scales.iter().find(|s| !(s.is_finite() && **s != 0.0)) {
                    return Err(KernelError::new(
                        ErrorKind::Broadcast,
                        format!("{name}: the scale {bad} is not a finite non-zero number"),
                    ));
                }
            }
            QuantParams::Dynamic { .. } => {
                for (j, s) in inputs.iter().enumerate().skip(1) {
                    let what = if j == 1 { "scales" } else { "zero points" };
                    if broadcast(x, s).as_deref() != Some(x) {
                        return Err(KernelError::new(
                            ErrorKind::Broadcast,
                            format!(
                                "{name}: the {what} {} do not broadcast to `x` {} (aligned to the trailing axes, \
                                 each size must be 1 or `x`'s)",
                                fmt_dims(s),
                                fmt_dims(x)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(x.to_vec())
    }

    /// Input 0 reads the output position; dynamic scales and zero points broadcast.
    pub fn index_map(&self, in_shapes: &[&[u64]], out_shape: &[u64]) -> Vec<InputMap> {
        let r = out_shape.len();
        in_shapes
            .iter()
            .map(|s| {
                let off = r.saturating_sub(s.len());
                InputMap {
                    axes: s
                        .iter()
                        .enumerate()
                        .map(|(a, &d)| {
                            if d == 1 && out_shape[off + a] != 1 {
                                AxisSource::Broadcast
                            } else {
                                AxisSource::Out(off + a)
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// The value of the output element at `out_idx`, reading input `j` at an index
    /// through `fetch`.
    pub fn eval(
        &self,
        out_idx: &[u64],
        fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
        in_shapes: &[&[u64]],
    ) -> f64 {
        let x = fetch(0, out_idx);
        let (scale, zp) = match &self.params {
            QuantParams::Static { axis, scales, zps } => {
                let c = axis.map_or(0, |a| out_idx[a] as usize);
                (scales[c], zps.get(c).copied().unwrap_or(0.0))
            }
            QuantParams::Dynamic { zps } => {
                let r = out_idx.len();
                let mut pick = |j: usize| {
                    let s = in_shapes[j];
                    let off = r - s.len();
                    let idx: Vec<u64> = s
                        .iter()
                        .enumerate()
                        .map(|(a, &d)| if d == 1 { 0 } else { out_idx[off + a] })
                        .collect();
                    fetch(j, &idx)
                };
                let scale = pick(1);
                (scale, if *zps { pick(2) } else { 0.0 })
            }
        };
        self.apply(x, scale, zp)
    }

    /// One element: Quantize `round(x / scale) + zp` (rounded to an integer only for an
    /// integer `qtype`), Dequantize `(x − zp) · scale`. Saturation to the quantised type
    /// happens when the result is written in it.
    pub fn apply(&self, x: f64, scale: f64, zp: f64) -> f64 {
        match self.dir {
            QuantDir::Quantize if self.qtype.is_float() => x / scale,
            QuantDir::Quantize => (x / scale).round_ties_even() + zp,
            QuantDir::Dequantize => (x - zp) * scale,
        }
    }

    /// The whole output, row-major, from row-major inputs.
    pub fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
        let n = crate::kernel::numel(out_shape) as usize;
        let mut idx = vec![0u64; out_shape.len()];
        (0..n)
            .map(|l| {
                let mut rest = l as u64;
                for i in (0..out_shape.len()).rev() {
                    let d = out_shape[i].max(1);
                    idx[i] = rest % d;
                    rest /= d;
                }
                let mut fetch = |j: usize, at: &[u64]| {
                    let (s, v) = inputs[j];
                    let lin = at.iter().zip(s.iter()).fold(0u64, |a, (i, d)| a * d + i);
                    v[lin as usize]
                };
                self.eval(&idx, &mut fetch, &shapes)
            })
            .collect()
    }

    /// Checks the layouts' dtypes: the quantised side is `qtype`, the other a float.
    pub fn check_dtypes(&self, x: DType, out: DType) -> Result<(), KernelError> {
        let (q, real, qside, rside) = match self.dir {
            QuantDir::Quantize => (out, x, "output", "input"),
            QuantDir::Dequantize => (x, out, "input", "output"),
        };
        if q != self.qtype {
            return Err(KernelError::new(
                ErrorKind::Layout,
                format!(
                    "{}: the {qside} is {q}, but the kernel quantises to {}",
                    self.name(),
                    self.qtype
                ),
            ));
        }
        if !real.is_float() {
            return Err(KernelError::new(
                ErrorKind::Layout,
                format!(
                    "{}: the {rside} is {real}; the real side of a quantisation is a float type",
                    self.name()
                ),
            ));
        }
        Ok(())
    }
}

impl From<Quant> for Kernel {
    fn from(q: Quant) -> Kernel {
        Kernel::Quant(q)
    }
}

impl crate::family::KernelFamily for Quant {
    fn name(&self) -> &'static str {
        "Quant"
    }
    fn label(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Quant::name(self))
    }
    fn arity(&self) -> usize {
        Quant::arity(self)
    }
    fn operand_name(&self, i: usize) -> String {
        ["x", "scales", "zps"][i.min(2)].into()
    }
    /// Dynamic scales and zero points broadcast; the real and integer sides differ in
    /// dtype family by design.
    fn traits(&self) -> crate::family::Traits {
        crate::family::Traits {
            broadcasts: matches!(self.params, QuantParams::Dynamic { .. }),
            own_dtypes: true,
            ..crate::family::Traits::VECTOR
        }
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, Quant::flops_per_element(self))
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Quant::output_shape(self, inputs)
    }
    fn index_map(&self, s: &[&[u64]], out_shape: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(Quant::index_map(self, s, out_shape))
    }
    fn eval(
        &self,
        out_idx: &[u64],
        fetch: crate::family::Fetch<'_>,
        _: crate::family::Visit<'_>,
        in_shapes: &[&[u64]],
    ) -> f64 {
        Quant::eval(self, out_idx, fetch, in_shapes)
    }
    fn reference(&self, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        Quant::reference(self, inputs, out_shape)
    }
    fn check_dtypes(&self, x: DType, out: DType) -> Result<(), KernelError> {
        Quant::check_dtypes(self, x, out)
    }
}
