//! A small JSON reader that keeps where every value sits in the text, so that an
//! import error can point at the op or tensor it is about (not only at syntax).

use std::ops::Range;

/// A JSON value and its byte span in the text.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub kind: Kind,
    pub span: Range<usize>,
}

/// The JSON value kinds. Numbers keep their text, so integers stay exact.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Null,
    Bool(bool),
    Number(String),
    Str(String),
    Array(Vec<Value>),
    /// Members in file order.
    Object(Vec<(String, Value)>),
}

/// A syntax error at a byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

impl Value {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match &self.kind {
            Kind::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match &self.kind {
            Kind::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An integer (no fraction, no exponent) that fits `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match &self.kind {
            Kind::Number(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// An integer (no fraction, no exponent) that fits `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match &self.kind {
            Kind::Number(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// Any number, as `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match &self.kind {
            Kind::Number(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// `true`/`false`, or the integers 1/0 (oneDNN writes booleans as either).
    pub fn as_bool(&self) -> Option<bool> {
        match &self.kind {
            Kind::Bool(b) => Some(*b),
            Kind::Number(t) if t == "0" => Some(false),
            Kind::Number(t) if t == "1" => Some(true),
            _ => None,
        }
    }

    /// What the value is, for messages: `a string`, `an array`, ...
    pub fn what(&self) -> &'static str {
        match self.kind {
            Kind::Null => "null",
            Kind::Bool(_) => "a boolean",
            Kind::Number(_) => "a number",
            Kind::Str(_) => "a string",
            Kind::Array(_) => "an array",
            Kind::Object(_) => "an object",
        }
    }
}

/// Parses a whole JSON document.
pub fn parse(text: &str) -> Result<Value, SyntaxError> {
    let mut p = Parser {
        b: text.as_bytes(),
        text,
        i: 0,
        depth: 0,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i < p.b.len() {
        return Err(p.err("unexpected text after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, msg: &str) -> SyntaxError {
        SyntaxError {
            offset: self.i,
            message: msg.to_string(),
        }
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Result<Value, SyntaxError> {
        let start = self.i;
        let Some(&c) = self.b.get(self.i) else {
            return Err(self.err("unexpected end of file: a value was expected"));
        };
        let kind = match c {
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth > 256 {
                    return Err(self.err("nested too deeply"));
                }
                let k = if c == b'{' {
                    self.object()?
                } else {
                    self.array()?
                };
                self.depth -= 1;
                k
            }
            b'"' => Kind::Str(self.string()?),
            b't' => self.word("true", Kind::Bool(true))?,
            b'f' => self.word("false", Kind::Bool(false))?,
            b'n' => self.word("null", Kind::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => {
                return Err(self
                    .err("expected a value (object, array, string, number, true, false or null)"));
            }
        };
        Ok(Value {
            kind,
            span: start..self.i,
        })
    }

    fn word(&mut self, w: &str, k: Kind) -> Result<Kind, SyntaxError> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(k)
        } else {
            Err(self.err("expected a value (object, array, string, number, true, false or null)"))
        }
    }

    fn number(&mut self) -> Result<Kind, SyntaxError> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        let digits = |p: &mut Self| {
            let s = p.i;
            while p.i < p.b.len() && p.b[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i > s
        };
        if !digits(self) {
            return Err(self.err("expected digits"));
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !digits(self) {
                return Err(self.err("expected digits after the decimal point"));
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(self.err("expected digits in the exponent"));
            }
        }
        Ok(Kind::Number(self.text[start..self.i].to_string()))
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        self.i += 1; // opening quote
        let mut out = String::new();
        loop {
            let Some(&c) = self.b.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    let Some(&e) = self.b.get(self.i + 1) else {
                        return Err(self.err("unterminated string"));
                    };
                    self.i += 2;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hex = self.text.get(self.i..self.i + 4).unwrap_or("");
                            let cp = u32::from_str_radix(hex, 16)
                                .map_err(|_| self.err("expected four hex digits after \\u"))?;
                            self.i += 4;
                            out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                        }
                        _ => {
                            self.i -= 1;
                            return Err(self.err("unknown escape in string"));
                        }
                    }
                }
                c if c < 0x20 => return Err(self.err("control character in string")),
                _ => {
                    // Copy one UTF-8 character.
                    let ch = self.text[self.i..].chars().next().unwrap_or('\u{fffd}');
                    out.push(ch);
                    self.i += ch.len_utf8().max(1);
                }
            }
        }
    }

    fn array(&mut self) -> Result<Kind, SyntaxError> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Kind::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Kind::Array(items));
                }
                _ => return Err(self.err("expected `,` or `]` in an array")),
            }
        }
    }

    fn object(&mut self) -> Result<Kind, SyntaxError> {
        self.i += 1;
        let mut members: Vec<(String, Value)> = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Kind::Object(members));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.err("expected a member name in double quotes"));
            }
            let key = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.err("expected `:` after the member name"));
            }
            self.i += 1;
            self.ws();
            let v = self.value()?;
            if members.iter().any(|(k, _)| *k == key) {
                return Err(SyntaxError {
                    offset: v.span.start,
                    message: format!("member `{key}` appears twice"),
                });
            }
            members.push((key, v));
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Kind::Object(members));
                }
                _ => return Err(self.err("expected `,` or `}` in an object")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_spans() {
        let t = r#"{"a": [1, -2.5e3, "x\n"], "b": true, "c": null}"#;
        let v = parse(t).unwrap();
        let a = v.get("a").unwrap();
        assert_eq!(&t[a.span.clone()], r#"[1, -2.5e3, "x\n"]"#);
        let items = a.as_array().unwrap();
        assert_eq!(items[0].as_i64(), Some(1));
        assert_eq!(items[1].as_f64(), Some(-2500.0));
        assert_eq!(items[2].as_str(), Some("x\n"));
        assert_eq!(v.get("b").unwrap().as_bool(), Some(true));
        assert_eq!(v.get("c").unwrap().kind, Kind::Null);
    }

    #[test]
    fn syntax_errors_point_at_the_place() {
        for (t, at, msg) in [
            ("{\"a\": [1, 2}", 11, "expected `,` or `]`"),
            ("{\"a\" 1}", 5, "expected `:`"),
            ("[1, 2", 5, "expected `,` or `]`"),
            ("{\"a\": tru}", 6, "expected a value"),
            ("{\"a\": 1, \"a\": 2}", 14, "appears twice"),
            ("[1] x", 4, "after the JSON value"),
            ("\"abc", 4, "unterminated"),
        ] {
            let e = parse(t).unwrap_err();
            assert_eq!(e.offset, at, "{t}: {e:?}");
            assert!(e.message.contains(msg), "{t}: {e:?}");
        }
        let deep = "[".repeat(1000);
        assert!(parse(&deep).unwrap_err().message.contains("deeply"));
    }
}
