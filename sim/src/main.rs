//! The `mnsim` command line.

use clap::{Parser, Subcommand};
use std::io::Write as _;
use std::process::ExitCode;

mod allocator;
mod cmd;

/// mimalloc (its 2.x line, which serves the planner in fewer instructions and less
/// memory than 3.x): see `allocator.rs`.
#[global_allocator]
static ALLOCATOR: allocator::MiMalloc = allocator::MiMalloc;

#[derive(Parser)]
#[command(
    name = "mnsim",
    version,
    about = "A cycle-approximate simulator of PFN's MN-Core"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Map a TensorLayout onto a machine: where every element lives.
    Layout {
        #[command(subcommand)]
        command: cmd::layout::LayoutCmd,
    },
    /// XLA shapes: the linear index of an element in a (tiled) DRAM layout.
    Shape {
        #[command(subcommand)]
        command: cmd::shape::ShapeCmd,
    },
    /// Validate a scenario: load it and resolve every plan (or --plan), run nothing.
    Check(cmd::check::CheckArgs),
    /// Run a scenario's plans and show where the cycles went.
    Run(cmd::run::RunArgs),
    /// Choose layouts for plan variables set to `Any`, by simulated cycles.
    Plan(cmd::plan::PlanArgs),
    /// Run every plan of a scenario and rank them by cycles.
    Compare(cmd::sweep::CompareArgs),
    /// Sweep what-if knobs and bindings: every combination, in parallel (CSV, JSON, charts).
    Sweep(cmd::sweep::SweepArgs),
    /// Join the folders of a sharded sweep (`sweep --shard I/N`) into the whole sweep.
    Merge(cmd::sweep::MergeArgs),
    /// List the machine presets, or describe one (with --set knobs applied).
    Machines(cmd::machines::MachinesArgs),
    /// Turn a oneDNN Graph JSON file into a scenario (every layout left to the planner).
    Import(cmd::import::ImportArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    mnsim_sim::signals::install();
    // Diagnostics in colour only on a terminal and without `NO_COLOR` (no-color.org).
    let color = cmd::use_color(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = miette::set_hook(Box::new(move |_| {
        Box::new(miette::MietteHandlerOpts::new().color(color).build())
    }));
    let result = match cli.command {
        Command::Layout { command } => cmd::layout::run(command),
        Command::Shape { command } => cmd::shape::run(command),
        Command::Machines(args) => cmd::machines::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Compare(args) => cmd::sweep::compare(args),
        Command::Plan(args) => cmd::plan::run(args),
        Command::Sweep(args) => cmd::sweep::sweep(args),
        Command::Merge(args) => cmd::sweep::merge(args),
        Command::Import(args) => cmd::import::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(report) => {
            // A closed stderr must not turn an error into a panic.
            let _ = writeln!(std::io::stderr(), "{report:?}");
            ExitCode::FAILURE
        }
    }
}
