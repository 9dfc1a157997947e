//! The planner (`mnsim plan`): chooses layouts for the plan variables a plan leaves to
//! it (`Any`), by simulated cycles.
//!
//! Candidates for a tensor: every way of giving each addressable level either to one
//! logical axis (split over its whole fan-out, root-most level outermost) or to nobody
//! (replicated), the rest of each axis in memory, optionally packed into words (`W`) on
//! the last axis; only layouts that bind (fit LM, divide the axis) are kept. The search
//! is coordinate descent: one variable at a time, every candidate, the others fixed, in
//! rounds until nothing improves. A candidate that makes the program fail (an illegal
//! kernel, LM overflow) scores by how far the program got, so the search moves towards
//! plans that run. Every evaluation is a timing-mode run.

use crate::engine::Mode;
use crate::scenario::{self, LayoutRef, PlanValue, Scenario, Source};
use mnsim_arch::{DType, Machine, TensorLayout};
use std::collections::BTreeMap;

/// What the planner chose for one plan.
#[derive(Clone, Debug)]
pub struct Choice {
    pub plan: String,
    /// Plan variable → chosen layout, in program order.
    pub layouts: Vec<(String, String)>,
    /// Total cycles of the plan with these layouts.
    pub cycles: u64,
    /// Candidates per variable, and runs evaluated.
    pub candidates: Vec<(String, usize)>,
    pub evaluated: usize,
}

/// Candidate layouts of a tensor of `dims` (at its bound) and `dtype` on `m`.
pub fn candidates(m: &Machine, dims: &[u64], dtype: DType, implicit_pad: bool) -> Vec<String> {
    let levels = m.addressable_levels();
    let rank = dims.len();
    if rank == 0 {
        return Vec::new();
    }
    let slots = (m.word_bytes / dtype.bytes()).max(1);
    let mut out = Vec::new();
    let choices = (rank + 1).pow(levels.len() as u32);
    for code in 0..choices {
        let mut c = code;
        let mut groups: Vec<Vec<String>> = vec![Vec::new(); rank];
        let mut rest = dims.to_vec();
        let mut ok = true;
        for l in &levels {
            let pick = c % (rank + 1);
            c /= rank + 1;
            if pick == rank {
                continue; // replicated
            }
            if !rest[pick].is_multiple_of(l.fanout) {
                ok = false;
                break;
            }
            rest[pick] /= l.fanout;
            groups[pick].push(format!("{}_{}", l.fanout, l.name));
        }
        if !ok {
            continue;
        }
        for packed in [false, true] {
            let mut g = groups.clone();
            let last = rank - 1;
            if packed && (slots == 1 || !rest[last].is_multiple_of(slots)) {
                continue;
            }
            for (a, sub) in g.iter_mut().enumerate() {
                let mut r = rest[a];
                if packed && a == last {
                    r /= slots;
                }
                if r > 1 || sub.is_empty() {
                    sub.push(r.to_string());
                }
                if packed && a == last {
                    sub.push(format!("{slots}_W"));
                }
            }
            let body: Vec<String> = g.iter().map(|s| format!("({})", s.join(", "))).collect();
            let text = format!("({})", body.join(", "));
            let expr = match mnsim_arch::LayoutExpr::parse(&text) {
                Ok(e) => e,
                Err(_) => continue,
            };
            if TensorLayout::bind(&expr, m, Some(dims), dtype, implicit_pad).is_ok() {
                out.push(text);
            }
        }
    }
    out
}

/// Score of one evaluation: ops completed (more is better), then cycles (fewer).
fn evaluate(
    sc: &Scenario,
    src: &Source,
    plan: &str,
    sets: &[(String, f64)],
    binds: &BTreeMap<String, u64>,
) -> (usize, u64) {
    let Ok(mut res) = scenario::resolve(sc, src, Some(plan), sets, binds) else {
        return (0, u64::MAX);
    };
    res.mode = Mode::Timing;
    let n = res.ops.len();
    match crate::run::run(&res) {
        Ok(o) => (n + 1, o.report.total_cycles),
        Err(e) => (e.op.unwrap_or(0), u64::MAX),
    }
}

/// Plans `plan`: fills every `Any` variable. Errors if the plan has none, or if no
/// combination of candidates runs.
pub fn plan(
    sc: &Scenario,
    src: &Source,
    plan: &str,
    sets: &[(String, f64)],
    binds: &BTreeMap<String, u64>,
) -> Result<Choice, miette::Report> {
    // Errors of the scenario itself come back as they are, pointing into the file.
    let res = scenario::resolve(sc, src, Some(plan), sets, binds)?;
    let fail = |msg: String| miette::miette!("error: {}: {msg}", src.path);
    // The variables left to the planner, with the tensor each one lays out.
    let mut vars: Vec<(String, String)> = Vec::new();
    for op in &res.ops {
        if let Some(LayoutRef::Any(v)) = &op.layout
            && !vars.iter().any(|(x, _)| x == v)
            && let Some((_, t)) = op.op.output()
        {
            vars.push((v.clone(), t.to_string()));
        }
    }
    if vars.is_empty() {
        return Err(fail(format!(
            "plan `{plan}` has no variable set to `Any`: nothing to choose"
        )));
    }
    let mut cands: Vec<Vec<String>> = Vec::new();
    for (v, t) in &vars {
        let rt = &res.tensors[t];
        let c = candidates(
            &res.machine,
            &rt.dims_at_bound,
            rt.dtype,
            rt.dims_at_bound != rt.runtime_dims,
        );
        if c.is_empty() {
            return Err(fail(format!(
                "no layout of `{t}` fits {} for `${v}`",
                res.machine.name
            )));
        }
        cands.push(c);
    }
    let mut work = sc.clone();
    let set = |work: &mut Scenario, v: &str, text: &str| {
        if let Some(p) = work.plans.get_mut(plan) {
            p.insert(v.to_string(), PlanValue::Layout(text.to_string()));
        }
    };
    let mut pick: Vec<usize> = vec![0; vars.len()];
    for (i, (v, _)) in vars.iter().enumerate() {
        set(&mut work, v, &cands[i][0]);
    }
    let mut best = evaluate(&work, src, plan, sets, binds);
    let mut evaluated = 1;
    let better = |a: (usize, u64), b: (usize, u64)| a.0 > b.0 || (a.0 == b.0 && a.1 < b.1);
    for _round in 0..3 {
        let mut improved = false;
        for (i, (v, _)) in vars.iter().enumerate() {
            for (k, text) in cands[i].iter().enumerate() {
                if k == pick[i] {
                    continue;
                }
                set(&mut work, v, text);
                let s = evaluate(&work, src, plan, sets, binds);
                evaluated += 1;
                if better(s, best) {
                    best = s;
                    pick[i] = k;
                    improved = true;
                }
            }
            set(&mut work, v, &cands[i][pick[i]]);
        }
        if !improved {
            break;
        }
    }
    if best.1 == u64::MAX {
        return Err(miette::miette!(
            "error: {}: no combination of {} candidate layouts runs plan `{plan}` to the end",
            src.path,
            cands.iter().map(Vec::len).sum::<usize>()
        ));
    }
    Ok(Choice {
        plan: plan.to_string(),
        layouts: vars
            .iter()
            .zip(&pick)
            .enumerate()
            .map(|(i, ((v, _), &k))| (v.clone(), cands[i][k].clone()))
            .collect(),
        cycles: best.1,
        candidates: vars
            .iter()
            .zip(&cands)
            .map(|((v, _), c)| (v.clone(), c.len()))
            .collect(),
        evaluated,
    })
}
