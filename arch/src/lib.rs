//! `mnsim-arch`: what the machine is and how data is addressed on it.
//!
//! Pure: machine descriptions and presets, the TensorLayout algebra, XLA shapes and
//! layouts, dynamic dimensions. No ECS, no I/O, no timing.

pub mod dtype;
pub mod machine;

pub use dtype::DType;
pub use machine::{Machine, MachineError, TransferKind};
