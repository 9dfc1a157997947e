//! XLA shapes and layouts, and StableHLO dynamic dimensions.
//!
//! A [`Shape`] is an element type, a list of dimensions and an optional XLA layout.
//! Dimensions may be static (`512`), bounded (`<=64`, `batch<=64`), or dynamic
//! (`?`, `batch?`, `batch`); named dimensions can be bound to concrete sizes with
//! [`Shape::bind`].
//!
//! Text forms accepted by [`parse`] (whitespace between tokens is free):
//!
//! * XLA: `f32[1024,512]`, `f32[]`, `bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}`,
//!   `f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}`. The layout is
//!   `{minor_to_major[:components]}` where the components are a tiling `T(..)(..)..`
//!   (the bare form `(..)(..)` is accepted too) and a memory space `S(n)`.
//! * StableHLO: `tensor<?x512xf32>`, `tensor<f32>`,
//!   `tensor<?x512xf32, #stablehlo.bounds<64, ?>>`.
//!
//! Dimension grammar in the XLA form:
//! `dim := INT | "<=" INT | "?" | NAME "<=" INT | NAME "?" | NAME` with
//! `NAME := [A-Za-z_][A-Za-z0-9_]*`; a bare `NAME` is an unbounded dynamic dimension.
//!
//! [`Shape`]'s `Display` prints the canonical XLA form, and parsing it gives the same
//! shape back. A layout equal to [`XlaLayout::default_for`] the rank is normalised to
//! `None` by the parser.
//!
//! The tiled linear index follows XLA's tiled-layout definition: see
//! [`linear_index_with_tile`] and [`XlaLayout::linear_index`].

use crate::dtype::DType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/// One dimension of a shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dim {
    /// A known size.
    Static(u64),
    /// A dynamic size with a known upper bound (`<=64`, `batch<=64`).
    Bounded {
        /// The largest size the dimension can take.
        bound: u64,
        /// The name a scenario binds it by, if any.
        name: Option<String>,
    },
    /// A dynamic size with no bound (`?`, `batch?`, `batch`).
    Dynamic {
        /// The name a scenario binds it by, if any.
        name: Option<String>,
    },
}

impl Dim {
    /// Whether the size is known.
    pub fn is_static(&self) -> bool {
        matches!(self, Dim::Static(_))
    }

    /// The size if static, the bound if bounded, `None` if unbounded.
    pub fn at_bound(&self) -> Option<u64> {
        match self {
            Dim::Static(n) => Some(*n),
            Dim::Bounded { bound, .. } => Some(*bound),
            Dim::Dynamic { .. } => None,
        }
    }

    /// The name of a dynamic dimension, if it has one.
    pub fn name(&self) -> Option<&str> {
        match self {
            Dim::Static(_) => None,
            Dim::Bounded { name, .. } | Dim::Dynamic { name } => name.as_deref(),
        }
    }
}

impl fmt::Display for Dim {
    /// `64`, `<=64`, `batch<=64`, `?`, `seq`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(n) => write!(f, "{n}"),
            Dim::Bounded { bound, name } => {
                write!(f, "{}<={bound}", name.as_deref().unwrap_or(""))
            }
            Dim::Dynamic { name: Some(n) } => f.write_str(n),
            Dim::Dynamic { name: None } => f.write_str("?"),
        }
    }
}

/// One entry of a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TileDim {
    /// Tile this dimension by this size (never 0 in a valid layout).
    Size(u64),
    /// `*`: combine this dimension into the next smaller one before tiling.
    Combine,
}

impl fmt::Display for TileDim {
    /// `8` or `*`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TileDim::Size(n) => write!(f, "{n}"),
            TileDim::Combine => f.write_str("*"),
        }
    }
}

/// One tile of an XLA tiling, major to minor: `(8,128)`, `(*,*,2,*,3)`.
///
/// A tile with `k` entries applies to the `k` minor-most dimensions of the shape it
/// tiles.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tile {
    /// The entries, major to minor.
    pub dims: Vec<TileDim>,
}

impl Tile {
    /// A tile of plain sizes.
    pub fn new(sizes: &[u64]) -> Tile {
        Tile {
            dims: sizes.iter().map(|&s| TileDim::Size(s)).collect(),
        }
    }
}

impl fmt::Display for Tile {
    /// `(8,128)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str(")")
    }
}

/// An XLA layout: dimension order, repeated tiling and memory space.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct XlaLayout {
    /// Logical dimension numbers from the most minor (fastest varying) to the most
    /// major; a permutation of `0..rank`.
    pub minor_to_major: Vec<usize>,
    /// Tiles applied in turn to the physical shape (empty: untiled).
    pub tiles: Vec<Tile>,
    /// Memory space `S(n)`; 0 is device DRAM.
    pub memory_space: u64,
}

/// A shape: element type, dimensions, layout.
///
/// Serialises as its text form (`"f32[1024,512]{0,1}"`) and deserialises through
/// [`parse`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Shape {
    /// Element type.
    pub dtype: DType,
    /// Dimensions, in logical (dimension-number) order.
    pub dims: Vec<Dim>,
    /// `None` is the default layout: row-major, untiled, memory space 0.
    pub layout: Option<XlaLayout>,
}

/// An error about a shape or layout. For errors found in text, `offset..offset+len`
/// is the byte range of the problem in the input; for other errors both are 0.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[error("{message} at byte {offset}")]
pub struct ShapeError {
    /// What is wrong.
    pub message: String,
    /// Byte offset of the problem in the input text.
    pub offset: usize,
    /// Length in bytes of the offending text (0 at the end of input).
    pub len: usize,
}

impl ShapeError {
    /// An error not tied to a position in a text.
    pub fn new(message: impl Into<String>) -> ShapeError {
        ShapeError {
            message: message.into(),
            offset: 0,
            len: 0,
        }
    }

    fn at(message: impl Into<String>, offset: usize, len: usize) -> ShapeError {
        ShapeError {
            message: message.into(),
            offset,
            len,
        }
    }

    /// Two lines for a terminal: the input, and carets under the offending part.
    pub fn caret(&self, input: &str) -> String {
        let line: String = input
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let col = input
            .char_indices()
            .take_while(|(i, _)| *i < self.offset)
            .count();
        let width = input
            .char_indices()
            .skip(col)
            .take_while(|(i, _)| *i < self.offset.saturating_add(self.len))
            .count()
            .max(1);
        format!("{line}\n{}{}", " ".repeat(col), "^".repeat(width))
    }
}

// ---------------------------------------------------------------------------
// Layout semantics
// ---------------------------------------------------------------------------

/// Which part of a layout a problem is in (mapped to a text span by the parser).
#[derive(Clone, Copy, Debug)]
enum Loc {
    Whole,
    Mtm(usize),
    Tile(usize),
    TileEntry(usize, usize),
}

#[derive(Debug)]
struct Issue {
    loc: Loc,
    message: String,
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

fn checked_product(xs: &[u64]) -> Option<u64> {
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

    fn check(&self, rank: usize) -> Result<(), Issue> {
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
    fn physical(&self, dims: &[u64], index: Option<&[u64]>) -> Result<(Vec<u64>, Vec<u64>), Issue> {
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

// ---------------------------------------------------------------------------
// Shape semantics
// ---------------------------------------------------------------------------

impl Shape {
    /// A shape with the default layout.
    pub fn new(dtype: DType, dims: Vec<Dim>) -> Shape {
        Shape {
            dtype,
            dims,
            layout: None,
        }
    }

    /// A static shape with the default layout.
    pub fn from_sizes(dtype: DType, sizes: &[u64]) -> Shape {
        Shape::new(dtype, sizes.iter().map(|&n| Dim::Static(n)).collect())
    }

    /// This shape with `layout`, after checking it against the rank; a default layout
    /// is stored as `None`.
    pub fn with_layout(mut self, layout: XlaLayout) -> Result<Shape, ShapeError> {
        layout.validate(self.rank())?;
        self.layout = if layout.is_default() {
            None
        } else {
            Some(layout)
        };
        Ok(self)
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Whether every dimension is static.
    pub fn is_static(&self) -> bool {
        self.dims.iter().all(Dim::is_static)
    }

    /// The layout, with `None` expanded to the default.
    pub fn layout_or_default(&self) -> XlaLayout {
        self.layout
            .clone()
            .unwrap_or_else(|| XlaLayout::default_for(self.rank()))
    }

    /// Every dimension's size, bounded dimensions at their bound (how they are laid
    /// out). An unbounded dynamic dimension is an error that names it.
    pub fn dims_at_bound(&self) -> Result<Vec<u64>, ShapeError> {
        self.dims
            .iter()
            .enumerate()
            .map(|(i, d)| {
                d.at_bound().ok_or_else(|| {
                    let what = match d.name() {
                        Some(n) => format!("dimension {i} (`{n}`)"),
                        None => format!("dimension {i}"),
                    };
                    ShapeError::new(format!(
                        "{what} of `{self}` is dynamic with no bound; bind it to a size"
                    ))
                })
            })
            .collect()
    }

    /// Replaces named dynamic dimensions by the sizes in `bindings`. A bounded
    /// dimension's size must not exceed its bound. Names without a dimension and
    /// dimensions without a binding are left alone.
    pub fn bind(&self, bindings: &BTreeMap<String, u64>) -> Result<Shape, ShapeError> {
        let mut out = self.clone();
        for (i, d) in out.dims.iter_mut().enumerate() {
            let Some(&v) = d.name().and_then(|n| bindings.get(n)) else {
                continue;
            };
            if let Dim::Bounded {
                bound,
                name: Some(n),
            } = d
                && v > *bound
            {
                return Err(ShapeError::new(format!(
                    "binding {n}={v} exceeds the bound {bound} of dimension {i}"
                )));
            }
            *d = Dim::Static(v);
        }
        Ok(out)
    }

    /// Number of elements, bounded dimensions counted at their bound. Errors on an
    /// unbounded dimension or on overflow.
    pub fn elements(&self) -> Result<u64, ShapeError> {
        checked_product(&self.dims_at_bound()?)
            .ok_or_else(|| ShapeError::new(format!("the element count of `{self}` overflows u64")))
    }

    /// Number of elements in the padded, tiled buffer of this shape (bounded
    /// dimensions at their bound).
    pub fn buffer_elements(&self) -> Result<u64, ShapeError> {
        self.layout_or_default()
            .buffer_elements(&self.dims_at_bound()?)
    }

    /// Size in bytes of the padded, tiled buffer of this shape.
    pub fn buffer_bytes(&self) -> Result<u64, ShapeError> {
        self.buffer_elements()?
            .checked_mul(self.dtype.bytes())
            .ok_or_else(|| ShapeError::new(format!("the byte size of `{self}` overflows u64")))
    }
}

impl fmt::Display for Shape {
    /// Canonical XLA form: `bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}`; the
    /// layout is omitted when it is the default.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype.name())?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")?;
        if let Some(l) = &self.layout
            && !l.is_default()
        {
            write!(f, "{l}")?;
        }
        Ok(())
    }
}

impl FromStr for Shape {
    type Err = ShapeError;
    /// See [`parse`].
    fn from_str(s: &str) -> Result<Shape, ShapeError> {
        parse(s)
    }
}

impl TryFrom<String> for Shape {
    type Error = ShapeError;
    fn try_from(s: String) -> Result<Shape, ShapeError> {
        parse(&s)
    }
}

impl From<Shape> for String {
    fn from(s: Shape) -> String {
        s.to_string()
    }
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// Parses an XLA (`f32[?,512]{0,1:T(8,128)}`) or StableHLO
/// (`tensor<?x512xf32, #stablehlo.bounds<64, ?>>`) shape. Errors carry the byte
/// offset of the problem.
pub fn parse(text: &str) -> Result<Shape, ShapeError> {
    let mut p = Parser {
        s: text,
        b: text.as_bytes(),
        pos: 0,
    };
    p.ws();
    let start = p.pos;
    let Some(ident) = p.ident() else {
        return Err(p.err_here("expected an element type (`f32[...]`) or `tensor<...>`"));
    };
    p.ws();
    let (shape, spans) = if ident == "tensor" && p.peek() == Some(b'<') {
        p.stablehlo()?
    } else {
        let dtype = dtype_from(ident, start)?;
        p.xla(dtype)?
    };
    p.ws();
    if p.pos < p.b.len() {
        return Err(p.err_here(format!("unexpected {} after the shape", p.found())));
    }
    validate(shape, &spans)
}

/// Parses an index such as `"2,3"`, `" 2 , 3 "`, `"(2,3)"` or `"[2,3]"`; an empty
/// string is the index of a scalar.
pub fn parse_index(text: &str) -> Result<Vec<u64>, String> {
    let mut t = text.trim();
    for (open, close) in [('(', ')'), ('[', ']')] {
        if let Some(inner) = t.strip_prefix(open).and_then(|x| x.strip_suffix(close)) {
            t = inner.trim();
            break;
        }
    }
    if t.is_empty() {
        return Ok(Vec::new());
    }
    t.split(',')
        .map(|part| {
            let part = part.trim();
            part.parse::<u64>()
                .map_err(|_| format!("`{part}` is not an index (a non-negative integer)"))
        })
        .collect()
}

type Span = (usize, usize);

/// Where each part of a parsed shape came from.
#[derive(Default)]
struct Spans {
    dims: Vec<Span>,
    layout: Option<Span>,
    mtm: Vec<Span>,
    tiles: Vec<Span>,
    tile_entries: Vec<Vec<Span>>,
}

impl Spans {
    fn of(&self, loc: Loc) -> Span {
        let whole = self.layout.unwrap_or((0, 0));
        match loc {
            Loc::Whole => Some(whole),
            Loc::Mtm(i) => self.mtm.get(i).copied(),
            Loc::Tile(i) => self.tiles.get(i).copied(),
            Loc::TileEntry(i, j) => self.tile_entries.get(i).and_then(|t| t.get(j)).copied(),
        }
        .unwrap_or(whole)
    }
}

fn dtype_from(name: &str, offset: usize) -> Result<DType, ShapeError> {
    let alias = match name.to_ascii_lowercase().as_str() {
        "ui8" => Some(DType::U8),
        "ui16" => Some(DType::U16),
        "ui32" => Some(DType::U32),
        "ui64" => Some(DType::U64),
        _ => None,
    };
    if let Some(d) = alias {
        return Ok(d);
    }
    name.parse::<DType>().map_err(|_| {
        let names = DType::ALL.map(|d| d.name());
        let lower = name.to_ascii_lowercase();
        let best = names
            .iter()
            .map(|n| (strsim::levenshtein(&lower, n), *n))
            .min();
        let hint = match best {
            Some((d, n)) if d <= 2 => format!("; did you mean `{n}`?"),
            _ => format!(" (expected one of {})", names.join(", ")),
        };
        ShapeError::at(format!("unknown dtype `{name}`{hint}"), offset, name.len())
    })
}

fn validate(shape: Shape, spans: &Spans) -> Result<Shape, ShapeError> {
    // The size at bound, in bytes, must fit in a u64.
    let mut acc = shape.dtype.bytes();
    for (d, &(off, len)) in shape.dims.iter().zip(&spans.dims) {
        if let Some(n) = d.at_bound() {
            acc = acc.checked_mul(n).ok_or_else(|| {
                ShapeError::at("overflow: the shape's size in bytes exceeds u64", off, len)
            })?;
        }
    }
    let Some(layout) = shape.layout.clone() else {
        return Ok(shape);
    };
    let to_err = |i: Issue| {
        let (off, len) = spans.of(i.loc);
        ShapeError::at(i.message, off, len)
    };
    layout.check(shape.rank()).map_err(to_err)?;
    if let Ok(dims) = shape.dims_at_bound() {
        let (tiled, _) = layout.physical(&dims, None).map_err(to_err)?;
        let elems = checked_product(&tiled);
        if elems
            .and_then(|e| e.checked_mul(shape.dtype.bytes()))
            .is_none()
        {
            let (off, len) = spans.of(Loc::Whole);
            return Err(ShapeError::at(
                "overflow: the tiled buffer's size in bytes exceeds u64",
                off,
                len,
            ));
        }
    }
    let layout = if layout.is_default() {
        None
    } else {
        Some(layout)
    };
    Ok(Shape { layout, ..shape })
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    /// The character at the current position, described for a message.
    fn found(&self) -> String {
        match self.s.get(self.pos..).and_then(|r| r.chars().next()) {
            Some(c) => format!("`{}`", c.escape_debug()),
            None => "end of input".to_string(),
        }
    }

    fn char_len_here(&self) -> usize {
        self.s
            .get(self.pos..)
            .and_then(|r| r.chars().next())
            .map_or(0, char::len_utf8)
    }

    fn err_here(&self, message: impl Into<String>) -> ShapeError {
        ShapeError::at(message, self.pos, self.char_len_here())
    }

    fn expected(&self, what: &str) -> ShapeError {
        self.err_here(format!("expected {what}, found {}", self.found()))
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, t: &str) -> bool {
        if self.b[self.pos..].starts_with(t.as_bytes()) {
            self.pos += t.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), ShapeError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    fn ident(&mut self) -> Option<&'a str> {
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        let start = self.pos;
        while self.peek().is_some_and(is_ident_char) {
            self.pos += 1;
        }
        self.s.get(start..self.pos)
    }

    /// A decimal number. The whole run of number-like characters is taken, so
    /// `12a`, `1.5` and `-3` are reported as malformed numbers.
    fn number(&mut self) -> Result<(u64, Span), ShapeError> {
        let start = self.pos;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        {
            self.pos += 1;
        }
        let tok = self.s.get(start..self.pos).unwrap_or("");
        let span = (start, self.pos - start);
        if tok.is_empty() {
            return Err(self.expected("a number"));
        }
        if !tok.bytes().all(|c| c.is_ascii_digit()) {
            return Err(ShapeError::at(
                format!("malformed number `{tok}`"),
                span.0,
                span.1,
            ));
        }
        let n = tok.parse::<u64>().map_err(|_| {
            ShapeError::at(
                format!("overflow: number `{tok}` exceeds u64"),
                span.0,
                span.1,
            )
        })?;
        Ok((n, span))
    }

    fn starts_number(&self) -> bool {
        self.peek()
            .is_some_and(|c| c.is_ascii_digit() || c == b'-' || c == b'+')
    }

    // ---- XLA -------------------------------------------------------------

    fn xla(&mut self, dtype: DType) -> Result<(Shape, Spans), ShapeError> {
        let mut spans = Spans::default();
        self.expect(b'[', "`[` after the element type")?;
        self.ws();
        let mut dims = Vec::new();
        if !self.eat(b']') {
            loop {
                self.ws();
                let start = self.pos;
                let d = self.xla_dim()?;
                spans.dims.push((start, self.pos - start));
                dims.push(d);
                self.ws();
                if self.eat(b']') {
                    break;
                }
                self.expect(b',', "`,` or `]`")?;
            }
        }
        self.ws();
        let layout = if self.peek() == Some(b'{') {
            Some(self.layout(&mut spans)?)
        } else {
            None
        };
        Ok((
            Shape {
                dtype,
                dims,
                layout,
            },
            spans,
        ))
    }

    fn bound(&mut self) -> Result<u64, ShapeError> {
        self.ws();
        Ok(self.number()?.0)
    }

    fn xla_dim(&mut self) -> Result<Dim, ShapeError> {
        if self.starts_number() {
            return Ok(Dim::Static(self.number()?.0));
        }
        if self.eat_str("<=") {
            return Ok(Dim::Bounded {
                bound: self.bound()?,
                name: None,
            });
        }
        if self.eat(b'?') {
            return Ok(Dim::Dynamic { name: None });
        }
        let Some(name) = self.ident() else {
            return Err(self.expected("a dimension (`512`, `<=64`, `?`, `batch<=64`, `seq`)"));
        };
        let name = Some(name.to_string());
        let save = self.pos;
        self.ws();
        if self.eat_str("<=") {
            return Ok(Dim::Bounded {
                bound: self.bound()?,
                name,
            });
        }
        if !self.eat(b'?') {
            self.pos = save;
        }
        Ok(Dim::Dynamic { name })
    }

    fn layout(&mut self, spans: &mut Spans) -> Result<XlaLayout, ShapeError> {
        let open = self.pos;
        self.expect(b'{', "`{`")?;
        self.ws();
        let mut mtm = Vec::new();
        if self.starts_number() {
            loop {
                self.ws();
                let (n, span) = self.number()?;
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                mtm.push(n);
                spans.mtm.push(span);
                self.ws();
                if !self.eat(b',') {
                    break;
                }
            }
        }
        self.ws();
        let mut tiles = None;
        let mut memory_space = None;
        if self.eat(b':') {
            loop {
                self.ws();
                let here = self.pos;
                match self.peek() {
                    Some(b'}') => break,
                    Some(b'T' | b'(') => {
                        if tiles.is_some() {
                            return Err(self.err_here("duplicate tiling"));
                        }
                        if self.eat(b'T') {
                            self.ws();
                            if self.peek() != Some(b'(') {
                                return Err(self.expected("`(` after `T`"));
                            }
                        }
                        tiles = Some(self.tiles(spans)?);
                    }
                    Some(b'S') => {
                        if memory_space.is_some() {
                            return Err(self.err_here("duplicate memory space"));
                        }
                        self.pos += 1;
                        self.ws();
                        self.expect(b'(', "`(` after `S`")?;
                        self.ws();
                        let (n, _) = self.number()?;
                        self.ws();
                        self.expect(b')', "`)`")?;
                        memory_space = Some(n);
                    }
                    _ => {
                        return Err(ShapeError::at(
                            format!(
                                "unknown layout component {} (expected `T(..)` or `S(n)`)",
                                self.found()
                            ),
                            here,
                            self.char_len_here(),
                        ));
                    }
                }
            }
        }
        self.ws();
        self.expect(b'}', "`}` closing the layout")?;
        spans.layout = Some((open, self.pos - open));
        Ok(XlaLayout {
            minor_to_major: mtm,
            tiles: tiles.unwrap_or_default(),
            memory_space: memory_space.unwrap_or(0),
        })
    }

    fn tiles(&mut self, spans: &mut Spans) -> Result<Vec<Tile>, ShapeError> {
        let mut tiles = Vec::new();
        loop {
            self.ws();
            if self.peek() != Some(b'(') {
                break;
            }
            let start = self.pos;
            self.pos += 1;
            self.ws();
            let mut dims = Vec::new();
            let mut entries = Vec::new();
            if !self.eat(b')') {
                loop {
                    self.ws();
                    let es = self.pos;
                    if self.eat(b'*') {
                        dims.push(TileDim::Combine);
                        entries.push((es, 1));
                    } else if self.starts_number() {
                        let (n, span) = self.number()?;
                        dims.push(TileDim::Size(n));
                        entries.push(span);
                    } else {
                        return Err(self.expected("a tile size or `*`"));
                    }
                    self.ws();
                    if self.eat(b')') {
                        break;
                    }
                    self.expect(b',', "`,` or `)` in a tile")?;
                }
            }
            spans.tiles.push((start, self.pos - start));
            spans.tile_entries.push(entries);
            tiles.push(Tile { dims });
        }
        Ok(tiles)
    }

    // ---- StableHLO -------------------------------------------------------

    fn stablehlo(&mut self) -> Result<(Shape, Spans), ShapeError> {
        let mut spans = Spans::default();
        self.expect(b'<', "`<`")?;
        let mut dims = Vec::new();
        let dtype = loop {
            self.ws();
            let start = self.pos;
            let dim = if self.eat(b'?') {
                Dim::Dynamic { name: None }
            } else if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                let tok = self.s.get(start..self.pos).unwrap_or("");
                let n = tok.parse::<u64>().map_err(|_| {
                    ShapeError::at(
                        format!("overflow: number `{tok}` exceeds u64"),
                        start,
                        tok.len(),
                    )
                })?;
                Dim::Static(n)
            } else if self.peek() == Some(b'*') {
                return Err(self.err_here("unranked tensors are not supported"));
            } else if let Some(name) = self.ident() {
                break dtype_from(name, start)?;
            } else {
                return Err(self.expected("a dimension (`16`, `?`) or an element type"));
            };
            spans.dims.push((start, self.pos - start));
            dims.push(dim);
            self.ws();
            if !self.eat(b'x') {
                return Err(self.expected("`x` after a dimension"));
            }
        };
        self.ws();
        if self.eat(b',') {
            self.ws();
            let enc = self.pos;
            if !self.eat_str("#stablehlo.bounds") {
                return Err(self.err_here(format!(
                    "unsupported tensor encoding {} (expected `#stablehlo.bounds<...>`)",
                    self.found()
                )));
            }
            self.ws();
            self.expect(b'<', "`<` after `#stablehlo.bounds`")?;
            let mut bounds: Vec<(Option<u64>, Span)> = Vec::new();
            self.ws();
            if !self.eat(b'>') {
                loop {
                    self.ws();
                    let es = self.pos;
                    if self.eat(b'?') {
                        bounds.push((None, (es, 1)));
                    } else if self.starts_number() {
                        let (n, span) = self.number()?;
                        bounds.push((Some(n), span));
                    } else {
                        return Err(self.expected("a bound or `?`"));
                    }
                    self.ws();
                    if self.eat(b'>') {
                        break;
                    }
                    self.expect(b',', "`,` or `>` in the bounds")?;
                }
            }
            if bounds.len() != dims.len() {
                return Err(ShapeError::at(
                    format!(
                        "#stablehlo.bounds has {} entries but the tensor has rank {}",
                        bounds.len(),
                        dims.len()
                    ),
                    enc,
                    self.pos - enc,
                ));
            }
            for (i, (d, (b, (off, len)))) in dims.iter_mut().zip(bounds).enumerate() {
                match (b, &*d) {
                    (None, _) => {}
                    (Some(_), Dim::Static(n)) => {
                        return Err(ShapeError::at(
                            format!("bound on static dimension {i} (of size {n})"),
                            off,
                            len,
                        ));
                    }
                    (Some(bound), _) => *d = Dim::Bounded { bound, name: None },
                }
            }
            self.ws();
        }
        self.expect(b'>', "`>` closing the tensor type")?;
        Ok((Shape::new(dtype, dims), spans))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_example() {
        assert_eq!(linear_index_with_tile(&[2, 3], &[3, 5], &[2, 2]), 17);
        assert_eq!(linear_index_with_tile(&[2], &[3, 5], &[2, 2]), u64::MAX);
        assert_eq!(linear_index_with_tile(&[2, 3], &[3, 5], &[0, 2]), u64::MAX);
    }

    #[test]
    fn caret_points_at_problem() {
        let e = parse("f32[12a]").unwrap_err();
        assert_eq!(e.caret("f32[12a]"), "f32[12a]\n    ^^^");
    }
}
