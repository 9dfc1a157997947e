//! Identical layers walked twice, not every time (docs/planner.md, "Identical layers
//! walked twice"). Where a run of three or more layers is alike op for op (each reads
//! the one before it as the one before it read its own), an evaluation walks the first
//! two of the run and not the rest: the ops after the run read the last walked layer's
//! tensors in place of the last skipped layer's, and the plan is charged the skipped
//! layers as copies of the second walked one (its resources' holds and joules, and the
//! time between the two layers' ends). An evaluation of GPT-2 small then walks 5 of its
//! 12 layers (the two before its run of like layers, the first two of the run and the
//! last layer). Its variables in the skipped layers follow those of the walked ones
//! ([`super::layers`]), so no plan the search scores has a layer it did not see; the
//! plans it keeps are confirmed by timing runs of the whole program.

use super::state::State;
use super::{Effect, Failure, Model};
use crate::ids::RegionId;
use crate::program::{EntityRef as _, TensorId};
use crate::timeline::{self, Resource};

/// Layers an evaluation does not walk ([`Model::find_skip`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Skip {
    /// The ops not walked, `from..to`: whole layers, each alike op for op to the one
    /// before it.
    pub from: usize,
    pub to: usize,
    /// The last op of the layer before the last one walked (which ends at `from - 1`):
    /// the time between the two ends is a layer's.
    pub mark: usize,
    /// Layers in `from..to`.
    pub times: u64,
    /// The tensors the ops after `to` name that the last skipped layer wrote, each with
    /// its like in the last walked layer, which no op after `to` names: (walked,
    /// skipped).
    pub moves: Vec<Move>,
    /// The other tensors the ops after `to` name that the skipped layers wrote, each
    /// with its like in the last walked layer: LM holds them beside their likes, as it
    /// holds every layer's (a decode step's caches, concatenated at its end).
    pub copies: Vec<Move>,
    /// Tensors written before `from` and freed in `from..to` that no op after it names:
    /// freed where the skipped layers would have.
    pub frees: Vec<TensorId>,
    /// Each variable of the skipped layers and of the first walked one, with that of
    /// the last walked layer's op at its place: a plan skips the layers only where
    /// they agree ([`Skip::holds_for`]).
    pub likes: Vec<(usize, usize)>,
}

impl Skip {
    /// Whether `pick` lays out every skipped layer, and the layer before the last
    /// walked one, as it lays out the last walked one: only then are the skipped
    /// layers copies of it.
    pub fn holds_for(&self, pick: &[super::LayoutId]) -> bool {
        self.likes.iter().all(|&(v, u)| pick[v] == pick[u])
    }
}

/// A tensor of the last walked layer read in place of its like in the last skipped one:
/// (walked, skipped).
type Move = (TensorId, TensorId);

/// What the ops after the skipped layers read of them ([`Skip`]'s fields).
struct Moves {
    moves: Vec<Move>,
    copies: Vec<Move>,
    frees: Vec<TensorId>,
}

/// What an op names of a tensor: its last writer before the op, where there is one.
type Ref = (TensorId, Option<usize>);

/// How an op of a layer names a tensor, as the same op of a like layer must.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Relation {
    /// Never written before (in DRAM from the start: a layer's own weights).
    Input,
    /// Written by the layer's op at this offset.
    Own(usize),
    /// Written by the layer before's op this far from its last.
    Prev(usize),
    /// Written outside both: the same tensor in both layers.
    Outside(TensorId),
}

impl Model {
    /// The run of layers alike op for op that an evaluation may skip but for its first
    /// two, the longest of at least three; `None` where there is none, or where the ops
    /// after it could not read the last walked layer in place of the last skipped one.
    pub(super) fn find_skip(&self) -> Option<Skip> {
        let spans = self.layer_spans().filter(|s| s.len() >= 3)?;
        let refs = self.refs();
        let mut best: Option<(usize, usize)> = None;
        let mut k = 0;
        while k < spans.len() {
            let mut e = k;
            while e + 1 < spans.len() && self.alike(&spans, (e, e + 1), &refs) {
                e += 1;
            }
            if e >= k + 2 && best.is_none_or(|(a, b)| e - k > b - a) {
                best = Some((k, e));
            }
            k = e + 1;
        }
        let (s, e) = best?;
        let (from, to) = (spans[s + 2].0, spans[e].1 + 1);
        let walked = spans[s + 1].0;
        let len = spans[s + 1].1 + 1 - walked;
        // Every variable of the skipped layers follows the variable of the last walked
        // layer's op at its place.
        let mut likes = Vec::new();
        for i in (spans[s].0..walked).chain(from..to) {
            if let Some(v) = self.ops[i].var {
                let offset = if i < walked {
                    i - spans[s].0
                } else {
                    (i - from) % len
                };
                let u = self.ops[walked + offset].var?;
                if self.vars[v].ops[0] == i && v != u {
                    likes.push((v, u));
                }
                if i < walked {
                    continue;
                }
                if self.leader(v) == v || self.leader(v) != self.leader(u) {
                    return None;
                }
            }
        }
        let Moves {
            moves,
            copies,
            frees,
        } = self.skip_moves((from, to), (len, walked), &refs)?;
        Some(Skip {
            from,
            to,
            mark: spans[s].1,
            times: (e - s - 1) as u64,
            moves,
            copies,
            frees,
            likes,
        })
    }

    /// The op ranges of the layers, in program order (`(first, last)`), where each
    /// layer's ops are one run; `None` where a layer's are not.
    fn layer_spans(&self) -> Option<Vec<(usize, usize)>> {
        let p = &self.res.program;
        let mut spans: Vec<(u32, usize, usize)> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            let Some(l) = p.ops[op.op].place.layer else {
                continue;
            };
            let goes_on = spans.last().is_some_and(|s| s.0 == l && s.2 + 1 == i);
            if goes_on {
                if let Some(last) = spans.last_mut() {
                    last.2 = i;
                }
            } else if spans.iter().any(|s| s.0 == l) {
                return None;
            } else {
                spans.push((l, i, i));
            }
        }
        Some(spans.into_iter().map(|(_, a, b)| (a, b)).collect())
    }

    /// Per op, the tensors it reads and writes (frees), each with its last writer
    /// before the op (a Free writes nothing).
    fn refs(&self) -> Vec<Vec<Ref>> {
        let mut last: Vec<Option<usize>> = vec![None; self.res.program.tensors.len()];
        let mut out = Vec::with_capacity(self.ops.len());
        for (i, op) in self.ops.iter().enumerate() {
            let named = op.reads.iter().chain(&op.writes);
            out.push(named.map(|&t| (t, last[t.index()])).collect());
            if op.effect != Effect::Free
                && let Some(t) = op.writes
            {
                last[t.index()] = Some(i);
            }
        }
        out
    }

    /// Whether layer `y` (right after layer `x`) is alike `x` op for op: the same ops
    /// (kind, kernel, fixed layout, buffers, algorithm; a variable or not), naming
    /// tensors of the same shapes and dtypes in the same relations to their layers.
    fn alike(&self, spans: &[(usize, usize)], (x, y): (usize, usize), refs: &[Vec<Ref>]) -> bool {
        let ((fx, lx), (fy, ly)) = (spans[x], spans[y]);
        if fy != lx + 1 || ly - fy != lx - fx {
            return false;
        }
        let p = &self.res.program;
        let relation = |k: usize, (t, w): Ref| -> Relation {
            let (first, _) = spans[k];
            let prev = k
                .checked_sub(1)
                .map(|j| spans[j])
                .filter(|s| s.1 + 1 == first);
            match (w, prev) {
                (None, _) => Relation::Input,
                (Some(w), _) if w >= first => Relation::Own(w - first),
                (Some(w), Some((pf, pl))) if w >= pf => Relation::Prev(pl - w),
                (Some(_), _) => Relation::Outside(t),
            }
        };
        (0..=lx - fx).all(|j| {
            let (a, b) = (&self.ops[fx + j], &self.ops[fy + j]);
            let (pa, pb) = (&p.ops[a.op], &p.ops[b.op]);
            let same_op = a.effect == b.effect
                && a.fixed == b.fixed
                && a.var.is_some() == b.var.is_some()
                && pa.name == pb.name
                && pa.buffers == pb.buffers
                && pa.algorithm == pb.algorithm
                && self.kernel(a.op) == self.kernel(b.op);
            let (ra, rb) = (&refs[fx + j], &refs[fy + j]);
            same_op
                && ra.len() == rb.len()
                && ra.iter().zip(rb).all(|(&u, &v)| {
                    let (tu, tv) = (self.tensor(u.0), self.tensor(v.0));
                    tu.dtype == tv.dtype
                        && tu.dims_at_bound == tv.dims_at_bound
                        && tu.runtime_dims == tv.runtime_dims
                        && relation(x, u) == relation(y, v)
                })
        })
    }

    /// What the ops after `from..to` name of the skipped layers (each `len` ops, the
    /// last walked one from `walked`): each tensor a skipped layer wrote, read in place
    /// of its like in the last walked layer (moved where the like is not named after
    /// them and the last skipped layer wrote it, else copied), and the tensors to free
    /// in their place. `None` where they name a tensor written both before and in the
    /// skipped layers, or load what the skipped layers stored.
    fn skip_moves(
        &self,
        (from, to): (usize, usize),
        (len, walked): (usize, usize),
        refs: &[Vec<Ref>],
    ) -> Option<Moves> {
        let n = self.res.program.tensors.len();
        let mut named_after = vec![false; n];
        let mut written_before = vec![false; n];
        let mut stored_in = vec![false; n];
        for (i, op) in self.ops.iter().enumerate() {
            if i >= to {
                for &(t, _) in &refs[i] {
                    named_after[t.index()] = true;
                }
            } else if i < from && op.effect != Effect::Free {
                if let Some(t) = op.writes {
                    written_before[t.index()] = true;
                }
            } else if i >= from && op.effect == Effect::Store {
                for t in &op.reads {
                    stored_in[t.index()] = true;
                }
            }
        }
        let last = to.checked_sub(len)?;
        let (mut moves, mut copies): (Vec<Move>, Vec<Move>) = (Vec::new(), Vec::new());
        for r in &refs[to..] {
            for &(t, w) in r {
                let Some(w) = w.filter(|w| (from..to).contains(w)) else {
                    continue;
                };
                let like = self.ops[walked + (w - from) % len].writes?;
                if like == t || moves.contains(&(like, t)) || copies.contains(&(like, t)) {
                    continue;
                }
                if written_before[t.index()] {
                    return None;
                }
                match w >= last && !named_after[like.index()] {
                    true => moves.push((like, t)),
                    false => copies.push((like, t)),
                }
            }
        }
        // A Load after the skipped layers of what they stored: not modelled.
        let moved = |t: TensorId| moves.iter().chain(&copies).any(|m| m.1 == t);
        let loads_stored = (self.ops[to..].iter())
            .filter(|o| o.effect == Effect::Load)
            .flat_map(|o| o.writes)
            .any(|t| stored_in[t.index()] && !moved(t));
        if loads_stored {
            return None;
        }
        let mut frees: Vec<TensorId> = Vec::new();
        for (i, op) in self.ops.iter().enumerate().take(to).skip(from) {
            if op.effect != Effect::Free {
                continue;
            }
            for &(t, _) in &refs[i] {
                let like = moves.iter().any(|m| m.0 == t);
                if written_before[t.index()] && !named_after[t.index()] && !like {
                    frees.push(t);
                }
            }
        }
        Some(Moves {
            moves,
            copies,
            frees,
        })
    }

    /// `f` on this model with every op walked, none skipped; skipping as it was after.
    pub(super) fn walking_all<T>(&mut self, f: impl FnOnce(&mut Model) -> T) -> T {
        let skipping = std::mem::replace(&mut self.skipping, false);
        let out = f(self);
        self.skipping = skipping;
        out
    }

    /// The walk `w` reached the skipped layers (`skip.from`): the walked layers' like
    /// tensors become the skipped ones the ops after them read, the tensors the skipped
    /// layers free are freed, and the skipped layers are charged as copies of the last
    /// walked one (holds and joules; their time when the plan is placed).
    pub(super) fn skip_layers(&self, skip: &Skip, w: &mut State) -> Result<(), Failure> {
        // The walk passed the mark (before the last walked layer) on its way here.
        let (ntasks, busy, joules) = w.at_mark.take().unwrap_or_default();
        let times = skip.times;
        let before = |r: Resource| busy.iter().find(|b| b.0 == r).map_or(0, |b| b.1);
        let added: Vec<(Resource, u64)> = (w.busy.iter())
            .map(|&(r, c)| (r, c.saturating_sub(before(r)).saturating_mul(times)))
            .collect();
        for (r, c) in added {
            timeline::tally(&mut w.busy, r, c);
        }
        w.dynamic_j += (w.dynamic_j - joules).max(0.0) * times as f64;
        w.marks = Some([ntasks, w.ntasks]);
        // LM holds the copies (as many from each skipped layer) on top of what it holds
        // now, and all but the last layer's while the last one works as the last walked
        // one did (its peak): either past LM, the plan stops here.
        let words = |&(like, _): &Move| w.st[like.index()].map_or(0, |s| self.words(s));
        let all: u64 = skip.copies.iter().map(words).sum();
        let during = all - all / times.max(1);
        let lm = self.lm_words;
        if let Some(&(_, t)) = skip.copies.first()
            && (w.charged + all > lm || w.peak + during > lm)
        {
            return Err(Failure::NoRoom {
                tensor: self.tensor(t).name.clone(),
                need: all,
                free: lm.saturating_sub(w.charged),
                lm,
            });
        }
        for &(like, t) in &skip.copies {
            let (a, b) = (like.index(), t.index());
            w.st[b] = w.st[a];
            w.dram[b] = w.dram[a];
            w.regions.of[b] = RegionId(w.regions.next);
            w.regions.next = w.regions.next.saturating_add(1);
            w.charged += w.st[b].map_or(0, |s| self.words(s));
        }
        for &(like, t) in &skip.moves {
            let (a, b) = (like.index(), t.index());
            w.st[b] = w.st[a].take();
            w.dram[b] = w.dram[a];
            w.regions.of[b] = w.regions.of[a];
            w.writer[b] = w.writer[a].take();
            w.taken[b] = std::mem::take(&mut w.taken[a]);
            w.seconds[b] = std::mem::take(&mut w.seconds[a]);
        }
        for &t in &skip.frees {
            self.free(t, w);
        }
        w.cycles.resize(w.cycles.len() + (skip.to - skip.from), 0);
        Ok(())
    }
}
