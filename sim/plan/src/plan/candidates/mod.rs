//! Candidate layouts of one tensor: the space the planner searches for a plan variable.
//!
//! A candidate says, for every addressable level of the machine, whether the tensor is
//! replicated over it or which logical axis is split over it and over how many of its
//! positions (all of them, or a power-of-two part: `8_MAB` of 16 leaves the other 8
//! idle). An axis may take several levels, in any order (the order decides which
//! elements share a node: root-most first is the usual block distribution). What is
//! left of each axis stays in memory, after its levels; the last axis may be packed into
//! the words' slots (`W`). When a shard does not fit the PE's memory, the first axis
//! that can take them gets `Time` steps (the fewest powers of two that fit), or where
//! no axis can, the major axes take them together (any divisors: [`time_steps`]). Every candidate is bound
//! with the arch crate (so it is legal for the tensor's shape, dtype and the machine's
//! LM) and candidates are unique in canonical form.
//!
//! The space is generated in tiers, up to [`Space::max`] candidates: the core (whole
//! fan-outs, levels root-most first, memory last) always, then parts of fan-outs, then
//! every order of an axis's levels and memory part. So a budget cuts the least usual
//! layouts first, and a tensor of many axes costs milliseconds, not seconds.

use mnsim_arch::layout::{AxisName, Class, SubAxisExpr};
use mnsim_arch::{DType, LayoutExpr, Machine, TensorLayout};
/// Candidate texts hash with a fixed, fast hasher (not SipHash: thousands per tensor).
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

/// Which layouts to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Space {
    /// Split over a power-of-two part of a level's fan-out, not only all of it.
    pub partial_fanout: bool,
    /// Several levels on one axis in every order (otherwise root-most first only).
    pub level_orders: bool,
    /// Pack the last axis into words (`W`) as well as not.
    pub packing: bool,
    /// Stop after this many distinct candidates (the core is always whole).
    pub max: usize,
}

impl Default for Space {
    fn default() -> Self {
        Space {
            partial_fanout: true,
            level_orders: true,
            packing: true,
            max: MAX_CANDIDATES,
        }
    }
}

/// Candidates per tensor in the default space.
pub const MAX_CANDIDATES: usize = 4_000;

/// One candidate: the bound layout ([`Candidate::text`] its canonical text).
#[derive(Clone, Debug)]
pub struct Candidate {
    pub layout: TensorLayout,
    /// Whole fan-outs only, levels root-most first: the core of the space, which the
    /// search covers first.
    pub core: bool,
}

impl Candidate {
    /// The canonical text, written when asked (the planner keeps the bound layouts, and
    /// prints the few it reports).
    pub fn text(&self) -> String {
        self.layout.canonical()
    }
}

/// Power-of-two parts of a fan-out a split may use (> 1), smallest first.
fn parts(fanout: u64, partial: bool) -> Vec<u64> {
    if !partial {
        return vec![fanout];
    }
    let mut v: Vec<u64> = (1..64)
        .map(|k| 1u64 << k)
        .take_while(|&p| p < fanout)
        .filter(|p| fanout.is_multiple_of(*p))
        .collect();
    v.push(fanout);
    v
}

/// Every permutation of `v` (v is short: the levels of one axis).
fn permutations<T: Clone>(v: &[T]) -> Vec<Vec<T>> {
    if v.len() <= 1 {
        return vec![v.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..v.len() {
        let mut rest = v.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x.clone());
            out.push(p);
        }
    }
    out
}

/// The candidates of a tensor of `dims` (at its bound) and `dtype` on `m` (with `pad`,
/// those of its padded shape too, after its own: [`padded_dims`]), in a fixed
/// order: the core, then (as `space` allows) parts of fan-outs, then other level orders;
/// within a tier, level assignments in mixed radix over the levels root-most first, then
/// level orders, then unpacked before packed. At most `space.max` beyond the core.
///
/// Each layout is built as the parsed form of its text (no text, no parse) and bound
/// by the arch crate. A tier skips what the tier before it bound already: the parts
/// tier the assignments of whole fan-outs (the core's), the orders tier the first
/// order of each assignment (the tier before's).
pub fn generate(
    m: &Machine,
    dims: &[u64],
    dtype: DType,
    implicit_pad: bool,
    space: Space,
    pad: bool,
) -> Vec<Candidate> {
    let mut out = generate_shape(m, (dims, None), dtype, implicit_pad, space);
    if let Some(padded) = padded_dims(dims).filter(|_| pad) {
        let room = Space {
            max: space.max.saturating_sub(out.len()),
            ..space
        };
        out.extend(generate_shape(
            m,
            (&padded, Some(dims)),
            dtype,
            implicit_pad,
            room,
        ));
        // The cores first (stable: the unpadded before the padded).
        out.sort_by_key(|c| !c.core);
    }
    out
}

/// Padding allowed per axis: at most this fraction (`1 / PAD_WASTE`) of its length.
pub const PAD_WASTE: u64 = 32;

/// The padded shape the planner also tries for `dims`: each axis rounded up to the
/// largest power of two whose rounding pads it by at most `1 / PAD_WASTE` of its length
/// (3000 to 3072 = 3 · 1024, 500 to 512, 50257 to 51200 = 25 · 2048), so that an axis
/// with few factors of two can still split over whole fan-outs (which are powers of two
/// on the shipped machines). `None` when no axis moves: a length with factors of two
/// enough (768 = 3 · 256 pads to 1024 only, a third more) keeps its exact candidates
/// alone.
pub fn padded_dims(dims: &[u64]) -> Option<Vec<u64>> {
    let padded: Vec<u64> = (dims.iter())
        .map(|&d| {
            (0..40)
                .map(|k| 1u64 << k)
                .filter_map(|g| d.checked_next_multiple_of(g))
                .take_while(|&r| (r - d).saturating_mul(PAD_WASTE) <= d)
                .last()
                .unwrap_or(d)
        })
        .collect();
    (padded.as_slice() != dims).then_some(padded)
}

/// The candidates of one shape (see [`generate`]): `(dims, logical)` the lengths the
/// layouts split and, where they pad, the tensor's own (then every layout has a pad
/// prefix).
fn generate_shape(
    m: &Machine,
    (dims, logical): (&[u64], Option<&[u64]>),
    dtype: DType,
    implicit_pad: bool,
    space: Space,
) -> Vec<Candidate> {
    let shape = Tensor::new(m, dims, dtype, implicit_pad);
    let mut acc = Found::new(dims.len(), space.max, !shape.distinct_names());
    acc.expr.pad = logical.map(|l| (l.to_vec(), 0..0));
    let core = Space {
        partial_fanout: false,
        level_orders: false,
        max: usize::MAX,
        ..space
    };
    let mut tiers = vec![(core, Done::Nothing)];
    if space.partial_fanout {
        let parts = Space {
            level_orders: false,
            ..space
        };
        tiers.push((parts, Done::WholeFanouts));
    }
    if space.level_orders {
        tiers.push((space, Done::FirstOrders));
    }
    for (tier, done) in tiers {
        tier_of(&shape, tier, done, &mut acc);
        if acc.out.len() >= space.max {
            break;
        }
    }
    let mut out = acc.out;
    // The core first (stable: otherwise in generation order).
    out.sort_by_key(|c| !c.core);
    out
}

/// What every tier of one tensor's generation reads: the machine and its addressable
/// levels, the tensor, element slots per word and LM words per PE.
struct Tensor<'a> {
    m: &'a Machine,
    levels: Vec<mnsim_arch::machine::AddrLevel>,
    /// Each level's name as a sub-axis suffix reads it (the names are identifiers:
    /// `Machine::validate`).
    names: Vec<AxisName>,
    dims: &'a [u64],
    dtype: DType,
    implicit_pad: bool,
    slots: u64,
    lm_words: u64,
    /// `orders[n]`: every order of `n` items (an axis's levels and its memory part), as
    /// indices, in [`permutations`]' order.
    orders: Vec<Vec<Vec<usize>>>,
}

impl<'a> Tensor<'a> {
    fn new(m: &'a Machine, dims: &'a [u64], dtype: DType, implicit_pad: bool) -> Self {
        let levels = m.addressable_levels();
        let names = (levels.iter())
            .map(|l| AxisName::of(l.name.clone()))
            .collect();
        let orders = (0..=levels.len() + 1)
            .map(|n| permutations(&(0..n).collect::<Vec<_>>()))
            .collect();
        Tensor {
            m,
            names,
            dims,
            dtype,
            implicit_pad,
            slots: (m.word_bytes / dtype.bytes().max(1)).max(1),
            lm_words: m.leaf_memory_bytes() / m.word_bytes.max(1),
            orders,
            levels,
        }
    }

    /// Whether every level has a name of its own that no other sub-axis suffix reads
    /// (`Machine::validate` does not forbid `W` or `Time`). Then two layouts built from
    /// different assignments, orders or packing differ in some sub-axis's size or
    /// name, so they bind to different layouts, with different canonical texts.
    fn distinct_names(&self) -> bool {
        (self.names.iter().enumerate())
            .all(|(i, n)| matches!(n, AxisName::Level(_)) && !self.names[..i].contains(n))
    }
}

/// The candidates found so far, their texts (where two layouts built apart may read
/// as one: [`Tensor::distinct_names`]), and the layout being built (its vectors reused
/// from one layout to the next).
struct Found {
    out: Vec<Candidate>,
    seen: Option<HashSet<String>>,
    expr: LayoutExpr,
}

impl Found {
    /// Room for `max` candidates (or a few thousand, if `max` is more); `check`: compare
    /// texts.
    fn new(rank: usize, max: usize, check: bool) -> Self {
        let room = max.min(MAX_CANDIDATES + 100);
        Found {
            out: Vec::with_capacity(room),
            seen: check.then(|| HashSet::with_capacity_and_hasher(room, Default::default())),
            expr: LayoutExpr {
                pad: None,
                groups: vec![Vec::new(); rank],
                group_spans: vec![0..0; rank],
                bcast: Vec::new(),
            },
        }
    }

    /// Keeps `layout` unless a candidate of the same text was kept before.
    fn keep(&mut self, layout: TensorLayout, core: bool) {
        if let Some(seen) = &mut self.seen
            && !seen.insert(layout.canonical())
        {
            return;
        }
        self.out.push(Candidate { layout, core });
    }
}

/// Per logical axis, the levels split over it: a level index and its part, root-most
/// first (one level assignment).
type Split = [Vec<(usize, u64)>];

/// Which layouts of a tier the tiers before it bound already (the same layouts, so
/// the tier skips them).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Done {
    /// The core: nothing before it.
    Nothing,
    /// Parts of fan-outs: the core had every assignment of whole fan-outs.
    WholeFanouts,
    /// Level orders: the tier before had the first order of every assignment.
    FirstOrders,
}

/// The candidates of one tier (see [`generate`]) not generated before.
fn tier_of(t: &Tensor, space: Space, done: Done, acc: &mut Found) {
    let (levels, dims) = (&t.levels, t.dims);
    let rank = dims.len();
    if rank == 0 || dims.contains(&0) {
        return;
    }
    let choices = level_choices(levels, rank, space);
    let mut pick = vec![0usize; levels.len()];
    let mut groups: Vec<Vec<(usize, u64)>> = vec![Vec::new(); rank];
    let mut rest = dims.to_vec();
    while acc.out.len() < space.max {
        let ok = assign(&pick, &choices, dims, (&mut groups, &mut rest));
        let whole = (groups.iter().flatten()).all(|&(li, p)| p == levels[li].fanout);
        if ok && !(done == Done::WholeFanouts && whole) {
            let first = usize::from(done == Done::FirstOrders);
            emit(t, (&groups, &rest), space, (whole, first), acc);
        }
        if !next_pick(&mut pick, &choices) {
            break;
        }
    }
}

/// Per level, what it may take: `None` (replicated) or `(axis, part)` for every axis of
/// `rank` and part of its fan-out `space` allows.
type Choices = Vec<Vec<Option<(usize, u64)>>>;

/// The [`Choices`] of `levels`.
fn level_choices(levels: &[mnsim_arch::machine::AddrLevel], rank: usize, space: Space) -> Choices {
    (levels.iter())
        .map(|l| {
            let mut c = vec![None];
            for a in 0..rank {
                for p in parts(l.fanout, space.partial_fanout) {
                    c.push(Some((a, p)));
                }
            }
            c
        })
        .collect()
}

/// The assignment of levels to axes that `pick` (one choice per level) makes of a tensor
/// of `dims`: each axis's levels with their parts into `groups`, what is left of each
/// axis into `rest`; whether every part divides what is left of its axis.
fn assign(
    pick: &[usize],
    choices: &Choices,
    dims: &[u64],
    (groups, rest): (&mut Split, &mut [u64]),
) -> bool {
    groups.iter_mut().for_each(Vec::clear);
    rest.copy_from_slice(dims);
    for (li, &k) in pick.iter().enumerate() {
        if let Some((a, p)) = choices[li][k] {
            if !rest[a].is_multiple_of(p) {
                return false;
            }
            rest[a] /= p;
            groups[a].push((li, p));
        }
    }
    true
}

/// The next `pick` (mixed radix over the choices, the last level fastest); `false` after
/// the last.
fn next_pick(pick: &mut [usize], choices: &Choices) -> bool {
    for li in (0..pick.len()).rev() {
        pick[li] += 1;
        if pick[li] < choices[li].len() {
            return true;
        }
        pick[li] = 0;
    }
    false
}

/// Emits the layouts of one level assignment (each axis's levels with their parts, and
/// what is left of each axis): every order of each axis's levels from order `first`
/// on, with and without packing, with `Time` steps where a shard does not fit. `whole`:
/// the assignment splits whole fan-outs only (its first order is core).
fn emit(
    t: &Tensor,
    (groups, rest): (&Split, &[u64]),
    space: Space,
    (whole, first): (bool, usize),
    acc: &mut Found,
) {
    let rank = groups.len();
    let (slots, lm_words) = (t.slots, t.lm_words);
    // The orders of each axis's sub-axes: its levels and its memory part, which goes
    // last in the core order (block distribution) and anywhere otherwise (a memory
    // part before a level distributes cyclically over it).
    let counts: Vec<usize> = (groups.iter())
        .map(|g| match space.level_orders {
            true => t.orders[g.len() + 1].len(),
            false => 1,
        })
        .collect();
    let total: usize = counts.iter().product();
    let mut chosen = vec![0usize; rank];
    let (mut mem, mut time) = (vec![0u64; rank], vec![1u64; rank]);
    for code in first..total {
        let core = code == 0 && whole;
        let mut c = code;
        for (o, &n) in chosen.iter_mut().zip(&counts) {
            *o = c % n;
            c /= n;
        }
        for packed in [false, true] {
            if packed && (!space.packing || slots == 1 || !rest[rank - 1].is_multiple_of(slots)) {
                continue;
            }
            mem.copy_from_slice(rest);
            if packed {
                mem[rank - 1] /= slots;
            }
            // Words per PE; Time steps on the first axis that can take enough of them.
            let words = mem.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
            let Some(words) = words else { continue };
            time.fill(1);
            if words > lm_words {
                let Some(steps) = time_steps(&mem, words.div_ceil(lm_words.max(1))) else {
                    continue;
                };
                for a in 0..rank {
                    mem[a] /= steps[a];
                }
                time.copy_from_slice(&steps);
            }
            let word = packed.then_some(slots);
            if !build(t, (groups, &chosen), (&time, &mem), word, &mut acc.expr) {
                continue;
            }
            let shape = acc.expr.pad.as_ref().map_or(t.dims, |(l, _)| l.as_slice());
            let bound = TensorLayout::bind(&acc.expr, t.m, Some(shape), t.dtype, t.implicit_pad);
            if let Ok(layout) = bound {
                acc.keep(layout, core);
            }
        }
    }
}

/// Builds into `expr` the parsed form of a layout: per axis its `Time` steps (`time`),
/// then its levels (a level index and its part, from `groups`) and memory part (`mem`)
/// in the order `chosen` gives (an index into [`Tensor::orders`], the memory part the
/// last item), and the packed word last on the last axis when `slots` says how many
/// elements one holds; a `1` where an axis has nothing else. `false` where a memory
/// part of 1 would sit before a level: it has no place, so only the order with it last
/// counts.
fn build(
    t: &Tensor,
    (groups, chosen): (&Split, &[usize]),
    (time, mem): (&[u64], &[u64]),
    slots: Option<u64>,
    expr: &mut LayoutExpr,
) -> bool {
    let rank = groups.len();
    for (a, subs) in expr.groups.iter_mut().enumerate() {
        let mut k = 0;
        if time[a] > 1 {
            set_sub(subs, &mut k, time[a], &AxisName::Time);
        }
        let order = &t.orders[groups[a].len() + 1][chosen[a]];
        for (j, &i) in order.iter().enumerate() {
            match groups[a].get(i) {
                Some(&(li, p)) => set_sub(subs, &mut k, p, &t.names[li]),
                None if mem[a] > 1 => set_sub(subs, &mut k, mem[a], &AxisName::Mem),
                None if j + 1 < order.len() => return false,
                None => {}
            }
        }
        match slots.filter(|_| a == rank - 1) {
            Some(w) => set_sub(subs, &mut k, w, &AxisName::W),
            None if k == 0 => set_sub(subs, &mut k, 1, &AxisName::Mem),
            None => {}
        }
        subs.truncate(k);
    }
    true
}

/// Sets sub-axis `k` of `subs` to `size` and `name` (no stride), reusing what is there,
/// and moves `k` on.
fn set_sub(subs: &mut Vec<SubAxisExpr>, k: &mut usize, size: u64, name: &AxisName) {
    match subs.get_mut(*k) {
        Some(s) => {
            s.size = size;
            if s.name != *name {
                s.name = name.clone();
            }
        }
        None => subs.push(SubAxisExpr {
            size,
            name: name.clone(),
            stride: None,
            span: 0..0,
        }),
    }
    *k += 1;
}

/// `Time` steps per axis that divide a shard of `mem` words per axis into at least
/// `need` steps: a power of two on the first axis that can take enough of them; where
/// none can, whole axes and divisors, major axes first (an axis of 150 takes 2, 3, 5,
/// ... steps), the fewest steps on the last axis they reach. `None` if even every
/// element in its own step is not enough.
fn time_steps(mem: &[u64], need: u64) -> Option<Vec<u64>> {
    let rank = mem.len();
    let mut steps = vec![1u64; rank];
    let single = (0..rank).find_map(|a| {
        (0..64)
            .map(|k| 1u64 << k)
            .take_while(|&t| t <= mem[a])
            .find(|&t| t >= need && mem[a].is_multiple_of(t))
            .map(|t| (a, t))
    });
    if let Some((a, t)) = single {
        steps[a] = t;
        return Some(steps);
    }
    let mut need = need;
    for a in 0..rank {
        if need <= 1 {
            break;
        }
        let t = (2..=mem[a])
            .find(|&t| t >= need && mem[a].is_multiple_of(t))
            .unwrap_or(mem[a]);
        steps[a] = t;
        need = need.div_ceil(t);
    }
    (need <= 1).then_some(steps)
}

/// The `Time` steps the planner tries a stream variant with ([`streamed`]): many steps
/// hide more of a long transfer, each step pays the path's latency once more, so a
/// small tensor streams best in a few.
pub const STREAM_STEPS: [u64; 3] = [16, 4, 2];

/// `l` as a stream: the same layout with at least `need` `Time` steps (as many as its
/// shard has words, if fewer) taken from its memory parts, major axes first
/// (`time_steps`), but never from axis `skip` (a consumer's reduced axis), each axis's
/// steps outermost in its group. A Load, the kernels and the Store of such a tensor
/// overlap slice by slice; steps `l` already had become memory parts first. `None` when
/// its shard has too few words.
pub fn streamed(
    m: &Machine,
    l: &TensorLayout,
    (dims, dtype, implicit_pad): (&[u64], DType, bool),
    skip: Option<usize>,
    need: u64,
) -> Option<Candidate> {
    // A layout's own `Time` steps become memory parts first (they may step the axis a
    // consumer reduces); per axis, its first memory part is where the steps come from.
    let in_memory = |c: Class| matches!(c, Class::Mem | Class::Time);
    let first_mem: Vec<u64> = l
        .groups()
        .iter()
        .enumerate()
        .map(|(a, g)| {
            g.iter()
                .find(|s| in_memory(s.class) && skip != Some(a))
                .map_or(1, |s| s.size)
        })
        .collect();
    let words = first_mem.iter().try_fold(1u64, |a, &b| a.checked_mul(b))?;
    if words < 2 {
        return None;
    }
    let steps = time_steps(&first_mem, need.min(words))?;
    let levels = l.levels();
    let mut body = Vec::with_capacity(l.groups().len());
    for (g, &t) in l.groups().iter().zip(&steps) {
        let mut subs: Vec<String> = Vec::with_capacity(g.len() + 1);
        if t > 1 {
            subs.push(format!("{t}_Time"));
        }
        let mut taken = t <= 1;
        for s in g {
            match s.class {
                Class::Mem | Class::Time if !taken => {
                    taken = true;
                    if s.size / t > 1 {
                        subs.push((s.size / t).to_string());
                    }
                }
                Class::Mem | Class::Time => subs.push(s.size.to_string()),
                Class::Level(i) => subs.push(format!("{}_{}", s.size, levels.get(i)?.name)),
                Class::W => subs.push(format!("{}_W", s.size)),
            }
        }
        if subs.is_empty() {
            subs.push("1".into());
        }
        body.push(format!("({})", subs.join(", ")));
    }
    let pad = match l.padded_shape() == l.logical_shape() {
        true => String::new(),
        false => format!(
            "({})/",
            (l.logical_shape().iter().map(u64::to_string))
                .collect::<Vec<_>>()
                .join(",")
        ),
    };
    bind_text(
        m,
        &format!("{pad}({})", body.join(", ")),
        dims,
        dtype,
        implicit_pad,
    )
}

/// Binds a layout text (canonical or not) for a tensor, as the planner's seeds need.
pub fn bind_text(
    m: &Machine,
    text: &str,
    dims: &[u64],
    dtype: DType,
    implicit_pad: bool,
) -> Option<Candidate> {
    let expr = LayoutExpr::parse(text).ok()?;
    let layout = TensorLayout::bind(&expr, m, Some(dims), dtype, implicit_pad).ok()?;
    Some(Candidate { layout, core: true })
}

#[cfg(test)]
mod tests;
