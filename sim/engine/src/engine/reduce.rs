//! Reduce (docs/model.md): the copies of a tensor combined over a level, and the tree
//! Reduces that complete a partial kernel output, leaf-most level first. Like the other
//! transfers (`transfers.rs`) it takes its per-PE facts in either mode, or the closed
//! form when measuring, and charges them with `net::cost`.

use super::{Engine, ErrorKind, Mode, OpSettings, SimError};
use crate::ids::LevelId;
use crate::net;
use crate::program::TensorId;
use mnsim_arch::machine::Algorithm;
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
    /// Their collectives over a network run as `algorithm` when given. Where the engine
    /// chooses ([`Engine::set_choosing_algorithms`]), it chooses only for a tensor whose
    /// tree Reduces cross one network at most: an op names one algorithm for all of them.
    pub fn reduce_partials(
        &mut self,
        t: TensorId,
        op: Combine,
        algorithm: Option<Algorithm>,
    ) -> Result<(), SimError> {
        let levels = self.partial_levels(t);
        let networks = levels.iter().filter(|&&l| self.meets_at_network(l)).count();
        let chooses = self.choosing_algorithms();
        if networks > 1 {
            self.set_choosing_algorithms(false);
        }
        let s = OpSettings {
            algorithm,
            ..OpSettings::default()
        };
        let done = levels
            .into_iter()
            .try_for_each(|level| self.op(s.clone()).reduce(t, level, op, None).map(|_| ()));
        self.set_choosing_algorithms(chooses);
        done
    }

    /// Whether a Reduce over machine level `level` combines on a network (its copies
    /// meet above the boards).
    pub fn meets_at_network(&self, level: LevelId) -> bool {
        let topo = &self.state.topo;
        let meet = topo.meet_above(level.index());
        let m = &self.state.machine;
        topo.chain
            .get(meet)
            .is_some_and(|&k| m.network_at(k).is_some())
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
    /// when given, its collective over a network run as `algorithm` when given.
    pub(super) fn reduce_op(
        &mut self,
        (id, level, op, out): (TensorId, LevelId, Combine, Option<TensorId>),
        (buffers, algorithm): (Option<i64>, Option<Algorithm>),
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
        let key = memoised.then(|| {
            let k = (layout.clone(), partial.clone(), i, runtime.clone());
            (k, algorithm, self.choosing_algorithms())
        });
        let known = (key.as_ref())
            .and_then(|k| self.rec.memos()?.reduce.get(k))
            .cloned();
        let c = match known {
            Some((c, closed)) => {
                self.rec.closed[usize::from(!closed)] += 1;
                c
            }
            None => {
                let route = self.up_down_route(meet, true, layout.time_span(), algorithm);
                let products = || {
                    (
                        Self::closed_product(&layout, &partial, &runtime, true, Some(i)),
                        Some(Self::closed_product(&layout, &rest, &runtime, false, None)),
                    )
                };
                let closed = self.closed_cost(&route, products);
                let was_closed = closed.is_some();
                let c = match closed {
                    Some(c) => {
                        self.cheapest(c, (&route, algorithm), |e, r| e.closed_cost(r, products))
                    }
                    None => {
                        let up = self.closed_facts(&layout, &partial, &runtime, true, Some(i));
                        let down = match self.functional() {
                            None => self.closed_facts(&layout, &rest, &runtime, false, None),
                            Some(f) => self.move_reduce(f, &src, i, op, offset, dtype, &runtime),
                        };
                        let cost = |e: &mut Engine, r: &net::Route| {
                            let m = &e.state.machine;
                            Some(net::cost(m, &e.state.topo, r, [&up, &down]))
                        };
                        let c =
                            net::cost(&self.state.machine, &self.state.topo, &route, [&up, &down]);
                        self.cheapest(c, (&route, algorithm), cost)
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
