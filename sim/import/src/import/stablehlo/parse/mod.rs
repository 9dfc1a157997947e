//! The structure of a StableHLO module as JAX prints it: `#loc` aliases, `module`,
//! `func.func` with typed parameters and results, and one op per line (`reduce` may
//! carry a `reducer` region on the lines after it). An op keeps its tokens for the
//! lowering to read its operands and attributes, and its type signature parsed.

use super::lex::{Tok, Token};
use super::types::aliases;
pub use super::types::{dtype_of, parse_tensor};
use mnsim_arch::DType;
use std::collections::BTreeMap;
use std::ops::Range;

mod stmt;

/// An error at a place in the file.
#[derive(Clone, Debug)]
pub struct At {
    pub span: Range<usize>,
    pub message: String,
}

pub fn at(span: &Range<usize>, message: impl Into<String>) -> At {
    At {
        span: span.clone(),
        message: message.into(),
    }
}

/// A tensor type: dimensions (`None` for `?`) and element type.
#[derive(Clone, Debug, PartialEq)]
pub struct Ty {
    pub dims: Vec<Option<u64>>,
    pub dtype: DType,
    pub span: Range<usize>,
}

/// A function parameter.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub ty: Ty,
    /// The tokens of its attribute dictionary (without the braces).
    pub attrs: Vec<Token>,
    /// The name its `loc("x")` gives, if any.
    pub loc_name: Option<String>,
    pub span: Range<usize>,
}

/// A function.
#[derive(Clone, Debug)]
pub struct Func {
    pub name: String,
    pub public: bool,
    pub params: Vec<Param>,
    pub results: Vec<Ty>,
    pub body: Vec<Stmt>,
    pub span: Range<usize>,
}

/// The type signature after an op's top-level `:`.
#[derive(Clone, Debug, Default)]
pub struct Sig {
    /// Operand types (all the types when there is no `->`).
    pub ins: Vec<Ty>,
    /// Result types (the last type when there is no `->`).
    pub outs: Vec<Ty>,
}

/// A region of an op: a `reducer`'s, a `while`'s `cond` or `do`.
#[derive(Clone, Debug)]
pub struct Region {
    /// `reducer`, `cond` or `do`.
    pub kind: String,
    /// Its block's parameters (a `reducer`'s; a `while`'s regions take the carried
    /// values, named in the op's operand list).
    pub params: Vec<String>,
    pub ops: Vec<Stmt>,
    /// Where its keyword is.
    pub span: Range<usize>,
}

/// One op.
#[derive(Clone, Debug)]
pub struct Stmt {
    /// Result names (without `%`): `%r:3 = ...` gives `r#0`, `r#1`, `r#2`, the names
    /// its uses (`%r#1`) give.
    pub results: Vec<String>,
    pub name: String,
    pub name_span: Range<usize>,
    /// The tokens between the op name and its signature.
    pub args: Vec<Token>,
    pub sig: Sig,
    /// Its regions, in order (`reducer`; `cond` and `do`).
    pub regions: Vec<Region>,
    /// The generic form's attribute dictionary (`<{...}>`), its tokens without the
    /// brackets; empty in the pretty form, whose attributes are among `args`.
    pub props: Vec<Token>,
    /// The op's whole line.
    pub span: Range<usize>,
    /// The first name its location gives (`jit(f)/dot_general`), if any.
    pub loc: Option<String>,
}

/// A parsed module.
#[derive(Clone, Debug)]
pub struct Module {
    pub funcs: Vec<Func>,
}

struct P<'a> {
    t: &'a [Token],
    i: usize,
    /// `#loc` aliases → the first string they hold.
    locs: BTreeMap<String, String>,
    end: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<&Token> {
        self.t.get(self.i)
    }

    fn here(&self) -> Range<usize> {
        self.peek().map_or(self.end..self.end, |t| t.span.clone())
    }

    fn is(&self, tok: &Tok) -> bool {
        self.peek().is_some_and(|t| &t.tok == tok)
    }

    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Ident(w), .. }) if w == s)
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.is(tok) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char, what: &str) -> Result<Range<usize>, At> {
        let span = self.here();
        if self.eat(&Tok::Punct(c)) {
            Ok(span)
        } else {
            Err(at(&span, format!("expected `{c}` {what}")))
        }
    }

    /// Skips a balanced group opening at the current token (`(`, `{`, `[`, `<`),
    /// returning the tokens inside it.
    fn balanced(&mut self) -> Result<Vec<Token>, At> {
        let open = self.here();
        let (o, c) = match self.peek().map(|t| &t.tok) {
            Some(Tok::Punct('(')) => ('(', ')'),
            Some(Tok::Punct('{')) => ('{', '}'),
            Some(Tok::Punct('[')) => ('[', ']'),
            _ => return Err(at(&open, "expected `(`, `{` or `[`")),
        };
        self.i += 1;
        let start = self.i;
        let mut depth = 1usize;
        while let Some(t) = self.peek() {
            match t.tok {
                Tok::Punct(x) if x == o => depth += 1,
                Tok::Punct(x) if x == c => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = self.t[start..self.i].to_vec();
                        self.i += 1;
                        return Ok(inner);
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        Err(at(&open, format!("this `{o}` is never closed")))
    }

    /// `loc(...)`, if present: the first string inside (through aliases).
    fn loc(&mut self) -> Result<Option<String>, At> {
        if !self.is_ident("loc") {
            return Ok(None);
        }
        self.i += 1;
        let inner = self.balanced()?;
        Ok(self.loc_name(&inner))
    }

    fn loc_name(&self, toks: &[Token]) -> Option<String> {
        toks.iter().find_map(|t| match &t.tok {
            Tok::Str(s) => Some(s.clone()),
            Tok::Hash(h) => self.locs.get(h).cloned(),
            _ => None,
        })
    }

    fn ty(&mut self) -> Result<Ty, At> {
        match self.peek() {
            Some(Token {
                tok: Tok::Tensor(inner),
                span,
                ..
            }) => {
                let (inner, span) = (inner.clone(), span.clone());
                self.i += 1;
                parse_tensor(&inner, &span)
            }
            Some(Token {
                tok: Tok::Ident(w),
                span,
                ..
            }) if dtype_of(w).is_some() => {
                let (w, span) = (w.clone(), span.clone());
                self.i += 1;
                Err(at(
                    &span,
                    format!(
                        "a bare `{w}` is not supported; mnsim reads tensor types (`tensor<{w}>`)"
                    ),
                ))
            }
            _ => Err(at(&self.here(), "expected a tensor type (`tensor<...>`)")),
        }
    }

    fn module(&mut self) -> Result<Module, At> {
        let mut funcs = Vec::new();
        let mut in_module = false;
        let mut closed = false;
        while let Some(t) = self.peek() {
            let span = t.span.clone();
            match &t.tok {
                Tok::Hash(_) if t.line_start => self.alias_line(),
                Tok::Ident(w) if w == "module" && !in_module && funcs.is_empty() => {
                    self.i += 1;
                    if matches!(self.peek().map(|t| &t.tok), Some(Tok::Sym(_))) {
                        self.i += 1;
                    }
                    if self.is_ident("attributes") {
                        self.i += 1;
                        self.balanced()?;
                    }
                    self.expect('{', "to open the module's body")?;
                    in_module = true;
                }
                Tok::Ident(w) if w == "func.func" && !closed => funcs.push(self.func()?),
                Tok::Punct('}') if in_module && !closed => {
                    self.i += 1;
                    closed = true;
                    self.loc()?;
                }
                Tok::Ident(w) if w == "loc" => {
                    self.loc()?;
                }
                other => {
                    let what = match other {
                        Tok::Ident(w) => format!("`{w}`"),
                        _ => "this".into(),
                    };
                    return Err(at(
                        &span,
                        format!(
                            "unexpected {what} here: expected `func.func`, `module` or a `#loc` alias"
                        ),
                    ));
                }
            }
        }
        if in_module && !closed {
            return Err(at(
                &(self.end..self.end),
                "the module is never closed (`}` missing)",
            ));
        }
        if funcs.is_empty() {
            return Err(at(
                &(0..0),
                "no `func.func` in the file: not a StableHLO module",
            ));
        }
        Ok(Module { funcs })
    }

    /// `#loc12 = loc(...)`: read by [`aliases`] before parsing; skipped here.
    fn alias_line(&mut self) {
        self.i += 1;
        while self.peek().is_some_and(|t| !t.line_start) {
            self.i += 1;
        }
    }

    fn func(&mut self) -> Result<Func, At> {
        let start = self.here();
        self.i += 1;
        let mut public = true;
        if self.is_ident("public") || self.is_ident("nested") {
            self.i += 1;
        } else if self.is_ident("private") {
            public = false;
            self.i += 1;
        }
        let name = match self.peek() {
            Some(Token {
                tok: Tok::Sym(s), ..
            }) => s.clone(),
            _ => return Err(at(&self.here(), "expected the function's `@name`")),
        };
        self.i += 1;
        self.expect('(', "to open the parameter list")?;
        let mut params = Vec::new();
        while !self.eat(&Tok::Punct(')')) {
            let pspan = self.here();
            let pname = match self.peek() {
                Some(Token {
                    tok: Tok::Value(v), ..
                }) => v.clone(),
                _ => return Err(at(&pspan, "expected a parameter `%name`")),
            };
            self.i += 1;
            self.expect(':', "after the parameter's name")?;
            let ty = self.ty()?;
            let attrs = if self.is(&Tok::Punct('{')) {
                self.balanced()?
            } else {
                Vec::new()
            };
            let loc_name = self.loc()?;
            params.push(Param {
                name: pname,
                ty,
                attrs,
                loc_name,
                span: pspan,
            });
            if !self.eat(&Tok::Punct(',')) && !self.is(&Tok::Punct(')')) {
                return Err(at(
                    &self.here(),
                    "expected `,` or `)` in the parameter list",
                ));
            }
        }
        let mut results = Vec::new();
        if self.eat(&Tok::Arrow) {
            if self.eat(&Tok::Punct('(')) {
                while !self.eat(&Tok::Punct(')')) {
                    results.push(self.ty()?);
                    if self.is(&Tok::Punct('{')) {
                        self.balanced()?;
                    }
                    self.loc()?;
                    if !self.eat(&Tok::Punct(',')) && !self.is(&Tok::Punct(')')) {
                        return Err(at(&self.here(), "expected `,` or `)` in the result list"));
                    }
                }
            } else {
                results.push(self.ty()?);
            }
        }
        if self.is_ident("attributes") {
            self.i += 1;
            self.balanced()?;
        }
        self.expect('{', "to open the function's body")?;
        let body = self.block()?;
        self.loc()?;
        Ok(Func {
            name,
            public,
            params,
            results,
            body,
            span: start,
        })
    }
}

/// Parses a module from its tokens (`end` is the text's length).
pub fn parse(toks: &[Token], end: usize) -> Result<Module, At> {
    P {
        t: toks,
        i: 0,
        locs: aliases(toks),
        end,
    }
    .module()
}
