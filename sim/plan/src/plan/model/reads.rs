//! The states an op reads its inputs in, as the memo's key holds them: up to four in
//! place (no allocation, compared and hashed without following a pointer: the memo is
//! looked up at every op of every evaluation), more on the heap.

use super::StateId;

/// How many states a key holds in place.
const FEW: usize = 4;

/// An op's inputs' states, in order. Equal lists are equal values: a list is `Few`
/// exactly when it has at most [`FEW`] states, the places past them 0.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Reads {
    Few(u8, [StateId; FEW]),
    Many(Box<[StateId]>),
}

impl Reads {
    /// No states.
    pub(super) fn new() -> Reads {
        Reads::Few(0, [0; FEW])
    }

    /// Appends state `s`.
    pub(super) fn push(&mut self, s: StateId) {
        match self {
            Reads::Few(n, ids) if (*n as usize) < FEW => {
                ids[*n as usize] = s;
                *n += 1;
            }
            Reads::Few(_, ids) => {
                let mut v = ids.to_vec();
                v.push(s);
                *self = Reads::Many(v.into_boxed_slice());
            }
            Reads::Many(v) => {
                let mut w = std::mem::take(v).into_vec();
                w.push(s);
                *v = w.into_boxed_slice();
            }
        }
    }

    /// The states, in order.
    pub(super) fn as_slice(&self) -> &[StateId] {
        match self {
            Reads::Few(n, ids) => &ids[..*n as usize],
            Reads::Many(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Reads;

    fn of(states: &[u32]) -> Reads {
        let mut r = Reads::new();
        for &s in states {
            r.push(s);
        }
        r
    }

    proptest::proptest! {
        /// A key holds its states in order, and two keys are equal exactly when their
        /// states are.
        #[test]
        fn reads_are_their_states(
            a in proptest::collection::vec(0u32..3, 0..8),
            b in proptest::collection::vec(0u32..3, 0..8),
        ) {
            let (ra, rb) = (of(&a), of(&b));
            proptest::prop_assert_eq!(ra.as_slice(), &a[..]);
            proptest::prop_assert_eq!(ra == rb, a == b);
        }
    }
}
