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
/// ([`Scan::is_legal_in`]), each class's contributions kept once; and the kinds of
/// layouts alike at every level (most candidates differ only in what no level reads:
/// their memory order, `Time` steps or packing), which a scan decides once each.
pub struct ScanSet {
    /// Per layout, whether it is laid out for the machine.
    for_machine: Vec<bool>,
    /// Per layout, per level, its class: `levels` a layout, one after another.
    class: Vec<u32>,
    levels: usize,
    /// Per layout, its kind: alike with another in whether it is laid out for the
    /// machine and in its class at every level.
    kind: Vec<u32>,
    kinds: usize,
    /// Per level, per class, its axes' contributions.
    classes: Vec<Vec<Vec<AxisFn>>>,
    /// The shape and dtype every layout has, if they have one.
    shape: Option<(Vec<u64>, DType)>,
}

impl ScanSet {
    /// The set of `layouts` (of one tensor) on machine `m`.
    pub fn new<'l>(layouts: impl IntoIterator<Item = &'l TensorLayout>, m: &Machine) -> Self {
        let mut seen: Vec<HashMap<(bool, Vec<AxisFn>), u32>> = Vec::new();
        let mut kinds: HashMap<(bool, Vec<u32>), u32> = HashMap::default();
        let mut set = ScanSet {
            for_machine: Vec::new(),
            class: Vec::new(),
            levels: 0,
            kind: Vec::new(),
            kinds: 0,
            classes: Vec::new(),
            shape: None,
        };
        // The key being looked up, its vectors reused from one lookup to the next.
        let mut key: (bool, Vec<AxisFn>) = (false, Vec::new());
        let mut ids: (bool, Vec<u32>) = (false, Vec::new());
        for (i, l) in layouts.into_iter().enumerate() {
            let shape = l.logical_shape();
            match &set.shape {
                None if i == 0 => set.shape = Some((shape.to_vec(), l.dtype())),
                Some((s, d)) if s.as_slice() == shape && *d == l.dtype() => {}
                _ => set.shape = None,
            }
            let levels = l.levels().len();
            if i == 0 {
                set.levels = levels;
                seen.resize_with(levels, HashMap::default);
            }
            let for_machine = for_machine(l, m);
            ids.0 = for_machine;
            ids.1.clear();
            for (x, seen) in seen.iter_mut().enumerate() {
                // A layout of other levels (not of this machine) takes classes of its own.
                let Some(rep) = (x < levels).then(|| l.levels()[x].replicated) else {
                    ids.1.push(u32::MAX);
                    continue;
                };
                key.0 = rep;
                key.1.resize_with(shape.len(), AxisFn::zero);
                for (a, (f, &e)) in key.1.iter_mut().zip(shape).enumerate() {
                    f.set_of(l, a, x, e);
                }
                ids.1.push(id_of(seen, &key));
            }
            set.class.extend_from_slice(&ids.1);
            set.for_machine.push(for_machine);
            set.kind.push(id_of(&mut kinds, &ids));
        }
        set.kinds = kinds.len();
        // Each class's contributions at its id (the maps are only looked up: their
        // order does not matter).
        set.classes = (seen.into_iter())
            .map(|level| {
                let mut fns = vec![Vec::new(); level.len()];
                for ((_, axes), id) in level {
                    fns[id as usize] = axes;
                }
                fns
            })
            .collect();
        set
    }

    /// Layout `i`'s class at level `x`.
    fn class_of(&self, i: usize, x: usize) -> Option<usize> {
        let c = *self
            .class
            .get(i.checked_mul(self.levels)?.checked_add(x)?)?;
        (c != u32::MAX).then_some(c as usize)
    }
}

/// The id of `key` in `ids` (numbered in order of first appearance), a copy of `key`
/// kept where it is new: looked up by reference, so a key met before is not copied.
fn id_of<K: std::hash::Hash + Eq + Clone>(ids: &mut HashMap<K, u32>, key: &K) -> u32 {
    if let Some(&id) = ids.get(key) {
        return id;
    }
    let id = ids.len() as u32;
    ids.insert(key.clone(), id);
    id
}

/// What a [`Scan`] found of each class of a [`ScanSet`], per level, and of each kind.
pub struct ScanMemo {
    levels: Vec<Vec<Option<bool>>>,
    kinds: Vec<Option<bool>>,
    /// Every layout of the set shares the scan's prepared work.
    prepared: bool,
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

    /// [`Scan::is_legal`] of layout `i` of `set` (`l`): each kind of layouts is decided
    /// once, and each level once per class of layouts that read alike there
    /// ([`ScanSet`]), the answers kept in `memo` (one per scan: [`Scan::memo`]).
    pub fn is_legal_in(
        &self,
        l: &TensorLayout,
        (set, i): (&ScanSet, usize),
        memo: &mut ScanMemo,
    ) -> bool {
        let p = match memo.prepared {
            true => self.prepared.as_ref(),
            false => self.scanned(l),
        };
        let Some(p) = p else {
            return self.whole(l);
        };
        let kind = set.kind[i] as usize;
        if let Some(ok) = memo.kinds[kind] {
            return ok;
        }
        let ok = set.for_machine[i] && self.levels_in(p, l, (set, i), memo);
        memo.kinds[kind] = Some(ok);
        ok
    }

    /// Whether every level keeps the rule with the hole laid out as `l`, layout `i` of
    /// `set`: each level decided once per class.
    fn levels_in(
        &self,
        p: &Prepared<'_>,
        l: &TensorLayout,
        (set, i): (&ScanSet, usize),
        memo: &mut ScanMemo,
    ) -> bool {
        for x in 0..p.levels.len() {
            // A layout of fewer levels than the set's first: worked out on its own.
            let Some(c) = set.class_of(i, x) else {
                return self.is_legal(l);
            };
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
        let prepared = (set.shape.as_ref())
            .is_some_and(|(shape, dtype)| self.prepared_for(shape, *dtype).is_some());
        ScanMemo {
            levels: (set.classes.iter()).map(|c| vec![None; c.len()]).collect(),
            kinds: vec![None; set.kinds],
            prepared,
        }
    }

    /// The prepared work, where `l` shares it (this shape and dtype).
    fn scanned(&self, l: &TensorLayout) -> Option<&Prepared<'a>> {
        self.prepared_for(l.logical_shape(), l.dtype())
    }

    /// The prepared work, where layouts of `shape` and `dtype` share it.
    fn prepared_for(&self, shape: &[u64], dtype: DType) -> Option<&Prepared<'a>> {
        let p = self.prepared.as_ref()?;
        (p.exact && shape == p.shape.as_slice() && dtype == p.dtype).then_some(p)
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
    if k.with_family(|f| f.by_positions().is_some()) {
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
