pub mod boards;
pub mod energy;
pub mod graphs;
pub mod kernels;
pub mod random;
pub mod shlo;
pub mod study;
pub mod tmp;

/// A diagnostic as one line: miette's gutter gone and every run of whitespace (its line
/// breaks, which fall where the width and the file's path put them) one space.
#[allow(dead_code)]
pub fn one_line(s: &str) -> String {
    s.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
