//! The placement map of a bound layout and what is computed from it: closed-form
//! counts, the map and its inverse, the canonical form, per-axis tables, and a PE's
//! shard with its walk.

mod canonical;
mod counts;
mod place;
mod shard;
mod tables;
mod walk;

pub use counts::LevelStat;
pub use shard::Shard;
pub use tables::AxisTables;
pub use walk::{Run, RunStep};
