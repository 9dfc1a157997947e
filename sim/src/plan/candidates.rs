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

use mnsim_arch::layout::{Class, NO_BCAST, layout_text};
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

/// One candidate: its canonical text and the bound layout.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub text: String,
    pub layout: TensorLayout,
    /// Whole fan-outs only, levels root-most first: the core of the space, which the
    /// search covers first.
    pub core: bool,
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

/// The candidates of a tensor of `dims` (at its bound) and `dtype` on `m`, in a fixed
/// order: the core, then (as `space` allows) parts of fan-outs, then other level orders;
/// within a tier, level assignments in mixed radix over the levels root-most first, then
/// level orders, then unpacked before packed. At most `space.max` beyond the core.
pub fn generate(
    m: &Machine,
    dims: &[u64],
    dtype: DType,
    implicit_pad: bool,
    space: Space,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut seen: HashSet<String> = HashSet::default();
    let mut tried: HashSet<String> = HashSet::default();
    let core = Space {
        partial_fanout: false,
        level_orders: false,
        max: usize::MAX,
        ..space
    };
    let mut tiers = vec![core];
    if space.partial_fanout {
        tiers.push(Space {
            level_orders: false,
            ..space
        });
    }
    if space.level_orders {
        tiers.push(space);
    }
    for tier in tiers {
        tier_of(
            m,
            dims,
            dtype,
            implicit_pad,
            tier,
            &mut tried,
            &mut seen,
            &mut out,
        );
        if out.len() >= space.max {
            break;
        }
    }
    // The core first (stable: otherwise in generation order).
    out.sort_by_key(|c| !c.core);
    out
}

/// The candidates of one tier (see [`generate`]) not generated before.
#[allow(clippy::too_many_arguments)]
fn tier_of(
    m: &Machine,
    dims: &[u64],
    dtype: DType,
    implicit_pad: bool,
    space: Space,
    tried: &mut HashSet<String>,
    seen: &mut HashSet<String>,
    out: &mut Vec<Candidate>,
) {
    let levels = m.addressable_levels();
    let rank = dims.len();
    if rank == 0 || dims.contains(&0) {
        return;
    }
    let slots = (m.word_bytes / dtype.bytes().max(1)).max(1);
    let lm_words = m.leaf_memory_bytes() / m.word_bytes.max(1);
    // Per level: None (replicated) or (axis, part).
    let choices: Vec<Vec<Option<(usize, u64)>>> = levels
        .iter()
        .map(|l| {
            let mut c = vec![None];
            for a in 0..rank {
                for p in parts(l.fanout, space.partial_fanout) {
                    c.push(Some((a, p)));
                }
            }
            c
        })
        .collect();
    let mut pick = vec![0usize; levels.len()];
    'assign: loop {
        if out.len() >= space.max {
            break;
        }
        // One assignment of levels to axes.
        let mut groups: Vec<Vec<(usize, u64)>> = vec![Vec::new(); rank];
        let mut rest = dims.to_vec();
        let mut ok = true;
        for (li, &k) in pick.iter().enumerate() {
            if let Some((a, p)) = choices[li][k] {
                if !rest[a].is_multiple_of(p) {
                    ok = false;
                    break;
                }
                rest[a] /= p;
                groups[a].push((li, p));
            }
        }
        if ok {
            emit(
                &levels,
                &groups,
                &rest,
                slots,
                lm_words,
                space,
                m,
                dims,
                dtype,
                implicit_pad,
                tried,
                seen,
                out,
            );
        }
        // Next assignment (mixed radix).
        for li in (0..pick.len()).rev() {
            pick[li] += 1;
            if pick[li] < choices[li].len() {
                continue 'assign;
            }
            pick[li] = 0;
        }
        break;
    }
}

/// The level index that stands for an axis's memory part in a chosen order.
const MEM: usize = usize::MAX;

/// The sub-axes of a layout as text, axis by axis: its `Time` steps (`time`), then its
/// levels (a level index and its part) and memory part (`mem`, at [`MEM`]) in the order
/// `chosen` gives, and the packed word last on the last axis when `slots` says how many
/// elements one holds. `None` where a memory part of 1 would sit before a level: it has
/// no place, so only the order with it last counts.
fn body_text(
    levels: &[mnsim_arch::machine::AddrLevel],
    chosen: &[&Vec<(usize, u64)>],
    (time, mem): (&[u64], &[u64]),
    slots: Option<u64>,
) -> Option<Vec<Vec<String>>> {
    let rank = chosen.len();
    let mut body: Vec<Vec<String>> = Vec::with_capacity(rank);
    for a in 0..rank {
        let mut subs: Vec<String> = Vec::new();
        if time[a] > 1 {
            subs.push(format!("{}_Time", time[a]));
        }
        let last_packed = slots.filter(|_| a == rank - 1);
        for &(li, p) in chosen[a] {
            if li == MEM {
                if mem[a] > 1 {
                    subs.push(mem[a].to_string());
                } else if chosen[a].last() != Some(&(MEM, 0)) {
                    return None;
                }
            } else {
                subs.push(format!("{p}_{}", levels[li].name));
            }
        }
        match last_packed {
            Some(w) => subs.push(format!("{w}_W")),
            None if subs.is_empty() => subs.push("1".to_string()),
            None => {}
        }
        body.push(subs);
    }
    Some(body)
}

/// Emits the layouts of one level assignment: every order of each axis's levels, with
/// and without packing, with `Time` steps where a shard does not fit.
#[allow(clippy::too_many_arguments)]
fn emit(
    levels: &[mnsim_arch::machine::AddrLevel],
    groups: &[Vec<(usize, u64)>],
    rest: &[u64],
    slots: u64,
    lm_words: u64,
    space: Space,
    m: &Machine,
    dims: &[u64],
    dtype: DType,
    implicit_pad: bool,
    tried: &mut HashSet<String>,
    seen: &mut HashSet<String>,
    out: &mut Vec<Candidate>,
) {
    let rank = dims.len();
    // The order of each axis's sub-axes: its levels and its memory part (`MEM`), which
    // goes last in the core order (block distribution) and anywhere otherwise (a
    // memory part before a level distributes cyclically over it).
    let orders: Vec<Vec<Vec<(usize, u64)>>> = groups
        .iter()
        .map(|g| {
            let mut items = g.clone();
            items.push((MEM, 0));
            if space.level_orders {
                permutations(&items)
            } else {
                vec![items]
            }
        })
        .collect();
    let total: usize = orders.iter().map(Vec::len).product();
    for code in 0..total {
        let core = code == 0
            && groups
                .iter()
                .flatten()
                .all(|&(li, p)| p == levels[li].fanout);
        let mut c = code;
        let chosen: Vec<&Vec<(usize, u64)>> = orders
            .iter()
            .map(|o| {
                let x = &o[c % o.len()];
                c /= o.len();
                x
            })
            .collect();
        for packed in [false, true] {
            if packed && (!space.packing || slots == 1 || !rest[rank - 1].is_multiple_of(slots)) {
                continue;
            }
            let mut mem = rest.to_vec();
            if packed {
                mem[rank - 1] /= slots;
            }
            // Words per PE; Time steps on the first axis that can take enough of them.
            let words = mem.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
            let Some(words) = words else { continue };
            let mut time = vec![1u64; rank];
            if words > lm_words {
                let Some(steps) = time_steps(&mem, words.div_ceil(lm_words.max(1))) else {
                    continue;
                };
                for a in 0..rank {
                    mem[a] /= steps[a];
                }
                time = steps;
            }
            let word = packed.then_some(slots);
            let Some(body) = body_text(levels, &chosen, (&time, &mem), word) else {
                continue;
            };
            let text = layout_text(None, &body, NO_BCAST);
            // An earlier tier bound this text already.
            if !tried.insert(text.clone()) {
                continue;
            }
            let Ok(expr) = LayoutExpr::parse(&text) else {
                continue;
            };
            if let Ok(layout) = TensorLayout::bind(&expr, m, Some(dims), dtype, implicit_pad) {
                let canon = layout.canonical();
                if seen.insert(canon.clone()) {
                    out.push(Candidate {
                        text: canon,
                        layout,
                        core,
                    });
                }
            }
        }
    }
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
    bind_text(
        m,
        &format!("({})", body.join(", ")),
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
    Some(Candidate {
        text: layout.canonical(),
        layout,
        core: true,
    })
}
