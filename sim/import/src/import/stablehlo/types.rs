//! Tensor types and type signatures, element type names, and `#loc` aliases.

use super::lex::{Tok, Token};
use super::parse::{At, Sig, Ty, at};
use mnsim_arch::DType;
use std::collections::BTreeMap;
use std::ops::Range;

/// Element types by their MLIR names.
pub fn dtype_of(s: &str) -> Option<DType> {
    Some(match s {
        "f32" => DType::F32,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "f64" => DType::F64,
        "i1" => DType::Pred,
        "i8" | "si8" => DType::S8,
        "i16" | "si16" => DType::S16,
        "i32" | "si32" => DType::S32,
        "i64" | "si64" => DType::S64,
        "ui8" => DType::U8,
        "ui16" => DType::U16,
        "ui32" => DType::U32,
        "ui64" => DType::U64,
        _ => return None,
    })
}

/// `?x128x768xf32` (the inside of `tensor<...>`; bounds after a comma are ignored but
/// must be well formed enough to split).
pub fn parse_tensor(inner: &str, span: &Range<usize>) -> Result<Ty, At> {
    let main = inner.split(',').next().unwrap_or("").trim();
    let parts: Vec<&str> = main.split('x').collect();
    let (last, dims) = parts
        .split_last()
        .ok_or_else(|| at(span, "an empty tensor type"))?;
    let dtype = dtype_of(last.trim()).ok_or_else(|| {
        at(
            span,
            format!(
                "unsupported element type `{}` in `tensor<{inner}>` (mnsim reads f32, f16, bf16, f64, i1, i8..i64, ui8..ui64)",
                last.trim()
            ),
        )
    })?;
    let mut out = Vec::new();
    for d in dims {
        let d = d.trim();
        if d == "?" {
            out.push(None);
        } else {
            let v: u64 = d.parse().map_err(|_| {
                at(
                    span,
                    format!(
                        "`{d}` in `tensor<{inner}>` is not a dimension (a whole number or `?`)"
                    ),
                )
            })?;
            out.push(Some(v));
        }
    }
    let statics = out
        .iter()
        .flatten()
        .try_fold(1u64, |a, &d| a.checked_mul(d));
    if statics.is_none() {
        return Err(at(
            span,
            format!("`tensor<{inner}>` holds more elements than 2^64"),
        ));
    }
    Ok(Ty {
        dims: out,
        dtype,
        span: span.clone(),
    })
}

/// The types after an op's `:`: `(T, T) -> T`, `(T) -> (T, T)`, `T -> T`, `T`, `T, T`.
pub(super) fn sig(toks: &[Token]) -> Result<Sig, At> {
    let mut ins = Vec::new();
    let mut outs = Vec::new();
    let mut arrow = false;
    for t in toks {
        match &t.tok {
            Tok::Tensor(inner) => {
                let ty = parse_tensor(inner, &t.span)?;
                if arrow {
                    outs.push(ty);
                } else {
                    ins.push(ty);
                }
            }
            Tok::Arrow if !arrow => arrow = true,
            Tok::Punct('(' | ')' | ',') => {}
            Tok::Ident(w) if dtype_of(w).is_some() => {
                return Err(at(
                    &t.span,
                    format!(
                        "a bare `{w}` is not supported; mnsim reads tensor types (`tensor<{w}>`)"
                    ),
                ));
            }
            _ => return Err(at(&t.span, "unexpected token in the op's type signature")),
        }
    }
    if !arrow {
        outs = ins.last().cloned().into_iter().collect();
    }
    Ok(Sig { ins, outs })
}

/// `#loc12 = loc(...)` lines → the first string each holds, directly or through the
/// aliases it names.
pub(super) fn aliases(toks: &[Token]) -> BTreeMap<String, String> {
    let mut lines: Vec<(String, &[Token])> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let start = i;
        i += 1;
        while i < toks.len() && !toks[i].line_start {
            i += 1;
        }
        if let (Tok::Hash(h), Some(Tok::Punct('='))) =
            (&toks[start].tok, toks.get(start + 1).map(|t| &t.tok))
        {
            lines.push((h.clone(), &toks[start + 2..i]));
        }
    }
    let mut locs: BTreeMap<String, String> = BTreeMap::new();
    // Aliases name later aliases: a few passes settle them.
    for _ in 0..4 {
        for (h, line) in &lines {
            if locs.contains_key(h) {
                continue;
            }
            let found = line.iter().find_map(|t| match &t.tok {
                Tok::Str(s) => Some(s.clone()),
                Tok::Hash(x) => locs.get(x).cloned(),
                _ => None,
            });
            if let Some(s) = found {
                locs.insert(h.clone(), s);
            }
        }
    }
    locs
}
