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

mod layout;
mod parse;
#[cfg(test)]
mod tests;

pub use layout::linear_index_with_tile;
pub use parse::{parse, parse_index};

use layout::checked_product;

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
