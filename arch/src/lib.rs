//! `mnsim-arch`: what the machine is and how data is addressed on it.
//!
//! Pure: machine descriptions and presets, the TensorLayout algebra, XLA shapes and
//! layouts, dynamic dimensions. No ECS, no I/O, no timing.

pub mod dtype;
pub mod layout;
pub mod machine;
pub mod shape;

pub use dtype::DType;
pub use layout::{LayoutError, LayoutExpr, TensorLayout};
pub use machine::Machine;
pub use shape::{Dim, Shape, ShapeError, XlaLayout};
