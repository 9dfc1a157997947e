//! The text parser for shapes (XLA and StableHLO forms) and indices, with byte
//! offsets on its errors.

use super::layout::{Issue, Loc, checked_product};
use super::{Dim, Shape, ShapeError, Tile, TileDim, XlaLayout};
use crate::dtype::DType;

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
