//! `mnsim._mnsim`: the `mnsim` command line in-process, for the Python package.
//!
//! The subcommands are the binary's own modules (`sim/src/cmd/`, compiled here as they
//! are into the binary), so a call gives what the command prints and fails with its
//! message: `main(["run", "s.ron", "--json"])` returns the JSON `mnsim run s.ron --json`
//! prints, and an error raises `mnsim.MnsimError` carrying the text mnsim writes on
//! stderr. Notes go to stderr as from the binary. The Python layer (`python/mnsim/`)
//! turns the JSON into report objects and pandas DataFrames.

#[allow(dead_code)]
#[path = "../../src/cmd/mod.rs"]
mod cmd;

use clap::{Parser, Subcommand};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

#[derive(Parser)]
#[command(name = "mnsim", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The binary's subcommands (`sim/src/main.rs`), dispatched the same way.
#[derive(Subcommand)]
enum Command {
    Layout {
        #[command(subcommand)]
        command: cmd::layout::LayoutCmd,
    },
    Shape {
        #[command(subcommand)]
        command: cmd::shape::ShapeCmd,
    },
    Check(cmd::check::CheckArgs),
    Run(cmd::run::RunArgs),
    Plan(cmd::plan::PlanArgs),
    Compare(cmd::sweep::CompareArgs),
    Sweep(cmd::sweep::SweepArgs),
    Merge(cmd::sweep::MergeArgs),
    Machines(cmd::machines::MachinesArgs),
    Import(cmd::import::ImportArgs),
}

pyo3::create_exception!(
    _mnsim,
    MnsimError,
    PyException,
    "An mnsim error: the message the command line prints."
);

fn dispatch(c: Command) -> Result<(), miette::Report> {
    match c {
        Command::Layout { command } => cmd::layout::run(command),
        Command::Shape { command } => cmd::shape::run(command),
        Command::Machines(a) => cmd::machines::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Compare(a) => cmd::sweep::compare(a),
        Command::Plan(a) => cmd::plan::run(a),
        Command::Sweep(a) => cmd::sweep::sweep(a),
        Command::Merge(a) => cmd::sweep::merge(a),
        Command::Import(a) => cmd::import::run(a),
    }
}

/// Runs `mnsim ARGS...` in-process: what it prints on stdout. Raises `MnsimError` with
/// the command's message (usage errors included) when it fails.
#[pyfunction]
fn main(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    let cli = Cli::try_parse_from(std::iter::once("mnsim".to_string()).chain(args))
        .map_err(|e| MnsimError::new_err(e.render().to_string()))?;
    py.detach(|| {
        cmd::CAPTURE.with(|c| *c.borrow_mut() = Some(String::new()));
        let r = dispatch(cli.command);
        let out = cmd::CAPTURE
            .with(|c| c.borrow_mut().take())
            .unwrap_or_default();
        r.map(|()| out).map_err(|e| {
            let handler = miette::GraphicalReportHandler::new_themed(
                miette::GraphicalTheme::unicode_nocolor(),
            );
            let mut text = String::new();
            if handler.render_report(&mut text, e.as_ref()).is_err() {
                text = format!("{e:?}");
            }
            text
        })
    })
    .map_err(MnsimError::new_err)
}

#[pymodule]
fn _mnsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add("MnsimError", m.py().get_type::<MnsimError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
