//! The busy state of resources: one implementation, [`BusyTable`], shared by the pure
//! [`super::schedule`] (one table for every resource) and a run (one table per level,
//! a component of the level's entity: `world::LevelBusy`).
//!
//! Invariant (docs/model.md, a resource serves one op at a time): a resource is booked
//! only from the cycle it is free, so no two bookings of one resource overlap; a
//! resource's free cycle never moves back (no back-filling of gaps).

use super::Resource;

/// The busy state of resources, behind which the timeline places tasks: a
/// [`BusyTable`], or the world's level entities (each with its own table).
pub trait Busy {
    /// The cycle at which `r` is free, and the task that holds it until then.
    fn free_at(&mut self, r: Resource) -> (u64, Option<usize>);
    /// Task `task` holds `r` from `start` (at least [`Busy::free_at`]) for `cycles`.
    fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64);
}

/// One booking: `task` held `resource` over `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Booking {
    pub resource: Resource,
    pub task: usize,
    pub start: u64,
    pub end: u64,
}

/// Per resource: when it is free again, and the task that held it last.
#[derive(Clone, Copy, Debug)]
struct Slot {
    resource: Resource,
    free_at: u64,
    holder: usize,
}

/// The busy state of a few resources, in a small dense table (resources in order of
/// first use). With [`BusyTable::logging`] it also keeps every booking.
#[derive(Clone, Debug, Default)]
pub struct BusyTable {
    slots: Vec<Slot>,
    log: Option<Vec<Booking>>,
}

impl BusyTable {
    /// A table that keeps every booking ([`BusyTable::bookings`]).
    pub fn logging() -> BusyTable {
        BusyTable {
            slots: Vec::new(),
            log: Some(Vec::new()),
        }
    }

    /// Keeps every booking from now on.
    pub fn log(&mut self) {
        self.log.get_or_insert_with(Vec::new);
    }

    /// Every booking of a nonzero length, in the order made (empty unless logging).
    pub fn bookings(&self) -> &[Booking] {
        self.log.as_deref().unwrap_or_default()
    }

    /// The cycle at which `r` is free (0 if never held), and the task that held it last.
    pub fn free_at(&self, r: Resource) -> (u64, Option<usize>) {
        self.slots
            .iter()
            .find(|s| s.resource == r)
            .map_or((0, None), |s| (s.free_at, Some(s.holder)))
    }

    /// Books `r` for `task` over `[start, start + cycles)`; returns the end. `start` is
    /// at least `r`'s free cycle: the timeline computes every start from
    /// [`BusyTable::free_at`] (a start before it would give `r` to two tasks at once, and is
    /// moved to the free cycle).
    pub fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64) -> u64 {
        let (start, end) = match self.slots.iter_mut().find(|s| s.resource == r) {
            Some(s) => {
                debug_assert!(
                    start >= s.free_at,
                    "{r:?} booked for task {task} at {start}, before it is free at {} (task {})",
                    s.free_at,
                    s.holder
                );
                let start = start.max(s.free_at);
                let end = start.saturating_add(cycles);
                s.free_at = end;
                s.holder = task;
                (start, end)
            }
            None => {
                let end = start.saturating_add(cycles);
                self.slots.push(Slot {
                    resource: r,
                    free_at: end,
                    holder: task,
                });
                (start, end)
            }
        };
        if cycles > 0
            && let Some(log) = &mut self.log
        {
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
    fn free_at(&mut self, r: Resource) -> (u64, Option<usize>) {
        BusyTable::free_at(self, r)
    }
    fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64) {
        BusyTable::hold(self, r, task, start, cycles);
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
