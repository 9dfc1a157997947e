//! Binding a parsed layout to a machine, a logical shape and an element type
//! (`TensorLayout::parse`/`bind`): every rule of docs/layout.md, each with an error
//! pointing at the offending text.

use super::classes::{ClassView, Members, class_at};
use super::inverse::{Inverse, Order, build_inverse, checked_product, max_value};
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
        let b = Binder::new(expr, machine);
        let (word_bytes, slots) = b.word_slots(dtype)?;
        let mut groups = b.classify()?;
        let members = Members::new(&groups, 3 + b.levels);
        b.resolve_strides(&members, &mut groups)?;
        b.check_bcast(&members)?;
        let padded = b.padded_sizes(&groups)?;
        let logical = b.logical_shape(shape, &padded)?;
        b.check_padding(&logical, &padded, implicit_pad)?;
        let classes = ClassView {
            expr,
            axes: (members.subs.iter()).map(|&(g, k)| groups[g][k]).collect(),
            members: &members,
            whole: &b.whole,
        };
        let (levels, inv_levels) = b.bind_levels(&classes)?;
        let [inv_mem, inv_w, inv_time] = bind_cell_classes(&classes, word_bytes, slots, dtype)?;
        let footprint_words = b.check_footprint(&classes, word_bytes)?;
        let time_span = (groups.iter().flatten())
            .filter(|s| s.class == Class::Time)
            .fold(0u64, |a, s| {
                a.saturating_add((s.size - 1).saturating_mul(s.stride))
            })
            .saturating_add(1);
        let hash = super::key_hash(&logical, &groups, &levels, dtype);
        Ok(TensorLayout(std::sync::Arc::new(super::body::Body {
            logical,
            padded,
            groups,
            levels,
            dtype,
            word_bytes,
            slots,
            footprint_words,
            time_span,
            hash,
            flat_once: std::sync::OnceLock::new(),
            inv_mem,
            inv_w,
            inv_time,
            inv_levels,
        })))
    }
}

/// What the steps of [`TensorLayout::bind`] share: the parsed layout, the machine and
/// how many addressable levels it has, and the span of the whole layout text.
struct Binder<'a> {
    expr: &'a LayoutExpr,
    machine: &'a Machine,
    levels: usize,
    whole: Range<usize>,
}

impl<'a> Binder<'a> {
    /// Counts the machine's addressable levels and finds the span of the whole layout.
    fn new(expr: &'a LayoutExpr, machine: &'a Machine) -> Self {
        let whole = 0..expr.group_spans.last().map_or(0, |s| s.end);
        Binder {
            expr,
            machine,
            levels: machine.addressable_count(),
            whole,
        }
    }

    /// The names and fan-outs of the addressable levels, root-most first.
    fn addr(&self) -> impl Iterator<Item = (&'a str, u64)> + use<'a> {
        self.machine.addressable_fanouts()
    }

    /// The names of the addressable levels, root-most first.
    fn level_names(&self) -> Vec<&str> {
        self.addr().map(|(name, _)| name).collect()
    }

    /// Resolves a level name to its index among the addressable levels; a folded
    /// level or an unknown name (with a near-miss hint) is an error.
    fn resolve(&self, name: &str, span: &Range<usize>) -> Result<usize, LayoutError> {
        let machine = self.machine;
        if let Some(i) = machine.addressable_names().position(|n| n == name) {
            return Ok(i);
        }
        if let Some(l) = machine.levels.iter().find(|l| l.name == name) {
            let into = (machine.addressable_levels().iter())
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
        let level_names = self.level_names();
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
    }

    /// The class of a sub-axis name: 0 mem, 1 W, 2 Time, 3+i level i.
    fn class_of(&self, n: &AxisName, span: &Range<usize>) -> Result<usize, LayoutError> {
        Ok(match n {
            AxisName::Mem => 0,
            AxisName::W => 1,
            AxisName::Time => 2,
            AxisName::Level(l) => 3 + self.resolve(l, span)?,
        })
    }

    /// A class's name for error messages (`memory`, `W`, `Time`, `level L2B`).
    fn class_name(&self, c: usize) -> String {
        if c < 3 {
            CLASS_NAMES[c].to_string()
        } else {
            format!("level {}", self.level_names()[c - 3])
        }
    }

    /// Element slots per word: checks that an element fits a word and returns the
    /// word's bytes and the number of elements it holds.
    fn word_slots(&self, dtype: DType) -> Result<(u64, u64), LayoutError> {
        let machine = self.machine;
        let word_bytes = machine.word_bytes.max(1);
        if dtype.bytes() > word_bytes {
            return Err(LayoutError::new(
                format!(
                    "{dtype} elements ({} bytes) do not fit a {word_bytes}-byte word of {}",
                    dtype.bytes(),
                    machine.name
                ),
                self.whole.clone(),
            ));
        }
        let slots = word_bytes / dtype.bytes();
        Ok((word_bytes, slots))
    }

    /// The groups of sub-axes with their classes, resolving level names (their strides
    /// still 0).
    fn classify(&self) -> Result<Vec<Vec<SubAxis>>, LayoutError> {
        let mut groups = Vec::with_capacity(self.expr.groups.len());
        for axes in &self.expr.groups {
            let mut g = Vec::with_capacity(axes.len());
            for s in axes {
                g.push(SubAxis {
                    size: s.size,
                    class: class_at(self.class_of(&s.name, &s.span)?),
                    stride: 0,
                });
            }
            groups.push(g);
        }
        Ok(groups)
    }

    /// Resolves strides into `groups`: all given or all omitted per class (one alone
    /// may omit); omitted strides are the products of the sizes of the class's later
    /// sub-axes.
    fn resolve_strides(
        &self,
        members: &Members,
        groups: &mut [Vec<SubAxis>],
    ) -> Result<(), LayoutError> {
        let expr = self.expr;
        for c in 0..members.classes() {
            let ms = members.of(c);
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
                    groups[g][k].stride = st;
                }
            } else if given == 0 {
                let mut acc = 1u64;
                for &(g, k) in ms.iter().rev() {
                    groups[g][k].stride = acc;
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
                        self.class_name(c),
                        expr.groups[g][k]
                    ),
                    expr.groups[g][k].span.clone(),
                ));
            }
        }
        Ok(())
    }

    /// Checks the broadcast list `B@[..]`: machine levels only, none split by a
    /// sub-axis, none named twice, and each over the whole level.
    fn check_bcast(&self, members: &Members) -> Result<(), LayoutError> {
        let expr = self.expr;
        if expr.bcast.is_empty() {
            return Ok(());
        }
        let addr: Vec<(&str, u64)> = self.addr().collect();
        let mut explicit_bcast = vec![false; addr.len()];
        for b in &expr.bcast {
            let (n, sp) = (&b.name, &b.span);
            if n == "W" || n == "Time" {
                return Err(LayoutError::new(
                    format!("`{n}` cannot be broadcast: only machine levels can"),
                    sp.clone(),
                ));
            }
            let i = self.resolve(n, sp)?;
            if let Some(&(g, k)) = members.of(3 + i).first() {
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
            let fan = addr[i].1;
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
        Ok(())
    }

    /// The padded shape: the product of each group's sub-axis sizes.
    fn padded_sizes(&self, groups: &[Vec<SubAxis>]) -> Result<Vec<u64>, LayoutError> {
        let mut padded = Vec::with_capacity(groups.len());
        for (g, subs) in groups.iter().enumerate() {
            let p = checked_product(subs.iter().map(|s| s.size)).ok_or_else(|| {
                LayoutError::new(
                    "group size overflows 64 bits",
                    self.expr.group_spans[g].clone(),
                )
            })?;
            padded.push(p);
        }
        Ok(padded)
    }

    /// The logical shape, from the pad prefix, the given shape or the padded shape
    /// (the pad prefix and the given shape must agree); its rank must be the number
    /// of groups.
    fn logical_shape(
        &self,
        shape: Option<&[u64]>,
        padded: &[u64],
    ) -> Result<Vec<u64>, LayoutError> {
        let expr = self.expr;
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
            (None, None) => padded.to_vec(),
        };
        if logical.len() != expr.groups.len() {
            let sp = expr
                .pad
                .as_ref()
                .map_or(self.whole.clone(), |(_, s)| s.clone());
            return Err(LayoutError::new(
                format!(
                    "the layout has {} group(s) but the shape {} has rank {}",
                    expr.groups.len(),
                    fmt_dims(&logical),
                    logical.len()
                ),
                sp,
            ));
        }
        Ok(logical)
    }

    /// Checks each axis fits its group, and is smaller only when padding is allowed
    /// (a pad prefix, or `implicit_pad`).
    fn check_padding(
        &self,
        logical: &[u64],
        padded: &[u64],
        implicit_pad: bool,
    ) -> Result<(), LayoutError> {
        let expr = self.expr;
        for (g, (&l, &p)) in logical.iter().zip(padded).enumerate() {
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
        Ok(())
    }

    /// Per-level checks and inverses: a level no sub-axis names is replicated; the
    /// others must stay within the fan-out and reach each position at most once.
    fn bind_levels(
        &self,
        classes: &ClassView,
    ) -> Result<(Vec<LevelUse>, Vec<Inverse>), LayoutError> {
        let expr = self.expr;
        let mut levels = Vec::with_capacity(self.levels);
        let mut inv_levels = Vec::with_capacity(self.levels);
        for (i, (name, fanout)) in self.addr().enumerate() {
            let axes = classes.axes(3 + i);
            if axes.is_empty() {
                levels.push(LevelUse {
                    name: name.into(),
                    fanout,
                    replicated: true,
                    used: fanout,
                });
                inv_levels.push(Inverse::Greedy(Order::EMPTY));
                continue;
            }
            let max = max_value(axes).unwrap_or(u64::MAX);
            if max >= fanout {
                // Point at the sub-axis that pushes past the fan-out.
                let (g, k) = (classes.members.of(3 + i).iter().zip(axes))
                    .max_by_key(|(_, s)| (s.size - 1).saturating_mul(s.stride))
                    .map_or((0, 0), |(&gk, _)| gk);
                return Err(LayoutError::new(
                    format!(
                        "{} reach(es) {} position {}, but {} has only {} (positions 0..{})",
                        classes.subs_text(3 + i),
                        name,
                        max,
                        name,
                        fanout,
                        fanout - 1
                    ),
                    expr.groups[g][k].span.clone(),
                ));
            }
            let inv = build_inverse(axes, max + 1).map_err(|()| {
                LayoutError::new(
                    format!(
                        "two index combinations of {} reach the same {} position",
                        classes.subs_text(3 + i),
                        name
                    ),
                    classes.first_span(3 + i),
                )
            })?;
            let used = checked_product(axes.iter().map(|s| s.size)).unwrap_or(u64::MAX);
            levels.push(LevelUse {
                name: name.into(),
                fanout,
                replicated: false,
                used,
            });
            inv_levels.push(inv);
        }
        Ok((levels, inv_levels))
    }

    /// Checks the LM footprint (the memory class's highest word + 1) fits a PE's
    /// memory, and returns it in words.
    fn check_footprint(&self, classes: &ClassView, word_bytes: u64) -> Result<u64, LayoutError> {
        let machine = self.machine;
        let footprint_words = max_value(classes.axes(0)).map_or(u64::MAX, |m| m.saturating_add(1));
        let lm = machine.leaf_memory_bytes();
        let fp_bytes = footprint_words.saturating_mul(word_bytes);
        if fp_bytes > lm {
            return Err(LayoutError::new(
                format!(
                    "LM footprint of {footprint_words} words ({fp_bytes} bytes) per PE exceeds the PE's {lm}-byte memory on {}",
                    machine.name
                ),
                classes.first_span(0),
            ));
        }
        Ok(footprint_words)
    }
}

/// Checks and inverts the memory, W and Time classes (in that order): W must stay
/// within the word's slots, and no two elements may share a cell.
fn bind_cell_classes(
    classes: &ClassView,
    word_bytes: u64,
    slots: u64,
    dtype: DType,
) -> Result<[Inverse; 3], LayoutError> {
    let one = |c: usize| {
        let axes = classes.axes(c);
        let max = max_value(axes)
            .ok_or_else(|| LayoutError::new("strides overflow 64 bits", classes.first_span(c)))?;
        if c == 1 && max >= slots {
            return Err(LayoutError::new(
                format!(
                    "W sub-axes {} reach slot {max}, but a {word_bytes}-byte word holds {slots} {dtype} element(s)",
                    classes.subs_text(1)
                ),
                classes.first_span(1),
            ));
        }
        build_inverse(axes, max.saturating_add(1)).map_err(|()| {
            LayoutError::new(
                format!(
                    "two elements share a (PE, word, slot, step) cell: the {} sub-axes {} overlap",
                    CLASS_NAMES[c],
                    classes.subs_text(c)
                ),
                classes.first_span(c),
            )
        })
    };
    Ok([one(0)?, one(1)?, one(2)?])
}

/// Flat list of all sub-axes (group-major) with the radix of each inside its group.
pub(super) fn flat_sub_axes(groups: &[Vec<SubAxis>]) -> Vec<(usize, SubAxis, u64)> {
    let mut flat = Vec::with_capacity(groups.iter().map(Vec::len).sum());
    for (g, subs) in groups.iter().enumerate() {
        let at = flat.len();
        flat.extend(subs.iter().map(|s| (g, *s, 0)));
        let mut radix = 1u64;
        for (_, s, r) in flat[at..].iter_mut().rev() {
            *r = radix;
            radix = radix.saturating_mul(s.size);
        }
    }
    flat
}

fn fmt_dims(d: &[u64]) -> String {
    let s: Vec<String> = d.iter().map(u64::to_string).collect();
    format!("[{}]", s.join(","))
}
