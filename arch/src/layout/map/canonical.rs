//! The canonical text of a bound layout (explicit strides, every replicated level
//! listed), which is also its `Display` form.

use crate::layout::text::Piece;
use crate::layout::{Class, LevelUse, SubAxis, TensorLayout};
use std::fmt::{self, Write};

impl TensorLayout {
    /// The canonical text: explicit strides everywhere, `; B@[...]` listing every
    /// replicated level (root-most first), the pad prefix only when padding exists.
    pub fn canonical(&self) -> String {
        let pad = (self.logical != self.padded).then_some(self.logical.as_slice());
        let groups = (self.groups.iter()).map(|g| g.iter().map(|a| Canonical(a, &self.levels)));
        let replicated = (self.levels.iter())
            .filter(|l| l.replicated)
            .map(|l| Name(&l.name));
        crate::layout::layout_text(pad, groups, replicated)
    }
}

/// A sub-axis in canonical form, `8_L2B:16` (the layout's levels name its level).
struct Canonical<'a>(&'a SubAxis, &'a [LevelUse]);

/// Written piece by piece: the planner prints the canonical text of every candidate
/// it generates.
impl Piece for Canonical<'_> {
    fn write_to<W: Write + ?Sized>(&self, w: &mut W) -> fmt::Result {
        let a = self.0;
        let mut buf = itoa::Buffer::new();
        w.write_str(buf.format(a.size))?;
        match a.class {
            Class::Mem => {}
            Class::W => w.write_str("_W")?,
            Class::Time => w.write_str("_Time")?,
            Class::Level(i) => {
                w.write_char('_')?;
                w.write_str(&self.1[i].name)?;
            }
        }
        w.write_char(':')?;
        w.write_str(buf.format(a.stride))
    }
}

/// A level's name in `B@[...]`, written as it is.
struct Name<'a>(&'a str);

impl Piece for Name<'_> {
    fn write_to<W: Write + ?Sized>(&self, w: &mut W) -> fmt::Result {
        w.write_str(self.0)
    }
}

impl std::fmt::Display for TensorLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical())
    }
}
