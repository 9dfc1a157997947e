//! `mnsim run S.ron`: run every plan (or one) and show where the cycles went.

use clap::{Args, ValueEnum};
use miette::{Report, miette};
use mnsim_sim::run::run as run_resolved;
use mnsim_sim::scenario::{self, Mode};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Timing,
    Functional,
}

#[derive(Args)]
pub struct RunArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Run only this plan (default: every plan).
    #[arg(long)]
    pub plan: Option<String>,
    /// Write report.json and report.md here (one folder per plan when several run).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override a machine knob, e.g. --set links.L1B.distribute.parent=128.
    #[arg(long = "set")]
    pub sets: Vec<String>,
    /// Bind a dynamic dimension, e.g. --bind batch=48.
    #[arg(long = "bind")]
    pub binds: Vec<String>,
    /// Override the scenario's mode.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
}

/// Runs the plans of a scenario; returns their reports (nothing printed or written).
pub fn reports(a: &RunArgs) -> Result<Vec<mnsim_reports::Report>, Report> {
    let sets = scenario::parse_sets(&a.sets)?;
    let binds = scenario::parse_binds(&a.binds)?;
    let (sc, src) = scenario::load(&a.scenario)?;
    let plans = match &a.plan {
        Some(p) => vec![Some(p.clone())],
        None => scenario::plans_to_run(&sc),
    };
    let mut out = Vec::new();
    for plan in &plans {
        let mut res = scenario::resolve(&sc, &src, plan.as_deref(), &sets, &binds)?;
        if let Some(m) = a.mode {
            res.mode = match m {
                ModeArg::Timing => Mode::Timing,
                ModeArg::Functional => Mode::Functional,
            };
        }
        let r = run_resolved(&res).map_err(|e| {
            let plan = plan
                .as_deref()
                .map(|p| format!("plan `{p}`: "))
                .unwrap_or_default();
            scenario::run_error(&src, e.op, e.tensor.as_deref(), &format!("{plan}{e}"))
        })?;
        out.push(r.report);
    }
    Ok(out)
}

pub fn run(a: RunArgs) -> Result<(), Report> {
    let reps = reports(&a)?;
    let color = std::io::stdout().is_terminal();
    for r in &reps {
        println!("{}", mnsim_reports::terminal(r, color));
    }
    if reps.len() > 1 {
        println!("{}", mnsim_reports::compare_table(&reps));
    }
    if let Some(dir) = &a.out {
        write(dir, &reps)?;
    }
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
    }
    if several {
        let cmp =
            serde_json::to_string_pretty(&mnsim_reports::compare_json(reps)).unwrap_or_default();
        files.push((PathBuf::from("compare.json"), cmp.into_bytes()));
    }
    mnsim_reports::write_outputs(dir, &files)
        .map_err(|e| miette!("error: writing {}: {e}", dir.display()))
}
