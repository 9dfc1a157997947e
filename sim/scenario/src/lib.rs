//! `mnsim-scenario`: the scenario file format (RON): parsing, printing, and resolving a
//! scenario into the typed program. It builds on `mnsim-core` only: it knows neither the
//! engine nor the importers (ARCHITECTURE.md, crates).

pub mod scenario;

pub use mnsim_core::{diag, ids, input, limits, program, signals};
