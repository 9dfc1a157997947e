//! A run over many boards by board and by link (docs/report-schema.md, `boards`): what
//! each board did and what crossed each network and host link. Present only when the
//! machine has more than one board.
//!
//! Boards run in lock-step (SIMD across boards, as below them), so each board's cycles
//! are the run's; its bytes and joules are the run's even share (layouts spread a tensor
//! over the boards evenly, or copy it to each). The links between boards (each network
//! level's ports, one direction; the host's share them) are given with the bytes the
//! boards sent over them, the cycles they were busy and their joules.

use crate::model::Report;
use serde::{Deserialize, Serialize};

/// The run by board and by link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardsReport {
    /// The level the networks join (`Board`), and how many boards the machine has.
    pub level: String,
    pub boards: u64,
    /// What each board did (the same on every board: lock-step, even shares).
    pub each: BoardTotal,
    /// Every network level's ports, per direction, root-most first.
    pub links: Vec<LinkTotal>,
}

/// What one board did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardTotal {
    /// Its cycles: the run's.
    pub cycles: u64,
    /// Bytes its DRAMs read and wrote.
    pub dram_bytes: u64,
    /// Bytes it received over the networks and from the host.
    pub link_bytes: u64,
    /// Its joules: the run's, but the links between boards, ÷ boards.
    pub joules: f64,
}

/// One direction of a network level's ports (`Node down`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkTotal {
    /// Named as in `resources` (`Node down`).
    pub name: String,
    pub level: String,
    /// `down` or `up`.
    pub direction: String,
    /// Bytes the children received over it (stages' `child_bytes`), in all.
    pub bytes: u64,
    /// Cycles it was held, and that over the run's cycles.
    pub busy_cycles: u64,
    pub utilisation: f64,
    /// Its joules (the `energy.links.<LEVEL>` coefficient of that direction).
    pub joules: f64,
}

/// The run by board and by link, for a machine of `boards` boards at level `level`
/// joined by networks on `networks` (level names, root-most first); `None` for one board.
pub fn boards(r: &Report, level: &str, boards: u64, networks: &[String]) -> Option<BoardsReport> {
    if boards < 2 {
        return None;
    }
    let mut links = Vec::new();
    for net in networks {
        for dir in ["down", "up"] {
            let name = format!("{net} {dir}");
            let bytes: u64 = (r.ops.iter().flat_map(|o| &o.stages))
                .filter(|s| &s.level == net && s.direction == dir && s.kind != "dram")
                .map(|s| s.child_bytes)
                .fold(0u64, u64::saturating_add);
            let busy = (r.resources.iter())
                .find(|x| x.name == name)
                .map_or(0, |x| x.busy_cycles);
            let joules = (r.energy.iter().flat_map(|e| &e.resources))
                .filter(|x| x.name == name && x.kind == "link")
                .map(|x| x.joules)
                .sum();
            links.push(LinkTotal {
                utilisation: if r.total_cycles > 0 {
                    busy as f64 / r.total_cycles as f64
                } else {
                    0.0
                },
                name,
                level: net.clone(),
                direction: dir.to_string(),
                bytes,
                busy_cycles: busy,
                joules,
            });
        }
    }
    let dram: u64 = (r.ops.iter().flat_map(|o| &o.stages))
        .filter(|s| s.kind == "dram")
        .map(|s| s.bytes)
        .fold(0u64, u64::saturating_add);
    let link_bytes = links
        .iter()
        .map(|l| l.bytes)
        .fold(0u64, u64::saturating_add);
    let link_j: f64 = links.iter().map(|l| l.joules).sum();
    let total_j = r.energy.as_ref().map_or(0.0, |e| e.total_j);
    Some(BoardsReport {
        level: level.to_string(),
        boards,
        each: BoardTotal {
            cycles: r.total_cycles,
            dram_bytes: dram / boards,
            link_bytes: link_bytes / boards,
            joules: ((total_j - link_j) / boards as f64).max(0.0),
        },
        links,
    })
}

/// The terminal's and Markdown's lines: each board, then each link.
pub fn lines(b: &BoardsReport) -> Vec<String> {
    let mut out = vec![format!(
        "{} boards ({}), each in lock-step: {} cycles, {} B of DRAM, {} B over the links, {:.3e} J",
        b.boards, b.level, b.each.cycles, b.each.dram_bytes, b.each.link_bytes, b.each.joules
    )];
    for l in &b.links {
        out.push(format!(
            "  {:<12} {:>14} B  busy {:>12} cycles ({:5.1}%)  {:.3e} J",
            l.name,
            l.bytes,
            l.busy_cycles,
            100.0 * l.utilisation,
            l.joules
        ));
    }
    out
}
