//! `mnsim-core`: the simulator's lowest layers, which every other crate of `sim/` builds
//! on: the typed program (`program`: tensors, ops, places and plans by id), and the leaf
//! modules `diag`, `ids`, `input`, `limits` and `signals`. It knows no file format, no
//! engine and no planner (ARCHITECTURE.md, crates).

pub mod diag;
pub mod ids;
pub mod input;
pub mod limits;
pub mod program;
pub mod signals;
