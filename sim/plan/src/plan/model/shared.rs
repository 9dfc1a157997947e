//! One copy of each of the walks' step and send vectors the memo holds.

use super::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

/// Equal slices shared: [`Shared::share`] points a slice at the copy kept of its value.
/// Most slices handed in are copies of one allocation (the engine keeps one walk per
/// key), so each allocation is looked up by its address first. A new one is found
/// among the copies kept by a hash of its length and of [`SAMPLES`] of its values
/// spread over it (a walk's vectors have tens of thousands: hashing them whole cost
/// more than comparing the few that sample alike), then compared whole.
pub(super) struct Shared<T> {
    /// One copy of each value, by the hash of its samples.
    by_value: HashMap<u64, Vec<Arc<[T]>>>,
    /// By the address of a slice handed in: that slice and the copy kept of it.
    by_address: HashMap<usize, Seen<T>>,
}

/// A slice handed in (held, so that no other allocation takes its address while the
/// entry lives) and the copy kept of its value.
struct Seen<T> {
    handed: Arc<[T]>,
    kept: Arc<[T]>,
}

impl<T> Default for Shared<T> {
    fn default() -> Self {
        Shared {
            by_value: HashMap::default(),
            by_address: HashMap::default(),
        }
    }
}

impl<T: Eq + Hash> Shared<T> {
    /// Points `v` at the copy kept of its value (kept now if there was none).
    pub(super) fn share(&mut self, v: &mut Arc<[T]>) {
        if v.is_empty() {
            return;
        }
        let address = Arc::as_ptr(v) as *const T as usize;
        if let Some(seen) = self.by_address.get(&address) {
            debug_assert!(Arc::ptr_eq(&seen.handed, v), "an address taken twice");
            *v = seen.kept.clone();
            return;
        }
        let alike = self.by_value.entry(sampled(v)).or_default();
        let kept = match alike.iter().find(|k| ***k == **v) {
            Some(kept) => kept.clone(),
            None => {
                alike.push(v.clone());
                v.clone()
            }
        };
        let seen = Seen {
            handed: v.clone(),
            kept: kept.clone(),
        };
        self.by_address.insert(address, seen);
        *v = kept;
    }

    /// Distinct values kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_value.values().map(Vec::len).sum()
    }
}

/// Values of a slice its hash reads (and its last).
const SAMPLES: usize = 64;

/// A hash of `v`'s length, [`SAMPLES`] of its values evenly spread and its last.
fn sampled<T: Hash>(v: &[T]) -> u64 {
    let n = v.len();
    let at = (0..SAMPLES)
        .map(|k| k * n / SAMPLES)
        .chain(n.checked_sub(1));
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    n.hash(&mut h);
    for i in at {
        if let Some(x) = v.get(i) {
            x.hash(&mut h);
        }
    }
    std::hash::Hasher::finish(&h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_slices_share_one_copy_and_keep_their_values() {
        let mut s: Shared<u32> = Shared::default();
        let a: Arc<[u32]> = Arc::from(vec![1, 2, 3]);
        let b: Arc<[u32]> = Arc::from(vec![1, 2, 3]);
        let c: Arc<[u32]> = Arc::from(vec![3, 2, 1]);
        let mut out = Vec::new();
        for v in [&a, &b, &a, &c, &b, &c] {
            let mut x = v.clone();
            s.share(&mut x);
            assert_eq!(*x, **v, "sharing changed a value");
            out.push(x);
        }
        assert_eq!(s.len(), 2);
        // Every copy of [1, 2, 3] is the first one kept, by address or by value.
        for x in [&out[1], &out[2], &out[4]] {
            assert!(Arc::ptr_eq(x, &out[0]));
        }
        assert!(Arc::ptr_eq(&out[3], &out[5]));
        assert!(!Arc::ptr_eq(&out[0], &out[3]));
        let mut empty: Arc<[u32]> = Arc::from(Vec::new());
        s.share(&mut empty);
        assert!(empty.is_empty());
        assert_eq!(s.len(), 2);
    }

    /// Long slices that differ only between the values their hash samples are kept
    /// apart (compared whole), and equal ones still share one copy.
    #[test]
    fn slices_alike_in_their_samples_are_compared_whole() {
        let mut s: Shared<u32> = Shared::default();
        let base: Vec<u32> = (0..10_000).collect();
        let mut other = base.clone();
        other[5_001] += 1;
        assert_eq!(
            sampled(&base),
            sampled(&other),
            "5,001 is between two samples"
        );
        let mut a: Arc<[u32]> = Arc::from(base.clone());
        let mut b: Arc<[u32]> = Arc::from(other.clone());
        let mut c: Arc<[u32]> = Arc::from(base);
        s.share(&mut a);
        s.share(&mut b);
        s.share(&mut c);
        assert_eq!(s.len(), 2);
        assert!(!Arc::ptr_eq(&a, &b) && *b == *other);
        assert!(Arc::ptr_eq(&a, &c));
    }
}
