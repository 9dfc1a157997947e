pub mod boards;
pub mod energy;
pub mod graphs;
pub mod kernels;
pub mod model;
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

/// Runs the `mnsim` binary with `args` (no colour), whether or not it succeeds.
#[allow(dead_code)]
pub fn mnsim_output(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("mnsim runs")
}

/// Runs the `mnsim` binary with `args` (no colour), which must succeed; its standard
/// output.
#[allow(dead_code)]
pub fn mnsim(args: &[&str]) -> String {
    let out = mnsim_output(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}
