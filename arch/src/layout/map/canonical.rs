//! The canonical text of a bound layout (explicit strides, every replicated level
//! listed), which is also its `Display` form.

use crate::layout::{Class, LevelUse, SubAxis, TensorLayout};
use std::fmt;

impl TensorLayout {
    /// The canonical text: explicit strides everywhere, `; B@[...]` listing every
    /// replicated level (root-most first), the pad prefix only when padding exists.
    pub fn canonical(&self) -> String {
        let pad = (self.logical != self.padded).then_some(self.logical.as_slice());
        let groups = (self.groups.iter()).map(|g| g.iter().map(|a| Canonical(a, &self.levels)));
        let replicated = (self.levels.iter())
            .filter(|l| l.replicated)
            .map(|l| l.name.as_str());
        crate::layout::layout_text(pad, groups, replicated)
    }
}

/// A sub-axis in canonical form, `8_L2B:16` (the layout's levels name its level).
struct Canonical<'a>(&'a SubAxis, &'a [LevelUse]);

impl fmt::Display for Canonical<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.0;
        write!(f, "{}", a.size)?;
        match a.class {
            Class::Mem => {}
            Class::W => f.write_str("_W")?,
            Class::Time => f.write_str("_Time")?,
            Class::Level(i) => write!(f, "_{}", self.1[i].name)?,
        }
        write!(f, ":{}", a.stride)
    }
}

impl std::fmt::Display for TensorLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical())
    }
}
