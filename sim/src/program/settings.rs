//! How a program runs (its mode and schedule), and what the machine's DRAM can hold of
//! it: settings and checks every layer that runs a program reads.

use mnsim_arch::{DType, Machine};
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
        "tensor `{name}` ({dtype}{dims:?}) is too large to address: its size in bytes exceeds 2^64"
    )]
    Unaddressable {
        name: String,
        dtype: &'static str,
        dims: Vec<u64>,
    },
    /// It needs more bytes than the machine's DRAMs have.
    #[error("tensor `{name}` needs {bytes} bytes of DRAM but {machine} has {capacity}")]
    TooLarge {
        name: String,
        bytes: u64,
        machine: String,
        capacity: u64,
    },
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
            bytes,
            machine: m.name.clone(),
            capacity,
        });
    }
    Ok(bytes)
}
