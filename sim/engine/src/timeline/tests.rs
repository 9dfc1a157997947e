//! Worked examples of the schedule, by hand.

use super::*;

const L: LevelId = LevelId(1);

fn port(cycles: u64) -> Hold {
    Hold {
        resource: Resource::Port {
            level: L,
            dir: Dir::Down,
        },
        cycles,
    }
}

fn vector(cycles: u64) -> Hold {
    Hold {
        resource: Resource::VectorUnit,
        cycles,
    }
}

fn matrix(cycles: u64) -> Hold {
    Hold {
        resource: Resource::MatrixUnit { level: L },
        cycles,
    }
}

/// A load of `cycles` (its port busy `busy` of them) into region `to`.
fn load(cycles: u64, busy: u64, to: u32, lm: u64) -> Task {
    Task {
        cycles,
        holds: vec![port(busy)],
        writes: vec![RegionId(to)],
        lm_words: lm,
        ..Task::default()
    }
}

fn kernel(h: Hold, from: &[u32], to: u32, lm: u64) -> Task {
    Task {
        cycles: h.cycles,
        holds: vec![h],
        reads: from.iter().map(|&r| RegionId(r)).collect(),
        writes: vec![RegionId(to)],
        lm_words: lm,
        ..Task::default()
    }
}

fn spans(t: &Timeline) -> Vec<(u64, u64)> {
    t.placed.iter().map(|p| (p.start, p.end)).collect()
}

#[test]
fn sequential_places_each_task_after_the_previous_one() {
    let tasks = [
        load(110, 100, 0, 10),
        kernel(vector(50), &[0], 1, 20),
        load(110, 100, 2, 30),
    ];
    let t = schedule(&tasks, Schedule::Sequential, 1000);
    assert_eq!(spans(&t), [(0, 110), (110, 160), (160, 270)]);
    assert_eq!(t.total(), 270);
    assert_eq!(t.exposed(), [110, 50, 110]);
}

#[test]
fn a_load_streams_behind_an_independent_kernel() {
    // Load a; kernel on a; load b (independent of the kernel); kernel on b.
    let tasks = [
        load(110, 100, 0, 10),
        kernel(vector(50), &[0], 1, 20),
        load(110, 100, 2, 30),
        kernel(vector(50), &[2], 3, 40),
    ];
    let t = schedule(&tasks, Schedule::Overlapped, 1000);
    // b's load needs the port a's load holds until 100, not a's end at 110; it issues
    // after the first kernel issued (110), and runs beside it.
    assert_eq!(spans(&t), [(0, 110), (110, 160), (110, 220), (220, 270)]);
    assert_eq!(t.placed[2].cause, Cause::Issue);
    assert_eq!(t.placed[3].cause, Cause::Data);
    // Critical path: load a → kernel a (issued at once) → load b → kernel b; the
    // first kernel runs beside load b, so none of its cycles are exposed.
    assert_eq!(t.critical_path(), [3, 2, 1, 0]);
    assert_eq!(t.exposed(), [110, 0, 110, 50]);
    assert_eq!(t.exposed().iter().sum::<u64>(), t.total());
    let seq = schedule(&tasks, Schedule::Sequential, 1000);
    assert_eq!(seq.total(), 320);
}

#[test]
fn transfers_on_one_port_queue_behind_each_other() {
    let tasks = [load(110, 100, 0, 10), load(110, 100, 1, 20)];
    let t = schedule(&tasks, Schedule::Overlapped, 1000);
    // The second waits for the port (100), not for the first's latency (110).
    assert_eq!(spans(&t), [(0, 110), (100, 210)]);
    assert_eq!(
        t.placed[1].cause,
        Cause::Resource(Resource::Port {
            level: L,
            dir: Dir::Down
        })
    );
}

#[test]
fn a_matrix_kernel_and_an_independent_vector_kernel_co_issue() {
    let tasks = [
        load(10, 10, 0, 10),
        kernel(matrix(100), &[0], 1, 20),
        kernel(vector(40), &[0], 2, 30),
        kernel(vector(40), &[0], 3, 40),
    ];
    let t = schedule(&tasks, Schedule::Overlapped, 1000);
    // Both vector kernels share the vector unit: one after the other, beside the matmul.
    assert_eq!(spans(&t), [(0, 10), (10, 110), (10, 50), (50, 90)]);
    let busy: Vec<(Resource, u64)> = t
        .resources
        .iter()
        .map(|u| (u.resource, u.busy_cycles))
        .collect();
    assert!(busy.contains(&(Resource::VectorUnit, 80)));
    assert!(busy.contains(&(Resource::MatrixUnit { level: L }, 100)));
}

#[test]
fn a_load_waits_until_the_space_it_reuses_is_no_longer_read() {
    // LM of 100 words. w1 (60 words) is read by a matmul until 10 + 500; it is freed,
    // and w2 (60 words) can only fit once the matmul no longer reads w1 (WAR).
    let mut free_w1 = load(110, 100, 3, 90);
    free_w1.frees_before = vec![(RegionId(1), 60)];
    let tasks = [
        load(10, 10, 0, 10),                 // x: 10 words
        load(110, 100, 1, 70),               // w1: 60 words
        kernel(matrix(500), &[0, 1], 2, 90), // y: 20 words
        free_w1,                             // w2 in w1's space
    ];
    let t = schedule(&tasks, Schedule::Overlapped, 100);
    assert_eq!(t.placed[2].end, 120 + 500);
    assert_eq!(t.placed[3].start, 620, "{:?}", t.placed[3]);
    assert_eq!(t.placed[3].cause, Cause::Memory);
    assert_eq!(t.placed[3].after, Some(2));
    // With room for both, it streams beside the matmul.
    let mut roomy = tasks.clone();
    roomy[3].lm_words = 90;
    let t = schedule(&roomy, Schedule::Overlapped, 200);
    assert_eq!(t.placed[3].start, 120);
}

#[test]
fn a_region_written_again_waits_for_its_readers() {
    // A reduce in place writes the region a kernel still reads.
    let reduce = Task {
        cycles: 30,
        holds: vec![port(30)],
        reads: vec![RegionId(0)],
        writes: vec![RegionId(0)],
        lm_words: 20,
        ..Task::default()
    };
    let tasks = [
        load(10, 10, 0, 10),
        kernel(matrix(100), &[0], 1, 20),
        reduce,
    ];
    let t = schedule(&tasks, Schedule::Overlapped, 1000);
    assert_eq!(t.placed[2].start, 110);
}

#[test]
fn the_busy_table_and_a_timeline_agree_with_any_busy_state() {
    // push_on with a fresh BusyTable is push.
    let tasks = [
        load(110, 100, 0, 10),
        kernel(vector(50), &[0], 1, 20),
        load(110, 100, 2, 30),
    ];
    let a = schedule(&tasks, Schedule::Overlapped, 1000);
    let mut b = Timeline::new(Schedule::Overlapped, 1000);
    let mut busy = BusyTable::default();
    for t in &tasks {
        b.push_on(t, &mut busy);
    }
    assert_eq!(a.placed, b.placed);
    assert_eq!(busy.free_at(Resource::VectorUnit), (160, Some(1)));
}

/// A Load of `slices` slices (`cycles` in all, holding the down port of `level` for
/// `busy` of them) into region `to`, sent as its consumer walks them.
fn deferred_load(level: u16, slices: u32, (cycles, busy): (u64, u64), to: u32) -> Task {
    let mut load = load(cycles, busy, to, 10);
    load.holds[0].resource = Resource::Port {
        level: LevelId(level),
        dir: Dir::Down,
    };
    load.walk = Some(Walk {
        steps: slices,
        own_cycles: cycles,
        out: (0..slices).collect(),
        out_slices: slices,
        deferred: true,
        inputs: Vec::new(),
    });
    load
}

/// `producer`'s stream, written into region `region`, read a slice a step in `order`
/// and held in `buffers` slices.
fn stream_in(producer: &Task, region: u32, order: &[u32], buffers: u32) -> StreamIn {
    let slices = producer.walk.as_ref().map_or(1, |w| w.out_slices);
    let (need, sends) = crate::lowering::walk::sends(order, buffers);
    StreamIn {
        region: RegionId(region),
        buffers,
        need: need.into(),
        sends: sends.clone().into(),
        slices,
        producer_cycles: producer.cycles,
        producer_holds: producer.holds.clone(),
        resent: crate::timeline::resends_of(sends.iter().map(|s| s.0), slices),
    }
}

/// The walk of a kernel of `own` cycles over `steps` steps reading `inputs`.
fn walk_of(steps: u32, own: u64, inputs: Vec<StreamIn>) -> Walk {
    Walk {
        steps,
        own_cycles: own,
        out: Vec::new().into(),
        out_slices: 0,
        deferred: false,
        inputs,
    }
}

/// A Load of `n` slices (`cycles` in all, its port busy `busy`) into region 0 whose
/// consumer, a vector kernel of `work` cycles, walks the slices one per step, holding
/// `buffers` of them.
fn stream(n: u32, cycles: u64, busy: u64, work: u64, buffers: u32) -> [Task; 2] {
    let load = deferred_load(L.0, n, (cycles, busy), 0);
    let order: Vec<u32> = (0..n).collect();
    let mut k = kernel(vector(work), &[0], 1, 20);
    k.walk = Some(walk_of(n, work, vec![stream_in(&load, 0, &order, buffers)]));
    [load, k]
}

/// A program placed again right after itself is not placed: its total is the last one's,
/// and the work and tasks counted are those of placing it again from its last snapshot.
/// Programs of streams, some sharing a prefix, some the one before again, in both
/// schedules: every total, the work and the tasks placed are those of placing every
/// program (and each total `schedule`'s), and so are the ends of their prefixes.
#[test]
fn a_program_placed_again_counts_as_placed_again() {
    let a = stream(8, 800, 640, 400, 1);
    let b = stream(64, 6400, 5120, 1600, 2);
    let mut ab: Vec<Task> = a.to_vec();
    ab.extend(b.iter().map(|t| shifted(t, 10)));
    let mut abk = ab.clone();
    abk.push(kernel(matrix(300), &[11], 12, 40));
    let programs = [&a[..], &a, &ab, &ab, &abk, &abk, &abk, &ab, &b, &b, &a];
    for schedule in [Schedule::Overlapped, Schedule::Sequential] {
        let (mut fast, mut every) = (Resumable::default(), Resumable::default());
        let mut hits = 0;
        for (k, p) in programs.iter().enumerate() {
            let placed = fast.placed;
            let marks = [1, p.len() / 2, p.len()];
            let t = fast.place(p, (schedule, 1000), true, &marks);
            assert_eq!(t, every.place(p, (schedule, 1000), false, &marks), "{k}");
            let whole = super::schedule(p, schedule, 1000);
            assert_eq!(t, (whole.total(), whole.ends_by(&marks)), "{k}");
            assert_eq!(t.1[2], t.0, "{k}: every task's end is the total");
            assert!(t.1[0] <= t.1[1] && t.1[1] <= t.1[2], "{k}: {:?}", t.1);
            assert_eq!(
                (fast.booked, fast.placed),
                (every.booked, every.placed),
                "{k}"
            );
            if k > 0 && programs[k - 1] == *p {
                // Its last task at least, after the last snapshot.
                assert!(fast.placed > placed, "{k}: placed again, not counted");
                hits += 1;
            }
        }
        assert_eq!(hits, 5);
    }
}

/// `t` with every region it names `by` further.
fn shifted(t: &Task, by: u32) -> Task {
    let mut t = t.clone();
    let f = |r: &mut RegionId| r.0 += by;
    t.reads.iter_mut().chain(t.writes.iter_mut()).for_each(f);
    (t.frees_before.iter_mut().chain(t.frees_after.iter_mut())).for_each(|(r, _)| f(r));
    if let Some(w) = t.walk.as_mut() {
        w.inputs.iter_mut().for_each(|i| f(&mut i.region));
    }
    t
}

#[test]
fn a_stream_with_one_buffer_alternates_with_its_consumer() {
    // 8 slices of t = 100 (port busy 80 a slice), steps of c = 50.
    let t = schedule(&stream(8, 800, 640, 400, 1), Schedule::Overlapped, 1000);
    assert_eq!(t.total(), 8 * (100 + 50));
    // The load's last slice arrives when the consumer's seventh step has ended.
    assert_eq!(t.placed[0].end, 8 * 100 + 7 * 50);
    // Sequential: op after op, the load then the kernel.
    let s = schedule(&stream(8, 800, 640, 400, 1), Schedule::Sequential, 1000);
    assert_eq!(s.total(), 800 + 400);
}

#[test]
fn a_stream_with_two_buffers_loads_during_the_consumers_steps() {
    // t = 100 > c = 50: t + (n − 1)·t + c.
    let t = schedule(&stream(8, 800, 640, 400, 2), Schedule::Overlapped, 1000);
    assert_eq!(t.total(), 100 + 7 * 100 + 50);
    // t = 100 < c = 150: t + (n − 1)·c + c.
    let t = schedule(&stream(8, 800, 640, 1200, 2), Schedule::Overlapped, 1000);
    assert_eq!(t.total(), 100 + 7 * 150 + 150);
    // The load waits for buffers: its slice k + 2 after the consumer's step k.
    assert_eq!(t.placed[0].end, 100 + 6 * 150 + 100);
    assert!(
        t.total() <= schedule(&stream(8, 800, 640, 1200, 2), Schedule::Sequential, 1000).total()
    );
}

#[test]
fn re_sent_slices_cost_the_producers_slice_time_in_both_schedules() {
    // The consumer reads slices 0..3 twice with two buffers: 4 re-sends of 100.
    let [load, mut k] = stream(4, 400, 320, 400, 2);
    let need: Vec<u32> = (0..4).chain(0..4).collect();
    let (per_step, sends) = crate::lowering::walk::sends(&need, 2);
    if let Some(w) = k.walk.as_mut() {
        w.steps = 8;
        w.inputs[0].resent = crate::timeline::resends_of(sends.iter().map(|s| s.0), 4);
        w.inputs[0].need = per_step.into();
        w.inputs[0].sends = sends.into();
        assert_eq!(w.inputs[0].resends(), 4);
        assert_eq!(w.inputs[0].resend_cycles(), 400);
        k.cycles = 400 + w.inputs[0].resend_cycles();
    }
    let tasks = [load, k];
    let seq = schedule(&tasks, Schedule::Sequential, 1000);
    assert_eq!(seq.total(), 400 + 400 + 400);
    // Overlapped: 8 sends of 100 one after another, each step of 50 after its slice.
    let ovl = schedule(&tasks, Schedule::Overlapped, 1000);
    assert_eq!(ovl.total(), 8 * 100 + 50);
    let port = ovl
        .resources
        .iter()
        .find(|u| matches!(u.resource, Resource::Port { .. }))
        .unwrap();
    assert_eq!(port.busy_cycles, 320 + 320);
}

#[test]
fn a_booking_takes_the_first_gap_that_fits_it() {
    let r = port(0).resource;
    let mut b = BusyTable::logging();
    b.hold(r, 0, 0, 10);
    b.hold(r, 1, 30, 10);
    b.hold(r, 2, 45, 5);
    // Gaps: [10, 30), [40, 45), [50, ...).
    assert_eq!(b.earliest(r, 0, 20), (10, Some(0)));
    assert_eq!(
        b.earliest(r, 0, 21),
        (50, Some(2)),
        "no earlier gap fits 21"
    );
    assert_eq!(b.earliest(r, 12, 5), (12, None), "inside a gap: no wait");
    assert_eq!(b.earliest(r, 32, 5), (40, Some(1)));
    assert_eq!(b.earliest(r, 32, 6), (50, Some(2)));
    assert_eq!(b.earliest(r, 60, 100), (60, None));
    // Back-filled: the gap is taken, touching intervals merge, nothing overlaps.
    b.hold(r, 3, 10, 20);
    assert_eq!(b.earliest(r, 0, 1), (40, Some(1)));
    assert_eq!(b.free_at(r), (50, Some(2)));
    assert_eq!(overlap(b.bookings()), None);
    // A compute unit is back-filled alike: a later kernel's step fills the pause of a
    // walk waiting for its next slice, if it fits.
    let v = Resource::VectorUnit;
    b.hold(v, 4, 0, 10);
    b.hold(v, 5, 30, 10);
    assert_eq!(b.earliest(v, 0, 5), (10, Some(4)));
    assert_eq!(b.earliest(v, 0, 21), (40, Some(5)));
}

#[test]
fn a_resource_forgets_its_oldest_gaps() {
    let r = port(0).resource;
    let mut b = BusyTable::default();
    // Bursts of 1 cycle every 2: a gap after each.
    for k in 0..200u64 {
        b.hold(r, k as usize, 2 * k, 1);
    }
    // The recent gaps are back-filled; the oldest are counted busy.
    assert_eq!(b.earliest(r, 397, 1), (397, None));
    let (t, _) = b.earliest(r, 0, 1);
    assert!(
        t > 0 && t < 399,
        "an old gap is given up, a recent one kept: {t}"
    );
    // Whatever it forgot, what it books never overlaps.
    let mut log = BusyTable::logging();
    let mut x = 7u64;
    for task in 0..500usize {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (at, len) = ((x >> 20) % 2000, 1 + (x >> 40) % 9);
        let (s, _) = log.earliest(r, at, len);
        assert!(s >= at);
        log.hold(r, task, s, len);
    }
    assert_eq!(overlap(log.bookings()), None);
}

/// A stream's consumer leaves its producer's port idle between slices; a later
/// transfer on that port uses those cycles instead of waiting for the stream's end.
#[test]
fn a_later_transfer_back_fills_a_streams_port() {
    // A Load of 4 slices (port 40 of its 40 cycles) read by a kernel of 80 cycles with
    // one buffer: the port is busy 10 of every 30 cycles.
    let [l, k] = stream(4, 40, 40, 80, 1);
    let other = load(10, 10, 9, 5);
    let mut busy = BusyTable::logging();
    let t = schedule_on(&[l, k, other], Schedule::Overlapped, 1000, &mut busy);
    let s = spans(&t);
    // The independent Load starts in a gap of the port, before the stream ends.
    assert!(s[2].0 < s[0].1, "{s:?}");
    assert_eq!(overlap(busy.bookings()), None);
    // Without the gaps it would wait for the stream's last slice.
    assert!(s[2].1 < s[1].1, "{s:?}");
}

proptest::proptest! {
    /// A train of holds booked in closed form leaves the busy table as booking its holds
    /// one by one does, whatever the table held before (every interval, the first one's
    /// end after the oldest gaps are given up, and the task of each): one hold a period
    /// or several, touching each other or not, across periods or not.
    #[test]
    fn a_train_books_as_its_holds_one_by_one(
        before in proptest::collection::vec((0u64..40, 1u64..30), 0..90),
        gap in 0u64..3,
        later in proptest::option::of(0u64..4),
        pattern in proptest::collection::vec((0u64..4, 0u64..12), 1..5),
        slack in 0u64..4,
        count in 0u64..400,
    ) {
        let r = Resource::Port { level: L, dir: Dir::Down };
        let mut table = BusyTable::default();
        let mut t = 0;
        for (k, &(skip, len)) in before.iter().enumerate() {
            t += skip;
            table.hold(r, k, t, len);
            t += len;
        }
        // Holds in order, each `skip` after the one before; the period ends `slack`
        // after the last (0: the next period's first hold touches it).
        let mut holds = Vec::new();
        let mut at = 0;
        for &(skip, cycles) in &pattern {
            at += skip;
            holds.push((at, cycles));
            at += cycles;
        }
        let period = (at + slack).max(1);
        let train = Train { start: t + gap, period, count, pattern: &holds };
        proptest::prop_assert!(train.is_valid());
        // Mostly after every interval; sometimes before one booked after the train's end.
        if let Some(d) = later {
            table.hold(r, 500, train.at(count) + at + d, 3);
        }
        let mut one_by_one = table.clone();
        for (start, cycles) in train.holds() {
            one_by_one.hold(r, 999, start, cycles);
        }
        table.hold_train(r, 999, train);
        proptest::prop_assert_eq!(&table, &one_by_one);
        proptest::prop_assert_eq!(table.earliest(r, 0, 1), one_by_one.earliest(r, 0, 1));
    }
}

/// A busy table that never reports a resource free for good, so that the timeline
/// books every send and step on its own (the reference the trains must match).
struct OneByOne(BusyTable);

impl Busy for OneByOne {
    fn earliest(&mut self, r: Resource, at: u64, cycles: u64) -> (u64, Option<usize>) {
        self.0.earliest(r, at, cycles)
    }
    fn hold(&mut self, r: Resource, task: usize, start: u64, cycles: u64) {
        self.0.hold(r, task, start, cycles);
    }
    fn last_end(&mut self, _: Resource) -> u64 {
        u64::MAX
    }
}

/// `tasks` placed (overlapped) with trains where a pace is steady, and with every send
/// and step booked on its own: each timeline and its busy table.
fn both_ways(tasks: &[Task]) -> [(Timeline, BusyTable); 2] {
    let mut trains = BusyTable::default();
    let mut one = OneByOne(BusyTable::default());
    let mut a = Timeline::new(Schedule::Overlapped, 1 << 20);
    let mut b = Timeline::new(Schedule::Overlapped, 1 << 20);
    for t in tasks {
        a.push_on(t, &mut trains);
        b.push_on(t, &mut one);
    }
    a.settle(&mut trains);
    b.settle(&mut one);
    [(a, trains), (b, one.0)]
}

/// Per stream region, when each of its slices is ready (after [`Timeline::settle`],
/// every stream's sends are placed).
fn ready_times(t: &Timeline) -> Vec<(RegionId, Vec<u64>)> {
    let mut v: Vec<(RegionId, Vec<u64>)> = (t.produced.iter())
        .filter_map(|(r, p)| match p {
            streams::Produced::Fixed(x) => Some((*r, x.to_vec())),
            streams::Produced::Deferred { .. } => None,
        })
        .collect();
    v.sort();
    v
}

proptest::proptest! {
    // A steady state that starts late in a walk is a rare draw: many cases.
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]
    /// Streams whose sends and walks reach a steady pace (booked in trains) are placed
    /// as when every send and step is booked on its own: the same placements and busy
    /// state. Each program is a transfer on the port, then streams of even shares read
    /// slice by slice by a kernel on the vector unit (every slice, or the first half:
    /// the rest follow; in order or not, some twice) or not at all (sent when the
    /// program ends).
    #[test]
    fn steady_sends_place_as_sends_one_by_one((first, streams) in stream_programs()) {
        let tasks = stream_program(first, &streams);
        let [(a, trains), (b, one)] = both_ways(&tasks);
        proptest::prop_assert_eq!(&a.placed, &b.placed);
        proptest::prop_assert_eq!(&trains, &one);
        proptest::prop_assert_eq!(ready_times(&a), ready_times(&b));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
    /// A consumed stream whose every slice was sent once, none twice, has its slices'
    /// times written straight from its sends; worked out send by send (the way of any
    /// other stream), the placements, busy state and times are the same.
    #[test]
    fn streams_sent_once_finish_as_send_by_send((first, streams) in stream_programs()) {
        let tasks = stream_program(first, &streams);
        let [(a, trains), _] = both_ways(&tasks);
        consumed::SEND_BY_SEND.set(true);
        let [(b, one), _] = both_ways(&tasks);
        consumed::SEND_BY_SEND.set(false);
        proptest::prop_assert_eq!(&a.placed, &b.placed);
        proptest::prop_assert_eq!(&trains, &one);
        proptest::prop_assert_eq!(ready_times(&a), ready_times(&b));
    }
}

/// A stream read whole, each slice once in order, takes the direct way
/// ([`streams_sent_once_finish_as_send_by_send`] compares it with the other).
#[test]
fn a_stream_read_once_in_order_finishes_from_its_sends() {
    let before = consumed::SENT_ONCE.get();
    both_ways(&stream_program(10, &[(64, 2, 1, 1, 2, 0)]));
    assert!(consumed::SENT_ONCE.get() > before);
}

/// A stream of [`stream_program`]: its slices, cycles a slice and of those on the port,
/// the kernel's work a slice, its buffers, and how it is read.
type Stream = (u32, u64, u64, u64, u32, u32);

/// What [`stream_program`] builds a program of: its first transfer's cycles, and one to
/// three streams.
fn stream_programs() -> impl proptest::strategy::Strategy<Value = (u64, Vec<Stream>)> {
    (
        0u64..500,
        proptest::collection::vec(
            (1u32..300, 1u64..8, 0u64..8, 0u64..10, 1u32..4, 0u32..6),
            1..4,
        ),
    )
}

/// A transfer on the port, then per entry of `streams` (`n` slices, cycles `per` a
/// slice of which `busy` on the port, the kernel's `work` a slice, `buffers`, and how
/// it `reads`) a stream of even shares read slice by slice by a kernel on the vector
/// unit: every slice, or the first half (the rest follow); in order, backwards, or
/// seven apart (twice a slice where 7 divides `n`); or not at all (sent when the
/// program ends).
fn stream_program(first: u64, streams: &[Stream]) -> Vec<Task> {
    let mut tasks = vec![load(first.max(1), first, 90, 1)];
    for (i, &(n, per, busy, work, buffers, reads)) in streams.iter().enumerate() {
        let base = 2 * i as u32;
        // Even shares but for a kernel of 7 steps or more per step: those do not.
        let work = if work > 7 {
            work * u64::from(n) + 1
        } else {
            work * u64::from(n)
        };
        let [mut load, mut k] = stream(
            n,
            per * u64::from(n),
            busy.min(per) * u64::from(n),
            work,
            buffers,
        );
        load.writes = vec![RegionId(base)];
        k.reads = vec![RegionId(base)];
        k.writes = vec![RegionId(base + 1)];
        if let Some(w) = k.walk.as_mut() {
            w.inputs[0].region = RegionId(base);
            // Read every slice, the first half, or none (the stream is then flushed);
            // in order, backwards, or seven apart (twice a slice where 7 divides n).
            let upto = match reads % 3 {
                0 => n,
                1 => n / 2,
                _ => 0,
            };
            let order: Vec<u32> = match reads / 3 {
                0 => (0..upto).collect(),
                _ if n % 2 == 0 => (0..upto).rev().collect(),
                _ => (0..upto).map(|x| x * 7 % n).collect(),
            };
            if upto == 0 {
                k.walk = None;
                k.reads.clear();
            } else {
                let (need, sends) = crate::lowering::walk::sends(&order, buffers);
                w.steps = upto;
                w.inputs[0].need = need.into();
                w.inputs[0].sends = sends.into();
            }
        }
        tasks.push(load);
        tasks.push(k);
    }
    tasks
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
    /// Walks whose steps settle into a steady pace (placed as macro steps in closed
    /// form) are placed as when every send and step is booked on its own: the same
    /// placements and busy state. Each program is a transfer on a port, maybe a walk on
    /// the matrix unit of a stream on another port, then a kernel walking `n` steps, its cycles shared evenly or not, on the vector unit (and the
    /// matrix unit), reading one to three streams: a new slice each step, each slice
    /// for `r` steps, or a few slices over and over; from Loads whose cycles share
    /// evenly or not, on ports of their own or shared. Its output is a stream or not:
    /// the times its slices are ready, and those of every stream, are the same too.
    #[test]
    fn walks_at_a_steady_pace_place_as_step_by_step(
        first in 0u64..400,
        (earlier, e_per, e_work) in (0u32..400, 1u64..30, 0u64..20),
        eighths in 5u32..90,
        (work, q, a, matrix_part) in (0u64..6, 0u32..4, 0u64..8, 0u64..4),
        per_out in 0u32..4,
        streams in proptest::collection::vec(
            (0u32..3, 1u32..9, (1u64..40, 0u32..3, 0u64..4, 0u64..4), 1u32..4, 0u32..2),
            1..4,
        ),
    ) {
        let n = 8 * eighths;
        let mut tasks = vec![load(first.max(1), first, 90, 1)];
        // Before the walk, another whose steps and sends (on the port of the first
        // stream's Load) fall in its way: the later walk fills their gaps.
        if earlier > 0 {
            let cycles = e_per * u64::from(earlier);
            let load = deferred_load(2, earlier, (cycles, cycles / 2), 80);
            let mut k = kernel(matrix(e_work * u64::from(earlier)), &[80], 81, 1);
            let order: Vec<u32> = (0..earlier).collect();
            k.walk = Some(walk_of(earlier, k.cycles, vec![stream_in(&load, 80, &order, 2)]));
            tasks.push(load);
            tasks.push(k);
        }
        // Shares that repeat every 2^q steps.
        let own = work * u64::from(n) + u64::from(n >> q) * (a % (1 << q));
        let mut k = kernel(vector(own), &[], 99, 20);
        if matrix_part > 0 {
            k.holds.push(matrix(own / (matrix_part + 1)));
        }
        let mut inputs = Vec::new();
        for (i, &(how, r, (per, q, a, busy), buffers, shared)) in streams.iter().enumerate() {
            // The slices each step reads: a new one, each `r` steps, or a few round and round.
            let order: Vec<u32> = match how {
                0 => (0..n).collect(),
                1 => (0..n).map(|t| t / r).collect(),
                _ => (0..n).map(|t| (t / r) % (r + 1)).collect(),
            };
            let slices = order.iter().max().map_or(1, |m| m + 1);
            let cycles = per * u64::from(slices) + u64::from(slices >> q) * (a % (1 << q));
            let busy = (busy + 1) * cycles / 4;
            let level = if shared == 1 { 1 } else { 2 + i as u16 };
            let load = deferred_load(level, slices, (cycles, busy.min(cycles)), i as u32);
            k.reads.push(RegionId(i as u32));
            inputs.push(stream_in(&load, i as u32, &order, buffers));
            tasks.push(load);
        }
        let mut walk = walk_of(n, own, inputs);
        // Its output a stream of a slice every `per_out` steps (or none), read whole.
        if let Some(per) = std::num::NonZeroU32::new(per_out) {
            walk.out = (0..n).map(|t| t / per).collect();
            walk.out_slices = (n - 1) / per + 1;
        }
        k.walk = Some(walk);
        tasks.push(k);
        let [(a, trains), (b, one)] = both_ways(&tasks);
        proptest::prop_assert_eq!(&a.placed, &b.placed);
        proptest::prop_assert_eq!(&trains, &one);
        proptest::prop_assert_eq!(ready_times(&a), ready_times(&b));
    }
}

/// Every resource has a code of its own, and those of low levels a place of their own in
/// a table's index: a busy table looks resources up by them. A table books resources
/// with and without a place alike.
#[test]
fn resources_have_distinct_codes() {
    use crate::ids::{Dir, LevelId};
    let mut all = vec![Resource::LocalMemory, Resource::VectorUnit];
    for l in [
        0u16,
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        255,
        256,
        u16::MAX - 1,
        u16::MAX,
    ] {
        let level = LevelId(l);
        all.push(Resource::Dram { level });
        all.push(Resource::MatrixUnit { level });
        for dir in [Dir::Up, Dir::Down] {
            all.push(Resource::Port { level, dir });
        }
    }
    let codes: std::collections::BTreeSet<u32> = all.iter().map(|&r| busy::code(r)).collect();
    assert_eq!(codes.len(), all.len());
    let places: Vec<usize> = all.iter().filter_map(|&r| busy::dense(r)).collect();
    let distinct: std::collections::BTreeSet<usize> = places.iter().copied().collect();
    assert_eq!(distinct.len(), places.len());
    assert!(
        places.len() >= 2 + 8 * 4,
        "every resource of levels 0 to 7 has a place"
    );
    // Each resource booked once, in turn: each is then busy where it was booked only.
    let mut table = BusyTable::default();
    for (k, &r) in all.iter().enumerate() {
        let at = 10 * k as u64;
        assert_eq!(table.earliest(r, at, 5), (at, None));
        table.hold(r, k, at, 5);
    }
    for (k, &r) in all.iter().enumerate() {
        let at = 10 * k as u64;
        assert_eq!(table.earliest(r, at, 5), (at + 5, Some(k)), "{r:?}");
        assert_eq!(table.free_at(r), (at + 5, Some(k)));
    }
}
