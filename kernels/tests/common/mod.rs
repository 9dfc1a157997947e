//! Shared helpers for the kernel tests: machines, layouts, a small random generator.
#![allow(dead_code)]

use mnsim_arch::{DType, Machine, TensorLayout, from_ron, preset};

/// A preset machine.
pub fn machine(name: &str) -> Machine {
    preset(name).unwrap()
}

/// A small what-if machine: L1B 2 → MAB 2 → PE 2 (8 PE), the matrix unit at MAB.
/// f32 matrix tile 2×2×2 at 8 FLOP/cycle (2 cycles per tile); no f64 matrix rate.
pub fn mini() -> Machine {
    from_ron(
        r#"(
        name: "mini",
        clock_ghz: 1.0,
        word_bytes: 8,
        levels: [
            (name: "Board", count: 1, addressable: false),
            (name: "L1B", count: 2, memory: (name: "L1BM", bytes: 65536)),
            (name: "MAB", count: 2),
            (name: "PE", count: 2, memory: (name: "LM", bytes: 65536)),
        ],
        links: {
            "Board": (
                broadcast: (parent: 8.0, child: 8.0, latency: 1),
                distribute: (parent: 8.0, child: 8.0, latency: 1),
                gather: (parent: 8.0, child: 8.0, latency: 1),
                reduce: (parent: 8.0, child: 8.0, latency: 1),
            ),
            "L1B": (
                broadcast: (parent: 8.0, child: 8.0, latency: 1),
                distribute: (parent: 8.0, child: 8.0, latency: 1),
                gather: (parent: 8.0, child: 8.0, latency: 1),
                reduce: (parent: 8.0, child: 8.0, latency: 1),
            ),
        },
        dram: (level: "Board", bytes: 1048576, bytes_per_cycle: 8.0, burst_bytes: 8),
        compute: (
            vector: {F64: 1.0, F32: 2.0, F16: 4.0},
            matrix: (
                level: "MAB",
                flops: {F32: 8.0, F16: 16.0},
                tile: {F32: (m: 2, n: 2, k: 2), F16: (m: 2, n: 2, k: 4)},
            ),
        ),
    )"#,
    )
    .unwrap()
}

/// Binds a layout, panicking with the layout error.
pub fn lay(text: &str, m: &Machine, shape: &[u64], dtype: DType) -> TensorLayout {
    TensorLayout::parse(text, m, Some(shape), dtype)
        .unwrap_or_else(|e| panic!("layout {text} on {}: {e}", m.name))
}

/// SplitMix64: a tiny deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    pub fn values(&mut self, n: u64) -> Vec<f64> {
        (0..n).map(|_| self.unit()).collect()
    }
    pub fn shape(&mut self, rank: usize, max: u64) -> Vec<u64> {
        (0..rank).map(|_| self.range(1, max + 1)).collect()
    }
}

/// Product of the dimensions.
pub fn numel(s: &[u64]) -> u64 {
    s.iter().product()
}

/// Row-major linear index.
pub fn linear(shape: &[u64], idx: &[u64]) -> usize {
    idx.iter().zip(shape).fold(0u64, |l, (i, d)| l * d + i) as usize
}

/// Every index of `shape`, row-major.
pub fn indices(shape: &[u64]) -> Vec<Vec<u64>> {
    let n = numel(shape);
    (0..n)
        .map(|mut l| {
            let mut idx = vec![0u64; shape.len()];
            for i in (0..shape.len()).rev() {
                idx[i] = l % shape[i];
                l /= shape[i];
            }
            idx
        })
        .collect()
}

/// A random layout of `padded` on `mini` (L1B 2 → MAB 2 → PE 2): each level splits a
/// random axis that its factor divides (at a random place in the group), holds the
/// tensor at its position 0 only (`1_PE`) or is replicated; the logical shape may be smaller than `padded` (a pad prefix).
pub fn random_layout(rng: &mut Rng, padded: &[u64], logical: &[u64]) -> String {
    let rank = padded.len();
    let mut rest = padded.to_vec();
    let mut groups: Vec<Vec<String>> = vec![Vec::new(); rank];
    let mut bcast = Vec::new();
    for name in ["L1B", "MAB", "PE"] {
        let a = rng.range(0, rank as u64 + 1) as usize;
        if a < rank && rest[a].is_multiple_of(2) {
            let at = rng.range(0, groups[a].len() as u64 + 1) as usize;
            groups[a].insert(at, format!("2_{name}"));
            rest[a] /= 2;
        } else if rng.range(0, 4) == 0 {
            // Position 0 of the level only.
            let a = rng.range(0, rank as u64) as usize;
            groups[a].insert(0, format!("1_{name}"));
        } else {
            bcast.push(name);
        }
    }
    for (a, g) in groups.iter_mut().enumerate() {
        // The memory rest, sometimes in two pieces around the level sub-axes.
        let r = rest[a];
        let split = (2..r).find(|f| r.is_multiple_of(*f) && rng.range(0, 2) == 0);
        match split {
            Some(f) if !g.is_empty() => {
                g.insert(0, f.to_string());
                g.push((r / f).to_string());
            }
            _ => {
                let at = rng.range(0, g.len() as u64 + 1) as usize;
                g.insert(at, r.to_string());
            }
        }
    }
    let pad = (logical != padded).then_some(logical);
    mnsim_arch::layout::layout_text(pad, &groups, &bcast)
}
