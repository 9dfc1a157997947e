//! Machines of many boards for the tests of collectives and of the runs over boards.
#![allow(dead_code)]

/// A machine of `p` boards of 4 PEs (each with `lm_bytes` of LM) joined by a network,
/// whose boards move their own data at once (a fast link, no latency): a collective's
/// cycles are the network's alone.
pub fn network_machine(p: u64, topology: &str, rate: f64, latency: u64, lm_bytes: u64) -> String {
    format!(
        r#"(
    name: "boards", clock_ghz: 1.0, word_bytes: 4,
    levels: [
        (name: "Node", count: 1, addressable: false),
        (name: "Board", count: {p}),
        (name: "PE", count: 4, memory: (name: "LM", bytes: {lm_bytes})),
    ],
    links: {{"Board": (
        broadcast: (parent: 1e9, child: 1e9, latency: 0),
        distribute: (parent: 1e9, child: 1e9, latency: 0),
        gather: (parent: 1e9, child: 1e9, latency: 0),
        reduce: (parent: 1e9, child: 1e9, latency: 0),
    )}},
    networks: {{"Node": (topology: {topology}, bytes_per_cycle: {rate:?}, latency: {latency})}},
    dram: (level: "Board", bytes: 1073741824, bytes_per_cycle: 1e9, burst_bytes: 4),
    compute: (vector: {{F32: 1.0}}, matrix: (level: "PE", flops: {{}}, tile: {{}})),
)"#
    )
}
