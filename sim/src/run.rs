//! Running a resolved scenario: the engine op by op, a host reference beside it for
//! `verify`, and the report.

use crate::engine::{self, Engine, Mode, SimError};
use crate::scenario::{Init, LayoutRef, Op, ReduceOp, Resolved, ResolvedOp};
use mnsim_arch::{DType, TensorLayout, XlaLayout};
use mnsim_kernels::elem::{self, Combine};
use mnsim_reports::{LevelTotal, Report, SCHEMA};
use std::collections::BTreeMap;

/// A deterministic generator (splitmix64) for `Random` initial values.
pub struct SplitMix(pub u64);
impl SplitMix {
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Initial contents, row-major over `dims`. Random floats are uniform in [-1, 1);
/// random integers uniform in [-8, 8).
pub fn init_data(init: &Init, dtype: DType, dims: &[u64]) -> Vec<u8> {
    let n: u64 = dims.iter().product();
    let eb = dtype.bytes() as usize;
    let mut out = vec![0u8; n as usize * eb];
    let mut rng = match init {
        Init::Random { seed } => SplitMix(*seed),
        _ => SplitMix(0),
    };
    for (i, chunk) in out.chunks_exact_mut(eb).enumerate() {
        let v = match init {
            Init::Random { .. } if dtype.is_float() => rng.unit(),
            Init::Random { .. } => ((rng.next() % 16) as i64 - 8) as f64,
            Init::Zeros => 0.0,
            Init::Ones => 1.0,
            Init::Iota => i as f64,
            Init::Fill { value } => *value,
        };
        elem::write(dtype, v, chunk);
    }
    out
}

fn combine_of(op: ReduceOp) -> Combine {
    match op {
        ReduceOp::Add => Combine::Add,
        ReduceOp::Max => Combine::Max,
        ReduceOp::Min => Combine::Min,
    }
}

fn bound(op: &ResolvedOp) -> Result<&TensorLayout, SimError> {
    match &op.layout {
        Some(LayoutRef::Bound(l)) => Ok(l),
        Some(LayoutRef::Any(v)) => Err(SimError(format!(
            "op {} ({}): plan variable `{v}` is `Any`; choose a layout for it (or let `mnsim plan` choose)",
            op.index,
            op.op.name()
        ))),
        None => Err(SimError(format!(
            "op {} ({}) has no layout",
            op.index,
            op.op.name()
        ))),
    }
}

/// What a run produced.
pub struct RunOutput {
    pub report: Report,
    pub engine: Engine,
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
    let mut eng = Engine::new(res.machine.clone(), res.mode);
    let functional = res.mode == Mode::Functional;
    let mut reference: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut xla: BTreeMap<String, XlaLayout> = BTreeMap::new();
    for (name, t) in &res.tensors {
        let layout = t
            .shape
            .layout
            .clone()
            .unwrap_or_else(|| XlaLayout::default_for(t.runtime_dims.len()));
        xla.insert(name.clone(), layout.clone());
        let on_tensor = |error: SimError| RunError {
            error,
            op: None,
            tensor: Some(name.clone()),
        };
        // Before making the data: a tensor DRAM cannot hold is an error, not an allocation.
        engine::check_dram(&res.machine, name, t.dtype, &t.runtime_dims).map_err(on_tensor)?;
        let data = match (&t.init, functional) {
            (Some(init), true) => Some(init_data(init, t.dtype, &t.runtime_dims)),
            _ => None,
        };
        if let Some(d) = &data {
            reference.insert(name.clone(), d.clone());
        }
        eng.declare(
            name,
            t.dtype,
            t.dims_at_bound.clone(),
            t.runtime_dims.clone(),
            layout.clone(),
            data,
        )
        .map_err(on_tensor)?;
        if t.init.is_some() && !functional {
            eng.set_in_dram(name, layout);
        }
    }
    let mut verified: Option<bool> = None;
    let mut warnings = res.warnings.clone();
    let mut mismatches: Vec<String> = Vec::new();
    for rop in &res.ops {
        let at = |e: SimError| {
            let msg = format!("op {} ({}): {}", rop.index, rop.op.describe(), e.0);
            RunError::at_op(rop.index, SimError(msg))
        };
        match &rop.op {
            Op::Load { tensor, .. } => {
                eng.load(
                    tensor,
                    bound(rop)
                        .map_err(|e| RunError::at_op(rop.index, e))?
                        .clone(),
                )
                .map_err(at)?;
            }
            Op::Broadcast { tensor, out, .. } => {
                let l = bound(rop)
                    .map_err(|e| RunError::at_op(rop.index, e))?
                    .clone();
                let resident = eng.tensors.get(tensor).is_some_and(|t| t.lm.is_some());
                if resident {
                    eng.relayout("Broadcast", tensor, l, out.as_deref())
                        .map_err(at)?;
                } else {
                    eng.load(tensor, l).map_err(at)?;
                    if let Some(o) = eng.ops.last_mut() {
                        o.op = "Broadcast".into();
                    }
                }
                if let (Some(o), Some(v)) = (out, reference.get(tensor).cloned()) {
                    reference.insert(o.clone(), v);
                }
            }
            Op::Relayout { tensor, out, .. } => {
                eng.relayout(
                    "Relayout",
                    tensor,
                    bound(rop)
                        .map_err(|e| RunError::at_op(rop.index, e))?
                        .clone(),
                    out.as_deref(),
                )
                .map_err(at)?;
                if let (Some(o), Some(v)) = (out, reference.get(tensor).cloned()) {
                    reference.insert(o.clone(), v);
                }
            }
            Op::Reduce {
                tensor,
                level,
                op,
                layout,
                out,
            } => {
                if layout.is_some()
                    && rop.layout.as_ref().is_some_and(|l| match l {
                        LayoutRef::Bound(b) => eng
                            .tensors
                            .get(tensor)
                            .and_then(|t| t.lm.as_ref())
                            .is_some_and(|r| r.layout != *b),
                        LayoutRef::Any(_) => true,
                    })
                {
                    return Err(at(SimError(
                        "a Reduce keeps the tensor's layout; follow it with a Relayout to change it".into(),
                    )));
                }
                // Reference: combining copies of a replicated tensor folds it with itself
                // once per position; a partial tensor's reference already holds the whole.
                let r = eng.tensors.get(tensor).and_then(|t| t.lm.as_ref()).cloned();
                let dtype = eng.tensors.get(tensor).map(|t| t.dtype);
                eng.reduce(tensor, level, combine_of(*op), out.as_deref())
                    .map_err(at)?;
                if let (Some(r), Some(dtype), Some(v)) = (r, dtype, reference.get(tensor).cloned())
                {
                    let li = r
                        .layout
                        .levels()
                        .iter()
                        .position(|l| &l.name == level)
                        .unwrap_or(0);
                    let folded = if r.partial.contains(&li) {
                        v
                    } else {
                        let fan = r.layout.levels()[li].fanout;
                        let eb = dtype.bytes() as usize;
                        let mut acc = v.clone();
                        for _ in 1..fan {
                            for (a, x) in acc.chunks_exact_mut(eb).zip(v.chunks_exact(eb)) {
                                elem::combine(dtype, combine_of(*op), a, x);
                            }
                        }
                        acc
                    };
                    reference.insert(out.clone().unwrap_or_else(|| tensor.clone()), folded);
                }
            }
            Op::Store { tensor } => {
                let layout = xla
                    .get(tensor)
                    .cloned()
                    .unwrap_or_else(|| XlaLayout::default_for(0));
                eng.store(tensor, layout).map_err(at)?;
                if res.verify && functional {
                    let got = eng.dram_row_major(tensor);
                    let want = reference.get(tensor);
                    let ok = match (got, want) {
                        (Some(g), Some(w)) => g == *w,
                        _ => false,
                    };
                    if !ok {
                        mismatches.push(tensor.clone());
                    }
                    verified = Some(verified.unwrap_or(true) && ok);
                }
            }
            Op::Free { tensor } => eng.free(tensor).map_err(at)?,
            other => {
                let msg = format!(
                    "op {} ({}): the {} kernel is not available in this build",
                    rop.index,
                    other.describe(),
                    other.name()
                );
                return Err(RunError::at_op(rop.index, SimError(msg)));
            }
        }
    }
    if res.verify && !functional {
        warnings.push(
            "verify needs functional mode: run with --mode functional to compare values".into(),
        );
    }
    if !mismatches.is_empty() {
        warnings.push(format!(
            "verification failed for: {}",
            mismatches.join(", ")
        ));
    }
    let report = build_report(res, &eng, verified, warnings);
    Ok(RunOutput {
        report,
        engine: eng,
    })
}

fn build_report(
    res: &Resolved,
    eng: &Engine,
    verified: Option<bool>,
    warnings: Vec<String>,
) -> Report {
    let mut levels: Vec<LevelTotal> = Vec::new();
    for op in &eng.ops {
        for s in &op.stages {
            let i = match levels.iter().position(|l| l.level == s.level) {
                Some(i) => i,
                None => {
                    levels.push(LevelTotal {
                        level: s.level.clone(),
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
        let first = op.bottleneck.split(' ').next().unwrap_or("");
        if let Some(l) = levels.iter_mut().find(|l| l.level == first) {
            l.bottleneck_ops += 1;
        }
    }
    Report {
        schema: SCHEMA.to_string(),
        scenario: res.scenario.clone(),
        plan: res.plan.clone(),
        machine: res.machine.name.clone(),
        mode: res.mode.name().to_string(),
        total_cycles: eng.sw.clock(),
        clock_ghz: res.machine.clock_ghz,
        ops: eng.ops.clone(),
        levels,
        verified,
        lm_peak_bytes: eng.lm_peak_bytes,
        lm_bytes: res.machine.leaf_memory_bytes(),
        overrides: res.overrides.clone(),
        bind: res.bind.clone(),
        warnings,
    }
}
