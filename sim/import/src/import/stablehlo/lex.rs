//! Tokens of MLIR text as JAX prints it, each with its byte span. Types
//! (`tensor<?x128xf32>`) and dense literals (`dense<[1, 2]>`) are single tokens whose
//! text is what lies between the angle brackets.

use std::ops::Range;

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// `%name` (without the `%`).
    Value(String),
    /// `@name` (without the `@`).
    Sym(String),
    /// `#name` or `#name<...>` (without the `#`).
    Hash(String),
    /// A bare identifier: `stablehlo.add`, `dims`, `GE`, `x`.
    Ident(String),
    /// An integer literal (decimal, possibly negative).
    Int(i128),
    /// A hexadecimal literal (`0xFF800000`): raw bits.
    Hex(u64),
    /// A floating-point literal.
    Float(f64),
    /// A string literal, unescaped.
    Str(String),
    /// `tensor<...>`: the text between the angle brackets.
    Tensor(String),
    /// `dense<...>`: the text between the angle brackets.
    Dense(String),
    /// `->`.
    Arrow,
    /// Any other punctuation character.
    Punct(char),
}

/// A token, where it is, and whether it is the first on its line.
#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub span: Range<usize>,
    pub line_start: bool,
}

/// A lexical error at a byte offset.
#[derive(Clone, Debug)]
pub struct LexError {
    pub offset: usize,
    pub message: String,
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$')
}

/// The byte after the `>` matching the `<` at `open`, or `None` when it is missing.
fn close_angle(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'<' => depth += 1,
                b'>' if i > 0 && b[i - 1] == b'-' => {}
                b'>' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                b'\n' => return None,
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// Splits `text` into tokens; `//` comments are skipped.
pub fn lex(text: &str) -> Result<Vec<Token>, LexError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        let tok = match c {
            b'%' | b'@' | b'#' => {
                i += 1;
                if c == b'@' && b.get(i) == Some(&b'"') {
                    let (s, end) = string(text, i)?;
                    i = end;
                    Tok::Sym(s)
                } else {
                    while i < b.len() && (ident_char(b[i]) || (c == b'%' && b[i] == b'#')) {
                        i += 1;
                    }
                    if i == start + 1 {
                        return Err(LexError {
                            offset: start,
                            message: format!("`{}` must be followed by a name", c as char),
                        });
                    }
                    let name = text[start + 1..i].to_string();
                    match c {
                        b'%' => Tok::Value(name),
                        b'@' => Tok::Sym(name),
                        _ => {
                            if b.get(i) == Some(&b'<') {
                                let end = close_angle(b, i).ok_or_else(|| LexError {
                                    offset: i,
                                    message: "this `<` is not closed on its line".into(),
                                })?;
                                i = end;
                                Tok::Hash(text[start + 1..end].to_string())
                            } else {
                                Tok::Hash(name)
                            }
                        }
                    }
                }
            }
            b'"' => {
                let (s, end) = string(text, i)?;
                i = end;
                Tok::Str(s)
            }
            b'-' if b.get(i + 1) == Some(&b'>') => {
                i += 2;
                Tok::Arrow
            }
            b'0'..=b'9' | b'-' | b'+' => {
                let (t, end) = number(text, i)?;
                i = end;
                t
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && ident_char(b[i]) {
                    i += 1;
                }
                let word = &text[start..i];
                if (word == "tensor" || word == "dense") && b.get(i) == Some(&b'<') {
                    let end = close_angle(b, i).ok_or_else(|| LexError {
                        offset: i,
                        message: format!("`{word}<` is not closed on its line"),
                    })?;
                    let inner = text[i + 1..end - 1].to_string();
                    i = end;
                    if word == "tensor" {
                        Tok::Tensor(inner)
                    } else {
                        Tok::Dense(inner)
                    }
                } else {
                    Tok::Ident(word.to_string())
                }
            }
            b'(' | b')' | b'{' | b'}' | b'[' | b']' | b'<' | b'>' | b',' | b':' | b'=' | b'?'
            | b'*' | b'!' | b'^' => {
                i += 1;
                Tok::Punct(c as char)
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(LexError {
                    offset: i,
                    message: format!("unexpected character `{ch}`"),
                });
            }
        };
        out.push(Token {
            tok,
            span: start..i,
            line_start,
        });
        line_start = false;
    }
    Ok(out)
}

/// A string literal starting at the `"` at `i`: its text and the byte after it.
fn string(text: &str, i: usize) -> Result<(String, usize), LexError> {
    let b = text.as_bytes();
    let mut j = i + 1;
    let mut s = String::new();
    let mut run = j;
    while j < b.len() {
        match b[j] {
            b'"' => {
                s.push_str(&text[run..j]);
                return Ok((s, j + 1));
            }
            b'\\' => {
                s.push_str(&text[run..j]);
                match b.get(j + 1) {
                    Some(b'n') => s.push('\n'),
                    Some(b't') => s.push('\t'),
                    Some(&c) if c == b'"' || c == b'\\' => s.push(c as char),
                    _ => s.push('\\'),
                }
                j += 2;
                run = j.min(b.len());
                continue;
            }
            b'\n' => break,
            _ => {}
        }
        j += 1;
    }
    Err(LexError {
        offset: i,
        message: "this string is not closed on its line".into(),
    })
}

/// A number starting at `i`: an integer, a hexadecimal literal or a float.
fn number(text: &str, i: usize) -> Result<(Tok, usize), LexError> {
    let b = text.as_bytes();
    let mut j = i;
    if matches!(b[j], b'-' | b'+') {
        j += 1;
    }
    if b.get(j) == Some(&b'0') && matches!(b.get(j + 1), Some(b'x' | b'X')) {
        let s = j + 2;
        let mut e = s;
        while e < b.len() && b[e].is_ascii_hexdigit() {
            e += 1;
        }
        let v = u64::from_str_radix(&text[s..e], 16).map_err(|_| LexError {
            offset: i,
            message: format!("`{}` is not a hexadecimal number of 64 bits", &text[i..e]),
        })?;
        return Ok((Tok::Hex(v), e));
    }
    let digits = |mut k: usize| {
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        k
    };
    let int_end = digits(j);
    if int_end == j {
        return Err(LexError {
            offset: i,
            message: "expected a number".into(),
        });
    }
    let mut e = int_end;
    let mut float = false;
    if b.get(e) == Some(&b'.') {
        float = true;
        e = digits(e + 1);
    }
    if matches!(b.get(e), Some(b'e' | b'E')) {
        let mut k = e + 1;
        if matches!(b.get(k), Some(b'-' | b'+')) {
            k += 1;
        }
        let k2 = digits(k);
        if k2 > k {
            float = true;
            e = k2;
        }
    }
    let s = &text[i..e];
    let bad = || LexError {
        offset: i,
        message: format!("`{s}` is not a number"),
    };
    let tok = if float {
        Tok::Float(s.parse().map_err(|_| bad())?)
    } else {
        Tok::Int(s.parse().map_err(|_| bad())?)
    };
    Ok((tok, e))
}
