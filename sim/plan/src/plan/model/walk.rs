//! Evaluating an assignment: one walk over the program that tracks each tensor's state,
//! what DRAM holds and the LM charged, takes each op's tasks from the memo (measuring a
//! miss), renumbers their LM regions for this plan and places them on the timeline.

use super::super::cost::input_slot;
use super::reads::Reads;
use super::state::State;
use super::{Effect, Eval, Failure, Inserted, Key, LayoutId, Model, NO_LAYOUT, OpOut, StateId};
use crate::ids::RegionId;
use crate::program::{EntityRef as _, TensorId};
use crate::timeline::{self, Task};

/// How far a walk over an assignment got.
enum Walked {
    /// It stopped at op `at` for `msg`: the first `ntasks` of the scratch ran, the
    /// busiest resource held `busiest` cycles by the ops before it.
    Failed {
        at: usize,
        msg: Failure,
        ntasks: usize,
        busiest: u64,
    },
    /// The ops walked so far hold a resource long enough that the plan's key is no
    /// lower than the cutoff however it goes on: the rest was not walked (nor measured).
    Bounded,
    /// Every op's tasks are in the scratch: the first `ntasks`, whose ops' dynamic
    /// joules sum to `dynamic_j`; the busiest resource holds `busiest` cycles.
    Done {
        ntasks: usize,
        dynamic_j: f64,
        busiest: u64,
        marks: Option<[usize; 2]>,
    },
}

impl Model {
    /// Evaluates the assignment `pick` (a layout id per variable).
    pub fn evaluate(&mut self, pick: &[LayoutId]) -> Eval {
        self.finish(pick, None)
    }

    /// Evaluates `pick` unless its key is proved no lower than `cutoff` (when there is
    /// one) without placing it: its busiest resource holds cycles that no run of it is
    /// shorter than, and its score grows with the run's cycles. `None` then (counted in
    /// [`Model::bounded`]); otherwise the evaluation [`Model::evaluate`] gives.
    pub fn evaluate_below(&mut self, pick: &[LayoutId], cutoff: Option<Key>) -> Option<Eval> {
        let Some(cutoff) = cutoff else {
            return Some(self.evaluate(pick));
        };
        match self.walk(pick, None, Some(cutoff)) {
            Walked::Bounded => {
                self.bounded += 1;
                None
            }
            // A failure ranks by how far it got, then by cycles: at least its busiest
            // resource's hold (no run of its tasks is shorter).
            Walked::Failed {
                at,
                msg,
                ntasks,
                busiest,
            } => {
                if (true, std::cmp::Reverse(at), self.score(busiest, 0.0).1) >= cutoff {
                    self.bounded += 1;
                    return None;
                }
                Some(self.failure(at, msg, ntasks))
            }
            // The walk checked the bound after its last op.
            Walked::Done {
                ntasks,
                dynamic_j,
                busiest,
                marks,
            } => Some(self.done(ntasks, dynamic_j, (busiest, marks))),
        }
    }

    /// Evaluates `pick` if it runs to the end, unless its key is proved no lower than
    /// `cutoff` (`Ok(None)`: its busiest resource's hold, as in
    /// [`Model::evaluate_below`]); where it fails, the op it stops at and why. A plan
    /// that fails or is proved no better is not placed: a caller that keeps only plans
    /// that run and might rank needs no cycles of the others, and placing a whole
    /// model's ops is most of an evaluation. The whole program is walked whatever the
    /// cutoff, so a failure is found wherever it is (a caller may repair it).
    pub fn evaluate_if_runs(
        &mut self,
        pick: &[LayoutId],
        cutoff: Option<Key>,
    ) -> Result<Option<Eval>, (usize, Failure)> {
        match self.walk(pick, None, None) {
            Walked::Failed { at, msg, .. } => Err((at, msg)),
            Walked::Bounded => unreachable!("a walk without a cutoff is never bounded"),
            Walked::Done {
                ntasks,
                dynamic_j,
                busiest,
                marks,
            } => {
                if cutoff.is_some_and(|c| self.least(busiest, dynamic_j) >= c) {
                    self.bounded += 1;
                    return Ok(None);
                }
                Ok(Some(self.done(ntasks, dynamic_j, (busiest, marks))))
            }
        }
    }

    /// Why `pick` fails, if it does: the op and its error, explained as a run would
    /// (the search's measurements keep short errors: see `Coster::set_explaining`).
    /// Not an evaluation: the counts stay as they were.
    pub fn explained_failure(&mut self, pick: &[LayoutId]) -> Option<(usize, Failure)> {
        self.explaining = true;
        self.coster.set_explaining(true);
        let walked = self.walking_all(|m| m.walk(pick, None, None));
        self.explaining = false;
        self.coster.set_explaining(false);
        self.evaluated -= 1;
        match walked {
            Walked::Failed { at, msg, .. } => Some((at, msg)),
            Walked::Bounded | Walked::Done { .. } => None,
        }
    }

    /// Evaluates `pick`, also listing per op cycles and the inserted relayouts: every
    /// op walked, none skipped ([`super::repeat`]).
    pub fn explain(&mut self, pick: &[LayoutId]) -> (Eval, Vec<u64>, Vec<Inserted>) {
        let mut detail = (Vec::new(), Vec::new());
        let e = self.walking_all(|m| m.finish(pick, Some(&mut detail)));
        (e, detail.0, detail.1)
    }

    /// Walks `pick` and places what it ran.
    fn finish(
        &mut self,
        pick: &[LayoutId],
        detail: Option<&mut (Vec<u64>, Vec<Inserted>)>,
    ) -> Eval {
        match self.walk(pick, detail, None) {
            Walked::Failed {
                at, msg, ntasks, ..
            } => self.failure(at, msg, ntasks),
            Walked::Bounded => unreachable!("a walk without a cutoff is never bounded"),
            Walked::Done {
                ntasks,
                dynamic_j,
                busiest,
                marks,
            } => self.done(ntasks, dynamic_j, (busiest, marks)),
        }
    }

    /// The evaluation of a walk that ran every op: its first `ntasks` tasks placed,
    /// with the layers it skipped ([`super::repeat`]; `marks`, the tasks after each of
    /// the two layers walked before them) as long each as the time between those two
    /// layers' ends, and no shorter than its busiest resource's hold (`busiest`, the
    /// skipped layers' holds counted).
    fn done(
        &mut self,
        ntasks: usize,
        dynamic_j: f64,
        (busiest, marks): (u64, Option<[usize; 2]>),
    ) -> Eval {
        let (placed, ends) = self.placed_total(ntasks, marks.as_ref().map_or(&[], |m| &m[..]));
        let times = self.skip.as_ref().map_or(0, |s| s.times);
        let total_cycles = match ends[..] {
            [a, b] => placed
                .saturating_add(b.saturating_sub(a).saturating_mul(times))
                .max(busiest),
            _ => placed,
        };
        self.eval(self.ops.len(), total_cycles, dynamic_j, None)
    }

    /// The evaluation of a plan that ran its first `completed` ops in `total_cycles`,
    /// their dynamic joules `dynamic_j`, stopping where `failure` says if it did.
    fn eval(
        &self,
        completed: usize,
        total_cycles: u64,
        dynamic_j: f64,
        failure: Option<(usize, Failure)>,
    ) -> Eval {
        let (energy_j, score) = self.score(total_cycles, dynamic_j);
        Eval {
            completed,
            total_cycles,
            failure,
            energy_j,
            score,
            chained: self.chain_inserts(),
        }
    }

    /// The run's length: the first `n` tasks of the scratch placed under the schedule,
    /// from the timeline after the prefix they share with the last program placed; and
    /// per mark (a count of tasks) the latest end of the tasks before it.
    fn placed_total(&mut self, n: usize, marks: &[usize]) -> (u64, Vec<u64>) {
        let tasks = &self.scratch[..n];
        match &mut self.resume {
            Some(r) => r.total_by(tasks, (self.schedule, self.lm_words), marks),
            None => {
                let t = timeline::schedule(tasks, self.schedule, self.lm_words);
                self.booked = self.booked.saturating_add(t.work);
                (t.total(), t.ends_by(marks))
            }
        }
    }

    /// The joules and the score of a run of `total_cycles` whose ops' dynamic joules sum
    /// to `dynamic_j`: the static power over its length is added; both grow with it.
    fn score(&self, total_cycles: u64, dynamic_j: f64) -> (f64, u64) {
        let m = &self.res.machine;
        let energy_j = dynamic_j
            + self.static_watts * mnsim_reports::energy::seconds(total_cycles, m.clock_ghz);
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
    fn failure(&mut self, at: usize, msg: Failure, ntasks: usize) -> Eval {
        let (total_cycles, _) = self.placed_total(ntasks, &[]);
        self.eval(at, total_cycles, 0.0, Some((at, msg)))
    }

    /// The least key of a plan that completes with its busiest resource holding `busiest`
    /// cycles and its ops' dynamic joules summing to `dynamic_j`: no run of it is shorter
    /// than that hold, and its score grows with the run's cycles and joules.
    fn least(&self, busiest: u64, dynamic_j: f64) -> Key {
        // Asked after every op a search walks: cycles need no joules.
        let score = match self.objective {
            mnsim_reports::Objective::Cycles => busiest,
            _ => self.score(busiest, dynamic_j).1,
        };
        (false, std::cmp::Reverse(self.ops.len()), score)
    }

    /// Walks the program under `pick`: each op's tasks into the scratch, from the memo
    /// (measuring a miss), with the LM and DRAM bookkeeping of the run. With a `cutoff`,
    /// it stops as soon as the ops walked prove the plan's key no lower: holds and
    /// joules only grow as ops are added, and a plan that fails ranks after every plan
    /// that completes.
    fn walk(
        &mut self,
        pick: &[LayoutId],
        mut detail: Option<&mut (Vec<u64>, Vec<Inserted>)>,
        cutoff: Option<Key>,
    ) -> Walked {
        self.evaluated += 1;
        let mut w = State::new(self);
        let skip = self.skip.clone().filter(|_| self.skips(pick));
        let mut i = 0;
        while i < self.ops.len() {
            // Op `i`, or the layers skipped from it on: the op to walk next.
            let skipped = skip.as_ref().filter(|s| s.from == i);
            let walked = match skipped {
                Some(s) => self.skip_layers(s, &mut w).map(|()| s.to),
                None => {
                    let layout = match (self.ops[i].var, self.ops[i].fixed) {
                        (Some(v), _) => pick[v],
                        (None, Some(l)) => l,
                        (None, None) => NO_LAYOUT,
                    };
                    (self.step(i, layout, &mut w, detail.as_deref_mut())).map(|()| i + 1)
                }
            };
            let next = match walked {
                Ok(next) => next,
                Err(msg) => {
                    let (ntasks, busiest) = (w.ntasks, w.busiest());
                    self.keep(w);
                    return Walked::Failed {
                        at: i,
                        msg,
                        ntasks,
                        busiest,
                    };
                }
            };
            if skipped.is_some() {
                i = next;
                continue;
            }
            if let Some(c) = cutoff {
                let busiest = w.busiest();
                if self.least(busiest, w.dynamic_j) >= c {
                    self.keep(w);
                    return Walked::Bounded;
                }
            }
            if w.at_mark.is_some() {
                w.peak = w.peak.max(w.charged);
            }
            if skip.as_ref().is_some_and(|s| s.mark == i) {
                w.at_mark = Some((w.ntasks, w.busy.clone(), w.dynamic_j));
            }
            i = next;
        }
        if let Some(d) = detail {
            d.0 = std::mem::take(&mut w.cycles);
        }
        let done = Walked::Done {
            ntasks: w.ntasks,
            dynamic_j: w.dynamic_j,
            busiest: w.busiest(),
            marks: w.marks,
        };
        self.keep(w);
        done
    }

    /// Keeps a finished walk's tasks as the scratch and its vectors for the next walk.
    fn keep(&mut self, mut w: State) {
        self.scratch = std::mem::take(&mut w.scratch);
        self.spare = Some(w);
    }

    /// Op `i` under `layout`: its tasks appended, its effects on LM and DRAM applied;
    /// why the plan stops there if it does.
    fn step(
        &mut self,
        i: usize,
        layout: LayoutId,
        w: &mut State,
        detail: Option<&mut (Vec<u64>, Vec<Inserted>)>,
    ) -> Result<(), Failure> {
        let (effect, writes) = (self.ops[i].effect, self.ops[i].writes);
        match effect {
            Effect::Free => {
                if let Some(t) = writes {
                    self.free(t, w);
                }
                w.cycles.push(0);
                return Ok(());
            }
            Effect::Load => {
                let t = writes.unwrap_or(TensorId::new(0));
                if !w.dram[t.index()] {
                    return Err(Failure::NotInDram(self.tensor(t).name.clone()));
                }
            }
            Effect::Compute | Effect::Store => {}
        }
        let mut states = Reads::new();
        for &r in &self.ops[i].reads {
            match w.st[r.index()] {
                Some(s) => states.push(s),
                None if self.is_broadcast(self.ops[i].op) => {}
                None => {
                    return Err(Failure::NotInLm(self.tensor(r).name.clone()));
                }
            }
        }
        let at = self.memo_index(i, states, layout, w);
        let out = self.measured_ops[at].as_ref().map_err(Clone::clone)?;
        let first = w.ntasks;
        let base = self.append_tasks(i, out, w);
        self.apply_moves(out, (first, base), w, detail)?;
        self.take_streams(i, first, w);
        if effect == Effect::Store {
            if let Some(&r) = self.ops[i].reads.first() {
                w.dram[r.index()] = true;
            }
        } else if let Some(output) = out.output {
            self.apply_output(i, output, (first, base), w)?;
        }
        for &(r, c) in &out.busy {
            timeline::tally(&mut w.busy, r, c);
        }
        w.cycles.push(out.cycles);
        w.dynamic_j += out.dynamic_j;
        Ok(())
    }

    /// Frees tensor `t`'s LM (if it holds it) before the next task.
    pub(super) fn free(&self, t: TensorId, w: &mut State) {
        if let Some(s) = w.st[t.index()].take() {
            let words = self.words(s);
            w.charged -= words;
            w.second -= std::mem::take(&mut w.seconds[t.index()]);
            w.pending.push((w.regions.of[t.index()], words));
        }
    }

    /// LM words per PE of a tensor in state `s`.
    pub(super) fn words(&self, s: StateId) -> u64 {
        self.footprint[self.states[s as usize].0 as usize]
    }

    /// Where the memo holds op `i` reading its inputs in `states`, under `layout`, with
    /// the streams it reads as `w` has them (in `measured_ops`); measured first on a miss.
    fn memo_index(&mut self, i: usize, states: Reads, layout: LayoutId, w: &State) -> usize {
        // The streams this op reads slice by slice from a task of `scratch` (a kernel's
        // it reads first; any it reads later that LM holds whole or no reader took):
        // their tasks and the slices each holds (none for most ops: no allocation).
        let op = &self.ops[i];
        // A later read streams where LM holds every slice of the stream, or where no
        // reader took the stream before it (an earlier reader's walk read it whole), as
        // the engine lowers its walk: the stream's task and the slices it holds, as a
        // kernel's.
        let later_stream = |r: &TensorId| {
            let (k, held) = w.writer[r.index()]?;
            let slices = w.scratch.get(k)?.walk.as_ref()?.out_slices;
            let first = !w.taken[r.index()];
            (slices > 1 && (first || held >= u64::from(slices))).then_some((k, held))
        };
        let later_streams =
            (op.later.iter().zip(&op.reads)).any(|(s, r)| s.is_some() && later_stream(r).is_some());
        let streams_read = later_streams
            || (op.streamed.iter()).any(|s| s.is_some_and(|p| self.ops[p].makes_stream));
        let producer = |k: usize, &r: &TensorId| match op.streamed.get(k).copied().flatten() {
            Some(p) => {
                self.ops[p].makes_stream.then_some(())?;
                w.writer[r.index()]
            }
            None => op
                .later
                .get(k)
                .copied()
                .flatten()
                .and_then(|_| later_stream(&r)),
        };
        // On the stack for an op of a few inputs (the memo is asked at every op).
        let mut buf = [None; 4];
        let heap: Vec<Option<(usize, u64)>>;
        let producers: &[Option<(usize, u64)>] = match (streams_read, op.reads.len()) {
            (false, _) => &[],
            (true, n) if n <= buf.len() => {
                for (k, (b, r)) in buf.iter_mut().zip(&op.reads).enumerate() {
                    *b = producer(k, r);
                }
                &buf[..n]
            }
            (true, _) => {
                heap = (op.reads.iter().enumerate())
                    .map(|(k, r)| producer(k, r))
                    .collect();
                &heap
            }
        };
        // A measurement that sends no slice again does not depend on the producers'
        // tasks (only a re-send costs one of their slices): it is kept under the
        // buffers alone, so other producers' costs find it.
        let light = light_fingerprint(producers);
        // The chain phase's measurement of an op that may then take a Relayout it may
        // not otherwise: memoised apart (the top bit; ops are far fewer than 2^31).
        let apart = if self.chain_keyed(i) { 1u32 << 31 } else { 0 };
        let mut key = (i as u32 | apart, states, layout, light);
        let tasks = |w: &State| -> Vec<Option<(Task, u64)>> {
            (producers.iter())
                .map(|p| p.and_then(|(k, held)| Some((w.scratch.get(k)?.clone(), held))))
                .collect()
        };
        let mut hit = self.memo.get(&key).copied();
        if hit.is_none() {
            key.3 = full_fingerprint(producers, &w.scratch);
            hit = self.memo.get(&key).copied();
        }
        if let Some(at) = hit {
            let at = at as usize;
            if self.explaining && self.measured_ops[at].is_err() {
                self.measured_ops[at] = self.measure(i, key.1.as_slice(), layout, &tasks(w));
            }
            return at;
        }
        let out = self.measure(i, key.1.as_slice(), layout, &tasks(w));
        let resends = out.as_ref().is_ok_and(|o| {
            (o.tasks.iter().flat_map(|t| &t.walk))
                .flat_map(|w| &w.inputs)
                .any(|x| x.resends() > 0)
        });
        if !resends {
            key.3 = light;
        }
        let at = self.measured_ops.len();
        self.measured_ops.push(out);
        self.memo.insert(key, at as u32);
        at
    }

    /// Appends op `i`'s tasks to the scratch, regions renumbered for this plan: inputs
    /// where their tensors are, the op's own regions fresh (from the returned base); the
    /// frees waiting go before the first.
    fn append_tasks(&self, i: usize, out: &OpOut, w: &mut State) -> u32 {
        let first = w.ntasks;
        let base = w.regions.next;
        w.regions.next = w.regions.next.saturating_add(out.span);
        let reads = &self.ops[i].reads;
        for t in &out.tasks {
            let n = w.ntasks;
            if w.scratch.len() <= n {
                w.scratch.push(t.clone());
            } else {
                w.scratch[n].clone_from(t);
            }
            let of = &w.regions.of;
            let task = &mut w.scratch[n];
            super::measure::remap(task, |r| match input_slot(r) {
                Some(s) => reads.get(s).map_or(r, |&t| of[t.index()]),
                None => RegionId(base + r.0),
            });
            task.lm_words = task.lm_words.saturating_add(w.charged);
            w.ntasks += 1;
        }
        if w.ntasks > first {
            w.scratch[first].frees_before.append(&mut w.pending);
        }
        base
    }

    /// The inputs the op's inserted Relayouts moved (in place): their new states and
    /// regions, the old ones freed after the Relayout.
    fn apply_moves(
        &self,
        out: &OpOut,
        (first, base): (usize, u32),
        w: &mut State,
        mut detail: Option<&mut (Vec<u64>, Vec<Inserted>)>,
    ) -> Result<(), Failure> {
        for m in &out.moved {
            let t = m.tensor.index();
            let old = w.st[t].map_or(0, |o| self.words(o));
            let new = self.words(m.state);
            if w.charged + new > self.lm_words {
                let name = self.tensor(m.tensor).name.clone();
                return Err(Failure::RelayoutOverflow(name));
            }
            w.charged = w.charged + new - old;
            w.st[t] = Some(m.state);
            if let Some(task) = w.scratch.get_mut(first + m.task) {
                task.frees_after.push((w.regions.of[t], old));
            }
            w.regions.of[t] = RegionId(base + m.region.0);
            if let Some(d) = detail.as_deref_mut() {
                d.1.push(m.insert.clone());
            }
        }
        Ok(())
    }

    /// The streams op `i` (its tasks from `first` on) took: each input it does not
    /// write that a task's walk reads slice by slice (the engine's first reader of the
    /// stream).
    fn take_streams(&self, i: usize, first: usize, w: &mut State) {
        let op = &self.ops[i];
        for &r in &op.reads {
            if op.writes == Some(r) || w.taken[r.index()] {
                continue;
            }
            let region = w.regions.of[r.index()];
            w.taken[r.index()] = (w.scratch[first..w.ntasks].iter())
                .flat_map(|t| t.walk.iter().flat_map(|walk| &walk.inputs))
                .any(|input| input.region == region);
        }
    }

    /// Op `i`'s output `(t, s, region)`: LM charged as the engine allocates, the old
    /// region freed, and the stream it leaves for its next reader.
    fn apply_output(
        &self,
        i: usize,
        (id, s, region): (TensorId, StateId, RegionId),
        (first, base): (usize, u32),
        w: &mut State,
    ) -> Result<(), Failure> {
        let op = &self.ops[i];
        let t = id.index();
        let new = self.words(s);
        let old = w.st[t].map_or(0, |o| self.words(o));
        // As the engine allocates: a Load, a move into another tensor and a Reduce free
        // the old region first; a move in place and a kernel allocate beside it.
        let in_place_move =
            !op.is_kernel && op.reads.first() == Some(&id) && !self.is_reduce(op.op);
        let frees_first = op.effect == Effect::Load || !(op.is_kernel || in_place_move);
        let before = if frees_first {
            w.charged - old
        } else {
            w.charged
        };
        if before + new > self.lm_words {
            return Err(Failure::NoRoom {
                tensor: self.tensor(id).name.clone(),
                need: new,
                free: self.lm_words - before.min(self.lm_words),
                lm: self.lm_words,
            });
        }
        let ntasks = w.ntasks;
        if w.st[t].is_some() && ntasks > first {
            let free = (w.regions.of[t], old);
            if frees_first {
                w.scratch[first].frees_before.push(free);
            } else {
                w.scratch[ntasks - 1].frees_after.push(free);
            }
        }
        w.charged = w.charged - old + new;
        w.st[t] = Some(s);
        w.regions.of[t] = RegionId(base + region.0);
        // A stream for the next reader when a task of the op made it slice by slice and
        // no later task of the op walked it but in place (the Reduces a partial kernel
        // needs read it slice by slice without taking its first read).
        let region = w.regions.of[t];
        let scratch = &w.scratch;
        let made = (first..ntasks).find(|&k| {
            let task = &scratch[k];
            task.writes.contains(&region)
                && !task.reads.contains(&region)
                && task.walk.as_ref().is_some_and(|w| w.out_slices > 0)
        });
        let second = w.second;
        w.taken[t] = false;
        w.writer[t] = made
            .filter(|&k| {
                !scratch[k + 1..ntasks].iter().any(|task| {
                    !task.writes.contains(&region)
                        && (task.walk.iter().flat_map(|w| &w.inputs)).any(|i| i.region == region)
                })
            })
            .map(|k| {
                // Two slices where they fit beside everything live, as the engine's
                // default `buffers:` decides.
                let free = self.lm_words.saturating_sub(before + second);
                (k, if 2 * new <= free { 2 } else { 1 })
            });
        // A stream keeps a second slice where two fit beside everything live (the
        // engine's default `buffers:`), which the next stream's choice sees.
        w.second -= std::mem::take(&mut w.seconds[t]);
        let layout = self.states[s as usize].0 as usize;
        if self.layouts[layout].time_span() > 1 && before + w.second + 2 * new <= self.lm_words {
            w.seconds[t] = new;
            w.second += new;
        }
        Ok(())
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

/// A hash of `parts` under `tag` (foldhash's quality hasher with its fixed seed: the
/// same on every machine, and several times faster than SipHash on these few words),
/// never 0; 0 when there are none.
fn fingerprint<T: std::hash::Hash>(tag: &str, parts: impl ExactSizeIterator<Item = T>) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    if parts.len() == 0 {
        return 0;
    }
    let mut h = foldhash::quality::FixedState::default().build_hasher();
    std::hash::Hash::hash(tag, &mut h);
    for p in parts {
        p.hash(&mut h);
    }
    h.finish() | 1
}
