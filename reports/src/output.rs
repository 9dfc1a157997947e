//! Writing a run's files into an output directory all at once or not at all.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, ErrorKind, Write};
use std::path::{Component, Path, PathBuf};

/// Writes `files` (paths relative to `dir`, contents) into `dir`, so that an error leaves `dir`
/// as it was.
///
/// Every file is first written into a temporary sibling directory, `.<dir-name>.tmp-<pid>`; only
/// when all are written are they moved into `dir` (created, with its parents, if missing). A file
/// of the same name in `dir` is replaced; other files in `dir` are left alone. Should a move fail,
/// the files already moved are put back as they were. The temporary directory is removed in every
/// case.
///
/// Before anything is written, these are rejected with [`ErrorKind::InvalidInput`]: an absolute or
/// empty path, a path with `..`, the same path twice, and a path inside another file's path (`a`
/// and `a/b`). A target that is an existing directory, or lies under an existing non-directory,
/// is rejected too, also before anything is written.
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
    if let Ok(m) = fs::metadata(&dir)
        && !m.is_dir()
    {
        return Err(io::Error::new(
            ErrorKind::NotADirectory,
            format!("output directory {} is not a directory", dir.display()),
        ));
    }
    for rel in &rels {
        check_target(&dir, rel)?;
    }

    fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    remove_any(&tmp)?; // left over from an earlier run that died with our pid
    fs::create_dir(&tmp)?;
    let result = stage(&tmp, &rels, files).and_then(|()| commit(&tmp, &dir, &rels));
    let cleanup = fs::remove_dir_all(&tmp);
    result.and(cleanup)
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

/// The file can be moved to `dir/rel`: the target is not a directory, and what exists of its
/// parents are directories.
fn check_target(dir: &Path, rel: &Path) -> io::Result<()> {
    let target = dir.join(rel);
    if fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
        return Err(io::Error::new(
            ErrorKind::IsADirectory,
            format!("cannot replace directory {} with a file", target.display()),
        ));
    }
    for a in rel
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
    {
        let p = dir.join(a);
        if let Ok(m) = fs::metadata(&p)
            && !m.is_dir()
        {
            return Err(io::Error::new(
                ErrorKind::NotADirectory,
                format!(
                    "cannot write {}: {} is not a directory",
                    target.display(),
                    p.display()
                ),
            ));
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

/// A move into the output directory, to undo on a later failure.
struct Moved {
    target: PathBuf,
    /// Where the file it replaced was put.
    backup: Option<PathBuf>,
}

/// Moves the staged files from `tmp/new` into `dir`, the files they replace to `tmp/old`; on an
/// error puts everything back.
fn commit(tmp: &Path, dir: &Path, rels: &[PathBuf]) -> io::Result<()> {
    let old = tmp.join("old");
    fs::create_dir(&old)?;
    let mut created = Vec::new();
    let mut moved = Vec::new();
    let result = (|| {
        create_dirs(dir, &mut created)?;
        for (i, rel) in rels.iter().enumerate() {
            let target = dir.join(rel);
            if let Some(parent) = target.parent() {
                create_dirs(parent, &mut created)?;
            }
            let backup = match fs::symlink_metadata(&target) {
                Ok(_) => {
                    let b = old.join(i.to_string());
                    fs::rename(&target, &b)?;
                    Some(b)
                }
                Err(e) if e.kind() == ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
            if let Err(e) = fs::rename(tmp.join("new").join(rel), &target) {
                if let Some(b) = &backup {
                    let _ = fs::rename(b, &target);
                }
                return Err(e);
            }
            moved.push(Moved { target, backup });
        }
        Ok(())
    })();
    if result.is_err() {
        for m in moved.iter().rev() {
            let _ = fs::remove_file(&m.target);
            if let Some(b) = &m.backup {
                let _ = fs::rename(b, &m.target);
            }
        }
        for d in created.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }
    result
}

/// `create_dir_all`, recording the directories it created (outermost first).
fn create_dirs(path: &Path, created: &mut Vec<PathBuf>) -> io::Result<()> {
    let missing: Vec<&Path> = path.ancestors().take_while(|a| !a.exists()).collect();
    for d in missing.into_iter().rev() {
        match fs::create_dir(d) {
            Ok(()) => created.push(d.to_path_buf()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
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

    /// A failing move (the second staged file has vanished) puts back the file the first move
    /// replaced and removes the directories it created.
    #[test]
    fn a_failed_move_is_undone() {
        let base = scratch("undo");
        let dir = base.join("out");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("report.json"), "old").unwrap();
        let tmp = base.join(".out.tmp");
        let rels = [
            PathBuf::from("report.json"),
            PathBuf::from("rows/report.md"),
        ];
        let files: Vec<(PathBuf, Vec<u8>)> =
            rels.iter().map(|r| (r.clone(), b"new".to_vec())).collect();
        fs::create_dir(&tmp).unwrap();
        stage(&tmp, &rels, &files).unwrap();
        fs::remove_file(tmp.join("new/rows/report.md")).unwrap();
        let err = commit(&tmp, &dir, &rels).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(fs::read_to_string(dir.join("report.json")).unwrap(), "old");
        assert!(!dir.join("rows").exists());
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
