//! `convolution` → the `Conv` kernel's forward pass (the kernel oneDNN's Convolution
//! uses). The data operand and the result are read in one of the kernel's data formats
//! (`[b, f, 0, 1]` is NCX, `[b, 0, 1, f]` NXC) and the weights in one of its weight
//! formats (`[o, i, 0, 1]` OIX, `[0, 1, i, o]` XIO, `[i, o, 0, 1]` IOX, `[0, 1, o, i]`
//! XOI); other dimension numbers `Transpose` the operands into NXC and XIO and the
//! result out of the kernel's format. `feature_group_count` is the kernel's groups,
//! `stride`, `pad` and `rhs_dilate` its strides, pads and dilations. A transposed
//! convolution (`lhs_dilate`), `batch_group_count` > 1, a reversed window and negative
//! padding are errors naming the attribute.

use super::emit::{tensor_of, transposed};
use super::lex::{Tok, Token};
use super::lower::{Lx, Val};
use super::parse::{At, Stmt, at};
use mnsim_kernels::{Conv, ConvPass, Kernel, WeightsFormat};
use std::ops::Range;

/// Where one operand's dimensions are: the first letter's (`b`, or the weights' `i`),
/// the second's (`f`, or `o`), and spatial dimension `k` at `spatial[k]`.
struct Axes {
    first: usize,
    second: usize,
    spatial: Vec<usize>,
}

/// The span of `key` where the op's tokens write `key =`.
fn key_span(st: &Stmt, key: &str) -> Option<Range<usize>> {
    st.args
        .windows(2)
        .find(|w| w[0].tok == Tok::Ident(key.into()) && w[1].tok == Tok::Punct('='))
        .map(|w| w[0].span.clone())
}

/// One list of `dim_numbers` (`[b, 0, 1, f]`) starting at token `i`: its axes and the
/// token after it.
fn axes_list(
    toks: &[Token],
    i: usize,
    letters: [&str; 2],
    what: &str,
    span: &Range<usize>,
) -> Result<(Axes, usize), At> {
    let bad = |m: String| at(span, format!("`dim_numbers`: {what} {m}"));
    if toks.get(i).map(|t| &t.tok) != Some(&Tok::Punct('[')) {
        return Err(bad("must be a list such as `[b, 0, 1, f]`".into()));
    }
    let (mut first, mut second) = (None, None);
    let mut spatial: Vec<(i128, usize)> = Vec::new();
    let mut pos = 0usize;
    let mut j = i + 1;
    loop {
        let Some(t) = toks.get(j) else {
            return Err(bad("is not closed by `]`".into()));
        };
        match &t.tok {
            Tok::Punct(']') => break,
            Tok::Punct(',') => {}
            Tok::Ident(l) if l == letters[0] || l == letters[1] => {
                let slot = if l == letters[0] {
                    &mut first
                } else {
                    &mut second
                };
                if slot.replace(pos).is_some() {
                    return Err(bad(format!("names `{l}` twice")));
                }
                pos += 1;
            }
            Tok::Int(k) if *k >= 0 => {
                spatial.push((*k, pos));
                pos += 1;
            }
            _ => {
                return Err(bad(format!(
                    "holds something other than `{}`, `{}` and spatial indices",
                    letters[0], letters[1]
                )));
            }
        }
        j += 1;
    }
    let (Some(first), Some(second)) = (first, second) else {
        return Err(bad(format!(
            "must name `{}` and `{}` once each",
            letters[0], letters[1]
        )));
    };
    spatial.sort_unstable();
    if spatial
        .iter()
        .enumerate()
        .any(|(k, &(s, _))| s != k as i128)
    {
        return Err(bad(format!(
            "must number its spatial dimensions 0 to {} once each",
            spatial.len().saturating_sub(1)
        )));
    }
    Ok((
        Axes {
            first,
            second,
            spatial: spatial.into_iter().map(|(_, p)| p).collect(),
        },
        j + 1,
    ))
}

/// `dim_numbers = [..]x[..]->[..]`: the data operand's, the weights' and the result's axes.
fn dim_numbers(st: &Stmt) -> Result<(Axes, Axes, Axes), At> {
    let toks = &st.args;
    let span = key_span(st, "dim_numbers").ok_or_else(|| {
        at(
            &st.name_span,
            "`convolution` needs `dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`",
        )
    })?;
    let i = toks
        .iter()
        .position(|t| t.span == span)
        .map_or(toks.len(), |p| p + 2);
    let (lhs, j) = axes_list(toks, i, ["b", "f"], "the data operand's list", &span)?;
    if toks.get(j).map(|t| &t.tok) != Some(&Tok::Ident("x".into())) {
        return Err(at(
            &span,
            "`dim_numbers`: expected `x` after the data operand's list",
        ));
    }
    let (rhs, j) = axes_list(toks, j + 1, ["i", "o"], "the weights' list", &span)?;
    if toks.get(j).map(|t| &t.tok) != Some(&Tok::Arrow) {
        return Err(at(
            &span,
            "`dim_numbers`: expected `->` after the weights' list",
        ));
    }
    let (out, _) = axes_list(toks, j + 1, ["b", "f"], "the result's list", &span)?;
    Ok((lhs, rhs, out))
}

/// A value of the `window = {...}` dictionary: an integer (`true`/`false` as 1/0) or a
/// list of values.
enum W {
    I(i128),
    L(Vec<W>),
}

fn window_value(toks: &[Token], i: usize, span: &Range<usize>) -> Result<(W, usize), At> {
    match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Int(v)) if i64::try_from(*v).is_ok() => Ok((W::I(*v), i + 1)),
        Some(Tok::Ident(b)) if b == "true" || b == "false" => {
            Ok((W::I(i128::from(b == "true")), i + 1))
        }
        Some(Tok::Punct('[')) => {
            let mut out = Vec::new();
            let mut j = i + 1;
            loop {
                match toks.get(j).map(|t| &t.tok) {
                    Some(Tok::Punct(']')) => return Ok((W::L(out), j + 1)),
                    Some(Tok::Punct(',')) => j += 1,
                    Some(_) => {
                        let (v, k) = window_value(toks, j, span)?;
                        out.push(v);
                        j = k;
                    }
                    None => return Err(at(span, "this list is not closed by `]`")),
                }
            }
        }
        _ => Err(at(span, "expected an integer of 64 bits or a list")),
    }
}

/// The entries of `window = {stride = [..], pad = [[..]], ...}`: (key, its span, value).
fn window(st: &Stmt) -> Result<Vec<(String, Range<usize>, W)>, At> {
    let toks = &st.args;
    let Some(span) = key_span(st, "window") else {
        return Ok(Vec::new());
    };
    let mut i = toks
        .iter()
        .position(|t| t.span == span)
        .map_or(toks.len(), |p| p + 2);
    if toks.get(i).map(|t| &t.tok) != Some(&Tok::Punct('{')) {
        return Err(at(
            &span,
            "`window` must be a dictionary `{stride = [..], ...}`",
        ));
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        match toks.get(i).map(|t| (&t.tok, t.span.clone())) {
            Some((Tok::Punct('}'), _)) => return Ok(out),
            Some((Tok::Punct(','), _)) => i += 1,
            Some((Tok::Ident(k), ks))
                if toks.get(i + 1).map(|t| &t.tok) == Some(&Tok::Punct('=')) =>
            {
                let (v, j) = window_value(toks, i + 2, &ks)?;
                out.push((k.clone(), ks, v));
                i = j;
            }
            Some((_, s)) => return Err(at(&s, "expected `key = value` in `window`")),
            None => return Err(at(&span, "`window = {` is not closed by `}`")),
        }
    }
}

/// A flat list of `d` integers.
fn flat(w: &W, key: &str, d: usize, span: &Range<usize>) -> Result<Vec<i128>, At> {
    let v: Option<Vec<i128>> = match w {
        W::L(l) => l
            .iter()
            .map(|x| match x {
                W::I(v) => Some(*v),
                W::L(_) => None,
            })
            .collect(),
        W::I(_) => None,
    };
    match v {
        Some(v) if v.len() == d => Ok(v),
        _ => Err(at(
            span,
            format!("`{key}` must be a list of {d} integers, one per spatial dimension"),
        )),
    }
}

/// `pad = [[lo, hi], ...]`: `d` pairs.
fn pairs(w: &W, d: usize, span: &Range<usize>) -> Result<Vec<(i128, i128)>, At> {
    let bad = || {
        at(
            span,
            format!("`pad` must be {d} pairs `[lo, hi]`, one per spatial dimension"),
        )
    };
    let W::L(l) = w else { return Err(bad()) };
    if l.len() != d {
        return Err(bad());
    }
    l.iter()
        .map(|p| match p {
            W::L(x) => match x.as_slice() {
                [W::I(a), W::I(b)] => Ok((*a, *b)),
                _ => Err(bad()),
            },
            W::I(_) => Err(bad()),
        })
        .collect()
}

/// `key = N` of the attribute dictionary (1 when absent), and where it is written.
fn count_attr(st: &Stmt, key: &str) -> (i128, Range<usize>) {
    (
        super::ops::attr_int(&st.args, key).unwrap_or(1),
        key_span(st, key).unwrap_or_else(|| st.name_span.clone()),
    )
}

/// Each `#stablehlo<precision X>` of `precision_config` must be DEFAULT, HIGH or
/// HIGHEST: mnsim computes at the operands' dtype whichever is asked.
fn precision(st: &Stmt) -> Result<(), At> {
    let Some(span) = key_span(st, "precision_config") else {
        return Ok(());
    };
    let i = st
        .args
        .iter()
        .position(|t| t.span == span)
        .map_or(st.args.len(), |p| p + 2);
    for t in st.args.iter().skip(i) {
        match &t.tok {
            Tok::Punct('[' | ',') => {}
            Tok::Punct(']') => return Ok(()),
            Tok::Hash(h)
                if ["DEFAULT", "HIGH", "HIGHEST"]
                    .iter()
                    .any(|p| h.replace(' ', "") == format!("stablehlo<precision{p}>")) => {}
            _ => {
                return Err(at(
                    &span,
                    "`precision_config` must hold `#stablehlo<precision DEFAULT>`, `HIGH` or `HIGHEST` (mnsim computes at the operands' dtype)",
                ));
            }
        }
    }
    Ok(())
}

/// `convolution(%x, %w)`: see the module's comment.
pub(super) fn convolution(
    lx: &mut Lx,
    st: &Stmt,
    base: &str,
    vals: &[Val],
) -> Result<Vec<Val>, At> {
    super::ops::count(st, vals, 2)?;
    let (l, r, o) = dim_numbers(st)?;
    let d = l.spatial.len();
    let dn = key_span(st, "dim_numbers").unwrap_or_else(|| st.name_span.clone());
    if d == 0 {
        return Err(at(
            &dn,
            "a convolution without spatial dimensions is not supported (the Conv kernel needs 1 to 3; it is a dot_general)",
        ));
    }
    if r.spatial.len() != d || o.spatial.len() != d {
        return Err(at(
            &dn,
            "`dim_numbers`: the data operand, the weights and the result must have the same spatial dimensions",
        ));
    }
    for (v, what) in [(&vals[0], "the data operand"), (&vals[1], "the weights")] {
        if v.dims().len() != d + 2 {
            return Err(at(
                &dn,
                format!(
                    "`dim_numbers` names {} dimensions, {what} has {}",
                    d + 2,
                    v.dims().len()
                ),
            ));
        }
    }
    let Window { strides, pads, dil } = conv_window(st, d)?;
    let groups = group_count(st)?;
    precision(st)?;
    let x = tensor_of(lx, &st.span, &vals[0], "the data operand")?;
    let w = tensor_of(lx, &st.span, &vals[1], "the weights")?;
    // The data format: the operand's when the kernel has it, else the result's, else NXC.
    let nxc = |a: &Axes| [vec![a.first], a.spatial.clone(), vec![a.second]].concat();
    let ncx = |a: &Axes| [vec![a.first, a.second], a.spatial.clone()].concat();
    let ident = |p: &[usize]| p.iter().enumerate().all(|(i, &x)| i == x);
    let cl = ident(&nxc(&l)) || (!ident(&ncx(&l)) && !ident(&ncx(&o)));
    let x = transposed(lx, &st.span, &x, &if cl { nxc(&l) } else { ncx(&l) })?;
    // The weights' format: theirs when the kernel has it, else XIO.
    let (i_, o_, sp) = (r.first, r.second, r.spatial.clone());
    let formats = [
        (WeightsFormat::OIX, [vec![o_, i_], sp.clone()].concat()),
        (WeightsFormat::XIO, [sp.clone(), vec![i_, o_]].concat()),
        (WeightsFormat::IOX, [vec![i_, o_], sp.clone()].concat()),
        (WeightsFormat::XOI, [sp.clone(), vec![o_, i_]].concat()),
    ];
    let (weights, w) = match formats.iter().find(|(_, p)| ident(p)) {
        Some((f, _)) => (*f, w),
        None => (
            WeightsFormat::XIO,
            transposed(lx, &st.span, &w, &formats[1].1)?,
        ),
    };
    let conv = Conv {
        pass: ConvPass::Forward,
        strides: strides.iter().map(|&v| v as u64).collect(),
        dilations: dil.iter().map(|&v| v as u64).collect(),
        pads_begin: pads.iter().map(|p| p.0 as u64).collect(),
        pads_end: pads.iter().map(|p| p.1 as u64).collect(),
        groups: groups as u64,
        channels_last: cl,
        weights,
        shape: Vec::new(),
    };
    let kernel = Kernel::Conv(conv);
    let kdims = mnsim_kernels::output_shape(&kernel, &[&x.dims, &w.dims])
        .map_err(|e| at(&st.span, e.message))?;
    // Result axis j is the kernel's output axis perm[j].
    let kidx = |pos: usize| -> usize {
        if pos == o.first {
            0
        } else if pos == o.second {
            if cl { d + 1 } else { 1 }
        } else {
            let k = o.spatial.iter().position(|&p| p == pos).unwrap_or(0);
            if cl { 1 + k } else { 2 + k }
        }
    };
    let perm: Vec<usize> = (0..d + 2).map(kidx).collect();
    let want: Vec<u64> = perm.iter().map(|&p| kdims[p]).collect();
    super::ops::result_dims(st, &want)?;
    let dtype = super::ops::result_ty(st)?.dtype;
    let y = lx.declare(base, dtype, &kdims);
    lx.step(&st.span, kernel, &[&x, &w], &y)?;
    Ok(vec![Val::T(transposed(lx, &st.span, &y, &perm)?)])
}

/// A convolution's window: strides, padding (before, after) and the weights' dilation
/// per spatial dimension.
struct Window {
    strides: Vec<i128>,
    pads: Vec<(i128, i128)>,
    dil: Vec<i128>,
}

/// The `window` attribute of a convolution of `d` spatial dimensions, each key checked
/// where it is written (the default of a missing key: stride 1, no padding, dilation 1).
fn conv_window(st: &Stmt, d: usize) -> Result<Window, At> {
    let (mut strides, mut pads, mut dil) =
        (vec![1i128; d], vec![(0i128, 0i128); d], vec![1i128; d]);
    for (key, ks, w) in window(st)? {
        match key.as_str() {
            "stride" => {
                strides = flat(&w, &key, d, &ks)?;
                if strides.iter().any(|&v| v < 1) {
                    return Err(at(&ks, "`stride` must be at least 1"));
                }
            }
            "rhs_dilate" => {
                dil = flat(&w, &key, d, &ks)?;
                if dil.iter().any(|&v| v < 1) {
                    return Err(at(&ks, "`rhs_dilate` must be at least 1"));
                }
            }
            "pad" => {
                pads = pairs(&w, d, &ks)?;
                if pads.iter().any(|&(a, b)| a < 0 || b < 0) {
                    return Err(at(
                        &ks,
                        "negative `pad` (cropping the input) is not supported: the Conv kernel pads with zeros only",
                    ));
                }
            }
            "lhs_dilate" => {
                if flat(&w, &key, d, &ks)?.iter().any(|&v| v != 1) {
                    return Err(at(
                        &ks,
                        "`lhs_dilate` other than 1 (a transposed convolution) is not supported: the Conv kernel's BackwardData pass computes it only with the window reversed, and mnsim has no kernel to reverse the weights",
                    ));
                }
            }
            "reverse" => {
                if flat(&w, &key, d, &ks)?.iter().any(|&v| v != 0) {
                    return Err(at(
                        &ks,
                        "a reversed window (`reverse`) is not supported: the Conv kernel reads its window forward, and mnsim has no kernel to reverse the weights",
                    ));
                }
            }
            other => {
                return Err(at(
                    &ks,
                    format!(
                        "unknown window attribute `{other}` (stride, pad, lhs_dilate, rhs_dilate, reverse)"
                    ),
                ));
            }
        }
    }
    Ok(Window { strides, pads, dil })
}

/// `feature_group_count`, with `batch_group_count` checked to be 1.
fn group_count(st: &Stmt) -> Result<i128, At> {
    let (bg, bspan) = count_attr(st, "batch_group_count");
    if bg != 1 {
        return Err(at(
            &bspan,
            format!(
                "`batch_group_count` {bg} is not supported: mnsim maps a convolution with batch groups (JAX's weight gradient) to no Conv pass; only 1 is"
            ),
        ));
    }
    let (groups, gspan) = count_attr(st, "feature_group_count");
    if groups < 1 || groups > i128::from(u32::MAX) {
        return Err(at(
            &gspan,
            format!("`feature_group_count` must be at least 1, got {groups}"),
        ));
    }
    Ok(groups)
}
