//! The Python package (`sim/python`): the README's `pip install` line builds it into a
//! fresh virtual environment, and its pytest suite (`sim/python/tests`) runs there
//! against this build's `mnsim` binary: every result of `import mnsim` equals the
//! command line's, errors carry its messages, and the overhead over the Rust call is
//! under 10 ms. The wheel is built in the workspace's `target/` (cargo holds its lock
//! only while it builds, not while the tests run), reusing the release build.
//!
//! Without `python3` (with `venv` and `pip`) the test is skipped with a note, except
//! when the `CI` environment variable is set: there it fails, since CI installs them
//! (`.ci/run`). pandas, pytest, matplotlib and jax come from PyPI; the `from_torch` test
//! and the PyTorch block of docs/python.md run where torch is installed in that
//! environment (`MNSIM_PYTEST_EXTRA="torch onnxscript"` adds it), and are skipped,
//! saying so, otherwise.

use std::path::Path;
use std::process::Command;

fn python() -> Option<&'static str> {
    ["python3", "python"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import venv, ensurepip"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn the_python_package_installs_and_matches_the_cli() {
    let Some(py) = python() else {
        if std::env::var_os("CI").is_some() {
            panic!("python3 with venv and pip is missing: CI must install it (see .ci/run)");
        }
        eprintln!("note: no python3 with venv and pip: the Python package's test is skipped");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tmp = tempfile::Builder::new()
        .prefix("mnsim-py-")
        .tempdir()
        .unwrap();
    let venv = tmp.path().join("venv");
    ok(
        Command::new(py).args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
    );
    let pip = venv.join("bin/pip");
    let start = std::time::Instant::now();
    // What the tests and docs/python.md use beside the package: jax (CPU, some 100 MB)
    // is cheap enough to install; torch (some 2 GB with its CUDA libraries) is not.
    let mut extra: Vec<String> = ["pytest", "matplotlib", "jax"].map(String::from).to_vec();
    if let Ok(e) = std::env::var("MNSIM_PYTEST_EXTRA") {
        extra.extend(e.split_whitespace().map(String::from));
    }
    ok(
        Command::new(&pip)
            .args(["install", "-q"])
            .arg(root.join("sim/python"))
            .args(&extra)
            .current_dir(&root),
        "pip install ./sim/python",
    );
    eprintln!(
        "pip install ./sim/python: {:.0} s",
        start.elapsed().as_secs_f64()
    );
    // Run from outside the source tree, so that the installed package is the one imported.
    ok(
        Command::new(venv.join("bin/python"))
            .args(["-m", "pytest", "-q", "-s", "-rs"])
            .arg(root.join("sim/python/tests"))
            .env("MNSIM_BIN", env!("CARGO_BIN_EXE_mnsim"))
            .current_dir(tmp.path()),
        "pytest sim/python/tests",
    );
}
