//! The 8-bit floats (OCP FP8): `f8_e4m3` (E4M3FN: bias 7, no infinities, one NaN
//! pattern per sign, largest finite 448) and `f8_e5m2` (E5M2: bias 15, IEEE-style
//! infinities and NaNs, largest finite 57344).
//!
//! Encoding rounds to nearest, ties to even, like f16 and bf16. A finite value beyond the
//! largest finite one **saturates** to it (the conversion quantisation uses: oneDNN's
//! Quantize clamps to the representable range); NaN stays NaN; an infinity becomes the
//! largest finite value in E4M3 (which has none) and an infinity in E5M2.

/// An 8-bit float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// Exponent bits.
    pub exp_bits: u32,
    /// Mantissa bits.
    pub man_bits: u32,
    /// The exponent bias.
    pub bias: i32,
    /// Whether the all-ones exponent encodes infinities and NaNs (E5M2) or ordinary
    /// values, with only all-ones exponent and mantissa as NaN (E4M3FN).
    pub ieee: bool,
}

/// OCP E4M3FN.
pub const E4M3: Format = Format {
    exp_bits: 4,
    man_bits: 3,
    bias: 7,
    ieee: false,
};

/// OCP E5M2.
pub const E5M2: Format = Format {
    exp_bits: 5,
    man_bits: 2,
    bias: 15,
    ieee: true,
};

impl Format {
    fn max_exp_field(self) -> u32 {
        (1 << self.exp_bits) - 1
    }

    /// The largest finite value: 448 (E4M3), 57344 (E5M2).
    pub fn max_finite(self) -> f64 {
        let (e, m) = if self.ieee {
            (self.max_exp_field() - 1, (1u32 << self.man_bits) - 1)
        } else {
            // The all-ones pattern is NaN: the largest mantissa is one below.
            (self.max_exp_field(), (1u32 << self.man_bits) - 2)
        };
        self.value(e, m)
    }

    /// The magnitude of exponent field `e` and mantissa field `m` (finite patterns).
    fn value(self, e: u32, m: u32) -> f64 {
        let frac = m as f64 / (1u32 << self.man_bits) as f64;
        if e == 0 {
            frac * 2f64.powi(1 - self.bias)
        } else {
            (1.0 + frac) * 2f64.powi(e as i32 - self.bias)
        }
    }

    fn nan(self) -> u8 {
        if self.ieee {
            // Exponent all ones, the top mantissa bit set.
            ((self.max_exp_field() << self.man_bits) | (1 << (self.man_bits - 1))) as u8
        } else {
            0x7f
        }
    }

    /// The value of the byte `b`.
    pub fn decode(self, b: u8) -> f64 {
        let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = (u32::from(b) >> self.man_bits) & self.max_exp_field();
        let m = u32::from(b) & ((1 << self.man_bits) - 1);
        if self.ieee && e == self.max_exp_field() {
            return if m == 0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
        if !self.ieee && e == self.max_exp_field() && m == (1 << self.man_bits) - 1 {
            return f64::NAN;
        }
        sign * self.value(e, m)
    }

    /// `v` rounded to the nearest value of the format (ties to even), as a byte.
    pub fn encode(self, v: f64) -> u8 {
        if v.is_nan() {
            return self.nan();
        }
        let sign: u8 = if v.is_sign_negative() { 0x80 } else { 0 };
        let a = v.abs();
        if a.is_infinite() && self.ieee {
            return sign | (self.max_exp_field() << self.man_bits) as u8;
        }
        let max = self.max_finite();
        let min_exp = 1 - self.bias;
        // The exponent of `a`'s leading bit (subnormals share the smallest normal one).
        let e = if a == 0.0 {
            min_exp
        } else {
            (a.log2().floor() as i32).max(min_exp)
        };
        let quantum = 2f64.powi(e - self.man_bits as i32);
        let q = (a / quantum).round_ties_even() * quantum;
        let q = if q > max || a.is_infinite() { max } else { q };
        sign | self.bits_of(q)
    }

    /// The byte of a non-negative value of the format.
    fn bits_of(self, q: f64) -> u8 {
        let min_exp = 1 - self.bias;
        let smallest_normal = 2f64.powi(min_exp);
        if q < smallest_normal {
            let m = (q / 2f64.powi(min_exp - self.man_bits as i32)).round() as u32;
            return m as u8;
        }
        let mut e = q.log2().floor() as i32;
        // log2 of an exact power of two may land a hair below it.
        if 2f64.powi(e + 1) <= q {
            e += 1;
        }
        let m = (q / 2f64.powi(e - self.man_bits as i32)).round() as u32 - (1 << self.man_bits);
        ((((e + self.bias) as u32) << self.man_bits) | m) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_values() {
        assert_eq!(E4M3.max_finite(), 448.0);
        assert_eq!(E5M2.max_finite(), 57344.0);
        assert_eq!(E4M3.decode(0x01), 2f64.powi(-9));
        assert_eq!(E5M2.decode(0x01), 2f64.powi(-16));
        assert_eq!(E4M3.decode(0x38), 1.0);
        assert_eq!(E5M2.decode(0x3c), 1.0);
        assert!(E4M3.decode(0x7f).is_nan());
        assert!(E5M2.decode(0x7c).is_infinite());
        // 1 + 1/16 lies halfway between 1 and 1.125 in E4M3: ties to even (1).
        assert_eq!(E4M3.decode(E4M3.encode(1.0625)), 1.0);
        assert_eq!(E4M3.decode(E4M3.encode(1.1875)), 1.25);
        // Saturation.
        assert_eq!(E4M3.decode(E4M3.encode(1000.0)), 448.0);
        assert_eq!(E4M3.decode(E4M3.encode(-1e9)), -448.0);
        assert_eq!(E5M2.decode(E5M2.encode(1e6)), 57344.0);
        assert!(E5M2.decode(E5M2.encode(f64::INFINITY)).is_infinite());
        assert!(E4M3.decode(E4M3.encode(f64::NAN)).is_nan());
    }

    #[test]
    fn every_pattern_round_trips() {
        for f in [E4M3, E5M2] {
            for b in 0..=255u8 {
                let v = f.decode(b);
                if v.is_nan() {
                    continue;
                }
                let back = f.decode(f.encode(v));
                assert_eq!(back, v, "{f:?} {b:#x}");
            }
        }
    }
}
