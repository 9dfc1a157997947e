//! The scanner: a scenario file's text into the tree of [`Node`]s, giving up (`None`) on
//! anything it does not understand.

use super::{Kind, Node};

/// Deepest nesting the scanner follows (`ron` itself stops at 128).
const MAX_DEPTH: usize = 256;

/// Scans `text` into its top-level value, or `None` if it is not RON the scanner
/// understands.
pub fn scan(text: &str) -> Option<Node> {
    let mut s = Scanner {
        t: text,
        b: text.as_bytes(),
        i: 0,
    };
    s.ws()?;
    while s.peek() == Some(b'#') {
        s.attribute()?;
        s.ws()?;
    }
    let v = s.value(0)?;
    s.ws()?;
    (s.i == s.b.len()).then_some(v)
}

/// The text being scanned and the byte the scanner is at.
struct Scanner<'a> {
    t: &'a str,
    b: &'a [u8],
    i: usize,
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<u8> {
        self.b.get(self.i + k).copied()
    }

    /// Skips whitespace and comments (block comments nest, as in RON).
    fn ws(&mut self) -> Option<()> {
        loop {
            match self.peek() {
                Some(c) if c.is_ascii_whitespace() => self.i += 1,
                Some(b'/') if self.peek_at(1) == Some(b'/') => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                Some(b'/') if self.peek_at(1) == Some(b'*') => {
                    self.i += 2;
                    let mut depth = 1usize;
                    while depth > 0 {
                        match (self.peek()?, self.peek_at(1)) {
                            (b'/', Some(b'*')) => {
                                depth += 1;
                                self.i += 2;
                            }
                            (b'*', Some(b'/')) => {
                                depth -= 1;
                                self.i += 2;
                            }
                            _ => self.i += 1,
                        }
                    }
                }
                _ => {
                    // Non-ASCII whitespace is rare; step over any of it by char.
                    let c = self.t.get(self.i..)?.chars().next();
                    match c {
                        Some(c) if c.is_whitespace() => self.i += c.len_utf8(),
                        _ => return Some(()),
                    }
                }
            }
        }
    }

    /// Whether `#*"` starts `k` bytes ahead (the rest of a raw string's opening).
    fn raw_string_at(&self, k: usize) -> bool {
        let mut k = k;
        while self.peek_at(k) == Some(b'#') {
            k += 1;
        }
        self.peek_at(k) == Some(b'"')
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// `#![enable(...)]`.
    fn attribute(&mut self) -> Option<()> {
        let mut depth = 0i32;
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth <= 0 {
                        return Some(());
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// An identifier, raw (`r#name`) or not.
    fn ident(&mut self) -> Option<String> {
        let start = self.i;
        if self.peek() == Some(b'r') && self.peek_at(1) == Some(b'#') {
            self.i += 2;
            let s = self.i;
            while self
                .peek()
                .is_some_and(|c| ident_char(c) || matches!(c, b'.' | b'+' | b'-'))
            {
                self.i += 1;
            }
            if self.i == s {
                self.i = start;
                return None;
            }
            return Some(self.t.get(s..self.i)?.to_string());
        }
        if !self.peek().is_some_and(ident_start) {
            return None;
        }
        while self.peek().is_some_and(ident_char) {
            self.i += 1;
        }
        Some(self.t.get(start..self.i)?.to_string())
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.i;
        let kind = match self.peek()? {
            b'"' => self.string()?,
            b'r' if self.raw_string_at(1) => self.raw_string()?,
            b'b' if matches!(self.peek_at(1), Some(b'"' | b'\'')) => {
                self.i += 1;
                self.string_or_char()?;
                Kind::Other
            }
            b'b' if self.peek_at(1) == Some(b'r') && self.raw_string_at(2) => {
                self.i += 1;
                self.raw_string()?;
                Kind::Other
            }
            b'\'' => {
                self.string_or_char()?;
                Kind::Other
            }
            b'[' => {
                self.i += 1;
                Kind::List(self.items(b']', depth)?)
            }
            b'{' => {
                self.i += 1;
                Kind::Map(self.map(depth)?)
            }
            b'(' => self.parens(None, depth)?,
            c if ident_start(c) => {
                let name = self.ident()?;
                let after = self.i;
                self.ws()?;
                if self.peek() == Some(b'(') {
                    self.parens(Some(name), depth)?
                } else {
                    self.i = after;
                    Kind::Ident(name)
                }
            }
            c if c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.') => {
                while self.peek().is_some_and(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'-')
                }) {
                    // `1e-5` and `-1.5`: a sign only at the start or after an exponent.
                    let c = self.peek()?;
                    if matches!(c, b'+' | b'-')
                        && self.i > start
                        && !matches!(self.b[self.i - 1], b'e' | b'E')
                    {
                        break;
                    }
                    self.i += 1;
                }
                Kind::Other
            }
            _ => return None,
        };
        Some(Node {
            span: start..self.i,
            kind,
        })
    }

    /// `(...)` after an optional name: fields if it starts with `ident :`, else items.
    fn parens(&mut self, name: Option<String>, depth: usize) -> Option<Kind> {
        self.i += 1; // (
        let save = self.i;
        self.ws()?;
        let named = match self.ident() {
            Some(_) => {
                self.ws()?;
                self.peek() == Some(b':') && self.peek_at(1) != Some(b':')
            }
            None => false,
        };
        self.i = save;
        if !named {
            let items = self.items(b')', depth)?;
            return Some(Kind::Tuple { name, items });
        }
        let mut fields = Vec::new();
        loop {
            self.ws()?;
            if self.eat(b')') {
                break;
            }
            let fstart = self.i;
            let fname = self.ident()?;
            let fspan = fstart..self.i;
            self.ws()?;
            if !self.eat(b':') {
                return None;
            }
            self.ws()?;
            let v = self.value(depth + 1)?;
            fields.push((fname, fspan, v));
            self.ws()?;
            if self.eat(b',') {
                continue;
            }
            self.ws()?;
            if self.eat(b')') {
                break;
            }
            return None;
        }
        Some(Kind::Fields(fields))
    }

    /// Comma-separated values up to `close` (the opening bracket is consumed).
    fn items(&mut self, close: u8, depth: usize) -> Option<Vec<Node>> {
        let mut items = Vec::new();
        loop {
            self.ws()?;
            if self.eat(close) {
                return Some(items);
            }
            items.push(self.value(depth + 1)?);
            self.ws()?;
            if !self.eat(b',') {
                self.ws()?;
                return self.eat(close).then_some(items);
            }
        }
    }

    fn map(&mut self, depth: usize) -> Option<Vec<(Node, Node)>> {
        let mut entries = Vec::new();
        loop {
            self.ws()?;
            if self.eat(b'}') {
                return Some(entries);
            }
            let k = self.value(depth + 1)?;
            self.ws()?;
            if !self.eat(b':') {
                return None;
            }
            self.ws()?;
            let v = self.value(depth + 1)?;
            entries.push((k, v));
            self.ws()?;
            if !self.eat(b',') {
                self.ws()?;
                return self.eat(b'}').then_some(entries);
            }
        }
    }

    /// A quoted string or char with escapes, skipped (the opening quote is next).
    fn string_or_char(&mut self) -> Option<()> {
        let q = self.peek()?;
        self.i += 1;
        loop {
            match self.peek()? {
                b'\\' => self.i += 2,
                c if c == q => {
                    self.i += 1;
                    return Some(());
                }
                _ => self.i += 1,
            }
        }
    }

    /// `"..."` with escapes decoded.
    fn string(&mut self) -> Option<Kind> {
        self.i += 1; // "
        let mut value = String::new();
        let mut map = Vec::new();
        loop {
            let at = self.i;
            let c = self.t.get(self.i..)?.chars().next()?;
            match c {
                '"' => {
                    self.i += 1;
                    map.push(at);
                    return Some(Kind::Str { value, map });
                }
                '\\' => {
                    self.i += 1;
                    let e = self.t.get(self.i..)?.chars().next()?;
                    self.i += e.len_utf8();
                    let decoded = match e {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        '0' => Some('\0'),
                        'x' => {
                            let h = self.t.get(self.i..self.i + 2)?;
                            self.i += 2;
                            u32::from_str_radix(h, 16).ok().and_then(char::from_u32)
                        }
                        'u' => {
                            let rest = self.t.get(self.i..)?;
                            let end = rest.find('}')?;
                            let h = rest.get(1..end)?;
                            self.i += end + 1;
                            u32::from_str_radix(h, 16).ok().and_then(char::from_u32)
                        }
                        '\n' => {
                            // Line continuation: skip leading whitespace of the next line.
                            while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                                self.i += 1;
                            }
                            None
                        }
                        other => Some(other),
                    };
                    if let Some(d) = decoded {
                        for _ in 0..d.len_utf8() {
                            map.push(at);
                        }
                        value.push(d);
                    }
                }
                c => {
                    for k in 0..c.len_utf8() {
                        map.push(at + k);
                    }
                    value.push(c);
                    self.i += c.len_utf8();
                }
            }
        }
    }

    /// `r"..."`, `r#"..."#`, ...
    fn raw_string(&mut self) -> Option<Kind> {
        self.i += 1; // r
        let mut hashes = 0usize;
        while self.eat(b'#') {
            hashes += 1;
        }
        if !self.eat(b'"') {
            return None;
        }
        let body = self.i;
        let closing: String = std::iter::once('"')
            .chain(std::iter::repeat_n('#', hashes))
            .collect();
        let len = self.t.get(body..)?.find(&closing)?;
        let value = self.t.get(body..body + len)?.to_string();
        let map = (body..=body + len).collect();
        self.i = body + len + closing.len();
        Some(Kind::Str { value, map })
    }
}
