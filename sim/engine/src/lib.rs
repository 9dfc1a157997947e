//! `mnsim-engine`: the machine a program runs on: the schedule (`timeline`), the tree
//! network (`net`), the ECS world (`world`), transfers lowered to walks (`lowering`) and
//! the engine that runs a program's ops (`engine`). It builds on `mnsim-core` only: it
//! knows no scenario file, no planner and no importer (ARCHITECTURE.md, crates).

pub mod engine;
pub mod lowering;
pub mod net;
pub mod timeline;
pub mod world;

pub use mnsim_core::{diag, ids, input, limits, program, signals};
