//! Fuzz the XLA / StableHLO shape parser: never panics, and printing round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnsim_arch::shape::Shape;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(s) = text.parse::<Shape>() {
        let again: Shape = s.to_string().parse().expect("printed shape parses");
        assert_eq!(s, again);
    }
});
