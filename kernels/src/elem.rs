//! Element codec: reading, writing and combining raw little-endian elements of any dtype.
//!
//! Floating types round through `f64` (f8, f16 and bf16 round to nearest even on write;
//! f8 saturates at its largest finite value, see [`crate::minifloat`]); integer types
//! combine with wrapping arithmetic in their own width (4 bits for `s4`/`u4`, held one
//! per byte).

use mnsim_arch::DType;

/// Reads one element as `f64` (integers convert exactly up to 2^53).
pub fn read(dtype: DType, b: &[u8]) -> f64 {
    match dtype {
        DType::Pred | DType::U8 => b[0] as f64,
        DType::S8 => b[0] as i8 as f64,
        // Held one per byte, in the low 4 bits (sign-extended for s4).
        DType::S4 => (((b[0] << 4) as i8) >> 4) as f64,
        DType::U4 => (b[0] & 0x0f) as f64,
        DType::F8E4M3 => crate::minifloat::E4M3.decode(b[0]),
        DType::F8E5M2 => crate::minifloat::E5M2.decode(b[0]),
        DType::S16 => i16::from_le_bytes([b[0], b[1]]) as f64,
        DType::U16 => u16::from_le_bytes([b[0], b[1]]) as f64,
        DType::S32 => i32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        DType::U32 => u32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        DType::S64 => i64::from_le_bytes(b[..8].try_into().unwrap()) as f64,
        DType::U64 => u64::from_le_bytes(b[..8].try_into().unwrap()) as f64,
        DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
        DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
        DType::F32 => f32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        DType::F64 => f64::from_le_bytes(b[..8].try_into().unwrap()),
    }
}

/// Writes `v` as one element (integers saturate, floats round to nearest).
pub fn write(dtype: DType, v: f64, out: &mut [u8]) {
    match dtype {
        DType::Pred => out[0] = (v != 0.0) as u8,
        DType::U8 => out[0] = v as u8,
        DType::S8 => out[0] = v as i8 as u8,
        DType::S4 => out[0] = (v as i8).clamp(-8, 7) as u8 & 0x0f,
        DType::U4 => out[0] = (v as u8).min(15),
        DType::F8E4M3 => out[0] = crate::minifloat::E4M3.encode(v),
        DType::F8E5M2 => out[0] = crate::minifloat::E5M2.encode(v),
        DType::S16 => out[..2].copy_from_slice(&(v as i16).to_le_bytes()),
        DType::U16 => out[..2].copy_from_slice(&(v as u16).to_le_bytes()),
        DType::S32 => out[..4].copy_from_slice(&(v as i32).to_le_bytes()),
        DType::U32 => out[..4].copy_from_slice(&(v as u32).to_le_bytes()),
        DType::S64 => out[..8].copy_from_slice(&(v as i64).to_le_bytes()),
        DType::U64 => out[..8].copy_from_slice(&(v as u64).to_le_bytes()),
        DType::F16 => out[..2].copy_from_slice(&half::f16::from_f64(v).to_le_bytes()),
        DType::BF16 => out[..2].copy_from_slice(&half::bf16::from_f64(v).to_le_bytes()),
        DType::F32 => out[..4].copy_from_slice(&(v as f32).to_le_bytes()),
        DType::F64 => out[..8].copy_from_slice(&v.to_le_bytes()),
    }
}

/// How partial results combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Combine {
    /// Sum.
    Add,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

/// `acc = acc ⊕ x` on raw elements, in the dtype's own precision: floats add in their
/// own width (an f32 sum rounds to f32 at every step, as the hardware does), integers
/// wrap.
pub fn combine(dtype: DType, op: Combine, acc: &mut [u8], x: &[u8]) {
    macro_rules! int {
        ($t:ty, $n:expr) => {{
            let a = <$t>::from_le_bytes(acc[..$n].try_into().unwrap());
            let b = <$t>::from_le_bytes(x[..$n].try_into().unwrap());
            let r = match op {
                Combine::Add => a.wrapping_add(b),
                Combine::Max => a.max(b),
                Combine::Min => a.min(b),
            };
            acc[..$n].copy_from_slice(&r.to_le_bytes());
        }};
    }
    let fl = |a: f64, b: f64| match op {
        Combine::Add => a + b,
        Combine::Max => a.max(b),
        Combine::Min => a.min(b),
    };
    match dtype {
        DType::Pred => {
            acc[0] = match op {
                Combine::Add | Combine::Max => acc[0] | x[0],
                Combine::Min => acc[0] & x[0],
            }
        }
        DType::U8 => int!(u8, 1),
        DType::S8 => int!(i8, 1),
        DType::S16 => int!(i16, 2),
        DType::U16 => int!(u16, 2),
        DType::S32 => int!(i32, 4),
        DType::U32 => int!(u32, 4),
        DType::S64 => int!(i64, 8),
        DType::U64 => int!(u64, 8),
        DType::F32 => {
            let a = f32::from_le_bytes(acc[..4].try_into().unwrap());
            let b = f32::from_le_bytes(x[..4].try_into().unwrap());
            let r = match op {
                Combine::Add => a + b,
                Combine::Max => a.max(b),
                Combine::Min => a.min(b),
            };
            acc[..4].copy_from_slice(&r.to_le_bytes());
        }
        DType::S4 | DType::U4 => {
            let (a, b) = (read(dtype, acc) as i8, read(dtype, x) as i8);
            let r = match op {
                Combine::Add => a.wrapping_add(b),
                Combine::Max => a.max(b),
                Combine::Min => a.min(b),
            };
            // Wrap to 4 bits: s4 sign-extends its low nibble, u4 keeps it.
            acc[0] = r as u8 & 0x0f;
        }
        DType::F64 | DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2 => {
            let r = fl(read(dtype, acc), read(dtype, x));
            write(dtype, r, acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_combines() {
        for d in DType::ALL {
            let mut b = vec![0u8; d.bytes() as usize];
            write(d, 3.0, &mut b);
            assert_eq!(read(d, &b), if d == DType::Pred { 1.0 } else { 3.0 }, "{d}");
            let mut acc = b.clone();
            combine(d, Combine::Add, &mut acc, &b);
            let want = match d {
                DType::Pred => 1.0,
                _ => 6.0,
            };
            assert_eq!(read(d, &acc), want, "{d}");
        }
        // f16 rounds to nearest even: 2049 is not representable, rounds to 2048.
        let mut b = [0u8; 2];
        write(DType::F16, 2049.0, &mut b);
        assert_eq!(read(DType::F16, &b), 2048.0);
        // s4 and u4 wrap in 4 bits; f8 rounds and saturates.
        let (mut a, x) = ([0u8], [0u8]);
        write(DType::S4, 5.0, &mut a);
        let mut y = x;
        write(DType::S4, 6.0, &mut y);
        combine(DType::S4, Combine::Add, &mut a, &y);
        assert_eq!(read(DType::S4, &a), -5.0);
        write(DType::U4, 20.0, &mut a);
        assert_eq!(read(DType::U4, &a), 15.0);
        write(DType::S4, -20.0, &mut a);
        assert_eq!(read(DType::S4, &a), -8.0);
        write(DType::F8E4M3, 500.0, &mut a);
        assert_eq!(read(DType::F8E4M3, &a), 448.0);
        // i8 wraps.
        let (mut a, x) = ([100u8], [100u8]);
        combine(DType::S8, Combine::Add, &mut a, &x);
        assert_eq!(read(DType::S8, &a), -56.0);
    }
}
