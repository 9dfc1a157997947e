//! The shipped bandwidth study (`scenarios/studies/peak_matmul_bandwidth.sh`) and the
//! helpers that run the cluster files against it: shell commands from the repository's
//! root with the built `mnsim` on PATH, and the byte-for-byte comparison of two sweeps.
#![allow(dead_code)]

use super::tmp::{TempDir, tempdir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh, empty folder of the system's temp dir, `mnsim-cluster-<name>-XXXXXX`, removed
/// when the returned value is dropped.
pub fn scratch(name: &str) -> TempDir {
    tempdir(&format!("cluster-{name}"))
}

/// The built binary.
pub fn mnsim() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_mnsim"))
}

/// PATH with the built binary's folder first.
pub fn path_with_mnsim() -> String {
    format!(
        "{}:{}",
        mnsim().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A shell command run from the repository's root with `mnsim` on PATH.
pub fn sh(shell: &str, script: &[&str], env: &[(&str, String)]) {
    let out = Command::new(shell)
        .args(script)
        .current_dir(root())
        .env("PATH", path_with_mnsim())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file a sweep writes.
pub const FILES: [&str; 4] = ["sweep.csv", "sweep.json", "sweep.svg", "sweep.html"];

/// The two sweeps' files are equal byte for byte.
pub fn same_files(a: &Path, b: &Path) {
    for f in FILES {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// The unsharded study, and its chart as committed in docs/: its folder, and the scratch
/// folder holding it (keep that alive while the study's files are read).
pub fn study(name: &str) -> (TempDir, PathBuf) {
    let out = scratch(name);
    let dir = out.path().join("whole");
    sh(
        "sh",
        &[
            "scenarios/studies/peak_matmul_bandwidth.sh",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    let shipped = std::fs::read_to_string(root().join("docs/study_peak_matmul_bandwidth.svg"))
        .expect("the study's chart is committed");
    assert_eq!(
        std::fs::read_to_string(dir.join("sweep.svg")).unwrap(),
        shipped,
        "docs/study_peak_matmul_bandwidth.svg is out of date: rerun the study"
    );
    (out, dir)
}
