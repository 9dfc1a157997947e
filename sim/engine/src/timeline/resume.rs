//! Placing programs that share a prefix: a search scores many programs that differ from
//! the one before only from some task on (a coordinate descent changes one variable,
//! and the ops before its first op keep their tasks). [`Resumable`] keeps the timeline
//! after each task of the last program placed and starts the next one from the state
//! after their longest common prefix. The placement is [`super::schedule`]'s, task for
//! task: the timeline is a function of the tasks before it.

use super::{BusyTable, Schedule, Task, Timeline};

/// Snapshots of the last program placed, at most this many (evenly spaced beyond).
const MAX_SNAPSHOTS: usize = 64;

/// The last program placed and its timeline after some of its tasks.
#[derive(Clone, Debug, Default)]
pub struct Resumable {
    tasks: Vec<Task>,
    /// (tasks placed, the timeline and busy state after them), in increasing order.
    snaps: Vec<(usize, Timeline, BusyTable)>,
    key: Option<(Schedule, u64)>,
    /// The last program's total, and the tasks and work of placing it again from its
    /// last snapshot (what placing it again would do, which is counted when it is).
    last: (u64, usize, u64),
    /// The marks the last program was asked for and their ends ([`Timeline::ends_by`]).
    last_marks: (Vec<usize>, Vec<u64>),
    /// Tasks placed anew over all calls (for tests and benches).
    pub placed: u64,
    /// The work of placing the tasks placed anew over all calls ([`Timeline::work`]).
    pub booked: u64,
    /// Buffers of the walks placed, for the next call's.
    spare: super::spare::Spare,
    /// Timelines and busy tables of dropped snapshots, and tasks of a program placed
    /// before, whose vectors the next ones are cloned into.
    free: Vec<(Timeline, BusyTable)>,
    free_tasks: Vec<Task>,
}

impl Resumable {
    /// The total of `tasks` placed under `schedule` (as [`super::schedule`]`(tasks,
    /// schedule, lm_capacity).total()`), from the state after the longest prefix it
    /// shares with the last program placed.
    pub fn total(&mut self, tasks: &[Task], schedule: Schedule, lm_capacity: u64) -> u64 {
        self.place(tasks, (schedule, lm_capacity), true, &[]).0
    }

    /// [`Resumable::total`], and per mark (a count of tasks) the latest end of the
    /// tasks before it ([`Timeline::ends_by`]).
    pub fn total_by(
        &mut self,
        tasks: &[Task],
        (schedule, lm_capacity): (Schedule, u64),
        marks: &[usize],
    ) -> (u64, Vec<u64>) {
        self.place(tasks, (schedule, lm_capacity), true, marks)
    }

    /// [`Resumable::total`]; the same program as the last one placed again only when
    /// not `again` (its total is the last one's, its work counted as placing it again).
    pub(super) fn place(
        &mut self,
        tasks: &[Task],
        (schedule, lm_capacity): (Schedule, u64),
        again: bool,
        marks: &[usize],
    ) -> (u64, Vec<u64>) {
        if self.key != Some((schedule, lm_capacity)) {
            self.key = Some((schedule, lm_capacity));
            self.tasks.clear();
            self.drop_snapshots(0);
        }
        let common = self
            .tasks
            .iter()
            .zip(tasks)
            .take_while(|(a, b)| a == b)
            .count();
        // The same program again: the same total (the timeline is a function of its
        // tasks), and the same work counted as placing it again would.
        if again
            && common == tasks.len()
            && common == self.tasks.len()
            && !tasks.is_empty()
            && self.last_marks.0 == marks
        {
            let (total, placed, work) = self.last;
            self.placed += placed as u64;
            self.booked = self.booked.saturating_add(work);
            return (total, self.last_marks.1.clone());
        }
        // The latest snapshot within the common prefix.
        let keep = self.snaps.partition_point(|s| s.0 <= common);
        self.drop_snapshots(keep);
        let (mut t, mut busy) = match self.snaps.is_empty() {
            true => (Timeline::new(schedule, lm_capacity), BusyTable::default()),
            false => self.fresh(schedule, lm_capacity),
        };
        let from = match self.snaps.last() {
            Some((n, st, sb)) => {
                t.clone_from(st);
                busy.clone_from(sb);
                *n
            }
            None => 0,
        };
        // The tasks past the prefix serve as the vectors of those placed now.
        self.free_tasks
            .extend(self.tasks.drain(from.min(self.tasks.len())..));
        // The buffers of the walks placed last time serve this time's.
        t.spare.take_from(&mut self.spare);
        let work0 = t.work;
        let every = tasks.len().div_ceil(MAX_SNAPSHOTS).max(1);
        for (k, task) in tasks.iter().enumerate().skip(from) {
            t.push_on(task, &mut busy);
            match self.free_tasks.pop() {
                Some(mut kept) => {
                    kept.clone_from(task);
                    self.tasks.push(kept);
                }
                None => self.tasks.push(task.clone()),
            }
            self.placed += 1;
            if (k + 1) % every == 0 && k + 1 < tasks.len() {
                let (mut st, mut sb) = self.fresh(schedule, lm_capacity);
                st.clone_from(&t);
                sb.clone_from(&busy);
                self.snaps.push((k + 1, st, sb));
            }
        }
        t.settle(&mut busy);
        self.booked = self.booked.saturating_add(t.work - work0);
        let total = t.total();
        let (n, w) = match self.snaps.last() {
            Some((n, s, _)) => (*n, s.work),
            None => (0, 0),
        };
        self.last = (total, tasks.len() - n, t.work - w);
        let ends = t.ends_by(marks);
        self.last_marks = (marks.to_vec(), ends.clone());
        t.keep_buffers(&mut self.spare);
        if self.free.len() <= MAX_SNAPSHOTS {
            self.free.push((t, busy));
        }
        (total, ends)
    }

    /// A timeline and busy table to clone into: one a dropped snapshot left, or new.
    fn fresh(&mut self, schedule: Schedule, lm_capacity: u64) -> (Timeline, BusyTable) {
        (self.free.pop())
            .unwrap_or_else(|| (Timeline::new(schedule, lm_capacity), BusyTable::default()))
    }

    /// Drops the snapshots from the `keep`-th on, keeping the buffers of their streams'
    /// times that no other holds.
    fn drop_snapshots(&mut self, keep: usize) {
        for (_, mut t, b) in self.snaps.drain(keep.min(self.snaps.len())..) {
            t.keep_buffers(&mut self.spare);
            if self.free.len() <= MAX_SNAPSHOTS {
                self.free.push((t, b));
            }
        }
    }
}
