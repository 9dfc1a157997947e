//! One op of a block as its line prints it: its results (`%r:N` several), its name (the
//! generic form's `"stablehlo.x"(...) <{...}>` too), its tokens up to the signature, the
//! signature, its `loc(...)`, and the `reducer` or `while` regions on the lines after it.

use super::{At, P, Region, Sig, Stmt, at};
use crate::import::stablehlo::lex::{Tok, Token};
use crate::import::stablehlo::types::sig;
use std::ops::Range;

impl P<'_> {
    /// Ops up to the `}` that closes the block (consumed).
    pub(super) fn block(&mut self) -> Result<Vec<Stmt>, At> {
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => {
                    return Err(at(
                        &(self.end..self.end),
                        "a block is never closed (`}` missing)",
                    ));
                }
                Some(Token {
                    tok: Tok::Punct('}'),
                    ..
                }) => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(_) => out.push(self.stmt()?),
            }
        }
    }

    /// One op: its results, name, the tokens of its line (a trailing `loc(...)` read as
    /// its location), its signature, and the regions on the lines after it.
    fn stmt(&mut self) -> Result<Stmt, At> {
        let line = self.here();
        let results = self.results()?;
        let (name, name_span) = match self.peek() {
            Some(Token {
                tok: Tok::Ident(w),
                span,
                ..
            }) => (w.clone(), span.clone()),
            // The generic form: `"stablehlo.gather"(%a, %b) <{...}> : (...) -> ...`.
            Some(Token {
                tok: Tok::Str(w),
                span,
                ..
            }) => (w.clone(), span.clone()),
            _ => return Err(at(&self.here(), "expected an op name")),
        };
        self.i += 1;
        let generic = matches!(self.t[self.i - 1].tok, Tok::Str(_));
        // The rest of the line.
        let start = self.i;
        while self.peek().is_some_and(|t| !t.line_start) {
            self.i += 1;
        }
        let mut toks = &self.t[start..self.i];
        // A trailing `loc(...)`.
        let mut loc = None;
        if let Some(p) = toks.iter().rposition(|t| t.tok == Tok::Ident("loc".into()))
            && toks.get(p + 1).map(|t| &t.tok) == Some(&Tok::Punct('('))
            && toks.last().map(|t| &t.tok) == Some(&Tok::Punct(')'))
        {
            loc = self.loc_name(&toks[p + 2..]);
            toks = &toks[..p];
        }
        let end = toks.last().map_or(name_span.end, |t| t.span.end);
        // The signature after the first top-level `:`.
        let (mut args, sig) = match top_level_colon(toks) {
            Some(k) => (toks[..k].to_vec(), sig(&toks[k + 1..])?),
            None => (toks.to_vec(), Sig::default()),
        };
        let props = if generic {
            generic_props(&mut args, &name_span)?
        } else {
            Vec::new()
        };
        let regions = self.regions()?;
        Ok(Stmt {
            results,
            name,
            name_span,
            args,
            sig,
            regions,
            props,
            span: line.start..end,
            loc,
        })
    }

    /// The op's results before its `=`, if any: `%a`, or `%r:N` giving `r#0` ..
    /// `r#(N-1)`, comma-separated; none if the line starts with the op's name.
    fn results(&mut self) -> Result<Vec<String>, At> {
        let mut results = Vec::new();
        if !matches!(self.peek().map(|t| &t.tok), Some(Tok::Value(_))) {
            return Ok(results);
        }
        loop {
            let name = match self.peek() {
                Some(Token {
                    tok: Tok::Value(v), ..
                }) => v.clone(),
                _ => return Err(at(&self.here(), "expected a result `%name`")),
            };
            self.i += 1;
            if self.eat(&Tok::Punct(':')) {
                // `%r:N`: N results, used as `%r#0` .. `%r#(N-1)`.
                let n = match self.peek() {
                    Some(Token {
                        tok: Tok::Int(n), ..
                    }) if (1..=1 << 16).contains(n) => *n as usize,
                    _ => {
                        return Err(at(
                            &self.here(),
                            "expected the number of results after `:` (`%r:2 = ...`)",
                        ));
                    }
                };
                self.i += 1;
                results.extend((0..n).map(|k| format!("{name}#{k}")));
            } else {
                results.push(name);
            }
            if !self.eat(&Tok::Punct(',')) {
                break;
            }
        }
        self.expect('=', "after the op's results")?;
        Ok(results)
    }

    /// The regions after an op's line: `reducer(%a: ..., %b: ...) { ... }`, or a
    /// `while`'s `cond { ... } do { ... }`.
    fn regions(&mut self) -> Result<Vec<Region>, At> {
        let mut out = Vec::new();
        if self.is_ident("reducer") {
            let span = self.here();
            self.i += 1;
            let ps = self.balanced()?;
            let names: Vec<String> = ps
                .iter()
                .filter_map(|t| match &t.tok {
                    Tok::Value(v) => Some(v.clone()),
                    _ => None,
                })
                .collect();
            if self.is(&Tok::Punct('(')) {
                return Err(at(
                    &self.here(),
                    "a reduce over several operands is not supported",
                ));
            }
            self.expect('{', "to open the reducer's body")?;
            out.push(Region {
                kind: "reducer".into(),
                params: names,
                ops: self.block()?,
                span,
            });
            return Ok(out);
        }
        for kind in ["cond", "do"] {
            if !self.is_ident(kind) {
                if kind == "do" && !out.is_empty() {
                    return Err(at(&self.here(), "expected `do {` after the `cond` region"));
                }
                break;
            }
            let span = self.here();
            self.i += 1;
            self.expect('{', &format!("to open the `{kind}` region"))?;
            out.push(Region {
                kind: kind.into(),
                params: Vec::new(),
                ops: self.block()?,
                span,
            });
        }
        Ok(out)
    }
}

/// The generic form's operands and attributes: `(%a, %b) <{key = value, ...}>` in
/// `args` becomes the operands alone, the attributes returned (without `<{` `}>`).
fn generic_props(args: &mut Vec<Token>, name: &Range<usize>) -> Result<Vec<Token>, At> {
    if args.first().map(|t| &t.tok) != Some(&Tok::Punct('(')) {
        return Err(at(
            name,
            "the generic op form needs its operands in `(...)` after the name",
        ));
    }
    let mut depth = 0i64;
    let mut close = None;
    for (k, t) in args.iter().enumerate() {
        match t.tok {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => {
                depth -= 1;
                if depth == 0 {
                    close = Some(k);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close.ok_or_else(|| at(name, "the operand list `(` is never closed"))?;
    let rest: Vec<Token> = args.split_off(close + 1);
    let inner: Vec<Token> = match rest.as_slice() {
        [] => Vec::new(),
        [lt, lb, mid @ .., rb, gt]
            if lt.tok == Tok::Punct('<')
                && lb.tok == Tok::Punct('{')
                && rb.tok == Tok::Punct('}')
                && gt.tok == Tok::Punct('>') =>
        {
            mid.to_vec()
        }
        [first, ..] => {
            return Err(at(
                &first.span,
                "expected the generic form's attributes `<{...}>` after its operands",
            ));
        }
    };
    Ok(inner)
}

/// The index of the first `:` outside brackets in an op's line: where its type
/// signature starts.
fn top_level_colon(toks: &[Token]) -> Option<usize> {
    let mut depth = 0i64;
    for (k, t) in toks.iter().enumerate() {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => depth -= 1,
            Tok::Punct(':') if depth == 0 => return Some(k),
            _ => {}
        }
    }
    None
}
