//! The element functions of the `Unary` and `Binary` kernels (`UnaryOp`, `BinaryOp`,
//! `erf`, `gelu`): values and FLOP per element.

/// Elementwise one-operand functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum UnaryOp {
    /// max(x, 0).
    Relu,
    /// The tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
    Gelu,
    /// eˣ.
    Exp,
    /// −x.
    Neg,
    /// |x|.
    Abs,
    /// √x.
    Sqrt,
    /// 1/√x.
    Rsqrt,
    /// tanh x.
    Tanh,
    /// 1/(1+e⁻ˣ).
    Sigmoid,
    /// 1/x.
    Recip,
    /// x².
    Square,
    /// x.
    Copy,
    /// x · min(max(x + 3, 0), 6) / 6.
    HardSwish,
    /// The nearest integer, halves to even.
    Round,
    /// ln x.
    Log,
    /// The error function erf x (StableHLO's `chlo.erf`, the exact GELU's core).
    Erf,
    /// The complementary error function erfc x = 1 − erf x (StableHLO's `chlo.erfc`),
    /// with a small relative error where it is small.
    Erfc,
}

impl UnaryOp {
    /// Every unary op.
    pub const ALL: [UnaryOp; 17] = [
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::Exp,
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Recip,
        UnaryOp::Square,
        UnaryOp::Copy,
        UnaryOp::HardSwish,
        UnaryOp::Round,
        UnaryOp::Log,
        UnaryOp::Erf,
        UnaryOp::Erfc,
    ];

    /// The variant name (`"Relu"`).
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Relu => "Relu",
            UnaryOp::Gelu => "Gelu",
            UnaryOp::Exp => "Exp",
            UnaryOp::Neg => "Neg",
            UnaryOp::Abs => "Abs",
            UnaryOp::Sqrt => "Sqrt",
            UnaryOp::Rsqrt => "Rsqrt",
            UnaryOp::Tanh => "Tanh",
            UnaryOp::Sigmoid => "Sigmoid",
            UnaryOp::Recip => "Recip",
            UnaryOp::Square => "Square",
            UnaryOp::Copy => "Copy",
            UnaryOp::HardSwish => "HardSwish",
            UnaryOp::Round => "Round",
            UnaryOp::Log => "Log",
            UnaryOp::Erf => "Erf",
            UnaryOp::Erfc => "Erfc",
        }
    }

    /// The function, in `f64`.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            UnaryOp::Relu => x.max(0.0),
            UnaryOp::Gelu => gelu(x),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            UnaryOp::Recip => 1.0 / x,
            UnaryOp::Square => x * x,
            UnaryOp::Copy => x,
            UnaryOp::HardSwish => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            UnaryOp::Round => x.round_ties_even(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Erf => erf(x),
            UnaryOp::Erfc => erfc(x),
        }
    }

    /// Vector-unit FLOP charged per element (assumed; see `docs/kernels.md`):
    /// 1 for Relu, Neg, Abs, Square, Copy, Round; 4 for Sqrt, Rsqrt, Recip (an
    /// iterative reciprocal or root) and HardSwish (an add, a clamp, two multiplies);
    /// 8 for Exp, Log, Tanh, Sigmoid, Erf, Erfc (a polynomial or table evaluation); 10 for
    /// Gelu (a tanh plus the cubic around it).
    pub fn flops_per_element(self) -> u64 {
        match self {
            UnaryOp::Relu
            | UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Square
            | UnaryOp::Copy
            | UnaryOp::Round => 1,
            UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip | UnaryOp::HardSwish => 4,
            UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf
            | UnaryOp::Erfc => 8,
            UnaryOp::Gelu => 10,
        }
    }
}

/// erf x: its Taylor series below |x| = 1/2 (to 10⁻¹⁶), Abramowitz and Stegun 7.1.26
/// above (absolute error below 1.5·10⁻⁷, relative below 3·10⁻⁷: about f32's resolution).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 0.5 {
        // 2/√π · Σ (−1)ⁿ x^(2n+1) / (n! (2n+1))
        let (mut term, mut sum) = (a, a);
        for n in 1..24 {
            term *= -a * a / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        let t = 1.0 / (1.0 + 0.327_591_1 * a);
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        1.0 - poly * (-a * a).exp()
    };
    if x < 0.0 { -r } else { r }
}

/// erfc x = 1 − erf x: below |x| = 1/2, one minus the series of [`erf`]; above, the
/// Chebyshev fit of Numerical Recipes' `erfcc` (fractional error below 1.2·10⁻⁷
/// everywhere, so small values keep their digits), with erfc(−x) = 2 − erfc x.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() < 0.5 {
        return 1.0 - erf(x);
    }
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x < 0.0 { 2.0 - r } else { r }
}

/// The tanh approximation of GELU.
pub fn gelu(x: f64) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
}

/// Elementwise two-operand functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum BinaryOp {
    /// a + b.
    Add,
    /// a − b.
    Sub,
    /// a × b.
    Mul,
    /// a / b.
    Div,
    /// max(a, b).
    Max,
    /// min(a, b).
    Min,
}

impl BinaryOp {
    /// Every binary op.
    pub const ALL: [BinaryOp; 6] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Max,
        BinaryOp::Min,
    ];

    /// The variant name (`"Add"`).
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "Add",
            BinaryOp::Sub => "Sub",
            BinaryOp::Mul => "Mul",
            BinaryOp::Div => "Div",
            BinaryOp::Max => "Max",
            BinaryOp::Min => "Min",
        }
    }

    /// The function, in `f64`.
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Max => a.max(b),
            BinaryOp::Min => a.min(b),
        }
    }

    /// Vector-unit FLOP charged per element (assumed): 1 for Add, Sub, Mul, Max, Min;
    /// 4 for Div (a reciprocal and a multiply).
    pub fn flops_per_element(self) -> u64 {
        match self {
            BinaryOp::Div => 4,
            _ => 1,
        }
    }
}
