//! Gather: the rows of a DRAM tensor that indices in LM name, loaded into LM (an
//! embedding lookup, a row of a table at a run-time position). The rows are the
//! result's DRAM image, row-major; the op is that image's Load in the result's layout,
//! reported as `Gather` and waiting for the indices: the gathered rows' bytes on their
//! path down the tree, whichever rows (timing mode reads no index). Functional mode
//! reads the indices from LM and copies the rows they name, each index clamped into
//! the table's first axis.

use super::dataplane::DramAddr;
use super::{DramTensor, Engine, SimError, err};
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
        table: &str,
        indices: &str,
        out: &str,
        layout: TensorLayout,
    ) -> Result<OpReport, SimError> {
        let tab = self.state(table)?;
        if tab.dram.is_none() {
            return err(format!(
                "Gather: table `{table}` is not in DRAM: give it an `init` or Store it first"
            ));
        }
        let (tdtype, trt) = (tab.dtype, tab.runtime.clone());
        let idx = self.resident(indices)?.clone();
        if let Some(&p) = idx.partial.first() {
            return err(format!(
                "Gather: indices `{indices}` hold partial results over {}: Reduce them first",
                idx.layout.levels()[p].name
            ));
        }
        let it = self.state(indices)?;
        let (idtype, irt) = (it.dtype, it.runtime.clone());
        if idtype.is_float() || idtype == mnsim_arch::DType::Pred {
            return err(format!(
                "Gather: indices `{indices}` are {idtype}, not integers"
            ));
        }
        let o = self.state(out)?;
        let (odtype, ort) = (o.dtype, o.runtime.clone());
        let want: Vec<u64> = irt.iter().chain(trt.iter().skip(1)).copied().collect();
        if odtype != tdtype || ort != want || trt.is_empty() {
            return err(format!(
                "Gather: `{out}` ({odtype} {ort:?}) cannot hold rows of `{table}` ({tdtype} {trt:?}) at indices {irt:?}: it must be {tdtype} {want:?}"
            ));
        }
        let data = match self.functional() {
            None => Vec::new(),
            Some(f) => {
                let values = self.lm_values(f, indices, &idx)?;
                self.rows(table, &values)?
            }
        };
        let rank = ort.len();
        if let Some(t) = self.tensors.get_mut(out) {
            t.dram = Some(DramTensor {
                layout: XlaLayout::default_for(rank),
                data,
            });
        }
        let r = self.load_as("Gather", out, layout, &[idx.region]);
        // The image was the rows, not a copy of `out` of its own: nothing stays in DRAM.
        if let Some(t) = self.tensors.get_mut(out) {
            t.dram = None;
        }
        r
    }

    /// A resident tensor's values, row-major over its run-time shape (read from one
    /// replica, as a Store reads it; nothing is charged).
    fn lm_values(
        &mut self,
        f: super::dataplane::Functional,
        name: &str,
        r: &super::Resident,
    ) -> Result<Vec<f64>, SimError> {
        let rank = self.state(name)?.runtime.len();
        let kept = self.tensors.get_mut(name).and_then(|t| t.dram.take());
        let xla = XlaLayout::default_for(rank);
        self.move_store(f, name, r, &xla);
        let t = self.tensors.get_mut(name).expect("checked");
        let bytes = t.dram.take().map(|d| d.data).unwrap_or_default();
        t.dram = kept;
        let eb = t.dtype.bytes() as usize;
        Ok(bytes
            .chunks_exact(eb)
            .map(|c| mnsim_kernels::elem::read(t.dtype, c))
            .collect())
    }

    /// The rows of `table` that `values` name (each clamped), row-major.
    fn rows(&self, table: &str, values: &[f64]) -> Result<Vec<u8>, SimError> {
        let t = self.state(table)?;
        let Some(d) = t.dram.as_ref() else {
            return err(format!("Gather: table `{table}` has no data in DRAM"));
        };
        let eb = t.dtype.bytes() as usize;
        let rows = t.runtime[0];
        let inner = &t.runtime[1..];
        let row: u64 = inner.iter().product();
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
