//! Running a resolved scenario: the engine op by op, a host reference beside it for
//! `verify`, and the report.

use crate::engine::{self, Engine, ErrorKind, Mode, SimError};
use crate::program::{
    EntityRef as _, Init, LayoutRef, OpId, OpKind, Program, ProgramOp, Tensor, TensorId,
};
use crate::scenario::Resolved;
use crate::verify::Reference;
use mnsim_arch::{DType, TensorLayout, XlaLayout};
use mnsim_kernels::elem;
use mnsim_reports::{LevelTotal, Report, ResourceTotal, SCHEMA, StreamReport};

/// A deterministic generator (splitmix64) for `Random` initial values.
pub struct SplitMix(pub u64);
impl SplitMix {
    /// What the state advances by per value: the state after `k` values is
    /// `seed + k · GAMMA` (wrapping).
    pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(Self::GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Initial contents, row-major over `dims`. Random floats are uniform in [-1, 1);
/// random integers uniform in [-8, 8). Filled in parallel by blocks of elements, each
/// block's generator jumped to its first element (splitmix64 advances by a constant), so
/// the bytes do not depend on the thread count; the buffer comes from
/// [`engine::zeroed`] (no pass of zeros before the values).
pub fn init_data(init: &Init, dtype: DType, dims: &[u64]) -> Vec<u8> {
    use rayon::prelude::*;
    const BLOCK: usize = 1 << 16;
    // Called after `engine::check_dram`: the tensor fits DRAM, so its bytes fit a u64.
    let n: u64 = dims.iter().fold(1u64, |a, &b| a.saturating_mul(b));
    let eb = dtype.bytes() as usize;
    let mut out = engine::zeroed(n as usize * eb);
    if matches!(init, Init::Zeros) {
        return out;
    }
    // Constants evaluated at import are runs of values: small, filled in order.
    if let Init::Runs(r) = init {
        let mut runs = r
            .iter()
            .flat_map(|&(n, v)| std::iter::repeat_n(v, n as usize));
        for chunk in out.chunks_exact_mut(eb) {
            elem::write(dtype, runs.next().unwrap_or(0.0), chunk);
        }
        return out;
    }
    let seed = match init {
        Init::Random { seed } => *seed,
        _ => 0,
    };
    out.par_chunks_mut(BLOCK * eb)
        .enumerate()
        .for_each(|(b, block)| {
            let first = b * BLOCK;
            let mut rng = SplitMix(seed.wrapping_add((first as u64).wrapping_mul(SplitMix::GAMMA)));
            for (k, chunk) in block.chunks_exact_mut(eb).enumerate() {
                let v = match init {
                    Init::Random { .. } if dtype.is_float() => rng.unit(),
                    Init::Random { .. } => ((rng.next_u64() % 16) as i64 - 8) as f64,
                    Init::Zeros | Init::Runs(_) => 0.0,
                    Init::Ones => 1.0,
                    Init::Iota => (first + k) as f64,
                    Init::Fill { value } => *value,
                };
                elem::write(dtype, v, chunk);
            }
        });
    out
}

fn bound(op: &ProgramOp) -> Result<&TensorLayout, SimError> {
    match &op.layout {
        Some(LayoutRef::Bound(l)) => Ok(l),
        Some(LayoutRef::Any(v)) => Err(ErrorKind::AnyLayout {
            op: op.source.index(),
            name: op.name,
            var: v.clone(),
        }
        .into()),
        None => Err(ErrorKind::NoLayout {
            op: op.source.index(),
            name: op.name,
        }
        .into()),
    }
}

/// A tree Reduce the run inserted after a kernel whose output holds partial sums
/// (`auto_reduce`, or a `ReduceAxes` whose axis spans levels): a lowered op of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsertedReduce {
    /// The program op it follows (index in the program).
    pub after: usize,
    /// Its index among the run's ops (the report's `ops`).
    pub op: usize,
    pub tensor: String,
    /// The level the partial sums combine over.
    pub level: String,
}

/// What a run produced.
pub struct RunOutput {
    pub report: Report,
    pub engine: Engine,
    /// The Reduces the run inserted, in order.
    pub inserted: Vec<InsertedReduce>,
}

/// A run that stopped: the message, and the op (index in the program) or the tensor
/// declaration it stopped at, so that a caller holding the file can point there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct RunError {
    pub error: SimError,
    pub op: Option<usize>,
    pub tensor: Option<String>,
}

impl RunError {
    fn at_op(op: usize, error: SimError) -> RunError {
        RunError {
            error,
            op: Some(op),
            tensor: None,
        }
    }
}

/// Runs a resolved scenario (one plan) to its report.
pub fn run(res: &Resolved) -> Result<RunOutput, RunError> {
    run_with_progress(res, &mut |_, _| {})
}

/// Like [`run`], calling `progress(done, total)` after every op.
pub fn run_with_progress(
    res: &Resolved,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<RunOutput, RunError> {
    let eng = Engine::with_schedule(res.machine.clone(), res.mode, res.schedule);
    run_on(res, eng, progress)
}

/// Runs a resolved scenario on `eng`, an engine for its machine, mode and schedule that
/// has run nothing; e.g. one that measures as the planner does
/// ([`Engine::measuring`]): the same cycles and tasks, transfers charged in closed
/// form, and a report without per-port statistics or ready cycles.
pub fn run_on(
    res: &Resolved,
    mut eng: Engine,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<RunOutput, RunError> {
    // The machine's peak in the dtypes the program computes in.
    let mut peak: Option<f64> = None;
    let functional = res.mode == Mode::Functional;
    // The host reference is kept only when it will be compared.
    let mut reference = Reference::new(res.verify && functional);
    declare_tensors(res, &mut eng, &mut reference)?;
    let program = &res.program;
    let mut warnings = res.warnings.clone();
    let mut inserted: Vec<InsertedReduce> = Vec::new();
    let program_bound = crate::bound::program(&res.machine, program);
    // Per op of the run (inserted Reduces included), its bound.
    let mut bounds: Vec<crate::bound::OpBound> = Vec::new();
    let n = program.ops.len();
    for (id, po) in program.ops.iter() {
        let done = id.index();
        progress(done, n);
        program_bound.extend(&mut bounds, &eng.rec.ops, &res.machine, program, done);
        let source = po.source.index();
        let at = |e: SimError| {
            let prefix = format!("op {source} ({}): ", program.describe(id));
            RunError::at_op(source, e.context(&prefix))
        };
        let layout = op_layout(program, id, at)?;
        let first_op = eng.rec.ops.len();
        let applied = crate::apply::apply(
            &mut eng,
            (program, id),
            layout.as_ref(),
            (res.auto_reduce, None),
            Some(&mut reference),
        )
        .map_err(at)?;
        if let OpKind::Kernel { out, .. } = &po.kind
            && let Some(t) = eng.state.tensors.get(*out)
        {
            let p = mnsim_arch::peak_flops_per_cycle(&res.machine, t.dtype);
            peak = Some(peak.map_or(p, |q: f64| q.max(p)));
        }
        if let (Some((first, levels)), OpKind::Kernel { out, .. }) = (applied.reduces, &po.kind) {
            for (k, level) in levels.into_iter().enumerate() {
                inserted.push(InsertedReduce {
                    after: source,
                    op: first + k,
                    tensor: program.name(*out).to_string(),
                    level: (res.machine.levels.get(level.index()))
                        .map_or_else(String::new, |l| l.name.clone()),
                });
            }
        }
        // Reports number ops by their position in the program as written, and say
        // where a whole model's op sits.
        for o in &mut eng.rec.ops[first_op..] {
            o.index = source;
            o.layer = po.place.layer;
            o.part = po.place.part.map(|p| p.name().to_string());
        }
    }
    for ins in &inserted {
        if let Some(o) = eng.rec.ops.get_mut(ins.op) {
            o.inserted_after = Some(ins.after);
        }
    }
    program_bound.extend(&mut bounds, &eng.rec.ops, &res.machine, program, n);
    progress(n, n);
    if res.verify && !functional {
        warnings.push(
            "verify needs functional mode: run with --mode functional to compare values".into(),
        );
    }
    let (verified, mismatches) = reference.outcome();
    if !mismatches.is_empty() {
        warnings.push(format!(
            "verification failed for: {}",
            mismatches.join(", ")
        ));
    }
    eng.settle();
    let mut report = build_report(res, &eng, verified, warnings, peak);
    program_bound.annotate(&mut report, &bounds);
    crate::waits::annotate(&res.machine, &eng.rec.timeline.placed, &mut report);
    let whole: Vec<bool> = (report.ops.iter())
        .map(|o| reads_whole(&res.program, o))
        .collect();
    crate::gap::annotate(&res.machine, &program_bound, &bounds, &whole, &mut report);
    crate::energy::attach(&mut eng, &mut report);
    report.places = mnsim_reports::places::places(&report);
    report.boards = boards_of(&res.machine, &report);
    Ok(RunOutput {
        report,
        engine: eng,
        inserted,
    })
}

/// Declares every tensor of `res` on `eng` (its data made in functional mode, and given
/// to the host reference when it will be compared); in timing mode one with an `init`
/// counts as in DRAM.
fn declare_tensors(
    res: &Resolved,
    eng: &mut Engine,
    reference: &mut Reference,
) -> Result<(), RunError> {
    let functional = res.mode == Mode::Functional;
    for (id, t) in res.program.tensors.iter() {
        let name = &t.name;
        let on_tensor = |error: SimError| RunError {
            error,
            op: None,
            tensor: Some(name.clone()),
        };
        // Before making the data: a tensor DRAM cannot hold is an error, not an allocation.
        engine::check_dram(&res.machine, name, t.dtype, &t.runtime_dims)
            .map_err(|e| on_tensor(e.into()))?;
        let data = match (&t.init, functional) {
            (Some(init), true) => Some(init_data(init, t.dtype, &t.runtime_dims)),
            _ => None,
        };
        if let Some(d) = &data {
            reference.declare(id, t.dtype, &t.runtime_dims, d);
        }
        let (on_engine, layout) = declare(eng, t, data).map_err(on_tensor)?;
        if on_engine != id {
            return Err(on_tensor(
                ErrorKind::NotEmpty {
                    tensor: name.clone(),
                    got: on_engine,
                    want: id,
                }
                .into(),
            ));
        }
        if t.init.is_some() && !functional {
            eng.state.set_in_dram(id, layout);
        }
        if t.init.is_some() {
            eng.state.set_from_host(id);
        }
    }
    Ok(())
}

/// The run by board and by link on a machine of many boards (the level its deepest
/// network joins); `None` for one board.
fn boards_of(
    m: &mnsim_arch::Machine,
    r: &mnsim_reports::Report,
) -> Option<mnsim_reports::boards::BoardsReport> {
    let nets: Vec<usize> = (0..m.levels.len())
        .filter(|&k| m.network_at(k).is_some())
        .collect();
    let deepest = *nets.last()?;
    let level = m.levels.get(deepest + 1)?;
    let names: Vec<String> = nets.iter().map(|&k| m.levels[k].name.clone()).collect();
    mnsim_reports::boards::boards(r, &level.name, m.nodes_at(deepest + 1), &names)
}

/// Declares tensor `t` of a program on `eng`, with `data` in functional mode; returns
/// its id on the engine and its DRAM layout (the declared one, or row-major).
pub fn declare(
    eng: &mut Engine,
    t: &Tensor,
    data: Option<Vec<u8>>,
) -> Result<(TensorId, XlaLayout), SimError> {
    let layout = t
        .shape
        .layout
        .clone()
        .unwrap_or_else(|| XlaLayout::default_for(t.runtime_dims.len()));
    let id = eng.state.declare(
        &t.name,
        t.dtype,
        t.dims_at_bound.clone(),
        t.runtime_dims.clone(),
        layout.clone(),
        data,
    )?;
    Ok((id, layout))
}

/// The op's own layout (see `apply::apply`): a plan variable left `Any` or a missing
/// layout is an error here, naming the op; `at` places an error of the op's own.
fn op_layout(
    p: &Program,
    id: OpId,
    at: impl Fn(SimError) -> RunError,
) -> Result<Option<TensorLayout>, RunError> {
    let po = &p.ops[id];
    let source = po.source.index();
    Ok(match (&po.kind, &po.layout) {
        (
            OpKind::Load { .. }
            | OpKind::Gather { .. }
            | OpKind::Broadcast { .. }
            | OpKind::Relayout { .. },
            _,
        ) => Some(bound(po).map_err(|e| RunError::at_op(source, e))?.clone()),
        (OpKind::Reduce { .. }, Some(LayoutRef::Any(_))) if po.layout_text.is_some() => {
            return Err(at(ErrorKind::ReduceKeepsLayout.into()));
        }
        (OpKind::Reduce { .. }, Some(LayoutRef::Bound(l))) if po.layout_text.is_some() => {
            Some(l.clone())
        }
        (OpKind::Kernel { .. }, Some(LayoutRef::Bound(l))) => Some(l.clone()),
        (OpKind::Kernel { .. }, Some(LayoutRef::Any(_))) => {
            Some(bound(po).map_err(|e| RunError::at_op(source, e))?.clone())
        }
        (OpKind::Reduce { .. } | OpKind::Kernel { .. } | OpKind::Store { .. }, _)
        | (OpKind::Free { .. }, _) => None,
    })
}

/// Whether report op `o` is a kernel that reads and writes whole tensors: no per-axis
/// index map, so it cannot walk `Time` steps (docs/model.md, streams).
fn reads_whole(p: &Program, o: &mnsim_reports::OpReport) -> bool {
    if o.inserted_after.is_some() {
        return false;
    }
    let Some(OpKind::Kernel {
        kernel,
        inputs,
        out,
    }) = (p.ops.values())
        .find(|r| r.source.index() == o.index)
        .map(|r| &r.kind)
    else {
        return false;
    };
    let dims = |t: TensorId| p.tensors[t].dims_at_bound.as_slice();
    let shapes: Vec<&[u64]> = inputs.iter().map(|&t| dims(t)).collect();
    mnsim_kernels::shape::index_map(kernel, &shapes, dims(*out)).is_err()
}

fn build_report(
    res: &Resolved,
    eng: &Engine,
    verified: Option<bool>,
    warnings: Vec<String>,
    peak: Option<f64>,
) -> Report {
    let m = &res.machine;
    let mut levels: Vec<LevelTotal> = Vec::new();
    for crate::engine::Record {
        stages, bottleneck, ..
    } in &eng.rec.records
    {
        for s in stages {
            let name = s.level_name(m);
            let i = match levels.iter().position(|l| l.level == name) {
                Some(i) => i,
                None => {
                    levels.push(LevelTotal {
                        level: name,
                        busy_cycles: 0,
                        bytes: 0,
                        bottleneck_ops: 0,
                    });
                    levels.len() - 1
                }
            };
            levels[i].busy_cycles += s.cycles;
            levels[i].bytes += s.bytes;
        }
        if let Some(b) = bottleneck.and_then(|b| stages.get(b)) {
            let name = b.level_name(m);
            if let Some(l) = levels.iter_mut().find(|l| l.level == name) {
                l.bottleneck_ops += 1;
            }
        }
    }
    let total = eng.state.sw.clock();
    let exposed = eng.rec.timeline.exposed();
    let mut ops = eng.rec.ops.clone();
    for (o, e) in ops.iter_mut().zip(&exposed) {
        o.exposed_cycles = *e;
    }
    let resources = (eng.rec.timeline.resources.iter())
        .map(|u| {
            let (name, kind) = crate::timeline::describe(u.resource, m);
            ResourceTotal {
                name,
                kind: kind.to_string(),
                busy_cycles: u.busy_cycles,
                utilisation: if total > 0 {
                    u.busy_cycles as f64 / total as f64
                } else {
                    0.0
                },
            }
        })
        .collect();
    let wb = m.word_bytes;
    let streams = (eng.state.streams.values())
        .map(|s| StreamReport {
            tensor: eng.state.name(s.tensor).to_string(),
            producer: s.producer,
            consumer: s.consumer,
            slices: s.slices,
            slice_bytes: s.slice_words.saturating_mul(wb),
            buffers: s.buffers,
            requested: s.requested,
            double_buffered: s.buffers >= 2,
            fallback: s.fallback.clone(),
            sends: s.sends,
            resent_slices: s.resends,
            resend_cycles: s.resend_cycles,
        })
        .collect();
    Report {
        schema: SCHEMA.to_string(),
        scenario: res.scenario.clone(),
        plan: res.plan.clone(),
        machine: m.name.clone(),
        mode: res.mode.name().to_string(),
        schedule: res.schedule.name().to_string(),
        total_cycles: total,
        clock_ghz: m.clock_ghz,
        ops,
        program_ops: res.program.ops.len() as u64,
        free_ops: res.program.frees() as u64,
        levels,
        resources,
        streams,
        peak_flops_per_cycle: peak,
        verified,
        lm_peak_bytes: eng.state.lm_peak_bytes,
        lm_bytes: m.leaf_memory_bytes(),
        overrides: res.overrides.clone(),
        bind: res.bind.clone(),
        warnings,
        bound_cycles: 0,
        bound_resource: String::new(),
        bottleneck: None,
        above_bound: None,
        energy: None,
        places: Vec::new(),
        boards: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values one generator gives element after element, the definition the
    /// parallel fill must reproduce.
    fn sequential(init: &Init, dtype: DType, n: usize) -> Vec<u8> {
        let eb = dtype.bytes() as usize;
        let mut out = vec![0u8; n * eb];
        let mut rng = SplitMix(match init {
            Init::Random { seed } => *seed,
            _ => 0,
        });
        for (i, chunk) in out.chunks_exact_mut(eb).enumerate() {
            let v = match init {
                Init::Random { .. } if dtype.is_float() => rng.unit(),
                Init::Random { .. } => ((rng.next_u64() % 16) as i64 - 8) as f64,
                Init::Zeros | Init::Runs(_) => 0.0,
                Init::Ones => 1.0,
                Init::Iota => i as f64,
                Init::Fill { value } => *value,
            };
            elem::write(dtype, v, chunk);
        }
        out
    }

    #[test]
    fn init_data_in_parallel_blocks_equals_one_generator_element_after_element() {
        // Three blocks and a part: every block's generator jumps to its first element.
        let n = 3 * (1 << 16) + 5;
        for init in [
            Init::Random { seed: 7 },
            Init::Iota,
            Init::Zeros,
            Init::Fill { value: 2.5 },
        ] {
            for dtype in [DType::F32, DType::S32, DType::BF16] {
                let want = sequential(&init, dtype, n);
                let one = rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .unwrap();
                assert_eq!(one.install(|| init_data(&init, dtype, &[n as u64])), want);
                // Two axes: the same row-major order.
                let rows = (n / 3) as u64;
                let eb = dtype.bytes() as usize;
                assert_eq!(
                    init_data(&init, dtype, &[3, rows]),
                    want[..3 * rows as usize * eb]
                );
            }
        }
    }
}
