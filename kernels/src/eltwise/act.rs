//! The activations `f` of the elementwise kernels and their derivatives `f′`: values
//! and FLOP per element.

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
