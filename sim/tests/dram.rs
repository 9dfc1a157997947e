//! DRAM burst efficiency (docs/model.md): the DRAM layout decides which bytes are
//! contiguous, and so how fast a load reads DRAM.

use mnsim_arch::{DType, TensorLayout, XlaLayout, preset};
use mnsim_sim::engine::{Engine, Mode};

/// DRAM-stage cycles of a timing-mode Load of f32[256,256] in `layout`, DRAM in `xla`.
fn dram_cycles(layout: &str, xla: XlaLayout) -> u64 {
    let m = preset("mncore2").unwrap();
    let mut e = Engine::new(m.clone(), Mode::Timing);
    e.state
        .declare(
            "x",
            DType::F32,
            vec![256, 256],
            vec![256, 256],
            xla.clone(),
            None,
        )
        .unwrap();
    e.state.set_in_dram(e.state.tensor_id("x").unwrap(), xla);
    let l = TensorLayout::parse(layout, &m, Some(&[256, 256]), DType::F32).unwrap();
    let r = e.load(e.state.tensor_id("x").unwrap(), l).unwrap();
    r.stages
        .iter()
        .find(|s| s.level == "DRAM")
        .expect("a DRAM stage")
        .cycles
}

#[test]
fn an_l2b_split_on_the_minor_dimension_wastes_bursts() {
    // mncore2 has one DRAM per Group (2 L2B positions each). Rows over L2B: each DRAM
    // reads whole rows, 8192 contiguous elements per run.
    let rows = dram_cycles(
        "((8_L2B, 8_L1B, 4:4), (16_MAB, 4_PE, 4:1))",
        XlaLayout::default_for(2),
    );
    // Columns over L2B in pairs: each DRAM reads runs of 2 f32 = 8 bytes per 64-byte burst.
    let pairs = dram_cycles(
        "((8_L1B, 4_PE, 8:2), (16_MAB, 8_L2B, 2:1))",
        XlaLayout::default_for(2),
    );
    assert_eq!(pairs, rows * 8, "rows {rows}, pairs {pairs}");
    // The same pairs from a column-major DRAM: the minor dimension is now the rows, and
    // each DRAM's share of it is contiguous again.
    let col_major = XlaLayout {
        minor_to_major: vec![0, 1],
        tiles: vec![],
        memory_space: 0,
    };
    let pairs_cm = dram_cycles("((8_L1B, 4_PE, 8:2), (16_MAB, 8_L2B, 2:1))", col_major);
    assert_eq!(pairs_cm, rows, "column-major DRAM: {pairs_cm}");
}
