//! TensorLayout (docs/layout.md): how a tensor is spread over the machine tree.
//!
//! [`LayoutExpr`] is the parsed text; [`TensorLayout`] is a layout bound to a machine,
//! a logical shape and an element type, with every stride resolved and every rule of
//! docs/layout.md checked. A bound layout maps logical indices to cells (a position per
//! addressable level, an LM word, a slot in the word, a time step) and back, and
//! counts in closed form what timing mode needs.

mod parse;

pub use parse::{AxisName, BcastExpr, LayoutExpr, SubAxisExpr};

use crate::dtype::DType;
use crate::machine::Machine;
use std::fmt;
use std::ops::Range;

/// A layout error: a message naming the offending text, and its byte range in the
/// layout string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError {
    pub message: String,
    pub span: Range<usize>,
}

impl LayoutError {
    pub fn new(message: impl Into<String>, span: Range<usize>) -> Self {
        LayoutError {
            message: message.into(),
            span,
        }
    }
    /// Byte offset of the offending text.
    pub fn offset(&self) -> usize {
        self.span.start
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.span.start)
    }
}

impl std::error::Error for LayoutError {}

/// The class of a resolved sub-axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    Mem,
    /// Index into [`TensorLayout::levels`].
    Level(usize),
    W,
    Time,
}

/// A sub-axis with its stride resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubAxis {
    pub size: u64,
    pub class: Class,
    pub stride: u64,
}

/// How one addressable level is used by a layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelUse {
    pub name: String,
    /// Positions among siblings (folded fan-out).
    pub fanout: u64,
    /// No sub-axis names this level: every position holds a copy.
    pub replicated: bool,
    /// Number of distinct positions the level's sub-axes reach (= fanout if replicated).
    pub used: u64,
}

/// Where one element lives: one cell per replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Position per addressable level, root-most first; `None` = replicated (`*`).
    pub pos: Vec<Option<u64>>,
    /// LM word address.
    pub addr: u64,
    /// Slot inside the word.
    pub w: u64,
    /// Time step.
    pub t: u64,
}

/// Inverse of one class's strided map.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Inverse {
    /// Strides are nested (each larger than the span of all smaller ones): greedy
    /// division inverts the map. Sub-axis ids sorted by stride, descending.
    Greedy(Vec<usize>),
    /// Irregular strides: an explicit table value → flat combination index (u64::MAX = unused).
    Table(Vec<u64>, Vec<usize>),
}

/// A layout bound to a machine, a logical shape and an element type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorLayout {
    logical: Vec<u64>,
    padded: Vec<u64>,
    groups: Vec<Vec<SubAxis>>,
    levels: Vec<LevelUse>,
    dtype: DType,
    word_bytes: u64,
    slots: u64,
    footprint_words: u64,
    /// Flat list of all sub-axes (group-major) with the radix of each inside its group.
    flat: Vec<(usize, SubAxis, u64)>,
    inv_mem: Inverse,
    inv_w: Inverse,
    inv_time: Inverse,
    inv_levels: Vec<Inverse>,
}

const CLASS_NAMES: [&str; 3] = ["memory", "W", "Time"];

fn checked_product(it: impl IntoIterator<Item = u64>) -> Option<u64> {
    it.into_iter().try_fold(1u64, |a, b| a.checked_mul(b))
}

/// Largest value `Σ (size-1)·stride` of a class, checked.
fn max_value(axes: &[SubAxis]) -> Option<u64> {
    axes.iter().try_fold(0u64, |a, s| {
        (s.size - 1)
            .checked_mul(s.stride)
            .and_then(|v| a.checked_add(v))
    })
}

/// Builds the inverse of a class's map and checks it is injective.
/// `Err(())` means two index combinations reach the same value.
fn build_inverse(axes: &[SubAxis], span: u64) -> Result<Inverse, ()> {
    let mut order: Vec<usize> = (0..axes.len()).filter(|&i| axes[i].size > 1).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(axes[i].stride));
    // Nested check, smallest stride first.
    let mut reach = 0u64; // max value reachable by the smaller-stride axes
    let mut nested = true;
    for &i in order.iter().rev() {
        let s = axes[i];
        if s.stride <= reach {
            nested = false;
            break;
        }
        reach = reach.saturating_add((s.size - 1).saturating_mul(s.stride));
    }
    if nested {
        return Ok(Inverse::Greedy(order));
    }
    let count = checked_product(axes.iter().map(|a| a.size)).ok_or(())?;
    if count > span {
        return Err(());
    }
    // Brute force over all combinations; bounded by the span (≤ memory words or fan-out).
    const LIMIT: u64 = 1 << 26;
    if span > LIMIT {
        return Err(());
    }
    let mut table = vec![u64::MAX; span as usize];
    let ids: Vec<usize> = (0..axes.len()).collect();
    for flat in 0..count {
        let mut rem = flat;
        let mut v = 0u64;
        for &i in ids.iter().rev() {
            let a = axes[i];
            v += (rem % a.size) * a.stride;
            rem /= a.size;
        }
        let cell = &mut table[v as usize];
        if *cell != u64::MAX {
            return Err(());
        }
        *cell = flat;
    }
    Ok(Inverse::Table(table, ids))
}

/// Solves `value = Σ idx·stride` for the class's sub-axes; returns per-axis indices.
/// [`invert`] for the sub-axes `ids` of `flat`, writing each digit into `fixed[id]`
/// (no allocation: a shard per PE calls it per level).
fn invert_into(
    inv: &Inverse,
    flat: &[(usize, SubAxis, u64)],
    ids: &[usize],
    value: u64,
    fixed: &mut [Option<u64>],
) -> Option<()> {
    let axis = |i: usize| flat[ids[i]].1;
    match inv {
        Inverse::Greedy(order) => {
            let mut v = value;
            for &i in order {
                let a = axis(i);
                let k = v / a.stride;
                if k >= a.size {
                    return None;
                }
                fixed[ids[i]] = Some(k);
                v -= k * a.stride;
            }
            // Sub-axes the greedy order leaves out stay at 0, as in `invert`.
            for &j in ids {
                fixed[j].get_or_insert(0);
            }
            (v == 0).then_some(())
        }
        Inverse::Table(table, order) => {
            let mut f = *table.get(usize::try_from(value).ok()?)?;
            if f == u64::MAX {
                return None;
            }
            for &j in ids {
                fixed[j].get_or_insert(0);
            }
            for &i in order.iter().rev() {
                fixed[ids[i]] = Some(f % axis(i).size);
                f /= axis(i).size;
            }
            Some(())
        }
    }
}

fn invert(inv: &Inverse, axes: &[SubAxis], value: u64) -> Option<Vec<u64>> {
    let mut idx = vec![0u64; axes.len()];
    match inv {
        Inverse::Greedy(order) => {
            let mut v = value;
            for &i in order {
                let a = axes[i];
                let k = v / a.stride;
                if k >= a.size {
                    return None;
                }
                idx[i] = k;
                v -= k * a.stride;
            }
            (v == 0).then_some(idx)
        }
        Inverse::Table(table, ids) => {
            let mut flat = *table.get(usize::try_from(value).ok()?)?;
            if flat == u64::MAX {
                return None;
            }
            for &i in ids.iter().rev() {
                idx[i] = flat % axes[i].size;
                flat /= axes[i].size;
            }
            Some(idx)
        }
    }
}

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

mod map;
mod nest;
#[cfg(test)]
mod tests;
pub use map::{AxisTables, LevelStat, Run, RunStep, Shard};
pub use nest::{Cell, Loop, Nest};
