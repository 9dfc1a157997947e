//! `mnsim-run`: running a resolved scenario on the engine (`run`, `apply`) and what is
//! measured around it (`bound`, `energy`, `gap`, `memory`, `verify`, `waits`). It builds
//! on `mnsim-core`, `mnsim-scenario` and `mnsim-engine`: it knows neither the planner nor
//! the importers (ARCHITECTURE.md, crates).

pub mod apply;
pub mod bound;
pub mod energy;
pub mod gap;
pub mod memory;
pub mod run;
pub mod verify;
pub mod waits;

pub use mnsim_core::{diag, ids, input, limits, program, signals};
pub use mnsim_engine::{engine, lowering, net, timeline, world};
pub use mnsim_scenario::scenario;
