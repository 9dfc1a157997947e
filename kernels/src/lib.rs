//! `mnsim-kernels`: the SIMD kernels on MN-Core shards — their shapes, index maps,
//! legality rules, cost, reference values and per-element evaluation — and the element
//! codec they share with the network.
//!
//! Pure: no ECS, no I/O.

pub mod elem;
pub mod kernel;
pub mod legality;
pub mod reference;
pub mod shape;
pub mod tolerance;

pub use kernel::{BinaryOp, ErrorKind, Kernel, KernelError, ReduceKind, UnaryOp, gelu};
pub use legality::{Legality, Unit, check};
pub use reference::{eval, reference};
pub use shape::{AxisSource, InputMap, broadcast, index_map, output_shape, reduced_extents};
pub use tolerance::{tolerance, within};
