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
/// The classes' maps: looked up only (never iterated), so any fixed hasher gives the same
/// classes; foldhash is several times faster than SipHash on these keys.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

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
struct LayoutFns {
    for_machine: bool,
    levels: Vec<Vec<AxisFn>>,
}

/// Layouts a planner scans for many kernels: per level the classes of layouts that read
/// alike there (the same replication and the same contribution of every axis: what a
/// scan reads of a layout, [`LayoutFns`]), in which a scan decides that level once
/// ([`Scan::is_legal_in`]), each class's contributions kept once.
pub struct ScanSet {
    /// Per layout, whether it is laid out for the machine.
    for_machine: Vec<bool>,
    /// Per layout, per level, its class.
    class: Vec<Vec<u32>>,
    /// Per level, per class, its axes' contributions.
    classes: Vec<Vec<Vec<AxisFn>>>,
}

impl ScanSet {
    /// The set of `layouts` (of one tensor) on machine `m`.
    pub fn new<'l>(layouts: impl IntoIterator<Item = &'l TensorLayout>, m: &Machine) -> Self {
        let mut seen: Vec<HashMap<(bool, Vec<AxisFn>), u32>> = Vec::new();
        let mut class = Vec::new();
        let mut for_machine = Vec::new();
        for l in layouts {
            let f = LayoutFns::new(l, m);
            seen.resize_with(seen.len().max(f.levels.len()), HashMap::default);
            let ids = (f.levels.into_iter().enumerate())
                .map(|(x, axes)| {
                    let key = (l.levels()[x].replicated, axes);
                    let next = seen[x].len() as u32;
                    *seen[x].entry(key).or_insert(next)
                })
                .collect();
            class.push(ids);
            for_machine.push(f.for_machine);
        }
        // Each class's contributions at its id (the maps are only looked up: their
        // order does not matter).
        let classes = (seen.into_iter())
            .map(|level| {
                let mut fns = vec![Vec::new(); level.len()];
                for ((_, axes), id) in level {
                    fns[id as usize] = axes;
                }
                fns
            })
            .collect();
        ScanSet {
            for_machine,
            class,
            classes,
        }
    }
}

/// What a [`Scan`] found of each class of a [`ScanSet`], per level.
pub struct ScanMemo {
    levels: Vec<Vec<Option<bool>>>,
}

impl LayoutFns {
    /// The functions of `l` on machine `m`.
    fn new(l: &TensorLayout, m: &Machine) -> LayoutFns {
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
        let Some(p) = self.scanned(l) else {
            return self.whole(l);
        };
        let fns = LayoutFns::new(l, self.m);
        fns.for_machine && (0..p.levels.len()).all(|x| self.level(p, l, &fns.levels[x], x))
    }

    /// [`Scan::is_legal`] of layout `i` of `set` (`l`): each level is decided once per
    /// class of layouts that read alike there ([`ScanSet`]), the answers kept in `memo`
    /// (one per scan: [`Scan::memo`]).
    pub fn is_legal_in(
        &self,
        l: &TensorLayout,
        (set, i): (&ScanSet, usize),
        memo: &mut ScanMemo,
    ) -> bool {
        let Some(p) = self.scanned(l) else {
            return self.whole(l);
        };
        if !set.for_machine[i] {
            return false;
        }
        for x in 0..p.levels.len() {
            let c = set.class[i][x] as usize;
            let known = &mut memo.levels[x][c];
            let ok = match *known {
                Some(ok) => ok,
                // The class's contributions are this layout's.
                None => *known.insert(self.level(p, l, &set.classes[x][c], x)),
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// An empty memo for [`Scan::is_legal_in`] over `set`.
    pub fn memo(&self, set: &ScanSet) -> ScanMemo {
        ScanMemo {
            levels: (set.classes.iter()).map(|c| vec![None; c.len()]).collect(),
        }
    }

    /// The prepared work, where `l` shares it (this shape and dtype).
    fn scanned(&self, l: &TensorLayout) -> Option<&Prepared<'a>> {
        let p = self.prepared.as_ref()?;
        let same = p.exact && l.logical_shape() == p.shape.as_slice() && l.dtype() == p.dtype;
        same.then_some(p)
    }

    /// Whether level `x` keeps the rule with the hole laid out as `l` (its axes'
    /// contributions at that level `fns`).
    fn level(&self, p: &Prepared<'_>, l: &TensorLayout, fns: &[AxisFn], x: usize) -> bool {
        let (cout, fixed) = &p.levels[x];
        let rep = |j: usize| match j == self.hole {
            true => l.levels()[x].replicated,
            false => self.inputs[j].levels()[x].replicated,
        };
        let mut buf = [0usize; 8];
        let mut heap = Vec::new();
        let n = self.inputs.len();
        let non_rep: &[usize] = if n <= buf.len() {
            let mut k = 0;
            for j in (0..n).filter(|&j| !rep(j)) {
                buf[k] = j;
                k += 1;
            }
            &buf[..k]
        } else {
            heap.extend((0..n).filter(|&j| !rep(j)));
            &heap
        };
        let cin = |j: usize, v: usize| match (j == self.hole, p.hole_axes[v]) {
            (true, Some(a)) => &fns[a],
            (true, None) => &ZERO,
            (false, _) => &fixed[j][v],
        };
        p.ctx.rule(x, cout, &cin, non_rep).is_ok()
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
    let ctx = Ctx::new(k, (inputs, &in_shapes), out, Vec::new(), maps, &want).ok()?;
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
