//! `mnsim layout map|explain`.

mod picture;

use super::{emit, load_machine, parse_list};
use clap::{Args, Subcommand};
use miette::{Report, miette};
use mnsim_arch::{DType, Machine, TensorLayout};
use mnsim_sim::diag;
use picture::explain_pictures;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};

#[derive(Subcommand)]
pub enum LayoutCmd {
    /// Print where every element lives (JSON with --json: the machine-readable contract,
    /// described with the layout grammar in docs/layout.md).
    Map(MapArgs),
    /// Explain a layout for people: fan-out, replication, footprint, padding, a picture.
    Explain(ExplainArgs),
}

#[derive(Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub common: Common,
    /// Print the figures as one JSON object (no pictures).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct Common {
    /// The layout, e.g. "((4_PE, 3:8), (8:1))" (grammar and meaning: docs/layout.md).
    pub layout: String,
    /// Logical shape, e.g. 12,8 (default: the pad prefix or the group products).
    #[arg(long)]
    pub shape: Option<String>,
    /// Machine preset or machine RON file.
    #[arg(long, default_value = "toy4")]
    pub machine: String,
    /// Element type.
    #[arg(long, default_value = "f32")]
    pub dtype: String,
    /// Override a machine knob, e.g. --set levels.PE.count=8.
    #[arg(long = "set")]
    pub sets: Vec<String>,
}

#[derive(Args)]
pub struct MapArgs {
    #[command(flatten)]
    pub common: Common,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Only these elements (repeatable), e.g. --index 5,3.
    #[arg(long = "index")]
    pub index: Vec<String>,
}

pub fn run(cmd: LayoutCmd) -> Result<(), Report> {
    match cmd {
        LayoutCmd::Map(a) => map(a),
        LayoutCmd::Explain(a) => {
            let (m, l) = bind(&a.common)?;
            if a.json {
                let text = serde_json::to_string_pretty(&explain_json(&m, &l))
                    .map_err(|e| miette!("error: {e}"))?;
                emit(&format!("{text}\n"))
            } else {
                emit(&explain(&m, &l))
            }
        }
    }
}

fn bind(c: &Common) -> Result<(Machine, TensorLayout), Report> {
    let m = load_machine(&c.machine, &c.sets)?;
    let dtype: DType = c
        .dtype
        .parse()
        .map_err(|e: String| miette!("error: --dtype: {e}"))?;
    let shape = c.shape.as_deref().map(parse_list).transpose()?;
    let l = TensorLayout::parse(&c.layout, &m, shape.as_deref(), dtype)
        .map_err(|e| diag::layout(&e, &c.layout))?;
    Ok((m, l))
}

fn json_list(v: &[u64]) -> String {
    let s: Vec<String> = v.iter().map(u64::to_string).collect();
    format!("[{}]", s.join(","))
}

fn map(a: MapArgs) -> Result<(), Report> {
    let (m, l) = bind(&a.common)?;
    let indices: Vec<Vec<u64>> = a
        .index
        .iter()
        .map(|s| parse_list(s))
        .collect::<Result<_, _>>()?;
    check_indices(&l, &indices)?;
    let names: Vec<String> = l
        .levels()
        .iter()
        .map(|lv| serde_json::to_string(lv.name.as_str()).unwrap_or_default())
        .collect();
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let io = write_map(&mut out, &m, &l, &names, a.json, &indices);
    match io {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(miette!("error: writing output: {e}")),
    }
}

/// Rejects an `--index` of the wrong rank or outside the tensor's shape.
fn check_indices(l: &TensorLayout, indices: &[Vec<u64>]) -> Result<(), Report> {
    for idx in indices {
        let rank = l.logical_shape().len();
        if idx.len() != rank {
            return Err(miette!(
                "error: index {} has {} coordinate(s) but the tensor {} has rank {rank}",
                json_list(idx),
                idx.len(),
                json_list(l.logical_shape())
            ));
        }
        if l.place(idx).is_none() {
            return Err(miette!(
                "error: index {} is outside the tensor's shape {}",
                json_list(idx),
                json_list(l.logical_shape())
            ));
        }
    }
    Ok(())
}

/// The whole output of `mnsim layout map`: header, placements, the JSON's closing.
fn write_map(
    out: &mut impl Write,
    m: &Machine,
    l: &TensorLayout,
    names: &[String],
    json: bool,
    indices: &[Vec<u64>],
) -> std::io::Result<()> {
    map_header(out, m, l, json)?;
    map_entries(out, l, names, json, indices)?;
    if json {
        out.write_all(b"]}\n")?;
    }
    out.flush()
}

/// The map's header: the JSON object's figures up to `"placements":[`, or one line.
fn map_header(
    out: &mut impl Write,
    m: &Machine,
    l: &TensorLayout,
    json: bool,
) -> std::io::Result<()> {
    if json {
        write!(
            out,
            "{{\"machine\":{},\"layout\":{},\"dtype\":\"{}\",\"logical\":{},\"padded\":{},\"words\":{},\"placements\":[",
            serde_json::to_string(&m.name).unwrap_or_default(),
            serde_json::to_string(&l.canonical()).unwrap_or_default(),
            l.dtype(),
            json_list(l.logical_shape()),
            json_list(l.padded_shape()),
            l.footprint_words()
        )
    } else {
        writeln!(
            out,
            "{} on {}: {}",
            l.canonical(),
            m.name,
            json_list(l.logical_shape())
        )
    }
}

/// The map's placements: the chosen `indices`, or every element in row-major order.
fn map_entries<W: Write>(
    out: &mut W,
    l: &TensorLayout,
    names: &[String],
    json: bool,
    indices: &[Vec<u64>],
) -> std::io::Result<()> {
    let mut first = true;
    let mut one = |out: &mut W, idx: &[u64]| -> std::io::Result<()> {
        if json && !first {
            out.write_all(b",")?;
        }
        first = false;
        map_entry(out, l, names, json, idx)
    };
    if indices.is_empty() {
        let shape = l.logical_shape().to_vec();
        if shape.contains(&0) {
            // No elements.
        } else {
            let mut idx = vec![0u64; shape.len()];
            'all: loop {
                one(out, &idx)?;
                let mut d = shape.len();
                loop {
                    if d == 0 {
                        break 'all;
                    }
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }
    } else {
        for idx in indices {
            one(out, idx)?;
        }
    }
    Ok(())
}

/// One element's placement: a JSON object, or one line.
fn map_entry(
    out: &mut impl Write,
    l: &TensorLayout,
    names: &[String],
    json: bool,
    idx: &[u64],
) -> std::io::Result<()> {
    // The caller checks every index against the shape; one out of it is an error.
    let Some(p) = l.place(idx) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("index {} is outside the layout's shape", json_list(idx)),
        ));
    };
    if json {
        write!(out, "{{\"index\":{},\"pe\":{{", json_list(idx))?;
        for (i, pos) in p.pos.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            match pos {
                Some(x) => write!(out, "{}:{x}", names[i])?,
                None => write!(out, "{}:\"*\"", names[i])?,
            }
        }
        write!(out, "}},\"addr\":{},\"w\":{},\"t\":{}}}", p.addr, p.w, p.t)
    } else {
        let pe: Vec<String> = p
            .pos
            .iter()
            .zip(l.levels())
            .map(|(x, lv)| {
                format!(
                    "{} {}",
                    lv.name,
                    x.map_or("*".to_string(), |x| x.to_string())
                )
            })
            .collect();
        writeln!(
            out,
            "{:<16} {}  word {}  slot {}  step {}",
            json_list(idx),
            pe.join(", "),
            p.addr,
            p.w,
            p.t
        )
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn bytes(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Number of PEs whose shard holds at least one real element: per split level the
/// positions that do, times the fan-out of replicated levels. `None` when there are too
/// many PEs to look at one by one (more than 2^20).
fn pes_with_data(l: &TensorLayout) -> Option<u64> {
    let levels = l.levels();
    let total: u64 = levels
        .iter()
        .map(|x| if x.replicated { 1 } else { x.fanout })
        .try_fold(1u64, |a, f| a.checked_mul(f))?;
    if total > 1 << 20 {
        return None;
    }
    let copies: u64 = levels
        .iter()
        .filter(|x| x.replicated)
        .map(|x| x.fanout)
        .product();
    let mut pos = vec![0u64; levels.len()];
    let mut n = 0u64;
    for _ in 0..total {
        if l.shard(&pos)
            .is_some_and(|sh| sh.valid_elems(l.logical_shape()) > 0)
        {
            n += 1;
        }
        // Next position: odometer over the split levels, the last fastest.
        for (i, lv) in levels.iter().enumerate().rev() {
            if lv.replicated {
                continue;
            }
            pos[i] += 1;
            if pos[i] < lv.fanout {
                break;
            }
            pos[i] = 0;
        }
    }
    Some(n.saturating_mul(copies))
}

/// The figures of `mnsim layout explain` as JSON (README, `layout explain --json`).
pub fn explain_json(m: &Machine, l: &TensorLayout) -> serde_json::Value {
    let levels: Vec<serde_json::Value> = l
        .level_stats()
        .iter()
        .map(|st| {
            serde_json::json!({
                "level": st.name, "fanout": st.fanout, "used": st.used, "idle": st.idle,
                "replicated": st.replicated, "elements_per_node": st.elems_per_node,
                "words_per_node": st.words_per_node, "nodes_used": st.nodes_used,
            })
        })
        .collect();
    let fp = l.footprint_words().saturating_mul(l.word_bytes());
    serde_json::json!({
        "layout": l.canonical(),
        "machine": m.name,
        "dtype": l.dtype().to_string(),
        "logical": l.logical_shape(),
        "padded": l.padded_shape(),
        "padding_elements": l.padding_elems(),
        "levels": levels,
        "elements_per_pe": l.elems_per_pe(),
        "words_per_step": l.words_per_step(),
        "time_steps": l.time_steps(),
        "footprint_words": l.footprint_words(),
        "footprint_bytes": fp,
        "lm_bytes": m.leaf_memory_bytes(),
        "word_bytes": l.word_bytes(),
        "slots_per_word": l.slots(),
        "pes": l.levels().iter().map(|x| x.fanout).try_fold(1u64, |a, f| a.checked_mul(f)),
        "pes_used": l.pes_used(),
        "pes_with_data": pes_with_data(l),
        "distinct_shards": l.distinct_shards(),
        "replicas": l.replicas(),
    })
}

/// The text of `mnsim layout explain`.
pub fn explain(m: &Machine, l: &TensorLayout) -> String {
    let mut s = String::new();
    explain_tensor(&mut s, m, l);
    explain_levels(&mut s, l);
    explain_per_pe(&mut s, m, l);
    explain_pes(&mut s, l);
    explain_pictures(&mut s, l);
    s
}

/// A shape as `12×8`.
fn dims(d: &[u64]) -> String {
    d.iter().map(u64::to_string).collect::<Vec<_>>().join("×")
}

/// The `layout`, `tensor` and `padding` lines.
fn explain_tensor(s: &mut String, m: &Machine, l: &TensorLayout) {
    let _ = writeln!(s, "layout    {}", l.canonical());
    let _ = writeln!(
        s,
        "tensor    {}[{}] on {}",
        l.dtype(),
        dims(l.logical_shape()),
        m.name
    );
    if l.padding_elems() > 0 {
        let _ = writeln!(
            s,
            "padding   padded to {}: {} of {} positions are padding ({:.1}% waste); they occupy memory and compute",
            dims(l.padded_shape()),
            l.padding_elems(),
            l.padded_elems(),
            pct(l.padding_elems(), l.padded_elems())
        );
    } else {
        let _ = writeln!(s, "padding   none");
    }
}

/// The table of levels: fan-out, use, split or replicated, what each node holds.
fn explain_levels(s: &mut String, l: &TensorLayout) {
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "level   fan-out   used  idle  use%    how                 elements/node  words/node"
    );
    for st in l.level_stats() {
        let how = if st.replicated {
            "replicated (copies)".to_string()
        } else if st.idle > 0 {
            "split, some idle".to_string()
        } else {
            "split".to_string()
        };
        let _ = writeln!(
            s,
            "{:<7} {:>7} {:>6} {:>5} {:>5.1}%  {:<19} {:>13}  {:>10}",
            st.name,
            st.fanout,
            st.used,
            st.idle,
            pct(st.used, st.fanout),
            how,
            st.elems_per_node,
            st.words_per_node
        );
    }
}

/// The `per PE` and `words` lines: one PE's share, its footprint, the word packing.
fn explain_per_pe(s: &mut String, m: &Machine, l: &TensorLayout) {
    let lm = m.leaf_memory_bytes();
    let fp = l.footprint_words().saturating_mul(l.word_bytes());
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "per PE    {} elements in {} words per step{}; footprint {} words = {} of {} LM ({:.1}%)",
        l.elems_per_pe(),
        l.words_per_step(),
        if l.time_steps() > 1 {
            format!(", {} time steps run in sequence", l.time_steps())
        } else {
            String::new()
        },
        l.footprint_words(),
        bytes(fp),
        bytes(lm),
        pct(fp, lm)
    );
    let w_used = l.elems_per_pe() / l.words_per_pe().max(1);
    let _ = writeln!(
        s,
        "words     {} byte(s) each hold {} {} slot(s); this layout fills {} per word",
        l.word_bytes(),
        l.slots(),
        l.dtype(),
        w_used
    );
}

/// The `PEs` line: how many PEs hold data, shards and copies.
fn explain_pes(s: &mut String, l: &TensorLayout) {
    let total_pes: u64 = l.levels().iter().map(|x| x.fanout).product();
    // PEs whose shard holds at least one real (unpadded) element; the others that the
    // layout reaches hold padding only.
    let with_data = pes_with_data(l);
    let only_padding = with_data.map_or(0, |n| l.pes_used().saturating_sub(n));
    let _ = writeln!(
        s,
        "PEs       {} of {} hold data ({:.1}%){}; {} distinct shard(s); every element stored {} time(s)",
        with_data.unwrap_or(l.pes_used()),
        total_pes,
        pct(with_data.unwrap_or(l.pes_used()), total_pes),
        if only_padding > 0 {
            format!(", {only_padding} more hold only padding")
        } else {
            String::new()
        },
        l.distinct_shards(),
        l.replicas()
    );
}
