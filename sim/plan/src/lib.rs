//! `mnsim-plan`: the layout planner (candidates, the cost model, the search, writing
//! plans). It builds on `mnsim-run` and the crates below it: it knows no importer
//! (ARCHITECTURE.md, crates).

pub mod plan;

pub use mnsim_core::{diag, ids, input, limits, program, signals};
pub use mnsim_engine::{engine, lowering, net, timeline, world};
pub use mnsim_run::{apply, bound, energy, gap, memory, run, verify, waits};
pub use mnsim_scenario::scenario;
