pub mod graphs;
pub mod kernels;
