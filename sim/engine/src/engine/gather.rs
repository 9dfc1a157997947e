//! Gather: the rows of a DRAM tensor that indices in LM name, loaded into LM (an
//! embedding lookup, a row of a table at a run-time position). The rows are the
//! result's DRAM image, row-major; the op is that image's Load in the result's layout,
//! reported as `Gather` and waiting for the indices: the gathered rows' bytes on their
//! path down the tree, whichever rows (timing mode reads no index). Functional mode
//! reads the indices from LM and copies the rows they name, each index clamped into
//! the table's first axis.

use super::dataplane::DramAddr;
use super::{DramTensor, Engine, ErrorKind, OpSettings, Partial, SimError};
use crate::program::TensorId;
use mnsim_arch::{TensorLayout, XlaLayout};
use mnsim_reports::OpReport;

/// The row an index value names in a table of `rows` rows: clamped into `[0, rows − 1]`.
pub fn row_of(v: f64, rows: u64) -> u64 {
    mnsim_kernels::indexed::clamp_start(v, rows, 1)
}

impl Engine {
    /// Gather: `out[i.., r..] = table[indices[i..], r..]` into LM in `layout`.
    pub fn gather(
        &mut self,
        table: TensorId,
        indices: TensorId,
        out: TensorId,
        layout: TensorLayout,
    ) -> Result<OpReport, SimError> {
        self.op(OpSettings::default())
            .gather(table, indices, out, layout)
    }

    /// [`Engine::gather`], its result's stream holding `buffers` slices when given.
    pub(super) fn gather_op(
        &mut self,
        (table, indices, out, layout): (TensorId, TensorId, TensorId, TensorLayout),
        buffers: Option<i64>,
    ) -> Result<OpReport, SimError> {
        let tab = self.state.tensor(table)?;
        if tab.dram.is_none() {
            return Err(ErrorKind::NotInDram(tab.name.clone()).into());
        }
        let (tdtype, trt) = (tab.dtype, tab.runtime.clone());
        let idx = self.state.resident(indices)?.clone();
        if let Some(&p) = idx.partial.first() {
            return Err(self
                .state
                .partial(Partial::KernelInput, indices, &idx.layout, p));
        }
        let it = self.state.tensor(indices)?;
        if it.dtype.is_float() || it.dtype == mnsim_arch::DType::Pred {
            return Err(ErrorKind::GatherIndices {
                tensor: it.name.clone(),
                dtype: it.dtype,
            }
            .into());
        }
        let irt = it.runtime.clone();
        let o = self.state.tensor(out)?;
        let want: Vec<u64> = irt.iter().chain(trt.iter().skip(1)).copied().collect();
        if o.dtype != tdtype || o.runtime != want || trt.is_empty() {
            return Err(ErrorKind::GatherShape {
                out: o.name.clone(),
                out_dtype: o.dtype,
                out_dims: o.runtime.clone(),
                table: self.state.name(table).to_string(),
                dtype: tdtype,
                dims: trt,
                indices: irt,
                want,
            }
            .into());
        }
        let rank = o.runtime.len();
        let data = match self.functional() {
            None => Vec::new(),
            Some(f) => {
                let values = self.lm_values(f, indices, &idx);
                self.rows(table, &values)?
            }
        };
        self.state.tensors[out].dram = Some(DramTensor {
            layout: XlaLayout::default_for(rank),
            data,
        });
        let r = self.load_as("Gather", (out, layout), &[idx.region], buffers);
        // The image was the rows, not a copy of `out` of its own: nothing stays in DRAM.
        self.state.tensors[out].dram = None;
        r
    }

    /// A resident tensor's values, row-major over its run-time shape (read from one
    /// replica, as a Store reads it; nothing is charged).
    fn lm_values(
        &mut self,
        f: super::dataplane::Functional,
        t: TensorId,
        r: &super::Resident,
    ) -> Vec<f64> {
        let rank = self.state.tensors[t].runtime.len();
        let kept = self.state.tensors[t].dram.take();
        self.move_store(f, t, r, &XlaLayout::default_for(rank));
        let s = &mut self.state.tensors[t];
        let bytes = s.dram.take().map(|d| d.data).unwrap_or_default();
        s.dram = kept;
        let eb = s.dtype.bytes() as usize;
        bytes
            .chunks_exact(eb)
            .map(|c| mnsim_kernels::elem::read(s.dtype, c))
            .collect()
    }

    /// The rows of `table` that `values` name (each clamped), row-major.
    fn rows(&self, table: TensorId, values: &[f64]) -> Result<Vec<u8>, SimError> {
        let t = self.state.tensor(table)?;
        let Some(d) = t.dram.as_ref().filter(|d| !d.data.is_empty()) else {
            return Err(ErrorKind::NoDramData(t.name.clone()).into());
        };
        let eb = t.dtype.bytes() as usize;
        let rows = t.runtime[0];
        let row: u64 = t.runtime[1..].iter().product();
        let addr = DramAddr::new(&d.layout, &t.runtime);
        let mut out = Vec::with_capacity(values.len() * row as usize * eb);
        let mut idx = vec![0u64; t.runtime.len()];
        for &v in values {
            idx[0] = row_of(v, rows);
            for k in 0..row {
                let mut rest = k;
                for a in (1..idx.len()).rev() {
                    idx[a] = rest % t.runtime[a];
                    rest /= t.runtime[a];
                }
                let o = addr.offset(&idx) as usize * eb;
                out.extend_from_slice(&d.data[o..o + eb]);
            }
        }
        Ok(out)
    }
}
