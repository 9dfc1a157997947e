//! The layout syntax written from its parts: one writer for the canonical text of a
//! bound layout, a parsed layout printed back, and the texts the planner and the tests
//! compose before binding them.

use std::fmt::{self, Display, Write};

/// A part of a layout's text (a sub-axis, a level name, a number): anything `Display`,
/// or a part that writes its pieces straight into the text, without the formatting
/// machinery (the canonical form's sub-axes: the planner writes thousands of texts).
pub trait Piece {
    fn write_to<W: Write + ?Sized>(&self, w: &mut W) -> fmt::Result;
}

impl<T: Display + ?Sized> Piece for T {
    fn write_to<W: Write + ?Sized>(&self, w: &mut W) -> fmt::Result {
        write!(w, "{self}")
    }
}

/// Writes a layout's text: `(4,6)/` when a logical shape `pad` is given, then one group
/// per axis, its sub-axes in order (`(8_L2B, 16), (4_PE:1)`), then `; B@[...]` when
/// `bcast` names any level, all in parentheses:
/// `(4,6)/((8_L2B, 16), (4_PE:1); B@[L1B,MAB])`.
pub fn write_layout<G, S, B, N>(
    w: &mut impl Write,
    pad: Option<&[u64]>,
    groups: G,
    bcast: B,
) -> fmt::Result
where
    G: IntoIterator,
    G::Item: IntoIterator<Item = S>,
    S: Piece,
    B: IntoIterator<Item = N>,
    N: Piece,
{
    if let Some(p) = pad {
        w.write_char('(')?;
        separated(w, p, ",")?;
        w.write_str(")/")?;
    }
    w.write_char('(')?;
    for (gi, g) in groups.into_iter().enumerate() {
        if gi > 0 {
            w.write_str(", ")?;
        }
        w.write_char('(')?;
        separated(w, g, ", ")?;
        w.write_char(')')?;
    }
    let mut any = false;
    for n in bcast {
        w.write_str(if any { "," } else { "; B@[" })?;
        n.write_to(w)?;
        any = true;
    }
    if any {
        w.write_char(']')?;
    }
    w.write_char(')')
}

/// `items` written one after another, `sep` between two.
fn separated<T: Piece>(
    w: &mut impl Write,
    items: impl IntoIterator<Item = T>,
    sep: &str,
) -> fmt::Result {
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            w.write_str(sep)?;
        }
        x.write_to(w)?;
    }
    Ok(())
}

/// [`write_layout`] into a new string.
pub fn layout_text<G, S, B, N>(pad: Option<&[u64]>, groups: G, bcast: B) -> String
where
    G: IntoIterator,
    G::Item: IntoIterator<Item = S>,
    S: Piece,
    B: IntoIterator<Item = N>,
    N: Piece,
{
    // Room for a rank-2 layout of a few levels, so that most texts never grow.
    let mut s = String::with_capacity(96);
    // Writing into a String cannot fail.
    let _ = write_layout(&mut s, pad, groups, bcast);
    s
}

/// No level replicated (`bcast` of [`write_layout`]).
pub const NO_BCAST: [&str; 0] = [];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::LayoutExpr;

    #[test]
    fn a_layout_is_written_as_the_syntax_reads_it() {
        let groups = [vec!["8_L2B", "16"], vec!["4_PE:1"]];
        let text = layout_text(Some(&[4, 6]), &groups, ["L1B", "MAB"]);
        assert_eq!(text, "(4,6)/((8_L2B, 16), (4_PE:1); B@[L1B,MAB])");
        assert_eq!(
            layout_text(None, &groups, NO_BCAST),
            "((8_L2B, 16), (4_PE:1))"
        );
        // A parsed layout prints back through the same writer, as written.
        assert_eq!(LayoutExpr::parse(&text).unwrap().to_string(), text);
    }
}
