//! `mnsim-arch`: what the machine is and how data is addressed on it.
//!
//! Pure: machine descriptions and presets, the TensorLayout algebra, XLA shapes and
//! layouts, dynamic dimensions. No ECS, no I/O, no timing.

pub mod arith;
pub mod describe;
pub mod dtype;
pub mod energy;
pub mod knob_groups;
pub mod knobs;
pub mod layout;
pub mod machine;
pub mod presets;
pub mod shape;

pub use describe::{describe, peak_flops_per_cycle};
pub use dtype::DType;
pub use energy::Energy;
pub use knob_groups::{Amount, KnobGroup, glob_match};
pub use knobs::{KnobError, get_knob, knob_paths, parse_assignment, parse_sweep, set_knob};
pub use layout::{LayoutError, LayoutExpr, TensorLayout};
pub use machine::{Machine, MachineError, Num, TransferKind};
pub use presets::{PRESETS, from_ron, preset, preset_source};
pub use shape::{Dim, Shape, ShapeError, XlaLayout};
