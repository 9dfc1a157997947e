//! Per-axis placement tables (`AxisTables`): a placement as the sum of one row per
//! logical axis, without division per element.

use crate::layout::{Class, TensorLayout};

/// Per-axis placement tables: the contribution of every index value of every logical
/// axis to each level position, the word, the slot and the step. A placement is then
/// the sum of one row per axis — no allocation, no division per element.
#[derive(Clone, Debug)]
pub struct AxisTables {
    /// Values per row: one per addressable level, then addr, w, t.
    width: usize,
    /// `rows[g]` holds `padded[g] * width` values.
    rows: Vec<Vec<u64>>,
}

impl AxisTables {
    /// Values per row (levels + 3).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Writes into `out` (length `width()`): positions per level (replicated levels
    /// read 0), then addr, w, t. `idx` must be within the padded shape.
    #[inline]
    pub fn locate(&self, idx: &[u64], out: &mut [u64]) {
        out.fill(0);
        for (g, &i) in idx.iter().enumerate() {
            let row = &self.rows[g][i as usize * self.width..(i as usize + 1) * self.width];
            for (o, r) in out.iter_mut().zip(row) {
                *o += r;
            }
        }
    }
}

impl TensorLayout {
    /// Builds the per-axis placement tables (memory: Σ padded extents × (levels + 3)).
    pub fn axis_tables(&self) -> AxisTables {
        let nl = self.levels.len();
        let width = nl + 3;
        let rows = self
            .groups
            .iter()
            .enumerate()
            .map(|(g, subs)| {
                let n = self.padded[g] as usize;
                let mut row = vec![0u64; n * width];
                for i in 0..n {
                    let mut radix = 1u64;
                    for s in subs.iter().rev() {
                        let v = ((i as u64 / radix) % s.size) * s.stride;
                        let col = match s.class {
                            Class::Level(l) => l,
                            Class::Mem => nl,
                            Class::W => nl + 1,
                            Class::Time => nl + 2,
                        };
                        row[i * width + col] += v;
                        radix = radix.saturating_mul(s.size);
                    }
                }
                row
            })
            .collect();
        AxisTables { width, rows }
    }
}
