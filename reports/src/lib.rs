//! `mnsim-reports`: turning results into terminal tables, JSON, Markdown, HTML and traces.
//!
//! The crate runs nothing: it takes a [`Report`] (what a run produced) and renders it.
//!
//! - [`terminal`]: the summary a run prints;
//! - [`markdown`]: the same as Markdown tables;
//! - [`to_json`]: `report.json` (schema `mnsim.report/1`, see `docs/report-schema.md`);
//! - [`compare_table`], [`compare_json`]: plans of a scenario ranked by cycles;
//! - [`sweep_csv`], [`sweep_json`], [`sweep_svg`], [`sweep_html`], [`merge_sweeps`]: cycles
//!   over the cartesian product of what-if knobs and bindings, sharded and merged;
//! - [`html`], [`compare_html`]: `report.html` and `compare.html`, self-contained pages with SVG
//!   charts;
//! - [`ops_csv`]: `ops.csv`, one row per op;
//! - [`trace`]: `trace.json` (Chrome Trace Event Format, opens in Perfetto);
//! - [`write_outputs`]: writing a set of files into a directory all at once or not at all.

pub mod atomic;
pub mod boards;
mod compare;
mod critical;
pub mod energy;
mod html;
mod json;
mod markdown;
pub mod model;
mod op_diff;
mod ops_csv;
mod output;
pub mod places;
mod rows;
mod sweep;
mod sweep_chart;
mod sweep_merge;
mod sweep_page;
mod terminal;
mod text;
mod trace;

pub use compare::{
    COMPARE_SCHEMA, OpChange, OpPair, compare_json, compare_json_by, compare_ops, compare_table,
    compare_table_by, op_diff_table, op_pairs,
};
pub use critical::op_count;
pub use energy::{EnergyReport, Objective, SweepMetric};
pub use html::{compare_html, html};
pub use json::to_json;
pub use markdown::markdown;
pub use model::{
    AboveBound, Bottleneck, LevelTotal, OpReport, Percentiles, Report, ResourceTotal, SCHEMA,
    StageReport, StreamReport, WaitedOn,
};
pub use op_diff::op_diff_json;
pub use ops_csv::{OPS_CSV_COLUMNS, ops_csv};
pub use output::{OUTPUT_NAMES, check_out_dir, write_outputs};
pub use sweep::{
    AxisKind, RowResult, SWEEP_SCHEMA, Sweep, SweepAxis, SweepRow, parse_sweep_json, point_count,
    point_values, shard_points, sweep_csv, sweep_json,
};
pub use sweep_chart::{sweep_svg, sweep_svg_by, x_axis};
pub use sweep_merge::{SweepFile, merge as merge_sweeps, parse_sweep_file, row_problem};
pub use sweep_page::{sweep_html, sweep_html_by};
pub use terminal::terminal;
pub use text::{MAX_WIDTH, human_bytes};
pub use trace::trace;
