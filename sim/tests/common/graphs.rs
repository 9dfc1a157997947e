//! The real oneDNN graphs of `shared/graphs`, beside the repository.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `shared/graphs` beside the repository (found from the crate upwards, so it is found
/// from any checkout that has `shared/` beside it).
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/graphs"))
        .find(|p| p.is_dir())
        .expect("shared/graphs beside the repository")
}

/// Every graph file (`*.json`), sorted.
pub fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}
