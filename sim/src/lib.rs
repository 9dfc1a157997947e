//! `mnsim-sim`: the simulator. The ECS world built from a machine, the tree-network
//! engine with per-level cycle accounting, scenario loading, and the `mnsim` binary.
//!
//! The library is a facade over the crates of `sim/` (ARCHITECTURE.md, crates): every
//! module keeps its path here (`mnsim_sim::plan`, `mnsim_sim::engine`, ...). What sits
//! above both the importers and the planner lives here: `load` (any input file) and
//! `import`'s planning of an import (`plan_auto`, `plan_open`).

pub mod import;
pub mod load;

pub use mnsim_core::{diag, ids, input, limits, program, signals};
pub use mnsim_engine::{engine, lowering, net, timeline, world};
pub use mnsim_plan::plan;
pub use mnsim_run::{apply, bound, energy, gap, memory, run, verify, waits};
pub use mnsim_scenario::scenario;
