//! Evaluating an assignment: one walk over the program that tracks each tensor's state,
//! what DRAM holds and the LM charged, takes each op's tasks from the memo (measuring a
//! miss), renumbers their LM regions for this plan and places them on the timeline.

use super::super::cost::input_slot;
use super::{Effect, Eval, Inserted, Key, LayoutId, Model, NO_LAYOUT, StateId};
use crate::ids::RegionId;
use crate::scenario::Op;
use crate::timeline::{self, Resource, Task};

/// Per evaluation: where each tensor's LM region is, and the regions handed out.
struct Regions {
    of: Vec<RegionId>,
    next: u32,
}

/// How far a walk over an assignment got.
enum Walked {
    /// It stopped at op `at` for `msg`: the first `ntasks` of the scratch ran.
    Failed {
        at: usize,
        msg: String,
        ntasks: usize,
    },
    /// Every op's tasks are in the scratch: the first `ntasks`, whose ops' dynamic
    /// joules sum to `dynamic_j`, and the busiest resource's held cycles.
    Done {
        ntasks: usize,
        dynamic_j: f64,
        busiest: u64,
    },
}

impl Model {
    /// Evaluates the assignment `pick` (a layout id per variable).
    pub fn evaluate(&mut self, pick: &[LayoutId]) -> Eval {
        self.finish(pick, None)
    }

    /// Evaluates `pick` unless its key is proved no lower than `cutoff` without placing
    /// it: its busiest resource holds cycles that no run of it is shorter than, and its
    /// score grows with the run's cycles. `None` then (counted in [`Model::bounded`]);
    /// otherwise the evaluation [`Model::evaluate`] gives.
    pub fn evaluate_below(&mut self, pick: &[LayoutId], cutoff: Key) -> Option<Eval> {
        match self.walk(pick, None) {
            // A failure ranks by how far it got, then by cycles (at least 0).
            Walked::Failed { at, msg, ntasks } => {
                if (true, std::cmp::Reverse(at), 0) >= cutoff {
                    self.bounded += 1;
                    return None;
                }
                Some(self.failure(at, msg, ntasks))
            }
            Walked::Done {
                ntasks,
                dynamic_j,
                busiest,
            } => {
                let least = (
                    false,
                    std::cmp::Reverse(self.ops.len()),
                    self.score(busiest, dynamic_j).1,
                );
                if least >= cutoff {
                    self.bounded += 1;
                    return None;
                }
                Some(self.eval(self.ops.len(), ntasks, dynamic_j, None))
            }
        }
    }

    /// Evaluates `pick`, also listing per op cycles and the inserted relayouts.
    pub fn explain(&mut self, pick: &[LayoutId]) -> (Eval, Vec<u64>, Vec<Inserted>) {
        let mut detail = (Vec::new(), Vec::new());
        let e = self.finish(pick, Some(&mut detail));
        (e, detail.0, detail.1)
    }

    /// Walks `pick` and places what it ran.
    fn finish(
        &mut self,
        pick: &[LayoutId],
        detail: Option<&mut (Vec<u64>, Vec<Inserted>)>,
    ) -> Eval {
        match self.walk(pick, detail) {
            Walked::Failed { at, msg, ntasks } => self.failure(at, msg, ntasks),
            Walked::Done {
                ntasks, dynamic_j, ..
            } => self.eval(self.ops.len(), ntasks, dynamic_j, None),
        }
    }

    /// The run's length: the first `n` tasks of the scratch placed under the schedule,
    /// from the timeline after the prefix they share with the last program placed.
    fn placed_total(&mut self, n: usize) -> u64 {
        let tasks = &self.scratch[..n];
        match &mut self.resume {
            Some(r) => r.total(tasks, self.schedule, self.lm_words),
            None => timeline::schedule(tasks, self.schedule, self.lm_words).total(),
        }
    }

    /// The joules and the score of a run of `total_cycles` whose ops' dynamic joules sum
    /// to `dynamic_j`: the static power over its length is added; both grow with it.
    fn score(&self, total_cycles: u64, dynamic_j: f64) -> (f64, u64) {
        let m = &self.res.machine;
        let energy_j = dynamic_j
            + m.energy.static_watts(m) * mnsim_reports::energy::seconds(total_cycles, m.clock_ghz);
        let score = match self.objective {
            mnsim_reports::Objective::Cycles => total_cycles,
            o => o
                .score(total_cycles, energy_j, m.clock_ghz)
                .max(0.0)
                .to_bits(),
        };
        (energy_j, score)
    }

    /// The evaluation of a plan that stopped at op `at` for `msg`, after the first
    /// `ntasks` of the scratch. The joules of the ops before it are not summed: a failed
    /// plan ranks by how far it got, then by cycles.
    fn failure(&mut self, at: usize, msg: String, ntasks: usize) -> Eval {
        self.eval(at, ntasks, 0.0, Some((at, msg)))
    }

    /// The evaluation of the first `n` tasks of the scratch, whose ops' dynamic joules
    /// sum to `dynamic_j`.
    fn eval(
        &mut self,
        completed: usize,
        n: usize,
        dynamic_j: f64,
        failure: Option<(usize, String)>,
    ) -> Eval {
        let total_cycles = self.placed_total(n);
        let (energy_j, score) = self.score(total_cycles, dynamic_j);
        Eval {
            completed,
            total_cycles,
            failure,
            energy_j,
            score,
        }
    }

    fn walk(
        &mut self,
        pick: &[LayoutId],
        mut detail: Option<&mut (Vec<u64>, Vec<Inserted>)>,
    ) -> Walked {
        self.evaluated += 1;
        let n = self.tensors.len();
        let mut st: Vec<Option<StateId>> = vec![None; n];
        let mut dram = self.initial_dram.clone();
        let mut charged = 0u64;
        let mut cycles: Vec<u64> = Vec::new();
        let mut regions = Regions {
            of: vec![RegionId(u32::MAX); n],
            next: 0,
        };
        // Tasks placed so far (in `self.scratch`), and frees waiting for the next task.
        let mut ntasks = 0usize;
        let mut dynamic_j = 0.0f64;
        let mut pending: Vec<(RegionId, u64)> = Vec::new();
        let mut scratch = std::mem::take(&mut self.scratch);
        // Per tensor: the task (in `scratch`) that wrote it last, and the slices LM holds
        // of it (its default `buffers:`).
        let mut writer: Vec<Option<(usize, u64)>> = vec![None; n];
        // Per tensor: the words of a stream's second slice; and their sum over what lives.
        let mut seconds: Vec<u64> = vec![0; n];
        let mut second = 0u64;
        // Per resource, the cycles the ops' tasks hold it.
        let mut busy: Vec<(Resource, u64)> = Vec::new();
        let failed = |m: &mut Model,
                      scratch: Vec<crate::timeline::Task>,
                      i: usize,
                      ntasks: usize,
                      msg: String| {
            m.scratch = scratch;
            Walked::Failed { at: i, msg, ntasks }
        };
        for i in 0..self.ops.len() {
            let (effect, writes, var, fixed) = {
                let o = &self.ops[i];
                (o.effect, o.writes, o.var, o.fixed)
            };
            let layout = match (var, fixed) {
                (Some(v), _) => pick[v],
                (None, Some(l)) => l,
                (None, None) => NO_LAYOUT,
            };
            match effect {
                Effect::Free => {
                    if let Some(w) = writes
                        && let Some(s) = st[w].take()
                    {
                        let words = self.footprint[self.states[s as usize].0 as usize];
                        charged -= words;
                        second -= std::mem::take(&mut seconds[w]);
                        pending.push((regions.of[w], words));
                    }
                    cycles.push(0);
                    continue;
                }
                Effect::Load => {
                    let w = writes.unwrap_or(0);
                    if !dram[w] {
                        let msg = format!(
                            "tensor `{}` is not in DRAM: give it an `init` or Store it first",
                            self.tensors[w]
                        );
                        return failed(self, scratch, i, ntasks, msg);
                    }
                }
                Effect::Compute | Effect::Store => {}
            }
            let nreads = self.ops[i].reads.len();
            let mut key_states = Vec::with_capacity(nreads);
            for k in 0..nreads {
                let r = self.ops[i].reads[k];
                match st[r] {
                    Some(s) => key_states.push(s),
                    None if matches!(self.ops[i].op, Op::Broadcast { .. }) => {}
                    None => {
                        let msg =
                            format!("tensor `{}` is not in LM: Load it first", self.tensors[r]);
                        return failed(self, scratch, i, ntasks, msg);
                    }
                }
            }
            // The kernels whose output streams this op reads first: their tasks (in
            // `scratch`) and the slices each stream holds (none for most ops: no
            // allocation).
            let kernel_streams =
                (self.ops[i].streamed.iter()).any(|s| s.is_some_and(|w| self.ops[w].is_kernel));
            let producers: Vec<Option<(usize, u64)>> = if kernel_streams {
                (self.ops[i].reads.iter())
                    .zip(&self.ops[i].streamed)
                    .map(|(&r, s)| {
                        s.filter(|&w| self.ops[w].is_kernel)?;
                        writer[r]
                    })
                    .collect()
            } else {
                Vec::new()
            };
            // A measurement that sends no slice again does not depend on the producers'
            // tasks (only a re-send costs one of their slices): it is kept under the
            // buffers alone, so other producers' costs find it.
            let key = (i as u32, key_states, layout, light_fingerprint(&producers));
            let key = if self.memo.contains_key(&key) {
                key
            } else {
                let full = (key.0, key.1, key.2, full_fingerprint(&producers, &scratch));
                if self.memo.contains_key(&full) {
                    full
                } else {
                    let tasks: Vec<Option<(Task, u64)>> = (producers.iter())
                        .map(|p| p.and_then(|(k, held)| Some((scratch.get(k)?.clone(), held))))
                        .collect();
                    let out = self.measure(i, &full.1, layout, &tasks);
                    let resends = out.as_ref().is_ok_and(|o| {
                        (o.tasks.iter().flat_map(|t| &t.walk))
                            .flat_map(|w| &w.inputs)
                            .any(|x| x.resends() > 0)
                    });
                    let key = if resends {
                        full
                    } else {
                        (full.0, full.1, full.2, key.3)
                    };
                    self.memo.insert(key.clone(), out);
                    key
                }
            };
            let out = match &self.memo[&key] {
                Ok(o) => o,
                Err(msg) => {
                    let msg = msg.clone();
                    return failed(self, scratch, i, ntasks, msg);
                }
            };
            // The op's tasks, regions renumbered for this plan: inputs where their
            // tensors are, the op's own regions fresh.
            let first = ntasks;
            let base = regions.next;
            regions.next = regions.next.saturating_add(out.span);
            let reads = &self.ops[i].reads;
            for t in &out.tasks {
                if scratch.len() <= ntasks {
                    scratch.push(t.clone());
                } else {
                    scratch[ntasks].clone_from(t);
                }
                let task = &mut scratch[ntasks];
                super::measure::remap(task, |r| match input_slot(r) {
                    Some(s) => reads.get(s).map_or(r, |&t| regions.of[t]),
                    None => RegionId(base + r.0),
                });
                task.lm_words = task.lm_words.saturating_add(charged);
                ntasks += 1;
            }
            if ntasks > first {
                scratch[first].frees_before.append(&mut pending);
            }
            // LM bookkeeping: inserted relayouts (in place), then the output.
            for m in &out.moved {
                let t = m.tensor;
                let old = st[t].map_or(0, |o| self.footprint[self.states[o as usize].0 as usize]);
                let new = self.footprint[self.states[m.state as usize].0 as usize];
                if charged + new > self.lm_words {
                    let msg = format!("LM overflow relayouting `{}`", self.tensors[t]);
                    return failed(self, scratch, i, ntasks, msg);
                }
                charged = charged + new - old;
                st[t] = Some(m.state);
                if let Some(task) = scratch.get_mut(first + m.task) {
                    task.frees_after.push((regions.of[t], old));
                }
                regions.of[t] = RegionId(base + m.region.0);
                if let Some(d) = detail.as_deref_mut() {
                    d.1.push(m.insert.clone());
                }
            }
            let is_kernel = self.ops[i].is_kernel;
            let first_read = self.ops[i].reads.first().copied();
            if effect == Effect::Store {
                if let Some(r) = first_read {
                    dram[r] = true;
                }
            } else if let Some((t, s, region)) = out.output {
                let new = self.footprint[self.states[s as usize].0 as usize];
                let old = st[t].map_or(0, |o| self.footprint[self.states[o as usize].0 as usize]);
                // As the engine allocates: a Load, a move into another tensor and a
                // Reduce free the old region first; a move in place and a kernel
                // allocate beside it.
                let in_place_move = !is_kernel
                    && first_read == Some(t)
                    && !matches!(self.ops[i].op, Op::Reduce { .. });
                let frees_first = effect == Effect::Load || !(is_kernel || in_place_move);
                let before = if frees_first { charged - old } else { charged };
                if before + new > self.lm_words {
                    let msg = format!(
                        "tensor `{}` needs {new} LM words per PE but only {} of {} are free",
                        self.tensors[t],
                        self.lm_words - before.min(self.lm_words),
                        self.lm_words
                    );
                    return failed(self, scratch, i, ntasks, msg);
                }
                if st[t].is_some() && ntasks > first {
                    let free = (regions.of[t], old);
                    if frees_first {
                        scratch[first].frees_before.push(free);
                    } else {
                        scratch[ntasks - 1].frees_after.push(free);
                    }
                }
                charged = charged - old + new;
                st[t] = Some(s);
                regions.of[t] = RegionId(base + region.0);
                // A stream for the next reader when a task of the op made it slice by
                // slice and no later task of the op (a Reduce it needed) walked it.
                let region = regions.of[t];
                let made = (first..ntasks).find(|&k| {
                    let task = &scratch[k];
                    task.writes.contains(&region)
                        && !task.reads.contains(&region)
                        && task.walk.as_ref().is_some_and(|w| w.out_slices > 0)
                });
                writer[t] = made
                    .filter(|&k| {
                        !scratch[k + 1..ntasks].iter().any(|task| {
                            (task.walk.iter().flat_map(|w| &w.inputs)).any(|i| i.region == region)
                        })
                    })
                    .map(|k| {
                        // Two slices where they fit beside everything live, as the
                        // engine's default `buffers:` decides.
                        let free = self.lm_words.saturating_sub(before + second);
                        (k, if 2 * new <= free { 2 } else { 1 })
                    });
                // A stream keeps a second slice where two fit beside everything live (the
                // engine's default `buffers:`), which the next stream's choice sees.
                second -= std::mem::take(&mut seconds[t]);
                let layout = self.states[s as usize].0 as usize;
                if self.layouts[layout].time_span() > 1
                    && before + second + 2 * new <= self.lm_words
                {
                    seconds[t] = new;
                    second += new;
                }
            }
            for &(r, c) in &out.busy {
                match busy.iter_mut().find(|b| b.0 == r) {
                    Some(b) => b.1 = b.1.saturating_add(c),
                    None => busy.push((r, c)),
                }
            }
            cycles.push(out.cycles);
            dynamic_j += out.dynamic_j;
        }
        self.scratch = scratch;
        if let Some(d) = detail {
            d.0 = cycles;
        }
        Walked::Done {
            ntasks,
            dynamic_j,
            busiest: busy.iter().map(|b| b.1).max().unwrap_or(0),
        }
    }
}

/// What of the producers a consumer's measurement depends on where its walk sends no
/// slice again: the slices each stream holds; 0 when it reads no kernel's stream.
fn light_fingerprint(producers: &[Option<(usize, u64)>]) -> u64 {
    fingerprint("light", producers.iter().map(|p| p.map(|(_, held)| held)))
}

/// What of the producers a consumer's measurement depends on: the slices each stream
/// holds, and the cost of a re-sent slice (its producer's cycles and holds, from the
/// producer's task in `scratch`); 0 when it reads no kernel's stream.
fn full_fingerprint(producers: &[Option<(usize, u64)>], scratch: &[Task]) -> u64 {
    fingerprint(
        "full",
        (producers.iter())
            .map(|p| p.and_then(|(k, held)| scratch.get(k).map(|t| (t.cycles, &t.holds, held)))),
    )
}

/// A hash of `parts` under `tag` (SipHash with fixed keys: the same on every machine),
/// never 0; 0 when there are none.
fn fingerprint<T: std::hash::Hash>(tag: &str, parts: impl ExactSizeIterator<Item = T>) -> u64 {
    use std::hash::Hasher;
    if parts.len() == 0 {
        return 0;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(tag, &mut h);
    for p in parts {
        p.hash(&mut h);
    }
    h.finish() | 1
}
