//! Integer helpers every layer uses on extents, periods and step counts.

/// The greatest common divisor of `a` and `b` (`gcd(a, 0) = a`).
pub fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The least common multiple of `a` and `b`, `None` where it overflows (`lcm(0, 0) = 0`).
pub fn lcm(a: u64, b: u64) -> Option<u64> {
    match gcd(a, b) {
        0 => Some(0),
        g => (a / g).checked_mul(b),
    }
}

#[cfg(test)]
mod tests {
    use super::{gcd, lcm};

    proptest::proptest! {
        /// The gcd divides both and every common divisor divides it; the lcm is a
        /// multiple of both, their product over the gcd.
        #[test]
        fn gcd_and_lcm_are_the_greatest_divisor_and_least_multiple(
            a in 0u64..10_000,
            b in 0u64..10_000,
        ) {
            let g = gcd(a, b);
            if g == 0 {
                proptest::prop_assert!(a == 0 && b == 0);
            } else {
                proptest::prop_assert_eq!((a % g, b % g), (0, 0));
                for d in 1..=a.max(b).min(200) {
                    if a % d == 0 && b % d == 0 {
                        proptest::prop_assert_eq!(g % d, 0);
                    }
                }
            }
            let l = lcm(a, b).unwrap();
            if a != 0 && b != 0 {
                proptest::prop_assert_eq!((l % a, l % b), (0, 0));
                proptest::prop_assert_eq!(l, a * b / g);
            }
        }
    }

    #[test]
    fn lcm_overflow_is_none() {
        assert_eq!(lcm(u64::MAX, u64::MAX - 1), None);
        assert_eq!(lcm(u64::MAX, u64::MAX), Some(u64::MAX));
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(lcm(4, 6), Some(12));
    }
}
