//! The elementwise comparisons, whose result is 1 or 0.

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
