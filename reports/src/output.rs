//! Writing a run's files into an output directory all at once or not at all, replacing
//! whatever an earlier run left there.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, ErrorKind, Write};
use std::path::{Component, Path, PathBuf};

use crate::atomic::{Temp, resolve_links};

/// Names of the files mnsim writes into an output directory (at its top or in a plan's
/// folder). A directory holding only these (and folders of them) is an earlier run's and
/// may be replaced.
pub const OUTPUT_NAMES: [&str; 12] = [
    "report.json",
    "report.md",
    "report.html",
    "trace.json",
    "ops.csv",
    "compare.json",
    "compare.html",
    "sweep.csv",
    "sweep.json",
    "sweep.svg",
    "sweep.html",
    "points.jsonl",
];

/// Writes `files` (paths relative to `dir`, contents) as the whole content of `dir`, so that
/// `dir` holds one run: no file of an earlier run survives beside the new ones, and an error
/// (a full disk, an interrupt) leaves `dir` as it was.
///
/// Every file is first written into a temporary sibling directory, `.<dir-name>.<pid>-<n>.tmp`
/// (registered with [`crate::atomic`], so an interrupt removes it); only when all are written
/// and flushed is the new folder swapped in, under the lock `.<dir-name>.lock` beside it: the
/// old `dir` (if any) is moved aside, the new one renamed into its place, and the old one
/// removed. Should the swap fail, the old folder is put back. Two processes writing one
/// `dir` take turns (the second waits for the first's swap, up to [`crate::atomic::LOCK_WAIT`],
/// then fails naming the lock); the last one's folder stays. A `dir` that is a symlink to a
/// directory is followed: its target is replaced and the link kept.
///
/// An existing `dir` is replaced only if it holds nothing but files mnsim writes
/// ([`OUTPUT_NAMES`] and the names being written) and folders of them; a directory with
/// other files (`--out .`, a folder of notes) is refused with [`ErrorKind::AlreadyExists`]
/// before anything is written ([`check_out_dir`] makes the same check before a run).
///
/// Before anything is written, these are rejected with [`ErrorKind::InvalidInput`]: an absolute or
/// empty path, a path with `..`, the same path twice, and a path inside another file's path (`a`
/// and `a/b`). A `dir` that exists and is not a directory is rejected with
/// [`ErrorKind::NotADirectory`].
pub fn write_outputs(dir: &Path, files: &[(PathBuf, Vec<u8>)]) -> io::Result<()> {
    let rels = files
        .iter()
        .map(|(p, _)| relative(p))
        .collect::<io::Result<Vec<_>>>()?;
    check_distinct(&rels)?;
    let dir = real_dir(dir)?;
    let mut allowed = allowed_names();
    allowed.extend(rels.iter().filter_map(|r| r.file_name()));
    check_existing(&dir, &allowed)?;
    let Some(parent) = dir.parent() else {
        return Err(invalid(format!(
            "cannot write outputs into {}",
            dir.display()
        )));
    };
    fs::create_dir_all(parent)?;
    let tmp = Temp::beside(&dir, "tmp");
    crate::atomic::critical(|| fs::create_dir(tmp.path()))?;
    stage(tmp.path(), &rels, files)?;
    test_pause();
    let _lock = crate::atomic::Lock::acquire(&dir)?;
    // Another writer may have swapped its folder in while this one staged.
    let exists = check_existing(&dir, &allowed)?;
    crate::atomic::critical(|| swap(tmp.path(), &dir, exists))?;
    crate::atomic::sync_dir(parent);
    drop(tmp);
    Ok(())
}

/// Refuses an output directory [`write_outputs`] would refuse (a file, or a folder with
/// files mnsim did not write), before any work: commands call it before they simulate.
pub fn check_out_dir(dir: &Path) -> io::Result<()> {
    let dir = real_dir(dir)?;
    check_existing(&dir, &allowed_names()).map(|_| ())
}

/// A pause between staging and the swap when `MNSIM_TEST_PAUSE_MS` is set: the tests
/// interrupt a write there (the staging folder exists) to check that nothing is left.
fn test_pause() {
    if let Some(ms) = std::env::var("MNSIM_TEST_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms.min(60_000)));
    }
}

fn allowed_names() -> BTreeSet<&'static std::ffi::OsStr> {
    OUTPUT_NAMES.iter().map(std::ffi::OsStr::new).collect()
}

/// `dir` made absolute, with a trailing `.` resolved and a symlink followed to its target.
fn real_dir(dir: &Path) -> io::Result<PathBuf> {
    let dir = std::path::absolute(dir)?;
    let dir = if dir.file_name().is_some() {
        dir
    } else {
        fs::canonicalize(&dir)?
    };
    let dir = resolve_links(&dir)?;
    if dir.file_name().is_none() || dir.parent().is_none() {
        return Err(invalid(format!(
            "cannot write outputs into {}",
            dir.display()
        )));
    }
    Ok(dir)
}

/// Whether `dir` exists; an error if it is not a directory or holds a file mnsim did not
/// write.
fn check_existing(dir: &Path, allowed: &BTreeSet<&std::ffi::OsStr>) -> io::Result<bool> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(io::Error::new(
                ErrorKind::NotADirectory,
                format!("output directory {} is not a directory", dir.display()),
            ));
        }
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    }
    if let Some(foreign) = foreign_file(dir, allowed, 0)? {
        return Err(io::Error::new(
            ErrorKind::AlreadyExists,
            format!(
                "{} holds {}, which mnsim did not write; --out replaces the whole folder, \
                 so give a new or empty folder",
                dir.display(),
                foreign.display()
            ),
        ));
    }
    Ok(true)
}

/// The first file under `d` whose name is not in `allowed` (or a symlink, or more than two
/// folders deep), relative to `d`.
fn foreign_file(
    d: &Path,
    allowed: &BTreeSet<&std::ffi::OsStr>,
    depth: usize,
) -> io::Result<Option<PathBuf>> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(d)?.collect::<io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let t = e.file_type()?;
        let name = PathBuf::from(e.file_name());
        if t.is_dir() && depth < 2 {
            if let Some(inner) = foreign_file(&e.path(), allowed, depth + 1)? {
                return Ok(Some(name.join(inner)));
            }
        } else if !(t.is_file() && allowed.contains(e.file_name().as_os_str())) {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(ErrorKind::InvalidInput, msg)
}

/// `p` as a plain relative path (`.` components dropped), or an `InvalidInput` error.
fn relative(p: &Path) -> io::Result<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(invalid(format!(
                    "output path {} must be relative to the output directory, without `..`",
                    p.display()
                )));
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err(invalid(format!("output path {:?} names no file", p)));
    }
    Ok(out)
}

/// No path twice, and no path inside another's.
fn check_distinct(rels: &[PathBuf]) -> io::Result<()> {
    let mut seen = BTreeSet::new();
    for rel in rels {
        if !seen.insert(rel) {
            return Err(invalid(format!(
                "output path {} given twice",
                rel.display()
            )));
        }
    }
    for rel in rels {
        if let Some(outer) = rel
            .ancestors()
            .skip(1)
            .find(|a| seen.contains(&a.to_path_buf()))
        {
            return Err(invalid(format!(
                "output path {} lies inside output file {}",
                rel.display(),
                outer.display()
            )));
        }
    }
    Ok(())
}

/// Writes every file under `tmp/new`, flushed to disk. Folders and files are created in
/// [`crate::atomic::critical`] sections: an interrupt's clean-up never races a creation
/// (which could make `tmp` again after it was removed).
fn stage(tmp: &Path, rels: &[PathBuf], files: &[(PathBuf, Vec<u8>)]) -> io::Result<()> {
    crate::atomic::critical(|| fs::create_dir(tmp.join("new")))?;
    for (rel, (_, bytes)) in rels.iter().zip(files) {
        let path = tmp.join("new").join(rel);
        let mut f = crate::atomic::critical(|| {
            if let Some(p) = path.parent() {
                fs::create_dir_all(p)?;
            }
            fs::File::create(&path)
        })?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    Ok(())
}

/// Swaps the staged folder `tmp/new` in as `dir`: the old `dir` (when `exists`) goes to
/// `tmp/old` first and comes back if the new one cannot take its place.
fn swap(tmp: &Path, dir: &Path, exists: bool) -> io::Result<()> {
    let old = tmp.join("old");
    if exists {
        fs::rename(dir, &old)?;
    }
    if let Err(e) = fs::rename(tmp.join("new"), dir) {
        if exists {
            let _ = fs::rename(&old, dir);
        }
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh, empty folder of the system's temp dir, removed when the value is dropped.
    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("mnsim-output-{name}-"))
            .tempdir()
            .unwrap()
    }

    /// A swap whose new folder has vanished puts the old folder back.
    #[test]
    fn a_failed_swap_is_undone() {
        let work = scratch("undo");
        let base = work.path();
        let dir = base.join("out");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("report.json"), "old").unwrap();
        let tmp = base.join(".out.tmp");
        fs::create_dir(&tmp).unwrap();
        let err = swap(&tmp, &dir, true).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(fs::read_to_string(dir.join("report.json")).unwrap(), "old");
        work.close().unwrap();
    }

    #[test]
    fn relative_paths_only() {
        assert_eq!(relative(Path::new("./a/./b")).unwrap(), Path::new("a/b"));
        for bad in ["", ".", "../x", "a/../../x", "/abs"] {
            assert_eq!(
                relative(Path::new(bad)).unwrap_err().kind(),
                ErrorKind::InvalidInput,
                "{bad}"
            );
        }
        let nested = [PathBuf::from("a"), PathBuf::from("a/b")];
        assert_eq!(
            check_distinct(&nested).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        let twice = [PathBuf::from("a"), PathBuf::from("a")];
        assert_eq!(
            check_distinct(&twice).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
}
