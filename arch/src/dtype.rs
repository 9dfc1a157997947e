//! Element types.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// An element type. Names follow XLA (`f32`, `bf16`, `s32`, `pred`) and oneDNN for the
/// 8-bit floats (`f8_e4m3`, `f8_e5m2`); scenario files use the variant names (`F16`,
/// `F32`, `F8E4M3`, `S4`, ...).
///
/// Sizes: every type but the 4-bit integers occupies [`DType::bytes`] bytes. `s4` and
/// `u4` are 4-bit values ([`DType::bits`] = 4) that mnsim stores **one per byte**
/// (unpacked) in DRAM and LM, so [`DType::bytes`] is 1 for them and every size, load
/// and store counts them as bytes: a packed 4-bit tensor would move half the bytes
/// mnsim charges (docs/model.md, low-precision types).
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
    /// 4-bit signed integer, −8..7 (stored one per byte).
    S4,
    /// 4-bit unsigned integer, 0..15 (stored one per byte).
    U4,
    /// 8-bit float, 4 exponent bits (bias 7), 3 mantissa bits, no infinities (OCP
    /// E4M3FN): largest finite 448, smallest subnormal 2⁻⁹.
    F8E4M3,
    /// 8-bit float, 5 exponent bits (bias 15), 2 mantissa bits, with infinities (OCP
    /// E5M2): largest finite 57344, smallest subnormal 2⁻¹⁶.
    F8E5M2,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 17] = [
        DType::Pred,
        DType::S8,
        DType::S16,
        DType::S32,
        DType::S64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::S4,
        DType::U4,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element as mnsim stores it (every size, load and store counts these):
    /// 1 for the 4-bit types, which are held one per byte.
    pub fn bytes(self) -> u64 {
        match self {
            DType::Pred
            | DType::S8
            | DType::U8
            | DType::S4
            | DType::U4
            | DType::F8E4M3
            | DType::F8E5M2 => 1,
            DType::S16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::S32 | DType::U32 | DType::F32 => 4,
            DType::S64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// Bits of information per element: 4 for `s4`/`u4`, 1 for `pred`, else 8 × bytes.
    pub fn bits(self) -> u64 {
        match self {
            DType::Pred => 1,
            DType::S4 | DType::U4 => 4,
            other => other.bytes() * 8,
        }
    }

    /// The lower-case XLA name (`f32`); oneDNN's for the 8-bit floats (`f8_e4m3`).
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
            DType::S4 => "s4",
            DType::U4 => "u4",
            DType::F8E4M3 => "f8_e4m3",
            DType::F8E5M2 => "f8_e5m2",
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
            DType::S4 => (-8.0, 7.0),
            DType::U4 => (0.0, 15.0),
            DType::F8E4M3 => (-448.0, 448.0),
            DType::F8E5M2 => (-57344.0, 57344.0),
            DType::F16 => (-65504.0, 65504.0),
            DType::BF16 => (-3.389_531_389_251_535e38, 3.389_531_389_251_535e38),
            DType::F32 => (f32::MIN as f64, f32::MAX as f64),
            DType::F64 => (f64::MIN, f64::MAX),
        }
    }

    /// Why `v` is not a value of this dtype (out of range, not whole for an integer,
    /// NaN, infinite where the dtype has no infinities), or `None` when it is: a
    /// floating-point type with infinities (all but F8E4M3) holds ±∞.
    pub fn check_value(self, v: f64) -> Option<String> {
        let (lo, hi) = self.range();
        if v.is_infinite() && self.is_float() && self != DType::F8E4M3 {
            None
        } else if !v.is_finite() {
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
        matches!(
            self,
            DType::F8E4M3 | DType::F8E5M2 | DType::F16 | DType::BF16 | DType::F32 | DType::F64
        )
    }

    /// Whether the type is an integer (signed or unsigned; not `pred`).
    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Pred
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
    /// common aliases `i4`..`i64`, `fp16`/`fp32`/`fp64`, and XLA's `f8e4m3fn`/`f8e5m2`.
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
            "i4" => "s4",
            "f8e4m3fn" | "f8e4m3" | "f8_e4m3fn" => "f8_e4m3",
            "f8e5m2" => "f8_e5m2",
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
        // Infinities are values of the float types that have them.
        for d in [
            DType::F64,
            DType::F32,
            DType::BF16,
            DType::F16,
            DType::F8E5M2,
        ] {
            assert!(d.check_value(f64::NEG_INFINITY).is_none(), "{d}");
            assert!(d.check_value(f64::INFINITY).is_none(), "{d}");
        }
        assert!(DType::F8E4M3.check_value(f64::INFINITY).is_some());
        assert!(DType::S32.check_value(f64::INFINITY).is_some());
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>().unwrap(), d);
            assert_eq!(d.name().to_uppercase().parse::<DType>().unwrap(), d);
        }
        assert_eq!("i32".parse::<DType>().unwrap(), DType::S32);
        assert_eq!("f8e4m3fn".parse::<DType>().unwrap(), DType::F8E4M3);
        assert_eq!("F8E5M2".parse::<DType>().unwrap(), DType::F8E5M2);
        assert_eq!(DType::S4.bits(), 4);
        assert_eq!(DType::S4.bytes(), 1);
        assert!(DType::S4.check_value(-9.0).is_some());
        assert!(DType::U4.check_value(15.0).is_none());
        assert!(
            "f8".parse::<DType>()
                .unwrap_err()
                .contains("unknown element type")
        );
    }
}
