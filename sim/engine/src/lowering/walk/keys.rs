//! The keys of one variable of a walk (an output axis or a reduced variable): what
//! each of its indices contributes to the output's and the inputs' slices, distinct.
//!
//! A key is the tuple of contributions of one index: the output's (an output axis of a
//! stepped output) and each (input, axis) pair's taking its index from the variable.
//! Every contribution is constant on each run `[k·q, (k+1)·q)` of indices, `q` the gcd
//! of the radices of the `Time` sub-axes involved (the period), so one index per run is
//! read: a sample. A sub-axis's digits repeat every radix × size indices (its cycle), so
//! the keys do from the lcm of the cycles on, and the samples stop there. The samples'
//! keys are laid out as rows of a flat table, one column per contribution, filled
//! sub-axis by sub-axis: a sub-axis of radix `r` has one digit per run of `r / q`
//! samples. The rows are then sorted and deduplicated.

use super::Sub;
use mnsim_arch::arith::{gcd, lcm};
use std::ops::Range;

/// One variable of a walk: its distinct keys in increasing order.
pub(super) struct Var {
    /// Per key, the output's contribution (0 where the output has no steps).
    pub out: Vec<u64>,
    /// Per key, per input (one value per input of the walk), the sum of its axes'
    /// contributions.
    pub ins: Vec<u64>,
}

impl Var {
    /// The keys of a variable of `extent` indices: `own` the output's `Time` sub-axes
    /// on it (an output axis of a stepped output), `pairs` each (input, its axis's `Time`
    /// sub-axes) taking its index from it, of a walk of `inputs` inputs.
    pub fn of(extent: u64, own: Option<&[Sub]>, pairs: &[(usize, &[Sub])], inputs: usize) -> Var {
        let cols: Vec<&[Sub]> = own.into_iter().chain(pairs.iter().map(|p| p.1)).collect();
        let subs = || cols.iter().copied().flatten();
        let period = subs().fold(0, |q, s| gcd(q, s.0));
        let step = if period == 0 { extent.max(1) } else { period };
        // Indices from the lcm of the cycles on repeat the keys of those before.
        let cycle = subs().try_fold(1u64, |c, s| {
            let len = s.0.checked_mul(s.1)?;
            lcm(c, len)
        });
        let span = cycle.map_or(extent, |c| c.min(extent));
        let samples = if span == 0 { 0 } else { (span - 1) / step + 1 };
        let (w, samples) = (cols.len(), samples as usize);
        let mut rows = vec![0u64; samples * w];
        for (c, subs) in cols.iter().enumerate() {
            for &(radix, size, stride) in subs.iter() {
                // The period divides every radix (and is not 0 when there is one).
                add_digits(&mut rows, (w, c), radix / period, size, stride);
            }
        }
        let (keys, rows) = distinct(rows, w, samples);
        let skip = usize::from(own.is_some());
        let mut out = Vec::with_capacity(keys);
        let mut ins = vec![0u64; keys * inputs];
        for k in 0..keys {
            let row = &rows[k * w..(k + 1) * w];
            out.push(if own.is_some() { row[0] } else { 0 });
            for (&(i, _), &c) in pairs.iter().zip(&row[skip..]) {
                ins[k * inputs + i] += c;
            }
        }
        Var { out, ins }
    }

    /// Its keys.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Its distinct output contributions in order, each with the range of its keys
    /// (the keys are sorted by the output's contribution first).
    pub fn groups(&self) -> Vec<(u64, Range<usize>)> {
        let mut g: Vec<(u64, Range<usize>)> = Vec::new();
        for (k, &o) in self.out.iter().enumerate() {
            match g.last_mut() {
                Some((last, r)) if *last == o => r.end = k + 1,
                Some(_) | None => g.push((o, k..k + 1)),
            }
        }
        g
    }
}

/// Adds to column `c` of the rows (`w` values each) of `rows` the contribution of a
/// `Time` sub-axis of `size` and `stride` whose digit steps every `every` rows.
fn add_digits(rows: &mut [u64], (w, c): (usize, usize), every: u64, size: u64, stride: u64) {
    let n = rows.len() / w;
    if every >= n as u64 {
        // Digit 0 on every row.
        return;
    }
    for (r, run) in rows.chunks_mut(every as usize * w).enumerate() {
        let v = (r as u64 % size).saturating_mul(stride);
        if v == 0 {
            continue;
        }
        for row in run.chunks_exact_mut(w) {
            row[c] = row[c].saturating_add(v);
        }
    }
}

/// The distinct rows of `rows` (`samples` rows of `w` values), sorted: how many, and
/// their values.
fn distinct(mut rows: Vec<u64>, w: usize, samples: usize) -> (usize, Vec<u64>) {
    match w {
        // Rows without values: one key if there is a sample.
        0 => (samples.min(1), rows),
        1 => {
            rows.sort_unstable();
            rows.dedup();
            (rows.len(), rows)
        }
        _ => {
            let mut v: Vec<&[u64]> = rows.chunks_exact(w).collect();
            v.sort_unstable();
            v.dedup();
            (v.len(), v.concat())
        }
    }
}
