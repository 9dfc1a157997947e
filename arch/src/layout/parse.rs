//! The TensorLayout grammar (docs/layout.md), machine-independent.
//!
//! ```text
//! layout   := [ pad "/" ] "(" group ("," group)* [ ";" bcast ] ")" [ bcast ]
//! pad      := "(" INT ("," INT)* ")"
//! group    := "(" sub ("," sub)* ")"
//! sub      := INT [ "_" NAME ] [ ":" INT ]
//! bcast    := "B@[" bsub ("," bsub)* "]"
//! bsub     := [ INT "_" ] NAME [ ":" INT ]
//! ```
//! Whitespace is free. The parser never panics: every problem is a [`LayoutError`]
//! with the byte offset of the offending text.

use super::LayoutError;
use std::fmt;
use std::ops::Range;

/// What a sub-axis indexes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AxisName {
    /// No suffix: a memory (LM word address) axis.
    Mem,
    /// `_NAME` where NAME is a machine level.
    Level(String),
    /// `_W`: the slot inside one memory word.
    W,
    /// `_Time`: a sequential step.
    Time,
}

impl AxisName {
    /// What the suffix `_NAME` of a sub-axis names: `W`, `Time` or a level.
    pub fn of(name: String) -> AxisName {
        match name.as_str() {
            "W" => AxisName::W,
            "Time" => AxisName::Time,
            _ => AxisName::Level(name),
        }
    }
}

/// One sub-axis as written: `size[_NAME][:stride]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubAxisExpr {
    pub size: u64,
    pub name: AxisName,
    pub stride: Option<u64>,
    /// Byte range of the sub-axis in the source text.
    pub span: Range<usize>,
}

/// A parsed, not yet machine-checked layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutExpr {
    /// The logical shape from a `pad/` prefix, with its span.
    pub pad: Option<(Vec<u64>, Range<usize>)>,
    /// One group per logical axis, major to minor.
    pub groups: Vec<Vec<SubAxisExpr>>,
    /// Spans of the groups (for errors about a whole group).
    pub group_spans: Vec<Range<usize>>,
    /// Levels named in `B@[...]` (inside after `;` or after the closing parenthesis).
    pub bcast: Vec<BcastExpr>,
}

/// One entry of `B@[...]` as written: `[size_]NAME[:stride]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BcastExpr {
    pub name: String,
    /// `8` in `8_L2B:1`: the positions replicated over (the level's fan-out when omitted).
    pub size: Option<u64>,
    /// `1` in `8_L2B:1`.
    pub stride: Option<u64>,
    /// Byte range of the entry in the source text.
    pub span: Range<usize>,
}

impl fmt::Display for BcastExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = self.size {
            write!(f, "{n}_")?;
        }
        f.write_str(&self.name)?;
        if let Some(s) = self.stride {
            write!(f, ":{s}")?;
        }
        Ok(())
    }
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

fn err(msg: impl Into<String>, span: Range<usize>) -> LayoutError {
    LayoutError::new(msg, span)
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    /// A description of what stands at the cursor, for error messages.
    fn found(&self) -> String {
        match self.text.get(self.i..).and_then(|r| r.chars().next()) {
            None if self.i >= self.s.len() => "end of input".to_string(),
            None => "a non-UTF-8 byte".to_string(),
            Some(c) => format!("`{c}`"),
        }
    }

    fn here(&self) -> Range<usize> {
        let end = self
            .text
            .get(self.i..)
            .and_then(|r| r.chars().next())
            .map_or(self.i, |c| self.i + c.len_utf8());
        self.i..end.max(self.i)
    }

    fn expect(&mut self, c: u8) -> Result<(), LayoutError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(err(
                format!("expected `{}`, found {}", c as char, self.found()),
                self.here(),
            ))
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn int(&mut self, what: &str) -> Result<(u64, Range<usize>), LayoutError> {
        self.ws();
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if start == self.i {
            return Err(err(
                format!("expected {what} (an integer), found {}", self.found()),
                self.here(),
            ));
        }
        let digits = &self.text[start..self.i];
        let v = digits
            .parse::<u64>()
            .map_err(|_| err(format!("{what} `{digits}` is too large"), start..self.i))?;
        Ok((v, start..self.i))
    }

    fn name(&mut self) -> Result<(String, Range<usize>), LayoutError> {
        self.ws();
        let start = self.i;
        if self.i < self.s.len() && (self.s[self.i].is_ascii_alphabetic() || self.s[self.i] == b'_')
        {
            self.i += 1;
            while self.i < self.s.len()
                && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
            {
                self.i += 1;
            }
            Ok((self.text[start..self.i].to_string(), start..self.i))
        } else {
            Err(err(
                format!("expected a level name, found {}", self.found()),
                self.here(),
            ))
        }
    }

    fn sub(&mut self) -> Result<SubAxisExpr, LayoutError> {
        let (size, sp) = self.int("a sub-axis size")?;
        let start = sp.start;
        if size == 0 {
            return Err(err("sub-axis size must be at least 1", sp));
        }
        // `_NAME` must follow the size directly.
        let mut name = AxisName::Mem;
        if self.s.get(self.i) == Some(&b'_') {
            self.i += 1;
            let (n, _) = self.name()?;
            name = AxisName::of(n);
        }
        let mut stride = None;
        if self.eat(b':') {
            let (v, _) = self.int("a stride")?;
            stride = Some(v);
        }
        Ok(SubAxisExpr {
            size,
            name,
            stride,
            span: start..self.i,
        })
    }

    fn group(&mut self) -> Result<(Vec<SubAxisExpr>, Range<usize>), LayoutError> {
        self.ws();
        let start = self.i;
        self.expect(b'(')?;
        let mut subs = vec![self.sub()?];
        while self.eat(b',') {
            subs.push(self.sub()?);
        }
        self.expect(b')')?;
        Ok((subs, start..self.i))
    }

    /// `[INT "_"] NAME [":" INT]` inside `B@[...]`.
    fn bsub(&mut self) -> Result<BcastExpr, LayoutError> {
        self.ws();
        let start = self.i;
        let mut size = None;
        if matches!(self.s.get(self.i), Some(c) if c.is_ascii_digit()) {
            let (n, sp) = self.int("a broadcast size")?;
            if n == 0 {
                return Err(err("broadcast size must be at least 1", sp));
            }
            if self.s.get(self.i) != Some(&b'_') {
                return Err(err(
                    format!(
                        "expected `_` and a level after the size in B@, found {}",
                        self.found()
                    ),
                    self.here(),
                ));
            }
            self.i += 1;
            size = Some(n);
        }
        let (name, _) = self.name()?;
        let mut stride = None;
        if self.eat(b':') {
            stride = Some(self.int("a stride")?.0);
        }
        Ok(BcastExpr {
            name,
            size,
            stride,
            span: start..self.i,
        })
    }

    fn bcast(&mut self, out: &mut Vec<BcastExpr>) -> Result<(), LayoutError> {
        self.ws();
        if !self.text[self.i..].starts_with("B@") {
            return Err(err(
                format!("expected `B@[`, found {}", self.found()),
                self.here(),
            ));
        }
        self.i += 2;
        self.expect(b'[')?;
        out.push(self.bsub()?);
        while self.eat(b',') {
            out.push(self.bsub()?);
        }
        self.expect(b']')
    }

    fn layout(&mut self) -> Result<LayoutExpr, LayoutError> {
        self.ws();
        let start = self.i;
        self.expect(b'(')?;
        let mut pad = None;
        if matches!(self.peek(), Some(c) if c.is_ascii_digit()) {
            // A pad prefix: `(INT, ...)/`.
            let mut dims = vec![self.int("a padded dimension")?.0];
            while self.eat(b',') {
                dims.push(self.int("a padded dimension")?.0);
            }
            self.expect(b')')?;
            let span = start..self.i;
            self.expect(b'/')?;
            pad = Some((dims, span));
            self.expect(b'(')?;
        }
        let mut groups = Vec::new();
        let mut group_spans = Vec::new();
        loop {
            let (g, sp) = self.group()?;
            groups.push(g);
            group_spans.push(sp);
            if !self.eat(b',') {
                break;
            }
        }
        let mut bcast = Vec::new();
        if self.eat(b';') {
            self.bcast(&mut bcast)?;
        }
        self.expect(b')')?;
        if self.peek().is_some() {
            self.bcast(&mut bcast)?;
        }
        if self.peek().is_some() {
            return Err(err(
                format!("unexpected {} after the layout", self.found()),
                self.here(),
            ));
        }
        Ok(LayoutExpr {
            pad,
            groups,
            group_spans,
            bcast,
        })
    }
}

impl LayoutExpr {
    /// Parses layout text. Never panics.
    pub fn parse(text: &str) -> Result<LayoutExpr, LayoutError> {
        let mut p = Parser {
            s: text.as_bytes(),
            text,
            i: 0,
        };
        if text.trim().is_empty() {
            return Err(err("empty layout", 0..0));
        }
        p.layout()
    }
}

impl fmt::Display for SubAxisExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.size)?;
        match &self.name {
            AxisName::Mem => {}
            AxisName::Level(n) => write!(f, "_{n}")?,
            AxisName::W => f.write_str("_W")?,
            AxisName::Time => f.write_str("_Time")?,
        }
        if let Some(s) = self.stride {
            write!(f, ":{s}")?;
        }
        Ok(())
    }
}

/// Prints a layout as written (strides only where given).
impl fmt::Display for LayoutExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pad = self.pad.as_ref().map(|(p, _)| p.as_slice());
        super::write_layout(f, pad, &self.groups, &self.bcast)
    }
}
