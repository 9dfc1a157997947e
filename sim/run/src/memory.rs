//! How much host memory a functional run needs, estimated before it allocates anything,
//! so a run too large for the machine is refused with a figure instead of aborting
//! half-way.

use crate::scenario::{Mode, Resolved};

/// The host memory a functional run needs at its peak, by what holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Every tensor's DRAM copy (its elements × element bytes).
    pub dram: u64,
    /// Every PE's LM as far as the program's layouts fill it: the LM allocator's
    /// high-water mark (a stream's region keeps all its time steps) on every PE. LMs
    /// grow to their high-water mark only.
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

/// The estimate for `res`, whose layouts fill `lm_bytes` of every PE's LM (the
/// allocator's high-water mark: [`crate::engine::Engine::lm_high_water_bytes`] after a
/// timing run of the same plan; a stream's region keeps every `Time` step, so it may
/// exceed the LM's size); `None` in timing mode, which holds no element data.
pub fn estimate(res: &Resolved, lm_bytes: u64) -> Option<Estimate> {
    if res.mode != Mode::Functional {
        return None;
    }
    let mut e = Estimate {
        dram: 0,
        lm: res.machine.leaf_count().saturating_mul(lm_bytes),
        verify: 0,
    };
    for t in res.program.tensors.values() {
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

/// The environment variable that caps the memory a functional run may use, in place of
/// the machine's available memory: for tests, or to leave room for other work. Bytes
/// (`4294967296`), or a number with a binary unit `K`, `M`, `G` or `T` (`4096M`,
/// `3.5G`).
pub const LIMIT_VAR: &str = "MNSIM_MEMORY_LIMIT";

/// What keeps a functional run from the host's memory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// [`LIMIT_VAR`] set to something that is not a size.
    #[error(
        "{LIMIT_VAR}={0:?} is not a size: give bytes (4294967296) or a number with K, M, G or T (4096M, 3.5G)"
    )]
    NotASize(String),
    /// [`LIMIT_VAR`] set to something that is not text.
    #[error("{LIMIT_VAR}={0} is not a size")]
    NotText(String),
    /// The run needs more than the host has.
    #[error(
        "a functional run needs about {} of memory (tensors in DRAM {}, PE local memories {}, \
         verification {}), more than the {} available; run it in timing mode (--mode timing) \
         for the same cycles without element data{}",
        gib(.need.total()),
        gib(.need.dram),
        gib(.need.lm),
        gib(.need.verify),
        gib(*.limit),
        if *.verify { ", or without `verify`" } else { "" }
    )]
    TooLarge {
        need: Estimate,
        limit: u64,
        verify: bool,
    },
}

/// A size as [`LIMIT_VAR`] takes it: bytes, or a number followed by `K`, `M`, `G` or `T`
/// (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, MemoryError> {
    let t = text.trim();
    let bad = || MemoryError::NotASize(text.to_string());
    let (num, scale): (&str, u64) = match t.as_bytes().last() {
        Some(b'K' | b'k') => (&t[..t.len() - 1], 1 << 10),
        Some(b'M' | b'm') => (&t[..t.len() - 1], 1 << 20),
        Some(b'G' | b'g') => (&t[..t.len() - 1], 1 << 30),
        Some(b'T' | b't') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let digits = num.chars().filter(char::is_ascii_digit).count();
    let dots = num.chars().filter(|&c| c == '.').count();
    // Digits with at most one point (bytes are whole), nothing else.
    if digits == 0 || digits + dots != num.len() || dots > usize::from(scale > 1) {
        return Err(bad());
    }
    if dots == 0 {
        return num
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(bad);
    }
    let bytes = num.parse::<f64>().map_err(|_| bad())? * scale as f64;
    if !(bytes.is_finite() && bytes < u64::MAX as f64) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// Bytes a run may use: [`LIMIT_VAR`] if set (an error if it is not a size), else
/// `MemAvailable` of `/proc/meminfo`; `Ok(None)` when neither is known (no check then).
pub fn available() -> Result<Option<u64>, MemoryError> {
    match std::env::var(LIMIT_VAR) {
        Ok(v) => return parse_size(&v).map(Some),
        Err(std::env::VarError::NotUnicode(v)) => {
            return Err(MemoryError::NotText(format!("{v:?}")));
        }
        Err(std::env::VarError::NotPresent) => {}
    }
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return Ok(None);
    };
    Ok(info
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|kib| kib.saturating_mul(1024)))
}

fn gib(b: u64) -> String {
    mnsim_reports::human_bytes(b)
}

/// `Err` with the estimate and a way out when a functional run of `res` (its layouts
/// filling `lm_bytes` of every LM) needs more than `limit` bytes.
pub fn check(res: &Resolved, lm_bytes: u64, limit: Option<u64>) -> Result<(), MemoryError> {
    let (Some(e), Some(limit)) = (estimate(res, lm_bytes), limit) else {
        return Ok(());
    };
    if e.total() <= limit {
        return Ok(());
    }
    Err(MemoryError::TooLarge {
        need: e,
        limit,
        verify: res.verify,
    })
}

/// Above this many element operations (about 7·10^10) a functional run of an imported
/// graph would take the host minutes or hours: `mnsim run` runs it in timing mode
/// instead, and says so ([`functional_work`]).
pub const FUNCTIONAL_WORK_LIMIT: f64 = (1u64 << 36) as f64;

/// The element operations a functional run computes on the PEs, from a timing run's
/// report of the same plan: every computing op's FLOP (or, for one that moves data, its
/// elements) over the share of its PEs doing useful work, since every replica of a
/// value is computed again on its PE. `leaves` (the machine's PEs) bounds how few PEs
/// an op can use.
pub fn functional_work(report: &mnsim_reports::Report, leaves: u64) -> f64 {
    let floor = 1.0 / leaves.max(1) as f64;
    report
        .ops
        .iter()
        .filter_map(|o| {
            let work = o.flops?.max(o.padded_elems) as f64;
            Some(work / o.utilisation.max(floor))
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_in_bytes_or_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 4096M "), Ok(4096 << 20));
        assert_eq!(parse_size("3.5G"), Ok(7 << 29));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        for bad in [
            "",
            "abc",
            "1.5GB",
            "-1",
            "1e9",
            "1.5",
            "1..5G",
            ".",
            "G",
            "99999999999T",
            "18446744073709551616",
        ] {
            let e = parse_size(bad).expect_err(bad).to_string();
            assert!(
                e.contains("MNSIM_MEMORY_LIMIT") && e.contains("not a size"),
                "{e}"
            );
        }
    }
}
