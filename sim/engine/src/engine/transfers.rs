//! The transfers: Load, Store and Relayout (docs/model.md; Reduce is `reduce.rs`). Each checks its operands,
//! allocates its result, takes its per-PE facts (closed form in timing mode, counted by
//! the data plane in functional mode), charges them with `net::cost` and records the op.
//! An engine measuring for the planner charges the layouts' per-level choices instead
//! (`net::cost_product`), where the closed form applies.
//!
//! Invariant: both modes build the same route and the same facts, so they charge the
//! same cycles; the measuring engine's closed form charges what those facts charge
//! (`sim/tests/closed_form.rs`).

use super::streams::{identity, plan};
use super::{Engine, ErrorKind, Mode, OpSettings, Partial, Resident, SimError};
use crate::net::{self, Again, Cost, Dir, DramSpec, PeFact, Route, StageSpec};
use crate::program::TensorId;
use mnsim_arch::layout::Class;
use mnsim_arch::machine::AddrLevel;
use mnsim_arch::machine::Algorithm;
use mnsim_arch::{TensorLayout, XlaLayout};
use mnsim_reports::OpReport;

impl Engine {
    /// A timing-mode transfer's charge in closed form (`net::cost_product`) from the
    /// products `products()` gives (the second fact set's, when not the first's), when
    /// the engine measures for the planner and the closed form applies; `None`
    /// otherwise (the caller charges per-PE facts).
    pub(super) fn closed_cost(
        &mut self,
        route: &Route,
        products: impl FnOnce() -> (net::Product, Option<net::Product>),
    ) -> Option<net::Cost> {
        if !self.rec.measuring() || self.state.mode != Mode::Timing {
            return None;
        }
        let (a, b) = products();
        let b = b.as_ref().unwrap_or(&a);
        let c = net::cost_product(&self.state.machine, &self.state.topo, route, [&a, b]);
        self.rec.closed[usize::from(c.is_none())] += 1;
        c
    }

    pub(super) fn down_route(&self, steps: u64, dram: Option<DramSpec>) -> Route {
        let n = self.state.topo.chain.len();
        Route {
            stages: (self.state.topo.dram_at..n - 1)
                .map(|link| StageSpec {
                    link,
                    dir: Dir::Down,
                    reduce: false,
                    second: false,
                })
                .collect(),
            dram,
            local_copy: false,
            steps,
            algorithm: None,
        }
    }

    /// Load: DRAM (the tensor's XLA layout) → LM in `layout`.
    pub fn load(&mut self, id: TensorId, layout: TensorLayout) -> Result<OpReport, SimError> {
        self.op(OpSettings::default()).load(id, layout)
    }

    /// A Load reported as `op`, whose task also reads `reads` (what it waits for); its
    /// stream holds `buffers` slices when given.
    pub(super) fn load_as(
        &mut self,
        op: &str,
        (id, layout): (TensorId, TensorLayout),
        reads: &[crate::ids::RegionId],
        buffers: Option<i64>,
    ) -> Result<OpReport, SimError> {
        let t = self.state.tensor(id)?;
        let name = t.name.as_str();
        let Some(dram) = t.dram.as_ref() else {
            return Err(ErrorKind::NotInDram(name.to_string()).into());
        };
        if layout.logical_shape() != t.dims.as_slice() {
            return Err(ErrorKind::LoadShape {
                layout: layout.canonical(),
                shape: layout.logical_shape().to_vec(),
                tensor: name.to_string(),
                dims: t.dims.clone(),
            }
            .into());
        }
        let (dtype, runtime, xla) = (t.dtype, t.runtime.clone(), dram.layout.clone());
        if self.state.mode == Mode::Functional && dram.data.is_empty() {
            return Err(ErrorKind::NoDramData(name.to_string()).into());
        }
        let dram_key = (xla.clone(), runtime.clone());
        // A program input comes from the host with its first Load (docs/model.md).
        let host = (t.from_host && self.state.machine.host().is_some()).then(|| {
            (runtime
                .iter()
                .try_fold(dtype.bytes(), |a, &d| a.checked_mul(d)))
            .unwrap_or(u64::MAX)
        });
        if t.lm.is_some() {
            self.state.free(id)?;
        }
        let (offset, words, region) = self.allocate(id, &layout, buffers)?;
        let memoised = self.state.mode == Mode::Timing && host.is_none();
        let memo = (self.rec.memos().filter(|_| memoised))
            .and_then(|m| m.load.get(&dram_key)?.get(&layout))
            .cloned();
        let (c, walk) = match memo {
            Some(charge) => charge,
            None => {
                let eff = self.burst_efficiency(&layout, &xla, &runtime, dtype);
                let route_from = |host| {
                    self.down_route(
                        layout.time_span(),
                        Some(DramSpec {
                            dir: Dir::Down,
                            elem_bytes: dtype.bytes(),
                            efficiency: eff,
                            second: false,
                            host,
                        }),
                    )
                };
                let (route, again) = (route_from(host), host.map(|_| route_from(None)));
                let products = || {
                    (
                        Self::closed_product(&layout, &[], &runtime, false, None),
                        None,
                    )
                };
                let closed = self.closed_cost(&route, products);
                // A slice sent again comes from the DRAMs, not the host.
                let closed_again = (again.as_ref().filter(|_| closed.is_some()))
                    .and_then(|r| self.closed_cost(r, products));
                let c = match (closed, closed_again) {
                    (Some(c), a) if again.is_none() || a.is_some() => Cost {
                        again: a.map(Again::of),
                        ..c
                    },
                    _ => {
                        let facts = match self.functional() {
                            None => self.closed_facts(&layout, &[], &runtime, false, None),
                            Some(f) => self.move_load(f, id, &layout, offset)?,
                        };
                        let cost = |r: &Route| {
                            net::cost(&self.state.machine, &self.state.topo, r, [&facts, &facts])
                        };
                        Cost {
                            again: again.as_ref().map(|r| Again::of(cost(r))),
                            ..cost(&route)
                        }
                    }
                };
                let shape = layout.logical_shape();
                let walk =
                    plan(&mut self.walks.walk, Some(&layout), shape, &[], &[]).map(|p| (p, true));
                if let Some(m) = self.rec.memos().filter(|_| memoised) {
                    (m.load.entry(dram_key).or_default())
                        .insert(layout.clone(), (c.clone(), walk.clone()));
                }
                (c, walk)
            }
        };
        let op = self.finish(op, id, Some(&layout), &runtime, c, reads, &[region], walk);
        self.state.tensors[id].from_host = false;
        self.state.tensors[id].lm = Some(Resident {
            layout,
            offset,
            words,
            partial: Vec::new(),
            region,
        });
        Ok(op)
    }

    /// Store: LM → DRAM (the tensor's XLA layout), reading one replica.
    pub fn store(&mut self, id: TensorId, xla: XlaLayout) -> Result<OpReport, SimError> {
        let r = self.state.resident(id)?.clone();
        if let Some(&p) = r.partial.first() {
            return Err(self.state.partial(Partial::Store, id, &r.layout, p));
        }
        let t = self.state.tensor(id)?;
        let (dtype, runtime) = (t.dtype, t.runtime.clone());
        let n = self.state.topo.chain.len();
        let eff = self.burst_efficiency(&r.layout, &xla, &runtime, dtype);
        let route = Route {
            stages: (self.state.topo.dram_at..n - 1)
                .rev()
                .map(|link| StageSpec {
                    link,
                    dir: Dir::Up,
                    reduce: false,
                    second: false,
                })
                .collect(),
            dram: Some(DramSpec {
                dir: Dir::Up,
                elem_bytes: dtype.bytes(),
                efficiency: eff,
                second: false,
                host: None,
            }),
            local_copy: false,
            steps: r.layout.time_span(),
            algorithm: None,
        };
        let closed = self.closed_cost(&route, || {
            (
                Self::closed_product(&r.layout, &[], &runtime, true, None),
                None,
            )
        });
        let c = match closed {
            Some(c) => c,
            None => {
                let facts = match self.functional() {
                    None => self.closed_facts(&r.layout, &[], &runtime, true, None),
                    Some(f) => self.move_store(f, id, &r, &xla),
                };
                net::cost(
                    &self.state.machine,
                    &self.state.topo,
                    &route,
                    [&facts, &facts],
                )
            }
        };
        if self.state.mode == Mode::Timing {
            self.state.set_in_dram(id, xla);
        }
        let dims = r.layout.logical_shape().to_vec();
        let walk = plan(
            &mut self.walks.walk,
            None,
            &dims,
            &[(&r.layout, identity(dims.len()))],
            &[],
        )
        .map(|p| (p, false));
        Ok(self.finish(
            "Store",
            id,
            Some(&r.layout),
            &runtime,
            c,
            &[r.region],
            &[],
            walk,
        ))
    }

    /// Whether data must cross addressable level `i` to go from `src` to `dst`: the
    /// source is split (or partial) there and the destination does not hold each
    /// element at the same position. Compared per axis: a level position is a sum of
    /// per-axis contributions, so equal per-axis functions mean equal maps.
    pub(super) fn crosses(src: &TensorLayout, dst: &TensorLayout, i: usize, dims: &[u64]) -> bool {
        if src.levels()[i].replicated {
            return false;
        }
        if dst.levels()[i].replicated {
            return true;
        }
        let contrib = |l: &TensorLayout, g: usize, x: u64| -> u64 {
            let subs = &l.groups()[g];
            let mut radix = 1u64;
            let mut v = 0u64;
            for s in subs.iter().rev() {
                if s.class == Class::Level(i) {
                    v += ((x / radix) % s.size) * s.stride;
                }
                radix = radix.saturating_mul(s.size);
            }
            v
        };
        (0..dims.len()).any(|g| (0..dims[g]).any(|x| contrib(src, g, x) != contrib(dst, g, x)))
    }

    /// Global PE index of a position tuple.
    pub(super) fn pe_index(addr: &[AddrLevel], pos: &[u64]) -> usize {
        pos.iter()
            .zip(addr)
            .fold(0u64, |a, (p, l)| a * l.fanout + p) as usize
    }

    /// The route up to chain level `meet` and down again (combining there when
    /// `reduce_at_meet`), its collectives run as `algorithm` (`None`: each network's).
    pub(super) fn up_down_route(
        &self,
        meet: usize,
        reduce_at_meet: bool,
        steps: u64,
        algorithm: Option<Algorithm>,
    ) -> Route {
        let n = self.state.topo.chain.len();
        let mut stages: Vec<StageSpec> = (meet..n - 1)
            .rev()
            .map(|link| StageSpec {
                link,
                dir: Dir::Up,
                reduce: reduce_at_meet && link == meet,
                second: false,
            })
            .collect();
        stages.extend((meet..n - 1).map(|link| StageSpec {
            link,
            dir: Dir::Down,
            reduce: false,
            second: true,
        }));
        Route {
            stages,
            dram: None,
            local_copy: false,
            steps,
            algorithm,
        }
    }

    /// Relayout (also Broadcast from LM): layout A → layout B through the lowest common
    /// ancestor. `out` names the result (default: the tensor itself, moved).
    pub fn relayout(
        &mut self,
        op: &str,
        id: TensorId,
        layout: TensorLayout,
        out: Option<TensorId>,
    ) -> Result<OpReport, SimError> {
        self.op(OpSettings::default()).relayout(op, id, layout, out)
    }

    /// [`Engine::relayout`], its result's stream holding `buffers` slices when given, its
    /// collectives over a network run as `algorithm` when given.
    pub(super) fn relayout_op(
        &mut self,
        (op, id, layout, out): (&str, TensorId, TensorLayout, Option<TensorId>),
        (buffers, algorithm): (Option<i64>, Option<Algorithm>),
    ) -> Result<OpReport, SimError> {
        let src = self.state.resident(id)?.clone();
        if let Some(&p) = src.partial.first() {
            return Err(self.state.partial(Partial::Move, id, &src.layout, p));
        }
        let dst = out.unwrap_or(id);
        let t = self.state.tensor(id)?;
        let (dtype, dims, runtime) = (t.dtype, t.dims.clone(), t.runtime.clone());
        let d = self.state.tensor(dst)?;
        if d.dtype != dtype || d.dims != dims {
            return Err(ErrorKind::CannotHold {
                dst: d.name.clone(),
                dst_dtype: d.dtype,
                dst_dims: d.dims.clone(),
                src: t.name.clone(),
                dtype,
                dims,
            }
            .into());
        }
        if layout.logical_shape() != dims.as_slice() {
            return Err(ErrorKind::MoveShape {
                layout: layout.canonical(),
                shape: layout.logical_shape().to_vec(),
                dims,
            }
            .into());
        }
        if dst != id && d.lm.is_some() {
            self.state.free(dst)?;
        }
        let (offset, words, region) = self.allocate(dst, &layout, buffers)?;
        let addr = self.state.machine.addressable_levels();
        let crossing = (0..addr.len())
            .filter(|&i| Self::crosses(&src.layout, &layout, i, &runtime))
            .min();
        let steps = src.layout.time_span().max(layout.time_span());
        // The route through the level they meet above, when a level is crossed.
        let route = crossing.map(|i| {
            let meet = self.state.topo.meet_above(addr[i].level_index);
            self.up_down_route(meet, false, steps, algorithm)
        });
        let products = || {
            let dst = Self::closed_product(&layout, &[], &runtime, false, None);
            (
                Self::closed_product(&src.layout, &[], &runtime, true, None),
                Some(dst),
            )
        };
        if let Some(route) = &route
            && let Some(c) = self.closed_cost(route, products)
        {
            let c = self.cheapest(c, (route, algorithm), |e, r| e.closed_cost(r, products));
            let at = (layout, offset, words, region);
            return Ok(self.relayouted(op, (id, dst), &src, at, c));
        }
        let src_facts = self.closed_facts(&src.layout, &[], &runtime, true, None);
        let dst_facts = match self.functional() {
            None => self.closed_facts(&layout, &[], &runtime, false, None),
            Some(f) => self.move_relayout(f, &src, &layout, offset, &runtime, dtype),
        };
        let c = match &route {
            Some(route) => {
                let cost = |e: &mut Engine, r: &Route| {
                    let m = &e.state.machine;
                    Some(net::cost(m, &e.state.topo, r, [&src_facts, &dst_facts]))
                };
                let c = net::cost(
                    &self.state.machine,
                    &self.state.topo,
                    route,
                    [&src_facts, &dst_facts],
                );
                self.cheapest(c, (route, algorithm), cost)
            }
            None => self.local_copy(&src_facts, &dst_facts, steps),
        };
        Ok(self.relayouted(op, (id, dst), &src, (layout, offset, words, region), c))
    }

    /// A Relayout that crosses no level: a copy inside each LM (the larger of the two
    /// shards), on every PE of the destination with the source's shard on that PE, if any.
    fn local_copy(&self, src_facts: &net::Facts, dst_facts: &net::Facts, steps: u64) -> Cost {
        let mut src_at = src_facts.iter().peekable();
        let facts: net::Facts = dst_facts
            .iter()
            .map(|&(p, b)| {
                while src_at.next_if(|a| a.0 < p).is_some() {}
                let a = src_at.peek().filter(|a| a.0 == p).map_or(0, |a| a.1.bytes);
                (
                    p,
                    PeFact {
                        bytes: a.max(b.bytes),
                        ..b
                    },
                )
            })
            .collect();
        let route = Route {
            stages: Vec::new(),
            dram: None,
            local_copy: true,
            steps,
            algorithm: None,
        };
        net::cost(
            &self.state.machine,
            &self.state.topo,
            &route,
            [&facts, &facts],
        )
    }

    /// Records a Relayout of `name` (resident as `src`) into `dst` charged `c`: the source
    /// released if moved in place, the op finished, the destination resident where it
    /// was allocated (layout, offset, words, region).
    fn relayouted(
        &mut self,
        op: &str,
        (id, dst): (TensorId, TensorId),
        src: &Resident,
        (layout, offset, words, region): (TensorLayout, u64, u64, crate::ids::RegionId),
        c: net::Cost,
    ) -> OpReport {
        if dst == id {
            self.state.release(src.offset);
        }
        let runtime = self.state.tensors[id].runtime.clone();
        self.finish_move(
            op,
            dst,
            src,
            (layout, offset, words, region),
            &runtime,
            (c, Vec::new()),
        )
    }

    /// A move finished: its walk (the source's steps into the destination's), the op
    /// recorded, and `dst` resident in `layout` at the region it was allocated, partial
    /// over `partial`.
    pub(super) fn finish_move(
        &mut self,
        op: &str,
        dst: TensorId,
        src: &Resident,
        (layout, offset, words, region): (TensorLayout, u64, u64, crate::ids::RegionId),
        runtime: &[u64],
        (c, partial): (net::Cost, Vec<usize>),
    ) -> OpReport {
        let dims = layout.logical_shape().to_vec();
        let walk = plan(
            &mut self.walks.walk,
            Some(&layout),
            &dims,
            &[(&src.layout, identity(dims.len()))],
            &[],
        )
        .map(|p| (p, true));
        let rep = self.finish(
            op,
            dst,
            Some(&layout),
            runtime,
            c,
            &[src.region],
            &[region],
            walk,
        );
        self.state.tensors[dst].lm = Some(Resident {
            layout,
            offset,
            words,
            partial,
            region,
        });
        rep
    }
}
