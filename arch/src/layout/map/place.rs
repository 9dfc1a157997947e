//! The placement map and its inverse: where a logical (or padded) element lives, and
//! which element a cell holds.

use crate::layout::inverse::{Inverse, invert};
use crate::layout::{Class, Placement, SubAxis, TensorLayout};

impl TensorLayout {
    /// Where logical element `index` lives. `None` if the index is out of range.
    pub fn place(&self, index: &[u64]) -> Option<Placement> {
        if index.len() != self.logical.len() || index.iter().zip(&self.logical).any(|(i, n)| i >= n)
        {
            return None;
        }
        Some(self.place_padded(index))
    }

    /// Like [`Self::place`] for any index of the padded shape (padding included).
    /// The index must be in range of the padded shape.
    pub fn place_padded(&self, index: &[u64]) -> Placement {
        let mut pos: Vec<Option<u64>> = self
            .levels
            .iter()
            .map(|l| (!l.replicated).then_some(0))
            .collect();
        let (mut addr, mut w, mut t) = (0u64, 0u64, 0u64);
        for &(g, s, radix) in self.flat() {
            let k = (index[g] / radix) % s.size;
            let v = k * s.stride;
            match s.class {
                Class::Mem => addr += v,
                Class::W => w += v,
                Class::Time => t += v,
                Class::Level(i) => {
                    if let Some(p) = pos[i].as_mut() {
                        *p += v;
                    }
                }
            }
        }
        Placement { pos, addr, w, t }
    }

    /// The logical element stored in a cell, if any: `pos` gives a position for every
    /// addressable level (ignored for replicated ones). `None` for idle positions,
    /// unused words or slots, and padding.
    pub fn element_at(&self, pos: &[u64], addr: u64, w: u64, t: u64) -> Option<Vec<u64>> {
        let padded = self.padded_element_at(pos, addr, w, t)?;
        padded
            .iter()
            .zip(&self.logical)
            .all(|(i, n)| i < n)
            .then_some(padded)
    }

    /// Like [`Self::element_at`] but returns padding positions too.
    pub fn padded_element_at(&self, pos: &[u64], addr: u64, w: u64, t: u64) -> Option<Vec<u64>> {
        if pos.len() != self.levels.len() {
            return None;
        }
        let mut sub_idx = vec![0u64; self.flat().len()];
        let mut solve = |class: Class, inv: &Inverse, value: u64| -> Option<()> {
            let ids: Vec<usize> = (0..self.flat().len())
                .filter(|&j| self.flat()[j].1.class == class)
                .collect();
            let axes: Vec<SubAxis> = ids.iter().map(|&j| self.flat()[j].1).collect();
            let idx = invert(inv, &axes, value)?;
            for (j, k) in ids.into_iter().zip(idx) {
                sub_idx[j] = k;
            }
            Some(())
        };
        solve(Class::Mem, &self.inv_mem, addr)?;
        solve(Class::W, &self.inv_w, w)?;
        solve(Class::Time, &self.inv_time, t)?;
        for (i, l) in self.levels.iter().enumerate() {
            if !l.replicated {
                if pos[i] >= l.fanout {
                    return None;
                }
                solve(Class::Level(i), &self.inv_levels[i], pos[i])?;
            } else if pos[i] >= l.fanout {
                return None;
            }
        }
        let mut index = vec![0u64; self.groups.len()];
        for (j, &(g, s, radix)) in self.flat().iter().enumerate() {
            let _ = s;
            index[g] += sub_idx[j] * radix;
        }
        Some(index)
    }
}
