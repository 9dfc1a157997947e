//! `@main`'s signature: its parameters' dimensions (symbolic ones named and bound),
//! their DRAM layouts (`mhlo.layout_mode`), and the results it stores.

use super::lower::{Binds, Lx, Val};
use super::parse::{At, Func, at};
use std::collections::BTreeMap;

/// Parameter `i` of `main`: its dims, each symbolic one given by `binds` (and added to
/// `bind`, the scenario's bindings, once), and each dim's symbolic name if it has one.
pub(super) fn param_dims(
    main: &Func,
    i: usize,
    sym: &BTreeMap<(usize, usize), String>,
    binds: &Binds,
    bind: &mut Vec<(String, u64)>,
) -> Result<(Vec<u64>, Vec<Option<String>>), At> {
    let p = &main.params[i];
    let mut dims = Vec::new();
    let mut dim_names = Vec::new();
    for (d, x) in p.ty.dims.iter().enumerate() {
        match x {
            Some(v) => {
                dims.push(*v);
                dim_names.push(None);
            }
            None => {
                let n = &sym[&(i, d)];
                let v = *binds.get(n).ok_or_else(|| {
                    at(
                        &p.ty.span,
                        format!(
                            "the symbolic dimension `{n}` (dimension {d} of `%{}` of `@{}`) is not bound: give its size with `--bind {n}=8`",
                            p.name, main.name
                        ),
                    )
                })?;
                if !bind.iter().any(|(k, _)| k == n) {
                    bind.push((n.clone(), v));
                }
                dims.push(v);
                dim_names.push(Some(n.clone()));
            }
        }
    }
    if super::fold::numel(&dims).is_none() {
        return Err(at(
            &p.ty.span,
            format!(
                "`%{}` of `@{}` holds more elements than 2^64 with these bindings ({dims:?})",
                p.name, main.name
            ),
        ));
    }
    Ok((dims, dim_names))
}

/// The tensors `main` returns, by name: each a computed tensor (a broadcast one
/// materialised), none an argument, none twice.
pub(super) fn outputs(lx: &mut Lx, main: &Func, results: &[Val]) -> Result<Vec<String>, At> {
    let mut outputs = Vec::new();
    for (k, v) in results.iter().enumerate() {
        let t = match v {
            Val::T(t) => t.clone(),
            Val::B { .. } => super::emit::tensor_of(lx, &main.span, v, &format!("result {k}"))?,
            Val::C(_) => {
                return Err(at(
                    &main.span,
                    format!(
                        "result {k} of `@{}` is a constant that nothing computes; mnsim stores computed tensors",
                        main.name
                    ),
                ));
            }
            Val::Unit => {
                return Err(at(
                    &main.span,
                    format!(
                        "result {k} of `@{}` has no value (a shape assertion's); mnsim stores computed tensors",
                        main.name
                    ),
                ));
            }
        };
        if outputs.contains(&t.name) || lx.inputs.contains(&t.name) {
            return Err(at(
                &main.span,
                format!(
                    "result {k} of `@{}` is `{}`, an argument or another result: mnsim stores each computed tensor once",
                    main.name, t.name
                ),
            ));
        }
        outputs.push(t.name.clone());
    }
    Ok(outputs)
}

/// The names of `main`'s symbolic dimensions: (parameter, dimension) → name, from the
/// `jax.global_constant` attributes of the functions `main` passes its
/// `get_dimension_size` results to; a dimension JAX did not name is `argN_dD`.
pub(super) fn symbolic_names(
    main: &Func,
    funcs: &BTreeMap<&str, &Func>,
) -> BTreeMap<(usize, usize), String> {
    use super::lex::Tok;
    let mut sizes: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut names = BTreeMap::new();
    for st in &main.body {
        let vals: Vec<&String> = st
            .args
            .iter()
            .filter_map(|t| match &t.tok {
                Tok::Value(v) => Some(v),
                _ => None,
            })
            .collect();
        if st.name == "stablehlo.get_dimension_size"
            && let (Some(r), Some(v)) = (st.results.first(), vals.first())
            && let Some(p) = main.params.iter().position(|p| &p.name == *v)
            && let Some(d) = super::ops::attr_int(&st.args, "dim")
        {
            sizes.insert(r.clone(), (p, d as usize));
        }
        if matches!(st.name.as_str(), "call" | "func.call")
            && let Some(callee) = st.args.iter().find_map(|t| match &t.tok {
                Tok::Sym(s) => funcs.get(s.as_str()),
                _ => None,
            })
        {
            for (i, v) in vals.iter().enumerate() {
                let (Some(&pd), Some(p)) = (sizes.get(*v), callee.params.get(i)) else {
                    continue;
                };
                let toks = &p.attrs;
                for w in toks.windows(3) {
                    if w[0].tok == Tok::Ident("jax.global_constant".into())
                        && w[1].tok == Tok::Punct('=')
                        && let Tok::Str(n) = &w[2].tok
                    {
                        names.entry(pd).or_insert_with(|| n.clone());
                    }
                }
            }
        }
    }
    for (p, param) in main.params.iter().enumerate() {
        for (d, x) in param.ty.dims.iter().enumerate() {
            if x.is_none() {
                names
                    .entry((p, d))
                    .or_insert_with(|| format!("arg{p}_d{d}"));
            }
        }
    }
    names
}

/// The DRAM layout a parameter's `mhlo.layout_mode = "{1,0}"` gives, if any.
pub(super) fn layout_mode(p: &super::parse::Param, rank: usize) -> Option<Vec<usize>> {
    use super::lex::Tok;
    p.attrs.windows(3).find_map(|w| {
        if w[0].tok != Tok::Ident("mhlo.layout_mode".into()) || w[1].tok != Tok::Punct('=') {
            return None;
        }
        let Tok::Str(s) = &w[2].tok else { return None };
        let inner = s.trim().strip_prefix('{')?.strip_suffix('}')?;
        let m: Vec<usize> = inner
            .split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| x.trim().parse().ok())
            .collect::<Option<_>>()?;
        let mut sorted = m.clone();
        sorted.sort_unstable();
        (m.len() == rank && sorted == (0..rank).collect::<Vec<_>>()).then_some(m)
    })
}
