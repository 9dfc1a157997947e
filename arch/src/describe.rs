//! Human-readable description of a machine and its peak rates.

use crate::dtype::DType;
use crate::machine::{AddrLevel, Link, Machine, TransferKind};
use std::fmt::Write;

/// Peak FLOP per cycle of the whole machine in `dtype`: the matrix units' peak if the
/// matrix unit supports `dtype`, else the vector units' peak (0 if neither does).
pub fn peak_flops_per_cycle(m: &Machine, dtype: DType) -> f64 {
    match m.compute.matrix.flops.get(&dtype) {
        Some(&f) => f * m.matrix_units() as f64,
        None => vector_peak(m, dtype),
    }
}

fn vector_peak(m: &Machine, dtype: DType) -> f64 {
    m.compute
        .vector
        .get(&dtype)
        .map_or(0.0, |&f| f * m.leaf_count() as f64)
}

/// A whole number without decimals, else two decimals.
fn num(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// Bytes in the largest binary unit that divides them, else with two decimals.
fn bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, size) in UNITS {
        if b >= size && b.is_multiple_of(size) {
            return format!("{} {unit}", b / size);
        }
    }
    for (unit, size) in UNITS {
        if b >= size {
            return format!("{:.2} {unit}", b as f64 / size as f64);
        }
    }
    format!("{b} B")
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A human tree of the machine: levels, links, DRAM and totals.
pub fn describe(m: &Machine) -> String {
    let mut s = String::new();
    header(m, &mut s);
    levels(m, &mut s);
    networks(m, &mut s);
    links(m, &mut s);
    dram(m, &mut s);
    totals(m, &mut s);
    energy(m, &mut s);
    s
}

/// Whole words in `b` bytes.
fn words(m: &Machine, b: u64) -> u64 {
    b / m.word_bytes.max(1)
}

/// A rate in bytes per cycle as words per cycle.
fn words_per_cycle(m: &Machine, r: f64) -> f64 {
    r / m.word_bytes.max(1) as f64
}

/// The name, the description if any, the clock and the word size.
fn header(m: &Machine, s: &mut String) {
    let _ = writeln!(s, "{}", m.name);
    if !m.description.is_empty() {
        let _ = writeln!(s, "  {}", m.description);
    }
    let _ = writeln!(
        s,
        "clock {} GHz, word {} bytes",
        num(m.clock_ghz),
        m.word_bytes
    );
}

/// The levels, root first: count, nodes, memory and how layouts address each.
fn levels(m: &Machine, s: &mut String) {
    let _ = writeln!(s, "\nlevels (root first; count = nodes per parent):");
    let addr = m.addressable_levels();
    for (i, l) in m.levels.iter().enumerate() {
        let indent = "  ".repeat(i + 1);
        let mem = match &l.memory {
            Some(mem) => format!(
                "{} {} ({} words)",
                mem.name,
                bytes(mem.bytes),
                words(m, mem.bytes)
            ),
            None => "no memory".to_string(),
        };
        let role = level_role(m, &addr, i);
        let _ = writeln!(
            s,
            "{indent}{} x{} ({}): {mem}; {role}",
            l.name,
            l.count,
            plural(m.nodes_at(i), "node")
        );
    }
}

/// How layouts see level `i`: addressable (with what folds into it), folded, or neither.
fn level_role(m: &Machine, addr: &[AddrLevel], i: usize) -> String {
    match addr.iter().find(|a| a.folded.contains(&i)) {
        Some(a) if a.level_index == i && a.folded.len() > 1 => {
            let names: Vec<&str> = a.folded[..a.folded.len() - 1]
                .iter()
                .filter_map(|&j| m.levels.get(j).map(|l| l.name.as_str()))
                .collect();
            format!(
                "addressable, fan-out {} ({} folded in)",
                a.fanout,
                names.join(", ")
            )
        }
        Some(a) if a.level_index == i => format!("addressable, fan-out {}", a.fanout),
        Some(a) => format!("folds into {}", a.name),
        None => "not addressable, nothing below to fold into".to_string(),
    }
}

/// The networks between boards or nodes, root-most first: topology, link rate, latency,
/// and the rates the tree charges them at (nothing for one board).
fn networks(m: &Machine, s: &mut String) {
    if m.networks.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nnetworks (one link's bytes/cycle per direction; latency in cycles per hop):"
    );
    for (i, l) in m.levels.iter().enumerate() {
        let (Some(n), Some(link)) = (m.network_at(i), m.link_at(i)) else {
            continue;
        };
        let children = m.levels.get(i + 1);
        let _ = writeln!(
            s,
            "  {}: {} joining {} {} of each {}: {} B/cycle ({} GB/s) per link and direction, latency {}; \
             charged as {} B/cycle per {}, latency {}; collectives {}{}",
            l.name,
            n.topology.name(),
            children.map_or(0, |c| c.count),
            children.map_or("?", |c| c.name.as_str()),
            l.name,
            num(n.bytes_per_cycle),
            num(n.bytes_per_cycle * m.clock_ghz),
            n.latency,
            num(link.gather.child),
            children.map_or("?", |c| c.name.as_str()),
            link.gather.latency,
            n.algorithm().name(),
            if n.algorithm.is_none() {
                " (the topology's default)"
            } else {
                ""
            }
        );
    }
}

/// The links, root-most first, each with its ends and its rates per transfer kind.
fn links(m: &Machine, s: &mut String) {
    let _ = writeln!(
        s,
        "\nlinks (bytes/cycle, words/cycle in parentheses; latency in cycles):"
    );
    if m.links.is_empty() {
        let _ = writeln!(s, "  none");
    }
    // Root-most first.
    let mut links: Vec<(usize, &String, &Link)> = m
        .links
        .iter()
        .map(|(n, l)| (m.level_index(n).unwrap_or(usize::MAX), n, l))
        .collect();
    links.sort_by_key(|&(i, n, _)| (i, n.clone()));
    for (i, name, link) in links {
        let _ = writeln!(
            s,
            "  {name}: {} -> {}",
            link_source(m, i).unwrap_or_else(|| "?".into()),
            link_sink(m, i).unwrap_or_else(|| "?".into())
        );
        for kind in TransferKind::ALL {
            let r = link.rate(kind);
            let _ = writeln!(
                s,
                "    {:<10}  parent {:>7} B ({:>5})  child {:>7} B ({:>5})  latency {}",
                kind.name(),
                num(r.parent),
                num(words_per_cycle(m, r.parent)),
                num(r.child),
                num(words_per_cycle(m, r.child)),
                r.latency
            );
        }
    }
}

/// What the link at level `i` sends from: its memory and/or the DRAM.
fn link_source(m: &Machine, i: usize) -> Option<String> {
    m.levels.get(i).map(|l| {
        let mut parts = Vec::new();
        if let Some(mem) = &l.memory {
            parts.push(mem.name.clone());
        }
        if m.dram.level == l.name {
            parts.push("DRAM".to_string());
        }
        parts.join(" + ")
    })
}

/// What the link at level `i` sends to: how many of which memory, on which level.
fn link_sink(m: &Machine, i: usize) -> Option<String> {
    (i < m.levels.len())
        .then(|| m.link_target(i))
        .flatten()
        .and_then(|j| {
            let l = m.levels.get(j)?;
            let fan = m.nodes_at(j) / m.nodes_at(i).max(1);
            let what = l
                .memory
                .as_ref()
                .map_or(l.name.as_str(), |mm| mm.name.as_str());
            Some(format!("{fan} x {what} ({} nodes)", l.name))
        })
}

/// The DRAM: where and how many, capacity, bandwidth and burst.
fn dram(m: &Machine, s: &mut String) {
    let d = &m.dram;
    let n_dram = m.dram_level_index().map_or(0, |i| m.nodes_at(i));
    let _ = writeln!(
        s,
        "\nDRAM: one per {} ({} in all): {} each, {} total; {} B/cycle ({} words/cycle, {} GB/s) each; burst {} B",
        d.level,
        n_dram,
        bytes(d.bytes),
        bytes(d.bytes.saturating_mul(n_dram)),
        num(d.bytes_per_cycle),
        num(words_per_cycle(m, d.bytes_per_cycle)),
        num(d.bytes_per_cycle * m.clock_ghz),
        d.burst_bytes
    );
}

/// The totals: PEs and their local memory, matrix units, and the peaks per dtype.
fn totals(m: &Machine, s: &mut String) {
    let pes = m.leaf_count();
    let lm = m.leaf_memory_bytes();
    let _ = writeln!(s, "\ntotals:");
    let _ = writeln!(
        s,
        "  PEs {pes}; local memory {} each, {} total",
        bytes(lm),
        bytes(lm.saturating_mul(pes))
    );
    let _ = writeln!(
        s,
        "  matrix units {} (one per {})",
        m.matrix_units(),
        m.compute.matrix.level
    );
    peaks(m, s);
}

/// The peak FLOP/cycle and FLOP/s of the matrix and vector units, per dtype either has.
fn peaks(m: &Machine, s: &mut String) {
    let _ = writeln!(
        s,
        "  peak FLOP/cycle (and FLOP/s at {} GHz):",
        num(m.clock_ghz)
    );
    for dt in DType::ALL {
        let mx = m
            .compute
            .matrix
            .flops
            .get(&dt)
            .map(|&f| f * m.matrix_units() as f64);
        let vec = m.compute.vector.get(&dt).map(|_| vector_peak(m, dt));
        if mx.is_none() && vec.is_none() {
            continue;
        }
        let mut parts = Vec::new();
        if let Some(p) = mx {
            parts.push(format!("matrix {} ({})", num(p), flop_rate(m, p)));
        }
        if let Some(p) = vec {
            parts.push(format!("vector {} ({})", num(p), flop_rate(m, p)));
        }
        let _ = writeln!(s, "    {:<5} {}", dt.name(), parts.join("; "));
    }
}

/// `f` FLOP per cycle as GFLOPS or TFLOPS at the machine's clock.
fn flop_rate(m: &Machine, f: f64) -> String {
    // FLOP/cycle x GHz = GFLOPS.
    let g = f * m.clock_ghz;
    if g >= 1000.0 {
        format!("{} TFLOPS", num(g / 1000.0))
    } else {
        format!("{} GFLOPS", num(g))
    }
}

/// The energy coefficients in brief: static power, the power and GFLOPS/W of the matrix
/// units at each dtype's peak (or that no coefficient prices the dtype), the DRAM's pJ per
/// byte (`--knobs` lists every one).
fn energy(m: &Machine, s: &mut String) {
    let e = &m.energy;
    if e.is_empty() {
        return;
    }
    let static_w = e.static_watts(m);
    let _ = writeln!(
        s,
        "\nenergy (energy.* knobs): static {} W; DRAM {} / {} pJ per byte read / written",
        num(static_w),
        num(e.dram.read_pj_per_byte),
        num(e.dram.write_pj_per_byte)
    );
    for (dt, &f) in &m.compute.matrix.flops {
        if !e.matrix_pj_per_flop.contains_key(dt) {
            // No figure prices this dtype (a preset's int8, fp8, int4): a run counts its
            // FLOP at 0 J and says so; no GFLOPS/W to quote.
            let _ = writeln!(
                s,
                "  matrix units at the {} peak: no energy coefficient (energy.matrix_pj_per_flop.{dt:?} \
                 is not given): a run counts these FLOP at 0 J and says so",
                dt.name()
            );
            continue;
        }
        let flop_s = f * m.matrix_units() as f64 * m.clock_ghz * 1e9;
        let w = static_w + flop_s * e.pj_per_flop(true, *dt) * 1e-12;
        if w > 0.0 {
            let _ = writeln!(
                s,
                "  matrix units at the {} peak: {:.3} pJ/FLOP, {:.0} W with static, {:.1} GFLOPS/W",
                dt.name(),
                e.pj_per_flop(true, *dt),
                w,
                flop_s / w / 1e9
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mncore2 prices no int8 or fp8 FLOP: its description says so rather than quoting
    /// the static power alone as GFLOPS/W.
    #[test]
    fn a_dtype_without_an_energy_coefficient_is_said_to_have_none() {
        let m = crate::presets::preset("mncore2").unwrap();
        let d = describe(&m);
        let s8 = d
            .lines()
            .find(|l| l.contains("matrix units at the s8 peak"))
            .unwrap();
        assert!(
            s8.contains("no energy coefficient (energy.matrix_pj_per_flop.S8 is not given)"),
            "{s8}"
        );
        assert!(!s8.contains("GFLOPS/W"), "{s8}");
        let f16 = d
            .lines()
            .find(|l| l.contains("matrix units at the f16 peak"))
            .unwrap();
        assert!(
            f16.contains("0.763 pJ/FLOP") && f16.contains("GFLOPS/W"),
            "{f16}"
        );
    }
}
