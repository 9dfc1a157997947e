//! The transfers: Load, Store, Relayout and Reduce (docs/model.md). Each checks its operands,
//! allocates its result, takes its per-PE facts (closed form in timing mode, counted by
//! the data plane in functional mode), charges them with `net::cost` and records the op.
//! An engine measuring for the planner charges the layouts' per-level choices instead
//! (`net::cost_product`), where the closed form applies.
//!
//! Invariant: both modes build the same route and the same facts, so they charge the
//! same cycles; the measuring engine's closed form charges what those facts charge
//! (`sim/tests/closed_form.rs`).

use super::streams::{identity, plan};
use super::{Engine, Mode, Resident, SimError, err};
use crate::net::{self, Dir, DramSpec, PeFact, Route, StageSpec};
use mnsim_arch::layout::Class;
use mnsim_arch::machine::AddrLevel;
use mnsim_arch::{TensorLayout, XlaLayout};
use mnsim_kernels::elem::Combine;
use mnsim_reports::OpReport;

impl Engine {
    /// A timing-mode transfer's charge in closed form (`net::cost_product`) from the
    /// products `products()` gives (the second fact set's, when not the first's), when
    /// the engine measures for the planner and the closed form applies; `None`
    /// otherwise (the caller charges per-PE facts).
    fn closed_cost(
        &mut self,
        route: &Route,
        products: impl FnOnce() -> (net::Product, Option<net::Product>),
    ) -> Option<net::Cost> {
        if !self.measuring || self.mode != Mode::Timing {
            return None;
        }
        let (a, b) = products();
        let b = b.as_ref().unwrap_or(&a);
        let c = net::cost_product(&self.machine, &self.topo, route, [&a, b]);
        self.closed[usize::from(c.is_none())] += 1;
        c
    }

    pub(super) fn down_route(&self, steps: u64, dram: Option<DramSpec>) -> Route {
        let n = self.topo.chain.len();
        Route {
            stages: (0..n - 1)
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
        }
    }

    /// Load: DRAM (the tensor's XLA layout) → LM in `layout`.
    pub fn load(&mut self, name: &str, layout: TensorLayout) -> Result<OpReport, SimError> {
        self.load_as("Load", name, layout, &[])
    }

    /// A Load reported as `op`, whose task also reads `reads` (what it waits for).
    pub(super) fn load_as(
        &mut self,
        op: &str,
        name: &str,
        layout: TensorLayout,
        reads: &[crate::ids::RegionId],
    ) -> Result<OpReport, SimError> {
        let t = self.state(name)?;
        let Some(dram) = t.dram.as_ref() else {
            return err(format!(
                "tensor `{name}` is not in DRAM: give it an `init` or Store it first"
            ));
        };
        if layout.logical_shape() != t.dims.as_slice() {
            return err(format!(
                "layout {} is for shape {:?} but tensor `{name}` has shape {:?}",
                layout.canonical(),
                layout.logical_shape(),
                t.dims
            ));
        }
        let (dtype, runtime, xla) = (t.dtype, t.runtime.clone(), dram.layout.clone());
        if self.mode == Mode::Functional && dram.data.is_empty() {
            return err(format!("tensor `{name}` has no data in DRAM"));
        }
        if t.lm.is_some() {
            self.free(name)?;
        }
        let (offset, words, region) = self.allocate(name, &layout)?;
        let memoised = self.mode == Mode::Timing;
        let memo = (self.load_memo.get(name).filter(|_| memoised))
            .and_then(|m| m.get(&layout))
            .cloned();
        let (c, walk) = match memo {
            Some(charge) => charge,
            None => {
                let eff = self.burst_efficiency(&layout, &xla, &runtime, dtype);
                let route = self.down_route(
                    layout.time_span(),
                    Some(DramSpec {
                        dir: Dir::Down,
                        elem_bytes: dtype.bytes(),
                        efficiency: eff,
                        second: false,
                    }),
                );
                let closed = self.closed_cost(&route, || {
                    (
                        Self::closed_product(&layout, &[], &runtime, false, None),
                        None,
                    )
                });
                let c = match closed {
                    Some(c) => c,
                    None => {
                        let facts = match self.functional() {
                            None => self.closed_facts(&layout, &[], &runtime, false, None),
                            Some(f) => self.move_load(f, name, &layout, offset),
                        };
                        net::cost(&self.machine, &self.topo, &route, [&facts, &facts])
                    }
                };
                let shape = layout.logical_shape();
                let walk =
                    plan(&mut self.walk_memo, Some(&layout), shape, &[], &[]).map(|p| (p, true));
                if memoised {
                    (self.load_memo.entry(name.to_string()).or_default())
                        .insert(layout.clone(), (c.clone(), walk.clone()));
                }
                (c, walk)
            }
        };
        let op = self.finish(op, name, Some(&layout), &runtime, c, reads, &[region], walk);
        let t = self.tensors.get_mut(name).expect("checked");
        t.lm = Some(Resident {
            layout,
            offset,
            words,
            partial: Vec::new(),
            region,
        });
        Ok(op)
    }

    /// Store: LM → DRAM (the tensor's XLA layout), reading one replica.
    pub fn store(&mut self, name: &str, xla: XlaLayout) -> Result<OpReport, SimError> {
        let r = self.resident(name)?.clone();
        if let Some(&p) = r.partial.first() {
            return err(format!(
                "tensor `{name}` holds partial results over {}: Reduce it over that level before storing",
                r.layout.levels()[p].name
            ));
        }
        let t = self.state(name)?;
        let (dtype, runtime) = (t.dtype, t.runtime.clone());
        let n = self.topo.chain.len();
        let eff = self.burst_efficiency(&r.layout, &xla, &runtime, dtype);
        let route = Route {
            stages: (0..n - 1)
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
            }),
            local_copy: false,
            steps: r.layout.time_span(),
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
                    Some(f) => self.move_store(f, name, &r, &xla),
                };
                net::cost(&self.machine, &self.topo, &route, [&facts, &facts])
            }
        };
        if self.mode == Mode::Timing {
            self.set_in_dram(name, xla);
        }
        let dims = r.layout.logical_shape().to_vec();
        let walk = plan(
            &mut self.walk_memo,
            None,
            &dims,
            &[(&r.layout, identity(dims.len()))],
            &[],
        )
        .map(|p| (p, false));
        Ok(self.finish(
            "Store",
            name,
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

    pub(super) fn up_down_route(&self, meet: usize, reduce_at_meet: bool, steps: u64) -> Route {
        let n = self.topo.chain.len();
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
        }
    }

    /// Relayout (also Broadcast from LM): layout A → layout B through the lowest common
    /// ancestor. `out` names the result (default: the tensor itself, moved).
    pub fn relayout(
        &mut self,
        op: &str,
        name: &str,
        layout: TensorLayout,
        out: Option<&str>,
    ) -> Result<OpReport, SimError> {
        let src = self.resident(name)?.clone();
        if let Some(&p) = src.partial.first() {
            return err(format!(
                "tensor `{name}` holds partial results over {}: Reduce it before moving it",
                src.layout.levels()[p].name
            ));
        }
        let dst_name = out.unwrap_or(name).to_string();
        let t = self.state(name)?;
        let (dtype, dims, runtime) = (t.dtype, t.dims.clone(), t.runtime.clone());
        let d = self.state(&dst_name)?;
        if d.dtype != dtype || d.dims != dims {
            return err(format!(
                "`{dst_name}` ({} {:?}) cannot hold `{name}` ({dtype} {dims:?})",
                d.dtype, d.dims
            ));
        }
        if layout.logical_shape() != dims.as_slice() {
            return err(format!(
                "layout {} is for shape {:?}, not {dims:?}",
                layout.canonical(),
                layout.logical_shape()
            ));
        }
        if dst_name != name && d.lm.is_some() {
            self.free(&dst_name)?;
        }
        let (offset, words, region) = self.allocate(&dst_name, &layout)?;
        let addr = self.machine.addressable_levels();
        let crossing = (0..addr.len())
            .filter(|&i| Self::crosses(&src.layout, &layout, i, &runtime))
            .min();
        let steps = src.layout.time_span().max(layout.time_span());
        // The route through the level they meet above, when a level is crossed.
        let route = crossing.map(|i| {
            let meet = self.topo.meet_above(addr[i].level_index);
            self.up_down_route(meet, false, steps)
        });
        let closed = route.as_ref().and_then(|route| {
            self.closed_cost(route, || {
                let dst = Self::closed_product(&layout, &[], &runtime, false, None);
                (
                    Self::closed_product(&src.layout, &[], &runtime, true, None),
                    Some(dst),
                )
            })
        });
        if let Some(c) = closed {
            let at = (layout, offset, words, region);
            return Ok(self.relayouted(op, (name, &dst_name), &src, at, c));
        }
        let src_facts = self.closed_facts(&src.layout, &[], &runtime, true, None);
        let dst_facts = match self.functional() {
            None => self.closed_facts(&layout, &[], &runtime, false, None),
            Some(f) => self.move_relayout(f, &src, &layout, offset, &runtime, dtype),
        };
        let c = match &route {
            Some(route) => net::cost(&self.machine, &self.topo, route, [&src_facts, &dst_facts]),
            None => {
                // No level to cross: a copy inside each LM (the larger of the two shards).
                // Every PE of the destination; the source's shard on that PE, if any.
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
                };
                net::cost(&self.machine, &self.topo, &route, [&facts, &facts])
            }
        };
        Ok(self.relayouted(
            op,
            (name, &dst_name),
            &src,
            (layout, offset, words, region),
            c,
        ))
    }

    /// Records a Relayout of `name` (resident as `src`) into `dst` charged `c`: the source
    /// released if moved in place, the op finished, the destination resident where it
    /// was allocated (layout, offset, words, region).
    fn relayouted(
        &mut self,
        op: &str,
        (name, dst): (&str, &str),
        src: &Resident,
        (layout, offset, words, region): (TensorLayout, u64, u64, crate::ids::RegionId),
        c: net::Cost,
    ) -> OpReport {
        if dst == name {
            self.release(src.offset);
        }
        let dims = layout.logical_shape().to_vec();
        let runtime = (self.tensors.get(name))
            .map(|t| t.runtime.clone())
            .unwrap_or_default();
        let walk = plan(
            &mut self.walk_memo,
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
            &runtime,
            c,
            &[src.region],
            &[region],
            walk,
        );
        self.tensors.get_mut(dst).expect("checked").lm = Some(Resident {
            layout,
            offset,
            words,
            partial: Vec::new(),
            region,
        });
        rep
    }

    /// The levels over which the copies of `name` in LM hold partial results, leaf-most
    /// first (the order [`Engine::reduce_partials`] reduces them in); empty when none.
    pub fn partial_levels(&self, name: &str) -> Vec<String> {
        self.tensors
            .get(name)
            .and_then(|t| t.lm.as_ref())
            .map(|r| {
                r.partial
                    .iter()
                    .rev()
                    .map(|&p| r.layout.levels()[p].name.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Finishes a tensor whose copies hold partial results: a tree Reduce per level they
    /// differ over, leaf-most level first (partial sums combine close to the PEs first),
    /// each shown as an op of its own.
    pub fn reduce_partials(&mut self, name: &str, op: Combine) -> Result<(), SimError> {
        for level in self.partial_levels(name) {
            self.reduce(name, &level, op, None)?;
        }
        Ok(())
    }

    /// Reduce: combine the copies of a tensor over a level on which it is partial (or
    /// replicated: the copies are combined as they are). The result is replicated over
    /// that level, in the same layout, under `out` (default: the tensor itself).
    pub fn reduce(
        &mut self,
        name: &str,
        level: &str,
        op: Combine,
        out: Option<&str>,
    ) -> Result<OpReport, SimError> {
        let src = self.resident(name)?.clone();
        let Some(i) = src.layout.levels().iter().position(|l| l.name == level) else {
            return err(format!(
                "`{level}` is not an addressable level of {} ({})",
                self.machine.name,
                src.layout
                    .levels()
                    .iter()
                    .map(|l| l.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        if !src.layout.levels()[i].replicated {
            return err(format!(
                "tensor `{name}` is split over {level}, not partial: there is nothing to reduce over {level}"
            ));
        }
        let t = self.state(name)?;
        let (dtype, runtime) = (t.dtype, t.runtime.clone());
        let dst_name = out.unwrap_or(name).to_string();
        let layout = src.layout.clone();
        let (offset, words, region) = if dst_name == name {
            (src.offset, src.words, src.region)
        } else {
            if self.state(&dst_name)?.lm.is_some() {
                self.free(&dst_name)?;
            }
            self.allocate(&dst_name, &layout)?
        };
        let mut partial = src.partial.clone();
        if !partial.contains(&i) {
            partial.push(i);
        }
        let rest: Vec<usize> = src.partial.iter().copied().filter(|&p| p != i).collect();
        let addr = self.machine.addressable_levels();
        let meet = self.topo.meet_above(addr[i].level_index);
        // Measuring in timing mode, the charge depends on nothing else: each is
        // computed once (and counted as it was charged).
        let memoised = self.measuring && self.mode == Mode::Timing;
        let key = memoised.then(|| (layout.clone(), partial.clone(), i, runtime.clone()));
        let known = key.as_ref().and_then(|k| self.reduce_memo.get(k)).cloned();
        let c = match known {
            Some((c, closed)) => {
                self.closed[usize::from(!closed)] += 1;
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
                        net::cost(&self.machine, &self.topo, &route, [&up, &down])
                    }
                };
                if let Some(k) = key {
                    self.reduce_memo.insert(k, (c.clone(), was_closed));
                }
                c
            }
        };
        let dims = layout.logical_shape().to_vec();
        let walk = plan(
            &mut self.walk_memo,
            Some(&layout),
            &dims,
            &[(&src.layout, identity(dims.len()))],
            &[],
        )
        .map(|p| (p, true));
        let rep = self.finish(
            "Reduce",
            &dst_name,
            Some(&layout),
            &runtime,
            c,
            &[src.region],
            &[region],
            walk,
        );
        self.tensors.get_mut(&dst_name).expect("checked").lm = Some(Resident {
            layout,
            offset,
            words,
            partial: rest,
            region,
        });
        Ok(rep)
    }
}
