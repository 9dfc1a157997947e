//! Scratch folders in the system's temp dir that are removed when the test is done.
#![allow(dead_code)]

pub use tempfile::TempDir;

/// A fresh, empty folder `mnsim-<name>-XXXXXX` in the system's temp dir, removed with
/// everything in it when the returned value is dropped: bind it (`let dir = ...`, not
/// `let _ = ...`) for as long as its path is used.
pub fn tempdir(name: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("mnsim-{name}-"))
        .tempdir()
        .expect("a scratch folder in the temp dir")
}
