//! oneDNN's whole graph corpus (`../shared/onednn/`, 283 files): how many import and
//! run in timing mode under the import's default layouts (the plan `mnsim run G.json`
//! falls back to and seeds its planning with), and every small one (each tensor at most
//! 2^21 elements) verifies in functional mode against the host reference. The test
//! prints each failing file with its blocker and a table of blockers by count, and fails
//! below [`MIN_SHARE`] of the corpus, on any panic, or on a small file that runs but
//! does not verify.

mod common;

use mnsim_sim::import::{self, Options};
use mnsim_sim::scenario::{self, Mode, Source};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The share of the corpus that must run in timing mode.
const MIN_SHARE: f64 = 0.90;

/// Files small enough to verify in functional mode: every tensor at most this many
/// elements.
const SMALL: u64 = 1 << 21;

/// Under the README's test command, the small files of at most this many FLOP verify
/// (the functional engine evaluates kernels element by element: a 2^30-FLOP MatMul
/// takes a minute); `cargo test --release --test onednn_corpus -- --ignored` verifies
/// every small file.
const CI_VERIFY_FLOP: u64 = 1 << 25;

/// What became of one file.
enum Outcome {
    /// Ran in timing mode; `verified` for a small file run in functional mode.
    Ran {
        flop: u64,
        verified: Option<bool>,
    },
    /// Stopped with a clean error: the blocker.
    Blocked(String),
    Panicked(String),
}

/// The error's class: the unsupported kind or dtype it names, else its text with the
/// numbers and quoted names taken out.
fn blocker(message: &str) -> String {
    let text: String = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let text = text.split("help:").next().unwrap_or(&text).to_string();
    for key in ["op kind `", "dtype `", "data type `"] {
        if let Some(i) = text.find(key) {
            let rest = &text[i + key.len()..];
            let name = rest.split('`').next().unwrap_or(rest);
            return format!("{}{name}`", &key);
        }
    }
    // The message after the location prefix (`file:line:col: graph[..] (...): `).
    let body = text.rsplit("): ").next().unwrap_or(&text);
    let mut out = String::new();
    let mut in_quote = false;
    for c in body.chars() {
        match c {
            '`' => {
                in_quote = !in_quote;
                if in_quote {
                    out.push_str("`…`");
                }
            }
            _ if in_quote => {}
            '0'..='9' => {
                if !out.ends_with('N') {
                    out.push('N');
                }
            }
            _ => out.push(c),
        }
    }
    out.chars().take(110).collect()
}

fn run_file(path: &Path, verify_cap: u64) -> Outcome {
    let text = std::fs::read_to_string(path).unwrap();
    let src = Source {
        path: path.display().to_string(),
        text,
    };
    let imported = match import::import(&src, &Options::default()) {
        Ok(i) => i,
        Err(e) => return Outcome::Blocked(blocker(&e.to_string())),
    };
    let name = format!("{} (imported)", path.display());
    // What `import -o` writes parses back to the scenario the import built (a panic
    // here fails the test, naming the file).
    let printed = scenario::parse(&imported.text, &name)
        .unwrap_or_else(|e| panic!("the printed scenario does not parse: {e:?}"));
    assert!(
        printed == imported.scenario,
        "the printed scenario parses to another one"
    );
    let sc = imported.scenario;
    let isrc = Source {
        path: name,
        text: imported.text.clone(),
    };
    let run = |mode: Mode| -> Result<mnsim_reports::Report, String> {
        let mut res = scenario::resolve(&sc, &isrc, Some("default"), &[], &BTreeMap::new())
            .map_err(|e| e.to_string())?;
        res.mode = mode;
        mnsim_sim::run::run(&res)
            .map(|o| o.report)
            .map_err(|e| e.to_string())
    };
    let flop = match run(Mode::Timing) {
        Err(e) => return Outcome::Blocked(blocker(&e)),
        Ok(r) => r.ops.iter().filter_map(|o| o.flops).sum::<u64>(),
    };
    if imported.max_elems > SMALL || flop > verify_cap {
        return Outcome::Ran {
            flop,
            verified: None,
        };
    }
    let verified = match run(Mode::Functional) {
        Ok(r) => r.verified == Some(true),
        Err(e) => {
            eprintln!("{}: the functional run failed: {e}", path.display());
            false
        }
    };
    Outcome::Ran {
        flop,
        verified: Some(verified),
    }
}

#[test]
fn the_corpus_runs_and_its_small_files_verify() {
    check(CI_VERIFY_FLOP);
}

#[test]
#[ignore = "verifies every small file in functional mode: about ten minutes on two cores"]
fn every_small_file_verifies() {
    check(u64::MAX);
}

fn check(verify_cap: u64) {
    let files = common::graphs::onednn_files();
    assert!(files.len() >= 283, "{} files in shared/onednn", files.len());
    let outcomes: Vec<(String, Outcome)> = files
        .par_iter()
        .map(|p| {
            let rel = p
                .components()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<PathBuf>()
                .display()
                .to_string();
            let t0 = std::time::Instant::now();
            let o = std::panic::catch_unwind(|| run_file(p, verify_cap)).unwrap_or_else(|e| {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Outcome::Panicked(msg)
            });
            println!("{:8.2} s  {rel}", t0.elapsed().as_secs_f64());
            (rel, o)
        })
        .collect();
    let mut by_blocker: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let (mut ran, mut small, mut verified) = (0usize, 0usize, 0usize);
    let mut panics = Vec::new();
    let mut unverified = Vec::new();
    for (f, o) in &outcomes {
        match o {
            Outcome::Ran { flop, verified: v } => {
                ran += 1;
                println!("runs: {f}: {flop} FLOP, verified {v:?}");
                if let Some(v) = v {
                    small += 1;
                    if *v {
                        verified += 1;
                    } else {
                        unverified.push(f.as_str());
                    }
                }
            }
            Outcome::Blocked(b) => {
                println!("blocked: {f}: {b}");
                by_blocker.entry(b.clone()).or_default().push(f);
            }
            Outcome::Panicked(m) => panics.push(format!("{f}: {m}")),
        }
    }
    let mut table: Vec<_> = by_blocker.iter().collect();
    table.sort_by_key(|(b, v)| (std::cmp::Reverse(v.len()), b.to_string()));
    println!("\nblockers by count:");
    for (b, v) in &table {
        println!("{:4}  {b}", v.len());
    }
    let share = ran as f64 / files.len() as f64;
    println!(
        "\n{ran} of {} files run in timing mode ({:.1}%); {verified} of {small} small ones verify",
        files.len(),
        share * 100.0
    );
    assert!(panics.is_empty(), "panics: {panics:#?}");
    assert!(
        unverified.is_empty(),
        "small files that run but do not verify: {unverified:#?}"
    );
    assert!(
        share >= MIN_SHARE,
        "only {ran} of {} files run ({:.1}% < {:.0}%)",
        files.len(),
        share * 100.0,
        MIN_SHARE * 100.0
    );
}
