//! A transfer's facts per PE: node figures from the facts of the PEs under each node,
//! and the PEs' ready cycles (what reports and the world's statistics read).

use super::{NONE, NodeStat, PeFact, StageNodes, StageSpec, cycles};

/// Splits facts sorted by PE into runs of equal `p / per` (the PEs under one node of a
/// level with `per` leaves under each node): (node index, its facts).
pub(super) fn groups(
    f: &[(u64, PeFact)],
    per: u64,
) -> impl Iterator<Item = (u64, &[(u64, PeFact)])> {
    let per = per.max(1);
    let mut rest = f;
    std::iter::from_fn(move || {
        let first = rest.first()?.0 / per;
        // A node holds at most `per` PEs (distinct, in order): search only those.
        let end = (first + 1).saturating_mul(per);
        let window = rest.len().min(usize::try_from(per).unwrap_or(usize::MAX));
        let n = rest[..window].partition_point(|x| x.0 < end);
        let (g, r) = rest.split_at(n);
        rest = r;
        Some((first, g))
    })
}

/// Sum of the values over the distinct keys (NONE skipped), and an order-independent
/// signature of the key set. Sorting a reused buffer: no hashing, no per-call clearing
/// of a large table.
fn distinct(buf: &mut Vec<(u64, u64)>, items: impl Iterator<Item = (u64, u64)>) -> (u64, u64) {
    let sig_of = |k: u64| k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
    let mut items = items.filter(|x| x.0 != NONE).peekable();
    let Some(first) = items.next() else {
        return (0, 0);
    };
    if items.peek().is_none() {
        // One PE (a child that is a PE): no sorting.
        return (first.1, sig_of(first.0));
    }
    buf.clear();
    buf.push(first);
    buf.extend(items);
    // Keys of a layout grow with the PE index: usually sorted already.
    if !buf.is_sorted() {
        buf.sort_unstable();
    }
    buf.dedup_by_key(|x| x.0);
    let sum = buf.iter().map(|x| x.1).sum();
    let sig = buf.iter().fold(0u64, |s, x| s.wrapping_add(sig_of(x.0)));
    (sum, sig)
}

/// One stage's times per node, for the PEs' ready cycles: the fact set it charges, the
/// PEs under one node, and (node, cycles) of every node that takes part, in node order.
pub(super) struct Timer {
    pub set: usize,
    pub per: u64,
    pub nodes: Vec<(u64, u64)>,
}

/// Every PE that takes part (in a fact set some stage charges), with its slowest stage
/// plus the path latency, as runs of PEs `[first, end)` with one cycle, in PE order.
pub(super) fn ready_runs(
    facts: [&[(u64, PeFact)]; 2],
    timers: &[Timer],
    local_bw: Option<f64>,
    lat: u64,
) -> Vec<(u64, u64, u64)> {
    let used = |set: usize| timers.iter().any(|t| t.set == set) || (set == 0 && local_bw.is_some());
    let a: &[(u64, PeFact)] = if used(0) { facts[0] } else { &[] };
    let b: &[(u64, PeFact)] = if used(1) { facts[1] } else { &[] };
    let (mut i, mut j) = (0usize, 0usize);
    let mut at = vec![0usize; timers.len()];
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    loop {
        let (pa, pb) = (a.get(i).map(|x| x.0), b.get(j).map(|x| x.0));
        let p = match (pa, pb) {
            (None, None) => break,
            (Some(x), None) | (None, Some(x)) => x,
            (Some(x), Some(y)) => x.min(y),
        };
        let inside = [pa == Some(p), pb == Some(p)];
        let mut t = 0u64;
        for (tm, c) in timers.iter().zip(&mut at) {
            if !inside[tm.set] {
                continue;
            }
            // Every PE of the set lies under a node of the list; PEs come in order.
            let n = p / tm.per.max(1);
            while tm.nodes.get(*c).is_some_and(|x| x.0 < n) {
                *c += 1;
            }
            t = t.max(tm.nodes.get(*c).map_or(0, |x| x.1));
        }
        if inside[0] {
            if let Some(bw) = local_bw {
                t = t.max(cycles(a[i].1.bytes, bw));
            }
            i += 1;
        }
        if inside[1] {
            j += 1;
        }
        let t = t.saturating_add(lat);
        match out.last_mut() {
            Some(r) if r.1 == p && r.2 == t => r.1 = p + 1,
            _ => out.push((p, p + 1, t)),
        }
    }
    out
}

/// A link stage's nodes from the facts `f` of its PEs: per node of `per` PEs that takes
/// part, its distinct bytes (by reduced keys when the stage reduces) and the most bytes
/// one of its children of `child` PEs receives.
pub(super) fn link(f: &[(u64, PeFact)], st: &StageSpec, per: u64, child: u64) -> StageNodes {
    let mut buf: Vec<(u64, u64)> = Vec::new();
    let mut child_sig: Vec<(u64, u64)> = Vec::new();
    let mut out = StageNodes::empty();
    for (n, under) in groups(f, per) {
        let parent_keys = under
            .iter()
            .map(|(_, x)| (if st.reduce { x.reduced_key } else { x.key }, x.bytes));
        let pd = distinct(&mut buf, parent_keys).0;
        child_sig.clear();
        let mut maxc = 0u64;
        for (_, kid) in groups(under, child) {
            let (b, sig) = distinct(&mut buf, kid.iter().map(|(_, x)| (x.key, x.bytes)));
            if b > 0 {
                child_sig.push((sig, b));
            }
            out.total_child += b;
            maxc = maxc.max(b);
        }
        out.max_child = out.max_child.max(maxc);
        if child_sig.len() > 1 {
            out.any_multi = true;
            if child_sig.iter().any(|s| *s != child_sig[0]) {
                out.all_same = false;
            }
        }
        out.nodes.push(NodeStat {
            n,
            bytes: pd,
            max_child: maxc,
            count: 1,
        });
    }
    out
}

/// A DRAM stage's nodes of `per` PEs each: the real bytes of their distinct shards.
pub(super) fn dram(f: &[(u64, PeFact)], per: u64, elem_bytes: u64) -> Vec<NodeStat> {
    let mut buf: Vec<(u64, u64)> = Vec::new();
    groups(f, per)
        .map(|(n, under)| NodeStat {
            n,
            bytes: distinct(
                &mut buf,
                under.iter().map(|(_, x)| (x.key, x.valid * elem_bytes)),
            )
            .0,
            max_child: 0,
            count: 1,
        })
        .collect()
}
