//! Pruning of the candidates before a search: a candidate of a variable goes when no
//! layout of the consumer kernel's other operands can make it legal (those operands taken
//! fully replicated, over space or over time), and the replicated layouts that test uses.

use super::{LayoutId, Model, candidates};
use crate::program::TensorId;
use mnsim_arch::TensorLayout;

impl Model {
    /// Drops candidates of every variable that cannot be legal for a consumer kernel
    /// whose other operands and output are fixed layouts: the other variable operands are
    /// taken fully replicated (available everywhere), so a candidate dropped here is
    /// illegal whatever they become. Returns how many were dropped.
    pub fn prune(&mut self) -> usize {
        let mut dropped = 0;
        let machine = self.res.machine.clone();
        for vi in 0..self.vars.len() {
            let t = self.vars[vi].tensor;
            // The kernels that read this variable's value directly after its op(s).
            let consumers: Vec<usize> = self.vars[vi]
                .ops
                .iter()
                .filter_map(|&o| self.next_reader(o, t))
                .collect();
            let mut keep: Vec<LayoutId> = Vec::new();
            let mut core = 0;
            let cands = self.vars[vi].candidates.clone();
            for (k, &c) in cands.iter().enumerate() {
                let ok = consumers
                    .iter()
                    .all(|&k| self.may_be_legal(k, t, c, &machine));
                if ok {
                    keep.push(c);
                    core += usize::from(k < self.vars[vi].core);
                } else {
                    dropped += 1;
                }
            }
            if !keep.is_empty() {
                self.vars[vi].candidates = keep;
                self.vars[vi].core = core;
            }
        }
        dropped
    }

    /// The first op after `from` that reads tensor `t` (before it is written again), if
    /// it is a kernel.
    fn next_reader(&self, from: usize, t: TensorId) -> Option<usize> {
        for (i, op) in self.ops.iter().enumerate().skip(from + 1) {
            if op.reads.contains(&t) {
                return op.is_kernel.then_some(i);
            }
            if op.writes == Some(t) {
                return None;
            }
        }
        None
    }

    /// Whether kernel op `k` can be legal with tensor `t` in layout `c`: every other
    /// operand is its fixed layout if the program gives one (a Load or producer with a
    /// fixed layout right before), else fully replicated; the output must be fixed.
    fn may_be_legal(
        &mut self,
        k: usize,
        t: TensorId,
        c: LayoutId,
        machine: &mnsim_arch::Machine,
    ) -> bool {
        let ops = std::sync::Arc::clone(&self.ops);
        let op = &ops[k];
        let Some(out_layout) = op.fixed else {
            return true;
        };
        let Some(kern) = self.kernel(op.op) else {
            return true;
        };
        let mut ins: Vec<TensorLayout> = Vec::new();
        for &r in &op.reads {
            if r == t {
                ins.push(self.layouts[c as usize].clone());
            } else {
                match self.fixed_producer(k, r) {
                    Some(l) => ins.push(self.layouts[l as usize].clone()),
                    None => match self.replicated(r) {
                        Some(l) => ins.push(l),
                        None => return true,
                    },
                }
            }
        }
        let refs: Vec<&TensorLayout> = ins.iter().collect();
        mnsim_kernels::is_legal(kern, &refs, &self.layouts[out_layout as usize], machine)
    }

    /// The fixed layout the last writer of `t` before op `k` gives it, if fixed.
    fn fixed_producer(&self, k: usize, t: TensorId) -> Option<LayoutId> {
        let w = (0..k).rev().find(|&i| self.ops[i].writes == Some(t))?;
        self.ops[w].fixed
    }

    /// Tensor `t` replicated over every level, all in memory.
    pub(super) fn replicated(&self, t: TensorId) -> Option<TensorLayout> {
        let rt = self.tensor(t);
        let groups: Vec<String> = rt.dims_at_bound.iter().map(|d| format!("({d})")).collect();
        candidates::bind_text(
            &self.res.machine,
            &format!("({})", groups.join(", ")),
            &rt.dims_at_bound,
            rt.dtype,
            rt.dims_at_bound != rt.runtime_dims,
        )
        // `None` when it does not fit LM: then nothing is pruned for this kernel.
        .map(|c| c.layout)
    }

    /// Tensor `t` replicated over every level, each axis in `Time` steps: a stand-in
    /// for [`Model::replicated`] where legality is asked (it reads levels only) and the
    /// tensor does not fit LM whole.
    pub(super) fn replicated_in_time(&self, t: TensorId) -> Option<TensorLayout> {
        let rt = self.tensor(t);
        let groups: Vec<String> = rt
            .dims_at_bound
            .iter()
            .map(|&d| {
                if d > 1 {
                    format!("({d}_Time)")
                } else {
                    format!("({d})")
                }
            })
            .collect();
        candidates::bind_text(
            &self.res.machine,
            &format!("({})", groups.join(", ")),
            &rt.dims_at_bound,
            rt.dtype,
            rt.dims_at_bound != rt.runtime_dims,
        )
        .map(|c| c.layout)
    }
}
