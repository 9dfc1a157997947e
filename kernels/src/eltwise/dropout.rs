//! Dropout's seeded mask: a counter-based hash (SplitMix64) of the seed, offset and
//! element index, the same on the machine and in the reference.

/// SplitMix64's finaliser.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The uniform number in [0, 1) of element `index` for `seed` and `offset` (the values
/// of Dropout's one-element inputs, converted to integers).
pub fn dropout_uniform(seed: f64, offset: f64, index: u64) -> f64 {
    let s = seed as i64 as u64;
    let o = offset as i64 as u64;
    let u = mix64(s ^ mix64(o.wrapping_add(index)));
    (u >> 11) as f64 / (1u64 << 53) as f64
}

/// Dropout of `x` at row-major `index`.
pub fn dropout(x: f64, seed: f64, offset: f64, p: f64, index: u64) -> f64 {
    if p.is_nan() || p >= 1.0 {
        return 0.0;
    }
    if p <= 0.0 {
        return x;
    }
    if dropout_uniform(seed, offset, index) >= p {
        x / (1.0 - p)
    } else {
        0.0
    }
}

/// Dropout's one-element inputs read as `[0]` whatever their rank: the fetch of an
/// input of rank `k` gets `[0; k]`.
pub(crate) fn scalar_index(shape: &[u64]) -> Vec<u64> {
    vec![0; shape.len()]
}
