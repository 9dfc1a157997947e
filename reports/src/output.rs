//! Writing a run's files into an output directory all at once or not at all, replacing
//! whatever an earlier run left there.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, ErrorKind, Write};
use std::path::{Component, Path, PathBuf};

/// Names of the files mnsim writes into an output directory (at its top or in a plan's
/// folder). A directory holding only these (and folders of them) is an earlier run's and
/// may be replaced.
pub const OUTPUT_NAMES: [&str; 11] = [
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
];

/// Writes `files` (paths relative to `dir`, contents) as the whole content of `dir`, so that
/// `dir` holds one run: no file of an earlier run survives beside the new ones, and an error
/// leaves `dir` as it was.
///
/// Every file is first written into a temporary sibling directory, `.<dir-name>.tmp-<pid>`;
/// only when all are written is the new folder swapped in: the old `dir` (if any) is moved
/// aside, the new one renamed into its place, and the old one removed. Should the swap fail,
/// the old folder is put back. The temporary directory is removed in every case.
///
/// An existing `dir` is replaced only if it holds nothing but files mnsim writes
/// ([`OUTPUT_NAMES`] and the names being written) and folders of them; a directory with
/// other files (`--out .`, a folder of notes) is refused with [`ErrorKind::AlreadyExists`]
/// before anything is written.
///
/// Before anything is written, these are rejected with [`ErrorKind::InvalidInput`]: an absolute or
/// empty path, a path with `..`, the same path twice, and a path inside another file's path (`a`
/// and `a/b`). A `dir` that exists and is not a directory is rejected with
/// [`ErrorKind::NotADirectory`].
///
/// One process should not write the same `dir` from two threads at once (they would share the
/// temporary directory).
pub fn write_outputs(dir: &Path, files: &[(PathBuf, Vec<u8>)]) -> io::Result<()> {
    let rels = files
        .iter()
        .map(|(p, _)| relative(p))
        .collect::<io::Result<Vec<_>>>()?;
    check_distinct(&rels)?;

    let dir = std::path::absolute(dir)?;
    let dir = if dir.file_name().is_some() {
        dir
    } else {
        fs::canonicalize(&dir)?
    };
    let (Some(name), Some(parent)) = (dir.file_name(), dir.parent()) else {
        return Err(invalid(format!(
            "cannot write outputs into {}",
            dir.display()
        )));
    };
    let exists = match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => true,
        Ok(_) => {
            return Err(io::Error::new(
                ErrorKind::NotADirectory,
                format!("output directory {} is not a directory", dir.display()),
            ));
        }
        Err(e) if e.kind() == ErrorKind::NotFound => false,
        Err(e) => return Err(e),
    };
    if exists {
        let mut allowed: BTreeSet<&std::ffi::OsStr> =
            OUTPUT_NAMES.iter().map(std::ffi::OsStr::new).collect();
        allowed.extend(rels.iter().filter_map(|r| r.file_name()));
        if let Some(foreign) = foreign_file(&dir, &allowed, 0)? {
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
    }

    fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    remove_any(&tmp)?; // left over from an earlier run that died with our pid
    fs::create_dir(&tmp)?;
    let result = stage(&tmp, &rels, files).and_then(|()| swap(&tmp, &dir, exists));
    let cleanup = fs::remove_dir_all(&tmp);
    result.and(cleanup)
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

/// Removes a file or directory tree at `p`, if there is one.
fn remove_any(p: &Path) -> io::Result<()> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(p),
        Ok(_) => fs::remove_file(p),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes every file under `tmp/new`, flushed to disk.
fn stage(tmp: &Path, rels: &[PathBuf], files: &[(PathBuf, Vec<u8>)]) -> io::Result<()> {
    fs::create_dir(tmp.join("new"))?;
    for (rel, (_, bytes)) in rels.iter().zip(files) {
        let path = tmp.join("new").join(rel);
        if let Some(p) = path.parent() {
            fs::create_dir_all(p)?;
        }
        let mut f = fs::File::create(&path)?;
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

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mnsim-output-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// A swap whose new folder has vanished puts the old folder back.
    #[test]
    fn a_failed_swap_is_undone() {
        let base = scratch("undo");
        let dir = base.join("out");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("report.json"), "old").unwrap();
        let tmp = base.join(".out.tmp");
        fs::create_dir(&tmp).unwrap();
        let err = swap(&tmp, &dir, true).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(fs::read_to_string(dir.join("report.json")).unwrap(), "old");
        fs::remove_dir_all(&base).unwrap();
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
