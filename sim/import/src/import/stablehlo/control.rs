//! `while` with a static trip count (JAX's `lax.scan`, `fori_loop`): unrolled at
//! import. Its condition is evaluated at import before every iteration (it must fold to
//! a constant: a counter compared with a bound); each iteration's `do` region is
//! lowered in place with the values carried from the last, every op it makes tagged
//! with the iteration (`Lx::layer`, the outermost loop's). A slice of a stacked weight
//! at the iteration's index is then a static slice.

use super::lex::Tok;
use super::lower::{Lx, Val, check_ty, define};
use super::parse::{At, Region, Stmt, at};
use std::collections::BTreeMap;

/// The most iterations a `while` may unroll to.
pub const MAX_TRIPS: usize = 1 << 16;

/// `%r:N = stablehlo.while(%iterArg = %init, ...) : types cond { ... } do { ... }`.
pub(super) fn while_loop(
    lx: &mut Lx,
    st: &Stmt,
    env: &mut BTreeMap<String, Val>,
) -> Result<Vec<Val>, At> {
    let (names, inits) = carried(st, env)?;
    let tys = &st.sig.ins;
    if tys.len() != names.len() {
        return Err(at(
            &st.span,
            format!(
                "`while` carries {} value(s) but its type list names {}",
                names.len(),
                tys.len()
            ),
        ));
    }
    for (v, t) in inits.iter().zip(tys) {
        check_ty(t, v, "the carried value")?;
    }
    let region = |kind: &str| -> Result<&Region, At> {
        st.regions
            .iter()
            .find(|r| r.kind == kind)
            .ok_or_else(|| at(&st.name_span, format!("`while` needs a `{kind}` region")))
    };
    let (cond, body) = (region("cond")?, region("do")?);
    let mut vals = inits;
    let outer = lx.layer.is_none();
    for trip in 0.. {
        let go = scoped(lx, env, &names, &vals, cond, |ret, vals| {
            match vals.as_slice() {
                [Val::C(k)] if k.dims.is_empty() && k.is_splat() => Ok(Some(k.data[0] != 0.0)),
                [v] if v.dims().is_empty() && v.dtype() == mnsim_arch::DType::Pred => Ok(None),
                _ => Err(at(
                    &ret.span,
                    "the `cond` region must return one `i1` scalar",
                )),
            }
        })?;
        let Some(go) = go else {
            return Err(at(
                &st.name_span,
                format!(
                    "the trip count of this `while` is not static: its condition (line {}) depends on \
                     tensors computed when the program runs; mnsim unrolls a loop whose condition is \
                     known at import (a counter against a bound)",
                    lx.line(cond.span.start)
                ),
            ));
        };
        if !go {
            break;
        }
        if trip >= MAX_TRIPS {
            return Err(at(
                &st.name_span,
                format!("this `while` runs more than {MAX_TRIPS} iterations: too many to unroll"),
            ));
        }
        if outer {
            lx.layer = Some(trip as u32);
        }
        let next = scoped(lx, env, &names, &vals, body, |ret, next| {
            if next.len() != tys.len() {
                return Err(at(
                    &ret.span,
                    format!(
                        "the `do` region returns {} value(s) where the `while` carries {}",
                        next.len(),
                        tys.len()
                    ),
                ));
            }
            for (v, t) in next.iter().zip(tys) {
                check_ty(t, v, "the value carried to the next iteration")?;
            }
            Ok(next)
        });
        if outer {
            lx.layer = None;
        }
        vals = next?;
    }
    Ok(vals)
}

/// The carried values' names (`%iterArg`) and initial values (`%init`), from
/// `(%iterArg = %init, ...)`.
fn carried(st: &Stmt, env: &BTreeMap<String, Val>) -> Result<(Vec<String>, Vec<Val>), At> {
    let toks = &st.args;
    let inner = match (toks.first(), toks.last()) {
        (Some(o), Some(c)) if o.tok == Tok::Punct('(') && c.tok == Tok::Punct(')') => {
            &toks[1..toks.len() - 1]
        }
        _ => {
            return Err(at(
                &st.span,
                "`while` needs its carried values as `(%iterArg = %init, ...)`",
            ));
        }
    };
    let (mut names, mut vals) = (Vec::new(), Vec::new());
    for part in inner.split(|t| t.tok == Tok::Punct(',')) {
        match part {
            [n, eq, v] if eq.tok == Tok::Punct('=') => {
                let (Tok::Value(n), Tok::Value(v)) = (&n.tok, &v.tok) else {
                    return Err(at(&n.span, "expected `%iterArg = %init`"));
                };
                let val = env.get(v).ok_or_else(|| {
                    at(
                        &part[2].span,
                        format!("`%{v}` is not defined before this op"),
                    )
                })?;
                names.push(n.clone());
                vals.push(val.clone());
            }
            [] => {}
            [first, ..] => return Err(at(&first.span, "expected `%iterArg = %init`")),
        }
    }
    Ok((names, vals))
}

/// Runs `region` with `names` bound to `vals` in `env`, then `done` on what its
/// `return` gives; every name the region defined is removed again (a region's values
/// are its own).
fn scoped<T>(
    lx: &mut Lx,
    env: &mut BTreeMap<String, Val>,
    names: &[String],
    vals: &[Val],
    region: &Region,
    done: impl FnOnce(&Stmt, Vec<Val>) -> Result<T, At>,
) -> Result<T, At> {
    let Some(first) = region.ops.first() else {
        return Err(at(&region.span, "a region has no `stablehlo.return`"));
    };
    let mut defined = Vec::new();
    let run = || {
        for (n, v) in names.iter().zip(vals) {
            define(env, first, n, v.clone())?;
            defined.push(n.clone());
        }
        match lx.block(&region.ops, env, &mut defined)? {
            Some((vals, ret)) => done(ret, vals),
            None => Err(at(&region.span, "a region has no `stablehlo.return`")),
        }
    };
    let r = run();
    for n in &defined {
        env.remove(n);
    }
    r
}
