//! The energy of a run, computed on the world (docs/model.md, energy).
//!
//! After the timeline has placed every op, each op becomes an entity with its
//! [`OpTraffic`] (the bytes each memory, link and DRAM moved for it and the FLOP its
//! unit computed, from its charged stages: [`op_traffic`]). A bevy [`Schedule`] then runs
//! four systems over the world:
//!
//! 1. [`accumulate`]: the ops' traffic summed onto the level entities that own each
//!    resource ([`LevelTraffic`]: a memory's level, a link's level, the DRAM's level, the
//!    compute unit's level);
//! 2. [`level_energy`]: each level's joules ([`LevelEnergy`]): its resources' amounts ×
//!    their `energy.…` coefficients, and its nodes' static power × the run's time;
//! 3. [`op_energy`]: each op's joules ([`OpEnergy`]): its own traffic × the coefficients,
//!    and its share of the static energy, in proportion to its exposed cycles;
//! 4. [`summarise`]: the run's totals, power over time and peak power ([`EnergyTotals`]).
//!
//! The report reads [`EnergyTotals`] and the ops' [`OpEnergy`] from the world.

use crate::engine::{Engine, Record};
use crate::ids::Dir;
use crate::net::{Place, Stage};
use crate::world::{Level, SimWorld};
use bevy_ecs::prelude::*;
use mnsim_arch::{DType, Machine};
use mnsim_reports::energy::{
    EnergyLevel, EnergyReport, EnergyResource, PowerWindow, Uncosted, seconds,
};
use std::collections::BTreeMap;

/// A resource that costs energy per byte or per FLOP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Account {
    DramRead,
    DramWrite,
    /// Reads of the memory of a level (index in `Machine::levels`).
    MemRead(u16),
    /// Writes to the memory of a level.
    MemWrite(u16),
    /// Bytes crossing the link of a level, one direction.
    Link(u16, Dir),
    /// FLOP of the matrix units of a level, in a dtype.
    Matrix(u16, DType),
    /// FLOP of the PEs' vector units, in a dtype.
    Vector(DType),
}

/// Bytes or FLOP per account.
pub type Traffic = BTreeMap<Account, u64>;

fn level_name(m: &Machine, l: u16) -> &str {
    m.levels.get(l as usize).map_or("?", |x| x.name.as_str())
}

fn memory_name(m: &Machine, l: u16) -> &str {
    m.levels
        .get(l as usize)
        .and_then(|x| x.memory.as_ref())
        .map_or("?", |x| x.name.as_str())
}

impl Account {
    /// The level whose entity carries this resource.
    pub fn level(self, m: &Machine) -> usize {
        match self {
            Account::DramRead | Account::DramWrite => m.dram_level_index().unwrap_or(0),
            Account::MemRead(l) | Account::MemWrite(l) | Account::Link(l, _) => l as usize,
            Account::Matrix(l, _) => l as usize,
            Account::Vector(_) => m.levels.len().saturating_sub(1),
        }
    }

    /// Picojoules per byte or FLOP: the `energy.…` knob of this resource.
    pub fn pj(self, m: &Machine) -> f64 {
        let e = &m.energy;
        match self {
            Account::DramRead => e.dram.read_pj_per_byte,
            Account::DramWrite => e.dram.write_pj_per_byte,
            Account::MemRead(l) => e.memory(memory_name(m, l)).read_pj_per_byte,
            Account::MemWrite(l) => e.memory(memory_name(m, l)).write_pj_per_byte,
            Account::Link(l, Dir::Down) => e.link(level_name(m, l)).down_pj_per_byte,
            Account::Link(l, Dir::Up) => e.link(level_name(m, l)).up_pj_per_byte,
            Account::Matrix(_, d) => e.pj_per_flop(true, d),
            Account::Vector(d) => e.pj_per_flop(false, d),
        }
    }

    /// `DRAM read`, `L1BM write`, `L1B down`, `MAB matrix F16`, `PE vector F32`.
    pub fn name(self, m: &Machine) -> String {
        match self {
            Account::DramRead => "DRAM read".into(),
            Account::DramWrite => "DRAM write".into(),
            Account::MemRead(l) => format!("{} read", memory_name(m, l)),
            Account::MemWrite(l) => format!("{} write", memory_name(m, l)),
            Account::Link(l, d) => format!("{} {}", level_name(m, l), d.name()),
            Account::Matrix(l, d) => format!("{} matrix {d:?}", level_name(m, l)),
            Account::Vector(d) => format!(
                "{} vector {d:?}",
                level_name(m, m.levels.len().saturating_sub(1) as u16)
            ),
        }
    }

    /// `dram`, `memory`, `link`, `matrix`, `vector`.
    pub fn kind(self) -> &'static str {
        match self {
            Account::DramRead | Account::DramWrite => "dram",
            Account::MemRead(_) | Account::MemWrite(_) => "memory",
            Account::Link(..) => "link",
            Account::Matrix(..) => "matrix",
            Account::Vector(_) => "vector",
        }
    }

    /// Whether the amount counts FLOP (else bytes).
    pub fn is_flop(self) -> bool {
        matches!(self, Account::Matrix(..) | Account::Vector(_))
    }

    /// For FLOP in a dtype the machine gives no coefficient for while it gives its unit
    /// some (a preset's int8 or fp8 mode, which no public figure prices), the knob path
    /// that would price them; `None` otherwise.
    pub fn missing_coefficient(self, m: &Machine) -> Option<String> {
        let (unit, map, d) = match self {
            Account::Matrix(_, d) => ("matrix", &m.energy.matrix_pj_per_flop, d),
            Account::Vector(d) => ("vector", &m.energy.vector_pj_per_flop, d),
            Account::DramRead
            | Account::DramWrite
            | Account::MemRead(_)
            | Account::MemWrite(_)
            | Account::Link(..) => return None,
        };
        (!map.is_empty() && !map.contains_key(&d))
            .then(|| format!("energy.{unit}_pj_per_flop.{d:?}"))
    }
}

fn add(t: &mut Traffic, a: Account, n: u64) {
    if n > 0 {
        let v = t.entry(a).or_insert(0);
        *v = v.saturating_add(n);
    }
}

/// What one op moved and computed, from its charged stages (re-sent stream slices
/// included) and, for a kernel, its dtype and useful FLOP.
///
/// A link stage of level k moving down reads its `bytes` (distinct: a multicast is read
/// once) from level k's memory and writes its `child_bytes` into the memories below;
/// moving up, the children's memories are read and level k's memory written. Its
/// `child_bytes` cross the link. A link at the DRAM's level is fed by (or feeds) the
/// DRAM when the op has a DRAM stage, else by the level's own memory (PDM). A copy inside
/// LM reads and writes its bytes there.
///
/// The FLOP are the op's own: charged once, at its own compute stage's unit. A
/// re-sent slice of a kernel's stream (a compute stage among the re-sends, the
/// producer's cycles again) costs time, not FLOP: FLOP energy counts each kernel's
/// useful FLOP once, as the report's `flops` do.
pub fn op_traffic(m: &Machine, rec: &Record, compute: Option<(DType, u64)>) -> Traffic {
    let mut t = Traffic::new();
    let has_dram = rec
        .stages
        .iter()
        .any(|s| matches!(s.place, Place::Dram { .. }));
    for s in &rec.stages {
        stage_bytes(m, &mut t, s, has_dram);
    }
    let unit = rec.own().iter().find_map(|s| match s.place {
        Place::Compute { level, leaf } => Some((level, leaf)),
        Place::Link { .. } | Place::Dram { .. } | Place::LocalCopy { .. } => None,
    });
    if let (Some((level, leaf)), Some((d, flops))) = (unit, compute) {
        let a = if leaf {
            Account::Vector(d)
        } else {
            Account::Matrix(level.0, d)
        };
        add(&mut t, a, flops);
    }
    t
}

/// The bytes stage `s` reads, writes and moves (see [`op_traffic`]); `has_dram`: the op
/// has a DRAM stage.
fn stage_bytes(m: &Machine, t: &mut Traffic, s: &Stage, has_dram: bool) {
    match s.place {
        Place::Link { level, dir } => {
            let k = level.index();
            let parent_mem = m.levels.get(k).is_some_and(|l| l.memory.is_some())
                && !(has_dram && m.dram_level_index() == Some(k));
            // A network's children (boards) have no memory of their own.
            let child = (m.link_target(k))
                .filter(|&c| m.levels[c].memory.is_some())
                .map(|c| c as u16);
            add(t, Account::Link(level.0, dir), s.child_bytes);
            match dir {
                Dir::Down => {
                    if parent_mem {
                        add(t, Account::MemRead(level.0), s.bytes);
                    }
                    if let Some(c) = child {
                        add(t, Account::MemWrite(c), s.child_bytes);
                    }
                }
                Dir::Up => {
                    if let Some(c) = child {
                        add(t, Account::MemRead(c), s.child_bytes);
                    }
                    if parent_mem {
                        add(t, Account::MemWrite(level.0), s.bytes);
                    }
                }
            }
        }
        Place::Dram { dir: Dir::Down, .. } => add(t, Account::DramRead, s.bytes),
        Place::Dram { dir: Dir::Up, .. } => add(t, Account::DramWrite, s.bytes),
        Place::LocalCopy { level } => {
            add(t, Account::MemRead(level.0), s.bytes);
            add(t, Account::MemWrite(level.0), s.bytes);
        }
        // A kernel's FLOP are the op's (`op_traffic`), not its stages'.
        Place::Compute { .. } => {}
    }
}

/// Joules of `n` units at `pj` picojoules each.
fn joules(n: u64, pj: f64) -> f64 {
    n as f64 * pj * 1e-12
}

/// Dynamic joules of some traffic on machine `m`.
pub fn dynamic_j(m: &Machine, t: &Traffic) -> f64 {
    t.iter().map(|(&a, &n)| joules(n, a.pj(m))).sum()
}

/// An op of the run as an entity: what it moved and computed, and when.
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct OpTraffic {
    /// Index among the run's ops (the report's `ops`).
    pub index: usize,
    pub start: u64,
    pub end: u64,
    /// Its cycles on the critical path: its share of the static energy.
    pub exposed: u64,
    pub traffic: Traffic,
}

/// An op's joules: its own traffic and its share of the static energy.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
pub struct OpEnergy {
    pub dynamic_j: f64,
    pub static_j: f64,
}

/// The traffic of the resources a level owns, summed over the run.
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct LevelTraffic(pub Traffic);

/// A level's joules: per resource (account, amount, pJ per unit, joules), and static.
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct LevelEnergy {
    pub resources: Vec<(Account, u64, f64, f64)>,
    pub dynamic_j: f64,
    pub static_j: f64,
}

/// The machine (its coefficients) and the run's length, for the systems.
#[derive(Resource, Clone, Debug)]
pub struct EnergyModel {
    pub machine: Machine,
    pub total_cycles: u64,
}

impl EnergyModel {
    fn seconds(&self) -> f64 {
        seconds(self.total_cycles, self.machine.clock_ghz)
    }
}

/// The run's energy, as the report gives it.
#[derive(Resource, Clone, Debug, Default, PartialEq)]
pub struct EnergyTotals(pub EnergyReport);

/// Sums the ops' traffic onto the level entities that own each resource.
pub fn accumulate(
    model: Res<EnergyModel>,
    ops: Query<&OpTraffic>,
    mut levels: Query<(&Level, &mut LevelTraffic)>,
) {
    let mut per: BTreeMap<usize, Traffic> = BTreeMap::new();
    for op in &ops {
        for (&a, &n) in &op.traffic {
            add(per.entry(a.level(&model.machine)).or_default(), a, n);
        }
    }
    for (level, mut t) in &mut levels {
        t.0 = per.remove(&(level.level as usize)).unwrap_or_default();
    }
}

/// Each level's joules: its resources' amounts × coefficients, its static power × time.
pub fn level_energy(
    model: Res<EnergyModel>,
    mut levels: Query<(&Level, &LevelTraffic, &mut LevelEnergy)>,
) {
    let m = &model.machine;
    let secs = model.seconds();
    for (level, t, mut e) in &mut levels {
        e.resources =
            t.0.iter()
                .map(|(&a, &n)| {
                    let pj = a.pj(m);
                    (a, n, pj, joules(n, pj))
                })
                .collect();
        e.dynamic_j = e.resources.iter().map(|r| r.3).sum();
        let w = m
            .levels
            .get(level.level as usize)
            .and_then(|l| m.energy.static_w_per_node.get(&l.name))
            .copied()
            .unwrap_or(0.0);
        e.static_j = w * level.nodes as f64 * secs;
    }
}

/// Each op's joules: its traffic × coefficients, and the static energy shared by
/// exposed cycles (the ops' exposed cycles make up the run's length).
pub fn op_energy(model: Res<EnergyModel>, mut ops: Query<(&OpTraffic, &mut OpEnergy)>) {
    let m = &model.machine;
    let static_j = m.energy.static_watts(m) * model.seconds();
    let exposed: u64 = ops.iter().map(|(o, _)| o.exposed).sum();
    for (o, mut e) in &mut ops {
        e.dynamic_j = dynamic_j(m, &o.traffic);
        e.static_j = if exposed > 0 {
            static_j * o.exposed as f64 / exposed as f64
        } else {
            0.0
        };
    }
}

/// The run's totals, power over time and peak power.
pub fn summarise(
    model: Res<EnergyModel>,
    levels: Query<(&Level, &LevelEnergy)>,
    ops: Query<(&OpTraffic, &OpEnergy)>,
    mut out: ResMut<EnergyTotals>,
) {
    let m = &model.machine;
    let mut lv: Vec<(&Level, &LevelEnergy)> = levels.iter().collect();
    lv.sort_by_key(|(l, _)| l.level);
    let mut r = EnergyReport {
        static_w: m.energy.static_watts(m),
        ..EnergyReport::default()
    };
    let mut flops = 0u64;
    for (l, e) in &lv {
        for &(a, n, pj, j) in &e.resources {
            if a.is_flop() {
                flops = flops.saturating_add(n);
            }
            if let Some(knob) = a.missing_coefficient(m).filter(|_| n > 0) {
                r.uncosted.push(Uncosted {
                    resource: a.name(m),
                    knob,
                    flop: n,
                });
            }
            r.resources.push(EnergyResource {
                name: a.name(m),
                kind: a.kind().into(),
                level: level_name(m, l.level).into(),
                amount: n,
                unit: if a.is_flop() { "flop" } else { "bytes" }.into(),
                pj_per_unit: pj,
                joules: j,
            });
        }
        r.levels.push(EnergyLevel {
            level: level_name(m, l.level).into(),
            nodes: l.nodes,
            dynamic_j: e.dynamic_j,
            static_j: e.static_j,
        });
    }
    r.dynamic_j = r.resources.iter().map(|x| x.joules).sum();
    r.static_j = r.levels.iter().map(|x| x.static_j).sum();
    r.total_j = r.dynamic_j + r.static_j;
    let secs = model.seconds();
    r.average_w = if secs > 0.0 { r.total_j / secs } else { 0.0 };
    r.flop_per_j = (flops > 0 && r.total_j > 0.0).then(|| flops as f64 / r.total_j);
    let mut spans: Vec<(u64, u64, f64)> = ops
        .iter()
        .map(|(o, e)| (o.start, o.end, e.dynamic_j))
        .collect();
    spans.sort_by_key(|s| (s.0, s.1));
    r.peak_w = r.static_w + peak_dynamic_w(&spans, m.clock_ghz);
    r.power = windows(&spans, model.total_cycles, m.clock_ghz, r.static_w);
    out.0 = r;
}

/// The highest dynamic power: each op's joules spread evenly over [start, end), summed
/// over the ops running at once (ops of no span are left out).
fn peak_dynamic_w(spans: &[(u64, u64, f64)], clock_ghz: f64) -> f64 {
    let mut events: Vec<(u64, f64)> = Vec::new();
    for &(s, e, j) in spans {
        let secs = seconds(e.saturating_sub(s), clock_ghz);
        if e > s && secs > 0.0 && j > 0.0 {
            events.push((s, j / secs));
            events.push((e, -j / secs));
        }
    }
    // Ends before starts at one cycle: [start, end) spans do not meet.
    events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let (mut now, mut best) = (0.0f64, 0.0f64);
    for (_, w) in events {
        now += w;
        best = best.max(now);
    }
    best
}

/// The most windows `power` has.
pub const POWER_WINDOWS: u64 = 200;

/// Average power over the run in windows of ⌈total ÷ [`POWER_WINDOWS`]⌉ cycles from
/// cycle 0, the last one cut at the run's end (as long or shorter): every op's dynamic
/// joules spread evenly over its `[start, end)` (an op of no span: all in the window of
/// its start), plus the static power. The windows' watts × their lengths add up to the
/// run's joules.
fn windows(
    spans: &[(u64, u64, f64)],
    total: u64,
    clock_ghz: f64,
    static_w: f64,
) -> Vec<PowerWindow> {
    if total == 0 {
        return Vec::new();
    }
    let len = total.div_ceil(POWER_WINDOWS);
    let n = total.div_ceil(len);
    let start = |w: u64| w * len;
    let end = |w: u64| (w + 1).saturating_mul(len).min(total);
    let window_of = |c: u64| (c / len).min(n - 1);
    let mut joules = vec![0.0f64; n as usize];
    for &(s, e, j) in spans {
        if j <= 0.0 {
            continue;
        }
        if e <= s {
            joules[window_of(s) as usize] += j;
            continue;
        }
        for w in window_of(s)..=window_of(e - 1) {
            // The op's cycles in the window; the last window also takes any past the run.
            let b = if w + 1 == n { e } else { end(w).min(e) };
            let a = start(w).max(s);
            if b > a {
                joules[w as usize] += j * (b - a) as f64 / (e - s) as f64;
            }
        }
    }
    (0..n)
        .map(|w| {
            let (start, end) = (start(w), end(w));
            let secs = seconds(end - start, clock_ghz);
            let dynamic = if secs > 0.0 {
                joules[w as usize] / secs
            } else {
                0.0
            };
            PowerWindow {
                start,
                end,
                watts: static_w + dynamic,
            }
        })
        .collect()
}

/// The schedule of the energy systems, in order.
pub fn schedule() -> Schedule {
    let mut s = Schedule::default();
    s.add_systems((accumulate, level_energy, op_energy, summarise).chain());
    s
}

/// Computes the energy of ops on the world: spawns an entity per op (replacing those of
/// an earlier call), gives the level entities their traffic and energy components, runs
/// [`schedule`], and returns the totals and each op's joules (in `ops` order).
pub fn compute(
    sw: &mut SimWorld,
    machine: &Machine,
    ops: Vec<OpTraffic>,
    total_cycles: u64,
) -> (EnergyReport, Vec<f64>) {
    let w = &mut sw.world;
    let old: Vec<Entity> = w
        .query_filtered::<Entity, With<OpTraffic>>()
        .iter(w)
        .collect();
    for e in old {
        w.despawn(e);
    }
    for &e in &sw.levels {
        w.entity_mut(e)
            .insert((LevelTraffic::default(), LevelEnergy::default()));
    }
    let ids: Vec<Entity> = ops
        .into_iter()
        .map(|o| w.spawn((o, OpEnergy::default())).id())
        .collect();
    w.insert_resource(EnergyModel {
        machine: machine.clone(),
        total_cycles,
    });
    w.insert_resource(EnergyTotals::default());
    schedule().run(w);
    let per_op = ids
        .iter()
        .map(|&e| {
            w.get::<OpEnergy>(e)
                .map_or(0.0, |x| x.dynamic_j + x.static_j)
        })
        .collect();
    (w.resource::<EnergyTotals>().0.clone(), per_op)
}

/// Every op of a finished run with its traffic, placement and exposed cycles.
pub fn run_ops(eng: &Engine) -> Vec<OpTraffic> {
    let exposed = eng.rec.timeline.exposed();
    eng.rec
        .ops
        .iter()
        .zip(&eng.rec.records)
        .enumerate()
        .map(|(i, (o, rec))| OpTraffic {
            index: i,
            start: o.start,
            end: o.end,
            exposed: exposed.get(i).copied().unwrap_or(0),
            traffic: op_traffic(&eng.state.machine, rec, compute_of(eng, o, rec)),
        })
        .collect()
}

/// The dtype and useful FLOP of a kernel op (its output's dtype: the one its cost uses).
pub fn compute_of(
    eng: &Engine,
    o: &mnsim_reports::OpReport,
    rec: &crate::engine::Record,
) -> Option<(DType, u64)> {
    let flops = o.flops?;
    eng.state.tensors.get(rec.tensor).map(|t| (t.dtype, flops))
}

/// Dynamic joules of every op an engine has recorded (the planner's measurements).
pub fn engine_dynamic_j(eng: &Engine) -> f64 {
    ops_dynamic_j(eng, 0)
}

/// [`engine_dynamic_j`] of the engine's ops from the `first` on.
pub fn ops_dynamic_j(eng: &Engine, first: usize) -> f64 {
    (eng.rec.ops.iter().zip(&eng.rec.records))
        .skip(first)
        .map(|(o, rec)| {
            dynamic_j(
                &eng.state.machine,
                &op_traffic(&eng.state.machine, rec, compute_of(eng, o, rec)),
            )
        })
        .sum()
}

/// The energy of a finished run (after `settle`), written into its report: `energy` and
/// every op's `energy_j`.
pub fn attach(eng: &mut Engine, report: &mut mnsim_reports::Report) {
    let ops = run_ops(eng);
    let total = eng.state.sw.clock();
    let machine = eng.state.machine.clone();
    let (e, per_op) = compute(&mut eng.state.sw, &machine, ops, total);
    for (o, j) in report.ops.iter_mut().zip(per_op) {
        o.energy_j = j;
    }
    for u in &e.uncosted {
        report.warnings.push(format!(
            "energy: {} has no coefficient for {} ({} is not given): its {} are counted \
             at 0 J, so the run's joules leave them out; a machine file can give one",
            machine.name,
            u.resource,
            u.knob,
            mnsim_reports::energy::flop_amount(u.flop)
        ));
    }
    report.energy = Some(e);
}
