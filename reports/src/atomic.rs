//! Writing files the way databases write them: every file mnsim writes (`import -o`,
//! `plan --write`, and through [`crate::write_outputs`] every `--out` folder) goes through
//! here.
//!
//! - The new content goes to a temporary file with a unique name (`.NAME.PID-N.tmp`) in
//!   the target's own directory, is flushed to disk, and is then renamed over the target:
//!   a reader sees the old file or the new one, never half of one.
//! - A symlink is followed (to its last target): the target is replaced and the link kept.
//! - The old file's permissions (and, when allowed, its owner) are kept: a 0600 file stays
//!   0600.
//! - A file with several hard links: the name written gets the new file and the other
//!   names keep the old content ([`Written::other_links`] says how many; callers say so).
//! - A target that exists and is not a regular file (`/dev/stdout`, a pipe) is written in
//!   place: a device is never replaced.
//! - Writers of one target serialise on an advisory lock file beside it (`.NAME.lock`,
//!   removed after): a second writer waits up to [`LOCK_WAIT`], then fails naming the
//!   lock. [`update`] re-reads the target under the lock, so two read-modify-write
//!   updates both land.
//! - Temporary paths are registered while they exist: on an error they are removed, and
//!   [`interrupted`] (called by the binary's SIGINT/SIGTERM handler) removes every one
//!   before the process exits. Renames that swap a file or folder in run in a
//!   [`critical`] section, which the handler waits for.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a writer waits for another process that holds the target's lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(30);

/// Paths to remove when the process is interrupted.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Makes temporary names unique within the process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

fn pending() -> MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` where an interrupt cannot cut in: the signal handler's clean-up waits for it.
pub fn critical<T>(f: impl FnOnce() -> T) -> T {
    let _guard = pending();
    f()
}

/// Removes every registered temporary path and lock file, then exits with status 130.
/// The binary calls this from its SIGINT/SIGTERM handler; it waits for a [`critical`]
/// section in progress and lets no other begin.
pub fn interrupted() -> ! {
    let guard = pending();
    for p in guard.iter().rev() {
        let _ = remove_any(p);
    }
    let _ = writeln!(
        io::stderr(),
        "interrupted: nothing half-written was left behind"
    );
    std::process::exit(130)
}

/// The paths registered now (for tests).
pub fn pending_paths() -> Vec<PathBuf> {
    pending().clone()
}

/// Removes a file or directory tree at `p`, if there is one.
pub(crate) fn remove_any(p: &Path) -> io::Result<()> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(p),
        Ok(_) => fs::remove_file(p),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// A temporary file or folder: registered for removal on an interrupt, removed when
/// dropped unless [`Temp::commit`] moved it into place.
#[derive(Debug)]
pub struct Temp {
    path: PathBuf,
    armed: bool,
}

impl Temp {
    /// A unique name for a temporary sibling of `target`, registered (nothing created).
    pub fn beside(target: &Path, kind: &str) -> Temp {
        let dir = parent_of(target);
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".{name}.{}-{n}.{kind}", std::process::id()));
        pending().push(path.clone());
        Temp { path, armed: true }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` (the rename that moves the temporary into place) in a critical section;
    /// when it succeeds the path is no longer removed.
    pub fn commit<T>(mut self, f: impl FnOnce(&Path) -> io::Result<T>) -> io::Result<T> {
        let mut guard = pending();
        let r = f(&self.path);
        if r.is_ok() {
            guard.retain(|p| *p != self.path);
            self.armed = false;
        }
        r
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.armed {
            let _ = remove_any(&self.path);
            pending().retain(|p| *p != self.path);
        }
    }
}

/// `p`'s directory (`.` for a bare file name).
fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `p` with every symlink of its last component followed (a dangling link gives the path
/// it points to).
pub fn resolve_links(p: &Path) -> io::Result<PathBuf> {
    let mut p = p.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&p)?;
                p = if t.is_absolute() {
                    t
                } else {
                    parent_of(&p).join(t)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::new(
        ErrorKind::InvalidInput,
        format!("{}: too many levels of symbolic links", p.display()),
    ))
}

/// An advisory lock on a target, held while it exists: the file `.NAME.lock` beside the
/// target, locked exclusively and removed when dropped.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    _file: File,
}

impl Lock {
    /// Waits up to [`LOCK_WAIT`] for the lock on `target`.
    pub fn acquire(target: &Path) -> io::Result<Lock> {
        Lock::acquire_within(target, LOCK_WAIT)
    }

    pub fn acquire_within(target: &Path, wait: Duration) -> io::Result<Lock> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = parent_of(target).join(format!(".{name}.lock"));
        let start = Instant::now();
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)?;
            match file.try_lock() {
                Ok(()) => {
                    // The file may have been removed by the holder we waited for: then the
                    // lock is on a file nobody else will find; take the new one instead.
                    if same_file(&file, &path) {
                        pending().push(path.clone());
                        return Ok(Lock { path, _file: file });
                    }
                }
                Err(fs::TryLockError::WouldBlock) => {}
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
            if start.elapsed() >= wait {
                return Err(io::Error::new(
                    ErrorKind::WouldBlock,
                    format!(
                        "another process is writing {} (it holds the lock {}); waited {} s: \
                         try again when it has finished",
                        target.display(),
                        path.display(),
                        wait.as_secs()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Removed while still held: a waiter that then locks the removed file sees it is
        // gone and opens a new one.
        let mut guard = pending();
        let _ = fs::remove_file(&self.path);
        guard.retain(|p| *p != self.path);
    }
}

#[cfg(unix)]
fn same_file(f: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

/// What [`write_file`] or [`update`] wrote.
#[derive(Debug)]
pub struct Written {
    /// The file written: the target with its symlinks followed.
    pub path: PathBuf,
    /// Other hard links of the old file, which keep the old content (0 normally).
    pub other_links: u64,
}

/// Replaces `target` (through symlinks) with `bytes`, all at once, under its lock.
pub fn write_file(target: &Path, bytes: &[u8]) -> io::Result<Written> {
    update(target, |_| Ok(bytes.to_vec()))
}

/// Replaces `target` (through symlinks) with what `f` makes of its current content
/// (`None` when there is no file yet), read under the target's lock: two updates of one
/// file serialise and neither loses the other's change. An error of `f` is returned as
/// an [`ErrorKind::Other`] error with its message, and nothing is written.
pub fn update(
    target: &Path,
    f: impl FnOnce(Option<&[u8]>) -> Result<Vec<u8>, String>,
) -> io::Result<Written> {
    if let Ok(m) = fs::metadata(target)
        && !m.is_file()
        && !m.is_dir()
    {
        // A device or a pipe (`-o /dev/stdout`): written in place, never replaced, no lock.
        let bytes = f(None).map_err(io::Error::other)?;
        OpenOptions::new()
            .write(true)
            .open(target)?
            .write_all(&bytes)?;
        return Ok(Written {
            path: target.to_path_buf(),
            other_links: 0,
        });
    }
    let real = resolve_links(target)?;
    let _lock = Lock::acquire(&real)?;
    let meta = match fs::metadata(&real) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if meta.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(io::Error::new(
            ErrorKind::IsADirectory,
            format!("{} is a directory", real.display()),
        ));
    }
    let current = match &meta {
        Some(_) => {
            let mut v = Vec::new();
            File::open(&real)?.read_to_end(&mut v)?;
            Some(v)
        }
        None => None,
    };
    let bytes = f(current.as_deref()).map_err(io::Error::other)?;
    let tmp = Temp::beside(&real, "tmp");
    // Created where an interrupt cannot cut in: the handler then either finds the file or
    // runs before it exists and exits before it could be made.
    let mut file = critical(|| {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp.path())
    })?;
    file.write_all(&bytes)?;
    if let Some(m) = &meta {
        file.set_permissions(m.permissions())?;
        keep_owner(&file, m);
    }
    file.sync_all()?;
    drop(file);
    tmp.commit(|t| fs::rename(t, &real))?;
    sync_dir(&parent_of(&real));
    Ok(Written {
        path: real,
        other_links: meta.map_or(0, |m| links(&m).saturating_sub(1)),
    })
}

#[cfg(unix)]
fn keep_owner(f: &File, m: &fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    // Only root may give a file away; for anyone else the file is theirs already.
    let _ = std::os::unix::fs::fchown(f, Some(m.uid()), Some(m.gid()));
}

#[cfg(not(unix))]
fn keep_owner(_: &File, _: &fs::Metadata) {}

#[cfg(unix)]
fn links(m: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(m)
}

#[cfg(not(unix))]
fn links(_: &fs::Metadata) -> u64 {
    1
}

/// Flushes a directory's entries (the rename) to disk, where the platform allows.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh, empty folder of the system's temp dir, removed when the value is dropped.
    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("mnsim-atomic-{name}-"))
            .tempdir()
            .unwrap()
    }

    #[test]
    fn a_dropped_temp_is_removed_and_unregistered() {
        let dir = scratch("temp");
        let d = dir.path();
        let t = Temp::beside(&d.join("x"), "tmp");
        let p = t.path().to_path_buf();
        fs::write(&p, "half").unwrap();
        assert!(pending_paths().contains(&p));
        drop(t);
        assert!(!p.exists());
        assert!(!pending_paths().contains(&p));
        let t = Temp::beside(&d.join("x"), "tmp");
        fs::write(t.path(), "whole").unwrap();
        let p2 = t.path().to_path_buf();
        assert_ne!(p, p2, "unique names");
        t.commit(|t| fs::rename(t, d.join("x"))).unwrap();
        assert_eq!(fs::read_to_string(d.join("x")).unwrap(), "whole");
        assert!(!pending_paths().contains(&p2));
        dir.close().unwrap();
    }

    #[test]
    fn a_held_lock_makes_the_second_writer_fail_naming_it() {
        let dir = scratch("lock");
        let d = dir.path();
        let target = d.join("s.ron");
        let held = Lock::acquire(&target).unwrap();
        let err = Lock::acquire_within(&target, Duration::from_millis(50)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::WouldBlock);
        assert!(err.to_string().contains(".s.ron.lock"), "{err}");
        drop(held);
        assert!(!d.join(".s.ron.lock").exists(), "the lock file is removed");
        drop(Lock::acquire(&target).unwrap());
        dir.close().unwrap();
    }

    #[test]
    fn concurrent_updates_all_land() {
        let dir = scratch("update");
        let d = dir.path();
        let target = d.join("log");
        fs::write(&target, "").unwrap();
        std::thread::scope(|s| {
            for i in 0..8 {
                let target = &target;
                s.spawn(move || {
                    update(target, |cur| {
                        let mut v = cur.unwrap_or_default().to_vec();
                        std::thread::sleep(Duration::from_millis(5));
                        v.extend(format!("{i}\n").bytes());
                        Ok(v)
                    })
                    .unwrap();
                });
            }
        });
        let mut lines: Vec<String> = fs::read_to_string(&target)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        assert_eq!(lines, (0..8).map(|i| i.to_string()).collect::<Vec<_>>());
        let left: Vec<_> = fs::read_dir(d).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary or lock file left: {left:?}");
        dir.close().unwrap();
    }
}
