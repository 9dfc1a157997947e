//! Ops read beyond their operands' values: shape assertions, `compare` (its
//! direction and type), `slice` (static bounds or shape operands) and `reduce` (its
//! body).

use super::fold::Konst;
use super::lex::Tok;
use super::lower::{Lx, Val};
use super::ops::{count, folded, konst, list_attr, result_dims, shape_of, short};
use super::parse::{At, Stmt, at};
use mnsim_arch::DType;
use mnsim_kernels::{Cmp, Eltwise, Kernel, ReduceKind};

/// `custom_call @shape_assertion(%ok, %dims...)`: checked now that every dimension is
/// bound; other targets are errors.
pub(super) fn shape_assertion(st: &Stmt, vals: &[Val]) -> Result<Vec<Val>, At> {
    let target = st.args.iter().find_map(|t| match &t.tok {
        Tok::Sym(s) => Some(s.clone()),
        _ => None,
    });
    if target.as_deref() != Some("shape_assertion") {
        return Err(at(
            &st.name_span,
            format!(
                "`custom_call @{}` is not supported: mnsim reads `@shape_assertion` only",
                target.unwrap_or_default()
            ),
        ));
    }
    let ok = vals
        .first()
        .ok_or_else(|| at(&st.span, "a shape assertion needs its condition"))?;
    let k = konst(st, ok, "the asserted condition")?;
    let holds = k
        .values()
        .map_err(|e| at(&st.span, e))?
        .iter()
        .all(|&x| x != 0.0);
    if holds {
        return Ok(Vec::new());
    }
    let msg = st
        .args
        .windows(3)
        .find_map(|w| match (&w[0].tok, &w[1].tok, &w[2].tok) {
            (Tok::Ident(k), Tok::Punct('='), Tok::Str(s)) if k == "error_message" => {
                Some(s.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| "a shape assertion fails".into());
    let mut msg = msg;
    for (i, v) in vals.iter().enumerate().skip(1) {
        if let Val::C(c) = v
            && c.is_splat()
        {
            msg = msg.replace(&format!("{{{}}}", i - 1), &c.data[0].to_string());
        }
    }
    Err(at(
        &st.span,
        format!("shape assertion failed with these bindings: {msg}"),
    ))
}

/// `compare DIR, %a, %b[, TYPE]`: evaluated at import on constants, else the
/// comparison kernel (`Eltwise Compare`, operands broadcast as for `Binary`) giving
/// `pred`. A `TOTALORDER` comparison of computed tensors is an error: the kernel
/// compares as IEEE numbers (`-0 == +0`, NaN unordered).
pub(super) fn compare(lx: &mut Lx, st: &Stmt, base: &str, vals: &[Val]) -> Result<Vec<Val>, At> {
    count(st, vals, 2)?;
    let (dir, cmp) = st
        .args
        .iter()
        .find_map(|t| match &t.tok {
            Tok::Ident(w) => Some(match w.as_str() {
                "EQ" => (w.clone(), Cmp::Equal),
                "NE" => (w.clone(), Cmp::NotEqual),
                "GE" => (w.clone(), Cmp::GreaterEqual),
                "GT" => (w.clone(), Cmp::Greater),
                "LE" => (w.clone(), Cmp::LessEqual),
                "LT" => (w.clone(), Cmp::Less),
                _ => return None,
            }),
            _ => None,
        })
        .ok_or_else(|| {
            at(
                &st.span,
                "`compare` needs a direction (EQ, NE, GE, GT, LE, LT)",
            )
        })?;
    if let (Val::C(a), Val::C(b)) = (&vals[0], &vals[1]) {
        let f = move |x: &[f64]| -> f64 {
            let (a, b) = (x[0], x[1]);
            let r = match dir.as_str() {
                "EQ" => a == b,
                "NE" => a != b,
                "GE" => a >= b,
                "GT" => a > b,
                "LE" => a <= b,
                _ => a < b,
            };
            r as u8 as f64
        };
        if a.dims != b.dims {
            return Err(at(&st.span, "`compare` operands differ in shape"));
        }
        return folded(st, Konst::map(&[a, b], DType::Pred, f));
    }
    if let Some(t) = st
        .args
        .iter()
        .find(|t| t.tok == Tok::Ident("TOTALORDER".into()))
    {
        return Err(at(
            &t.span,
            "a `TOTALORDER` comparison of computed tensors is not supported: the comparison kernel compares as IEEE numbers (-0 equals +0, NaN is unordered)",
        ));
    }
    let ty = super::ops::result_ty(st)?;
    if ty.dtype != DType::Pred {
        return Err(at(
            &ty.span,
            format!("`compare` gives `i1`, the result type says {}", ty.dtype),
        ));
    }
    super::emit::elementwise(lx, st, base, Kernel::Eltwise(Eltwise::Compare(cmp)), vals)
}

/// `slice %x [a:b, c:d:s]` and `real_dynamic_slice %x, %start, %limit, %strides`.
pub(super) fn slice(lx: &mut Lx, st: &Stmt, base: &str, vals: &[Val]) -> Result<Vec<Val>, At> {
    let x = vals
        .first()
        .ok_or_else(|| at(&st.span, "`slice` needs an operand"))?;
    let dims = x.dims();
    let (start, limit, stride) = if st.name == "stablehlo.real_dynamic_slice" {
        count(st, vals, 4)?;
        (
            shape_of(st, &vals[1])?,
            shape_of(st, &vals[2])?,
            shape_of(st, &vals[3])?,
        )
    } else {
        count(st, vals, 1)?;
        let i = st
            .args
            .iter()
            .position(|t| t.tok == Tok::Punct('['))
            .ok_or_else(|| at(&st.span, "`slice` needs `[start:limit, ...]`"))?;
        let (mut s, mut l, mut k) = (Vec::new(), Vec::new(), Vec::new());
        let mut part: Vec<u64> = Vec::new();
        for t in &st.args[i + 1..] {
            match &t.tok {
                Tok::Int(v) if *v >= 0 => part.push(*v as u64),
                Tok::Punct(':') => {}
                Tok::Punct(',' | ']') => {
                    match part.as_slice() {
                        [a, b] => (s.push(*a), l.push(*b), k.push(1)),
                        [a, b, c] => (s.push(*a), l.push(*b), k.push(*c)),
                        _ => {
                            return Err(at(
                                &t.span,
                                "expected `start:limit` or `start:limit:stride`",
                            ));
                        }
                    };
                    part.clear();
                    if t.tok == Tok::Punct(']') {
                        break;
                    }
                }
                _ => {
                    return Err(at(
                        &t.span,
                        "expected `start:limit` or `start:limit:stride`",
                    ));
                }
            }
        }
        (s, l, k)
    };
    if start.len() != dims.len() || limit.len() != dims.len() || stride.len() != dims.len() {
        return Err(at(
            &st.span,
            format!(
                "the slice names {} axes of a rank-{} operand",
                start.len(),
                dims.len()
            ),
        ));
    }
    let mut out = Vec::new();
    for a in 0..dims.len() {
        if start[a] > limit[a] || limit[a] > dims[a] || stride[a] == 0 {
            return Err(at(
                &st.span,
                format!(
                    "axis {a}: {}:{}:{} does not fit size {}",
                    start[a], limit[a], stride[a], dims[a]
                ),
            ));
        }
        out.push((limit[a] - start[a]).div_ceil(stride[a]));
    }
    let out = result_dims(st, &out)?;
    match x {
        Val::C(k) => folded(st, k.slice(&start, &stride, out)),
        // Rows of a tensor in DRAM (a layer's slice of a stacked cache): gathered.
        Val::T(t)
            if lx.in_dram(t)
                && out.first().is_some_and(|&n| n < dims[0])
                && stride.iter().all(|&k| k == 1)
                && (1..dims.len()).all(|a| out[a] == dims[a]) =>
        {
            let rows = super::dynamic::Rows::Known(start[0], out[0]);
            super::dynamic::dram_rows(lx, st, base, t, rows, &out)
        }
        _ => super::movement::slice(lx, st, base, x, (&start, &limit, &stride), &out),
    }
}

/// `reduce(%x init: %c) applies stablehlo.add across dimensions = [..]`, or with a
/// `reducer` region holding one add/max/min/mul of its two parameters.
pub(super) fn reduce(lx: &mut Lx, st: &Stmt, base: &str, vals: &[Val]) -> Result<Vec<Val>, At> {
    if vals.len() != 2 {
        return Err(at(
            &st.span,
            "a reduce over several operands is not supported (one operand, one init)",
        ));
    }
    let body = match st.regions.first() {
        None => st
            .args
            .windows(2)
            .find_map(|w| match (&w[0].tok, &w[1].tok) {
                (Tok::Ident(a), Tok::Ident(op)) if a == "applies" => Some(op.clone()),
                _ => None,
            }),
        Some(super::parse::Region { params, ops, .. }) => match ops.as_slice() {
            [one, ret] if ret.name.ends_with("return") => {
                let uses: Vec<&String> = one
                    .args
                    .iter()
                    .filter_map(|t| match &t.tok {
                        Tok::Value(v) => Some(v),
                        _ => None,
                    })
                    .collect();
                (params.len() == 2 && uses.len() == 2 && uses.iter().all(|u| params.contains(u)))
                    .then(|| one.name.clone())
            }
            _ => None,
        },
    }
    .ok_or_else(|| {
        at(
            &st.span,
            "the reduce body must be one add, maximum, minimum or multiply of its two parameters",
        )
    })?;
    let (kind, identity) = match body.as_str() {
        "stablehlo.add" => (ReduceKind::Add, 0.0),
        "stablehlo.maximum" => (ReduceKind::Max, f64::NEG_INFINITY),
        "stablehlo.minimum" => (ReduceKind::Min, f64::INFINITY),
        "stablehlo.multiply" => (ReduceKind::Prod, 1.0),
        other => {
            return Err(at(
                &st.span,
                format!(
                    "a reduce with body `{other}` is not supported (add, maximum, minimum, multiply)"
                ),
            ));
        }
    };
    let init = konst(st, &vals[1], "the init value")?;
    if !init.is_splat() || init.data[0] != identity {
        return Err(at(
            &st.span,
            format!(
                "the init value {} is not the identity of `{}` ({identity}); only identity inits are supported",
                init.data[0],
                short(&body)
            ),
        ));
    }
    let dims = vals[0].dims();
    let ax = list_attr(st, "dimensions", dims.len())?;
    let out: Vec<u64> = (0..dims.len())
        .filter(|a| !ax.contains(a))
        .map(|a| dims[a])
        .collect();
    let out = result_dims(st, &out)?;
    let x = super::emit::tensor_of(lx, &st.span, &vals[0], "the reduced operand")?;
    // A reduction to a scalar keeps its axes (size 1): the scenario declares a scalar
    // `[1]`, which a rank-1 operand's reduction gives as it is and a higher rank's
    // after a Reshape.
    let whole = out.is_empty();
    let kept: Vec<u64> = if whole {
        vec![1; dims.len()]
    } else {
        out.clone()
    };
    let kernel = Kernel::ReduceAxes {
        op: kind,
        axes: ax,
        keep_dims: whole,
    };
    let o = lx.declare(base, x.dtype, &kept);
    lx.step(&st.span, kernel, &[&x], &o)?;
    if whole && kept.len() == 1 {
        return Ok(vec![Val::T(super::lower::Tens { dims: vec![], ..o })]);
    }
    if whole {
        return Ok(vec![Val::T(super::emit::reshaped(lx, &st.span, &o, &[])?)]);
    }
    Ok(vec![Val::T(o)])
}
