//! Elementwise kernels of training graphs ([`Kernel::Eltwise`](crate::Kernel::Eltwise)):
//! activations with parameters, every activation's backward (`x` or `y`, `dy` → `dx`),
//! PReLU and its two gradients, comparisons, `GenIndex`, a seeded `Dropout`, the
//! per-channel batch normalisation with given statistics, and the blend of running
//! statistics. Each output element reads its inputs at its own position (numpy
//! broadcasting where [`Eltwise::broadcasts`]), or, for the per-channel vectors, at
//! its channel. See `docs/kernels.md` (training kernels).
//!
//! `mod.rs`: the kernels and what they are (names, arity, operands, FLOP);
//! `act.rs`: the activations; `cmp.rs`: the comparisons; `shape.rs`: output shapes and
//! index maps; `eval.rs`: one output element; `dropout.rs`: Dropout's seeded mask.

mod act;
mod cmp;
mod dropout;
mod eval;
mod shape;

pub use act::Act;
pub use cmp::Cmp;
pub(crate) use dropout::scalar_index;
pub use dropout::{dropout, dropout_uniform};

/// An elementwise kernel of training graphs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Eltwise {
    /// `f(x)`.
    Act(Act),
    /// `(v, dy) → dy · f′(v)`: `v` is the source `x`, or the result `y` with `use_dst`.
    Backward {
        /// The activation.
        act: Act,
        /// `v` is the forward result (only where [`Act::has_dst_form`]).
        use_dst: bool,
    },
    /// `(x, slope) → x ≥ 0 ? x : slope · x`, `slope` broadcast numpy-style.
    PRelu,
    /// `(x, slope, dy) → x > 0 ? dy : slope · dy` (the source's gradient), `slope`
    /// broadcast numpy-style.
    PReluBackward,
    /// `(x, dy) → x > 0 ? 0 : x · dy` (the slope's gradient before its sum over the
    /// axes the slope broadcasts along), same shapes.
    PReluSlope,
    /// `(a, b) → a op b` as 1 or 0, numpy broadcasting.
    Compare(Cmp),
    /// `(x) → i`, the element's index along `axis` (the input gives only the shape).
    GenIndex {
        /// The axis whose index each element takes.
        axis: usize,
    },
    /// `(x, seed, offset, p) → keep ? x / (1 − p) : 0` with `keep = u ≥ p`, `u` a
    /// uniform number in [0, 1) from a counter-based hash (SplitMix64) of the seed and
    /// `offset + ` the element's row-major index: the same seed gives the same mask on
    /// the machine and in the reference. `seed`, `offset`, `p` are one-element tensors.
    Dropout,
    /// `(x, mean, var) → (x − mean[s]) / √(var[s] + eps)`, and with `affine`
    /// `(x, mean, var, gamma, beta) → that · gamma[p] + beta[p]`, where `s` is the
    /// element's index along the `stats` axes of `x` (the statistics' shape) and `p`
    /// along the `params` axes (gamma's and beta's shape): normalisation with given
    /// statistics (BatchNorm: both the channel axis; GroupNorm: (batch, group) and
    /// (group, channel in group)).
    Normalize {
        /// The axes of `x` the statistics run along, ascending.
        stats: Vec<usize>,
        /// The axes of `x` gamma and beta run along, ascending.
        params: Vec<usize>,
        /// Added to the variance.
        eps: f64,
        /// Gamma and beta follow the statistics.
        affine: bool,
    },
    /// `(x, dy, mean, var, a, b[, gamma]) → g · r · (dy − a/n − x̂ · b/n)` with
    /// `r = 1/√(var + eps)`, `x̂ = (x − mean)·r`, `g` gamma (1 without), every input but
    /// `x` and `dy` a vector along `axis`, and `n` the elements per channel (the
    /// product of the other axes): BatchNorm's source gradient from the channel sums
    /// `a = Σ dy` and `b = Σ dy·x̂` (the gradients of beta and gamma).
    BatchNormBackward {
        /// The channel axis of `x`.
        axis: usize,
        /// Added to the variance.
        eps: f64,
        /// Gamma is the last input.
        affine: bool,
    },
    /// `(a, b) → w · a + (1 − w) · b`, same shapes (running statistics:
    /// `momentum · running + (1 − momentum) · batch`).
    Mix {
        /// The weight of `a`.
        w: f64,
    },
}

impl Eltwise {
    /// The name in messages (`Backward Relu`, `PRelu`, `Compare GreaterEqual`).
    pub fn label(&self) -> String {
        match self {
            Eltwise::Act(a) => a.name().to_string(),
            Eltwise::Backward { act, .. } => format!("{}Backward", act.name()),
            Eltwise::PRelu => "PRelu".into(),
            Eltwise::PReluBackward => "PReluBackward".into(),
            Eltwise::PReluSlope => "PReluSlope".into(),
            Eltwise::Compare(c) => c.name().into(),
            Eltwise::GenIndex { .. } => "GenIndex".into(),
            Eltwise::Dropout => "Dropout".into(),
            Eltwise::Normalize { .. } => "Normalize".into(),
            Eltwise::BatchNormBackward { .. } => "BatchNormBackward".into(),
            Eltwise::Mix { .. } => "Mix".into(),
        }
    }

    /// Number of inputs.
    pub fn arity(&self) -> usize {
        match self {
            Eltwise::Act(_) | Eltwise::GenIndex { .. } => 1,
            Eltwise::Backward { .. }
            | Eltwise::PRelu
            | Eltwise::PReluSlope
            | Eltwise::Compare(_)
            | Eltwise::Mix { .. } => 2,
            Eltwise::PReluBackward => 3,
            Eltwise::Dropout => 4,
            Eltwise::Normalize { affine, .. } => {
                if *affine {
                    5
                } else {
                    3
                }
            }
            Eltwise::BatchNormBackward { affine, .. } => 6 + usize::from(*affine),
        }
    }

    /// Whether inputs broadcast numpy-style (PRelu's and PReluBackward's slope, both
    /// sides of a comparison).
    pub fn broadcasts(&self) -> bool {
        matches!(
            self,
            Eltwise::PRelu | Eltwise::PReluBackward | Eltwise::Compare(_)
        )
    }

    /// Operand names for messages.
    pub fn operand(&self, i: usize) -> &'static str {
        let names: &[&'static str] = match self {
            Eltwise::Act(_) | Eltwise::GenIndex { .. } => &["x"],
            Eltwise::Backward { use_dst: true, .. } => &["y", "dy"],
            Eltwise::Backward { .. } | Eltwise::PReluSlope => &["x", "dy"],
            Eltwise::PRelu => &["x", "slope"],
            Eltwise::PReluBackward => &["x", "slope", "dy"],
            Eltwise::Compare(_) | Eltwise::Mix { .. } => &["a", "b"],
            Eltwise::Dropout => &["x", "seed", "offset", "p"],
            Eltwise::Normalize { .. } => &["x", "mean", "var", "gamma", "beta"],
            Eltwise::BatchNormBackward { .. } => &["x", "dy", "mean", "var", "a", "b", "gamma"],
        };
        names.get(i).copied().unwrap_or("out")
    }

    /// FLOP per output element (none per input element): Act f's; Backward f′'s plus
    /// a multiply; PRelu 2, PReluBackward 2, PReluSlope 2 (a compare and a multiply);
    /// Compare 1; GenIndex 1 (an index written); Dropout 8 (a hash, a compare, a
    /// multiply); Normalize 6 (a subtract, a root and a reciprocal per element are
    /// charged as 4, a multiply) plus 2 with `affine`; BatchNormBackward 12 (x̂ 2, the
    /// root and reciprocal 4, two multiply-subtracts 4, the scale 2), 13 with gamma;
    /// Mix 3.
    pub fn flops(&self) -> u64 {
        match self {
            Eltwise::Act(a) => a.flops(),
            Eltwise::Backward { act, use_dst } => act.grad_flops(*use_dst),
            Eltwise::PRelu | Eltwise::PReluBackward | Eltwise::PReluSlope => 2,
            Eltwise::Compare(_) | Eltwise::GenIndex { .. } => 1,
            Eltwise::Dropout => 8,
            Eltwise::Normalize { affine, .. } => {
                if *affine {
                    8
                } else {
                    6
                }
            }
            Eltwise::BatchNormBackward { affine, .. } => 12 + u64::from(*affine),
            Eltwise::Mix { .. } => 3,
        }
    }
}

impl crate::family::KernelFamily for Eltwise {
    fn name(&self) -> &'static str {
        "Eltwise"
    }
    fn label(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&Eltwise::label(self))
    }
    fn arity(&self) -> usize {
        Eltwise::arity(self)
    }
    /// A comparison runs at its operands' rate; the kernels that compare (a `pred`
    /// result), count indices (`s32`) or draw a dropout mask from an integer seed have
    /// their own dtypes.
    fn traits(&self) -> crate::family::Traits {
        use crate::family::Rate;
        let (rate, own_dtypes) = match self {
            Eltwise::Compare(_) => (Rate::FirstInput, true),
            Eltwise::GenIndex { .. } | Eltwise::Dropout => (Rate::Output, true),
            Eltwise::Act(_)
            | Eltwise::Backward { .. }
            | Eltwise::PRelu
            | Eltwise::PReluBackward
            | Eltwise::PReluSlope
            | Eltwise::Normalize { .. }
            | Eltwise::BatchNormBackward { .. }
            | Eltwise::Mix { .. } => (Rate::Output, false),
        };
        crate::family::Traits {
            broadcasts: self.broadcasts(),
            rate,
            own_dtypes,
            ..crate::family::Traits::VECTOR
        }
    }
    fn flops_per_element(&self) -> (u64, u64) {
        (0, self.flops())
    }
    fn output_shape(&self, inputs: &[&[u64]]) -> Result<Vec<u64>, crate::KernelError> {
        Eltwise::output_shape(self, inputs)
    }
    fn index_map(
        &self,
        in_shapes: &[&[u64]],
        out_shape: &[u64],
    ) -> Result<Vec<crate::shape::InputMap>, crate::KernelError> {
        Ok(Eltwise::index_map(self, in_shapes, out_shape))
    }
    fn eval(
        &self,
        out_idx: &[u64],
        fetch: crate::family::Fetch<'_>,
        _: crate::family::Visit<'_>,
        in_shapes: &[&[u64]],
    ) -> f64 {
        Eltwise::eval(self, out_idx, fetch, in_shapes)
    }
    fn training_eps(&self) -> Option<f64> {
        match self {
            Eltwise::Normalize { eps, .. } | Eltwise::BatchNormBackward { eps, .. } => Some(*eps),
            _ => None,
        }
    }
    /// GenIndex's and BatchNormBackward's axis, Normalize's statistics and parameter
    /// axes.
    fn training_axes(&self) -> Option<Vec<usize>> {
        match self {
            Eltwise::GenIndex { axis } | Eltwise::BatchNormBackward { axis, .. } => {
                Some(vec![*axis])
            }
            Eltwise::Normalize { stats, params, .. } => {
                let mut v: Vec<usize> = stats.iter().chain(params).copied().collect();
                v.sort_unstable();
                v.dedup();
                Some(v)
            }
            _ => None,
        }
    }
}
