//! One copy of each of the walks' step and send vectors the memo holds.

use super::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;

/// Equal slices shared: [`Shared::share`] points a slice at the copy kept of its value.
/// Most slices handed in are copies of one allocation (the engine keeps one walk per
/// key), so each allocation is looked up by its address first and its contents are
/// hashed once.
pub(super) struct Shared<T> {
    /// One copy of each value.
    by_value: HashSet<Arc<[T]>>,
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
            by_value: HashSet::default(),
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
        let kept = match self.by_value.get(&**v) {
            Some(kept) => kept.clone(),
            None => {
                self.by_value.insert(v.clone());
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
        self.by_value.len()
    }
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
}
