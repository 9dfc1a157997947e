//! The real workloads the repository holds (`scenarios/workloads/`): the oneDNN graphs of
//! `graphs/`, oneDNN's whole corpus `onednn/`, JAX's StableHLO exports `stablehlo/` and
//! the whole models of `models/`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `scenarios/workloads/NAME` of this repository.
pub fn workloads(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/workloads")
        .join(name);
    assert!(d.is_dir(), "{} is missing", d.display());
    d
}

/// `scenarios/workloads/graphs`: 25 real oneDNN graphs.
pub fn dir() -> PathBuf {
    workloads("graphs")
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

/// `scenarios/workloads/onednn`: oneDNN's whole graph corpus.
pub fn onednn_dir() -> PathBuf {
    workloads("onednn")
}

/// Every graph file (`*.json`) of the oneDNN corpus, in its sub-folders, sorted by path.
pub fn onednn_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![onednn_dir()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Resolves plan `plan` of an imported graph (with the `--set`s `sets`) and runs it in
/// `mode`: the scenario the import built, its printed text the source messages point into.
pub fn run_imported(
    imp: &mnsim_sim::import::Imported,
    name: &str,
    plan: &str,
    sets: &[(String, f64)],
    mode: mnsim_sim::scenario::Mode,
) -> mnsim_sim::run::RunOutput {
    let src = mnsim_sim::scenario::Source {
        path: name.into(),
        text: imp.text.clone(),
    };
    let mut res =
        mnsim_sim::scenario::resolve(&imp.scenario, &src, Some(plan), sets, &Default::default())
            .unwrap_or_else(|e| panic!("{name} {plan}: {e:?}"));
    res.mode = mode;
    mnsim_sim::run::run(&res).unwrap_or_else(|e| panic!("{name} {plan} {mode:?}: {e}"))
}

/// Plans plan `auto` of a graph file as `mnsim run G.json` does (the default work
/// budget, no time limit) and runs the plan in timing mode: its report.
pub fn plan_and_run(path: &Path) -> mnsim_reports::Report {
    let (mut sc, mut src) = mnsim_sim::load::load(path).unwrap();
    let note = mnsim_sim::import::plan_auto(&mut sc, &mut src, &[], &Default::default());
    assert!(note.starts_with("planned "), "{}: {note}", path.display());
    let mut res =
        mnsim_sim::scenario::resolve(&sc, &src, Some("auto"), &[], &Default::default()).unwrap();
    res.mode = mnsim_sim::scenario::Mode::Timing;
    mnsim_sim::run::run(&res).unwrap().report
}
