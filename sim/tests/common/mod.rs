pub mod graphs;
pub mod kernels;
pub mod study;
