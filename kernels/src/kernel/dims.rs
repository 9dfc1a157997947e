//! Dimension lists: their text in messages and their element count.

/// `[4,8]`.
pub(crate) fn fmt_dims(d: &[u64]) -> String {
    let s: Vec<String> = d.iter().map(u64::to_string).collect();
    format!("[{}]", s.join(","))
}

/// Product of the dimensions (saturating).
pub(crate) fn numel(d: &[u64]) -> u64 {
    d.iter().fold(1u64, |a, &b| a.saturating_mul(b))
}
