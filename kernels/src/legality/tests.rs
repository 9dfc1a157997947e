//! Unit tests of the per-axis position functions against their definition.

use super::axis_fn::{AxisFn, same};
use mnsim_arch::layout::{Class, SubAxis};

struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The position contribution of a raw group at level 0, by definition.
fn brute(group: &[SubAxis], i: u64) -> u64 {
    let mut radix = 1u64;
    let mut v = 0;
    for s in group.iter().rev() {
        if s.class == Class::Level(0) {
            v += ((i / radix) % s.size) * s.stride;
        }
        radix *= s.size;
    }
    v
}

fn random_group(rng: &mut Rng) -> Vec<SubAxis> {
    (0..1 + rng.next(4))
        .map(|_| SubAxis {
            size: 1 + rng.next(4),
            class: if rng.next(3) == 0 {
                Class::Mem
            } else {
                Class::Level(0)
            },
            stride: 1 + rng.next(6),
        })
        .collect()
}

#[test]
fn canonical_functions_agree_with_the_definition() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..4000 {
        let (g1, g2) = (random_group(&mut rng), random_group(&mut rng));
        let n = 1 + rng.next(40);
        let (f1, f2) = (AxisFn::from_group(&g1, 0, n), AxisFn::from_group(&g2, 0, n));
        for i in 0..n {
            assert_eq!(f1.at(i), brute(&g1, i), "{g1:?} at {i}");
        }
        assert_eq!(f1.is_zero(), (0..n).all(|i| brute(&g1, i) == 0), "{g1:?}");
        let want = (0..n).all(|i| brute(&g1, i) == brute(&g2, i));
        assert_eq!(same(&f1, &f2, n), want, "{g1:?} vs {g2:?} on 0..{n}");
    }
}

#[test]
fn equal_functions_with_different_digits() {
    // (2:2, 2:1) merges into one digit of size 4: the same function as (4:1).
    let l = |size, stride| SubAxis {
        size,
        class: Class::Level(0),
        stride,
    };
    let a = AxisFn::from_group(&[l(2, 2), l(2, 1)], 0, 4);
    let b = AxisFn::from_group(&[l(4, 1)], 0, 4);
    assert_eq!(a, b);
    // On 0..2 only the minor digit moves: (2:1) and (4:1) agree there, not on 0..3.
    let c = AxisFn::from_group(&[l(2, 1)], 0, 2);
    let d = AxisFn::from_group(&[l(4, 1)], 0, 2);
    assert!(same(&c, &d, 2));
    let c = AxisFn::from_group(&[l(2, 1)], 0, 3);
    let d = AxisFn::from_group(&[l(4, 1)], 0, 3);
    assert!(!same(&c, &d, 3));
}
