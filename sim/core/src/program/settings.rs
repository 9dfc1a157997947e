//! How a program runs (its mode and schedule), and what the machine's DRAM can hold of
//! it: settings and checks every layer that runs a program reads.

use mnsim_arch::{DType, Machine};
use mnsim_reports::human_bytes;
use serde::{Deserialize, Serialize};

/// How a scenario runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Move and compute real values.
    Functional,
    /// Count bytes and cycles only (same cycles as functional).
    #[default]
    Timing,
}

impl Mode {
    /// `"functional"` or `"timing"`, as reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Functional => "functional",
            Mode::Timing => "timing",
        }
    }
}

/// How ops are placed in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Schedule {
    /// Each op starts when the previous one ends (docs/model.md, op after op).
    Sequential,
    /// Transfers overlap compute (docs/model.md, the schedule).
    #[default]
    Overlapped,
}

impl Schedule {
    /// `sequential` or `overlapped`, as reports and the command line write it.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Sequential => "sequential",
            Schedule::Overlapped => "overlapped",
        }
    }
}

/// A tensor the machine's DRAM cannot hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DramError {
    /// Its size in bytes does not fit 64 bits.
    #[error(
        "tensor `{name}` ({dtype}[{}]) is too large to address: its size in bytes exceeds 2^64",
        join(dims)
    )]
    Unaddressable {
        name: String,
        dtype: &'static str,
        dims: Vec<u64>,
    },
    /// It needs more bytes than the machine's DRAMs have: its shape and size, and the
    /// DRAM's, in units a person reads.
    #[error(
        "tensor `{name}` ({dtype}[{}]: {}) does not fit in DRAM, which holds a copy of every \
         tensor: {machine} has {} of DRAM{}",
        join(dims),
        human_bytes(*bytes),
        human_bytes(*capacity),
        if *nodes > 1 { format!(" ({nodes} × {})", human_bytes(*per_node)) } else { String::new() }
    )]
    TooLarge {
        name: String,
        dtype: &'static str,
        dims: Vec<u64>,
        bytes: u64,
        machine: String,
        capacity: u64,
        /// The DRAM nodes and the bytes of each.
        nodes: u64,
        per_node: u64,
    },
}

/// Dimensions as a shape writes them: `1024,512`.
fn join(dims: &[u64]) -> String {
    let v: Vec<String> = dims.iter().map(u64::to_string).collect();
    v.join(",")
}

/// DRAM bytes of the whole machine: every DRAM node's.
pub fn dram_capacity(m: &Machine) -> u64 {
    let nodes = m.dram_level_index().map_or(1, |d| m.nodes_at(d));
    m.dram.bytes.saturating_mul(nodes)
}

/// Checks that a tensor of `runtime` elements of `dtype` fits the machine's DRAM;
/// returns its bytes.
pub fn check_dram(
    m: &Machine,
    name: &str,
    dtype: DType,
    runtime: &[u64],
) -> Result<u64, DramError> {
    let elems = runtime.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
    let Some(bytes) = elems.and_then(|e| e.checked_mul(dtype.bytes())) else {
        return Err(DramError::Unaddressable {
            name: name.to_string(),
            dtype: dtype.name(),
            dims: runtime.to_vec(),
        });
    };
    let capacity = dram_capacity(m);
    if bytes > capacity {
        return Err(DramError::TooLarge {
            name: name.to_string(),
            dtype: dtype.name(),
            dims: runtime.to_vec(),
            bytes,
            machine: m.name.clone(),
            capacity,
            nodes: m.dram_level_index().map_or(1, |d| m.nodes_at(d)),
            per_node: m.dram.bytes,
        });
    }
    Ok(bytes)
}
