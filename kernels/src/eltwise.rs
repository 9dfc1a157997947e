//! Elementwise kernels of training graphs ([`Kernel::Eltwise`](crate::Kernel::Eltwise)):
//! activations with parameters, every activation's backward (`x` or `y`, `dy` → `dx`),
//! PReLU and its two gradients, comparisons, `GenIndex`, a seeded `Dropout`, the
//! per-channel batch normalisation with given statistics, and the blend of running
//! statistics. Each output element reads its inputs at its own position (numpy
//! broadcasting where [`Eltwise::broadcasts`]), or, for the per-channel vectors, at
//! its channel. See `docs/kernels.md` (training kernels).

use crate::kernel::{ErrorKind, KernelError, fmt_dims};
use crate::shape::{AxisSource, InputMap, broadcast};

/// An activation `f` and its derivative.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Act {
    /// max(x, 0).
    Relu,
    /// x for x ≥ 0, else `alpha`·x.
    LeakyRelu {
        /// The slope below 0.
        alpha: f64,
    },
    /// GELU: exact (`erf`: x·Φ(x)) or the tanh approximation.
    Gelu {
        /// The exact form (x·Φ(x)) rather than the tanh approximation.
        erf: bool,
    },
    /// 1/(1+e⁻ˣ).
    Sigmoid,
    /// tanh x.
    Tanh,
    /// x for x > 0, else `alpha`·(eˣ − 1).
    Elu {
        /// The scale of the negative part.
        alpha: f64,
    },
    /// min(max(x, min), max).
    Clamp {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
    /// ln(1 + e^(βx)) / β.
    SoftPlus {
        /// β (nonzero).
        beta: f64,
    },
    /// x · min(max(x + 3, 0), 6) / 6.
    HardSwish,
    /// min(max(αx + β, 0), 1).
    HardSigmoid {
        /// α.
        alpha: f64,
        /// β.
        beta: f64,
    },
    /// x · tanh(ln(1 + eˣ)).
    Mish,
    /// |x|.
    Abs,
    /// √x.
    Sqrt,
    /// eˣ.
    Exp,
    /// ln x.
    Log,
    /// x².
    Square,
}

/// ln(1 + eᵗ) without overflow.
fn softplus(t: f64) -> f64 {
    t.max(0.0) + (-t.abs()).exp().ln_1p()
}

fn sigmoid(t: f64) -> f64 {
    1.0 / (1.0 + (-t).exp())
}

impl Act {
    /// The variant name (`"Relu"`).
    pub fn name(self) -> &'static str {
        match self {
            Act::Relu => "Relu",
            Act::LeakyRelu { .. } => "LeakyRelu",
            Act::Gelu { .. } => "Gelu",
            Act::Sigmoid => "Sigmoid",
            Act::Tanh => "Tanh",
            Act::Elu { .. } => "Elu",
            Act::Clamp { .. } => "Clamp",
            Act::SoftPlus { .. } => "SoftPlus",
            Act::HardSwish => "HardSwish",
            Act::HardSigmoid { .. } => "HardSigmoid",
            Act::Mish => "Mish",
            Act::Abs => "Abs",
            Act::Sqrt => "Sqrt",
            Act::Exp => "Exp",
            Act::Log => "Log",
            Act::Square => "Square",
        }
    }

    /// f(x), in `f64`.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Act::Relu => x.max(0.0),
            Act::LeakyRelu { alpha } => {
                if x >= 0.0 {
                    x
                } else {
                    alpha * x
                }
            }
            Act::Gelu { erf: true } => 0.5 * x * (1.0 + crate::kernel::erf(x / 2f64.sqrt())),
            Act::Gelu { erf: false } => crate::kernel::gelu(x),
            Act::Sigmoid => sigmoid(x),
            Act::Tanh => x.tanh(),
            Act::Elu { alpha } => {
                if x > 0.0 {
                    x
                } else {
                    alpha * (x.exp() - 1.0)
                }
            }
            Act::Clamp { min, max } => x.max(min).min(max),
            Act::SoftPlus { beta } => softplus(beta * x) / beta,
            Act::HardSwish => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            Act::HardSigmoid { alpha, beta } => (alpha * x + beta).clamp(0.0, 1.0),
            Act::Mish => x * softplus(x).tanh(),
            Act::Abs => x.abs(),
            Act::Sqrt => x.sqrt(),
            Act::Exp => x.exp(),
            Act::Log => x.ln(),
            Act::Square => x * x,
        }
    }

    /// Whether the derivative can be taken from the result `y = f(x)` (oneDNN's
    /// `use_dst`): Relu, Sigmoid, Tanh, Elu (α ≥ 0), Clamp, Sqrt, Exp.
    pub fn has_dst_form(self) -> bool {
        matches!(
            self,
            Act::Relu
                | Act::Sigmoid
                | Act::Tanh
                | Act::Elu { .. }
                | Act::Clamp { .. }
                | Act::Sqrt
                | Act::Exp
        )
    }

    /// f′ at the source `v = x`, or (with `use_dst`, where [`Act::has_dst_form`]) at
    /// the result `v = f(x)`.
    pub fn grad(self, v: f64, use_dst: bool) -> f64 {
        let step = |c: bool| if c { 1.0 } else { 0.0 };
        match (self, use_dst && self.has_dst_form()) {
            (Act::Relu, _) => step(v > 0.0),
            (Act::LeakyRelu { alpha }, _) => {
                if v > 0.0 {
                    1.0
                } else {
                    alpha
                }
            }
            (Act::Gelu { erf: true }, _) => {
                let phi = (-0.5 * v * v).exp() / (2.0 * std::f64::consts::PI).sqrt();
                0.5 * (1.0 + crate::kernel::erf(v / 2f64.sqrt())) + v * phi
            }
            (Act::Gelu { erf: false }, _) => {
                let c = (2.0 / std::f64::consts::PI).sqrt();
                let t = (c * (v + 0.044715 * v * v * v)).tanh();
                0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * v * v)
            }
            (Act::Sigmoid, false) => {
                let s = sigmoid(v);
                s * (1.0 - s)
            }
            (Act::Sigmoid, true) => v * (1.0 - v),
            (Act::Tanh, false) => {
                let t = v.tanh();
                1.0 - t * t
            }
            (Act::Tanh, true) => 1.0 - v * v,
            (Act::Elu { alpha }, false) => {
                if v > 0.0 {
                    1.0
                } else {
                    alpha * v.exp()
                }
            }
            (Act::Elu { alpha }, true) => {
                if v > 0.0 {
                    1.0
                } else {
                    v + alpha
                }
            }
            (Act::Clamp { min, max }, _) => step(v > min && v < max),
            (Act::SoftPlus { beta }, _) => sigmoid(beta * v),
            (Act::HardSwish, _) => {
                if v < -3.0 {
                    0.0
                } else if v > 3.0 {
                    1.0
                } else {
                    (2.0 * v + 3.0) / 6.0
                }
            }
            (Act::HardSigmoid { alpha, beta }, _) => {
                let t = alpha * v + beta;
                if t > 0.0 && t < 1.0 { alpha } else { 0.0 }
            }
            (Act::Mish, _) => {
                let t = softplus(v).tanh();
                t + v * (1.0 - t * t) * sigmoid(v)
            }
            (Act::Abs, _) => {
                if v > 0.0 {
                    1.0
                } else if v < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            (Act::Sqrt, false) => 0.5 / v.sqrt(),
            (Act::Sqrt, true) => 0.5 / v,
            (Act::Exp, false) => v.exp(),
            (Act::Exp, true) => v,
            (Act::Log, _) => 1.0 / v,
            (Act::Square, _) => 2.0 * v,
        }
    }

    /// Vector-unit FLOP per element of f (assumed, with the table of `UnaryOp`: 8 for
    /// an exp, log, tanh or sigmoid, 4 for a root or reciprocal, 1 for an add, multiply,
    /// compare or select): Relu, Abs 1; LeakyRelu 2; Square 1; Clamp 2; HardSigmoid 3;
    /// HardSwish 4; Sqrt 4; Exp, Log, Sigmoid, Tanh 8; Elu 9; Gelu 10 (tanh) or 12 (erf);
    /// SoftPlus 18 (an exp, a log, two multiplies); Mish 27 (SoftPlus, a tanh, a multiply).
    pub fn flops(self) -> u64 {
        match self {
            Act::Relu | Act::Abs | Act::Square => 1,
            Act::LeakyRelu { .. } | Act::Clamp { .. } => 2,
            Act::HardSigmoid { .. } => 3,
            Act::HardSwish | Act::Sqrt => 4,
            Act::Exp | Act::Log | Act::Sigmoid | Act::Tanh => 8,
            Act::Elu { .. } => 9,
            Act::Gelu { erf: false } => 10,
            Act::Gelu { erf: true } => 12,
            Act::SoftPlus { .. } => 18,
            Act::Mish => 27,
        }
    }

    /// Vector-unit FLOP per element of `dy · f′(v)`: f′'s own work plus the multiply.
    /// From the result (`use_dst`) the derivative is 1 to 2 FLOP (Sigmoid y(1−y), Tanh
    /// 1−y², Elu y+α, Sqrt 1/(2y) is 4, Exp y is 0); from the source it recomputes what
    /// f needs (Sigmoid, Tanh 10; Elu 9; Gelu 20; SoftPlus 9; Mish 30; HardSwish,
    /// HardSigmoid 4; Sqrt 5; Log 4; Exp 8; Relu, LeakyRelu, Abs, Square 1; Clamp 2).
    pub fn grad_flops(self, use_dst: bool) -> u64 {
        let d = match (self, use_dst && self.has_dst_form()) {
            (Act::Relu | Act::LeakyRelu { .. } | Act::Abs | Act::Square, _) => 1,
            (Act::Clamp { .. }, _) => 2,
            (Act::Sigmoid | Act::Tanh | Act::Elu { .. }, true) => 2,
            (Act::Sigmoid | Act::Tanh, false) => 10,
            (Act::Elu { .. }, false) => 9,
            (Act::Gelu { .. }, _) => 20,
            (Act::SoftPlus { .. }, _) => 9,
            (Act::Mish, _) => 30,
            (Act::HardSwish | Act::HardSigmoid { .. } | Act::Log, _) => 4,
            (Act::Sqrt, true) => 4,
            (Act::Sqrt, false) => 5,
            (Act::Exp, true) => 0,
            (Act::Exp, false) => 8,
        };
        d + 1
    }
}

/// An elementwise comparison; the result is 1 (true) or 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Cmp {
    /// a > b.
    Greater,
    /// a ≥ b.
    GreaterEqual,
    /// a < b.
    Less,
    /// a ≤ b.
    LessEqual,
    /// a = b.
    Equal,
    /// a ≠ b.
    NotEqual,
}

impl Cmp {
    /// The variant name.
    pub fn name(self) -> &'static str {
        match self {
            Cmp::Greater => "Greater",
            Cmp::GreaterEqual => "GreaterEqual",
            Cmp::Less => "Less",
            Cmp::LessEqual => "LessEqual",
            Cmp::Equal => "Equal",
            Cmp::NotEqual => "NotEqual",
        }
    }

    /// 1 when the comparison holds, else 0.
    pub fn apply(self, a: f64, b: f64) -> f64 {
        let r = match self {
            Cmp::Greater => a > b,
            Cmp::GreaterEqual => a >= b,
            Cmp::Less => a < b,
            Cmp::LessEqual => a <= b,
            Cmp::Equal => a == b,
            Cmp::NotEqual => a != b,
        };
        if r { 1.0 } else { 0.0 }
    }
}

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
    /// `(x, mean, var) → (x − mean[c]) / √(var[c] + eps)`, and with `affine`
    /// `(x, mean, var, gamma, beta) → that · gamma[c] + beta[c]`, where `c` is the
    /// index along `axis` and the other inputs are vectors along it (batch
    /// normalisation with given statistics).
    BatchNorm {
        /// The channel axis of `x`.
        axis: usize,
        /// Added to the variance.
        eps: f64,
        /// Gamma and beta follow the statistics.
        affine: bool,
    },
    /// `(a, b) → w · a + (1 − w) · b`, same shapes (running statistics:
    /// `momentum · running + (1 − momentum) · batch`).
    Mix {
        /// The weight of `a`.
        w: f64,
    },
}

fn err(kind: ErrorKind, msg: impl Into<String>) -> KernelError {
    KernelError::new(kind, msg)
}

/// SplitMix64's finaliser.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The uniform number in [0, 1) of element `index` for `seed` and `offset` (the values
/// of Dropout's one-element inputs, converted to integers).
pub fn dropout_uniform(seed: f64, offset: f64, index: u64) -> f64 {
    let s = seed as i64 as u64;
    let o = offset as i64 as u64;
    let u = mix64(s ^ mix64(o.wrapping_add(index)));
    (u >> 11) as f64 / (1u64 << 53) as f64
}

/// Dropout of `x` at row-major `index`.
pub fn dropout(x: f64, seed: f64, offset: f64, p: f64, index: u64) -> f64 {
    if p.is_nan() || p >= 1.0 {
        return 0.0;
    }
    if p <= 0.0 {
        return x;
    }
    if dropout_uniform(seed, offset, index) >= p {
        x / (1.0 - p)
    } else {
        0.0
    }
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
            Eltwise::BatchNorm { .. } => "BatchNorm".into(),
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
            Eltwise::BatchNorm { affine, .. } => {
                if *affine {
                    5
                } else {
                    3
                }
            }
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
            Eltwise::BatchNorm { .. } => &["x", "mean", "var", "gamma", "beta"],
        };
        names.get(i).copied().unwrap_or("out")
    }

    /// FLOP per output element (none per input element): Act f's; Backward f′'s plus
    /// a multiply; PRelu 2, PReluBackward 2, PReluSlope 2 (a compare and a multiply);
    /// Compare 1; GenIndex 1 (an index written); Dropout 8 (a hash, a compare, a
    /// multiply); BatchNorm 6 (a subtract, a root and a reciprocal per element are
    /// charged as 4, a multiply) plus 2 with `affine`; Mix 3.
    pub fn flops(&self) -> u64 {
        match self {
            Eltwise::Act(a) => a.flops(),
            Eltwise::Backward { act, use_dst } => act.grad_flops(*use_dst),
            Eltwise::PRelu | Eltwise::PReluBackward | Eltwise::PReluSlope => 2,
            Eltwise::Compare(_) | Eltwise::GenIndex { .. } => 1,
            Eltwise::Dropout => 8,
            Eltwise::BatchNorm { affine, .. } => {
                if *affine {
                    8
                } else {
                    6
                }
            }
            Eltwise::Mix { .. } => 3,
        }
    }

    /// The output shape on inputs of shapes `s` (`s.len()` is the arity).
    pub fn output_shape(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let l = self.label();
        let x = s[0];
        let same = |j: usize| -> Result<(), KernelError> {
            if s[j] != x {
                return Err(err(
                    ErrorKind::Broadcast,
                    format!(
                        "{l}: `{}` {} must have the shape of `{}` {}",
                        self.operand(j),
                        fmt_dims(s[j]),
                        self.operand(0),
                        fmt_dims(x)
                    ),
                ));
            }
            Ok(())
        };
        let bcast = |a: &[u64], b: &[u64], j: usize| -> Result<Vec<u64>, KernelError> {
            broadcast(a, b).ok_or_else(|| {
                err(
                    ErrorKind::Broadcast,
                    format!(
                        "{l}: `{}` {} does not broadcast against `{}` {} (aligned to the trailing axes, each pair of sizes must be equal or one of them 1)",
                        self.operand(j),
                        fmt_dims(b),
                        self.operand(0),
                        fmt_dims(a)
                    ),
                )
            })
        };
        match self {
            Eltwise::Act(_) => Ok(x.to_vec()),
            Eltwise::Backward { .. } | Eltwise::PReluSlope | Eltwise::Mix { .. } => {
                same(1)?;
                Ok(x.to_vec())
            }
            Eltwise::Compare(_) => bcast(x, s[1], 1),
            Eltwise::PRelu | Eltwise::PReluBackward => {
                // The slope broadcasts to x (it may not enlarge it).
                let o = bcast(x, s[1], 1)?;
                if o != x {
                    return Err(err(
                        ErrorKind::Broadcast,
                        format!(
                            "{l}: the slope {} does not broadcast to `x` {} without enlarging it",
                            fmt_dims(s[1]),
                            fmt_dims(x)
                        ),
                    ));
                }
                if let Eltwise::PReluBackward = self {
                    same(2)?;
                }
                Ok(o)
            }
            Eltwise::GenIndex { axis } => {
                if *axis >= x.len() {
                    return Err(err(
                        ErrorKind::Axis,
                        format!(
                            "{l}: axis {axis} is out of range for shape {} (axes 0..{})",
                            fmt_dims(x),
                            x.len()
                        ),
                    ));
                }
                Ok(x.to_vec())
            }
            Eltwise::Dropout => {
                for (j, t) in s.iter().enumerate().skip(1) {
                    if crate::shape::checked_numel(t) != Some(1) {
                        return Err(err(
                            ErrorKind::Broadcast,
                            format!(
                                "{l}: `{}` must hold one element, got shape {}",
                                self.operand(j),
                                fmt_dims(t)
                            ),
                        ));
                    }
                }
                Ok(x.to_vec())
            }
            Eltwise::BatchNorm { axis, .. } => {
                if *axis >= x.len() {
                    return Err(err(
                        ErrorKind::Axis,
                        format!(
                            "{l}: the channel axis {axis} is out of range for `x` {} (axes 0..{})",
                            fmt_dims(x),
                            x.len()
                        ),
                    ));
                }
                for (j, t) in s.iter().enumerate().skip(1) {
                    if t.len() != 1 || t[0] != x[*axis] {
                        return Err(err(
                            ErrorKind::Broadcast,
                            format!(
                                "{l}: `{}` must be a vector along the channel axis {axis} of `x` {} ({} elements), got shape {}",
                                self.operand(j),
                                fmt_dims(x),
                                x[*axis],
                                fmt_dims(t)
                            ),
                        ));
                    }
                }
                Ok(x.to_vec())
            }
        }
    }

    /// Per input, where each axis takes its index (`out` is the output shape).
    pub fn index_map(&self, s: &[&[u64]], out: &[u64]) -> Vec<InputMap> {
        let r = out.len();
        let numpy = |sh: &[u64]| InputMap {
            axes: sh
                .iter()
                .enumerate()
                .map(|(a, &d)| {
                    let h = r - sh.len() + a;
                    if d == 1 && out[h] != 1 {
                        AxisSource::Broadcast
                    } else {
                        AxisSource::Out(h)
                    }
                })
                .collect(),
        };
        match self {
            Eltwise::BatchNorm { axis, .. } => {
                let mut m = vec![numpy(s[0])];
                for _ in 1..s.len() {
                    m.push(InputMap {
                        axes: vec![AxisSource::Out(*axis)],
                    });
                }
                m
            }
            _ => s.iter().map(|sh| numpy(sh)).collect(),
        }
    }

    /// One output element at `idx` (`in_shapes` the inputs' shapes).
    pub fn eval(
        &self,
        idx: &[u64],
        fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
        in_shapes: &[&[u64]],
    ) -> f64 {
        let r = idx.len();
        let at = |j: usize, f: &mut dyn FnMut(usize, &[u64]) -> f64| -> f64 {
            let s = in_shapes[j];
            let off = r - s.len();
            let i: Vec<u64> = s
                .iter()
                .enumerate()
                .map(|(a, &d)| if d == 1 { 0 } else { idx[off + a] })
                .collect();
            f(j, &i)
        };
        match self {
            Eltwise::Act(a) => a.apply(fetch(0, idx)),
            Eltwise::Backward { act, use_dst } => {
                let v = fetch(0, idx);
                fetch(1, idx) * act.grad(v, *use_dst)
            }
            Eltwise::PRelu => {
                let x = fetch(0, idx);
                if x >= 0.0 { x } else { at(1, fetch) * x }
            }
            Eltwise::PReluBackward => {
                let (x, dy) = (fetch(0, idx), fetch(2, idx));
                if x > 0.0 { dy } else { at(1, fetch) * dy }
            }
            Eltwise::PReluSlope => {
                let x = fetch(0, idx);
                if x > 0.0 { 0.0 } else { x * fetch(1, idx) }
            }
            Eltwise::Compare(c) => {
                let a = at(0, fetch);
                c.apply(a, at(1, fetch))
            }
            Eltwise::GenIndex { axis } => idx[*axis] as f64,
            Eltwise::Dropout => {
                let x = fetch(0, idx);
                let one = |j: usize| scalar_index(in_shapes[j]);
                let (seed, offset, p) = (fetch(1, &one(1)), fetch(2, &one(2)), fetch(3, &one(3)));
                let mut l = 0u64;
                for (i, d) in idx.iter().zip(in_shapes[0]) {
                    l = l.wrapping_mul(*d).wrapping_add(*i);
                }
                dropout(x, seed, offset, p, l)
            }
            Eltwise::BatchNorm { axis, eps, affine } => {
                let c = [idx[*axis]];
                let x = fetch(0, idx);
                let (mean, var) = (fetch(1, &c), fetch(2, &c));
                let n = (x - mean) / (var + eps).sqrt();
                if *affine {
                    n * fetch(3, &c) + fetch(4, &c)
                } else {
                    n
                }
            }
            Eltwise::Mix { w } => w * fetch(0, idx) + (1.0 - w) * fetch(1, idx),
        }
    }
}

/// Dropout's one-element inputs read as `[0]` whatever their rank: the fetch of an
/// input of rank `k` gets `[0; k]`.
pub(crate) fn scalar_index(shape: &[u64]) -> Vec<u64> {
    vec![0; shape.len()]
}
