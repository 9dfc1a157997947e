//! Stream variants of a layout: `Time` steps taken from its memory parts so a Load, the
//! kernels and the Store of the tensor overlap slice by slice, and the `Time` steps a
//! shard that does not fit the PE's memory needs.

use super::{Candidate, bind_text};
use mnsim_arch::layout::Class;
use mnsim_arch::{DType, Machine, TensorLayout};

/// `Time` steps per axis that divide a shard of `mem` words per axis into at least
/// `need` steps: a power of two on the first axis that can take enough of them; where
/// none can, whole axes and divisors, major axes first (an axis of 150 takes 2, 3, 5,
/// ... steps), the fewest steps on the last axis they reach. `None` if even every
/// element in its own step is not enough.
pub(super) fn time_steps(mem: &[u64], need: u64) -> Option<Vec<u64>> {
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
/// (`time_steps`), but never from the axes `skip` (a consumer's reduced axes), each axis's
/// steps outermost in its group. A Load, the kernels and the Store of such a tensor
/// overlap slice by slice; steps `l` already had become memory parts first. `None` when
/// its shard has too few words.
pub fn streamed(
    m: &Machine,
    l: &TensorLayout,
    (dims, dtype, implicit_pad): (&[u64], DType, bool),
    skip: &[usize],
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
                .find(|s| in_memory(s.class) && !skip.contains(&a))
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
