//! `mnsim compare S.ron` and `mnsim sweep S.ron --set K=V1,V2,...`.

use super::run::{ModeArg, RunArgs, ScenarioArgs, reports, write};
use clap::Args;
use miette::{Report, miette};
use mnsim_reports::SweepPoint;
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
}

/// Runs every plan and ranks them.
pub fn compare(a: CompareArgs) -> Result<(), Report> {
    let args = RunArgs {
        s: a.s,
        plan: None,
        out: None,
        mode: a.mode,
    };
    let reps = reports(&args)?;
    println!("{}", mnsim_reports::compare_table(&reps));
    let ops = mnsim_reports::compare_ops(&reps);
    if !ops.is_empty() {
        println!("{ops}");
    }
    if let Some(dir) = &a.out {
        write(dir, &reps)?;
    }
    Ok(())
}

#[derive(Args)]
pub struct SweepArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Knobs: exactly one with several comma-separated values (the swept knob),
    /// e.g. --set links.L1B.distribute.parent=64,128,256,512; others fixed.
    #[arg(long = "set", required = true)]
    pub sets: Vec<String>,
    /// Only this plan (default: every plan).
    #[arg(long)]
    pub plan: Option<String>,
    /// Bind a dynamic dimension, e.g. --bind batch=48.
    #[arg(long = "bind")]
    pub binds: Vec<String>,
    /// Override the scenario's mode (timing is the fast choice for sweeps).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Write sweep.csv and sweep.svg here (default: the CSV on stdout).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn sweep(a: SweepArgs) -> Result<(), Report> {
    let mut swept: Option<(String, Vec<f64>)> = None;
    let mut fixed: Vec<String> = Vec::new();
    for s in &a.sets {
        let (k, vs) = mnsim_arch::parse_sweep(s).map_err(|e| miette!("error: --set {s}: {e}"))?;
        if vs.len() > 1 {
            if let Some((other, _)) = &swept {
                return Err(miette!(
                    "error: sweep one knob at a time: both `{other}` and `{k}` have several values"
                ));
            }
            swept = Some((k, vs));
        } else {
            fixed.push(s.clone());
        }
    }
    let Some((knob, values)) = swept else {
        return Err(miette!(
            "error: give the swept knob several values, e.g. --set {}=64,128,256",
            "links.L1B.distribute.parent"
        ));
    };
    let mut points = Vec::new();
    for v in &values {
        let mut sets = fixed.clone();
        sets.push(format!("{knob}={v}"));
        let args = RunArgs {
            s: ScenarioArgs {
                scenario: a.scenario.clone(),
                sets,
                binds: a.binds.clone(),
            },
            plan: a.plan.clone(),
            out: None,
            mode: a.mode,
        };
        let reps = reports(&args).map_err(|e| miette!("error: at {knob}={v}: {e}"))?;
        eprintln!(
            "{knob} = {v}: {}",
            reps.iter()
                .map(|r| format!(
                    "{} {} cycles",
                    r.plan.as_deref().unwrap_or("-"),
                    r.total_cycles
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        points.push(SweepPoint {
            value: *v,
            reports: reps,
        });
    }
    let csv = mnsim_reports::sweep_csv(&knob, &points);
    match &a.out {
        Some(dir) => {
            let title = points
                .first()
                .and_then(|p| p.reports.first())
                .map_or(String::new(), |r| r.scenario.clone());
            let svg = mnsim_reports::sweep_svg(&title, &knob, &points);
            mnsim_reports::write_outputs(
                dir,
                &[
                    (PathBuf::from("sweep.csv"), csv.into_bytes()),
                    (PathBuf::from("sweep.svg"), svg.into_bytes()),
                ],
            )
            .map_err(|e| miette!("error: writing {}: {e}", dir.display()))?;
            println!(
                "wrote {}/sweep.csv and {}/sweep.svg",
                dir.display(),
                dir.display()
            );
        }
        None => print!("{csv}"),
    }
    Ok(())
}
