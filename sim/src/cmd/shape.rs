//! `mnsim shape index`.

use super::{emit, parse_list};
use clap::{Args, Subcommand};
use miette::{Report, miette};
use mnsim_arch::shape::{Shape, XlaLayout};
use mnsim_sim::diag;

#[derive(Subcommand)]
pub enum ShapeCmd {
    /// The linear index of an element: `mnsim shape index "f32[3,5]{1,0:T(2,2)}" --index 2,3`.
    Index(IndexArgs),
}

#[derive(Args)]
pub struct IndexArgs {
    /// XLA shape with optional layout, or a StableHLO tensor type.
    pub shape: String,
    /// The element, e.g. 2,3.
    #[arg(long)]
    pub index: String,
    /// Bind a dynamic dimension, e.g. --bind batch=48.
    #[arg(long = "bind")]
    pub binds: Vec<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: ShapeCmd) -> Result<(), Report> {
    let ShapeCmd::Index(a) = cmd;
    let shape: Shape = a.shape.parse().map_err(|e: mnsim_arch::ShapeError| {
        diag::pointed(
            &format!("error: {e}"),
            "shape",
            &a.shape,
            e.offset..e.offset + e.len.max(1),
            "here",
        )
    })?;
    let mut binds = std::collections::BTreeMap::new();
    for b in &a.binds {
        let (k, v) = b
            .split_once('=')
            .ok_or_else(|| miette!("error: --bind {b}: expected NAME=VALUE"))?;
        let v: u64 = v
            .trim()
            .parse()
            .map_err(|_| miette!("error: --bind {b}: `{v}` is not a size"))?;
        let k = k.trim();
        let named: Vec<&str> = shape.dims.iter().filter_map(|d| d.name()).collect();
        if !named.contains(&k) {
            let list: Vec<String> = named.iter().map(|n| format!("`{n}`")).collect();
            return Err(miette!(
                "error: --bind {b}: the shape has no dimension named `{k}`; {}",
                if list.is_empty() {
                    "it has no named dimension".to_string()
                } else {
                    format!("its named dimensions are {}", list.join(", "))
                }
            ));
        }
        binds.insert(k.to_string(), v);
    }
    let shape = shape.bind(&binds).map_err(|e| miette!("error: {e}"))?;
    let dims = shape.dims_at_bound().map_err(|e| miette!("error: {e}"))?;
    let index = parse_list(&a.index)?;
    let layout = shape
        .layout
        .clone()
        .unwrap_or_else(|| XlaLayout::default_for(dims.len()));
    let li = layout
        .linear_index(&dims, &index)
        .map_err(|e| miette!("error: {e}"))?;
    let buf = layout
        .buffer_elements(&dims)
        .map_err(|e| miette!("error: {e}"))?;
    if a.json {
        let v = serde_json::json!({
            "shape": shape.to_string(),
            "index": index,
            "linear_index": li,
            "byte_offset": li.checked_mul(shape.dtype.bytes()),
            "buffer_elements": buf,
            "buffer_bytes": buf.checked_mul(shape.dtype.bytes()),
        });
        return emit(&format!("{v:#}\n"));
    }
    emit(&format!(
        "shape         {shape}\nbuffer        {buf} elements ({} bytes)\nbyte offset   {}\n{li}\n",
        buf.saturating_mul(shape.dtype.bytes()),
        li.saturating_mul(shape.dtype.bytes())
    ))
}
