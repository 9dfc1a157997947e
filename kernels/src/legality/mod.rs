//! Legality (docs/kernels.md): can every output element be computed from data already on the
//! unit that holds it?
//!
//! The rule, per addressable level X at or above the unit level: a level position is a
//! sum over the logical axes of a per-axis contribution `f(i) = Σ ((i / radix) % size)
//! · stride` over the axis's sub-axes of level X. Every variable of the kernel (an
//! output axis, or a reduced variable) gets one contribution per tensor (0 when the
//! tensor does not use it). An input is **available** at X if it is replicated at X,
//! or if its contribution equals the output's for every variable (0 for reduced
//! variables). The output is **partial** over X (Add and Mean reductions only) if it is
//! replicated at X and every input not replicated at X is split by the reduced
//! variables with one common function and by nothing else. See `docs/kernels.md`.

mod axis_fn;
mod messages;
mod rule;
mod scan;
mod share;
mod views;

use crate::family::ByPositions;
use crate::kernel::{ErrorKind, Kernel, KernelError, fmt_dims};
use crate::shape::{index_map, output_shape};
use mnsim_arch::Machine;
use mnsim_arch::layout::TensorLayout;
use rule::Ctx;
use std::fmt;
use views::{concat_level, reshape_level, slice_level};

pub(crate) use messages::{bcast_with, group_text};
pub use scan::{Scan, ScanMemo, ScanSet};
pub use share::reduced_share;

/// The unit whose locality a kernel needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Vector kernels: every input element an output element needs must be on the PE
    /// that holds the output element.
    Pe,
    /// MatMul and BatchMatMul on the matrix unit (one per node of
    /// `compute.matrix.level`: a MAB on MN-Core): data must line up at the unit's level
    /// and above; among the PEs of one unit anything goes.
    Mab,
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Pe => "PE",
            Unit::Mab => "MAB",
        })
    }
}

/// A legal kernel: where its output is partial, and the unit it runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Legality {
    /// Addressable level indices (root-most first) over which the output holds partial
    /// sums: a Reduce (add) over each of them completes it.
    pub partial: Vec<usize>,
    /// The unit of locality.
    pub unit: Unit,
    /// The addressable level of the unit: requirements apply at this level and above
    /// (the leaf level for [`Unit::Pe`]).
    pub unit_level: usize,
}

/// The addressable level that holds the matrix unit, and whether `k` runs on it in its
/// compute dtype (see [`crate::precision`]).
fn unit_of(k: &Kernel, inputs: &[&TensorLayout], out: &TensorLayout, m: &Machine) -> (Unit, usize) {
    let leaf = m.addressable_count().saturating_sub(1);
    let ins: Vec<mnsim_arch::DType> = inputs.iter().map(|l| l.dtype()).collect();
    let dtype = crate::precision::compute_dtype(k, &ins, out.dtype());
    if k.is_matmul() && crate::precision::matrix_rate(m, dtype).is_some() {
        let lvl = m
            .level_index(&m.compute.matrix.level)
            .and_then(|li| m.addressable_of(li))
            .unwrap_or(leaf);
        (Unit::Mab, lvl)
    } else {
        (Unit::Pe, leaf)
    }
}

/// Default operand names: `a`, `b` for two inputs, `x` for one; `out` for the output.
fn default_name(k: &Kernel, i: usize) -> String {
    if i >= k.arity() {
        "out".into()
    } else if k.arity() == 1 {
        "x".into()
    } else {
        k.with_family(|f| f.operand_name(i))
    }
}

/// Whether `k` may run on `inputs` laid out as given, writing `out` as laid out, on
/// machine `m`. `names` names the operands in messages: the inputs in order, then the
/// output (missing names default to `a`, `b` / `x`, and `out`).
///
/// Vector kernels need every input element an output element reads on the PE that
/// holds it ([`Unit::Pe`]); MatMul and BatchMatMul on the matrix unit need it on the
/// unit ([`Unit::Mab`]: the level `m.compute.matrix.level` and above), or fall back to
/// the vector unit (and [`Unit::Pe`]) when the output dtype has no matrix rate.
///
/// An illegal combination is an [`ErrorKind::Illegal`] error that names the operand,
/// the level and the relayout that would make it legal.
pub fn check(
    k: &Kernel,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
    names: &[&str],
) -> Result<Legality, KernelError> {
    decide(k, inputs, out, m, names, true)
}

/// Whether [`check`] would accept the layouts, without building its message: what the
/// planner asks of thousands of candidates (an illegal one costs no formatting).
pub fn is_legal(k: &Kernel, inputs: &[&TensorLayout], out: &TensorLayout, m: &Machine) -> bool {
    check_unexplained(k, inputs, out, m).is_ok()
}

/// [`check`] without a broken level rule's message: its error is
/// [`ErrorKind::Illegal`] with the level (its `operand` is 0, not found) and no text.
/// What the planner's measuring engine asks of the combinations it tries, most of whose
/// failures nobody reads.
pub fn check_unexplained(
    k: &Kernel,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
) -> Result<Legality, KernelError> {
    decide(k, inputs, out, m, &[], false)
}

/// Whether layout `l` is laid out for machine `m`: its levels are `m`'s addressable ones.
fn for_machine(l: &TensorLayout, m: &Machine) -> bool {
    l.levels().len() == m.addressable_count()
        && (l.levels().iter())
            .zip(m.addressable_names())
            .all(|(u, a)| u.name == a)
}

/// The output shape `k` gives its inputs, if it is `out`'s and every operand is laid out
/// for `m`; `names_of` names the operands in the error.
fn fitted_shape(
    k: &Kernel,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
    names_of: impl Fn() -> Vec<String>,
) -> Result<Vec<u64>, KernelError> {
    let in_shapes: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    let want = output_shape(k, &in_shapes)?;
    if want != out.logical_shape() {
        let out_name = &names_of()[k.arity()];
        return Err(KernelError::new(
            ErrorKind::Layout,
            format!(
                "{k}: the output `{out_name}` has shape {}, but the inputs give {}",
                fmt_dims(out.logical_shape()),
                fmt_dims(&want)
            ),
        ));
    }
    let all = inputs.iter().copied().chain(std::iter::once(out));
    for (i, l) in all.enumerate() {
        if !for_machine(l, m) {
            let names = names_of();
            return Err(KernelError::new(
                ErrorKind::Layout,
                format!(
                    "{k}: `{}` is laid out for another machine than {} (levels {})",
                    names[i],
                    m.name,
                    l.levels()
                        .iter()
                        .map(|u| u.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(want)
}

/// The legality of a kernel decided by element positions ([`ByPositions`]: Reshape,
/// Concat, Slice), level by level over the `levels` addressable levels.
fn positions_hold(
    k: &Kernel,
    rule: ByPositions<'_>,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    names: &[String],
    levels: usize,
) -> Result<(), KernelError> {
    for x in 0..levels {
        match rule {
            ByPositions::Concat { axis } => concat_level(k, axis, inputs, out, names, x)?,
            ByPositions::Slice {
                start,
                limit,
                stride,
            } => slice_level(k, (start, limit, stride), inputs[0], out, names, x)?,
            ByPositions::Reshape => reshape_level(k, inputs[0], out, names, x)?,
        }
    }
    Ok(())
}

/// [`check`]; a broken level rule is explained only when `explain` is set (otherwise its
/// error carries the kind and no message).
fn decide(
    k: &Kernel,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
    names: &[&str],
    explain: bool,
) -> Result<Legality, KernelError> {
    let given = names;
    let names_of = || -> Vec<String> {
        (0..=k.arity())
            .map(|i| {
                given
                    .get(i)
                    .map_or_else(|| default_name(k, i), |s| s.to_string())
            })
            .collect()
    };
    let in_shapes: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    let want = fitted_shape(k, inputs, out, m, names_of)?;
    let naddr = m.addressable_count();
    let (unit, unit_level) = unit_of(k, inputs, out, m);
    let by_positions = k.with_family(|f| {
        let rule = f.by_positions()?;
        Some(positions_hold(k, rule, inputs, out, &names_of(), naddr))
    });
    if let Some(done) = by_positions {
        done?;
        return Ok(Legality {
            partial: Vec::new(),
            unit,
            unit_level,
        });
    }
    let ctx = match crate::window::map_of(k, &in_shapes)? {
        Some(w) => {
            crate::window::check_whole(k, &w, inputs, out, &names_of(), unit_level)?;
            let names = if explain { names_of() } else { Vec::new() };
            Ctx::new(k, (inputs, &in_shapes), out, names, w.maps, &want)?
        }
        None => {
            let maps = index_map(k, &in_shapes, &want)?;
            // Operand names serve messages only: none are built unless one is asked for.
            let names = if explain { names_of() } else { Vec::new() };
            Ctx::new(k, (inputs, &in_shapes), out, names, maps, &want)?
        }
    };
    let mut partial = Vec::new();
    if naddr > 0 {
        let mut c = rule::Contributions::default();
        for x in 0..=unit_level {
            match ctx.level(x, &mut c) {
                Ok(true) => partial.push(x),
                Ok(false) => {}
                Err(f) if explain => return Err(ctx.explain(f)),
                // Only `is_legal` asks without `explain`, and it keeps only whether.
                Err(_) => {
                    let kind = ErrorKind::Illegal {
                        operand: 0,
                        level: x,
                    };
                    return Err(KernelError::new(kind, String::new()));
                }
            }
        }
    }
    Ok(Legality {
        partial,
        unit,
        unit_level,
    })
}

#[cfg(test)]
mod tests;
