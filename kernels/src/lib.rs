//! `mnsim-kernels`: the SIMD kernels on MN-Core shards — their legality rules, cost,
//! and functional implementation — and the element codec they share with the network.

pub mod elem;
