//! A tensor's declaration resolved: its shape parsed and bound (bound and run-time
//! sizes), its `init` checked against its dtype, and bindings no dimension has.

use super::ctx::Ctx;
use crate::program::Tensor;
use crate::scenario::located_with;
use crate::scenario::spans::Node;
use miette::{Report, miette};
use mnsim_arch::DType;
use mnsim_arch::shape::{self, Dim};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// `--bind NAME=...` for a name no tensor's dimension has: most likely a misspelling.
pub(super) fn unknown_bind(k: &str, dims: &BTreeSet<String>) -> Report {
    let known: Vec<&str> = dims.iter().map(String::as_str).collect();
    let near = crate::scenario::closest(k, &known)
        .map(|n| format!("did you mean `{n}`? "))
        .unwrap_or_default();
    let list = if known.is_empty() {
        "no tensor has a named dimension (name one in its shape, e.g. `f16[batch<=64,1024]`)"
            .to_string()
    } else {
        format!(
            "the named dimensions are {}",
            known
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    miette!("error: --bind {k}: no tensor has a dimension named `{k}`; {near}{list}")
}

/// Best-effort byte range of dimension `i` inside shape text.
fn dim_range(text: &str, i: usize) -> Option<Range<usize>> {
    let (open, close, sep) = if let Some(o) = text.find('[') {
        (o + 1, o + 1 + text[o + 1..].find(']')?, ',')
    } else {
        let o = text.find('<')? + 1;
        let end = text[o..].find([',', '>']).map_or(text.len(), |k| o + k);
        (o, end, 'x')
    };
    let mut start = open;
    for (k, part) in text[open..close].split(sep).enumerate() {
        if k == i {
            let lead = part.len() - part.trim_start().len();
            return Some(start + lead..start + part.trim_end().len());
        }
        start += part.len() + 1;
    }
    None
}

pub(super) fn resolve_tensor(
    cx: &Ctx,
    name: &str,
    decl: &crate::scenario::TensorDecl,
    bind: &BTreeMap<String, u64>,
    from_cli: &dyn Fn(&str) -> bool,
) -> Result<Tensor, Report> {
    let at = At {
        cx,
        name,
        decl,
        node: cx.tensor(name),
    };
    let whole = 0..decl.shape.len();
    let declared = shape::parse(&decl.shape).map_err(|e| {
        let r = if e.offset == 0 && e.len == 0 {
            whole.clone()
        } else {
            e.offset..e.offset + e.len
        };
        cx.err(
            at.shape_span(r),
            &format!("tensor `{name}`: bad shape `{}`: {}", decl.shape, e.message),
            "here",
        )
    })?;
    if declared.dtype != decl.dtype {
        return Err(cx.err(
            at.node
                .and_then(|n| n.field("dtype"))
                .map(|n| n.span.clone())
                .or_else(|| at.shape_span(whole.clone())),
            &format!(
                "tensor `{name}`: dtype {:?} does not match its shape `{}` (element type {})",
                decl.dtype, decl.shape, declared.dtype
            ),
            "does not match the shape",
        ));
    }
    let mut dims_at_bound = Vec::with_capacity(declared.rank());
    let mut runtime_dims = Vec::with_capacity(declared.rank());
    for (i, d) in declared.dims.iter().enumerate() {
        let (at_bound, runtime) = at.dim_size(i, d, bind, from_cli)?;
        dims_at_bound.push(at_bound);
        runtime_dims.push(runtime);
    }
    if let Some(problem) = decl
        .init
        .as_ref()
        .and_then(|init| init_problem(init, decl.dtype, &runtime_dims))
    {
        return Err(cx.err(
            at.node
                .and_then(|n| n.field("init"))
                .or(at.node)
                .map(|n| n.span.clone()),
            &format!("tensor `{name}`: {problem}"),
            "this value",
        ));
    }
    let shape = declared.bind(bind).map_err(|e| {
        cx.err(
            at.shape_span(whole),
            &format!("tensor `{name}`: {e}"),
            "here",
        )
    })?;
    Ok(Tensor {
        name: name.to_string(),
        dtype: decl.dtype,
        shape,
        declared,
        dims_at_bound,
        runtime_dims,
        init: decl.init.clone(),
    })
}

/// The tensor being resolved, and where in the file its errors point.
struct At<'a> {
    cx: &'a Ctx<'a>,
    name: &'a str,
    decl: &'a crate::scenario::TensorDecl,
    node: Option<&'a Node>,
}

impl At<'_> {
    /// `r` of the shape text, in the file (the tensor's entry where the shape is not
    /// found there).
    fn shape_span(&self, r: Range<usize>) -> Option<Range<usize>> {
        let shape = self.node.and_then(|n| n.field("shape"));
        shape
            .map(|n| n.inner_span(r))
            .or_else(|| self.node.map(|n| n.span.clone()))
    }

    /// Dimension `i`'s size at its bound and at run time, or why it has none: a binding
    /// above its bound, a dynamic dimension left unbound, or a size of 0.
    fn dim_size(
        &self,
        i: usize,
        d: &Dim,
        bind: &BTreeMap<String, u64>,
        from_cli: &dyn Fn(&str) -> bool,
    ) -> Result<(u64, u64), Report> {
        let (cx, name, shape) = (self.cx, self.name, &self.decl.shape);
        let dim_span = || self.shape_span(dim_range(shape, i).unwrap_or(0..shape.len()));
        let binding = d.name().and_then(|n| bind.get(n).map(|v| (n, *v)));
        let (at_bound, runtime) = match (d, binding) {
            (Dim::Static(n), _) => (*n, *n),
            (Dim::Bounded { bound, .. }, Some((n, v))) => {
                if v > *bound {
                    let whence = if from_cli(n) {
                        "--bind"
                    } else {
                        "the scenario's `bind`"
                    };
                    let mut more = Vec::new();
                    if !from_cli(n)
                        && let Some((k, _)) = cx.field("bind").and_then(|b| b.entry(n))
                    {
                        more.push((k.span.clone(), format!("{n} = {v}")));
                    }
                    return Err(located_with(
                        cx.src,
                        dim_span(),
                        &format!(
                            "tensor `{name}`: {whence} sets {n}={v}, above the bound {bound} of \
                             dimension {i} (`{d}`)"
                        ),
                        &format!("at most {bound}"),
                        &more,
                    ));
                }
                (*bound, v)
            }
            (Dim::Bounded { bound, .. }, None) => (*bound, *bound),
            (Dim::Dynamic { .. }, Some((_, v))) => (v, v),
            (Dim::Dynamic { name: dn }, None) => {
                let how = match dn {
                    Some(n) => format!("bind it (`bind: {{\"{n}\": 48}}` or `--bind {n}=48`)"),
                    None => "give it a name and bind it (`batch?` with `--bind batch=48`), \
                             or a bound (`<=64`)"
                        .to_string(),
                };
                return Err(cx.err(
                    dim_span(),
                    &format!(
                        "tensor `{name}`: dimension {i} (`{d}`) of `{shape}` is dynamic with no \
                         bound and no binding; {how}"
                    ),
                    "unbound dimension",
                ));
            }
        };
        if runtime == 0 || at_bound == 0 {
            // An empty tensor has nothing to lay out or move: the same error in both modes.
            let how = match binding {
                Some((n, _)) if from_cli(n) => format!(" (--bind {n}=0)"),
                Some((n, _)) => format!(" (`bind: {{\"{n}\": 0}}`)"),
                None => String::new(),
            };
            let fix = match d.name() {
                Some(n) => format!("bind `{n}` to at least 1"),
                None => "give it at least 1 element".to_string(),
            };
            return Err(cx.err(
                dim_span(),
                &format!(
                    "tensor `{name}`: dimension {i} (`{d}`) of `{shape}` has size 0{how}, so the \
                     tensor has no elements; {fix}"
                ),
                "size 0",
            ));
        }
        Ok((at_bound, runtime))
    }
}

/// What in `init` the tensor's dtype cannot hold, or where its values do not fit the
/// tensor's `dims` (run-time sizes).
fn init_problem(init: &crate::scenario::Init, dtype: DType, dims: &[u64]) -> Option<String> {
    use crate::scenario::Init;
    let elems = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    match init {
        Init::Fill { value } => dtype
            .check_value(*value)
            .map(|why| format!("Fill value {why}")),
        Init::Iota => elems.and_then(|n| {
            let last = n.saturating_sub(1) as f64;
            dtype.check_value(last).map(|_| {
                format!(
                    "Iota counts up to {last}, beyond the largest {dtype} ({})",
                    dtype.range().1
                )
            })
        }),
        Init::Runs(runs) => {
            let total = runs.iter().try_fold(0u64, |a, &(n, _)| a.checked_add(n));
            if total != elems {
                let count =
                    |c: Option<u64>| c.map_or("more than 2^64".to_string(), |t| t.to_string());
                Some(format!(
                    "the runs of `Runs` count {} elements where the tensor has {}",
                    count(total),
                    count(elems)
                ))
            } else {
                runs.iter()
                    .find_map(|&(_, v)| dtype.check_value(v).map(|why| format!("Runs value {why}")))
            }
        }
        // Values the simulator makes itself: not checked against the dtype.
        Init::Random { .. } | Init::Zeros | Init::Ones => None,
    }
}

#[cfg(test)]
mod tests {
    use super::dim_range;

    #[test]
    fn dims_in_text() {
        let t = "f16[ batch<=64 ,1024]{0,1}";
        assert_eq!(&t[dim_range(t, 0).unwrap()], "batch<=64");
        assert_eq!(&t[dim_range(t, 1).unwrap()], "1024");
        assert!(dim_range(t, 2).is_none());
        let t = "tensor<?x512xf32, #stablehlo.bounds<64, ?>>";
        assert_eq!(&t[dim_range(t, 0).unwrap()], "?");
        assert_eq!(&t[dim_range(t, 1).unwrap()], "512");
    }
}
