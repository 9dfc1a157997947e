//! Verification as an observer of the run: a host reference (f64, rounded through each
//! dtype like the machine) follows the program op by op, and every stored tensor is
//! compared with it, within the kernels' tolerances (bit-exact for pure moves).
//!
//! Invariant: the reference never influences the simulation; it reads the engine's
//! results after each op and keeps nothing unless verification is on.

use crate::engine::Resident;
use crate::program::{ReduceOp, TensorId};
use mnsim_arch::DType;
use mnsim_kernels::elem;
use std::collections::BTreeMap;

/// A tensor's reference value on the host: row-major over its run-time shape, and the
/// tolerance (absolute, relative) its simulated value must meet (0 for pure moves:
/// bit-exact).
#[derive(Clone, Debug)]
struct RefValue {
    dims: Vec<u64>,
    vals: Vec<f64>,
    tol: (f64, f64),
}

/// Element bytes of `dtype` as values.
pub fn to_f64(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(dtype.bytes() as usize)
        .map(|c| elem::read(dtype, c))
        .collect()
}

/// Rounds through the dtype (the reference of a value the machine stores).
fn round(dtype: DType, v: f64) -> f64 {
    let mut b = [0u8; 8];
    elem::write(dtype, v, &mut b[..dtype.bytes() as usize]);
    elem::read(dtype, &b[..dtype.bytes() as usize])
}

/// The host reference of a run and the outcome of its comparisons.
#[derive(Clone, Debug, Default)]
pub struct Reference {
    on: bool,
    values: BTreeMap<TensorId, RefValue>,
    verified: Option<bool>,
    mismatches: Vec<String>,
}

impl Reference {
    /// A reference that follows the run only when `on`.
    pub fn new(on: bool) -> Reference {
        Reference {
            on,
            ..Reference::default()
        }
    }

    pub fn is_on(&self) -> bool {
        self.on
    }

    /// A tensor's initial contents (row-major over `dims`).
    pub fn declare(&mut self, t: TensorId, dtype: DType, dims: &[u64], data: &[u8]) {
        if self.on {
            self.values.insert(
                t,
                RefValue {
                    dims: dims.to_vec(),
                    vals: to_f64(dtype, data),
                    tol: (0.0, 0.0),
                },
            );
        }
    }

    /// A move into `to` (a Relayout or Broadcast with `out`).
    pub fn copy(&mut self, from: TensorId, to: Option<TensorId>) {
        if let (Some(o), Some(v)) = (to, self.values.get(&from).cloned()) {
            self.values.insert(o, v);
        }
    }

    /// A Gather of the rows of `table` at `indices` into `out`: copies (bit-exact), each
    /// index clamped into the table's first axis as the engine clamps it.
    pub fn gather(&mut self, table: TensorId, indices: TensorId, out: TensorId) {
        let (Some(t), Some(ix)) = (self.values.get(&table), self.values.get(&indices)) else {
            return;
        };
        let Some((&rows, inner)) = t.dims.split_first() else {
            return;
        };
        let row = inner.iter().product::<u64>() as usize;
        let mut vals = Vec::with_capacity(ix.vals.len() * row);
        for &v in &ix.vals {
            let r = crate::engine::row_of(v, rows) as usize;
            vals.extend_from_slice(&t.vals[r * row..(r + 1) * row]);
        }
        let dims = ix.dims.iter().chain(inner).copied().collect();
        let tol = t.tol;
        self.values.insert(out, RefValue { dims, vals, tol });
    }

    /// A Reduce of `tensor` (resident as `r` before it) over addressable level `li` (a
    /// position among its layout's levels). A partial tensor's
    /// reference already holds the whole sum; combining the copies of a replicated tensor
    /// folds it with itself once per position, rounding in the dtype like the machine.
    pub fn reduce(
        &mut self,
        r: &Resident,
        dtype: DType,
        tensor: TensorId,
        li: usize,
        op: ReduceOp,
        out: Option<TensorId>,
    ) {
        let Some(v) = self.values.get(&tensor).cloned() else {
            return;
        };
        let folded = if r.partial.contains(&li) {
            v
        } else {
            let fan = r.layout.levels()[li].fanout;
            let vals = v
                .vals
                .iter()
                .map(|&x| {
                    (1..fan).fold(x, |acc, _| match op {
                        ReduceOp::Add => round(dtype, acc + x),
                        _ => acc,
                    })
                })
                .collect();
            RefValue { vals, ..v }
        };
        self.values.insert(out.unwrap_or(tensor), folded);
    }

    /// A kernel `k` of `inputs` into `out` (of `dtype`): the reference computes it on the
    /// host; its tolerance is the kernel's plus its inputs' (scaled loosely by the op).
    pub fn kernel(
        &mut self,
        k: &mnsim_kernels::Kernel,
        inputs: &[TensorId],
        out: TensorId,
        dtype: DType,
    ) {
        let ins: Option<Vec<RefValue>> =
            inputs.iter().map(|t| self.values.get(t).cloned()).collect();
        let Some(ins) = ins else { return };
        let shapes: Vec<&[u64]> = ins.iter().map(|v| v.dims.as_slice()).collect();
        let Ok(out_dims) = mnsim_kernels::output_shape(k, &shapes) else {
            return;
        };
        let args: Vec<(&[u64], &[f64])> = ins
            .iter()
            .map(|v| (v.dims.as_slice(), v.vals.as_slice()))
            .collect();
        let vals: Vec<f64> = mnsim_kernels::reference(k, &args, &out_dims)
            .into_iter()
            .map(|x| round(dtype, x))
            .collect();
        let n = mnsim_kernels::reduced_extents(k, &shapes)
            .unwrap_or_default()
            .iter()
            .fold(1u64, |a, &b| a.saturating_mul(b))
            .max(1);
        let own = mnsim_kernels::tolerance(dtype, k, n);
        let inherited = ins.iter().fold((0.0f64, 0.0f64), |a, v| {
            (a.0.max(v.tol.0), a.1.max(v.tol.1))
        });
        let tol = (own.0 + inherited.0 * 2.0, own.1 + inherited.1 * 2.0);
        self.values.insert(
            out,
            RefValue {
                dims: out_dims,
                vals,
                tol,
            },
        );
    }

    /// A Store of `tensor` (`name`, for the outcome): `got` is its DRAM content,
    /// row-major (`None`: nothing there).
    pub fn store(&mut self, (tensor, name): (TensorId, &str), dtype: DType, got: Option<Vec<u8>>) {
        if !self.on {
            return;
        }
        let got = got.map(|b| to_f64(dtype, &b));
        let ok = match (got, self.values.get(&tensor)) {
            (Some(g), Some(w)) => {
                g.len() == w.vals.len()
                    && g.iter().zip(&w.vals).all(|(&g, &x)| {
                        if w.tol == (0.0, 0.0) {
                            g == x || (g.is_nan() && x.is_nan())
                        } else {
                            mnsim_kernels::within(g, x, w.tol)
                        }
                    })
            }
            _ => false,
        };
        if !ok {
            self.mismatches.push(name.to_string());
        }
        self.verified = Some(self.verified.unwrap_or(true) && ok);
    }

    /// Whether every comparison matched (`None`: none ran), and the tensors that did not.
    pub fn outcome(&self) -> (Option<bool>, Vec<String>) {
        (self.verified, self.mismatches.clone())
    }
}
