//! `mnsim-kernels`: the SIMD kernels on MN-Core shards — their shapes, index maps,
//! legality rules, cost, reference values and per-element evaluation — and the element
//! codec they share with the network.
//!
//! Pure: no ECS, no I/O. The engine calls, per kernel op:
//! [`output_shape`] → [`check`] (legal? partial over which levels?) → [`cost()`]
//! (cycles) → [`eval`] per output element in functional mode ([`reduced_share`] and
//! [`eval_share`] where the output is partial); `verify` compares with
//! [`reference()`] within [`tolerance()`]. See `docs/kernels.md`.
//!
//! Each of those asks the kernel through one trait, [`KernelFamily`], which every kernel
//! implements once ([`family`]); [`Kernel::with_family`] is the one match over the
//! [`Kernel`] variants.

#![warn(missing_docs)]

pub mod conv;
pub mod cost;
pub mod elem;
pub mod eltwise;
pub mod family;
pub mod indexed;
pub mod kernel;
pub mod legality;
pub mod minifloat;
pub mod norm;
pub mod precision;
pub mod quant;
pub mod reference;
pub mod shape;
pub mod tolerance;
mod training;
pub mod view;
pub mod window;

pub use conv::{Conv, ConvPass, WeightsFormat};
pub use cost::{KernelCost, cost, per_unit_extent};
pub use eltwise::{Act, Cmp, Eltwise};
pub use family::{ByPositions, KernelFamily, Rate, Traits};
pub use kernel::{BinaryOp, ErrorKind, Kernel, KernelError, ReduceKind, UnaryOp, gelu};
pub use legality::{
    Legality, Scan, ScanMemo, ScanSet, Unit, check, check_unexplained, is_legal, reduced_share,
};
pub use norm::{Norm, NormKind};
pub use quant::{Quant, QuantDir, QuantParams};
pub use reference::{eval, eval_share, reference};
pub use shape::{
    AxisSource, Gemm, InputMap, broadcast, gemm, index_map, output_shape, reduced_extents,
};
pub use tolerance::{tolerance, within};
pub use training::{training_axes, training_eps};
pub use view::{View, is_view, view_layout, view_of};
pub use window::{CoordMode, Interp, InterpMode, Pool, PoolKind, map_of as window_map};
