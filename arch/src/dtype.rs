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
