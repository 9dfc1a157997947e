//! `mnsim-reports`: turning results into terminal tables, JSON, Markdown, HTML and traces.

pub mod model;

pub use model::{LevelTotal, OpReport, Percentiles, Report, StageReport};
