//! `dynamic_slice` and `dynamic_update_slice`: start indices known at import (a loop's
//! counter once unrolled, constants) make a static `Slice` (or the update's kernel with
//! its starts fixed); indices computed at run time read their value when the kernel
//! runs (docs/import.md). Every start is clamped as StableHLO clamps it, into
//! `[0, dim − size]`.

use super::emit::tensor_of;
use super::fold::Konst;
use super::lower::{Lx, Tens, Val};
use super::ops::{attr_lists, result_dims, short};
use super::parse::{At, Stmt, at};
use mnsim_arch::DType;
use mnsim_kernels::Kernel;

/// A start index: known at import, or a scalar computed at run time.
pub(super) enum Start {
    Known(u64),
    Runtime(Val),
}

/// The start operands `vals` (one scalar integer per axis of an operand of `dims`,
/// each slice `sizes[a]` long) as starts, the known ones clamped into `[0, dim − size]`.
pub(super) fn starts(
    st: &Stmt,
    vals: &[Val],
    dims: &[u64],
    sizes: &[u64],
) -> Result<Vec<Start>, At> {
    if vals.len() != dims.len() {
        return Err(at(
            &st.span,
            format!(
                "`{}` takes one start index per axis: {} for a rank-{} operand",
                short(&st.name),
                vals.len(),
                dims.len()
            ),
        ));
    }
    let mut out = Vec::new();
    for (a, v) in vals.iter().enumerate() {
        if !v.dims().is_empty() || v.dtype().is_float() || v.dtype() == mnsim_arch::DType::Pred {
            return Err(at(
                &st.span,
                format!(
                    "`{}`: start index {a} is {}{:?}, not an integer scalar",
                    short(&st.name),
                    v.dtype(),
                    v.dims()
                ),
            ));
        }
        let hi = dims[a] - sizes[a];
        out.push(match v {
            Val::C(k) => {
                let x = k.data[0];
                Start::Known(if x <= 0.0 { 0 } else { (x as u64).min(hi) })
            }
            other => Start::Runtime(other.clone()),
        });
    }
    Ok(out)
}

/// `dynamic_slice %x, %i0, %i1, ..., sizes = [..]`.
pub(super) fn dynamic_slice(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    vals: &[Val],
) -> Result<Vec<Val>, At> {
    let x = vals
        .first()
        .ok_or_else(|| at(&st.span, "`dynamic_slice` needs an operand"))?;
    let dims = x.dims();
    let sizes: Vec<u64> = match attr_lists(&st.args, "sizes") {
        Some((v, None)) if v.len() == dims.len() => v
            .iter()
            .zip(&dims)
            .map(|(&s, &d)| u64::try_from(s).ok().filter(|&s| s <= d))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                at(
                    &st.span,
                    format!("`sizes` {v:?} does not fit the operand {dims:?}"),
                )
            })?,
        _ => {
            return Err(at(
                &st.span,
                format!("`dynamic_slice` needs `sizes = [...]`, one per axis of {dims:?}"),
            ));
        }
    };
    let starts = starts(st, &vals[1..], &dims, &sizes)?;
    let out = result_dims(st, &sizes)?;
    // A row of a tensor in DRAM (a stacked weight, a position table): gathered.
    if let Val::T(t) = x
        && lx.in_dram(t)
        && sizes[0] == 1
        && (1..dims.len()).all(|a| sizes[a] == dims[a])
    {
        let rows = match &starts[0] {
            Start::Known(s) => Rows::Known(*s, 1),
            Start::Runtime(v) => Rows::Runtime(v.clone()),
        };
        return dram_rows(lx, st, base, t, rows, &out);
    }
    let known: Option<Vec<u64>> = starts
        .iter()
        .map(|s| match s {
            Start::Known(v) => Some(*v),
            Start::Runtime(_) => None,
        })
        .collect();
    match known {
        Some(start) => {
            let limit: Vec<u64> = start.iter().zip(&sizes).map(|(s, n)| s + n).collect();
            let ones = vec![1; dims.len()];
            match x {
                Val::C(k) => super::ops::folded(st, k.slice(&start, &ones, out)),
                _ => super::movement::slice(lx, st, base, x, (&start, &limit, &ones), &out),
            }
        }
        None => {
            let x = tensor_of(lx, &st.span, x, "the sliced operand")?;
            let (dynamic, idx) = index_operands(lx, st, &starts, &dims, &sizes)?;
            let o = lx.declare(base, x.dtype, &out);
            let mut ins = vec![&x];
            ins.extend(idx.iter());
            let kernel = Kernel::DynamicSlice {
                sizes: o.declared_dims(),
                dynamic,
            };
            lx.step(&st.span, kernel, &ins, &o)?;
            Ok(vec![Val::T(o)])
        }
    }
}

/// Which rows of a DRAM tensor a slice takes: `n` from a known start, or one at an
/// index computed at run time.
pub(super) enum Rows {
    Known(u64, u64),
    Runtime(Val),
}

/// Rows of `t`, a tensor in DRAM, as a Gather (only the rows move), giving a result
/// of `out` (the rows' shape, as the slice has it).
pub(super) fn dram_rows(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    t: &Tens,
    rows: Rows,
    out: &[u64],
) -> Result<Vec<Val>, At> {
    let idx = match rows {
        Rows::Known(s, n) => {
            let k = Konst::iota(DType::S32, vec![n], 0)
                .and_then(|k| Konst::compute(&[&k], DType::S32, |x| x[0] + s as f64))
                .map_err(|e| at(&st.span, e))?;
            super::emit::emit_const(lx, &st.span, &k)?
        }
        Rows::Runtime(v) => tensor_of(lx, &st.span, &v, "the row index")?,
    };
    let dims: Vec<u64> = (idx.declared_dims().iter())
        .chain(t.dims.iter().skip(1))
        .copied()
        .collect();
    let o = lx.declare(base, t.dtype, &dims);
    lx.gather(&st.span, t, &idx, &o)?;
    let o = if o.dims == out {
        o
    } else {
        super::emit::reshaped(lx, &st.span, &o, out)?
    };
    Ok(vec![Val::T(o)])
}

/// The axes a slice (or update) `sizes` long does not take whole, and a scalar tensor
/// of each one's start: the run-time index, or the known start as a constant.
fn index_operands(
    lx: &mut Lx,
    st: &Stmt,
    starts: &[Start],
    dims: &[u64],
    sizes: &[u64],
) -> Result<(Vec<usize>, Vec<Tens>), At> {
    let (mut axes, mut ts) = (Vec::new(), Vec::new());
    for (a, s) in starts.iter().enumerate() {
        if sizes[a] == dims[a] {
            continue;
        }
        let t = match s {
            Start::Known(v) => {
                let k = Konst::splat(DType::S32, vec![], *v as f64);
                super::emit::emit_const(lx, &st.span, &k)?
            }
            Start::Runtime(v) => tensor_of(lx, &st.span, v, "a start index")?,
        };
        axes.push(a);
        ts.push(t);
    }
    Ok((axes, ts))
}

/// `dynamic_update_slice %x, %update, %i0, %i1, ...`: the `DynamicUpdateSlice` kernel,
/// each axis the update does not cover whole read at its start index (known or
/// computed).
pub(super) fn dynamic_update_slice(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    vals: &[Val],
) -> Result<Vec<Val>, At> {
    if vals.len() < 2 {
        return Err(at(
            &st.span,
            "`dynamic_update_slice` needs an operand, an update and start indices",
        ));
    }
    let (xv, uv) = (&vals[0], &vals[1]);
    let (dims, udims) = (xv.dims(), uv.dims());
    if udims.len() != dims.len() || udims.iter().zip(&dims).any(|(u, d)| u > d) {
        return Err(at(
            &st.span,
            format!("the update {udims:?} does not fit the operand {dims:?}"),
        ));
    }
    if xv.dtype() != uv.dtype() {
        return Err(at(
            &st.span,
            format!("the update is {}, the operand {}", uv.dtype(), xv.dtype()),
        ));
    }
    let starts = starts(st, &vals[2..], &dims, &udims)?;
    let out = result_dims(st, &dims)?;
    let x = tensor_of(lx, &st.span, xv, "the updated operand")?;
    let u = tensor_of(lx, &st.span, uv, "the update")?;
    let (dynamic, idx) = index_operands(lx, st, &starts, &dims, &udims)?;
    if dynamic.is_empty() {
        // The update covers the whole operand: it is the result.
        return Ok(vec![Val::T(u)]);
    }
    let o = lx.declare(base, x.dtype, &out);
    let mut ins = vec![&u, &x];
    ins.extend(idx.iter());
    lx.step(&st.span, Kernel::DynamicUpdateSlice { dynamic }, &ins, &o)?;
    Ok(vec![Val::T(o)])
}

/// A `gather`'s dimension numbers and slice sizes.
struct GatherDims {
    offset_dims: Vec<i128>,
    collapsed_slice_dims: Vec<i128>,
    start_index_map: Vec<i128>,
    operand_batching_dims: Vec<i128>,
    index_vector_dim: i128,
    slice_sizes: Vec<i128>,
}

/// The `key = [..]` lists and `key = N` integers of `#stablehlo.gather<...>`'s text.
fn gather_dims(st: &Stmt) -> Result<GatherDims, At> {
    use super::lex::Tok;
    let toks = st.props.iter().chain(&st.args);
    let text = toks
        .clone()
        .find_map(|t| match &t.tok {
            Tok::Hash(h) if h.starts_with("stablehlo.gather<") => Some(h.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            at(
                &st.span,
                "`gather` needs `dimension_numbers = #stablehlo.gather<...>`",
            )
        })?;
    let inner = &text["stablehlo.gather<".len()..text.len().saturating_sub(1)];
    let mut lists: std::collections::BTreeMap<String, Vec<i128>> = Default::default();
    let mut rest = inner;
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().trim_start_matches(',').trim().to_string();
        let after = rest[eq + 1..].trim_start();
        let (value, next) = if let Some(body) = after.strip_prefix('[') {
            let close = body.find(']').unwrap_or(body.len());
            (&body[..close], body.get(close + 1..).unwrap_or(""))
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        let nums: Option<Vec<i128>> = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok())
            .collect();
        let nums = nums.ok_or_else(|| {
            at(
                &st.span,
                format!("`gather`: `{key} = {value}` is not a list of integers"),
            )
        })?;
        lists.insert(key, nums);
        rest = next;
    }
    let sizes: Vec<i128> = {
        let all: Vec<&super::lex::Token> = toks.collect();
        let at_key = all
            .iter()
            .position(|t| t.tok == Tok::Ident("slice_sizes".into()))
            .ok_or_else(|| at(&st.span, "`gather` needs `slice_sizes = array<i64: ...>`"))?;
        all[at_key + 1..]
            .iter()
            .skip_while(|t| t.tok != Tok::Punct(':'))
            .skip(1)
            .take_while(|t| t.tok != Tok::Punct('>'))
            .filter_map(|t| match t.tok {
                Tok::Int(v) => Some(v),
                _ => None,
            })
            .collect()
    };
    let mut take = |k: &str| lists.remove(k).unwrap_or_default();
    let ivd = take("index_vector_dim");
    Ok(GatherDims {
        offset_dims: take("offset_dims"),
        collapsed_slice_dims: take("collapsed_slice_dims"),
        start_index_map: take("start_index_map"),
        operand_batching_dims: take("operand_batching_dims"),
        index_vector_dim: ivd.first().copied().unwrap_or(-1),
        slice_sizes: sizes,
    })
}

/// `gather` as an embedding lookup: whole rows of the operand's first axis at indices
/// (one index per position, `index_vector_dim` the last axis, of size 1, or past the
/// last), the rows' other axes trailing the result. The operand is in DRAM (an argument
/// or a constant): a Gather op. Other dimension numbers are errors naming them.
pub(super) fn gather(lx: &mut Lx, st: &Stmt, base: &str, vals: &[Val]) -> Result<Vec<Val>, At> {
    if vals.len() != 2 {
        return Err(at(&st.span, "`gather` takes an operand and its indices"));
    }
    let (x, ix) = (&vals[0], &vals[1]);
    let (xd, id) = (x.dims(), ix.dims());
    let g = gather_dims(st)?;
    let q = id.len() as i128;
    let bad = |what: String| {
        at(
            &st.span,
            format!(
                "`gather`: {what}; mnsim reads an embedding lookup (whole rows of the operand's first axis: start_index_map = [0], collapsed_slice_dims = [0], slice_sizes = [1, ...the other axes], offset_dims trailing, one index per position)"
            ),
        )
    };
    if xd.is_empty() {
        return Err(bad("the operand is a scalar".into()));
    }
    if g.start_index_map != [0]
        || g.collapsed_slice_dims != [0]
        || !g.operand_batching_dims.is_empty()
    {
        return Err(bad(format!(
            "start_index_map {:?}, collapsed_slice_dims {:?}, operand_batching_dims {:?}",
            g.start_index_map, g.collapsed_slice_dims, g.operand_batching_dims
        )));
    }
    let whole: Vec<i128> = std::iter::once(1)
        .chain(xd[1..].iter().map(|&d| d as i128))
        .collect();
    if g.slice_sizes != whole {
        return Err(bad(format!(
            "slice_sizes {:?} are not whole rows {whole:?}",
            g.slice_sizes
        )));
    }
    let batch: Vec<u64> = match g.index_vector_dim {
        v if v == q => id.clone(),
        v if v >= 0 && v == q - 1 && id[v as usize] == 1 => id[..id.len() - 1].to_vec(),
        v => {
            return Err(bad(format!(
                "index_vector_dim {v} is not the last axis of the indices {id:?} (of size 1)"
            )));
        }
    };
    let nb = batch.len() as i128;
    let trailing: Vec<i128> = (nb..nb + xd.len() as i128 - 1).collect();
    if g.offset_dims != trailing {
        return Err(bad(format!(
            "offset_dims {:?} are not the trailing axes {trailing:?}",
            g.offset_dims
        )));
    }
    if ix.dtype().is_float() || ix.dtype() == DType::Pred {
        return Err(at(
            &st.span,
            format!("`gather`: the indices are {}, not integers", ix.dtype()),
        ));
    }
    let out: Vec<u64> = batch.iter().chain(&xd[1..]).copied().collect();
    let out = result_dims(st, &out)?;
    let table = match x {
        Val::C(k) => super::emit::emit_const(lx, &st.span, k)?,
        Val::T(t) if lx.in_dram(t) => t.clone(),
        _ => {
            return Err(at(
                &st.span,
                "`gather` from a tensor the program computes is not supported: mnsim gathers rows of a tensor in DRAM (an argument or a constant)",
            ));
        }
    };
    // The indices without their index axis: a broadcast that only added it is its
    // source.
    let idx = match ix {
        Val::B { src, map, .. }
            if map.is_sorted()
                && src.dims.iter().product::<u64>() == batch.iter().product::<u64>() =>
        {
            src.clone()
        }
        _ => tensor_of(lx, &st.span, ix, "the indices")?,
    };
    let idx = super::emit::reshaped(lx, &st.span, &idx, &batch)?;
    let dims: Vec<u64> = (idx.declared_dims().iter())
        .chain(table.dims.iter().skip(1))
        .copied()
        .collect();
    let o = lx.declare(base, table.dtype, &dims);
    lx.gather(&st.span, &table, &idx, &o)?;
    let o = if o.dims == out {
        o
    } else {
        super::emit::reshaped(lx, &st.span, &o, &out)?
    };
    Ok(vec![Val::T(o)])
}
