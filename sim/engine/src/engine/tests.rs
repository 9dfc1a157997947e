//! The engine's own round trip through the functional data plane, small enough to run
//! under Miri (`cargo +nightly miri test -p mnsim-engine --lib engine::tests`): the
//! `unsafe` copies of Load, Relayout and Store (raw LM pointers shared across the
//! rayon workers) move every byte where the layouts say, and back.

use super::{Engine, Mode};
use mnsim_arch::{DType, TensorLayout, XlaLayout};

#[test]
fn load_relayout_store_returns_the_tensor() {
    let m = mnsim_arch::preset("toy4").expect("toy4 is a preset");
    let mut e = Engine::new(m.clone(), Mode::Functional);
    let dims = vec![8u64, 4];
    let data: Vec<u8> = (0..32u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    // Stored column-major in DRAM, so the copies gather across strides.
    let xla = XlaLayout {
        minor_to_major: vec![0, 1],
        ..XlaLayout::default_for(2)
    };
    let x = e
        .state
        .declare(
            "x",
            DType::F32,
            dims.clone(),
            dims.clone(),
            xla,
            Some(data.clone()),
        )
        .expect("declared");
    let parse = |t: &str| TensorLayout::parse(t, &m, Some(&dims), DType::F32).expect(t);
    e.load(x, parse("((4_PE, 2:4), (4:1))")).expect("load");
    e.relayout("Relayout", x, parse("((8:1), (4_PE))"), None)
        .expect("relayout");
    e.store(x, XlaLayout::default_for(2)).expect("store");
    assert_eq!(e.state.dram_row_major(x), Some(data));
}
