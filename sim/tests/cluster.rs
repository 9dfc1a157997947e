//! The shipped study and the cluster files in docs/cluster/ run as written: each shard
//! script runs locally with its shard index set, the merge they call joins the shards,
//! and the result equals the unsharded study byte for byte (and the chart in docs/).

mod common;

use common::study::{root, same_files, scratch, sh, study};

#[test]
fn the_slurm_array_and_its_merge_give_the_unsharded_study() {
    let (_study, whole) = study("study-slurm");
    let sweep = std::fs::read_to_string(root().join("docs/cluster/sweep.slurm")).unwrap();
    let merge = std::fs::read_to_string(root().join("docs/cluster/merge.slurm")).unwrap();
    assert!(sweep.contains("\"$mnsim\" sweep ") && sweep.contains("--shard "));
    assert!(merge.contains("\"$mnsim\" merge "));
    // The array's size is the shard count.
    let array = sweep
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --array=0-"))
        .expect("an #SBATCH --array line");
    let shards: usize = array.trim().parse::<usize>().unwrap() + 1;
    let dir = scratch("slurm");
    let out = dir.path();
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
    let (_study, whole) = study("study-k8s");
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
    let dir = scratch("k8s");
    let out = dir.path();
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

/// The merge files name no axis: an edited `mnsim sweep` line (other axes, another
/// `--x`) merges with `merge.slurm` as shipped into exactly the unsharded sweep.
#[test]
fn the_merge_takes_the_axes_from_the_sweep() {
    let sweep = std::fs::read_to_string(root().join("docs/cluster/sweep.slurm")).unwrap();
    for file in ["docs/cluster/merge.slurm", "docs/cluster/k8s-merge.yaml"] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains(" merge "))
            .unwrap_or_else(|| panic!("no merge in {file}"));
        for flag in ["--x", "--set", "--metric", "dram.", "links."] {
            assert!(
                !line.contains(flag),
                "{file} names the sweep's `{flag}`: {line}"
            );
        }
    }
    // Another study: the clock against the Group port, charted against the clock, in
    // energy.
    let edited = sweep
        .replace(
            "--set dram.bytes_per_cycle=32,64,128,256,512",
            "--set clock_ghz=0.5,0.75,1",
        )
        .replace("--x dram.bytes_per_cycle", "--x clock_ghz --metric energy");
    assert_ne!(edited, sweep, "the sweep line changed");
    let dir = scratch("edited");
    let out = dir.path();
    let script = out.join("sweep.slurm");
    std::fs::write(&script, &edited).unwrap();
    let shards = 3;
    for i in 0..shards {
        sh(
            "bash",
            &[script.to_str().unwrap()],
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
    let whole = out.join("whole");
    sh(
        "sh",
        &[
            "-c",
            &format!(
                "mnsim sweep scenarios/peak_matmul_fp16.ron --mode timing \
                 --set clock_ghz=0.5,0.75,1 --set links.Group.broadcast.parent=32,64,128,256 \
                 --x clock_ghz --metric energy --out {}",
                whole.display()
            ),
        ],
        &[],
    );
    same_files(&whole, &out.join("merged"));
    let svg = std::fs::read_to_string(out.join("merged/sweep.svg")).unwrap();
    assert!(svg.contains("against clock_ghz"), "{svg}");
}

/// `COPY SRC DST` lines of the Dockerfile's last stage (not `--from`), and its WORKDIR.
fn image_layout(dockerfile: &str) -> (Vec<(String, String)>, String) {
    let last = dockerfile.rsplit("\nFROM ").next().unwrap();
    let mut copies = Vec::new();
    let mut workdir = String::new();
    for l in last.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["COPY", src, dst] => copies.push((src.to_string(), dst.to_string())),
            ["WORKDIR", d] => workdir = d.to_string(),
            _ => {}
        }
    }
    (copies, workdir)
}

/// Every `mnsim ...` command the docs give: the `sh` blocks of the README and docs/*.md,
/// and the Kubernetes manifests' scripts.
fn documented_commands() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pages = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            pages.push(p);
        }
    }
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut in_sh = false;
        let mut cmd = String::new();
        for l in text.lines() {
            let t = l.trim();
            if t.starts_with("```") {
                in_sh = !in_sh && t == "```sh";
                continue;
            }
            if !in_sh {
                continue;
            }
            cmd.push_str(t.trim_end_matches('\\'));
            cmd.push(' ');
            if t.ends_with('\\') {
                continue;
            }
            let c = std::mem::take(&mut cmd);
            let c = c.trim().trim_start_matches("cargo run --release --").trim();
            if c.starts_with("mnsim ") {
                out.push((page.display().to_string(), c.to_string()));
            }
        }
    }
    for m in ["docs/cluster/k8s-sweep.yaml", "docs/cluster/k8s-merge.yaml"] {
        let text = std::fs::read_to_string(root().join(m)).unwrap();
        out.extend(mnsim_lines(&text).into_iter().map(|c| (m.to_string(), c)));
    }
    out
}

/// The container image holds what the docs run: `mnsim` on PATH, the manifests' working
/// directory, and every repository file a documented `mnsim` command names, under it.
#[test]
fn the_image_holds_every_file_the_docs_run_mnsim_on() {
    let dockerfile = std::fs::read_to_string(root().join("docs/cluster/Dockerfile")).unwrap();
    let (copies, workdir) = image_layout(&dockerfile);
    assert!(
        dockerfile.contains("COPY --from=build /usr/local/bin/mnsim /usr/local/bin/mnsim"),
        "mnsim on the image's PATH"
    );
    for m in ["docs/cluster/k8s-sweep.yaml", "docs/cluster/k8s-merge.yaml"] {
        let text = std::fs::read_to_string(root().join(m)).unwrap();
        assert_eq!(yaml_value(&text, "workingDir:"), workdir, "{m}");
        assert_eq!(yaml_value(&text, "image:"), "mnsim:latest", "{m}");
    }
    let ignored = std::fs::read_to_string(root().join(".dockerignore")).unwrap();
    let ignored: Vec<&str> = ignored
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for keep in ["target", ".git"] {
        assert!(
            ignored.contains(&keep),
            ".dockerignore keeps {keep} in the context"
        );
    }
    let commands = documented_commands();
    assert!(commands.len() > 20, "{commands:?}");
    let mut named = 0;
    for (page, cmd) in &commands {
        for word in cmd.split_whitespace() {
            let w = word.trim_matches(['"', '\'']);
            let path = root().join(w);
            if w.starts_with('-') || !w.contains('/') || !path.is_file() {
                continue;
            }
            named += 1;
            let copied = copies.iter().any(|(src, dst)| {
                w.starts_with(&format!("{src}/")) && *dst == format!("{workdir}/{src}")
            });
            assert!(copied, "{page}: `{cmd}` runs on {w}, which the image lacks");
            assert!(
                !ignored.iter().any(|i| w.starts_with(&format!("{i}/"))),
                "{w} is left out of the build's context"
            );
        }
    }
    assert!(named >= 10, "only {named} files named");
}
