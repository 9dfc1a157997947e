//! Each StableHLO op: evaluated at import when its operands are constants, else
//! lowered to kernel steps (`docs/import.md` lists the ops and what they become).

use super::fold::Konst;
use super::lex::{Tok, Token};
use super::lower::{Lx, Val};
use super::parse::{At, Stmt, Ty, at};
use mnsim_arch::DType;
use mnsim_kernels::{BinaryOp, Kernel, UnaryOp};
use std::collections::BTreeMap;
use std::ops::Range;

/// Every op the import reads (docs/import.md).
pub const OPS: &str = "add, subtract, multiply, divide, maximum, minimum, power, exponential, log, sqrt, rsqrt, \
negate, tanh, logistic, abs, round_nearest_even, chlo.square, chlo.erf, chlo.erfc, compare, select, and, or, not, \
dot_general, convolution, reduce (add, max, min, mul bodies), broadcast_in_dim, iota, convert, reshape, transpose, \
slice, concatenate, pad, constant, get_dimension_size, dynamic_broadcast_in_dim, dynamic_reshape, \
dynamic_iota, real_dynamic_slice, dynamic_slice, dynamic_update_slice, gather (an embedding lookup), \
while (a static trip count), custom_call @shape_assertion, call, return";

pub(super) fn short(name: &str) -> &str {
    name.strip_prefix("stablehlo.").unwrap_or(name)
}

pub(super) fn unary_of(name: &str) -> Option<UnaryOp> {
    Some(match name {
        "stablehlo.exponential" => UnaryOp::Exp,
        "stablehlo.log" => UnaryOp::Log,
        "stablehlo.sqrt" => UnaryOp::Sqrt,
        "stablehlo.rsqrt" => UnaryOp::Rsqrt,
        "stablehlo.negate" => UnaryOp::Neg,
        "stablehlo.tanh" => UnaryOp::Tanh,
        "stablehlo.logistic" => UnaryOp::Sigmoid,
        "stablehlo.abs" => UnaryOp::Abs,
        "stablehlo.round_nearest_even" => UnaryOp::Round,
        "chlo.square" => UnaryOp::Square,
        "chlo.erf" => UnaryOp::Erf,
        "chlo.erfc" => UnaryOp::Erfc,
        _ => return None,
    })
}

/// Whether a unary function is defined on floating-point numbers only (StableHLO's
/// `exponential`, `log`, `sqrt`, ...; `negate`, `abs` and `chlo.square` take integers).
fn needs_float(u: UnaryOp) -> bool {
    match u {
        UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Square | UnaryOp::Relu | UnaryOp::Copy => false,
        UnaryOp::Exp
        | UnaryOp::Log
        | UnaryOp::Sqrt
        | UnaryOp::Rsqrt
        | UnaryOp::Tanh
        | UnaryOp::Sigmoid
        | UnaryOp::Round
        | UnaryOp::Erf
        | UnaryOp::Erfc
        | UnaryOp::Gelu
        | UnaryOp::HardSwish
        | UnaryOp::Recip => true,
    }
}

pub(super) fn binary_of(name: &str) -> Option<BinaryOp> {
    Some(match name {
        "stablehlo.add" => BinaryOp::Add,
        "stablehlo.subtract" => BinaryOp::Sub,
        "stablehlo.multiply" => BinaryOp::Mul,
        "stablehlo.divide" => BinaryOp::Div,
        "stablehlo.maximum" => BinaryOp::Max,
        "stablehlo.minimum" => BinaryOp::Min,
        _ => return None,
    })
}

/// `key = N` among the tokens.
pub fn attr_int(toks: &[Token], key: &str) -> Option<i128> {
    toks.windows(3)
        .find_map(|w| match (&w[0].tok, &w[1].tok, &w[2].tok) {
            (Tok::Ident(k), Tok::Punct('='), Tok::Int(v)) if k == key => Some(*v),
            _ => None,
        })
}

/// The integer list `[a, b, ...]` starting at token `i`, and the token after it.
fn int_list(toks: &[Token], i: usize) -> Option<(Vec<i128>, usize)> {
    if toks.get(i)?.tok != Tok::Punct('[') {
        return None;
    }
    let mut out = Vec::new();
    let mut j = i + 1;
    loop {
        match &toks.get(j)?.tok {
            Tok::Punct(']') => return Some((out, j + 1)),
            Tok::Int(v) => out.push(*v),
            Tok::Punct(',') => {}
            _ => return None,
        }
        j += 1;
    }
}

/// `key = [a, b]` (and, for `lhs x rhs` pairs, the second list).
pub(super) fn attr_lists(toks: &[Token], key: &str) -> Option<(Vec<i128>, Option<Vec<i128>>)> {
    let i = toks
        .windows(2)
        .position(|w| w[0].tok == Tok::Ident(key.into()) && w[1].tok == Tok::Punct('='))?;
    let (a, j) = int_list(toks, i + 2)?;
    let b = if toks.get(j).map(|t| &t.tok) == Some(&Tok::Ident("x".into())) {
        Some(int_list(toks, j + 1)?.0)
    } else {
        None
    };
    Some((a, b))
}

pub(super) fn axes(
    span: &Range<usize>,
    v: &[i128],
    rank: usize,
    what: &str,
) -> Result<Vec<usize>, At> {
    let mut out = Vec::new();
    for &a in v {
        if a < 0 || a as usize >= rank || out.contains(&(a as usize)) {
            return Err(at(
                span,
                format!("{what} {v:?} name axis {a}, out of range or twice for rank {rank}"),
            ));
        }
        out.push(a as usize);
    }
    Ok(out)
}

pub(super) fn list_attr(st: &Stmt, key: &str, rank: usize) -> Result<Vec<usize>, At> {
    let (v, _) = attr_lists(&st.args, key).ok_or_else(|| {
        at(
            &st.span,
            format!("`{}` needs `{key} = [...]`", short(&st.name)),
        )
    })?;
    axes(&st.span, &v, rank, key)
}

fn int_attr(st: &Stmt, key: &str, rank: usize) -> Result<usize, At> {
    let v = attr_int(&st.args, key)
        .ok_or_else(|| at(&st.span, format!("`{}` needs `{key} = N`", short(&st.name))))?;
    Ok(axes(&st.span, &[v], rank.max(1), key)?[0])
}

pub(super) fn result_ty(st: &Stmt) -> Result<&Ty, At> {
    st.sig.outs.first().ok_or_else(|| {
        at(
            &st.span,
            format!("`{}` needs its result type after `:`", short(&st.name)),
        )
    })
}

/// The result type's dimensions with each `?` taken from `known` (the sizes the
/// operands give), checked where the type is static.
pub(super) fn result_dims(st: &Stmt, known: &[u64]) -> Result<Vec<u64>, At> {
    let ty = result_ty(st)?;
    if ty.dims.len() != known.len()
        || ty
            .dims
            .iter()
            .zip(known)
            .any(|(t, k)| t.is_some_and(|t| t != *k))
    {
        return Err(at(
            &ty.span,
            format!(
                "the result type says {}, but the operands give {known:?}",
                super::lower::show_dims(&ty.dims)
            ),
        ));
    }
    if super::fold::numel(known).is_none() {
        return Err(at(
            &ty.span,
            format!("the result {known:?} holds more elements than 2^64"),
        ));
    }
    Ok(known.to_vec())
}

/// The static dimensions of the result type (`?` is an error: only shape operands may
/// give them).
fn static_dims(st: &Stmt) -> Result<Vec<u64>, At> {
    let ty = result_ty(st)?;
    ty.dims
        .iter()
        .map(|d| d.ok_or_else(|| at(&ty.span, "a `?` dimension here needs a shape operand")))
        .collect()
}

pub(super) fn konst<'v>(st: &Stmt, v: &'v Val, what: &str) -> Result<&'v Konst, At> {
    match v {
        Val::C(k) => Ok(k),
        _ => Err(at(
            &st.span,
            format!(
                "`{}`: {what} must be known at import (a constant or computed from dimension sizes)",
                short(&st.name)
            ),
        )),
    }
}

/// A shape operand's values as dimensions.
pub(super) fn shape_of(st: &Stmt, v: &Val) -> Result<Vec<u64>, At> {
    let k = konst(st, v, "the shape operand")?;
    let vals = k.values().map_err(|e| at(&st.span, e))?;
    vals.iter()
        .map(|&x| {
            if x >= 0.0 && x.fract() == 0.0 {
                Ok(x as u64)
            } else {
                Err(at(
                    &st.span,
                    format!("the shape operand holds {x}, not a size"),
                ))
            }
        })
        .collect()
}

pub(super) fn folded(st: &Stmt, r: Result<Konst, String>) -> Result<Vec<Val>, At> {
    r.map(|k| vec![Val::C(k)]).map_err(|e| at(&st.span, e))
}

pub(super) fn count(st: &Stmt, vals: &[Val], n: usize) -> Result<(), At> {
    if vals.len() != n {
        return Err(at(
            &st.span,
            format!(
                "`{}` takes {n} operand(s), the line gives {}",
                short(&st.name),
                vals.len()
            ),
        ));
    }
    Ok(())
}

/// One op → its values.
pub(super) fn op(lx: &mut Lx, st: &Stmt, env: &mut BTreeMap<String, Val>) -> Result<Vec<Val>, At> {
    if st.name == "stablehlo.while" {
        lx.at = st.span.clone();
        return super::control::while_loop(lx, st, env);
    }
    let vals = lx.operands(st, env)?;
    let name = st.name.as_str();
    let base = format!(
        "{}{}",
        lx.prefix,
        st.results.first().map_or("v", String::as_str)
    );
    lx.at = st.span.clone();
    lx.origin = Some(format!(
        "{} (line {}{}){}",
        short(name),
        lx.line(st.span.start),
        lx.layer.map(|l| format!(", layer {l}")).unwrap_or_default(),
        st.loc
            .as_deref()
            .map(|l| format!(" `{l}`"))
            .unwrap_or_default()
    ));
    if let Some(u) = unary_of(name) {
        count(st, &vals, 1)?;
        let dtype = vals[0].dtype();
        if needs_float(u) && !dtype.is_float() {
            return Err(at(
                &st.span,
                format!(
                    "`{}` takes floating-point operands, not {dtype}",
                    short(name)
                ),
            ));
        }
        return super::emit::unary(lx, st, &base, u, &vals[0]);
    }
    if let Some(b) = binary_of(name) {
        count(st, &vals, 2)?;
        return super::emit::elementwise(lx, st, &base, Kernel::Binary(b), &vals);
    }
    if let Some(r) = evaluated(st, &vals)? {
        return Ok(r);
    }
    if let "stablehlo.iota" | "stablehlo.dynamic_iota" = name {
        let dims = if name == "stablehlo.iota" {
            static_dims(st)?
        } else {
            count(st, &vals, 1)?;
            result_dims(st, &shape_of(st, &vals[0])?)?
        };
        let axis = int_attr(st, "dim", dims.len())?;
        return super::emit::iota(lx, st, result_ty(st)?.dtype, dims, axis);
    }
    lowered(lx, st, &base, vals)
}

/// An op neither elementwise, evaluated at import nor an iota: lowered by its kind to
/// kernel steps, or to values without steps (a call inlined, a reshape of a constant).
fn lowered(lx: &mut Lx, st: &Stmt, base: &str, vals: Vec<Val>) -> Result<Vec<Val>, At> {
    let name = st.name.as_str();
    match name {
        "stablehlo.custom_call" => super::special::shape_assertion(st, &vals),
        "call" | "func.call" => {
            let callee = st
                .args
                .iter()
                .find_map(|t| match &t.tok {
                    Tok::Sym(s) => Some(s.clone()),
                    _ => None,
                })
                .ok_or_else(|| at(&st.span, "a call needs `@callee`"))?;
            lx.call(&st.span, &callee, vals)
        }
        "stablehlo.compare" => super::special::compare(lx, st, base, &vals),
        "stablehlo.select" => {
            count(st, &vals, 3)?;
            super::emit::select(lx, st, base, &vals)
        }
        "stablehlo.convert" => {
            count(st, &vals, 1)?;
            super::emit::convert(lx, st, base, &vals[0])
        }
        "stablehlo.power" => {
            count(st, &vals, 2)?;
            super::emit::power(lx, st, base, &vals)
        }
        "stablehlo.broadcast_in_dim" | "stablehlo.dynamic_broadcast_in_dim" => {
            let dynamic = name == "stablehlo.dynamic_broadcast_in_dim";
            count(st, &vals, if dynamic { 2 } else { 1 })?;
            let out = if dynamic {
                result_dims(st, &shape_of(st, &vals[1])?)?
            } else {
                static_dims(st)?
            };
            let map = list_attr(st, "dims", out.len())?;
            super::movement::broadcast(lx, st, &vals[0], &map, out)
        }
        "stablehlo.reshape" | "stablehlo.dynamic_reshape" => {
            let dynamic = name == "stablehlo.dynamic_reshape";
            count(st, &vals, if dynamic { 2 } else { 1 })?;
            let out = if dynamic {
                result_dims(st, &shape_of(st, &vals[1])?)?
            } else {
                static_dims(st)?
            };
            super::movement::reshape(lx, st, base, &vals[0], out)
        }
        "stablehlo.transpose" => {
            count(st, &vals, 1)?;
            let perm = list_attr(st, "dims", vals[0].dims().len())?;
            if perm.len() != vals[0].dims().len() {
                return Err(at(
                    &st.span,
                    format!("`dims` {perm:?} is not a permutation of the operand's axes"),
                ));
            }
            super::movement::transpose(lx, st, base, &vals[0], &perm)
        }
        "stablehlo.concatenate" => {
            if vals.is_empty() {
                return Err(at(&st.span, "`concatenate` needs operands"));
            }
            let rank = vals[0].dims().len();
            let axis = int_attr(st, "dim", rank)?;
            super::movement::concat(lx, st, base, &vals, axis)
        }
        "stablehlo.slice" | "stablehlo.real_dynamic_slice" => {
            super::special::slice(lx, st, base, &vals)
        }
        "stablehlo.pad" => {
            count(st, &vals, 2)?;
            super::movement::pad(lx, st, base, &vals)
        }
        "stablehlo.dot_general" => {
            count(st, &vals, 2)?;
            super::dot::dot_general(lx, st, base, &vals)
        }
        "stablehlo.reduce" => super::special::reduce(lx, st, base, &vals),
        "stablehlo.dynamic_slice" => super::dynamic::dynamic_slice(lx, st, base, &vals),
        "stablehlo.gather" => super::dynamic::gather(lx, st, base, &vals),
        "stablehlo.dynamic_update_slice" => {
            super::dynamic::dynamic_update_slice(lx, st, base, &vals)
        }
        "stablehlo.convolution" => super::conv::convolution(lx, st, base, &vals),
        other => Err(at(
            &st.name_span,
            format!("the op `{other}` is not supported: mnsim imports {OPS}"),
        )),
    }
}

/// Ops evaluated at import whatever their operands: constants, iotas, dimension sizes
/// and logical ops on `i1` constants; `None` for the other ops.
fn evaluated(st: &Stmt, vals: &[Val]) -> Result<Option<Vec<Val>>, At> {
    let name = st.name.as_str();
    let r = match name {
        "stablehlo.constant" => {
            let ty = result_ty(st)?;
            let dims = static_dims(st)?;
            let text = st
                .args
                .iter()
                .find_map(|t| match &t.tok {
                    Tok::Dense(s) => Some(s.clone()),
                    _ => None,
                })
                .ok_or_else(|| at(&st.span, "a constant needs a `dense<...>` literal"))?;
            folded(st, super::fold::dense(&text, ty.dtype, dims))
        }
        "stablehlo.get_dimension_size" => {
            count(st, vals, 1)?;
            let dims = vals[0].dims();
            let d = int_attr(st, "dim", dims.len())?;
            let dtype = result_ty(st)?.dtype;
            let size = super::fold::exact(dims[d] as f64, dtype).map_err(|_| {
                at(
                    &st.span,
                    format!(
                        "dimension {d} of the operand is {}, more than the result type {dtype} holds",
                        dims[d]
                    ),
                )
            })?;
            folded(st, Ok(Konst::splat(dtype, vec![], size)))
        }
        "stablehlo.and" | "stablehlo.or" | "stablehlo.not" => {
            let ks: Vec<&Konst> = vals
                .iter()
                .map(|v| konst(st, v, "its operands"))
                .collect::<Result<_, _>>()?;
            let dt = result_ty(st)?.dtype;
            let r = match (name, ks.as_slice()) {
                ("stablehlo.not", [a]) if dt == DType::Pred => {
                    Konst::map(&[a], dt, |x| if x[0] != 0.0 { 0.0 } else { 1.0 })
                }
                ("stablehlo.and", [a, b]) if dt == DType::Pred => {
                    Konst::map(&[a, b], dt, |x| (x[0] != 0.0 && x[1] != 0.0) as u8 as f64)
                }
                ("stablehlo.or", [a, b]) if dt == DType::Pred => {
                    Konst::map(&[a, b], dt, |x| (x[0] != 0.0 || x[1] != 0.0) as u8 as f64)
                }
                _ => return Err(at(&st.span, "logical ops are read on i1 constants only")),
            };
            folded(st, r)
        }
        _ => return Ok(None),
    };
    r.map(Some)
}
