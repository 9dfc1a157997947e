//! The busy state of resources: one implementation, [`BusyTable`], shared by the pure
//! [`super::schedule`] (one table for every resource) and a run (one table per level,
//! a component of the level's entity: `world::LevelBusy`).
//!
//! Invariant (docs/model.md, a resource serves one op at a time): a resource is booked
//! only where it is free for the whole booking, so no two bookings of one resource
//! overlap. A booking takes the first gap at or after its ready cycle that fits it: a
//! later op may use the cycles an earlier one left free (back-filling), as a static
//! schedule would, within the resource's last [`MAX_SPANS`] busy intervals (older gaps
//! count as busy). Compute units are not back-filled: kernels run one after another in
//! program order (one instruction stream).

use super::Resource;

/// The busy state of resources, behind which the timeline places tasks: a
/// [`BusyTable`], or the world's level entities (each with its own table).
pub trait Busy {
    /// The earliest cycle from `at` at which `r` is free for `cycles` in a row (the
    /// start of the first gap that fits), and the task whose booking it waited for
    /// (`None` when it did not wait).
    fn earliest(&mut self, r: Resource, at: u64, cycles: u64) -> (u64, Option<usize>);
    /// Task `task` holds `r` from `start` (where [`Busy::earliest`] found room) for
    /// `cycles`.
    fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64);
    /// The end of `r`'s last booking (0 if never held): `r` is free from then on.
    fn last_end(&mut self, r: Resource) -> u64;
    /// Task `task` holds `r` over every hold of `train` (`r` free from its start on):
    /// the same state as those [`Busy::hold`]s one by one, which it is by default.
    fn hold_train(&mut self, r: Resource, task: usize, train: Train<'_>) {
        for (start, cycles) in train.holds() {
            self.hold(r, task, start, cycles);
        }
    }
}

/// Holds of one resource at a steady pace (see [`Busy::hold_train`]): `count` periods
/// of `period` cycles from `start`, each holding the resource over every `(offset,
/// cycles)` of `pattern` (offsets from the period's start, in order, disjoint, the last
/// hold ending by the next period's first: see [`Train::is_valid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Train<'a> {
    pub start: u64,
    pub period: u64,
    pub count: u64,
    pub pattern: &'a [(u64, u64)],
}

impl Train<'_> {
    /// The start of period `i`.
    pub fn at(&self, i: u64) -> u64 {
        self.start.saturating_add(i.saturating_mul(self.period))
    }

    /// Hold `k` of period `i`: its start and end.
    fn hold(&self, i: u64, k: usize) -> (u64, u64) {
        let (offset, cycles) = self.pattern[k];
        let start = self.at(i).saturating_add(offset);
        (start, start.saturating_add(cycles))
    }

    /// Every hold, in order: its start and cycles.
    pub fn holds(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.count).flat_map(move |i| {
            let at = self.at(i);
            (self.pattern.iter()).map(move |&(o, c)| (at.saturating_add(o), c))
        })
    }

    /// Whether the pattern's holds are in order and disjoint, each period's ending by
    /// the start of the next period's first.
    pub fn is_valid(&self) -> bool {
        let in_order = (self.pattern.windows(2)).all(|w| w[0].0.saturating_add(w[0].1) <= w[1].0);
        let within = match (self.pattern.first(), self.pattern.last()) {
            (Some(f), Some(l)) => l.0.saturating_add(l.1) <= f.0.saturating_add(self.period),
            _ => true,
        };
        in_order && within
    }
}

/// The earliest cycle from `at` at which every resource of `holds` (resource, cycles)
/// is free for its cycles at once, and the resource and task it waited for last.
/// Each resource is asked in turn, wrapping around, until all of them, one after
/// another, fit at the same start: the start only moves later, to where some resource
/// fits, so it ends at the least start where all do.
pub fn fit<I>(busy: &mut dyn Busy, holds: I, at: u64) -> (u64, Option<(Resource, Option<usize>)>)
where
    I: ExactSizeIterator<Item = (Resource, u64)> + Clone,
{
    let n = holds.len();
    let mut t = at;
    let mut why = None;
    // Resources found to fit at `t` in a row.
    let mut fine = 0;
    let mut it = holds.clone();
    while fine < n {
        let Some((r, c)) = it.next() else {
            it = holds.clone();
            continue;
        };
        let (s, by) = busy.earliest(r, t, c);
        if s > t {
            t = s;
            why = Some((r, by));
            // `r` fits at its own earliest start.
            fine = 1;
        } else {
            fine += 1;
        }
    }
    (t, why)
}

/// One booking: `task` held `resource` over `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Booking {
    pub resource: Resource,
    pub task: usize,
    pub start: u64,
    pub end: u64,
}

/// Busy intervals a resource remembers: past them the oldest half of its gaps is counted
/// busy, so a task may back-fill the gaps of the last 32 to 64 bursts on a resource (a
/// stream's sends, a walk's steps) and placing a task costs the same whatever came
/// before it.
const MAX_SPANS: usize = 64;

/// A busy interval `[start, end)` of a resource; `task` held its end (touching
/// bookings merge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: u64,
    end: u64,
    task: usize,
}

/// Per resource: its busy intervals, in order, disjoint and not touching, at most
/// [`MAX_SPANS`].
#[derive(Debug, PartialEq, Eq)]
struct Slot {
    resource: Resource,
    /// The resource's [`code`]: what a lookup compares.
    code: u32,
    spans: Vec<Span>,
}

/// A resource as one number, distinct per resource: its kind, level and direction.
/// A table is searched for a resource at every step of every walk, and one comparison
/// of numbers is cheaper than one of enums.
pub(super) fn code(r: Resource) -> u32 {
    let (kind, level, dir) = match r {
        Resource::Dram { level } => (0, level.0, 0),
        Resource::Port { level, dir } => (1, level.0, dir as u32),
        Resource::LocalMemory => (2, 0, 0),
        Resource::MatrixUnit { level } => (3, level.0, 0),
        Resource::VectorUnit => (4, 0, 0),
    };
    // A level is 16 bits, a direction 1, a kind 3.
    kind << 17 | u32::from(level) << 1 | dir
}

/// Resources with a place in a table's index ([`dense`]): those of levels below
/// [`DENSE_LEVELS`].
const DENSE_LEVELS: u16 = 8;
const DENSE: usize = 4 * DENSE_LEVELS as usize + 2;

/// A resource's place in a table's index, distinct per resource, where its level is
/// below [`DENSE_LEVELS`] (a busy table looks a resource up at every step of every walk).
pub(super) fn dense(r: Resource) -> Option<usize> {
    let n = DENSE_LEVELS;
    let at = match r {
        Resource::Dram { level } if level.0 < n => level.0,
        Resource::Port { level, dir } if level.0 < n => n + 2 * level.0 + dir as u16,
        Resource::MatrixUnit { level } if level.0 < n => 3 * n + level.0,
        Resource::LocalMemory => 4 * n,
        Resource::VectorUnit => 4 * n + 1,
        Resource::Dram { .. } | Resource::Port { .. } | Resource::MatrixUnit { .. } => {
            return None;
        }
    };
    Some(usize::from(at))
}

impl Slot {
    /// The first gap from `at` that fits `cycles`, and the task it waited for.
    fn earliest(&self, at: u64, cycles: u64) -> (u64, Option<usize>) {
        // The common case: after every booking.
        if self.spans.last().is_none_or(|l| l.end <= at) {
            return (at, None);
        }
        // The first interval that ends after `at`: earlier ones are behind it.
        let first = self.spans.partition_point(|s| s.end <= at);
        let mut t = at;
        let mut by = None;
        for s in &self.spans[first..] {
            if t.saturating_add(cycles) <= s.start && (cycles > 0 || t < s.start) {
                break;
            }
            t = t.max(s.end);
            by = Some(s.task);
        }
        (t, by)
    }

    /// Marks `[start, end)` busy for `task` (it is free: [`Slot::earliest`] found it).
    fn insert(&mut self, start: u64, end: u64, task: usize) {
        let span = Span { start, end, task };
        match self.spans.last_mut() {
            // The common case: after every interval, or right at the end of the last.
            None => self.spans.push(span),
            Some(last) if start > last.end => self.spans.push(span),
            Some(last) if start == last.end => {
                last.end = end;
                last.task = task;
            }
            Some(_) => self.insert_inside(span),
        }
        // Past [`MAX_SPANS`] intervals the oldest half of the gaps is given up (counted
        // busy): one interval from the first to the middle one.
        if self.spans.len() > MAX_SPANS {
            let mid = MAX_SPANS / 2;
            let (end, task) = (self.spans[mid].end, self.spans[mid].task);
            self.spans[0].end = end;
            self.spans[0].task = task;
            self.spans.drain(1..=mid);
        }
    }

    /// The state [`Slot::insert`] of every hold of `t` gives, in closed form. The first
    /// period's holds are inserted as any. If they end after every interval, each later
    /// hold is pushed after the last interval, or merged with it where it touches it:
    /// per period the same spans, each from a hold that does not touch the one before
    /// it. The intervals after the first form a queue of which every push past
    /// [`MAX_SPANS`] intervals pops the oldest half, the first interval then ending
    /// where the last popped did. So the pops, the first interval's end and the
    /// intervals left follow from the count of spans alone.
    fn train(&mut self, t: Train<'_>, task: usize) {
        let holds: Vec<(u64, u64)> = (t.pattern.iter()).filter(|h| h.1 > 0).copied().collect();
        let t = Train {
            pattern: &holds,
            ..t
        };
        let Some(last) = holds.len().checked_sub(1) else {
            return;
        };
        if t.count == 0 {
            return;
        }
        for k in 0..=last {
            let (start, end) = t.hold(0, k);
            self.insert(start, end, task);
        }
        if t.count == 1 {
            return;
        }
        if self.spans.last().map(|l| l.end) != Some(t.hold(0, last).1) {
            // The first period fell before a later interval: hold by hold.
            for (start, cycles) in t.holds().skip(holds.len()) {
                self.insert(start, start.saturating_add(cycles), task);
            }
            return;
        }
        // The holds that start a span: those that do not touch the hold before them
        // (the first hold's is the last of the period before).
        let touches = |k: usize| match k {
            0 => t.hold(0, last).1 == t.hold(1, 0).0,
            _ => t.hold(0, k - 1).1 == t.hold(0, k).0,
        };
        let heads: Vec<usize> = (0..=last).filter(|&k| !touches(k)).collect();
        let Some(&h0) = heads.first() else {
            // Every hold touches the one before: one interval to the last hold's end.
            self.extend_last(t.hold(t.count - 1, last).1, task);
            return;
        };
        if h0 > 0 {
            // Period 1's holds before the first head extend the last interval.
            self.extend_last(t.hold(1, h0 - 1).1, task);
        }
        // Span `g` of the periods after the first: from the `g % q`-th head of period
        // 1 + g / q to the end of the hold before the next head (of the next period,
        // where there is one, for the last head).
        let q = heads.len() as u64;
        // Span `g` of the periods after the first: from the `g % q`-th head of period
        // 1 + g / q to the end of the hold before the next head (of the next period,
        // where there is one, for the last head). Each is its period's start moved by
        // offsets fixed per head (adding saturating parts one after another saturates to
        // the same time as adding their saturating sum), the start counted on period by
        // period (a saturating sum, as `Train::at`'s product).
        let end_of = |k: usize| t.pattern[k].0.saturating_add(t.pattern[k].1);
        let offsets: Vec<(u64, u64)> = (heads.iter().enumerate())
            .map(|(u, &h)| {
                let end = heads.get(u + 1).map_or(0, |&next| end_of(next - 1));
                (t.pattern[h].0, end)
            })
            .collect();
        let wrap_end = (h0 > 0).then(|| t.period.saturating_add(end_of(h0 - 1)));
        let last_end = end_of(last);
        let from = |g: u64| {
            let (mut i, mut u) = (1 + g / q, (g % q) as usize);
            let mut base = t.at(i);
            let offsets = &offsets;
            std::iter::from_fn(move || {
                let (so, eo) = offsets[u];
                let end = match (u + 1 < offsets.len(), wrap_end) {
                    (true, _) => eo,
                    (false, Some(w)) if i + 1 < t.count => w,
                    (false, _) => last_end,
                };
                let s = Span {
                    start: base.saturating_add(so),
                    end: base.saturating_add(end),
                    task,
                };
                u += 1;
                if u == offsets.len() {
                    (i, u) = (i + 1, 0);
                    base = base.saturating_add(t.period);
                }
                Some(s)
            })
        };
        self.push_spans((t.count - 1).saturating_mul(q), from);
    }

    /// The last interval ends at `end`, held last by `task`.
    fn extend_last(&mut self, end: u64, task: usize) {
        if let Some(l) = self.spans.last_mut() {
            l.end = end;
            l.task = task;
        }
    }

    /// The state that [`Slot::insert`]ing the `pushed` spans `from(0)` yields gives, each
    /// after the last interval and not touching it, in closed form (`from(g)` yields the
    /// spans from the `g`-th on).
    fn push_spans<I>(&mut self, pushed: u64, from: impl Fn(u64) -> I)
    where
        I: Iterator<Item = Span>,
    {
        // The queue: the intervals after the first (`q0` of them), then the spans.
        let q0 = self.spans.len().saturating_sub(1) as u64;
        // A pop when the queue reaches MAX_SPANS, of its oldest half.
        let (top, half) = (MAX_SPANS as u64, (MAX_SPANS / 2) as u64);
        let pops = match pushed.checked_sub(top.saturating_sub(q0)) {
            Some(past) => 1 + past / half,
            None => 0,
        };
        // The queue's items from `skip` on are left.
        let skip = pops * half;
        if pops > 0 {
            let last = match skip - 1 {
                k if k < q0 => Some(self.spans[1 + k as usize]),
                k => from(k - q0).next(),
            };
            if let Some(last) = last {
                self.spans[0].end = last.end;
                self.spans[0].task = last.task;
            }
        }
        // Queued intervals past the popped ones stay, then the spans not popped.
        let kept = 1 + skip.min(q0) as usize;
        self.spans.drain(1..kept);
        let g0 = skip.saturating_sub(q0);
        self.spans
            .extend(from(g0).take(pushed.saturating_sub(g0) as usize));
    }

    /// [`Slot::insert`] before the last interval: merged with those it touches.
    fn insert_inside(&mut self, span: Span) {
        let i = self.spans.partition_point(|s| s.end < span.start);
        let mut j = i;
        let mut merged = span;
        while let Some(s) = self.spans.get(j) {
            if s.start > span.end {
                break;
            }
            merged.start = merged.start.min(s.start);
            if s.end > merged.end {
                merged.end = s.end;
                merged.task = s.task;
            }
            j += 1;
        }
        if j == i {
            self.spans.insert(i, merged);
        } else {
            self.spans[i] = merged;
            self.spans.drain(i + 1..j);
        }
    }
}

/// The busy state of a few resources, in a small dense table (resources in order of
/// first use), each with its busy intervals. With [`BusyTable::logging`] it also keeps
/// every booking.
#[derive(Debug, PartialEq, Eq)]
pub struct BusyTable {
    slots: Vec<Slot>,
    /// Per resource of a small machine ([`dense`]), its slot's index + 1 (0: none yet).
    index: [u8; DENSE],
    log: Option<Vec<Booking>>,
}

/// `clone_from` reuses the vectors of the slot it overwrites.
impl Clone for Slot {
    fn clone(&self) -> Slot {
        Slot {
            resource: self.resource,
            code: self.code,
            spans: self.spans.clone(),
        }
    }

    fn clone_from(&mut self, source: &Slot) {
        self.resource = source.resource;
        self.code = source.code;
        self.spans.clone_from(&source.spans);
    }
}

impl Default for BusyTable {
    fn default() -> BusyTable {
        BusyTable {
            slots: Vec::new(),
            index: [0; DENSE],
            log: None,
        }
    }
}

/// `clone_from` reuses the vectors of the table it overwrites (a resumed placement keeps
/// snapshots of its busy table).
impl Clone for BusyTable {
    fn clone(&self) -> BusyTable {
        BusyTable {
            slots: self.slots.clone(),
            index: self.index,
            log: self.log.clone(),
        }
    }

    fn clone_from(&mut self, source: &BusyTable) {
        self.slots.clone_from(&source.slots);
        self.index = source.index;
        self.log.clone_from(&source.log);
    }
}

impl BusyTable {
    /// A table that keeps every booking ([`BusyTable::bookings`]).
    pub fn logging() -> BusyTable {
        BusyTable {
            log: Some(Vec::new()),
            ..BusyTable::default()
        }
    }

    /// Whether the table is as [`BusyTable::default`] gives it: nothing booked, not
    /// logging.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.log.is_none()
    }

    /// Empties the table, as [`BusyTable::default`] gives it (not logging), keeping its
    /// vector of slots.
    pub fn reset(&mut self) {
        self.slots.clear();
        self.index = [0; DENSE];
        self.log = None;
    }

    /// Keeps every booking from now on.
    pub fn log(&mut self) {
        self.log.get_or_insert_with(Vec::new);
    }

    /// Every booking of a nonzero length, in the order made (empty unless logging).
    pub fn bookings(&self) -> &[Booking] {
        self.log.as_deref().unwrap_or_default()
    }

    /// The cycle after `r`'s last booking (0 if never held), and the task that held it.
    pub fn free_at(&self, r: Resource) -> (u64, Option<usize>) {
        self.find(r)
            .and_then(|s| s.spans.last())
            .map_or((0, None), |s| (s.end, Some(s.task)))
    }

    /// The earliest cycle from `at` at which `r` is free for `cycles` in a row: the first
    /// gap that fits, compute units included (the instruction stream is static, so a
    /// kernel's steps may fill the pauses of an earlier kernel waiting for a stream).
    pub fn earliest(&self, r: Resource, at: u64, cycles: u64) -> (u64, Option<usize>) {
        self.find(r).map_or((at, None), |s| s.earliest(at, cycles))
    }

    /// `r`'s slot, if it has one.
    fn find(&self, r: Resource) -> Option<&Slot> {
        match dense(r) {
            Some(d) => (self.index[d].checked_sub(1)).and_then(|i| self.slots.get(usize::from(i))),
            None => {
                let c = code(r);
                self.slots.iter().find(|s| s.code == c)
            }
        }
    }

    /// [`Busy::hold_train`]: the holds one by one while logging (every booking is kept),
    /// else the state they give, in closed form.
    pub fn hold_train(&mut self, r: Resource, task: usize, t: Train<'_>) {
        if self.log.is_some() || t.count <= 1 {
            for (start, cycles) in t.holds() {
                self.hold(r, task, start, cycles);
            }
            return;
        }
        debug_assert!(t.is_valid(), "a train's holds overlap: {t:?}");
        let i = self.slot(r);
        self.slots[i].train(t, task);
    }

    /// The index of `r`'s slot (added if new).
    fn slot(&mut self, r: Resource) -> usize {
        let d = dense(r);
        if let Some(i) = d.and_then(|d| self.index[d].checked_sub(1)) {
            return usize::from(i);
        }
        let c = code(r);
        if let Some(i) = self.slots.iter().position(|s| s.code == c) {
            return i;
        }
        self.slots.push(Slot {
            resource: r,
            code: c,
            spans: Vec::new(),
        });
        let i = self.slots.len() - 1;
        // The index holds slots up to 254 (one byte, 0 for none); later ones are found
        // by their code.
        if let (Some(d), Ok(k)) = (d, u8::try_from(i + 1)) {
            self.index[d] = k;
        }
        i
    }

    /// Books `r` for `task` over `[start, start + cycles)`; returns the end. The
    /// timeline computes every start with [`BusyTable::earliest`] (a start where `r` is
    /// not free would give it to two tasks at once: debug builds check it).
    pub fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64) -> u64 {
        let i = self.slot(r);
        let slot = &mut self.slots[i];
        #[cfg(debug_assertions)]
        {
            let (fits, by) = slot.earliest(start, cycles);
            debug_assert!(
                fits == start,
                "{r:?} booked for task {task} at {start}, where it is busy until {fits} (task {by:?})"
            );
        }
        let end = start.saturating_add(cycles);
        if cycles == 0 {
            return end;
        }
        slot.insert(start, end, task);
        if let Some(log) = &mut self.log {
            log.push(Booking {
                resource: r,
                task,
                start,
                end,
            });
        }
        end
    }
}

impl Busy for BusyTable {
    fn earliest(&mut self, r: Resource, at: u64, cycles: u64) -> (u64, Option<usize>) {
        BusyTable::earliest(self, r, at, cycles)
    }
    fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64) {
        BusyTable::hold(self, r, task, start, cycles);
    }
    fn last_end(&mut self, r: Resource) -> u64 {
        self.free_at(r).0
    }
    fn hold_train(&mut self, r: Resource, task: usize, train: Train<'_>) {
        BusyTable::hold_train(self, r, task, train);
    }
}

/// The first two bookings of one resource that overlap, if any.
pub fn overlap(bookings: &[Booking]) -> Option<(Booking, Booking)> {
    let mut v: Vec<Booking> = bookings.to_vec();
    v.sort_by_key(|b| (b.resource, b.start, b.end));
    v.windows(2)
        .find(|w| w[0].resource == w[1].resource && w[1].start < w[0].end)
        .map(|w| (w[0], w[1]))
}
