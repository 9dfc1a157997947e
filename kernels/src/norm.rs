//! Kernels that normalise or reduce along axes, for training graphs
//! ([`Kernel::Norm`](crate::Kernel::Norm)): LogSoftmax, the softmax backward kernels,
//! RMS normalisation, standardisation over any axes (BatchNorm's and GroupNorm's
//! statistics, with groups), the variance, the normalisations' backward (the source's
//! gradient and gamma's). Every output element needs whole rows along the normalised
//! axes on its PE: those axes are reduced variables of the index map, never split over
//! a level (results are not partial sums). See `docs/kernels.md` (training kernels).

use crate::kernel::{ErrorKind, KernelError, fmt_dims};
use crate::shape::{AxisSource, InputMap};

/// What a [`Norm`] computes. `x` is input 0 (`dy` for the softmax backward kinds),
/// the normalised axes are [`Norm::axes`], `mean`/`var` are statistics shaped as `x`
/// without those axes, `gamma`/`beta` run along [`Norm::params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum NormKind {
    /// `(x) → x − max − ln Σ e^(x − max)`.
    LogSoftmax,
    /// `(dy, y) → y · (dy − Σ dy·y)` (y the softmax's result).
    SoftmaxBackward,
    /// `(dy, y) → dy − e^y · Σ dy` (y the log-softmax's result).
    LogSoftmaxBackward,
    /// `(x[, gamma]) → x / √(mean x² + eps) [· gamma]`.
    Rms,
    /// `(x[, gamma, beta]) → (x − mean) / √(var + eps) [· gamma + beta]`, the
    /// statistics over the normalised axes (the first split into `groups`).
    Standardize,
    /// `(x) → the population variance over the normalised axes` (the output drops them).
    Variance,
    /// `(x, dy, mean, var[, gamma]) → dx = r · (g·dy − mean(g·dy) − x̂ · mean(g·dy·x̂))`
    /// with `r = 1/√(var + eps)`, `x̂ = (x − mean)·r`, `g` gamma (1 without), means
    /// over the normalised axes.
    Backward,
    /// `(x, dy, mean, var) → Σ dy · x̂` over every axis but [`Norm::params`] (gamma's
    /// gradient; the output is shaped as those axes).
    GammaGrad,
}

/// A normalisation kernel.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Norm {
    /// What it computes.
    pub kind: NormKind,
    /// The normalised axes of `x`, ascending.
    pub axes: Vec<usize>,
    /// Added to the variance (or the mean square).
    pub eps: f64,
    /// Standardize only: the first normalised axis splits into this many groups, each
    /// normalised on its own (GroupNorm); 1 otherwise.
    pub groups: u64,
    /// The axes of `x` that gamma and beta (GammaGrad: the output) run along.
    pub params: Vec<usize>,
    /// Gamma (and for Standardize beta) are inputs.
    pub affine: bool,
}

fn err(kind: ErrorKind, msg: impl Into<String>) -> KernelError {
    KernelError::new(kind, msg)
}

impl Norm {
    /// A kernel of `kind` over `axes` with no groups, parameters or affine inputs.
    pub fn new(kind: NormKind, axes: Vec<usize>, eps: f64) -> Norm {
        Norm {
            kind,
            axes,
            eps,
            groups: 1,
            params: Vec::new(),
            affine: false,
        }
    }

    /// The name in messages.
    pub fn label(&self) -> &'static str {
        match self.kind {
            NormKind::LogSoftmax => "LogSoftmax",
            NormKind::SoftmaxBackward => "SoftmaxBackward",
            NormKind::LogSoftmaxBackward => "LogSoftmaxBackward",
            NormKind::Rms => "RmsNorm",
            NormKind::Standardize => "Standardize",
            NormKind::Variance => "Variance",
            NormKind::Backward => "NormBackward",
            NormKind::GammaGrad => "NormGammaGrad",
        }
    }

    /// Number of inputs.
    pub fn arity(&self) -> usize {
        let a = usize::from(self.affine);
        match self.kind {
            NormKind::LogSoftmax | NormKind::Variance => 1,
            NormKind::SoftmaxBackward | NormKind::LogSoftmaxBackward => 2,
            NormKind::Rms => 1 + a,
            NormKind::Standardize => 1 + 2 * a,
            NormKind::Backward => 4 + a,
            NormKind::GammaGrad => 4,
        }
    }

    /// Operand names for messages.
    pub fn operand(&self, i: usize) -> &'static str {
        let names: &[&'static str] = match self.kind {
            NormKind::LogSoftmax | NormKind::Variance => &["x"],
            NormKind::SoftmaxBackward | NormKind::LogSoftmaxBackward => &["dy", "y"],
            NormKind::Rms | NormKind::Standardize => &["x", "gamma", "beta"],
            NormKind::Backward | NormKind::GammaGrad => &["x", "dy", "mean", "var", "gamma"],
        };
        names.get(i).copied().unwrap_or("out")
    }

    /// `(per input element of input 0, per output element)` FLOP (assumed, see
    /// `docs/kernels.md`): LogSoftmax (11, 1): a max, a subtract, an exp and a sum per
    /// input, a subtract per output; SoftmaxBackward (2, 2); LogSoftmaxBackward (1, 10);
    /// Rms (2, 1), +1 per output with gamma; Standardize (4, 2) as LayerNorm, +2 with
    /// gamma and beta; Variance (4, 1); Backward (6, 4), +1 each with gamma; GammaGrad
    /// (4, 0).
    pub fn flops(&self) -> (u64, u64) {
        let a = u64::from(self.affine);
        match self.kind {
            NormKind::LogSoftmax => (11, 1),
            NormKind::SoftmaxBackward => (2, 2),
            NormKind::LogSoftmaxBackward => (1, 10),
            NormKind::Rms => (2, 1 + a),
            NormKind::Standardize => (4, 2 + 2 * a),
            NormKind::Variance => (4, 1),
            NormKind::Backward => (6 + a, 4 + a),
            NormKind::GammaGrad => (4, 0),
        }
    }

    /// The axes of `x` not normalised, in order.
    fn kept(&self, rank: usize) -> Vec<usize> {
        (0..rank).filter(|a| !self.axes.contains(a)).collect()
    }

    fn check_axes(&self, x: &[u64]) -> Result<(), KernelError> {
        let l = self.label();
        let r = x.len();
        if self.axes.is_empty() {
            return Err(err(ErrorKind::Axis, format!("{l}: no normalised axis")));
        }
        for w in self.axes.windows(2) {
            if w[0] >= w[1] {
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "{l}: the normalised axes {:?} must be ascending and distinct",
                        self.axes
                    ),
                ));
            }
        }
        for &a in self.axes.iter().chain(&self.params) {
            if a >= r {
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "{l}: axis {a} is out of range for `x` {} (axes 0..{r})",
                        fmt_dims(x)
                    ),
                ));
            }
        }
        for w in self.params.windows(2) {
            if w[0] >= w[1] {
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "{l}: the parameter axes {:?} must be ascending and distinct",
                        self.params
                    ),
                ));
            }
        }
        let g = self.groups;
        if g != 1 {
            let c = x[self.axes[0]];
            if self.kind != NormKind::Standardize || g == 0 || !c.is_multiple_of(g) {
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "{l}: {g} groups need a Standardize whose first normalised axis ({c} long) they divide"
                    ),
                ));
            }
        }
        if self.kind == NormKind::GammaGrad && self.params.is_empty() {
            return Err(err(
                ErrorKind::Axis,
                format!("{l}: no parameter axes to sum onto"),
            ));
        }
        Ok(())
    }

    fn expect(&self, s: &[&[u64]], j: usize, want: &[u64]) -> Result<(), KernelError> {
        let got = s[j];
        // A statistic with no axis left may be given as [1].
        let ok = got == want || (want.is_empty() && got == [1]);
        if !ok {
            return Err(err(
                ErrorKind::Broadcast,
                format!(
                    "{}: `{}` must have shape {}, got {}",
                    self.label(),
                    self.operand(j),
                    fmt_dims(want),
                    fmt_dims(got)
                ),
            ));
        }
        Ok(())
    }

    /// The output shape on inputs of shapes `s` (`s.len()` is the arity).
    pub fn output_shape(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let x = s[0];
        self.check_axes(x)?;
        let stats: Vec<u64> = self.kept(x.len()).iter().map(|&a| x[a]).collect();
        let params: Vec<u64> = self.params.iter().map(|&a| x[a]).collect();
        match self.kind {
            NormKind::LogSoftmax => {}
            NormKind::SoftmaxBackward | NormKind::LogSoftmaxBackward => self.expect(s, 1, x)?,
            NormKind::Rms | NormKind::Standardize => {
                for j in 1..s.len() {
                    self.expect(s, j, &params)?;
                }
            }
            NormKind::Variance => return Ok(stats),
            NormKind::Backward | NormKind::GammaGrad => {
                self.expect(s, 1, x)?;
                self.expect(s, 2, &stats)?;
                self.expect(s, 3, &stats)?;
                if s.len() > 4 {
                    self.expect(s, 4, &params)?;
                }
                if self.kind == NormKind::GammaGrad {
                    return Ok(params);
                }
            }
        }
        Ok(x.to_vec())
    }

    /// The lengths of the reduced variables: the normalised axes' (GammaGrad: every
    /// axis but the parameter axes').
    pub fn reduced_extents(&self, x: &[u64]) -> Vec<u64> {
        self.reduced_axes(x.len()).iter().map(|&a| x[a]).collect()
    }

    /// The axes of `x` that are reduced variables, in order.
    fn reduced_axes(&self, rank: usize) -> Vec<usize> {
        match self.kind {
            NormKind::GammaGrad => (0..rank).filter(|a| !self.params.contains(a)).collect(),
            _ => self.axes.clone(),
        }
    }

    /// Where an axis `a` of `x` takes its index from.
    fn source(&self, a: usize, rank: usize) -> AxisSource {
        let red = self.reduced_axes(rank);
        if let Some(r) = red.iter().position(|&b| b == a) {
            return AxisSource::Reduced(r);
        }
        match self.kind {
            NormKind::Variance => {
                AxisSource::Out(self.kept(rank).iter().position(|&b| b == a).unwrap_or(0))
            }
            NormKind::GammaGrad => {
                AxisSource::Out(self.params.iter().position(|&b| b == a).unwrap_or(0))
            }
            _ => AxisSource::Out(a),
        }
    }

    /// Per input, where each axis takes its index.
    pub fn index_map(&self, s: &[&[u64]]) -> Vec<InputMap> {
        let rank = s[0].len();
        let along = |axes: &[usize]| InputMap {
            axes: axes.iter().map(|&a| self.source(a, rank)).collect(),
        };
        let all: Vec<usize> = (0..rank).collect();
        let kept = self.kept(rank);
        (0..s.len())
            .map(|j| match (self.kind, j) {
                (_, 0)
                | (
                    NormKind::SoftmaxBackward
                    | NormKind::LogSoftmaxBackward
                    | NormKind::Backward
                    | NormKind::GammaGrad,
                    1,
                ) => along(&all),
                (NormKind::Backward | NormKind::GammaGrad, 2 | 3) if s[j].len() == kept.len() => {
                    along(&kept)
                }
                // A statistic with no axis left, given as [1].
                (NormKind::Backward | NormKind::GammaGrad, 2 | 3) => InputMap {
                    axes: vec![AxisSource::Broadcast; s[j].len()],
                },
                // Gamma inside the backward's sums runs along its axes as x does.
                (NormKind::Backward, _) => along(&self.params),
                // Forward gamma and beta are read at the element's own position.
                _ => InputMap {
                    axes: self.params.iter().map(|&a| AxisSource::Out(a)).collect(),
                },
            })
            .collect()
    }

    /// One output element at `idx` (`in_shapes` the inputs' shapes).
    pub fn eval(
        &self,
        idx: &[u64],
        fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
        in_shapes: &[&[u64]],
    ) -> f64 {
        let x_shape = in_shapes[0];
        let rank = x_shape.len();
        if self.kind == NormKind::GammaGrad {
            return self.gamma_grad(idx, fetch, in_shapes);
        }
        // The element's index in x, and the row: every index of the normalised axes
        // (the element's group of the first one) with the other axes fixed.
        let base: Vec<u64> = match self.kind {
            NormKind::Variance => {
                let mut b = vec![0u64; rank];
                for (h, &a) in self.kept(rank).iter().enumerate() {
                    b[a] = idx.get(h).copied().unwrap_or(0);
                }
                b
            }
            _ => idx.to_vec(),
        };
        let mut ranges: Vec<(usize, u64, u64)> =
            self.axes.iter().map(|&a| (a, 0, x_shape[a])).collect();
        if self.groups > 1 {
            let a = self.axes[0];
            let per = x_shape[a] / self.groups;
            let g = base[a] / per.max(1);
            ranges[0] = (a, g * per, (g + 1) * per);
        }
        let row = |j: usize, fetch: &mut dyn FnMut(usize, &[u64]) -> f64| -> Vec<f64> {
            let mut v = Vec::new();
            for_each(&base, &ranges, &mut |i| v.push(fetch(j, i)));
            v
        };
        let params_at = |i: &[u64]| -> Vec<u64> { self.params.iter().map(|&a| i[a]).collect() };
        let stats_at = |i: &[u64], j: usize| -> Vec<u64> {
            if in_shapes[j].len() == rank - self.axes.len() {
                self.kept(rank).iter().map(|&a| i[a]).collect()
            } else {
                vec![0; in_shapes[j].len()]
            }
        };
        let n = |v: &[f64]| v.len().max(1) as f64;
        match self.kind {
            NormKind::LogSoftmax => {
                let v = row(0, fetch);
                let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let lse = m + v.iter().map(|t| (t - m).exp()).sum::<f64>().ln();
                fetch(0, idx) - lse
            }
            NormKind::SoftmaxBackward => {
                let (dy, y) = (row(0, fetch), row(1, fetch));
                let dot: f64 = dy.iter().zip(&y).map(|(a, b)| a * b).sum();
                fetch(1, idx) * (fetch(0, idx) - dot)
            }
            NormKind::LogSoftmaxBackward => {
                let sum: f64 = row(0, fetch).iter().sum();
                fetch(0, idx) - fetch(1, idx).exp() * sum
            }
            NormKind::Rms => {
                let v = row(0, fetch);
                let ms = v.iter().map(|t| t * t).sum::<f64>() / n(&v);
                let y = fetch(0, idx) / (ms + self.eps).sqrt();
                if self.affine {
                    y * fetch(1, &params_at(idx))
                } else {
                    y
                }
            }
            NormKind::Standardize | NormKind::Variance => {
                let v = row(0, fetch);
                let mean = v.iter().sum::<f64>() / n(&v);
                let var = v.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / n(&v);
                if self.kind == NormKind::Variance {
                    return var;
                }
                let y = (fetch(0, idx) - mean) / (var + self.eps).sqrt();
                if self.affine {
                    let p = params_at(idx);
                    y * fetch(1, &p) + fetch(2, &p)
                } else {
                    y
                }
            }
            NormKind::Backward => {
                let mean = fetch(2, &stats_at(idx, 2));
                let r = 1.0 / (fetch(3, &stats_at(idx, 3)) + self.eps).sqrt();
                let (mut a, mut b, mut count) = (0.0, 0.0, 0.0);
                let affine = self.affine;
                for_each(&base, &ranges, &mut |i| {
                    let g = if affine { fetch(4, &params_at(i)) } else { 1.0 };
                    let gdy = g * fetch(1, i);
                    a += gdy;
                    b += gdy * (fetch(0, i) - mean) * r;
                    count += 1.0;
                });
                let count = f64::max(count, 1.0);
                let g = if affine {
                    fetch(4, &params_at(idx))
                } else {
                    1.0
                };
                let xhat = (fetch(0, idx) - mean) * r;
                r * (g * fetch(1, idx) - a / count - xhat * b / count)
            }
            NormKind::GammaGrad => unreachable!("handled above"),
        }
    }

    /// GammaGrad at output index `idx` (over the parameter axes).
    fn gamma_grad(
        &self,
        idx: &[u64],
        fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
        in_shapes: &[&[u64]],
    ) -> f64 {
        let x_shape = in_shapes[0];
        let rank = x_shape.len();
        let mut base = vec![0u64; rank];
        for (h, &a) in self.params.iter().enumerate() {
            base[a] = idx[h];
        }
        let ranges: Vec<(usize, u64, u64)> = (0..rank)
            .filter(|a| !self.params.contains(a))
            .map(|a| (a, 0, x_shape[a]))
            .collect();
        let kept = self.kept(rank);
        let mut acc = 0.0;
        for_each(&base, &ranges, &mut |i| {
            let st: Vec<u64> = if in_shapes[2].len() == kept.len() {
                kept.iter().map(|&a| i[a]).collect()
            } else {
                vec![0; in_shapes[2].len()]
            };
            let mean = fetch(2, &st);
            let r = 1.0 / (fetch(3, &st) + self.eps).sqrt();
            acc += fetch(1, i) * (fetch(0, i) - mean) * r;
        });
        acc
    }
}

/// Calls `f` for every index that equals `base` except on the axes of `ranges`, which
/// run over `lo..hi` (the last fastest).
fn for_each(base: &[u64], ranges: &[(usize, u64, u64)], f: &mut dyn FnMut(&[u64])) {
    if ranges.iter().any(|&(_, lo, hi)| lo >= hi) {
        return;
    }
    let mut i = base.to_vec();
    for &(a, lo, _) in ranges {
        i[a] = lo;
    }
    loop {
        f(&i);
        let mut k = ranges.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            let (a, lo, hi) = ranges[k];
            i[a] += 1;
            if i[a] < hi {
                break;
            }
            i[a] = lo;
        }
    }
}

impl crate::family::KernelFamily for Norm {
    fn name(&self) -> &'static str {
        "Norm"
    }
    fn label(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Norm::label(self))
    }
    fn arity(&self) -> usize {
        Norm::arity(self)
    }
    fn traits(&self) -> crate::family::Traits {
        if self.kind == NormKind::GammaGrad {
            crate::family::Traits {
                reduced: "a summed axis",
                ..crate::family::Traits::VECTOR
            }
        } else {
            crate::family::Traits::NORMALISES
        }
    }
    fn flops_per_element(&self) -> (u64, u64) {
        self.flops()
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Norm::output_shape(self, inputs)
    }
    fn index_map(&self, in_shapes: &[&[u64]], _: &[u64]) -> Result<Vec<InputMap>, KernelError> {
        Ok(Norm::index_map(self, in_shapes))
    }
    fn reduced_extents(&self, in_shapes: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        Ok(Norm::reduced_extents(self, in_shapes[0]))
    }
    fn roundings(&self, reduction_len: u64) -> Option<u64> {
        Some(reduction_len.max(1))
    }
    fn eval(
        &self,
        out_idx: &[u64],
        fetch: crate::family::Fetch<'_>,
        _: crate::family::Visit<'_>,
        in_shapes: &[&[u64]],
    ) -> f64 {
        Norm::eval(self, out_idx, fetch, in_shapes)
    }
    fn training_eps(&self) -> Option<f64> {
        Some(self.eps)
    }
    /// The normalised and parameter axes.
    fn training_axes(&self) -> Option<Vec<usize>> {
        Some(self.axes.clone())
    }
}
