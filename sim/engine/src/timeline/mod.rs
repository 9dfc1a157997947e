//! The timeline (the schedule, docs/model.md): where every op's task sits in time.
//!
//! An op is lowered ([`crate::lowering`]) to a [`Task`]: how long it takes, the resources
//! it holds and for how long each, the LM regions it reads and writes, and the LM it
//! keeps charged. [`schedule`] places a program's tasks; it is pure (no ECS, no engine),
//! so a planner can combine memoised per-op tasks without running anything.
//!
//! - [`Schedule::Sequential`]: each task starts when the previous one ends.
//! - [`Schedule::Overlapped`]: tasks issue in program order; a task starts at the
//!   earliest cycle at which (1) the previous task has issued, (2) every region it reads
//!   has been written, (3) every resource it holds is free, and (4) the LM it needs is
//!   free: space freed by an earlier op counts as free only once the region's last user
//!   has ended (write-after-read). It holds each resource for that stage's cycles from
//!   its start.
//!
//! A resource serves one task at a time: every booking takes the first gap of the
//! resource at or after its ready cycle that fits it ([`BusyTable`]), so a later task
//! may use cycles an earlier one left free (a walk's bursts leave gaps between its
//! steps), a walking task's bookings included (it books its resources step by step,
//! between the sends of the streams it reads).
//! The busy state of resources is one implementation, [`BusyTable`]: one table for the
//! pure function, one per level entity of the machine's ECS world for a run
//! (`world::WorldBusy` routes a resource to its level's table).

use crate::ids::{Dir, LevelId, RegionId};
use serde::{Deserialize, Serialize};
pub use task::{Again, Hold, Task, tally};
/// Regions are looked up at every task placed (a fixed, fast hasher: the maps are only
/// looked up, or drained where the order does not matter).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

mod busy;
mod consumed;
mod pace;
mod repeated;
mod resume;
mod sends;
mod spare;
mod steady;
mod streams;
mod task;
#[cfg(test)]
mod tests;

pub use crate::program::Schedule;
pub use busy::{Booking, Busy, BusyTable, Train, overlap};
pub use resume::Resumable;
pub use sends::{SendList, resends_of};
pub use streams::{StreamIn, Walk, share};

/// Something a task occupies. Transfers of the SIMD machine use every node of a level
/// together, so a resource is a level's ports (per direction), not one node's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Resource {
    /// The DRAMs (every node of the DRAM level); reads and writes share them.
    Dram { level: LevelId },
    /// The ports of every node of `level` to its children, in one direction.
    Port { level: LevelId, dir: Dir },
    /// The PEs' LM bandwidth (a copy inside each LM).
    LocalMemory,
    /// The matrix units (one per node of `level`: MAB on MN-Core).
    MatrixUnit { level: LevelId },
    /// The vector units (ALUs, one per PE).
    VectorUnit,
}

impl Resource {
    /// Whether the resource computes (as opposed to moving data).
    pub fn is_compute(self) -> bool {
        matches!(self, Resource::MatrixUnit { .. } | Resource::VectorUnit)
    }
}

/// A resource's name in reports (`L1B down`, `DRAM`, `PE LM`, `MAB compute`,
/// `PE compute`: what `StageReport::resource` names a stage's) and its kind (`port`,
/// `dram`, `lm`, `matrix`, `vector`).
pub fn describe(r: Resource, m: &mnsim_arch::Machine) -> (String, &'static str) {
    let name = |l: LevelId| {
        m.levels
            .get(l.index())
            .map_or_else(|| "?".to_string(), |x| x.name.clone())
    };
    let leaf = m
        .levels
        .last()
        .map_or_else(|| "PE".to_string(), |l| l.name.clone());
    match r {
        Resource::Dram { .. } => ("DRAM".to_string(), "dram"),
        Resource::Port { level, dir } => (format!("{} {}", name(level), dir.name()), "port"),
        Resource::LocalMemory => (format!("{leaf} LM"), "lm"),
        Resource::MatrixUnit { level } => (format!("{} compute", name(level)), "matrix"),
        Resource::VectorUnit => (format!("{leaf} compute"), "vector"),
    }
}

/// What set a task's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cause {
    /// Nothing: the run's first cycle.
    Origin,
    /// The previous task ended (sequential).
    Previous,
    /// Program order: the previous task issued then.
    Issue,
    /// A region it reads was written then.
    Data,
    /// A resource it holds became free then.
    Resource(Resource),
    /// LM space it needs was released then.
    Memory,
}

/// Where a task was placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub start: u64,
    pub end: u64,
    /// What set `start`, and the task whose end (or start, for `Issue`, or hold for a
    /// resource) it was.
    pub cause: Cause,
    pub after: Option<usize>,
}

/// Busy cycles of one resource over a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceUse {
    pub resource: Resource,
    /// Sum of the holds' cycles.
    pub busy_cycles: u64,
}

/// Per region: the end of its latest writer and of its latest user, with those tasks.
#[derive(Clone, Copy, Debug, Default)]
struct RegionUse {
    written: Option<(u64, usize)>,
    used: Option<(u64, usize)>,
}

/// A program being placed, task by task.
#[derive(Debug)]
pub struct Timeline {
    pub schedule: Schedule,
    /// LM words per PE (the capacity the memory rule checks against).
    pub lm_capacity: u64,
    pub placed: Vec<Placement>,
    /// Busy cycles per resource, in order of first use.
    pub resources: Vec<ResourceUse>,
    regions: HashMap<RegionId, RegionUse>,
    /// Per stream region, when its slices are ready (or its producer's sends, not yet placed).
    produced: HashMap<RegionId, streams::Produced>,
    /// Freed space not yet free: (words, cycle it becomes free, task using it last).
    pending: Vec<(u64, u64, Option<usize>)>,
    own: BusyTable,
    /// The work of placing the tasks so far: walk steps and sends placed one by one,
    /// each one; trains of them placed whole ([`steady`], [`pace`]), one per resource and
    /// one per [`pace::TIMES_PER_WORK`] steps whose times they write. A planner's budget
    /// counts it: it grows with the time placing took, the same on every machine.
    pub work: u64,
    /// Buffers of walks placed, for the next walks.
    spare: spare::Spare,
}

/// A clone starts with no spare buffers ([`spare::Spare`]); `clone_from` reuses the
/// vectors and tables of the timeline it overwrites (a resumed placement keeps
/// snapshots of its timeline, and takes them from those it dropped).
impl Clone for Timeline {
    fn clone(&self) -> Timeline {
        let mut t = Timeline::new(self.schedule, self.lm_capacity);
        t.clone_from(self);
        t
    }

    fn clone_from(&mut self, source: &Timeline) {
        let Timeline {
            schedule,
            lm_capacity,
            placed,
            resources,
            regions,
            produced,
            pending,
            own,
            work,
            spare: _,
        } = source;
        self.schedule = *schedule;
        self.lm_capacity = *lm_capacity;
        self.placed.clone_from(placed);
        self.resources.clone_from(resources);
        self.regions.clone_from(regions);
        self.produced.clone_from(produced);
        self.pending.clone_from(pending);
        self.own.clone_from(own);
        self.work = *work;
    }
}

impl Timeline {
    /// An empty timeline; `lm_capacity` is the LM words of one PE.
    pub fn new(schedule: Schedule, lm_capacity: u64) -> Timeline {
        Timeline {
            schedule,
            lm_capacity,
            placed: Vec::new(),
            resources: Vec::new(),
            regions: HashMap::default(),
            produced: HashMap::default(),
            pending: Vec::new(),
            own: BusyTable::default(),
            work: 0,
            spare: spare::Spare::default(),
        }
    }

    /// Empties the timeline, as [`Timeline::new`] with its schedule and capacity gives
    /// it, keeping its vectors and tables (an engine measuring op after op places each
    /// run on one timeline).
    pub fn reset(&mut self) {
        // Every field named: one added later is reset here too, or left on purpose.
        let Timeline {
            schedule: _,
            lm_capacity: _,
            placed,
            resources,
            regions,
            produced,
            pending,
            own,
            work,
            spare: _,
        } = self;
        placed.clear();
        resources.clear();
        regions.clear();
        produced.clear();
        pending.clear();
        own.reset();
        *work = 0;
    }

    /// The run's length: the latest end.
    pub fn total(&self) -> u64 {
        self.placed.iter().map(|p| p.end).max().unwrap_or(0)
    }

    /// Per mark `m` (a count of tasks), the latest end of the first `m` tasks placed
    /// (0 for none): when a prefix of the program is done.
    pub fn ends_by(&self, marks: &[usize]) -> Vec<u64> {
        marks
            .iter()
            .map(|&m| {
                let m = m.min(self.placed.len());
                self.placed[..m].iter().map(|p| p.end).max().unwrap_or(0)
            })
            .collect()
    }

    fn region(&mut self, r: RegionId) -> &mut RegionUse {
        self.regions.entry(r).or_default()
    }

    fn release(&mut self, frees: &[(RegionId, u64)]) {
        for &(r, words) in frees {
            let used = self.region(r).used;
            self.pending
                .push((words, used.map_or(0, |u| u.0), used.map(|u| u.1)));
        }
    }

    /// Places the next task with the timeline's own busy table.
    pub fn push(&mut self, task: &Task) -> Placement {
        let mut own = std::mem::take(&mut self.own);
        let p = self.push_on(task, &mut own);
        self.own = own;
        p
    }

    /// Places the next task, reading and writing resource state in `busy`.
    pub fn push_on(&mut self, task: &Task, busy: &mut dyn Busy) -> Placement {
        let index = self.placed.len();
        let overlapped = self.schedule == Schedule::Overlapped;
        if overlapped {
            self.flush_for(task, busy);
        }
        self.release(&task.frees_before);
        let (start, cause, after) = self.earliest_start(task, index, busy);
        let mut end = start.saturating_add(task.cycles);
        // A transfer's stream is sent when its consumer walks it; a walk runs step by step.
        let deferred = overlapped
            && task
                .walk
                .as_ref()
                .is_some_and(|w| w.deferred && w.out_slices > 1);
        let mut ready = None;
        if overlapped
            && !deferred
            && let Some(w) = &task.walk
        {
            let (e, r) = self.run_walk(w, &task.holds, index, start, busy);
            end = e.max(start);
            ready = Some(r);
        }
        // Space released by the time this task starts is free for good.
        self.pending.retain(|p| p.1 > start);
        self.book_holds(task, index, start, busy);
        self.mark_regions(task, index, end);
        if overlapped
            && let Some(w) = &task.walk
            && w.out_slices > 1
            && let Some(&r) = task.writes.first()
        {
            let produced = if deferred {
                streams::Produced::Deferred {
                    task: index,
                    start,
                    cycles: task.cycles,
                    slices: w.out_slices,
                    holds: task.holds.clone(),
                }
            } else {
                streams::Produced::Fixed(std::sync::Arc::new(ready.unwrap_or_default()))
            };
            self.produced.insert(r, produced);
        }
        let p = Placement {
            start,
            end,
            cause,
            after,
        };
        self.placed.push(p);
        self.release(&task.frees_after);
        p
    }

    /// The earliest start of task `index` under the schedule: the latest of its
    /// constraints (program order, data, LM space, and under the overlapped schedule
    /// room on every resource it holds), what set it, and the task behind that.
    fn earliest_start(
        &mut self,
        task: &Task,
        index: usize,
        busy: &mut dyn Busy,
    ) -> (u64, Cause, Option<usize>) {
        let overlapped = self.schedule == Schedule::Overlapped;
        let streamed = |r: &RegionId| {
            task.walk
                .as_ref()
                .is_some_and(|w| w.inputs.iter().any(|i| i.region == *r))
        };
        let prev = self.placed.last().copied();
        // The latest of the constraints wins; on a tie, the first listed.
        let mut at = (0u64, Cause::Origin, None::<usize>);
        let mut bound = |t: u64, c: Cause, after: Option<usize>| {
            if t > at.0 {
                at = (t, c, after);
            }
        };
        match self.schedule {
            Schedule::Sequential => {
                if let Some(p) = prev {
                    bound(p.end, Cause::Previous, Some(index - 1));
                }
            }
            Schedule::Overlapped => {
                if let Some(p) = prev {
                    bound(p.start, Cause::Issue, Some(index - 1));
                }
                // Read after write; a region written again waits for its earlier users.
                // A stream is read slice by slice (its walk waits for each slice).
                for r in task.reads.iter().filter(|r| !streamed(r)) {
                    if let Some((t, w)) = self.region(*r).written {
                        bound(t, Cause::Data, Some(w));
                    }
                }
                // A stream written in place as it is read (nothing read it since it was
                // written) waits slice by slice too.
                for &r in &task.writes {
                    let u = self.region(r);
                    if streamed(&r) && u.used == u.written {
                        continue;
                    }
                    if let Some((t, w)) = u.used {
                        bound(t, Cause::Data, Some(w));
                    }
                }
                // LM: the space the task needs beyond what is free now must have been
                // released by the regions' last users.
                let free_now = self.lm_capacity.saturating_sub(task.lm_words);
                let held: u64 = self.pending.iter().map(|p| p.0).sum();
                if held > free_now {
                    self.pending.sort_by_key(|p| p.1);
                    let mut left = held;
                    for &(words, t, by) in &self.pending {
                        left = left.saturating_sub(words);
                        if left <= free_now {
                            bound(t, Cause::Memory, by);
                            break;
                        }
                    }
                }
            }
        }
        if overlapped {
            // Every resource the task holds has room from its start: the whole hold, or
            // for a walk (which books step by step) a first cycle.
            let walks = task.walk.is_some();
            let holds = task.holds.iter().map(|h| {
                let c = if walks { h.cycles.min(1) } else { h.cycles };
                (h.resource, c)
            });
            if let (t, Some((r, by))) = busy::fit(busy, holds, at.0)
                && t > at.0
            {
                at = (t, Cause::Resource(r), by);
            }
        }
        at
    }

    /// Books task `index`'s holds (and its re-sends') from `start` where it does not
    /// book them step by step, and adds them to each resource's busy cycles.
    fn book_holds(&mut self, task: &Task, index: usize, start: u64, busy: &mut dyn Busy) {
        let overlapped = self.schedule == Schedule::Overlapped;
        let resend: Vec<Hold> = task
            .walk
            .iter()
            .flat_map(|w| w.inputs.iter().flat_map(|i| i.resend_holds()))
            .collect();
        for (k, h) in task.holds.iter().chain(&resend).enumerate() {
            let own = k < task.holds.len();
            if !overlapped {
                // Op after op: every earlier task has ended; the task's re-sends of a
                // resource follow its own hold of it, within its cycles.
                let at = if own {
                    start
                } else {
                    busy.earliest(h.resource, start, h.cycles).0
                };
                busy.hold(h.resource, index, at, h.cycles);
            } else if own && task.walk.is_none() {
                busy.hold(h.resource, index, start, h.cycles);
            }
            // A walking task books its resources step by step (`run_walk`), a deferred
            // transfer slice by slice as it is sent.
            match self.resources.iter_mut().find(|u| u.resource == h.resource) {
                Some(u) => u.busy_cycles = u.busy_cycles.saturating_add(h.cycles),
                None => self.resources.push(ResourceUse {
                    resource: h.resource,
                    busy_cycles: h.cycles,
                }),
            }
        }
    }

    /// Task `index`, ending at `end`, as the last user of the regions it reads and the
    /// last writer of those it writes.
    fn mark_regions(&mut self, task: &Task, index: usize, end: u64) {
        for &r in &task.reads {
            let u = self.region(r);
            if u.used.is_none_or(|x| x.0 <= end) {
                u.used = Some((end, index));
            }
        }
        for &r in &task.writes {
            let u = self.region(r);
            u.written = Some((end, index));
            if u.used.is_none_or(|x| x.0 <= end) {
                u.used = Some((end, index));
            }
        }
    }

    /// The tasks on the critical path, last first: from the task that ends last, each
    /// task's predecessor is the one that set its start.
    pub fn critical_path(&self) -> Vec<usize> {
        let Some(last) = (0..self.placed.len()).max_by_key(|&i| (self.placed[i].end, i)) else {
            return Vec::new();
        };
        let mut path = vec![last];
        let mut i = last;
        while let Some(a) = self.placed[i].after {
            if a >= i {
                break;
            }
            path.push(a);
            i = a;
        }
        path
    }

    /// Per task, its cycles that lie on the critical path: for a task on it, from its
    /// start to the start of the next task on the path (or its end, for the last); 0
    /// for a task off the path (hidden behind others). They sum to the run's length
    /// when the first task starts at 0.
    pub fn exposed(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.placed.len()];
        let path = self.critical_path();
        let mut next_start: Option<u64> = None;
        for &i in &path {
            let p = self.placed[i];
            let until = next_start.map_or(p.end, |s| s.min(p.end));
            out[i] = until.saturating_sub(p.start);
            next_start = Some(p.start);
        }
        out
    }
}

/// Places a program's tasks (pure: the planner's entry point).
pub fn schedule(tasks: &[Task], schedule: Schedule, lm_capacity: u64) -> Timeline {
    schedule_on(tasks, schedule, lm_capacity, &mut BusyTable::default())
}

/// [`schedule`] on the busy table `busy` (one that logs its bookings, say).
pub fn schedule_on(
    tasks: &[Task],
    schedule: Schedule,
    lm_capacity: u64,
    busy: &mut BusyTable,
) -> Timeline {
    let mut t = Timeline::new(schedule, lm_capacity);
    for task in tasks {
        t.push_on(task, busy);
    }
    t.settle(busy);
    t
}
