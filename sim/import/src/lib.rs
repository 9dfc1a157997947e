//! `mnsim-import`: the importers: oneDNN Graph JSON, StableHLO MLIR and ONNX graphs
//! become scenarios. It builds on `mnsim-core` and `mnsim-scenario` only: it knows
//! neither the engine nor the planner, so it builds beside them (planning an import's
//! plan `auto` is `mnsim-sim`'s `import::plan_auto`; ARCHITECTURE.md, crates).

pub mod import;

pub use mnsim_core::{diag, ids, input, limits, program, signals};
pub use mnsim_scenario::scenario;
