//! Legality of one kernel for many layouts of one of its inputs, the other operands
//! fixed: what a planner asks when it looks for a layout to move an input to. What
//! depends on the fixed operands only (the output shape, the index maps, the unit, the
//! fixed operands' contributions at every level) is worked out once; each candidate
//! adds its own contributions, level by level, until one breaks the rule.

use super::axis_fn::AxisFn;
use super::rule::Ctx;
use super::{default_name, fitted_shape, for_machine, is_legal, unit_of};
use crate::kernel::Kernel;
use crate::shape::index_map;
use mnsim_arch::layout::TensorLayout;
use mnsim_arch::{DType, Machine};

/// [`is_legal`] of kernel `k` with input `hole` taking each layout asked about
/// ([`Scan::is_legal`]), the other inputs and the output as given. Answers as
/// [`is_legal`] does, for every layout.
pub struct Scan<'a> {
    k: &'a Kernel,
    inputs: &'a [&'a TensorLayout],
    hole: usize,
    out: &'a TensorLayout,
    m: &'a Machine,
    /// `None` where the kernel is decided otherwise than by the per-level rule
    /// (Reshape, Concat, Slice, windows) or the given operands do not fit: each layout
    /// is then checked whole.
    prepared: Option<Prepared<'a>>,
}

/// What a scan works out once.
struct Prepared<'a> {
    ctx: Ctx<'a>,
    /// The layouts of the hole that share the prepared work: this shape and dtype.
    shape: Vec<u64>,
    dtype: DType,
    /// Per level at or above the unit's: the output's contributions and the fixed
    /// inputs' (empty where one is replicated, and for the hole).
    levels: Vec<(Vec<AxisFn>, Vec<Vec<AxisFn>>)>,
    /// Per variable, the hole's axis that takes it.
    hole_axes: Vec<Option<usize>>,
    /// Every variable the hole takes spans its axis whole (its contributions are then
    /// [`LayoutFns`]'); otherwise each layout is checked whole.
    exact: bool,
}

/// The contribution of no axis.
static ZERO: AxisFn = AxisFn::ZERO;

/// What a [`Scan`] reads of one layout: whether it is laid out for the machine, and
/// per level and axis the axis's contribution to the position at that level.
pub struct LayoutFns {
    for_machine: bool,
    levels: Vec<Vec<AxisFn>>,
}

impl LayoutFns {
    /// The functions of `l` on machine `m`.
    pub fn new(l: &TensorLayout, m: &Machine) -> LayoutFns {
        let shape = l.logical_shape();
        LayoutFns {
            for_machine: for_machine(l, m),
            levels: (0..l.levels().len())
                .map(|x| {
                    (shape.iter().enumerate())
                        .map(|(a, &e)| AxisFn::of(l, a, x, e))
                        .collect()
                })
                .collect(),
        }
    }
}

impl<'a> Scan<'a> {
    /// A scan of kernel `k` over layouts of input `hole`; `inputs[hole]` is any layout
    /// of it (its shape and dtype are those most layouts asked about have).
    pub fn new(
        k: &'a Kernel,
        inputs: &'a [&'a TensorLayout],
        hole: usize,
        out: &'a TensorLayout,
        m: &'a Machine,
    ) -> Self {
        let prepared = prepare(k, inputs, hole, out, m);
        Scan {
            k,
            inputs,
            hole,
            out,
            m,
            prepared,
        }
    }

    /// Whether the kernel is legal with input `hole` laid out as `l`.
    pub fn is_legal(&self, l: &TensorLayout) -> bool {
        self.is_legal_with(l, &LayoutFns::new(l, self.m))
    }

    /// [`Scan::is_legal`] of `l`, whose per-level functions `fns` are worked out
    /// already ([`LayoutFns::new`] of `l` on this scan's machine): a planner that scans
    /// the same candidates for many kernels works them out once.
    pub fn is_legal_with(&self, l: &TensorLayout, fns: &LayoutFns) -> bool {
        let Some(p) = &self.prepared else {
            return self.whole(l);
        };
        if !p.exact || l.logical_shape() != p.shape.as_slice() || l.dtype() != p.dtype {
            return self.whole(l);
        }
        if !fns.for_machine {
            return false;
        }
        let n = self.inputs.len();
        // Per input, whether it is replicated at the level; per variable, the hole's
        // contribution.
        let mut rep = vec![false; n];
        let mut non_rep: Vec<usize> = Vec::with_capacity(n);
        for (x, (cout, fixed)) in p.levels.iter().enumerate() {
            for (j, r) in rep.iter_mut().enumerate() {
                *r = match j == self.hole {
                    true => l.levels()[x].replicated,
                    false => self.inputs[j].levels()[x].replicated,
                };
            }
            non_rep.clear();
            non_rep.extend((0..n).filter(|&j| !rep[j]));
            let mine = |v: usize| match p.hole_axes[v] {
                Some(a) => &fns.levels[x][a],
                None => &ZERO,
            };
            let cin = |j: usize, v: usize| match j == self.hole {
                true => mine(v),
                false => &fixed[j][v],
            };
            if p.ctx.rule(x, cout, &cin, &non_rep).is_err() {
                return false;
            }
        }
        true
    }

    /// [`is_legal`] with the hole laid out as `l`, worked out whole.
    fn whole(&self, l: &TensorLayout) -> bool {
        let mut ins = self.inputs.to_vec();
        ins[self.hole] = l;
        is_legal(self.k, &ins, self.out, self.m)
    }
}

/// The work a scan does once, or `None` where each layout is checked whole.
fn prepare<'a>(
    k: &'a Kernel,
    inputs: &'a [&'a TensorLayout],
    hole: usize,
    out: &'a TensorLayout,
    m: &'a Machine,
) -> Option<Prepared<'a>> {
    let proto = *inputs.get(hole)?;
    if let Kernel::Reshape { .. } | Kernel::Concat { .. } | Kernel::Slice { .. } = k {
        return None;
    }
    let names = || (0..=k.arity()).map(|i| default_name(k, i)).collect();
    let want = fitted_shape(k, inputs, out, m, names).ok()?;
    let in_shapes: Vec<&[u64]> = inputs.iter().map(|l| l.logical_shape()).collect();
    if !matches!(crate::window::map_of(k, &in_shapes), Ok(None)) {
        return None;
    }
    let (_, unit_level) = unit_of(k, inputs, out, m);
    let maps = index_map(k, &in_shapes, &want).ok()?;
    let ctx = Ctx::new(k, inputs, out, Vec::new(), maps, &want).ok()?;
    let levels = if m.addressable_count() == 0 {
        Vec::new()
    } else {
        (0..=unit_level)
            .map(|x| {
                let (cout, mut cin, _) = ctx.contributions_at(x);
                cin[hole] = Vec::new();
                (cout, cin)
            })
            .collect()
    };
    let hole_axes: Vec<Option<usize>> = (0..ctx.ext.len()).map(|v| ctx.axis_of(hole, v)).collect();
    let exact = (hole_axes.iter().zip(&ctx.ext))
        .all(|(a, &e)| a.is_none_or(|a| proto.logical_shape().get(a) == Some(&e)));
    Some(Prepared {
        shape: proto.logical_shape().to_vec(),
        dtype: proto.dtype(),
        ctx,
        levels,
        hole_axes,
        exact,
    })
}
