//! Element types.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// An element type. Names follow XLA (`f32`, `bf16`, `s32`, `pred`); scenario files
/// use the capitalised variant names (`F16`, `F32`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DType {
    Pred,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 13] = [
        DType::Pred,
        DType::S8,
        DType::S16,
        DType::S32,
        DType::S64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            DType::Pred | DType::S8 | DType::U8 => 1,
            DType::S16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::S32 | DType::U32 | DType::F32 => 4,
            DType::S64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// The lower-case XLA name (`f32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Pred => "pred",
            DType::S8 => "s8",
            DType::S16 => "s16",
            DType::S32 => "s32",
            DType::S64 => "s64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// The smallest and largest finite values an element holds (`pred`: 0 and 1).
    pub fn range(self) -> (f64, f64) {
        match self {
            DType::Pred => (0.0, 1.0),
            DType::S8 => (i8::MIN as f64, i8::MAX as f64),
            DType::S16 => (i16::MIN as f64, i16::MAX as f64),
            DType::S32 => (i32::MIN as f64, i32::MAX as f64),
            DType::S64 => (i64::MIN as f64, i64::MAX as f64),
            DType::U8 => (0.0, u8::MAX as f64),
            DType::U16 => (0.0, u16::MAX as f64),
            DType::U32 => (0.0, u32::MAX as f64),
            DType::U64 => (0.0, u64::MAX as f64),
            DType::F16 => (-65504.0, 65504.0),
            DType::BF16 => (-3.389_531_389_251_535e38, 3.389_531_389_251_535e38),
            DType::F32 => (f32::MIN as f64, f32::MAX as f64),
            DType::F64 => (f64::MIN, f64::MAX),
        }
    }

    /// Why `v` is not a value of this dtype (out of range, not whole for an integer,
    /// not finite), or `None` when it is.
    pub fn check_value(self, v: f64) -> Option<String> {
        let (lo, hi) = self.range();
        if !v.is_finite() {
            Some(format!("{v} is not a finite number"))
        } else if v < lo || v > hi {
            Some(format!("{v} is outside the range of {self} ({lo} to {hi})"))
        } else if !self.is_float() && v.fract() != 0.0 {
            Some(format!("{v} is not a whole number, as {self} elements are"))
        } else {
            None
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = String;
    /// Accepts XLA names (`f32`, `s32`, `pred`), their capitalised forms, and the
    /// common aliases `i8`..`i64` and `fp16`/`fp32`/`fp64`.
    fn from_str(s: &str) -> Result<Self, String> {
        let l = s.to_ascii_lowercase();
        let l = match l.as_str() {
            "i8" => "s8",
            "i16" => "s16",
            "i32" => "s32",
            "i64" => "s64",
            "fp16" | "half" => "f16",
            "fp32" | "float" => "f32",
            "fp64" | "double" => "f64",
            "bool" | "i1" => "pred",
            other => other,
        };
        DType::ALL
            .iter()
            .copied()
            .find(|d| d.name() == l)
            .ok_or_else(|| {
                format!(
                    "unknown element type `{s}` (expected one of {})",
                    DType::ALL.map(|d| d.name()).join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn values_per_dtype() {
        assert!(DType::S8.check_value(127.0).is_none());
        assert!(
            DType::S8
                .check_value(1000.0)
                .unwrap()
                .contains("outside the range of s8")
        );
        assert!(DType::S8.check_value(1.5).unwrap().contains("whole"));
        assert!(DType::F16.check_value(70000.0).is_some());
        assert!(DType::F32.check_value(f64::NAN).unwrap().contains("finite"));
        assert!(DType::Pred.check_value(2.0).is_some());
        assert!(DType::F64.check_value(-1e300).is_none());
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>().unwrap(), d);
            assert_eq!(d.name().to_uppercase().parse::<DType>().unwrap(), d);
        }
        assert_eq!("i32".parse::<DType>().unwrap(), DType::S32);
        assert!(
            "f8".parse::<DType>()
                .unwrap_err()
                .contains("unknown element type")
        );
    }
}
