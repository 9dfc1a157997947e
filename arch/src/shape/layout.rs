//! The XLA layout: checking a layout against a rank, the tiled shape and tiled
//! linear index, buffer sizes, and the layout's `Display` form.

use super::{ShapeError, TileDim, XlaLayout};
use std::fmt;

/// Which part of a layout a problem is in (mapped to a text span by the parser).
#[derive(Clone, Copy, Debug)]
pub(super) enum Loc {
    Whole,
    Mtm(usize),
    Tile(usize),
    TileEntry(usize, usize),
}

#[derive(Debug)]
pub(super) struct Issue {
    pub(super) loc: Loc,
    pub(super) message: String,
}

fn issue(loc: Loc, message: impl Into<String>) -> Issue {
    Issue {
        loc,
        message: message.into(),
    }
}

impl From<Issue> for ShapeError {
    fn from(i: Issue) -> ShapeError {
        ShapeError::new(i.message)
    }
}

pub(super) fn checked_product(xs: &[u64]) -> Option<u64> {
    xs.iter().try_fold(1u64, |acc, &x| acc.checked_mul(x))
}

/// Row-major linear index of `e` in an array of bounds `d` (the seed's
/// `linear_index`); `None` on overflow.
fn row_major(e: &[u64], d: &[u64]) -> Option<u64> {
    e.iter()
        .zip(d)
        .try_fold(0u64, |acc, (&e, &d)| acc.checked_mul(d)?.checked_add(e))
}

/// The tiled linear index of element `e` of an array with bounds `d` under a single
/// tile `t` of the same rank (all major to minor):
///
/// `linear_index((⌊e/t⌋, e mod t), (⌈d/t⌉, t))`
///
/// e.g. `linear_index_with_tile(&[2, 3], &[3, 5], &[2, 2]) == 17`.
///
/// Returns `u64::MAX` if the inputs are inconsistent (lengths differ, a tile size is
/// 0, an index is out of bounds) or the result does not fit in a `u64`.
pub fn linear_index_with_tile(e: &[u64], d: &[u64], t: &[u64]) -> u64 {
    if e.len() != d.len() || d.len() != t.len() {
        return u64::MAX;
    }
    if t.contains(&0) || e.iter().zip(d).any(|(e, d)| e >= d) {
        return u64::MAX;
    }
    let mut ee = Vec::with_capacity(2 * e.len());
    let mut dd = Vec::with_capacity(2 * e.len());
    for ((&e, &d), &t) in e.iter().zip(d).zip(t) {
        ee.push(e / t);
        dd.push(d.div_ceil(t));
    }
    for (&e, &t) in e.iter().zip(t) {
        ee.push(e % t);
        dd.push(t);
    }
    match checked_product(&dd) {
        Some(_) => row_major(&ee, &dd).unwrap_or(u64::MAX),
        None => u64::MAX,
    }
}

impl XlaLayout {
    /// The default layout of a rank: row-major (`minor_to_major = [rank-1, ..., 0]`),
    /// untiled, memory space 0.
    pub fn default_for(rank: usize) -> XlaLayout {
        XlaLayout {
            minor_to_major: (0..rank).rev().collect(),
            tiles: Vec::new(),
            memory_space: 0,
        }
    }

    /// Whether this is the default layout of its rank.
    pub fn is_default(&self) -> bool {
        *self == XlaLayout::default_for(self.minor_to_major.len())
    }

    /// The rank this layout is for (the length of `minor_to_major`).
    pub fn rank(&self) -> usize {
        self.minor_to_major.len()
    }

    /// Checks the layout for a shape of rank `rank`: `minor_to_major` is a
    /// permutation of `0..rank`, no tile has more entries than the rank of the
    /// shape it tiles, no tile size is 0, no tile ends in `*`.
    pub fn validate(&self, rank: usize) -> Result<(), ShapeError> {
        self.check(rank).map_err(ShapeError::from)
    }

    pub(super) fn check(&self, rank: usize) -> Result<(), Issue> {
        let m = &self.minor_to_major;
        if m.len() != rank {
            return Err(issue(
                Loc::Whole,
                format!(
                    "minor_to_major has {} entries but the shape has rank {rank}: \
                     not a permutation of 0..{rank}",
                    m.len()
                ),
            ));
        }
        let mut seen = vec![false; rank];
        for (i, &p) in m.iter().enumerate() {
            match seen.get_mut(p) {
                None => {
                    return Err(issue(
                        Loc::Mtm(i),
                        format!(
                            "minor_to_major entry {p} is out of range: \
                             not a permutation of 0..{rank}"
                        ),
                    ));
                }
                Some(true) => {
                    return Err(issue(
                        Loc::Mtm(i),
                        format!(
                            "minor_to_major repeats dimension {p}: \
                             not a permutation of 0..{rank}"
                        ),
                    ));
                }
                Some(s) => *s = true,
            }
        }
        let mut cur = rank;
        for (ti, tile) in self.tiles.iter().enumerate() {
            let k = tile.dims.len();
            if k == 0 {
                return Err(issue(Loc::Tile(ti), "empty tile"));
            }
            if k > cur {
                return Err(issue(
                    Loc::Tile(ti),
                    format!("tile {tile} has {k} dimensions but the shape it tiles has rank {cur}"),
                ));
            }
            for (j, d) in tile.dims.iter().enumerate() {
                if *d == TileDim::Size(0) {
                    return Err(issue(Loc::TileEntry(ti, j), "tile size 0"));
                }
            }
            if tile.dims.last() == Some(&TileDim::Combine) {
                return Err(issue(
                    Loc::TileEntry(ti, k - 1),
                    "`*` cannot be the last tile entry: nothing smaller to combine with",
                ));
            }
            let combined = tile.dims.iter().filter(|d| **d == TileDim::Combine).count();
            // (cur - k) untouched dims, then (k - combined) tile counts and sizes.
            cur = cur - k + 2 * (k - combined);
        }
        Ok(())
    }

    /// The final (tiled, physical, major-to-minor) shape and the position of `index`
    /// in it (all zeros when `index` is `None`).
    pub(super) fn physical(
        &self,
        dims: &[u64],
        index: Option<&[u64]>,
    ) -> Result<(Vec<u64>, Vec<u64>), Issue> {
        self.check(dims.len())?;
        let overflow = |loc| issue(loc, "the tiled buffer size overflows u64");
        let mut shape: Vec<u64> = Vec::with_capacity(dims.len());
        let mut idx: Vec<u64> = Vec::with_capacity(dims.len());
        for &p in self.minor_to_major.iter().rev() {
            shape.push(dims.get(p).copied().unwrap_or(0));
            idx.push(index.and_then(|ix| ix.get(p)).copied().unwrap_or(0));
        }
        checked_product(&shape).ok_or_else(|| overflow(Loc::Whole))?;
        for (ti, tile) in self.tiles.iter().enumerate() {
            let split = shape.len() - tile.dims.len();
            let mut new_shape = shape[..split].to_vec();
            let mut new_idx = idx[..split].to_vec();
            let mut tiled: Vec<(u64, u64, u64)> = Vec::new();
            let mut carry: Option<(u64, u64)> = None;
            for (j, entry) in tile.dims.iter().enumerate() {
                let (mut d, mut e) = (shape[split + j], idx[split + j]);
                if let Some((cd, ce)) = carry.take() {
                    e = ce
                        .checked_mul(d)
                        .and_then(|x| x.checked_add(e))
                        .ok_or_else(|| overflow(Loc::Tile(ti)))?;
                    d = cd.checked_mul(d).ok_or_else(|| overflow(Loc::Tile(ti)))?;
                }
                match *entry {
                    TileDim::Combine => carry = Some((d, e)),
                    TileDim::Size(t) => tiled.push((d, e, t)),
                }
            }
            for &(d, e, t) in &tiled {
                new_shape.push(d.div_ceil(t));
                new_idx.push(e / t);
            }
            for &(_, e, t) in &tiled {
                new_shape.push(t);
                new_idx.push(e % t);
            }
            checked_product(&new_shape).ok_or_else(|| overflow(Loc::Tile(ti)))?;
            shape = new_shape;
            idx = new_idx;
        }
        Ok((shape, idx))
    }

    fn check_dims(&self, dims: &[u64]) -> Result<(), ShapeError> {
        if dims.len() != self.rank() {
            return Err(ShapeError::new(format!(
                "the shape has {} dimensions but the layout is for rank {}",
                dims.len(),
                self.rank()
            )));
        }
        Ok(())
    }

    /// The final shape after permuting into physical order (major to minor) and
    /// applying every tile: `(untouched major dims..., ⌈d/t⌉..., t...)`.
    pub fn tiled_shape(&self, dims: &[u64]) -> Result<Vec<u64>, ShapeError> {
        self.check_dims(dims)?;
        Ok(self.physical(dims, None)?.0)
    }

    /// The linear index (in elements) of the element at logical `index` of an array
    /// with logical bounds `dims`.
    ///
    /// The logical dimensions are permuted into physical order, major to minor (the
    /// reverse of `minor_to_major`). Then each tile is applied in turn to the minor-most
    /// dimensions of the current shape: `*` entries first combine their dimension into
    /// the next smaller one (`e' = e_i·d_{i-1} + e_{i-1}`, bound `d_i·d_{i-1}`), then
    /// each remaining dimension `d` with tile size `t` becomes a tile count `⌈d/t⌉`
    /// (index `⌊e/t⌋`) and, after all counts, a tile extent `t` (index `e mod t`).
    /// The result is the row-major index in the final shape.
    pub fn linear_index(&self, dims: &[u64], index: &[u64]) -> Result<u64, ShapeError> {
        self.check_dims(dims)?;
        if index.len() != dims.len() {
            return Err(ShapeError::new(format!(
                "the index has {} entries but the shape has rank {}",
                index.len(),
                dims.len()
            )));
        }
        for (i, (&e, &d)) in index.iter().zip(dims).enumerate() {
            if e >= d {
                return Err(ShapeError::new(format!(
                    "index {e} is out of bounds for dimension {i} of size {d}"
                )));
            }
        }
        let (shape, idx) = self.physical(dims, Some(index))?;
        row_major(&idx, &shape).ok_or_else(|| ShapeError::new("the linear index overflows u64"))
    }

    /// The number of elements in the padded, tiled buffer: the product of
    /// [`tiled_shape`](Self::tiled_shape). Every linear index is below it.
    pub fn buffer_elements(&self, dims: &[u64]) -> Result<u64, ShapeError> {
        let shape = self.tiled_shape(dims)?;
        checked_product(&shape)
            .ok_or_else(|| ShapeError::new("the tiled buffer size overflows u64"))
    }

    /// The number of elements that lie consecutively in memory along the most minor
    /// dimension of the final (tiled) shape: what one DRAM burst can read without a
    /// gap. Untiled, that is the size of the most minor physical dimension; tiled, the
    /// last entry of the last tile. Never 0: returns 1 for scalars, empty arrays, and
    /// dims that do not fit the layout.
    pub fn contiguous_run(&self, dims: &[u64]) -> u64 {
        if self.check_dims(dims).is_err() {
            return 1;
        }
        match self.physical(dims, None) {
            Ok((shape, _)) => shape.last().copied().unwrap_or(1).max(1),
            Err(_) => 1,
        }
    }
}

impl fmt::Display for XlaLayout {
    /// `{3,2,0,1:T(8,128)(2,1)S(1)}`; `S(0)` is omitted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, d) in self.minor_to_major.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        if !self.tiles.is_empty() || self.memory_space != 0 {
            f.write_str(":")?;
            if !self.tiles.is_empty() {
                f.write_str("T")?;
                for t in &self.tiles {
                    write!(f, "{t}")?;
                }
            }
            if self.memory_space != 0 {
                write!(f, "S({})", self.memory_space)?;
            }
        }
        f.write_str("}")
    }
}
