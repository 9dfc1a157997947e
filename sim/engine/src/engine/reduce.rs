//! Reduce (docs/model.md): the copies of a tensor combined over a level, and the tree
//! Reduces that complete a partial kernel output, leaf-most level first. Like the other
//! transfers (`transfers.rs`) it takes its per-PE facts in either mode, or the closed
//! form when measuring, and charges them with `net::cost`.

use super::{Engine, ErrorKind, Mode, OpSettings, SimError};
use crate::ids::LevelId;
use crate::net;
use crate::program::TensorId;
use mnsim_kernels::elem::Combine;
use mnsim_reports::OpReport;

impl Engine {
    /// The levels over which the copies of `name` in LM hold partial results, leaf-most
    /// first (the order [`Engine::reduce_partials`] reduces them in); empty when none.
    pub fn partial_levels(&self, t: TensorId) -> Vec<LevelId> {
        let addr = self.state.machine.addressable_levels();
        (self.state.tensors.get(t))
            .and_then(|t| t.lm.as_ref())
            .map(|r| {
                (r.partial.iter().rev())
                    .filter_map(|&p| Some(LevelId::of(addr.get(p)?.level_index)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The position among the addressable levels (a layout's levels) of machine level
    /// `level`, if it is addressable.
    pub fn addressable(&self, level: LevelId) -> Option<usize> {
        (self.state.machine.addressable_levels().iter())
            .position(|a| a.level_index == level.index())
    }

    /// Finishes a tensor whose copies hold partial results: a tree Reduce per level they
    /// differ over, leaf-most level first (partial sums combine close to the PEs first),
    /// each shown as an op of its own.
    pub fn reduce_partials(&mut self, t: TensorId, op: Combine) -> Result<(), SimError> {
        for level in self.partial_levels(t) {
            self.reduce(t, level, op, None)?;
        }
        Ok(())
    }

    /// Reduce: combine the copies of a tensor over a level on which it is partial (or
    /// replicated: the copies are combined as they are). The result is replicated over
    /// that level, in the same layout, under `out` (default: the tensor itself).
    pub fn reduce(
        &mut self,
        id: TensorId,
        level: LevelId,
        op: Combine,
        out: Option<TensorId>,
    ) -> Result<OpReport, SimError> {
        self.op(OpSettings::default()).reduce(id, level, op, out)
    }

    /// [`Engine::reduce`], its result's stream (a new tensor) holding `buffers` slices
    /// when given.
    pub(super) fn reduce_op(
        &mut self,
        (id, level, op, out): (TensorId, LevelId, Combine, Option<TensorId>),
        buffers: Option<i64>,
    ) -> Result<OpReport, SimError> {
        let src = self.state.resident(id)?.clone();
        let level = (self.state.machine.levels.get(level.index()))
            .map_or_else(|| format!("level #{}", level.index()), |l| l.name.clone());
        let Some(i) = src.layout.levels().iter().position(|l| l.name == level) else {
            return Err(ErrorKind::NotALevel {
                level,
                machine: self.state.machine.name.clone(),
                levels: (src.layout.levels().iter())
                    .map(|l| l.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
            .into());
        };
        if !src.layout.levels()[i].replicated {
            return Err(ErrorKind::SplitNotPartial {
                tensor: self.state.name(id).to_string(),
                level,
            }
            .into());
        }
        let t = self.state.tensor(id)?;
        let (dtype, runtime) = (t.dtype, t.runtime.clone());
        let dst = out.unwrap_or(id);
        let layout = src.layout.clone();
        let (offset, words, region) = if dst == id {
            (src.offset, src.words, src.region)
        } else {
            if self.state.tensor(dst)?.lm.is_some() {
                self.state.free(dst)?;
            }
            self.allocate(dst, &layout, buffers)?
        };
        let mut partial = src.partial.clone();
        if !partial.contains(&i) {
            partial.push(i);
        }
        let rest: Vec<usize> = src.partial.iter().copied().filter(|&p| p != i).collect();
        let addr = self.state.machine.addressable_levels();
        let meet = self.state.topo.meet_above(addr[i].level_index);
        // Measuring in timing mode, the charge depends on nothing else: each is
        // computed once (and counted as it was charged).
        let memoised = self.rec.measuring() && self.state.mode == Mode::Timing;
        let key = memoised.then(|| (layout.clone(), partial.clone(), i, runtime.clone()));
        let known = (key.as_ref())
            .and_then(|k| self.rec.memos()?.reduce.get(k))
            .cloned();
        let c = match known {
            Some((c, closed)) => {
                self.rec.closed[usize::from(!closed)] += 1;
                c
            }
            None => {
                let route = self.up_down_route(meet, true, layout.time_span());
                let closed = self.closed_cost(&route, || {
                    (
                        Self::closed_product(&layout, &partial, &runtime, true, Some(i)),
                        Some(Self::closed_product(&layout, &rest, &runtime, false, None)),
                    )
                });
                let was_closed = closed.is_some();
                let c = match closed {
                    Some(c) => c,
                    None => {
                        let up = self.closed_facts(&layout, &partial, &runtime, true, Some(i));
                        let down = match self.functional() {
                            None => self.closed_facts(&layout, &rest, &runtime, false, None),
                            Some(f) => self.move_reduce(f, &src, i, op, offset, dtype, &runtime),
                        };
                        net::cost(&self.state.machine, &self.state.topo, &route, [&up, &down])
                    }
                };
                if let (Some(k), Some(m)) = (key, self.rec.memos()) {
                    m.reduce.insert(k, (c.clone(), was_closed));
                }
                c
            }
        };
        Ok(self.finish_move(
            "Reduce",
            dst,
            &src,
            (layout, offset, words, region),
            &runtime,
            (c, rest),
        ))
    }
}
