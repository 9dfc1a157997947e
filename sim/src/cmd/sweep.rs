//! `mnsim compare S.ron`, `mnsim sweep S.ron --set K=V1,V2 [--bind N=V1,V2]...` (the
//! cartesian product, in parallel, optionally one shard of it) and `mnsim merge`.

use super::run::{ModeArg, RunArgs, ScenarioArgs, ScheduleArg, reports, run_plan};
use clap::Args;
use miette::{Report, miette};
use mnsim_reports::{RowResult, Sweep, SweepAxis, SweepRow};
use mnsim_sim::scenario::{self, Mode};
use rayon::prelude::*;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub s: ScenarioArgs,
    /// Write every plan's reports and compare.json here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override the scenario's mode.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Print the ranking as JSON (what compare.json holds) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Rank by total cycles, energy (joules) or edp (joules × seconds).
    #[arg(long, value_enum, default_value = "cycles")]
    pub by: ObjectiveArg,
}

/// What `compare --by` and `plan --objective` minimise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ObjectiveArg {
    Cycles,
    Energy,
    Edp,
}

impl From<ObjectiveArg> for mnsim_reports::Objective {
    fn from(a: ObjectiveArg) -> Self {
        match a {
            ObjectiveArg::Cycles => mnsim_reports::Objective::Cycles,
            ObjectiveArg::Energy => mnsim_reports::Objective::Energy,
            ObjectiveArg::Edp => mnsim_reports::Objective::Edp,
        }
    }
}

/// Runs every plan and ranks them.
pub fn compare(a: CompareArgs) -> Result<(), Report> {
    super::check_out(a.out.as_deref())?;
    let args = RunArgs {
        s: a.s,
        plan: None,
        out: None,
        mode: a.mode,
        json: false,
    };
    let ran = reports(&args)?;
    let reps = &ran.reports;
    let by = a.by.into();
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&mnsim_reports::compare_json_by(reps, by))
                .unwrap_or_default()
        );
    } else {
        outln!("{}", mnsim_reports::compare_table_by(reps, by));
        let ops = mnsim_reports::compare_ops(reps);
        if !ops.is_empty() {
            outln!("{ops}");
        }
    }
    ran.write_then_check(a.out.as_deref())
}

#[derive(Args)]
pub struct SweepArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// A knob and its values, e.g. --set links.L1B.distribute.parent=64,128,256, or a knob
    /// group, one axis: paths separated by `,`, `*` matching any run of characters, and
    /// values or multipliers of each knob's own (--set 'links.Group.*=x1,x2,x4'). Repeat
    /// for more axes: every combination runs (the cartesian product).
    #[arg(long = "set")]
    pub sets: Vec<String>,
    /// A dynamic dimension and its values, e.g. --bind batch=16,32,64 (part of the product).
    #[arg(long = "bind")]
    pub binds: Vec<String>,
    /// A plan to run at every point; repeat for several (default: every plan that
    /// runs as written, and with --replan every plan).
    #[arg(long = "plan")]
    pub plans: Vec<String>,
    /// Plan every plan that leaves layouts `Any` at each point, with the point's knobs
    /// and bindings, as `mnsim run` plans an imported graph (the planner within its work
    /// budget: the same plan everywhere); without it such plans are skipped.
    #[arg(long)]
    pub replan: bool,
    /// Override the scenario's mode (timing is the fast choice for sweeps).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Override the scenario's schedule (overlapped or sequential).
    #[arg(long, value_enum)]
    pub schedule: Option<ScheduleArg>,
    /// Run only shard I of N (0 ≤ I < N): the points whose number is I modulo N.
    /// `mnsim merge` joins the shards' folders into the whole sweep.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The axis to chart cycles against (default: the first with several values).
    #[arg(long = "x", value_name = "KNOB")]
    pub x: Option<String>,
    /// What the chart plots: cycles, energy, power, peak_power, gflops_per_w or edp.
    #[arg(long, default_value = "cycles", value_parser = metric)]
    pub metric: mnsim_reports::SweepMetric,
    /// Write sweep.csv, sweep.json, sweep.svg and sweep.html here (default: the CSV on
    /// stdout).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The machine an imported file (oneDNN JSON, StableHLO, ONNX) is imported for: a
    /// preset name or a machine RON file (default mncore2). A scenario names its own.
    #[arg(long)]
    pub machine: Option<String>,
    /// Print the sweep as JSON (what sweep.json holds) instead of the CSV or the summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct MergeArgs {
    /// Where to write the whole sweep (sweep.csv, sweep.json, sweep.svg, sweep.html).
    #[arg(long, required = true)]
    pub out: PathBuf,
    /// The shards' output folders (each holds a sweep.json).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The axis to chart against (default: the one the sweep's `--x` named, else the
    /// first with several values).
    #[arg(long = "x", value_name = "KNOB")]
    pub x: Option<String>,
    /// Print the whole sweep as JSON (what its sweep.json holds) instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// What the chart plots: cycles, energy, power, peak_power, gflops_per_w or edp
    /// (default: what the sweep's `--metric` named, else cycles).
    #[arg(long, value_parser = metric)]
    pub metric: Option<mnsim_reports::SweepMetric>,
}

fn metric(s: &str) -> Result<mnsim_reports::SweepMetric, String> {
    mnsim_reports::SweepMetric::parse(s)
}

/// `I/N` with N ≥ 1 and I < N.
fn parse_shard(text: &str) -> Result<(usize, usize), Report> {
    let bad = || miette!("error: --shard {text}: expected I/N with 0 ≤ I < N, e.g. --shard 0/4");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let i: usize = i.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// A progress bar with an ETA on a terminal's stderr; hidden otherwise.
fn progress_bar(len: usize) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "sweep [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

pub fn sweep(a: SweepArgs) -> Result<(), Report> {
    let mut axes = super::sweep_axes::parse(&a.sets, &a.binds)?;
    let shard = a.shard.as_deref().map(parse_shard).transpose()?;
    let total = mnsim_reports::point_count(&axes)
        .filter(|&n| n <= 1 << 24)
        .ok_or_else(|| miette!("error: the sweep has more than 2^24 points"))?;
    let (mut sc, src) =
        mnsim_sim::load::load_on(&a.scenario, &Default::default(), a.machine.as_deref())?;
    if let Some(s) = a.schedule {
        sc.schedule = match s {
            ScheduleArg::Overlapped => scenario::Schedule::Overlapped,
            ScheduleArg::Sequential => scenario::Schedule::Sequential,
        };
    }
    let plans = sweep_plans(&sc, &src, &a.plans, a.replan)?;
    let mode = a.mode.map(|m| match m {
        ModeArg::Timing => Mode::Timing,
        ModeArg::Functional => Mode::Functional,
    });
    let x = mnsim_reports::x_axis(
        &Sweep {
            axes: axes.clone(),
            ..Sweep::default()
        },
        a.x.as_deref(),
    )
    .map_err(|e| miette!("error: {e}"))?;
    super::points::check_axes(&sc, &src, &axes)?;
    let settings = super::sweep_axes::Settings::expand(&sc, &src, &mut axes)?;
    let mode_name = match mode.unwrap_or(sc.mode) {
        Mode::Timing => "timing",
        Mode::Functional => "functional",
    };
    let identity = |rows: Vec<SweepRow>| Sweep {
        schema: mnsim_reports::SWEEP_SCHEMA.to_string(),
        scenario: sc.name.clone(),
        scenario_hash: super::points::scenario_hash(&sc, &src),
        schedule: sc.schedule.name().to_string(),
        mode: mode_name.to_string(),
        plans: plans.clone(),
        axes: axes.clone(),
        shard,
        rows,
        x: a.x.clone(),
        metric: (a.metric != mnsim_reports::SweepMetric::Cycles)
            .then(|| a.metric.name().to_string()),
    };
    // The folder is checked, and the log of finished points opened (or resumed), before
    // any point runs.
    let log = match &a.out {
        Some(dir) => Some(super::points::Log::open(dir, &identity(Vec::new()))?),
        None => None,
    };
    let done = log.as_ref().map(|l| &l.done);
    let jobs: Vec<(usize, &Option<String>)> = mnsim_reports::shard_points(total, shard)
        .into_iter()
        .flat_map(|p| plans.iter().map(move |plan| (p, plan)))
        .filter(|(p, plan)| done.is_none_or(|d| !d.contains_key(&(*p, (*plan).clone()))))
        .collect();
    if let (Some(dir), Some(d)) = (&a.out, done)
        && !d.is_empty()
    {
        eprintln!(
            "resuming {}: {} run(s) already done (points.jsonl), {} to run",
            dir.display(),
            d.len(),
            jobs.len()
        );
    }
    let run = Points {
        sc: &sc,
        src: &src,
        axes: &axes,
        settings: &settings,
        mode,
        replan: a.replan,
    };
    let mut rows = run_points(&run, &jobs, log.as_ref());
    if let Some(l) = &log {
        l.check()?;
        rows.extend(l.done.values().cloned());
        let rank = |p: &Option<String>| plans.iter().position(|x| x == p);
        rows.sort_by_key(|r| (r.point, rank(&r.plan)));
    }
    let failed_n = rows.iter().filter(|r| r.error.is_some()).count();
    let n = rows.len();
    let sw = identity(rows);
    match (&a.out, &log) {
        (Some(dir), Some(log)) if a.json => {
            write_sweep(dir, &sw, x, Some(log.text(&sw.rows)), a.metric)?
        }
        (Some(dir), Some(log)) => {
            write_sweep(dir, &sw, x, Some(log.text(&sw.rows)), a.metric)?;
            outln!(
                "wrote {}: {n} run(s){}",
                dir.display(),
                if failed_n > 0 {
                    format!(", {failed_n} failed (see the error column of sweep.csv)")
                } else {
                    String::new()
                }
            );
        }
        _ if a.json => {}
        _ => super::emit(&mnsim_reports::sweep_csv(&sw))?,
    }
    if a.json {
        outln!("{}", mnsim_reports::sweep_json(&sw).trim_end());
    }
    failures(&sw.rows)
}

/// An error (exit non-zero, said on stderr) when a run of the sweep failed: how many and
/// the first.
fn failures(rows: &[SweepRow]) -> Result<(), Report> {
    let mut failed = rows.iter().filter(|r| r.error.is_some());
    let Some(r) = failed.next() else {
        return Ok(());
    };
    Err(miette!(
        "error: {} of {} run(s) of the sweep failed; the first (point {}{}): {}",
        failed.count() + 1,
        rows.len(),
        r.point,
        r.plan
            .as_deref()
            .map(|p| format!(", plan {p}"))
            .unwrap_or_default(),
        r.error.as_deref().unwrap_or("")
    ))
}

/// What every point of a sweep shares.
struct Points<'a> {
    sc: &'a scenario::Scenario,
    src: &'a scenario::Source,
    axes: &'a [SweepAxis],
    settings: &'a super::sweep_axes::Settings,
    mode: Option<Mode>,
    /// Plan a plan that leaves layouts `Any` at each point.
    replan: bool,
}

impl Points<'_> {
    /// Runs plan `plan` at point `p`: its knobs and bindings, the plan planned first
    /// when it leaves layouts `Any` and the sweep replans.
    fn run(&self, p: usize, plan: &Option<String>) -> SweepRow {
        let (sets, binds) = self.settings.point(self.axes, p);
        let planned;
        let (sc, src) = match plan
            .as_deref()
            .filter(|name| self.replan && open(self.sc, name))
        {
            Some(name) => {
                let (mut sc, mut src) = (self.sc.clone(), self.src.clone());
                if let Err(e) = mnsim_sim::import::plan_open(&mut sc, &mut src, name, &sets, &binds)
                {
                    return failed(p, plan, &e);
                }
                planned = (sc, src);
                (&planned.0, &planned.1)
            }
            None => (self.sc, self.src),
        };
        match run_plan(sc, src, plan.as_deref(), &sets, &binds, self.mode, false) {
            Ok(rep) => SweepRow {
                point: p,
                plan: plan.clone(),
                result: Some(RowResult::of(&rep)),
                error: None,
            },
            Err(e) => failed(p, plan, &e),
        }
    }
}

/// The row of a point that failed.
fn failed(p: usize, plan: &Option<String>, e: &Report) -> SweepRow {
    SweepRow {
        point: p,
        plan: plan.clone(),
        result: None,
        error: Some(e.to_string().trim_start_matches("error: ").to_string()),
    }
}

/// Whether plan `name` leaves layouts `Any`.
fn open(sc: &scenario::Scenario, name: &str) -> bool {
    sc.plans
        .get(name)
        .is_some_and(|p| p.values().any(|v| *v == scenario::PlanValue::Any))
}

/// The plans a sweep runs at every point: those named (each must exist; one that leaves
/// layouts `Any` needs `--replan`), else every plan that runs as written, and with
/// `--replan` every plan.
fn sweep_plans(
    sc: &scenario::Scenario,
    src: &scenario::Source,
    named: &[String],
    replan: bool,
) -> Result<Vec<Option<String>>, Report> {
    for (i, p) in named.iter().enumerate() {
        if !sc.plans.contains_key(p) {
            let all: Vec<&str> = sc.plans.keys().map(String::as_str).collect();
            return Err(miette!(
                "error: {}: no plan `{p}` (its plans: {})",
                src.path,
                all.join(", ")
            ));
        }
        if named[..i].contains(p) {
            return Err(miette!("error: --plan {p} is given twice"));
        }
        if open(sc, p) && !replan {
            return Err(miette!(
                "error: {}: plan `{p}` leaves layouts to the planner: give --replan to plan it \
                 at each point",
                src.path
            ));
        }
    }
    let plans: Vec<Option<String>> = if named.is_empty() {
        scenario::plans_to_run(sc)
            .into_iter()
            .filter(|p| replan || !p.as_deref().is_some_and(|p| open(sc, p)))
            .collect()
    } else {
        named.iter().cloned().map(Some).collect()
    };
    if plans.is_empty() {
        return Err(miette!(
            "error: {}: every plan leaves variables to the planner; --replan plans them at each \
             point (`mnsim plan` chooses them once)",
            src.path
        ));
    }
    Ok(plans)
}

/// Runs the sweep's `jobs` (point, plan) in parallel, each row appended to `log` as it
/// ends; rows in the order of `jobs`.
fn run_points(
    points: &Points,
    jobs: &[(usize, &Option<String>)],
    log: Option<&super::points::Log>,
) -> Vec<SweepRow> {
    let bar = progress_bar(jobs.len());
    let rows: Vec<SweepRow> = jobs
        .par_iter()
        .map(|&(p, plan)| {
            let row = points.run(p, plan);
            bar.inc(1);
            if let Some(l) = log {
                l.append(&row);
            }
            row
        })
        .collect();
    bar.finish_and_clear();
    rows
}

fn write_sweep(
    dir: &std::path::Path,
    sw: &Sweep,
    x: usize,
    points: Option<String>,
    metric: mnsim_reports::SweepMetric,
) -> Result<(), Report> {
    let mut files = vec![
        (
            PathBuf::from("sweep.csv"),
            mnsim_reports::sweep_csv(sw).into_bytes(),
        ),
        (
            PathBuf::from("sweep.json"),
            mnsim_reports::sweep_json(sw).into_bytes(),
        ),
        (
            PathBuf::from("sweep.svg"),
            mnsim_reports::sweep_svg_by(sw, x, metric).into_bytes(),
        ),
        (
            PathBuf::from("sweep.html"),
            mnsim_reports::sweep_html_by(sw, x, metric).into_bytes(),
        ),
    ];
    if let Some(p) = points {
        files.push((PathBuf::from("points.jsonl"), p.into_bytes()));
    }
    mnsim_reports::write_outputs(dir, &files)
        .map_err(|e| miette!("error: writing {}: {e}", dir.display()))
}

/// `mnsim merge --out DIR DIR1 DIR2 ...`: the shards of a sweep joined into the whole.
pub fn merge(a: MergeArgs) -> Result<(), Report> {
    super::check_out(Some(&a.out))?;
    let mut parts = Vec::new();
    for d in &a.dirs {
        let path = d.join("sweep.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| miette!("error: cannot read {}: {e}", path.display()))?;
        let s = mnsim_reports::parse_sweep_file(
            &d.display().to_string(),
            &path.display().to_string(),
            &text,
        )
        .map_err(|e| miette!("error: {}: {e}", path.display()))?;
        parts.push(s);
    }
    let mut whole = mnsim_reports::merge_sweeps(&parts).map_err(|e| miette!("error: {e}"))?;
    // The chart as the sweep drew it (its `--x` and `--metric`), unless told otherwise.
    if a.x.is_some() {
        whole.x = a.x.clone();
    }
    if let Some(m) = a.metric {
        whole.metric = (m != mnsim_reports::SweepMetric::Cycles).then(|| m.name().to_string());
    }
    let metric = match &whole.metric {
        Some(m) => mnsim_reports::SweepMetric::parse(m).map_err(|e| miette!("error: {e}"))?,
        None => mnsim_reports::SweepMetric::Cycles,
    };
    let x = mnsim_reports::x_axis(&whole, whole.x.as_deref()).map_err(|e| miette!("error: {e}"))?;
    write_sweep(&a.out, &whole, x, None, metric)?;
    if a.json {
        outln!("{}", mnsim_reports::sweep_json(&whole).trim_end());
        return Ok(());
    }
    outln!(
        "wrote {}: {} run(s) from {} shard(s)",
        a.out.display(),
        whole.rows.len(),
        parts.len()
    );
    Ok(())
}
