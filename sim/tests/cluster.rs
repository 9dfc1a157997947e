//! The shipped study and the cluster files in docs/cluster/ run as written: each shard
//! script runs locally with its shard index set, the merge they call joins the shards,
//! and the result equals the unsharded study byte for byte (and the chart in docs/).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mnsim-cluster-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A shell command run from the repository's root with `mnsim` on PATH.
fn sh(shell: &str, script: &[&str], env: &[(&str, String)]) {
    let bin = Path::new(env!("CARGO_BIN_EXE_mnsim")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(shell)
        .args(script)
        .current_dir(root())
        .env("PATH", path)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const FILES: [&str; 4] = ["sweep.csv", "sweep.json", "sweep.svg", "sweep.html"];

fn same_files(a: &Path, b: &Path) {
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

/// The unsharded study, and its chart as committed in docs/.
fn study(name: &str) -> PathBuf {
    let out = scratch(name);
    let dir = out.join("whole");
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
    dir
}

#[test]
fn the_slurm_array_and_its_merge_give_the_unsharded_study() {
    let whole = study("study-slurm");
    let sweep = std::fs::read_to_string(root().join("docs/cluster/sweep.slurm")).unwrap();
    let merge = std::fs::read_to_string(root().join("docs/cluster/merge.slurm")).unwrap();
    assert!(sweep.contains("mnsim sweep ") && sweep.contains("--shard "));
    assert!(merge.contains("mnsim merge "));
    // The array's size is the shard count.
    let array = sweep
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --array=0-"))
        .expect("an #SBATCH --array line");
    let shards: usize = array.trim().parse::<usize>().unwrap() + 1;
    let out = scratch("slurm");
    for i in 0..shards {
        sh(
            "bash",
            &["docs/cluster/sweep.slurm"],
            &[
                ("SLURM_ARRAY_TASK_ID", i.to_string()),
                ("SLURM_ARRAY_TASK_COUNT", shards.to_string()),
                ("MNSIM_SWEEP_OUT", out.display().to_string()),
            ],
        );
    }
    sh(
        "bash",
        &["docs/cluster/merge.slurm"],
        &[("MNSIM_SWEEP_OUT", out.display().to_string())],
    );
    same_files(&whole, &out.join("merged"));
}

/// The `mnsim ...` lines of a manifest's shell script (`args: - |` block).
fn mnsim_lines(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("mnsim "))
        .map(String::from)
        .collect()
}

fn yaml_value(manifest: &str, key: &str) -> String {
    manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .unwrap_or_else(|| panic!("no `{key}` in the manifest"))
        .trim()
        .trim_matches('"')
        .to_string()
}

#[test]
fn the_kubernetes_indexed_job_and_its_merge_give_the_unsharded_study() {
    let whole = study("study-k8s");
    let job = std::fs::read_to_string(root().join("docs/cluster/k8s-sweep.yaml")).unwrap();
    let merge = std::fs::read_to_string(root().join("docs/cluster/k8s-merge.yaml")).unwrap();
    assert!(job.contains("completionMode: Indexed"));
    let completions = yaml_value(&job, "completions:");
    // The SHARDS variable the pods read is the Job's completion count.
    let shards_env = job
        .lines()
        .skip_while(|l| !l.contains("name: SHARDS"))
        .nth(1)
        .map(|l| yaml_value(l, "value:"))
        .expect("a SHARDS variable");
    assert_eq!(shards_env, completions);
    let shards: usize = completions.parse().unwrap();
    let sweep_lines = mnsim_lines(&job);
    let merge_lines = mnsim_lines(&merge);
    assert_eq!(sweep_lines.len(), 1, "{sweep_lines:?}");
    assert_eq!(merge_lines.len(), 1, "{merge_lines:?}");
    let out = scratch("k8s");
    for i in 0..shards {
        sh(
            "sh",
            &["-c", &format!("set -eu; {}", sweep_lines[0])],
            &[
                ("JOB_COMPLETION_INDEX", i.to_string()),
                ("SHARDS", shards.to_string()),
                ("OUT", out.display().to_string()),
            ],
        );
    }
    sh(
        "sh",
        &["-c", &format!("set -eu; {}", merge_lines[0])],
        &[("OUT", out.display().to_string())],
    );
    same_files(&whole, &out.join("merged"));
}
