//! The repository stands alone: no test, bench, script or doc reads a folder beside the
//! clone, and the workloads they read are in `scenarios/workloads/` with their licence.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every text file the repository's tests, benches, scripts and docs are made of.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | "workloads") {
                sources(&p, out);
            }
        } else if ["rs", "md", "sh", "py", "slurm", "yaml", "toml", "ron"]
            .iter()
            .any(|x| p.extension().is_some_and(|e| e == *x))
            || name == "Dockerfile"
            || name == "run"
        {
            out.push(p);
        }
    }
}

#[test]
fn nothing_reads_a_folder_beside_the_clone() {
    let mut files = Vec::new();
    sources(&root(), &mut files);
    assert!(files.len() > 100, "{} files", files.len());
    // Written in two pieces so that this file does not name it.
    let beside = format!("../{}/", "shared");
    let bad: Vec<String> = (files.iter())
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&beside)))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        bad.is_empty(),
        "these read a folder beside the clone: {bad:?}"
    );
}

#[test]
fn the_workloads_are_in_the_repository_with_their_licence() {
    let w = root().join("scenarios/workloads");
    let count = |d: &str, ext: &str| {
        let mut n = 0;
        let mut dirs = vec![w.join(d)];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|e| e == ext) {
                    n += 1;
                }
            }
        }
        n
    };
    assert_eq!(count("onednn", "json"), 283);
    assert_eq!(count("graphs", "json"), 25);
    assert_eq!(count("stablehlo", "mlir"), 14);
    assert_eq!(count("models", "mlir"), 3);
    for d in ["onednn", "graphs"] {
        let licence = std::fs::read_to_string(w.join(d).join("LICENSE")).unwrap();
        assert!(licence.contains("Apache License") && licence.contains("Version 2.0"));
    }
    for d in ["onednn", "graphs", "stablehlo", "models"] {
        assert!(w.join(d).join("README.md").is_file(), "{d}/README.md");
    }
}
