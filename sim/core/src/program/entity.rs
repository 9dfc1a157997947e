//! Typed ids and the maps they index (cranelift's `entity` module is the model): an id
//! is a `u32` newtype that only its own map hands out, so a tensor id cannot index ops.

use std::marker::PhantomData;

/// A typed index into a [`PrimaryMap`].
pub trait EntityRef: Copy + Eq + Ord + std::fmt::Debug {
    /// The id of the `index`-th entry.
    fn new(index: usize) -> Self;
    /// The position of the entry this id names.
    fn index(self) -> usize;
}

/// Declares a typed id: `entity_impl!(TensorId, "t")` (printed `t3`).
macro_rules! entity_impl {
    ($name:ident, $prefix:expr) => {
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        impl $crate::program::entity::EntityRef for $name {
            fn new(index: usize) -> Self {
                // A program's maps are checked to hold fewer than 2^32 entries before
                // any id is made (`Program::MAX_ENTRIES`).
                $name(index as u32)
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }
    };
}
pub(crate) use entity_impl;

/// Entries made once and never removed, each named by the id [`PrimaryMap::push`]
/// returned.
#[derive(Clone, PartialEq)]
pub struct PrimaryMap<K, V> {
    elems: Vec<V>,
    key: PhantomData<K>,
}

impl<K: EntityRef, V> Default for PrimaryMap<K, V> {
    fn default() -> Self {
        PrimaryMap {
            elems: Vec::new(),
            key: PhantomData,
        }
    }
}

impl<K: EntityRef, V: std::fmt::Debug> std::fmt::Debug for PrimaryMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: EntityRef, V> PrimaryMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry; its id.
    pub fn push(&mut self, v: V) -> K {
        let k = K::new(self.elems.len());
        self.elems.push(v);
        k
    }

    /// The entry `k` names (every id this map handed out names one).
    pub fn get(&self, k: K) -> Option<&V> {
        self.elems.get(k.index())
    }

    /// The entry `k` names, to change it.
    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        self.elems.get_mut(k.index())
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.elems.len()
    }

    /// Whether the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }

    /// The ids, in order.
    pub fn keys(&self) -> impl Iterator<Item = K> + use<K, V> {
        (0..self.elems.len()).map(K::new)
    }

    /// The entries, in order.
    pub fn values(&self) -> std::slice::Iter<'_, V> {
        self.elems.iter()
    }

    /// The entries, in order, to change them.
    pub fn values_mut(&mut self) -> std::slice::IterMut<'_, V> {
        self.elems.iter_mut()
    }

    /// (id, entry), in order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> {
        self.elems.iter().enumerate().map(|(i, v)| (K::new(i), v))
    }
}

impl<K: EntityRef, V> std::ops::Index<K> for PrimaryMap<K, V> {
    type Output = V;
    fn index(&self, k: K) -> &V {
        &self.elems[k.index()]
    }
}

impl<K: EntityRef, V> std::ops::IndexMut<K> for PrimaryMap<K, V> {
    fn index_mut(&mut self, k: K) -> &mut V {
        &mut self.elems[k.index()]
    }
}
