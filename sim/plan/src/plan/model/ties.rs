//! Ties: a variable whose layout follows from another's (docs/planner.md, chains). A
//! kernel's output variable follows the variable of the input whose axes it shares
//! most (or far more of its elements: [`WIDER`]): a view's output takes the view of its
//! input's layout (every element stays in its cell: the view costs nothing; a slice, a
//! concatenation or a broadcast that has no view is derived as any other kernel); any
//! other kernel's output keeps that input's sub-axes on the axes they share (an
//! elementwise kernel's whole layout, a reduction's kept axes, a matrix product's rows)
//! and holds its other axes in memory on each PE (`TensorLayout::derived`). Propagated
//! in program order, one move of a chain's first variable moves the whole chain, so
//! that it stays legal as it moves.

use super::{LayoutId, Model};
use crate::program::{EntityRef as _, OpKind};
use mnsim_kernels::shape::{AxisSource, index_map};
use mnsim_kernels::{Kernel, View};

/// How a variable's layout follows from its source's.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Derive {
    /// The output of a view kernel: the view of the source's layout, or where there is
    /// none, the derivation `or` (a slice, a concatenation or a broadcast that is not a
    /// view keeps the sub-axes of the axes it shares, as any kernel).
    View(Kernel, Option<Box<Derive>>),
    /// The same layout, bound for the output's dtype.
    Same,
    /// Per output axis, the source's axis whose sub-axes it keeps, or none (in memory).
    Axes(Vec<Option<usize>>),
}

/// A variable tied to another: its layout is derived from `source`'s.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Tie {
    pub(super) source: usize,
    pub(super) derive: Derive,
}

impl Model {
    /// Ties every variable that is the output of one kernel op to the variable of the
    /// input it follows (its last writer's), where that is an earlier variable.
    pub(super) fn find_ties(&mut self) {
        self.ties = (0..self.vars.len()).map(|v| self.tie_of(v)).collect();
        let ties = &self.ties;
        let ops = std::sync::Arc::make_mut(&mut self.ops);
        for k in 0..ops.len() {
            let tied: Vec<bool> = (ops[k].reads.iter().enumerate())
                .map(|(slot, &r)| {
                    let writer = (0..k).rev().find(|&i| ops[i].writes == Some(r));
                    !ops[k].insert_ok[slot]
                        && (writer.and_then(|w| ops[w].var)).is_some_and(|v| ties[v].is_some())
                })
                .collect();
            ops[k].insert_tied = tied;
        }
    }

    /// Turns the chain phase's Relayouts on or off ([`Model::chain_inserts`]).
    pub fn set_chain_inserts(&mut self, on: bool) {
        self.chain_inserts = on;
    }

    /// Whether the chain phase's Relayouts are on.
    pub fn chain_inserts(&self) -> bool {
        self.chain_inserts
    }

    /// Whether a Relayout may go before read `slot` of op `i`.
    pub(super) fn may_insert(&self, i: usize, slot: usize) -> bool {
        let op = &self.ops[i];
        op.insert_ok[slot] || (self.chain_inserts && op.insert_tied[slot])
    }

    /// Whether op `i` is measured apart in the chain phase (a read that may take a
    /// Relayout only then).
    pub(super) fn chain_keyed(&self, i: usize) -> bool {
        self.chain_inserts && self.ops[i].insert_tied.iter().any(|&t| t)
    }

    /// The tie of variable `v`, if it has one.
    fn tie_of(&self, v: usize) -> Option<Tie> {
        let [k] = self.vars[v].ops[..] else {
            return None;
        };
        let op = &self.ops[k];
        let OpKind::Kernel {
            kernel,
            inputs,
            out,
        } = &self.res.program.ops[op.op].kind
        else {
            return None;
        };
        let p = &self.res.program;
        let shapes: Vec<&[u64]> = (inputs.iter())
            .map(|&t| p.tensors[t].dims_at_bound.as_slice())
            .collect();
        let out_dims = p.tensors[*out].dims_at_bound.as_slice();
        let (slot, derive) = match mnsim_kernels::view_of(kernel) {
            Some(View::Transpose(_) | View::Reshape | View::Same) => {
                (0, Derive::View(kernel.clone(), None))
            }
            Some(View::Slice { .. } | View::Concat(_) | View::Broadcast) => {
                match shared_axes(kernel, &shapes, out_dims)? {
                    (0, or) => (0, Derive::View(kernel.clone(), Some(Box::new(or)))),
                    other => other,
                }
            }
            None => shared_axes(kernel, &shapes, out_dims)?,
        };
        let t = *inputs.get(slot)?;
        // The input's last writer before `k`, and the variable that lays it out.
        let w = (0..k).rev().find(|&i| self.ops[i].writes == Some(t))?;
        let source = self.ops[w].var?;
        (source < v).then_some(Tie { source, derive })
    }

    /// The axes of variable `v`'s tensor that a kernel reading it reduces (every
    /// position of the axis makes one output element): a stream must not step them.
    pub fn reduced_axes(&self, v: usize) -> Vec<usize> {
        let t = self.vars[v].tensor;
        let p = &self.res.program;
        let mut axes: Vec<usize> = Vec::new();
        for op in self.ops.iter() {
            let OpKind::Kernel {
                kernel,
                inputs,
                out,
            } = &p.ops[op.op].kind
            else {
                continue;
            };
            let shapes: Vec<&[u64]> = (inputs.iter())
                .map(|&i| p.tensors[i].dims_at_bound.as_slice())
                .collect();
            let Ok(maps) = index_map(kernel, &shapes, &p.tensors[*out].dims_at_bound) else {
                continue;
            };
            for (slot, map) in maps.iter().enumerate() {
                if inputs.get(slot) != Some(&t) {
                    continue;
                }
                for (a, src) in map.axes.iter().enumerate() {
                    if matches!(src, AxisSource::Reduced(_)) && !axes.contains(&a) {
                        axes.push(a);
                    }
                }
            }
        }
        axes.sort_unstable();
        axes
    }

    /// Whether any variable is tied to another.
    pub fn has_ties(&self) -> bool {
        self.ties.iter().any(Option::is_some)
    }

    /// The variables no tie derives: the ones a search of chains moves.
    pub fn free_vars(&self) -> Vec<usize> {
        (0..self.vars.len())
            .filter(|&v| self.ties[v].is_none())
            .collect()
    }

    /// The variable whose move decides `v`'s layout: its tie's source, or the leader of
    /// its layer class, followed to one that is neither tied nor a follower (each step
    /// goes to an earlier variable: a tie's source and a class's leader come first).
    pub fn chain_root(&self, mut v: usize) -> usize {
        for _ in 0..self.vars.len() {
            let next = match &self.ties[v] {
                Some(t) => t.source,
                None => self.leader[v],
            };
            if next == v {
                break;
            }
            v = next;
        }
        v
    }

    /// Per variable, the model's cycles of the ops in `pick` whose layouts its moves
    /// decide: the ops that write or read a tensor of its chain (every variable
    /// [`Model::chain_root`] leads to it). Zero for a variable that is not a root.
    /// `None` where `pick` does not run.
    pub fn chain_heat(&mut self, pick: &[LayoutId]) -> Option<Vec<u64>> {
        let (e, cycles, _) = self.explain(pick);
        if e.failure.is_some() {
            return None;
        }
        let mut var_of = vec![None; self.res.program.tensors.len()];
        for (v, var) in self.vars.iter().enumerate() {
            var_of[var.tensor.index()] = Some(v);
        }
        let mut heat = vec![0u64; self.vars.len()];
        let mut roots: Vec<usize> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            let c = cycles.get(i).copied().unwrap_or(0);
            roots.clear();
            let touched = (op.reads.iter().chain(&op.writes)).filter_map(|t| var_of[t.index()]);
            for v in op.var.into_iter().chain(touched) {
                let r = self.chain_root(v);
                if !roots.contains(&r) {
                    roots.push(r);
                }
            }
            for &r in &roots {
                heat[r] = heat[r].saturating_add(c);
            }
        }
        Some(heat)
    }

    /// `pick` with every tied variable's layout derived from its source's, in order
    /// (a source comes before what follows it); a variable whose layout does not derive
    /// keeps its own.
    pub fn propagate(&mut self, pick: &mut [LayoutId]) {
        for v in 0..pick.len() {
            let Some(source) = self.ties[v].as_ref().map(|t| t.source) else {
                continue;
            };
            if let Some(id) = self.derived(v, pick[source]) {
                pick[v] = id;
            }
        }
    }

    /// `pick` with the tied variables of `root`'s chain (those [`Model::chain_root`]
    /// leads to it) derived from their sources, in order; the others as they are.
    pub fn propagate_chain(&mut self, pick: &mut [LayoutId], root: usize) {
        for v in 0..pick.len() {
            let Some(source) = self.ties[v].as_ref().map(|t| t.source) else {
                continue;
            };
            if self.chain_root(v) != root {
                continue;
            }
            if let Some(id) = self.derived(v, pick[source]) {
                pick[v] = id;
            }
        }
    }

    /// The layout of tied variable `v` when its source takes layout `from` (remembered).
    pub(super) fn derived(&mut self, v: usize, from: LayoutId) -> Option<LayoutId> {
        if let Some(&d) = self.derivations.get(&(v, from)) {
            return d;
        }
        let tie = self.ties[v].clone()?;
        let t = self.vars[v].tensor;
        let rt = self.tensor(t);
        let (dims, dtype) = (rt.dims_at_bound.clone(), rt.dtype);
        let padded = rt.dims_at_bound != rt.runtime_dims;
        let m = &self.res.machine;
        let src = &self.layouts[from as usize];
        // Only a layout its text binds again (as a plan writes it and a run reads it).
        let ok = |l: &mnsim_arch::TensorLayout| {
            l.logical_shape() == dims && binds_again(l, &dims, dtype, m)
        };
        let derive = |d: &Derive| match d {
            Derive::View(k, or) => (mnsim_kernels::view_layout(k, src, &dims, m).filter(ok))
                .or_else(|| or.as_deref().and_then(|d| plain(d, src, &dims, dtype, m)))
                .filter(ok),
            Derive::Same | Derive::Axes(_) => plain(d, src, &dims, dtype, m).filter(ok),
        };
        let l = if padded { None } else { derive(&tie.derive) };
        let id = l.map(|l| self.intern(t, l));
        self.derivations.insert((v, from), id);
        id
    }
}

/// The layout derivation `d` gives from `src` (a tensor of `dims` and `dtype`), other
/// than a view's.
fn plain(
    d: &Derive,
    src: &mnsim_arch::TensorLayout,
    dims: &[u64],
    dtype: mnsim_arch::DType,
    m: &mnsim_arch::Machine,
) -> Option<mnsim_arch::TensorLayout> {
    match d {
        Derive::View(..) => None,
        Derive::Same => src.with_dtype(dtype, m),
        Derive::Axes(from) => src
            .derived(from, dims, m)
            .and_then(|l| l.with_dtype(dtype, m)),
    }
}

/// Whether `l`'s canonical text binds for a tensor of `dims` and `dtype` on `m`.
pub(super) fn binds_again(
    l: &mnsim_arch::TensorLayout,
    dims: &[u64],
    dtype: mnsim_arch::DType,
    m: &mnsim_arch::Machine,
) -> bool {
    crate::plan::candidates::bind_text(m, &l.canonical(), dims, dtype, false).is_some()
}

/// How many times more of an output's elements another input must share than the input
/// sharing most of its axes, for the output to follow that one (see [`shared_axes`]).
pub const WIDER: u64 = 256;

/// The input of `k` whose axes its output shares most (the first of the most), and how:
/// the same layout where it is read element for element, else per output axis the
/// input axis it shares. Read from the kernel's index map; a kernel without one (a
/// slice, a concatenation) shares the axes of equal length with its first input.
///
/// Unless another input shares [`WIDER`] times more of the output's elements (the
/// product of the lengths it shares): then the output follows that one. A matrix
/// product's rows are its output's axes most often (a token's row of activations), but
/// an LM head's 128 tokens against its 50,257-word vocabulary, or a decode step's one
/// token against a weight's 2,304 columns, leave the output mostly the weight's axis:
/// following the rows, it could never split the vocabulary or the columns, only the
/// tokens (GPT-2's decode step planned 8,298,255 cycles so, 5,729,827 following the
/// weights).
fn shared_axes(k: &Kernel, shapes: &[&[u64]], out: &[u64]) -> Option<(usize, Derive)> {
    let from_of = |j: usize| -> Vec<Option<usize>> {
        match index_map(k, shapes, out) {
            Ok(maps) => (0..out.len())
                .map(|h| {
                    (maps[j].axes.iter())
                        .position(|a| *a == AxisSource::Out(h))
                        .filter(|&i| shapes[j][i] == out[h])
                })
                .collect(),
            Err(_) => (0..out.len())
                .map(|h| {
                    (j == 0 && shapes[0].len() == out.len() && shapes[0][h] == out[h]).then_some(h)
                })
                .collect(),
        }
    };
    let extent = |f: &[Option<usize>]| -> u64 {
        (f.iter().enumerate())
            .filter(|(_, a)| a.is_some())
            .map(|(h, _)| out[h])
            .product()
    };
    let all: Vec<(usize, Vec<Option<usize>>)> =
        (0..shapes.len()).map(|j| (j, from_of(j))).collect();
    let by_count =
        (all.iter()).max_by_key(|(j, f)| (f.iter().flatten().count(), std::cmp::Reverse(*j)))?;
    let by_extent = (all.iter()).max_by_key(|(j, f)| (extent(f), std::cmp::Reverse(*j)))?;
    let (j, from) = if extent(&by_extent.1) >= extent(&by_count.1).saturating_mul(WIDER) {
        by_extent.clone()
    } else {
        by_count.clone()
    };
    if from.iter().all(Option::is_none) {
        return None;
    }
    let identity = shapes[j] == out && from.iter().enumerate().all(|(h, f)| *f == Some(h));
    Some((
        j,
        if identity {
            Derive::Same
        } else {
            Derive::Axes(from)
        },
    ))
}
