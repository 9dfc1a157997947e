//! `mnsim run S.ron`: run every plan (or one) and show where the cycles went.

use clap::{Args, ValueEnum};
use miette::{Report, miette};
use mnsim_sim::run::run_with_progress;
use mnsim_sim::scenario::{self, Mode};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// A progress bar on stderr that appears only when a run takes longer than a second
/// and stderr is a terminal.
struct Progress {
    bar: indicatif::ProgressBar,
    start: std::time::Instant,
    tty: bool,
}

impl Progress {
    fn new(label: &str) -> Progress {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(0),
            indicatif::ProgressDrawTarget::hidden(),
        );
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ops {elapsed}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label.to_string());
        Progress {
            bar,
            start: std::time::Instant::now(),
            tty: std::io::stderr().is_terminal(),
        }
    }
    fn tick(&self, done: usize, total: usize) {
        self.bar.set_length(total as u64);
        self.bar.set_position(done as u64);
        if self.tty
            && self.bar.is_hidden()
            && self.start.elapsed() > std::time::Duration::from_secs(1)
        {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Timing,
    Functional,
}

/// What every scenario command takes: the file, what-if knobs and bindings.
#[derive(Args, Clone)]
pub struct ScenarioArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Override a machine knob, e.g. --set links.L1B.distribute.parent=128; or a group:
    /// paths separated by `,`, `*` matching any run of characters, a value or a
    /// multiplier of each knob's own (--set 'links.Group.*=x2').
    #[arg(long = "set")]
    pub sets: Vec<String>,
    /// Bind a dynamic dimension, e.g. --bind batch=48.
    #[arg(long = "bind")]
    pub binds: Vec<String>,
    /// Override the scenario's schedule: overlapped (transfers overlap compute, the
    /// default) or sequential (each op starts when the previous one ends).
    #[arg(long, value_enum)]
    pub schedule: Option<ScheduleArg>,
    /// The machine an imported file (oneDNN JSON, StableHLO, ONNX) is imported for: a
    /// preset name or a machine RON file (default mncore2). A scenario names its own.
    #[arg(long)]
    pub machine: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ScheduleArg {
    Overlapped,
    Sequential,
}

impl ScenarioArgs {
    /// Loads the scenario file, with `--schedule` applied.
    pub fn load(&self) -> Result<(scenario::Scenario, scenario::Source), Report> {
        let binds = scenario::parse_binds(&self.binds)?;
        let (mut sc, src) =
            mnsim_sim::load::load_on(&self.scenario, &binds, self.machine.as_deref())?;
        if let Some(s) = self.schedule {
            sc.schedule = match s {
                ScheduleArg::Overlapped => scenario::Schedule::Overlapped,
                ScheduleArg::Sequential => scenario::Schedule::Sequential,
            };
        }
        Ok((sc, src))
    }
}

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub s: ScenarioArgs,
    /// Run only this plan (default: every plan).
    #[arg(long)]
    pub plan: Option<String>,
    /// Write report.json, report.md, report.html and trace.json here (one folder per plan when
    /// several run, plus compare.json and compare.html).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override the scenario's mode.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Print the reports as JSON (an array of `report.json` objects, see
    /// docs/report-schema.md) instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs the plans of a scenario; returns their reports (nothing printed or written).
pub fn reports(a: &RunArgs) -> Result<Ran, Report> {
    let binds = scenario::parse_binds(&a.s.binds)?;
    let (mut sc, mut src) = a.s.load()?;
    let sets = scenario::knob_sets(&sc, &src, &a.s.sets)?;
    // An imported graph leaves every layout to the planner: plan it first, and say so
    // (unless another plan, such as the import's `default`, is asked for by name).
    if mnsim_sim::import::is_imported(&src) && a.plan.as_deref().is_none_or(|p| p == "auto") {
        let note = plan_with_bar(&mut sc, &mut src, &sets, &binds);
        eprintln!("note: {note}");
    }
    let file = a.s.scenario.display();
    let plans: Vec<Option<String>> = match &a.plan {
        Some(p) => vec![Some(p.clone())],
        // A plan that leaves variables to the planner cannot run as it is: say so, run
        // the rest; with none left, nothing runs.
        None => {
            let (open, ready): (Vec<_>, Vec<_>) =
                scenario::plans_to_run(&sc).into_iter().partition(|p| {
                    p.as_ref().is_some_and(|p| {
                        sc.plans[p].values().any(|v| *v == scenario::PlanValue::Any)
                    })
                });
            if ready.is_empty() {
                return Err(miette!(
                    "error: {}: every plan sets variables to `Any`: nothing runs until they have \
                     layouts; `mnsim plan {file}` chooses them (`mnsim plan {file} --write NAME` \
                     adds the chosen plan to the file, then `mnsim run {file} --plan NAME`)",
                    src.path
                ));
            }
            for p in open.iter().flatten() {
                eprintln!(
                    "note: plan `{p}` sets variables to `Any`: skipped; `mnsim plan {file}` chooses them"
                );
            }
            ready
        }
    };
    let mode = a.mode.map(|m| match m {
        ModeArg::Timing => Mode::Timing,
        ModeArg::Functional => Mode::Functional,
    });
    // Every plan runs: one that does not (a plan `plan --write` added Relayouts to the
    // program for, which another hand plan's layouts do not suit) is named with its
    // error and the others still run; `run` then exits non-zero (`failed`).
    let mut out = Vec::new();
    let mut failed: Vec<(Option<String>, Report)> = Vec::new();
    for plan in &plans {
        match run_plan(&sc, &src, plan.as_deref(), &sets, &binds, mode, true) {
            Ok(r) => out.push(r),
            Err(e) if plans.len() > 1 => failed.push((plan.clone(), e)),
            Err(e) => return Err(e),
        }
    }
    if out.is_empty() && !failed.is_empty() {
        return Err(failed.swap_remove(0).1);
    }
    Ok(Ran {
        reports: out,
        failed,
    })
}

/// What [`reports`] ran: the reports of the plans that ran, in plan order, and the
/// plans that did not, with their errors (only when others ran).
pub struct Ran {
    pub reports: Vec<mnsim_reports::Report>,
    pub failed: Vec<(Option<String>, Report)>,
}

impl Ran {
    /// Writes the reports to `out` (when given) if every plan ran: all the plans'
    /// reports or none, so with a plan that did not run `out` is left as it was. Then
    /// [`Ran::check`].
    pub fn write_then_check(&self, out: Option<&Path>) -> Result<(), Report> {
        if let Some(dir) = out
            && self.failed.is_empty()
        {
            write(dir, &self.reports)?;
        }
        self.check()
    }

    /// Prints each plan that did not run with its error (on stderr); the error to exit
    /// with when there was one.
    pub fn check(&self) -> Result<(), Report> {
        for (_, e) in &self.failed {
            eprintln!("{e:?}");
        }
        let names: Vec<String> = (self.failed.iter())
            .map(|(p, _)| format!("`{}`", p.as_deref().unwrap_or("-")))
            .collect();
        match names.is_empty() {
            true => Ok(()),
            false => Err(miette!(
                "error: plan {} did not run (above); the other plans ran (nothing written \
                 to --out: all the plans' reports or none)",
                names.join(", ")
            )),
        }
    }
}

/// Plans an imported graph's plan `auto` (`import::plan_auto`), with a progress bar of
/// the assignments evaluated on a terminal's stderr (none when stderr is not a terminal,
/// so pipes and tests stay clean).
fn plan_with_bar(
    sc: &mut scenario::Scenario,
    src: &mut scenario::Source,
    sets: &[(String, f64)],
    binds: &std::collections::BTreeMap<String, u64>,
) -> String {
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {human_pos}/{human_len} assignments {elapsed}",
        ) {
            b.set_style(style.progress_chars("=> "));
        }
        b.set_message("planning auto");
        b
    });
    let mut progress = |done: u64, total: u64| {
        if let Some(b) = &bar {
            b.set_length(total.max(done));
            b.set_position(done);
        }
    };
    let note = mnsim_sim::import::plan_auto_with(sc, src, sets, binds, &mut progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    note
}

/// Resolves and runs one plan; the report is refused when a count in it overflowed.
/// `progress`: show a progress bar on a terminal when the run takes a while.
///
/// A functional run is preceded by a timing run of the same plan (no element data): an
/// error any op would meet stops it before the tensors' data is made, and the LM the
/// layouts fill (every step of a stream included) goes into the memory estimate.
pub fn run_plan(
    sc: &scenario::Scenario,
    src: &scenario::Source,
    plan: Option<&str>,
    sets: &[(String, f64)],
    binds: &std::collections::BTreeMap<String, u64>,
    mode: Option<Mode>,
    progress: bool,
) -> Result<mnsim_reports::Report, Report> {
    let mut res = scenario::resolve(sc, src, plan, sets, binds)?;
    if let Some(m) = mode {
        res.mode = m;
    }
    if res.mode == Mode::Functional {
        let dry = execute(sc, src, plan, &timing(&res), false)?;
        // An imported graph is functional when its tensors are small, but a plan that
        // repeats the work over many PEs can still make the values far too slow to
        // compute: unless the user asked for them, run it in timing mode and say so.
        let leaves = res.machine.leaf_count();
        let work = mnsim_sim::memory::functional_work(&dry.report, leaves);
        if mode.is_none()
            && mnsim_sim::import::is_imported(src)
            && work > mnsim_sim::memory::FUNCTIONAL_WORK_LIMIT
        {
            let why = format!(
                "a functional run would compute about {work:.1e} element values on the PEs \
                 (its layouts repeat work over the replicas): ran in timing mode for the same \
                 cycles, without verification (--mode functional runs it anyway)"
            );
            return Ok(timing_instead(src, plan, &why, dry.report, &res.machine));
        }
        // Refuse a functional run too large for this machine before anything is
        // allocated; an imported graph, functional only because its tensors are small,
        // runs in timing mode instead unless the user asked for values.
        let limit = mnsim_sim::memory::available().map_err(|e| miette!("error: {e}"))?;
        if let Err(e) =
            mnsim_sim::memory::check(&res, dry.engine.state.lm_high_water_bytes(), limit)
        {
            if mode.is_some() || !mnsim_sim::import::is_imported(src) {
                return Err(miette!("error: {}: {e}", src.path));
            }
            let why = format!("ran in timing mode for the same cycles, without verification: {e}");
            return Ok(timing_instead(src, plan, &why, dry.report, &res.machine));
        }
    }
    let mut report = execute(sc, src, plan, &res, progress)?.report;
    if let Some(h) = bottleneck_hint(&res.machine, &report) {
        report.warnings.push(h);
    }
    Ok(report)
}

/// `res` as a timing run without verification: every check a run makes short of
/// moving data (`mnsim check`, the run before a functional one).
pub fn timing(res: &scenario::Resolved) -> scenario::Resolved {
    let mut t = res.clone();
    t.mode = Mode::Timing;
    t.verify = false;
    t
}

/// Runs a resolved plan; its errors point into the file, and the report is refused when
/// a count in it overflowed.
pub fn execute(
    sc: &scenario::Scenario,
    src: &scenario::Source,
    plan: Option<&str>,
    res: &scenario::Resolved,
    progress: bool,
) -> Result<mnsim_sim::run::RunOutput, Report> {
    let label = format!(
        "{}{}",
        sc.name,
        plan.map(|p| format!(" (plan {p})")).unwrap_or_default()
    );
    let r = if progress {
        let bar = Progress::new(&label);
        let mut tick = |done: usize, total: usize| bar.tick(done, total);
        let r = run_with_progress(res, &mut tick);
        bar.finish();
        r
    } else {
        run_with_progress(res, &mut |_, _| {})
    };
    let plan_note = plan.map(|p| format!("plan `{p}`: ")).unwrap_or_default();
    let r = r.map_err(|e| {
        scenario::run_error(src, e.op, e.tensor.as_deref(), &format!("{plan_note}{e}"))
    })?;
    let leaf = res.machine.levels.last().map_or("PE", |l| l.name.as_str());
    mnsim_sim::limits::check_report(&r.report, leaf)
        .map_err(|e| miette!("error: {}: {plan_note}{e}", src.path))?;
    Ok(r)
}

/// The timing run's report of an imported graph run in timing mode instead of the
/// functional mode it asked for, and why (a note on stderr).
fn timing_instead(
    src: &scenario::Source,
    plan: Option<&str>,
    why: &str,
    mut report: mnsim_reports::Report,
    m: &mnsim_arch::Machine,
) -> mnsim_reports::Report {
    eprintln!(
        "note: {}{}: {why}",
        src.path,
        plan.map(|p| format!(" plan `{p}`")).unwrap_or_default()
    );
    if let Some(h) = bottleneck_hint(m, &report) {
        report.warnings.push(h);
    }
    report
}

/// A hint when the level that bounds the run is one layouts cannot name (mncore2's
/// Group): the user cannot split data over it directly.
pub fn bottleneck_hint(m: &mnsim_arch::Machine, r: &mnsim_reports::Report) -> Option<String> {
    // The bottleneck resource's level (`Group down` → `Group`).
    let b = r.bottleneck_name()?.split_whitespace().next()?;
    let level = m.levels.iter().find(|l| l.name == b)?;
    // A root of one node (toy4's Board) has no fan-out to name.
    if level.addressable || level.count < 2 {
        return None;
    }
    let into = m
        .addressable_levels()
        .into_iter()
        .find(|a| a.folded.iter().any(|&i| m.levels[i].name == b))?;
    let per = m.levels[into.folded[into.folded.len() - 1]].count;
    Some(format!(
        "{b} bounds the most cycles, but layouts cannot name {b}: it folds into {} \
         ({} positions, {per} per {b}), so a layout's {} sub-axes decide what each {b} port \
         carries. To relieve it, move less data across {b}s (replicate less over {}) or \
         raise the links.{b}.* rates (--set)",
        into.name, into.fanout, into.name, into.name
    ))
}

pub fn run(a: RunArgs) -> Result<(), Report> {
    super::check_out(a.out.as_deref())?;
    let ran = reports(&a)?;
    let reps = &ran.reports;
    if a.json {
        let all: Vec<serde_json::Value> = reps
            .iter()
            .map(|r| serde_json::from_str(&mnsim_reports::to_json(r)).unwrap_or_default())
            .collect();
        outln!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
    } else {
        let color = super::use_color(std::io::stdout().is_terminal());
        for r in reps {
            outln!("{}", mnsim_reports::terminal(r, color));
        }
        if reps.len() > 1 {
            outln!("{}", mnsim_reports::compare_table(reps));
        }
    }
    ran.write_then_check(a.out.as_deref())?;
    if reps.iter().any(|r| r.verified == Some(false)) {
        return Err(miette!(
            "error: verification failed (see the warnings above)"
        ));
    }
    Ok(())
}

/// Writes every report at once: all files or none.
pub fn write(dir: &Path, reps: &[mnsim_reports::Report]) -> Result<(), Report> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let several = reps.len() > 1;
    for r in reps {
        let base = match (&r.plan, several) {
            (Some(p), true) => PathBuf::from(p),
            _ => PathBuf::new(),
        };
        files.push((
            base.join("report.json"),
            mnsim_reports::to_json(r).into_bytes(),
        ));
        files.push((
            base.join("report.md"),
            mnsim_reports::markdown(r).into_bytes(),
        ));
        files.push((
            base.join("report.html"),
            mnsim_reports::html(r).into_bytes(),
        ));
        files.push((
            base.join("trace.json"),
            mnsim_reports::trace(r).into_bytes(),
        ));
        files.push((base.join("ops.csv"), mnsim_reports::ops_csv(r).into_bytes()));
    }
    if several {
        let cmp =
            serde_json::to_string_pretty(&mnsim_reports::compare_json(reps)).unwrap_or_default();
        files.push((PathBuf::from("compare.json"), cmp.into_bytes()));
        files.push((
            PathBuf::from("compare.html"),
            mnsim_reports::compare_html(reps).into_bytes(),
        ));
    }
    mnsim_reports::write_outputs(dir, &files)
        .map_err(|e| miette!("error: writing {}: {e}", dir.display()))?;
    // On stderr, so that `--json` output stays pure JSON.
    eprintln!("wrote {} file(s) to {}", files.len(), dir.display());
    Ok(())
}
