//! What keeps a sweep safe: its axes checked before any point runs, the sweep's identity
//! (scenario text hash, schedule, mode), and `points.jsonl`, the append-only log of
//! finished points in the `--out` folder that an interrupted sweep resumes from.

use miette::{Report, miette};
use mnsim_reports::{AxisKind, Sweep, SweepAxis, SweepRow};
use mnsim_sim::scenario::{self, MachineRef, Scenario, Source};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The first line of `points.jsonl`.
const POINTS_SCHEMA: &str = "mnsim.points/2";

/// 64-bit FNV-1a, in hex: the same on every machine.
fn fnv1a(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// A hash of what the sweep's points depend on besides the swept values: the scenario's
/// text and, when it names a machine file, that file's text.
pub fn scenario_hash(sc: &Scenario, src: &Source) -> String {
    let machine = match &sc.machine {
        MachineRef::File(f) => {
            let base = Path::new(&src.path).parent().unwrap_or(Path::new(""));
            mnsim_sim::input::read_text(&base.join(f)).unwrap_or_default()
        }
        MachineRef::Preset(p) => p.clone(),
    };
    fnv1a(&[src.text.as_bytes(), machine.as_bytes()])
}

/// Every swept knob name and value applied to the scenario's machine, and every swept
/// dimension named by a tensor, before any point runs. A machine that does not load is
/// left to the points (each fails with the scenario's own error).
pub fn check_axes(sc: &Scenario, src: &Source, axes: &[SweepAxis]) -> Result<(), Report> {
    let machine = scenario::machine(sc, src).ok().map(|mut m| {
        for (k, v) in &sc.overrides {
            let _ = mnsim_arch::set_knob(&mut m, k, *v);
        }
        m
    });
    let mut dims: Vec<String> = Vec::new();
    for decl in sc.tensors.values() {
        if let Ok(s) = mnsim_arch::shape::parse(&decl.shape) {
            for d in &s.dims {
                if let Some(n) = d.name().filter(|n| !dims.iter().any(|x| x == n)) {
                    dims.push(n.to_string());
                }
            }
        }
    }
    for ax in axes {
        match ax.kind {
            // A knob group is expanded and checked with its knobs (`sweep_axes.rs`).
            AxisKind::Knob if ax.scale || ax.name.contains(['*', ',']) => {}
            AxisKind::Knob => {
                let Some(m) = &machine else { continue };
                for &v in &ax.values {
                    mnsim_arch::set_knob(&mut m.clone(), &ax.name, v).map_err(|e| {
                        miette!(
                            "error: --set {}={}: {e} (checked before any point ran)",
                            ax.name,
                            mnsim_arch::Num(v)
                        )
                    })?;
                }
            }
            AxisKind::Bind => {
                if !dims.contains(&ax.name) {
                    return Err(miette!(
                        "error: --bind {}: no tensor of {} has a dimension named `{}`{}",
                        ax.name,
                        src.path,
                        ax.name,
                        if dims.is_empty() {
                            " (it has no named dimensions)".to_string()
                        } else {
                            format!(" (its named dimensions: {})", dims.join(", "))
                        }
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `points.jsonl` in a sweep's `--out` folder: a header line (`{"schema", "sweep"}`, the
/// sweep's identity) then one finished row per line, appended as each point ends, each
/// with the sweep's id (a hash of the header). Held locked while the sweep runs: a second
/// sweep into the same folder fails at once.
pub struct Log {
    path: PathBuf,
    header: Value,
    /// The sweep's id: what every row carries.
    id: String,
    file: Mutex<File>,
    /// Rows of an earlier, interrupted run of the same sweep that ran (failed ones run
    /// again), by (point, plan).
    pub done: BTreeMap<(usize, Option<String>), SweepRow>,
    /// The first error appending a row (a full disk): the sweep fails at its end.
    failed: Mutex<Option<std::io::Error>>,
}

/// A line of `points.jsonl` after the header: the sweep's id, then the row.
#[derive(Serialize, Deserialize)]
struct LogRow {
    sweep: String,
    #[serde(flatten)]
    row: SweepRow,
}

/// The rows of a log's text after its header, each checked: `Ok` with the finished rows
/// and the length of the text to keep (a last line cut short by an interrupt is left
/// out: its point runs again), or the line that is not a row of this sweep.
struct Rows {
    done: BTreeMap<(usize, Option<String>), SweepRow>,
    keep: usize,
}

/// Reads and checks the rows of `text` (the log of the sweep `sweep`, whose rows carry
/// `id`): every row parses, carries the sweep's id, is one of its points and plans with a
/// result or an error ([`mnsim_reports::row_problem`]), and a point and plan comes again
/// only after it failed. The message names the line.
fn read_rows(path: &Path, text: &str, id: &str, sweep: &Sweep) -> Result<Rows, Report> {
    let mut done = BTreeMap::new();
    // (point, plan) → the line of its row and whether it ran.
    let mut seen: BTreeMap<(usize, Option<String>), (usize, SweepRow)> = BTreeMap::new();
    let mut offset = 0;
    let mut keep = text.len();
    for (k, line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        let n = k + 1;
        let body = line.trim_end_matches('\n');
        if k == 0 || body.trim().is_empty() {
            continue;
        }
        let checked = check_row(body, id, sweep).and_then(|row| {
            let key = (row.point, row.plan.clone());
            match seen.get(&key) {
                Some((first, old)) if old.error.is_none() && *old != row => Err(format!(
                    "point {}, plan {} is given twice, with other figures (first at line {first})",
                    row.point,
                    row.plan.as_deref().unwrap_or("null")
                )),
                _ => Ok((key, row)),
            }
        });
        match checked {
            Ok((key, row)) => {
                if row.error.is_none() {
                    done.insert(key.clone(), row.clone());
                } else {
                    done.remove(&key);
                }
                seen.insert(key, (n, row));
            }
            // A last line cut short by an interrupt: its point runs again.
            Err(_) if !line.ends_with('\n') => keep = start,
            Err(problem) => {
                return Err(miette!(
                    "error: {}:{n}: {problem}; remove the line (or the folder, to start the \
                     sweep over)",
                    path.display()
                ));
            }
        }
    }
    Ok(Rows { done, keep })
}

/// The row on a line of the log of `sweep` (whose rows carry `id`), or why it is not one.
fn check_row(line: &str, id: &str, sweep: &Sweep) -> Result<SweepRow, String> {
    let r: LogRow = serde_json::from_str(line).map_err(|e| {
        // serde's position is within the line, which the message names already.
        let e = e.to_string();
        let e = e.rsplit_once(" at line ").map_or(e.as_str(), |(e, _)| e);
        format!("not a row of this sweep's log ({e})")
    })?;
    if r.sweep != id {
        return Err(format!(
            "a row of another sweep (sweep {}, this one is {id}: another scenario text, \
             schedule, mode, plans, axes or shard)",
            r.sweep
        ));
    }
    match mnsim_reports::row_problem(sweep, &r.row) {
        Some(problem) => Err(problem),
        None => Ok(r.row),
    }
}

impl Log {
    /// Opens (or starts) the log of the sweep `sweep` (its identity; its rows are not
    /// read) in `dir`, refusing a folder `--out` may not replace, or a log of this sweep
    /// with a line that is not one of its rows, before any point runs.
    pub fn open(dir: &Path, sweep: &Sweep) -> Result<Log, Report> {
        let werr = |e: std::io::Error| miette!("error: writing {}: {e}", dir.display());
        mnsim_reports::check_out_dir(dir).map_err(werr)?;
        std::fs::create_dir_all(dir).map_err(werr)?;
        let path = dir.join("points.jsonl");
        let perr = |e: std::io::Error| miette!("error: {}: {e}", path.display());
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(perr)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(miette!(
                    "error: another mnsim sweep is writing {} (it holds {}): wait for it to \
                     finish or give another --out",
                    dir.display(),
                    path.display()
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(perr(e)),
        }
        let mut text = String::new();
        // A log that is not text is not ours to resume from: started over below.
        let _ = file.read_to_string(&mut text);
        let mut key = serde_json::to_value(sweep).unwrap_or_default();
        if let Some(o) = key.as_object_mut() {
            // What the points depend on: not the rows, nor how the chart is drawn.
            for k in ["rows", "x", "metric"] {
                o.remove(k);
            }
        }
        let header = json!({"schema": POINTS_SCHEMA, "sweep": key});
        let id = fnv1a(&[header.to_string().as_bytes()]);
        let same = text
            .lines()
            .next()
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .is_some_and(|h| h == header);
        let mut done = BTreeMap::new();
        if same {
            let rows = read_rows(&path, &text, &id, sweep)?;
            done = rows.done;
            if rows.keep < text.len() {
                file.set_len(rows.keep as u64).map_err(perr)?;
            } else if !text.ends_with('\n') {
                file.seek(SeekFrom::End(0)).map_err(perr)?;
                file.write_all(b"\n").map_err(perr)?;
            }
        } else {
            if !text.is_empty() {
                eprintln!(
                    "note: {} is from another sweep (another scenario text, schedule, mode \
                     or axes, or an older mnsim): starting over",
                    path.display()
                );
            }
            file.set_len(0).map_err(perr)?;
            file.seek(SeekFrom::Start(0)).map_err(perr)?;
            file.write_all(format!("{header}\n").as_bytes())
                .map_err(perr)?;
        }
        file.seek(SeekFrom::End(0)).map_err(perr)?;
        Ok(Log {
            path,
            header,
            id,
            file: Mutex::new(file),
            done,
            failed: Mutex::new(None),
        })
    }

    /// A row as a line of the log.
    fn line(&self, row: &SweepRow) -> String {
        let r = LogRow {
            sweep: self.id.clone(),
            row: row.clone(),
        };
        serde_json::to_string(&r).unwrap_or_default()
    }

    /// Appends a finished row (one write of one line, so an interrupt cuts at most the
    /// line being written).
    pub fn append(&self, row: &SweepRow) {
        let line = format!("{}\n", self.line(row));
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = f.write_all(line.as_bytes()) {
            let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
            failed.get_or_insert(e);
        }
    }

    /// The error of an append, if one failed.
    pub fn check(&self) -> Result<(), Report> {
        match self.failed.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(miette!("error: writing {}: {e}", self.path.display())),
            None => Ok(()),
        }
    }

    /// The log as the finished sweep leaves it: the header and every row in order.
    pub fn text(&self, rows: &[SweepRow]) -> String {
        let mut out = format!("{}\n", self.header);
        for r in rows {
            out.push_str(&self.line(r));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_fixed_and_separates_parts() {
        assert_eq!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"ab", b"c"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[]), "cbf29ce484222325");
    }
}
