//! Recording an op: its task lowered and placed on the timeline, and its report (the
//! parts only a report reads left out when the engine measures for the planner).

use super::{Engine, PlanMemos, Record};
use crate::ids::{LevelId, RegionId};
use crate::lowering::{self, walk::WalkPlan};
use crate::net::{self, Dir};
use crate::program::TensorId;
use crate::timeline::{Task, Timeline};
use crate::world::{PortStats, Ready, WorldBusy};
use hdrhistogram::Histogram;
use mnsim_arch::TensorLayout;
use mnsim_arch::machine::Algorithm;
use mnsim_reports::{OpReport, Percentiles};

/// The parts of an op's report only a report reads (`Engine::shown`).
#[derive(Default)]
struct Shown {
    layout: Option<String>,
    bottleneck: String,
    stages: Vec<mnsim_reports::StageReport>,
    ready: Option<Percentiles>,
    utilisation: f64,
    padding: u64,
    padded: u64,
}

/// Percentiles of per-PE cycles, given as (cycle, PEs at it), through an hdrhistogram at
/// 3 significant digits (within 0.1%); min and max are exact, and no percentile exceeds
/// the max.
fn percentiles(values: impl Iterator<Item = (u64, u64)>) -> Option<Percentiles> {
    let values: Vec<(u64, u64)> = values.filter(|v| v.1 > 0).collect();
    let lo = values.iter().map(|v| v.0).min()?;
    let hi = values.iter().map(|v| v.0).max()?;
    // Bounds from the data: a histogram over the whole u64 range would allocate tens of MB.
    let mut h = Histogram::<u64>::new_with_bounds(1, hi.max(2), 3).ok()?;
    for &(v, n) in &values {
        h.saturating_record_n(v.max(1), n);
    }
    let q = |x: f64| h.value_at_quantile(x).min(hi);
    Some(Percentiles {
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        max: hi,
        min: lo,
        count: values.iter().map(|v| v.1).sum(),
    })
}

/// What the engine keeps of the ops it ran.
pub struct Recorder {
    /// Every op's report.
    pub ops: Vec<OpReport>,
    /// Every op's record: its stages, typed (the report holds them converted), its
    /// slowest stage and the tensor it leaves.
    pub records: Vec<Record>,
    /// Every op lowered, in program order (the timeline's input).
    pub tasks: Vec<Task>,
    /// Where every op sits in time.
    pub timeline: Timeline,
    /// What it records, and for whom.
    pub kind: Recording,
    /// Walk steps of the kernels run (a planner counts its work in them).
    pub(super) walked: u64,
    /// The work of placing ops on the timelines cleared so far ([`Engine::placed`]).
    pub(super) placed_work: u64,
    /// While measuring: transfers charged in closed form, and those left to per-PE facts.
    pub(super) closed: [u64; 2],
}

/// The two recorders.
pub enum Recording {
    /// A run's: every op's report whole.
    Report,
    /// A planner's: ops' cycles, tasks, typed stages and FLOP, the same as a report's,
    /// and none of what only a report reads (per-port statistics, ready-cycle
    /// percentiles, layout and stage texts); with the charges the planner's
    /// measurements repeat, memoised.
    Measure(Box<PlanMemos>),
}

impl Recorder {
    pub(super) fn new(timeline: Timeline) -> Recorder {
        Recorder {
            ops: Vec::new(),
            records: Vec::new(),
            tasks: Vec::new(),
            timeline,
            kind: Recording::Report,
            walked: 0,
            placed_work: 0,
            closed: [0; 2],
        }
    }

    /// Forgets every op recorded (the work of placing them is kept in
    /// [`Engine::placed`]).
    pub(super) fn clear(&mut self) {
        self.ops.clear();
        self.records.clear();
        self.tasks.clear();
        self.placed_work = self.placed_work.saturating_add(self.timeline.work);
        self.timeline.reset();
    }

    /// Whether it only measures, for a planner.
    pub fn measuring(&self) -> bool {
        matches!(self.kind, Recording::Measure(_))
    }

    /// The planner's memos, when it measures for one.
    pub(super) fn memos(&mut self) -> Option<&mut PlanMemos> {
        match &mut self.kind {
            Recording::Measure(m) => Some(m),
            Recording::Report => None,
        }
    }
}

impl Engine {
    /// While measuring, how many transfers were charged in closed form, and how many
    /// were left to per-PE facts (the closed form does not apply to them).
    pub fn closed_form_charges(&self) -> (u64, u64) {
        (self.rec.closed[0], self.rec.closed[1])
    }

    /// The work of placing the ops so far on the timeline ([`Timeline::work`]), over
    /// every program since the engine was made.
    pub fn placed(&self) -> u64 {
        self.rec.placed_work.saturating_add(self.rec.timeline.work)
    }

    /// Walk steps of the kernels run so far, whatever became of them (an op that then
    /// fails, or a Relayout a planner only tried), a walk taken from the memo included:
    /// a planner's measure of the per-step work of lowering and placing them.
    pub fn walked(&self) -> u64 {
        self.rec.walked
    }

    /// Ends the program on the timeline: streams nothing read slice by slice are sent,
    /// and every op's start, end and cycles (= end − start) are the timeline's.
    pub fn settle(&mut self) {
        self.rec
            .timeline
            .settle(&mut WorldBusy::new(&mut self.state.sw));
        for (o, p) in self.rec.ops.iter_mut().zip(&self.rec.timeline.placed) {
            o.start = p.start;
            o.end = p.end;
            o.cycles = p.end - p.start;
        }
        let total = self.rec.timeline.total();
        self.state.sw.set_clock(total);
    }

    /// Records an op: lowers it to a task, places it on the timeline (resource state on
    /// the world's entities), updates port statistics and ready cycles.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish(
        &mut self,
        op: &str,
        tensor: TensorId,
        layout: Option<&TensorLayout>,
        runtime: &[u64],
        c: net::Cost,
        reads: &[RegionId],
        writes: &[RegionId],
        walk: Option<(WalkPlan, bool)>,
    ) -> OpReport {
        let frees = std::mem::take(&mut self.state.frees);
        let (walk, resent) = self.lower_walk(walk, reads, writes, c.cycles);
        let task = lowering::task(
            &c,
            reads,
            writes,
            frees.lm_words.max(self.state.alloc.charged()),
            frees.before,
            frees.after,
            walk,
        );
        let placed = (self.rec.timeline).push_on(&task, &mut WorldBusy::new(&mut self.state.sw));
        let task_cycles = task.cycles;
        self.rec.tasks.push(task);
        // The report shows the re-sends as stages of the op that needs them.
        let mut c = c;
        let again = c.again.take().map(|a| a.stages);
        let own = c.stages.len();
        c.stages.extend(resent);
        let (start, end) = (placed.start, placed.end);
        let clock = self.state.sw.clock().max(end);
        self.state.sw.set_clock(clock);
        // What only a report reads; left empty when measuring for the planner.
        let shown = if self.rec.measuring() {
            Shown::default()
        } else {
            self.shown(layout, runtime, &c, start)
        };
        let algorithm = self.algorithm_text(&c.collectives);
        let r = OpReport {
            index: self.rec.ops.len(),
            inserted_after: None,
            op: op.to_string(),
            tensor: self.state.name(tensor).to_string(),
            layout: shown.layout,
            start,
            end,
            cycles: task_cycles,
            bottleneck: shown.bottleneck,
            algorithm,
            stages: shown.stages,
            exposed_cycles: task_cycles,
            work_cycles: task_cycles,
            ready_cycles: shown.ready,
            flops: None,
            utilisation: shown.utilisation,
            padding_elems: shown.padding,
            padded_elems: shown.padded,
            bound_cycles: 0,
            bound_resource: String::new(),
            waited_on: None,
            energy_j: 0.0,
            view: false,
            layer: None,
            part: None,
        };
        self.rec.ops.push(r.clone());
        self.rec.records.push(Record {
            stages: c.stages,
            own,
            bottleneck: c.bottleneck,
            tensor,
            again,
        });
        r
    }

    /// How a report names the algorithms of an op's collectives (`OpReport::algorithm`):
    /// one name when every network ran the same, else each with its network's level.
    fn algorithm_text(&self, collectives: &[(LevelId, Algorithm)]) -> Option<String> {
        let (_, first) = collectives.first()?;
        if collectives.iter().all(|(_, a)| a == first) {
            return Some(first.name().to_string());
        }
        let levels = &self.state.machine.levels;
        let each: Vec<String> = (collectives.iter())
            .map(|(l, a)| {
                let level = levels.get(l.index()).map_or("?", |x| x.name.as_str());
                format!("{} ({level})", a.name())
            })
            .collect();
        Some(each.join(", "))
    }

    /// What only a report reads of an op charged `c` that started at `start`: port
    /// statistics and the PEs' ready cycles recorded on the world, and the report's
    /// texts and figures.
    fn shown(
        &mut self,
        layout: Option<&TensorLayout>,
        runtime: &[u64],
        c: &net::Cost,
        start: u64,
    ) -> Shown {
        // Port statistics on the chain nodes that took part, ready cycles on the PEs.
        for port in &c.ports {
            let k = self.state.topo.chain[port.link];
            for &(n, t, b) in &port.nodes {
                let e = self.state.sw.node(k, n);
                if let Some(mut ps) = self.state.sw.world.get_mut::<PortStats>(e) {
                    ps.busy_cycles += t;
                    match port.dir {
                        Dir::Down => ps.bytes_down += b,
                        Dir::Up => ps.bytes_up += b,
                    }
                }
            }
        }
        if let Some(&leaf) = self.state.sw.levels.last()
            && let Some(mut rd) = self.state.sw.world.get_mut::<Ready>(leaf)
        {
            rd.record(&c.ready, start);
        }
        let ready = percentiles(c.ready.iter().map(|&(a, b, r)| (start + r, b - a)));
        let (util, pad, padded) = match layout {
            Some(l) => {
                let total: u64 = l
                    .levels()
                    .iter()
                    .fold(1u64, |a, x| a.saturating_mul(x.fanout));
                let real: u64 = runtime.iter().fold(1u64, |a, &b| a.saturating_mul(b));
                let u = l.pes_used() as f64 / total.max(1) as f64 * real as f64
                    / l.padded_elems().max(1) as f64;
                (
                    u,
                    l.padded_elems() - real.min(l.padded_elems()),
                    l.padded_elems(),
                )
            }
            None => (0.0, 0, 0),
        };
        Shown {
            layout: layout.map(|l| l.canonical()),
            bottleneck: c
                .bottleneck
                .map(|b| c.stages[b].bottleneck_name(&self.state.machine))
                .unwrap_or_default(),
            stages: c
                .stages
                .iter()
                .map(|s| s.report(&self.state.machine))
                .collect(),
            ready,
            utilisation: util,
            padding: pad,
            padded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_do_not_depend_on_the_histogram_bound() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..25u64 {
            let n = 1 + round % 97;
            let scale = [10u64, 1_000, 100_000, 10_000_000, 1 << 40][round as usize % 5];
            let values: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % scale
                })
                .collect();
            let mut wide = Histogram::<u64>::new_with_bounds(1, u64::MAX / 4, 3).unwrap();
            for &v in &values {
                wide.saturating_record(v.max(1));
            }
            let hi = *values.iter().max().unwrap();
            let p = percentiles(values.iter().map(|&v| (v, 1))).unwrap();
            let q = |x: f64| wide.value_at_quantile(x).min(hi);
            assert_eq!(
                (p.p50, p.p90, p.p99),
                (q(0.5), q(0.9), q(0.99)),
                "{values:?}"
            );
            assert_eq!(
                (p.min, p.max, p.count),
                (*values.iter().min().unwrap(), hi, n)
            );
        }
        assert_eq!(percentiles(std::iter::empty()), None);
    }
}
