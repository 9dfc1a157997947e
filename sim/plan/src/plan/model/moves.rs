//! Kernel moves (docs/planner.md, the kernel pass): the operands of one kernel moved
//! together to each of its strategies ([`super::joint`]), from a complete assignment.
//!
//! A move of one variable, or of one chain, cannot leave a basin in which a kernel's
//! operands come from two chains that must change at once: GPT-2's tied head reads the
//! embedding table through a transpose and the last norm's output, and its good plan
//! splits the vocabulary (padded) over the L2Bs and L1Bs and the hidden axis over the
//! MABs and PEs, in both operands. A kernel move sets each operand to the layout a
//! strategy gives it: an operand whose variable follows another's through a view or an
//! elementwise kernel is set through its source (the view's inverse: a transpose's, a
//! reshape's; the same layout), and an elementwise kernel's other inputs with it, back
//! along the chain for at most a given number of kernels ([`WALKS`]); where a tie does
//! not invert, or the walk ends, the variable itself is set (its producer then writes
//! it as the model can: with a Relayout, or not at all, and the move fails). The tied
//! variables that follow the ones set are then derived again.

use super::{LayoutId, Model};
use crate::program::EntityRef as _;

/// Most strategies of one kernel a move list holds (the first of them, in the order the
/// joint seeds try them: those that give every level a variable first).
const MOVES_PER_KERNEL: usize = 1024;

/// How many kernels back along a chain a move sets an operand's producers: each
/// strategy is tried with each (a long walk keeps a chain legal, and moves more of it).
const WALKS: [usize; 4] = [0, 2, 6, usize::MAX];

impl Model {
    /// The kernels of `pick` ranked by the model's cycles of the ops that touch their
    /// operands (the kernel itself, the Loads, Relayouts, Reduces and Stores of the
    /// tensors it reads and writes), hottest first, at most `n`; only kernels whose
    /// operands' variables lead their layer class (a follower moves with its leader).
    pub fn hot_kernels(&mut self, pick: &[LayoutId], n: usize) -> Vec<usize> {
        let (e, cycles, _) = self.explain(pick);
        if e.failure.is_some() {
            return Vec::new();
        }
        let ntensors = self.res.program.tensors.len();
        let mut touched = vec![0u64; ntensors];
        for (i, op) in self.ops.iter().enumerate() {
            let c = cycles.get(i).copied().unwrap_or(0);
            for t in op.reads.iter().chain(&op.writes) {
                touched[t.index()] = touched[t.index()].saturating_add(c);
            }
        }
        let mut heat: Vec<(u64, usize)> = Vec::new();
        for (k, op) in self.ops.iter().enumerate() {
            if !op.is_kernel {
                continue;
            }
            let mut tensors: Vec<usize> = (op.reads.iter().chain(&op.writes))
                .map(|t| t.index())
                .collect();
            tensors.sort_unstable();
            tensors.dedup();
            let vars: Vec<usize> = (0..op.reads.len() + 1)
                .filter_map(|j| self.decider(k, j).ok())
                .collect();
            if vars.is_empty() || vars.iter().any(|&v| self.leader(v) != v) {
                continue;
            }
            let h = tensors
                .iter()
                .fold(0u64, |a, &t| a.saturating_add(touched[t]));
            if h > 0 {
                heat.push((h, k));
            }
        }
        heat.sort_by_key(|&(h, k)| (std::cmp::Reverse(h), k));
        heat.into_iter().take(n).map(|(_, k)| k).collect()
    }

    /// `pick` with kernel op `k`'s operands moved to each of its legal strategies (see
    /// the module's documentation), distinct and other than `pick`; at most
    /// [`MOVES_PER_KERNEL`].
    pub fn kernel_moves(&mut self, pick: &[LayoutId], k: usize) -> Vec<Vec<LayoutId>> {
        let Some(shape) = self.kernel_shape(k) else {
            return Vec::new();
        };
        let Some(kern) = self.kernel(self.ops[k].op).cloned() else {
            return Vec::new();
        };
        let deciders: Vec<Result<usize, Option<LayoutId>>> =
            (0..shape.0.len()).map(|j| self.decider(k, j)).collect();
        let mut out: Vec<Vec<LayoutId>> = Vec::new();
        let mut distinct: std::collections::HashSet<Vec<LayoutId>> = Default::default();
        for full in [true, false] {
            let list = self.bound_strategies(k, &shape, full);
            for b in list {
                if out.len() >= MOVES_PER_KERNEL {
                    return out;
                }
                // A fixed operand must be as the strategy has it.
                let agrees = (b.ids.iter().zip(&deciders))
                    .all(|(&id, d)| d.as_ref().err().copied().flatten().is_none_or(|l| l == id));
                if !agrees || !self.legal_on(&kern, &b.ids) {
                    continue;
                }
                for walk in WALKS {
                    let mut trial = pick.to_vec();
                    let mut set = vec![false; pick.len()];
                    for (j, d) in deciders.iter().enumerate() {
                        if let Ok(v) = *d {
                            self.set_through_ties(&mut trial, (v, b.ids[j]), walk, &mut set);
                        }
                    }
                    self.propagate_from(&mut trial, &set);
                    self.follow_layers(&mut trial);
                    if trial != pick && distinct.insert(trial.clone()) {
                        out.push(trial);
                    }
                }
            }
            if !out.is_empty() {
                break;
            }
        }
        out
    }

    /// Sets variable `v` to `id` in `pick`: where `v` follows another variable through
    /// a tie that inverts (a view's, an elementwise kernel's), the inputs of the kernel
    /// that writes it are set too, to the layouts it reads them through (its source, and
    /// an elementwise kernel's other inputs of its shape), back along their chains for
    /// at most `walk` kernels. `seen` marks the variables set so far (and the followers
    /// of another layer's, which are left to follow their leader).
    fn set_through_ties(
        &mut self,
        pick: &mut [LayoutId],
        (v, id): (usize, LayoutId),
        walk: usize,
        seen: &mut [bool],
    ) {
        let mut todo = vec![(v, id, 0usize)];
        while let Some((v, id, depth)) = todo.pop() {
            if std::mem::replace(&mut seen[v], true) || self.leader(v) != v {
                continue;
            }
            let source = self.ties[v].as_ref().map(|t| t.source);
            let Some(source) = source.filter(|_| depth < walk) else {
                pick[v] = id;
                continue;
            };
            let k = self.vars[v].ops[0];
            let nreads = self.ops[k].reads.len();
            let slot = (0..nreads).find(|&j| self.decider(k, j) == Ok(source));
            let from = slot.and_then(|j| self.producer_layout(k, j, id));
            let Some(f) = from.filter(|&f| self.derived(v, f) == Some(id)) else {
                pick[v] = id;
                continue;
            };
            pick[v] = id;
            todo.push((source, f, depth + 1));
            for j in (0..nreads).filter(|&j| Some(j) != slot) {
                if let Ok(u) = self.decider(k, j)
                    && let Some(g) = self.producer_layout(k, j, id)
                {
                    todo.push((u, g, depth + 1));
                }
            }
        }
    }

    /// `pick` with the tied variables that follow the variables `set` (directly or
    /// through others that do) derived again, in order; the rest as they are. The
    /// variables `set` keep their layouts.
    fn propagate_from(&mut self, pick: &mut [LayoutId], set: &[bool]) {
        let mut moved = set.to_vec();
        for v in 0..pick.len() {
            let Some(source) = self.ties[v].as_ref().map(|t| t.source) else {
                continue;
            };
            if set[v] || !moved[source] {
                continue;
            }
            if let Some(id) = self.derived(v, pick[source]) {
                pick[v] = id;
                moved[v] = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head that reads its table through a transpose, and its activation through an
    /// add: both of the matmul's inputs follow other variables.
    const HEAD: &str = r#"Scenario(
    name: "head",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "x": (dtype: F32, init: Zeros, shape: "f32[128,256]"),
        "y": (dtype: F32, init: Zeros, shape: "f32[128,256]"),
        "s": (dtype: F32, shape: "f32[128,256]"),
        "w": (dtype: F32, init: Zeros, shape: "f32[1024,256]"),
        "wt": (dtype: F32, shape: "f32[256,1024]"),
        "c": (dtype: F32, shape: "f32[128,1024]"),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Load(tensor: "y", layout: "$y"),
        Binary(op: Add, a: "x", b: "y", out: "s", layout: "$s"),
        Load(tensor: "w", layout: "$w"),
        Transpose(input: "w", perm: [1, 0], out: "wt", layout: "$wt"),
        MatMul(a: "s", b: "wt", out: "c", layout: "$c"),
        Store(tensor: "c"),
    ],
    plans: {"auto": {"x": Any, "y": Any, "s": Any, "w": Any, "wt": Any, "c": Any}},
    auto_reduce: true,
)"#;

    fn model() -> Model {
        crate::plan::model::testing::model(HEAD, "head.ron")
    }

    /// Every move lays the matmul's operands out as a legal strategy of it, and some
    /// move reaches them through their sources: the table laid out so that the
    /// transpose is a view of it, the add's inputs laid out as its output.
    #[test]
    fn a_kernel_move_sets_the_operands_through_the_views_and_elementwise_kernels() {
        let mut m = model();
        let var = |m: &Model, name: &str| m.vars.iter().position(|v| v.name == name).unwrap();
        let (x, y, s, w, wt, c) = (
            var(&m, "x"),
            var(&m, "y"),
            var(&m, "s"),
            var(&m, "w"),
            var(&m, "wt"),
            var(&m, "c"),
        );
        let k = (0..m.ops.len()).find(|&k| m.ops[k].var == Some(c)).unwrap();
        let pick: Vec<LayoutId> = m.vars.iter().map(|v| v.candidates[0]).collect();
        let moves = m.kernel_moves(&pick, k);
        assert!(moves.len() > 1, "{} moves", moves.len());
        let kern = m.kernel(m.ops[k].op).unwrap().clone();
        let mut through = 0;
        for mv in &moves {
            assert_ne!(*mv, pick);
            let l = |v: usize| &m.layouts[mv[v] as usize];
            assert!(
                mnsim_kernels::is_legal(&kern, &[l(s), l(wt)], l(c), &m.res.machine),
                "{} {} {}",
                l(s).canonical(),
                l(wt).canonical(),
                l(c).canonical()
            );
            let view = m.derived(wt, mv[w]) == Some(mv[wt]);
            let same = mv[x] == m.producer_layout(2, 0, mv[s]).unwrap()
                && mv[y] == m.producer_layout(2, 1, mv[s]).unwrap();
            if view && same {
                through += 1;
            }
        }
        assert!(
            through > 0,
            "no move set the operands through their sources"
        );
    }
}
