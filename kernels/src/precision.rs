//! Mixed precision and the rate a kernel is charged at (docs/kernels.md, precision).
//!
//! - **The compute dtype.** A matrix kernel computes in the wider of its two operands'
//!   types and accumulates in its result's (a bf16 × bf16 → f32 MatMul runs the matrix
//!   unit's bf16 mode; s8 × u8 → s32 its s8 mode); a vector kernel in the widest type
//!   among its operands and result (a Dequantize s8 → f32 computes in f32). When every
//!   operand has one type this is that type, as before mixed precision existed.
//! - **A type with no rate.** When the machine gives no rate for the compute dtype on a
//!   unit, the kernel runs in the next wider type that has one, charged as such: a
//!   4-bit integer as its 8-bit form, an 8-bit integer or float as f16 (dequantised on
//!   the fly), 16- and 32-bit integers as f32, 64-bit integers as f64, and f16/bf16 as
//!   f32, f32 as f64. So a machine without an int8 mode runs int8 at its f16 rate, and a
//!   what-if gives it one by setting `compute.matrix.flops.S8` (and `.tile.S8`).

use crate::kernel::Kernel;
use mnsim_arch::{DType, Machine, machine::Tile};

/// An order of width for choosing a compute dtype: predicates, then integers by bits,
/// then floats by bits (any float is "wider" than any integer: the float side of a
/// mixed op is where the arithmetic happens).
fn rank(d: DType) -> (u8, u64) {
    match d {
        DType::Pred => (0, d.bits()),
        _ if d.is_float() => (2, d.bits()),
        _ => (1, d.bits()),
    }
}

/// The wider of two dtypes by [`rank`] (the first on a tie: bf16 and f16 tie).
pub fn wider(a: DType, b: DType) -> DType {
    if rank(b) > rank(a) { b } else { a }
}

/// The dtype `k` computes in, from its inputs' dtypes and its output's.
pub fn compute_dtype(k: &Kernel, inputs: &[DType], out: DType) -> DType {
    if k.is_matmul() {
        return match inputs {
            [a, b, ..] => wider(*a, *b),
            [a] => *a,
            [] => out,
        };
    }
    inputs.iter().copied().fold(out, wider)
}

/// The next type to try when the machine has no rate for `d` (see the module docs).
pub fn promote(d: DType) -> Option<DType> {
    Some(match d {
        DType::S4 => DType::S8,
        DType::U4 => DType::U8,
        DType::Pred | DType::S8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => DType::F16,
        DType::S16 | DType::U16 | DType::S32 | DType::U32 | DType::F16 | DType::BF16 => DType::F32,
        DType::S64 | DType::U64 | DType::F32 => DType::F64,
        DType::F64 => return None,
    })
}

/// `d` or the first type of its promotion chain that `has` accepts.
fn first_with(d: DType, has: impl Fn(DType) -> bool) -> Option<DType> {
    let mut cur = Some(d);
    while let Some(c) = cur {
        if has(c) {
            return Some(c);
        }
        cur = promote(c);
    }
    None
}

/// The matrix-unit rate (FLOP per cycle per unit) and tile that `d` runs at, and the
/// type they belong to (`d` itself, or the type it is promoted to); `None` when no
/// type of the chain has both.
pub fn matrix_rate(m: &Machine, d: DType) -> Option<(DType, f64, Tile)> {
    let mx = &m.compute.matrix;
    let t = first_with(d, |c| mx.flops.contains_key(&c) && mx.tile.contains_key(&c))?;
    Some((t, *mx.flops.get(&t)?, *mx.tile.get(&t)?))
}

/// The vector rate (FLOP per cycle per PE) that `d` runs at, and the type it belongs to.
pub fn vector_rate(m: &Machine, d: DType) -> Option<(DType, f64)> {
    let t = first_with(d, |c| m.compute.vector.contains_key(&c))?;
    Some((t, *m.compute.vector.get(&t)?))
}

/// Floats, integers and predicates: the families whose values meet only through an
/// explicit conversion.
fn family(d: DType) -> u8 {
    match d {
        DType::Pred => 2,
        _ if d.is_float() => 0,
        _ => 1,
    }
}

/// Where `k`'s operands break the mixed-precision rule (docs/kernels.md): `Some((r, i))`
/// when operand `i` is of another family than operand `r`, the kernel's first data input
/// (operands count the inputs, then the result at `inputs.len()`). Float types mix
/// freely and integer types with each other; a matrix kernel's integer operands may
/// accumulate into a float result; a `Select`'s condition is a mask of any dtype; a
/// quantisation and the eltwise kernels that compare, index or draw dropout masks have
/// their own dtypes. A conversion (`Cast`, a `Unary` copy into another dtype) is the
/// caller's to exempt.
pub fn mixed_families(k: &Kernel, inputs: &[DType], out: DType) -> Option<(usize, usize)> {
    if k.own_dtypes() {
        return None;
    }
    let matrix = k.is_matmul();
    let first = k.with_family(|f| f.first_data_input());
    let d0 = *inputs.get(first)?;
    let operands = inputs
        .iter()
        .copied()
        .chain([out])
        .enumerate()
        .skip(first + 1);
    for (i, d) in operands {
        let result = i == inputs.len();
        let accumulates = matrix && result && family(d0) == 1 && d.is_float();
        if family(d) != family(d0) && !accumulates {
            return Some((first, i));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::BinaryOp;

    #[test]
    fn compute_dtypes() {
        let mm = Kernel::MatMul;
        assert_eq!(
            compute_dtype(&mm, &[DType::BF16, DType::BF16], DType::F32),
            DType::BF16
        );
        assert_eq!(
            compute_dtype(&mm, &[DType::U8, DType::S8], DType::S32),
            DType::U8
        );
        let add = Kernel::Binary(BinaryOp::Add);
        assert_eq!(
            compute_dtype(&add, &[DType::F32, DType::F32], DType::F32),
            DType::F32
        );
        assert_eq!(compute_dtype(&add, &[DType::S8], DType::F32), DType::F32);
        assert_eq!(compute_dtype(&add, &[DType::F32], DType::S8), DType::F32);
        assert_eq!(
            compute_dtype(&Kernel::Select, &[DType::Pred, DType::BF16], DType::BF16),
            DType::BF16
        );
    }

    #[test]
    fn every_chain_ends_in_f64() {
        for d in DType::ALL {
            let mut c = d;
            let mut n = 0;
            while let Some(p) = promote(c) {
                assert!(rank(p) > rank(c) || p.is_float(), "{c} -> {p}");
                c = p;
                n += 1;
                assert!(n < 6);
            }
            assert_eq!(c, DType::F64, "{d}");
        }
    }

    #[test]
    fn families_meet_only_where_the_rule_allows() {
        use DType::{F16, F32, Pred, S8, S32};
        let add = Kernel::Binary(BinaryOp::Add);
        assert_eq!(mixed_families(&add, &[F32, F16], F16), None);
        assert_eq!(mixed_families(&add, &[F32, S32], F32), Some((0, 1)));
        assert_eq!(mixed_families(&add, &[S8, S32], F32), Some((0, 2)));
        // A matrix kernel's integers accumulate into a float, not the other way round.
        let mm = Kernel::MatMul;
        assert_eq!(mixed_families(&mm, &[S8, S8], F32), None);
        assert_eq!(mixed_families(&mm, &[S8, F16], F32), Some((0, 1)));
        assert_eq!(mixed_families(&mm, &[F16, F16], S32), Some((0, 2)));
        // A Select's condition is a mask of any dtype; its branches are not.
        let sel = Kernel::Select;
        assert_eq!(mixed_families(&sel, &[S32, F32, F16], F32), None);
        assert_eq!(mixed_families(&sel, &[Pred, F32, S32], F32), Some((1, 2)));
        // A bias, like any vector operand.
        let bias = Kernel::BiasAdd { axis: 1 };
        assert_eq!(mixed_families(&bias, &[F32, S32], F32), Some((0, 1)));
        // A comparison gives a predicate; an activation keeps its family.
        use crate::eltwise::{Act, Cmp, Eltwise};
        let ge = Kernel::Eltwise(Eltwise::Compare(Cmp::GreaterEqual));
        assert_eq!(mixed_families(&ge, &[F32, F32], Pred), None);
        let relu = Kernel::Eltwise(Eltwise::Act(Act::Relu));
        assert_eq!(mixed_families(&relu, &[F32], S32), Some((0, 1)));
    }
}
