//! Identical layers move as one (docs/planner.md). The importer places each op of a
//! repeated block in its layer (a `while` unrolled, or a run of identical steps); where
//! every layer's variables, in program order, lay out tensors of the same shapes and
//! dtypes for the same ops, and draw on the same candidates, the variables of layer `k`
//! follow those of the first such layer one for one. The search moves only the first
//! layer's (and those outside every layer); each assignment is made to follow
//! ([`Model::follow_layers`]) before it is evaluated. The variables to move are then as
//! many for 1 layer as for 100, and the time of the search grows with the layers only
//! through the length of the program each evaluation walks.

use super::{LayoutId, Model};
use crate::program::OpKind;
use std::collections::BTreeMap;

/// A variable's tensor's shape and dtype, and its ops' kinds and kernels.
type Signature = (Vec<u64>, String, Vec<String>);

impl Model {
    /// Finds the variables that follow another's layout layer for layer
    /// ([`Model::leader`]).
    pub(super) fn find_layer_classes(&mut self) {
        self.leader = (0..self.vars.len()).collect();
        let mut by_layer: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for v in 0..self.vars.len() {
            if let Some(l) = self.layer_of(v) {
                by_layer.entry(l).or_default().push(v);
            }
        }
        // Layers alike in every variable follow the first of them (the first layer
        // often differs: it loads what every layer reads).
        let mut firsts: Vec<(Vec<Signature>, Vec<usize>)> = Vec::new();
        for vars in by_layer.into_values() {
            let sig: Vec<Signature> = vars.iter().map(|&v| self.signature(v)).collect();
            let like = firsts.iter().find(|(s, first)| {
                *s == sig
                    && (vars.iter().zip(first))
                        .all(|(&v, &f)| self.vars[v].candidates == self.vars[f].candidates)
            });
            match like {
                Some((_, first)) => {
                    for (&v, &f) in vars.iter().zip(first) {
                        self.leader[v] = f;
                    }
                }
                None => firsts.push((sig, vars)),
            }
        }
    }

    /// The layer of variable `v`'s first op, if the importer placed it in one.
    fn layer_of(&self, v: usize) -> Option<u32> {
        let &k = self.vars[v].ops.first()?;
        self.res.program.ops[self.ops[k].op].place.layer
    }

    /// What must agree for two variables to follow one another: their tensors' shapes
    /// and dtypes, and the op (its kind and kernel) of each of their ops.
    fn signature(&self, v: usize) -> Signature {
        let t = self.tensor(self.vars[v].tensor);
        let p = &self.res.program;
        let ops = (self.vars[v].ops.iter())
            .map(|&k| {
                let op = &p.ops[self.ops[k].op];
                match &op.kind {
                    OpKind::Kernel { kernel, .. } => format!("{kernel:?}"),
                    OpKind::Load { .. } => "Load".into(),
                    OpKind::Gather { .. } => "Gather".into(),
                    OpKind::Store { .. } => "Store".into(),
                    OpKind::Relayout { .. } => "Relayout".into(),
                    OpKind::Broadcast { .. } => "Broadcast".into(),
                    OpKind::Reduce { .. } => "Reduce".into(),
                    OpKind::Free { .. } => "Free".into(),
                }
            })
            .collect();
        (t.dims_at_bound.clone(), format!("{:?}", t.dtype), ops)
    }

    /// The variables the search moves: each one that follows no other.
    /// Those that others follow come first, most followed first (a move of one of
    /// them moves every layer like it: where a budget ends a search early, it has moved
    /// the most of the program), then the rest in program order.
    pub fn movers(&self) -> Vec<usize> {
        let mut followers = vec![0usize; self.vars.len()];
        for v in 0..self.vars.len() {
            if self.leader[v] != v {
                followers[self.leader[v]] += 1;
            }
        }
        let mut m: Vec<usize> = (0..self.vars.len())
            .filter(|&v| self.leader[v] == v)
            .collect();
        m.sort_by_key(|&v| std::cmp::Reverse(followers[v]));
        m
    }

    /// Whether some variable follows another layer for layer.
    pub fn has_layer_classes(&self) -> bool {
        (0..self.vars.len()).any(|v| self.leader[v] != v)
    }

    /// `pick` with every variable that follows another given that one's layout.
    pub fn follow_layers(&self, pick: &mut [LayoutId]) {
        for v in 0..pick.len() {
            let l = self.leader[v];
            if l != v {
                pick[v] = pick[l];
            }
        }
    }

    /// The variable whose layout `v` follows (itself for most).
    pub fn leader(&self, v: usize) -> usize {
        self.leader[v]
    }
}
