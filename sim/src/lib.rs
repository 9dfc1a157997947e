//! `mnsim-sim`: the simulator. The ECS world built from a machine, the tree-network
//! engine with per-level cycle accounting, scenario loading, and the `mnsim` binary.

pub mod apply;
pub mod bound;
pub mod diag;
pub mod energy;
pub mod engine;
pub mod gap;
pub mod ids;
pub mod import;
pub mod input;
pub mod limits;
pub mod load;
pub mod lowering;
pub mod memory;
pub mod net;
pub mod plan;
pub mod program;
pub mod run;
pub mod scenario;
pub mod signals;
pub mod timeline;
pub mod verify;
pub mod waits;
pub mod world;
