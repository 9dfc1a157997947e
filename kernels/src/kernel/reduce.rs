//! How a reduction combines: identity, combine, finish, FLOP.

use crate::elem::Combine;

/// How a reduction combines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ReduceKind {
    /// Sum.
    Add,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
    /// Arithmetic mean (the sum divided by the number of reduced elements).
    Mean,
    /// Sum of absolute values.
    L1,
    /// Square root of the sum of squares.
    L2,
}

impl ReduceKind {
    /// Every reduction kind.
    pub const ALL: [ReduceKind; 7] = [
        ReduceKind::Add,
        ReduceKind::Max,
        ReduceKind::Min,
        ReduceKind::Prod,
        ReduceKind::Mean,
        ReduceKind::L1,
        ReduceKind::L2,
    ];

    /// The variant name (`"Add"`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Add => "Add",
            ReduceKind::Max => "Max",
            ReduceKind::Min => "Min",
            ReduceKind::Prod => "Prod",
            ReduceKind::Mean => "Mean",
            ReduceKind::L1 => "L1",
            ReduceKind::L2 => "L2",
        }
    }

    /// The value that combines with nothing: 0 (sums), 1 (product), −∞, +∞.
    pub fn identity(self) -> f64 {
        match self {
            ReduceKind::Add | ReduceKind::Mean | ReduceKind::L1 | ReduceKind::L2 => 0.0,
            ReduceKind::Prod => 1.0,
            ReduceKind::Max => f64::NEG_INFINITY,
            ReduceKind::Min => f64::INFINITY,
        }
    }

    /// `acc ⊕ x`: L1 adds |x|, L2 adds x².
    pub fn combine(self, acc: f64, x: f64) -> f64 {
        match self {
            ReduceKind::Add | ReduceKind::Mean => acc + x,
            ReduceKind::Max => acc.max(x),
            ReduceKind::Min => acc.min(x),
            ReduceKind::Prod => acc * x,
            ReduceKind::L1 => acc + x.abs(),
            ReduceKind::L2 => acc + x * x,
        }
    }

    /// The result from the combined value of `n` elements: Mean divides by `n`, L2
    /// takes the square root, the others keep it.
    pub fn finish(self, acc: f64, n: u64) -> f64 {
        match self {
            ReduceKind::Mean => acc / n.max(1) as f64,
            ReduceKind::L2 => acc.sqrt(),
            _ => acc,
        }
    }

    /// How partial results of the reduction combine in the tree Reduces that complete
    /// them: a Max's and a Min's by their own; the others by addition (only a sum's, or
    /// a Mean's partial sums of `x / n`, are ever left partial).
    pub fn partials_combine(self) -> Combine {
        match self {
            ReduceKind::Max => Combine::Max,
            ReduceKind::Min => Combine::Min,
            ReduceKind::Add
            | ReduceKind::Prod
            | ReduceKind::Mean
            | ReduceKind::L1
            | ReduceKind::L2 => Combine::Add,
        }
    }

    /// Vector-unit FLOP per input element (1 to combine; 2 for L1 and L2, which map
    /// the element first) and per output element (1 for Mean's division, 4 for L2's
    /// root, 0 otherwise).
    pub fn flops(self) -> (u64, u64) {
        match self {
            ReduceKind::Add | ReduceKind::Max | ReduceKind::Min | ReduceKind::Prod => (1, 0),
            ReduceKind::Mean => (1, 1),
            ReduceKind::L1 => (2, 0),
            ReduceKind::L2 => (2, 4),
        }
    }
}
