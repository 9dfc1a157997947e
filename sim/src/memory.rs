//! How much host memory a functional run needs, estimated before it allocates anything,
//! so a run too large for the machine is refused with a figure instead of aborting
//! half-way.

use crate::scenario::{Mode, Resolved};

/// The host memory a functional run needs at its peak, by what holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Every tensor's DRAM copy (its elements × element bytes).
    pub dram: u64,
    /// Every PE's LM as far as the program's layouts fill it: the sum of every laid-out
    /// result's footprint (all time steps), at most the LM's size. LMs grow to their
    /// high-water mark only, so this bounds them without charging unused LM.
    pub lm: u64,
    /// The host reference `verify` keeps: 8 bytes (`f64`) per element of every tensor.
    pub verify: u64,
}

impl Estimate {
    pub fn total(&self) -> u64 {
        self.dram
            .saturating_add(self.lm)
            .saturating_add(self.verify)
    }
}

/// The estimate for `res`; `None` in timing mode, which holds no element data.
pub fn estimate(res: &Resolved) -> Option<Estimate> {
    if res.mode != Mode::Functional {
        return None;
    }
    let wb = res.machine.word_bytes;
    let per_pe = res
        .ops
        .iter()
        .filter_map(|op| match &op.layout {
            Some(crate::scenario::LayoutRef::Bound(l)) => Some(
                l.footprint_words()
                    .saturating_mul(l.time_span())
                    .saturating_mul(wb),
            ),
            _ => None,
        })
        .fold(0u64, u64::saturating_add)
        .min(res.machine.leaf_memory_bytes());
    let mut e = Estimate {
        dram: 0,
        lm: res.machine.leaf_count().saturating_mul(per_pe),
        verify: 0,
    };
    for t in res.tensors.values() {
        let elems = t
            .runtime_dims
            .iter()
            .fold(1u64, |a, &d| a.saturating_mul(d));
        e.dram = e.dram.saturating_add(elems.saturating_mul(t.dtype.bytes()));
        if res.verify {
            e.verify = e.verify.saturating_add(elems.saturating_mul(8));
        }
    }
    Some(e)
}

/// The environment variable that caps the memory a functional run may use (bytes), in
/// place of the machine's available memory: for tests, or to leave room for other work.
pub const LIMIT_VAR: &str = "MNSIM_MEMORY_LIMIT";

/// Bytes a run may use: `MNSIM_MEMORY_LIMIT` if set, else `MemAvailable` of
/// `/proc/meminfo`; `None` when neither is known (no check then).
pub fn available() -> Option<u64> {
    if let Ok(v) = std::env::var(LIMIT_VAR) {
        return v.trim().parse().ok();
    }
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

fn gib(b: u64) -> String {
    mnsim_reports::human_bytes(b)
}

/// `Err` with the estimate and a way out when a functional run of `res` needs more than
/// `limit` bytes.
pub fn check(res: &Resolved, limit: Option<u64>) -> Result<(), String> {
    let (Some(e), Some(limit)) = (estimate(res), limit) else {
        return Ok(());
    };
    if e.total() <= limit {
        return Ok(());
    }
    Err(format!(
        "a functional run needs about {} of memory (tensors in DRAM {}, PE local memories {}, \
         verification {}), more than the {} available; run it in timing mode (--mode timing) \
         for the same cycles without element data{}",
        gib(e.total()),
        gib(e.dram),
        gib(e.lm),
        gib(e.verify),
        gib(limit),
        if res.verify {
            ", or without `verify`"
        } else {
            ""
        }
    ))
}
