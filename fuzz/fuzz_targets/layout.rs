//! Fuzz the TensorLayout parser and binder: any text, on every preset, never panics,
//! and an accepted layout prints to a canonical form that parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnsim_arch::{DType, PRESETS, TensorLayout, preset};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for name in PRESETS {
        let m = preset(name).expect("presets load");
        for dtype in [DType::F32, DType::F16] {
            if let Ok(l) = TensorLayout::parse(text, &m, None, dtype) {
                let again = TensorLayout::parse(&l.canonical(), &m, None, dtype).expect("canonical parses");
                assert_eq!(l, again);
            }
        }
    }
});
