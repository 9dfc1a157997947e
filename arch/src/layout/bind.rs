//! Binding a parsed layout to a machine, a logical shape and an element type
//! (`TensorLayout::parse`/`bind`): every rule of docs/layout.md, each with an error
//! pointing at the offending text.

use super::inverse::{Inverse, build_inverse, checked_product, max_value};
use super::{AxisName, Class, LayoutError, LayoutExpr, LevelUse, SubAxis, TensorLayout};
use crate::dtype::DType;
use crate::machine::Machine;
use std::ops::Range;

const CLASS_NAMES: [&str; 3] = ["memory", "W", "Time"];

impl TensorLayout {
    /// Parses and binds in one step. `shape` is the logical shape; `None` takes it
    /// from the pad prefix or the group products.
    pub fn parse(
        text: &str,
        machine: &Machine,
        shape: Option<&[u64]>,
        dtype: DType,
    ) -> Result<Self, LayoutError> {
        let expr = LayoutExpr::parse(text)?;
        Self::bind(&expr, machine, shape, dtype, false)
    }

    /// Binds a parsed layout. With `implicit_pad`, a logical shape smaller than the
    /// group products is accepted as padding even without a pad prefix (used for
    /// bounded dynamic dimensions laid out at their bound).
    pub fn bind(
        expr: &LayoutExpr,
        machine: &Machine,
        shape: Option<&[u64]>,
        dtype: DType,
        implicit_pad: bool,
    ) -> Result<Self, LayoutError> {
        let whole = 0..expr.group_spans.last().map_or(0, |s| s.end);
        let addr = machine.addressable_levels();
        let level_names: Vec<&str> = addr.iter().map(|l| l.name.as_str()).collect();

        // Resolve names.
        let resolve = |name: &str, span: &Range<usize>| -> Result<usize, LayoutError> {
            if let Some(i) = level_names.iter().position(|n| *n == name) {
                return Ok(i);
            }
            if let Some(l) = machine.levels.iter().find(|l| l.name == name) {
                let into = addr
                    .iter()
                    .find(|a| a.folded.iter().any(|&f| machine.levels[f].name == l.name))
                    .map_or("nothing".to_string(), |a| a.name.clone());
                return Err(LayoutError::new(
                    format!(
                        "level `{name}` is not addressable on {} (it folds into {into})",
                        machine.name
                    ),
                    span.clone(),
                ));
            }
            let hint = level_names
                .iter()
                .copied()
                .chain(["W", "Time"])
                .find(|n| n.eq_ignore_ascii_case(name))
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default();
            Err(LayoutError::new(
                format!(
                    "unknown level `{name}`: {} has {}, plus W and Time{hint}",
                    machine.name,
                    level_names.join(", ")
                ),
                span.clone(),
            ))
        };

        // Element slots per word.
        let word_bytes = machine.word_bytes.max(1);
        if dtype.bytes() > word_bytes {
            return Err(LayoutError::new(
                format!(
                    "{dtype} elements ({} bytes) do not fit a {word_bytes}-byte word of {}",
                    dtype.bytes(),
                    machine.name
                ),
                whole,
            ));
        }
        let slots = word_bytes / dtype.bytes();

        // Classes: 0 mem, 1 W, 2 Time, 3+i level i.
        let nclass = 3 + addr.len();
        let class_of = |n: &AxisName, span: &Range<usize>| -> Result<usize, LayoutError> {
            Ok(match n {
                AxisName::Mem => 0,
                AxisName::W => 1,
                AxisName::Time => 2,
                AxisName::Level(l) => 3 + resolve(l, span)?,
            })
        };
        let class_name = |c: usize| -> String {
            if c < 3 {
                CLASS_NAMES[c].to_string()
            } else {
                format!("level {}", level_names[c - 3])
            }
        };

        // Gather sub-axes per class in order of appearance.
        let mut members: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nclass];
        for (g, subs) in expr.groups.iter().enumerate() {
            for (k, s) in subs.iter().enumerate() {
                members[class_of(&s.name, &s.span)?].push((g, k));
            }
        }

        // Resolve strides: all given or all omitted per class (one alone may omit).
        let mut strides: Vec<Vec<u64>> = expr.groups.iter().map(|g| vec![0; g.len()]).collect();
        for (c, ms) in members.iter().enumerate() {
            let given = ms
                .iter()
                .filter(|&&(g, k)| expr.groups[g][k].stride.is_some())
                .count();
            if given == ms.len() {
                for &(g, k) in ms {
                    let st = expr.groups[g][k].stride.unwrap_or(1);
                    if st == 0 && expr.groups[g][k].size > 1 {
                        return Err(LayoutError::new(
                            format!(
                                "stride 0 in `{}` maps several indices to one place",
                                expr.groups[g][k]
                            ),
                            expr.groups[g][k].span.clone(),
                        ));
                    }
                    strides[g][k] = st;
                }
            } else if given == 0 {
                let mut acc = 1u64;
                for &(g, k) in ms.iter().rev() {
                    strides[g][k] = acc;
                    acc = acc.checked_mul(expr.groups[g][k].size).ok_or_else(|| {
                        LayoutError::new("sizes overflow 64 bits", expr.groups[g][k].span.clone())
                    })?;
                }
            } else {
                let (g, k) = *ms
                    .iter()
                    .find(|&&(g, k)| expr.groups[g][k].stride.is_none())
                    .unwrap_or(&ms[0]);
                return Err(LayoutError::new(
                    format!(
                        "strides of the {} sub-axes must be all given or all omitted; `{}` omits its stride",
                        class_name(c),
                        expr.groups[g][k]
                    ),
                    expr.groups[g][k].span.clone(),
                ));
            }
        }

        // Broadcast list.
        let mut explicit_bcast = vec![false; addr.len()];
        for b in &expr.bcast {
            let (n, sp) = (&b.name, &b.span);
            if n == "W" || n == "Time" {
                return Err(LayoutError::new(
                    format!("`{n}` cannot be broadcast: only machine levels can"),
                    sp.clone(),
                ));
            }
            let i = resolve(n, sp)?;
            if !members[3 + i].is_empty() {
                let (g, k) = members[3 + i][0];
                return Err(LayoutError::new(
                    format!(
                        "B@ names level `{n}`, but `{}` already splits it",
                        expr.groups[g][k]
                    ),
                    sp.clone(),
                ));
            }
            if explicit_bcast[i] {
                return Err(LayoutError::new(
                    format!("level `{n}` is named twice in B@"),
                    sp.clone(),
                ));
            }
            explicit_bcast[i] = true;
            // `8_L2B:1`: replicated over the first `size` positions, stepping by `stride`.
            // The whole level (size = fan-out, stride 1) is `B@[L2B]`.
            let fan = addr[i].fanout;
            let size = b.size.unwrap_or(fan);
            if size > fan {
                return Err(LayoutError::new(
                    format!("B@[{b}] replicates over {size} {n} positions, but {n} has only {fan}"),
                    sp.clone(),
                ));
            }
            let stride = b.stride.unwrap_or(1);
            if size < fan || (stride != 1 && size > 1) {
                return Err(LayoutError::new(
                    format!(
                        "B@[{b}] replicates over {size} of the {fan} {n} positions (stride {stride}); \
                         only the whole level is supported: write B@[{n}] or B@[{fan}_{n}:1]"
                    ),
                    sp.clone(),
                ));
            }
        }

        // Resolved groups.
        let groups: Vec<Vec<SubAxis>> = expr
            .groups
            .iter()
            .enumerate()
            .map(|(g, subs)| {
                subs.iter()
                    .enumerate()
                    .map(|(k, s)| {
                        let c = class_of(&s.name, &s.span).unwrap_or(0);
                        let class = match c {
                            0 => Class::Mem,
                            1 => Class::W,
                            2 => Class::Time,
                            l => Class::Level(l - 3),
                        };
                        SubAxis {
                            size: s.size,
                            class,
                            stride: strides[g][k],
                        }
                    })
                    .collect()
            })
            .collect();

        // Shapes.
        let mut padded = Vec::with_capacity(groups.len());
        for (g, subs) in groups.iter().enumerate() {
            let p = checked_product(subs.iter().map(|s| s.size)).ok_or_else(|| {
                LayoutError::new("group size overflows 64 bits", expr.group_spans[g].clone())
            })?;
            padded.push(p);
        }
        let logical: Vec<u64> = match (&expr.pad, shape) {
            (Some((p, sp)), Some(s)) if p.as_slice() != s => {
                return Err(LayoutError::new(
                    format!(
                        "the pad prefix {} disagrees with the tensor's shape {}",
                        fmt_dims(p),
                        fmt_dims(s)
                    ),
                    sp.clone(),
                ));
            }
            (Some((p, _)), _) => p.clone(),
            (None, Some(s)) => s.to_vec(),
            (None, None) => padded.clone(),
        };
        if logical.len() != groups.len() {
            let sp = expr.pad.as_ref().map_or(whole.clone(), |(_, s)| s.clone());
            return Err(LayoutError::new(
                format!(
                    "the layout has {} group(s) but the shape {} has rank {}",
                    groups.len(),
                    fmt_dims(&logical),
                    logical.len()
                ),
                sp,
            ));
        }
        for (g, (&l, &p)) in logical.iter().zip(&padded).enumerate() {
            let may_pad = expr.pad.is_some() || implicit_pad;
            if (!may_pad && l != p) || l > p {
                let subs: Vec<String> = expr.groups[g].iter().map(ToString::to_string).collect();
                let why = if l > p {
                    ""
                } else {
                    " (write a pad prefix to pad it)"
                };
                return Err(LayoutError::new(
                    format!(
                        "axis {g} has {l} elements but its group ({}) holds {p}{why}",
                        subs.join(", ")
                    ),
                    expr.group_spans[g].clone(),
                ));
            }
        }

        // Per-class checks and inverses.
        let class_axes =
            |c: usize| -> Vec<SubAxis> { members[c].iter().map(|&(g, k)| groups[g][k]).collect() };
        let first_span = |c: usize| -> Range<usize> {
            members[c]
                .first()
                .map_or(whole.clone(), |&(g, k)| expr.groups[g][k].span.clone())
        };
        let subs_text = |c: usize| -> String {
            members[c]
                .iter()
                .map(|&(g, k)| format!("`{}`", expr.groups[g][k]))
                .collect::<Vec<_>>()
                .join(", ")
        };

        let mut levels = Vec::with_capacity(addr.len());
        let mut inv_levels = Vec::with_capacity(addr.len());
        for (i, a) in addr.iter().enumerate() {
            let axes = class_axes(3 + i);
            if axes.is_empty() {
                levels.push(LevelUse {
                    name: a.name.clone(),
                    fanout: a.fanout,
                    replicated: true,
                    used: a.fanout,
                });
                inv_levels.push(Inverse::Greedy(Vec::new()));
                continue;
            }
            let max = max_value(&axes).unwrap_or(u64::MAX);
            if max >= a.fanout {
                // Point at the sub-axis that pushes past the fan-out.
                let (g, k) = members[3 + i]
                    .iter()
                    .copied()
                    .max_by_key(|&(g, k)| {
                        (groups[g][k].size - 1).saturating_mul(groups[g][k].stride)
                    })
                    .unwrap_or(members[3 + i][0]);
                return Err(LayoutError::new(
                    format!(
                        "{} reach(es) {} position {}, but {} has only {} (positions 0..{})",
                        subs_text(3 + i),
                        a.name,
                        max,
                        a.name,
                        a.fanout,
                        a.fanout - 1
                    ),
                    expr.groups[g][k].span.clone(),
                ));
            }
            let inv = build_inverse(&axes, max + 1).map_err(|()| {
                LayoutError::new(
                    format!(
                        "two index combinations of {} reach the same {} position",
                        subs_text(3 + i),
                        a.name
                    ),
                    first_span(3 + i),
                )
            })?;
            let used = checked_product(axes.iter().map(|s| s.size)).unwrap_or(u64::MAX);
            levels.push(LevelUse {
                name: a.name.clone(),
                fanout: a.fanout,
                replicated: false,
                used,
            });
            inv_levels.push(inv);
        }

        let mut inv = Vec::with_capacity(3);
        for (c, cname) in CLASS_NAMES.iter().enumerate() {
            let axes = class_axes(c);
            let max = max_value(&axes)
                .ok_or_else(|| LayoutError::new("strides overflow 64 bits", first_span(c)))?;
            if c == 1 && max >= slots {
                return Err(LayoutError::new(
                    format!(
                        "W sub-axes {} reach slot {max}, but a {word_bytes}-byte word holds {slots} {dtype} element(s)",
                        subs_text(1)
                    ),
                    first_span(1),
                ));
            }
            let i = build_inverse(&axes, max.saturating_add(1)).map_err(|()| {
                LayoutError::new(
                    format!(
                        "two elements share a (PE, word, slot, step) cell: the {} sub-axes {} overlap",
                        cname,
                        subs_text(c)
                    ),
                    first_span(c),
                )
            })?;
            inv.push(i);
        }
        let mem_axes = class_axes(0);
        let footprint_words = max_value(&mem_axes).map_or(u64::MAX, |m| m.saturating_add(1));
        let lm = machine.leaf_memory_bytes();
        let fp_bytes = footprint_words.saturating_mul(word_bytes);
        if fp_bytes > lm {
            return Err(LayoutError::new(
                format!(
                    "LM footprint of {footprint_words} words ({fp_bytes} bytes) per PE exceeds the PE's {lm}-byte memory on {}",
                    machine.name
                ),
                first_span(0),
            ));
        }

        let mut flat = Vec::new();
        for (g, subs) in groups.iter().enumerate() {
            let mut radix = 1u64;
            let mut tmp = Vec::with_capacity(subs.len());
            for s in subs.iter().rev() {
                tmp.push((g, *s, radix));
                radix = radix.saturating_mul(s.size);
            }
            tmp.reverse();
            flat.extend(tmp);
        }

        let mut inv = inv.into_iter();
        let (inv_mem, inv_w, inv_time) = (
            inv.next().unwrap(),
            inv.next().unwrap(),
            inv.next().unwrap(),
        );
        Ok(TensorLayout {
            logical,
            padded,
            groups,
            levels,
            dtype,
            word_bytes,
            slots,
            footprint_words,
            flat,
            inv_mem,
            inv_w,
            inv_time,
            inv_levels,
        })
    }
}

fn fmt_dims(d: &[u64]) -> String {
    let s: Vec<String> = d.iter().map(u64::to_string).collect();
    format!("[{}]", s.join(","))
}
