//! A whole model's report by part and by layer (docs/import.md, places): each op's
//! cycles, its cycles on the critical path, its bound, the bytes it moved and its joules,
//! summed over the ops of one part (embedding, norm, attention, mlp, head) or one layer.
//! The ops' cycles on the critical path add up to the run's cycles over all parts (and
//! the ops no part holds), so a part's `exposed_cycles` is its share of the run.

use crate::model::{OpReport, Report};
use serde::{Deserialize, Serialize};

/// The ops of one part or one layer, summed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlaceTotal {
    /// `part` or `layer`: what the row groups by.
    pub by: String,
    /// The part (`attention`, ...), for a row by part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    /// The layer (from 0), for a row by layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<u32>,
    /// Its ops (inserted Reduces included).
    pub ops: u64,
    /// The ops' cycles, summed (overlapping ops both count).
    pub cycles: u64,
    /// The ops' cycles on the run's critical path: its share of `total_cycles`.
    pub exposed_cycles: u64,
    /// The ops' bounds, summed: the fewest cycles any layout could give them, one by one.
    pub bound_cycles: u64,
    /// Bytes the ops moved over the network and DRAM (each level's distinct bytes).
    pub bytes: u64,
    /// The ops' joules (dynamic, and their share of the static energy).
    pub energy_j: f64,
}

impl PlaceTotal {
    /// `exposed_cycles ÷ bound_cycles`, `None` without a bound.
    pub fn x_bound(&self) -> Option<f64> {
        (self.bound_cycles > 0).then(|| self.exposed_cycles as f64 / self.bound_cycles as f64)
    }

    /// `attention` or `layer 3`: the row's name.
    pub fn name(&self) -> String {
        match (&self.part, self.layer) {
            (Some(p), _) => p.clone(),
            (None, Some(l)) => format!("layer {l}"),
            (None, None) => String::new(),
        }
    }

    fn add(&mut self, o: &OpReport) {
        self.ops += 1;
        self.cycles = self.cycles.saturating_add(o.cycles);
        self.exposed_cycles = self.exposed_cycles.saturating_add(o.exposed_cycles);
        self.bound_cycles = self.bound_cycles.saturating_add(o.bound_cycles);
        let bytes = o
            .stages
            .iter()
            .map(|s| s.bytes)
            .fold(0u64, u64::saturating_add);
        self.bytes = self.bytes.saturating_add(bytes);
        self.energy_j += o.energy_j;
    }
}

/// The parts the report's ops are in (in the order a transformer meets them: embedding,
/// norm, attention, mlp, head, then any other), then its layers in order; empty when
/// no op has a place.
pub fn places(r: &Report) -> Vec<PlaceTotal> {
    const ORDER: [&str; 5] = ["embedding", "norm", "attention", "mlp", "head"];
    let rank = |p: &str| ORDER.iter().position(|x| *x == p).unwrap_or(ORDER.len());
    // The row of `list` that `key` picks, made (empty, as `blank` gives it) when missing.
    fn row(
        list: &mut Vec<PlaceTotal>,
        key: impl Fn(&PlaceTotal) -> bool,
        blank: impl FnOnce() -> PlaceTotal,
    ) -> &mut PlaceTotal {
        match list.iter().position(key) {
            Some(i) => &mut list[i],
            None => {
                list.push(blank());
                list.last_mut().expect("just pushed")
            }
        }
    }
    let mut parts: Vec<PlaceTotal> = Vec::new();
    let mut layers: Vec<PlaceTotal> = Vec::new();
    for o in &r.ops {
        if let Some(p) = &o.part {
            let blank = || PlaceTotal {
                by: "part".into(),
                part: Some(p.clone()),
                ..Default::default()
            };
            row(&mut parts, |t| t.part.as_ref() == Some(p), blank).add(o);
        }
        if let Some(l) = o.layer {
            let blank = || PlaceTotal {
                by: "layer".into(),
                layer: Some(l),
                ..Default::default()
            };
            row(&mut layers, |t| t.layer == Some(l), blank).add(o);
        }
    }
    parts.sort_by_key(|t| {
        let p = t.part.clone().unwrap_or_default();
        (rank(&p), p)
    });
    layers.sort_by_key(|t| t.layer);
    parts.extend(layers);
    parts
}

/// The columns of the tables the views show (terminal, report.md, report.html).
pub(crate) const TITLES: [&str; 7] = ["", "ops", "exposed", "share", "× bound", "bytes", "joules"];

/// The rows grouped `by` (`"part"` or `"layer"`) as the views show them.
pub(crate) fn rows(r: &Report, by: &str) -> Vec<[String; 7]> {
    use crate::text::{human_bytes, real, share, thousands};
    (r.places.iter())
        .filter(|t| t.by == by)
        .map(|t| {
            [
                t.name(),
                t.ops.to_string(),
                thousands(t.exposed_cycles),
                share(t.exposed_cycles, r.total_cycles),
                t.x_bound()
                    .map_or("–".to_string(), |x| format!("{}×", real(x, 2))),
                human_bytes(t.bytes),
                crate::energy::human_joules(t.energy_j),
            ]
        })
        .collect()
}
