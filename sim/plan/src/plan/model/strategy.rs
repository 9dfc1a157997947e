//! A kernel's strategies for its joint seeds (see `joint.rs`): its variables split over
//! the machine's levels and stepped over `Time`, and the operand layouts that follow from
//! them, as text and as words per PE.

use mnsim_arch::layout::{NO_BCAST, layout_text};

/// A kernel's variables split over the machine's levels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Strategy {
    /// Per addressable level (root-most first): the variable split over it and over how
    /// many positions, or `None` (replicated).
    pub(super) split: Vec<Option<(usize, u64)>>,
    /// `Time` steps of one or two variables.
    pub(super) time: Vec<(usize, u64)>,
}

/// One operand of a kernel: its shape and the variable of each axis (`None`: a
/// broadcast axis of size 1).
#[derive(Clone, Debug)]
pub(super) struct Operand {
    pub(super) tensor: crate::program::TensorId,
    pub(super) dims: Vec<u64>,
    pub(super) vars: Vec<Option<usize>>,
    /// Elements of its dtype per word (its last axis packs into them).
    pub(super) slots: u64,
    /// The tensor's own shape where `dims` pads it (the layouts then have a pad
    /// prefix): see [`padded`].
    pub(super) logical: Option<Vec<u64>>,
}

/// A contraction's operands and extents with each variable padded as the candidates
/// pad an axis (`candidates::padded_dims`: to the largest power of two that adds at
/// most a 32nd), so that a variable with few factors of two (M = 3000) can still take
/// whole fan-outs; `None` when no variable moves.
pub(super) fn padded(operands: &[Operand], ext: &[u64]) -> Option<(Vec<Operand>, Vec<u64>)> {
    let pext = crate::plan::candidates::padded_dims(ext)?;
    let ops = (operands.iter())
        .map(|op| {
            let dims: Vec<u64> = (op.dims.iter().zip(&op.vars))
                .map(|(&d, v)| v.map_or(d, |v| pext[v].max(d)))
                .collect();
            let logical = (dims != op.dims).then(|| op.dims.clone());
            Operand {
                dims,
                logical,
                ..op.clone()
            }
        })
        .collect();
    Some((ops, pext))
}

/// The strategies of a kernel whose variables have extents `ext` on a machine with
/// `fanouts` (root-most first): every level to one variable (its whole fan-out when the
/// variable's remaining extent allows, else the largest power-of-two part that divides
/// it) or to none. Without `Time` steps.
pub(super) fn splits(ext: &[u64], fanouts: &[u64]) -> Vec<Vec<Option<(usize, u64)>>> {
    let mut out: Vec<Vec<Option<(usize, u64)>>> = vec![Vec::new()];
    let mut rests: Vec<Vec<u64>> = vec![ext.to_vec()];
    for &f in fanouts {
        let mut next = Vec::new();
        let mut next_rests = Vec::new();
        for (s, rest) in out.iter().zip(&rests) {
            let mut none = s.clone();
            none.push(None);
            next.push(none);
            next_rests.push(rest.clone());
            for (v, &r) in rest.iter().enumerate() {
                let mut p = f;
                while p > 1 && !r.is_multiple_of(p) {
                    p /= 2;
                }
                if p <= 1 || !f.is_multiple_of(p) {
                    continue;
                }
                let mut x = s.clone();
                x.push(Some((v, p)));
                let mut rr = rest.clone();
                rr[v] /= p;
                next.push(x);
                next_rests.push(rr);
            }
        }
        out = next;
        rests = next_rests;
    }
    out
}

/// Whether some strategy of variables with extents `ext` splits every level of
/// `fanouts` (those down to the kernel's unit) over all of its positions: then every
/// unit has a share without padding.
pub(super) fn fills_units(ext: &[u64], fanouts: &[u64]) -> bool {
    (splits(ext, fanouts).iter())
        .any(|s| (s.iter().zip(fanouts)).all(|(x, &f)| x.is_some_and(|(_, p)| p == f)))
}

/// One sub-axis of an operand's axis under a strategy, major to minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sub {
    /// Steps over `Time`.
    Time(u64),
    /// Positions of addressable level `li`.
    Level(usize, u64),
    /// What stays in each PE's memory.
    Mem(u64),
    /// The slots of a word (the last axis packed).
    Packed(u64),
}

/// Walks the sub-axes of `op` under strategy `s`: `sub(axis, sub)`
/// for each, in order; returns the words per PE (per step when stepped), or `None` when
/// the strategy does not divide it. No text is built: the words decide whether a
/// strategy fits LM before any layout is written.
fn operand_walk(op: &Operand, s: &Strategy, mut sub: impl FnMut(usize, Sub)) -> Option<u64> {
    let rank = op.dims.len();
    let slots = op.slots;
    let mut words = 1u64;
    for a in 0..rank {
        let mut rest = op.dims[a];
        let mut any = false;
        if let Some(v) = op.vars[a] {
            if let Some(&(_, t)) = s.time.iter().find(|(tv, _)| *tv == v) {
                if !rest.is_multiple_of(t) {
                    return None;
                }
                rest /= t;
                sub(a, Sub::Time(t));
                any = true;
            }
            for (li, sp) in s.split.iter().enumerate() {
                if let Some((sv, p)) = sp
                    && *sv == v
                {
                    if !rest.is_multiple_of(*p) {
                        return None;
                    }
                    rest /= p;
                    sub(a, Sub::Level(li, *p));
                    any = true;
                }
            }
        }
        let packed = a + 1 == rank && slots > 1 && rest.is_multiple_of(slots);
        if packed {
            rest /= slots;
        }
        if rest > 1 || (!any && !packed) {
            sub(a, Sub::Mem(rest));
        }
        if packed {
            sub(a, Sub::Packed(slots));
        }
        words = words.checked_mul(rest)?;
    }
    Some(words)
}

/// The words per PE of `op` under `s` (see [`operand_walk`]).
fn operand_words(op: &Operand, s: &Strategy) -> Option<u64> {
    operand_walk(op, s, |_, _| {})
}

/// The layout text of `op` under strategy `s` (levels `names`), and
/// its words per PE (per step when stepped); `None` when the strategy does not divide it.
fn operand_text(op: &Operand, s: &Strategy, names: &[String]) -> Option<(String, u64)> {
    let mut body: Vec<Vec<String>> = vec![Vec::new(); op.dims.len()];
    let words = operand_walk(op, s, |a, x| {
        body[a].push(match x {
            Sub::Time(t) => format!("{t}_Time"),
            Sub::Level(li, p) => format!("{p}_{}", names[li]),
            Sub::Mem(n) => n.to_string(),
            Sub::Packed(w) => format!("{w}_W"),
        })
    })?;
    Some((layout_text(op.logical.as_deref(), &body, NO_BCAST), words))
}

/// The operands' layout texts and words per PE under `s`, if it divides them all.
pub(super) fn texts(
    operands: &[Operand],
    s: &Strategy,
    names: &[String],
) -> Option<Vec<(String, u64)>> {
    operands
        .iter()
        .map(|op| operand_text(op, s, names))
        .collect()
}

/// The operands' words per PE together under `s`, if it divides them all.
fn words(operands: &[Operand], s: &Strategy) -> Option<u64> {
    operands
        .iter()
        .try_fold(0u64, |sum, op| sum.checked_add(operand_words(op, s)?))
}

/// The most `Time` steps a joint seed gives one of two stepped variables.
const MAX_STEPS: u64 = 128;

/// The `Time` steps strategy `s` may take (its own `time` ignored): none when the
/// operands fit LM together; else the fewest steps of one variable that make them
/// fit; else every pair of step counts of two variables (powers of two up to
/// `MAX_STEPS`) that fits and halving neither of which does. Empty when `s` does
/// not divide the operands.
pub(super) fn time_options(
    operands: &[Operand],
    ext: &[u64],
    s: &Strategy,
    lm_words: u64,
) -> Vec<Vec<(usize, u64)>> {
    let mut s = Strategy {
        split: s.split.clone(),
        time: Vec::new(),
    };
    let Some(need) = words(operands, &s) else {
        return Vec::new();
    };
    let mut options: Vec<Vec<(usize, u64)>> = Vec::new();
    if need <= lm_words {
        options.push(Vec::new());
        return options;
    }
    let fits = |s: &Strategy| words(operands, s).is_some_and(|w| w <= lm_words);
    for (v, &e) in ext.iter().enumerate() {
        let mut t = 2u64;
        while t <= e {
            s.time = vec![(v, t)];
            if fits(&s) {
                options.push(s.time.clone());
                break;
            }
            t *= 2;
        }
    }
    if !options.is_empty() {
        return options;
    }
    let pow = |e: u64| {
        (1..=MAX_STEPS.trailing_zeros())
            .map(|k| 1u64 << k)
            .take_while(move |&t| t <= e)
            .collect::<Vec<u64>>()
    };
    for v in 0..ext.len() {
        for w in v + 1..ext.len() {
            for &tv in &pow(ext[v]) {
                for &tw in &pow(ext[w]) {
                    s.time = vec![(v, tv), (w, tw)];
                    if !fits(&s) {
                        continue;
                    }
                    let fits_with = |a: u64, b: u64| {
                        let mut x = s.clone();
                        x.time = vec![(v, a), (w, b)];
                        (a > 1 && b > 1) && fits(&x)
                    };
                    if !fits_with(tv / 2, tw) && !fits_with(tv, tw / 2) {
                        options.push(s.time.clone());
                    }
                }
            }
        }
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_every_level_choice() {
        // Two variables of 8 over two levels of 2: each level none, v0 or v1.
        assert_eq!(splits(&[8, 8], &[2, 2]).len(), 9);
        // A variable of 2 takes a level of 4 only in part, and only once.
        let s = splits(&[2], &[4, 4]);
        assert!(s.contains(&vec![Some((0, 2)), None]));
        assert!(!s.contains(&vec![Some((0, 2)), Some((0, 2))]));
    }

    #[test]
    fn an_operand_takes_its_variables_levels() {
        let op = Operand {
            tensor: crate::program::EntityRef::new(0),
            dims: vec![1024, 1024],
            vars: vec![Some(0), Some(2)],
            slots: 4,
            logical: None,
        };
        let s = Strategy {
            split: vec![Some((0, 8)), Some((2, 8)), Some((1, 16)), None],
            time: vec![(2, 2)],
        };
        let names: Vec<String> = ["L2B", "L1B", "MAB", "PE"].map(String::from).to_vec();
        let (text, words) = operand_text(&op, &s, &names).unwrap();
        assert_eq!(text, "((8_L2B, 128), (2_Time, 8_L1B, 16, 4_W))");
        assert_eq!(words, 128 * 16);
    }
}
