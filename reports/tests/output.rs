//! `write_outputs`: all files or none.

use mnsim_reports::write_outputs;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("output-{name}"));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn files(list: &[(&str, &str)]) -> Vec<(PathBuf, Vec<u8>)> {
    list.iter()
        .map(|(p, c)| (PathBuf::from(p), c.as_bytes().to_vec()))
        .collect()
}

/// How many entries beside `dir` start with `prefix`: the parent's own entries only
/// (the other tests create and remove their folders below it meanwhile).
fn left_beside(dir: &Path, prefix: &str) -> usize {
    let Some(parent) = dir.parent() else {
        return 0;
    };
    fs::read_dir(parent)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .count()
}

/// Every entry under `dir`, relative, sorted (directories end in `/`).
fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &p, out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn writes_files_and_subdirectories_into_a_new_directory() {
    let base = scratch("new");
    let dir = base.join("runs/out");
    let list = [
        ("report.json", "{}"),
        ("rows/report.json", "{\"plan\":\"rows\"}"),
        ("compare.json", "[]"),
    ];
    write_outputs(&dir, &files(&list)).unwrap();
    for (p, c) in list {
        assert_eq!(fs::read_to_string(dir.join(p)).unwrap(), c);
    }
    assert_eq!(
        tree(&base),
        [
            "runs/",
            "runs/out/",
            "runs/out/compare.json",
            "runs/out/report.json",
            "runs/out/rows/",
            "runs/out/rows/report.json"
        ]
    );
}

#[test]
fn the_folder_holds_one_run_no_file_of_an_earlier_run_survives() {
    let dir = scratch("replace");
    // An earlier compare: two plans and a compare page.
    fs::create_dir(dir.join("rows")).unwrap();
    fs::create_dir(dir.join("cols")).unwrap();
    fs::write(dir.join("compare.html"), "old").unwrap();
    fs::write(dir.join("rows/report.json"), "old rows").unwrap();
    fs::write(dir.join("cols/trace.json"), "old cols").unwrap();
    // Now one plan.
    write_outputs(
        &dir,
        &files(&[("report.json", "new"), ("rows/report.md", "rows")]),
    )
    .unwrap();
    assert_eq!(tree(&dir), ["report.json", "rows/", "rows/report.md"]);
    assert_eq!(fs::read_to_string(dir.join("report.json")).unwrap(), "new");
    // No temporary directory is left beside it.
    assert_eq!(left_beside(&dir, ".output-replace."), 0);
}

#[test]
fn a_folder_with_files_mnsim_did_not_write_is_refused_untouched() {
    let dir = scratch("foreign");
    fs::create_dir(dir.join("rows")).unwrap();
    fs::write(dir.join("report.json"), "old").unwrap();
    fs::write(dir.join("rows/notes.txt"), "mine").unwrap();
    let before = tree(&dir);
    let err = write_outputs(&dir, &files(&[("report.json", "new")])).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    assert!(err.to_string().contains("rows/notes.txt"), "{err}");
    assert_eq!(tree(&dir), before);
    assert_eq!(fs::read_to_string(dir.join("report.json")).unwrap(), "old");
}

#[test]
fn rejects_bad_paths_before_writing_anything() {
    let base = scratch("reject");
    let dir = base.join("out");
    for bad in ["../x", "/etc/passwd", "", "rows/../../x"] {
        let list = files(&[("report.json", "{}"), (bad, "evil")]);
        let err = write_outputs(&dir, &list).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}: {err}");
    }
    let twice = files(&[("report.json", "a"), ("./report.json", "b")]);
    assert_eq!(
        write_outputs(&dir, &twice).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let nested = files(&[("report.json", "a"), ("report.json/x", "b")]);
    assert_eq!(
        write_outputs(&dir, &nested).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert!(tree(&base).is_empty(), "nothing written: {:?}", tree(&base));
}

#[test]
fn a_failure_midway_leaves_the_directory_as_it_was() {
    let dir = scratch("midway");
    fs::write(dir.join("report.json"), "old").unwrap();
    let before = tree(&dir);
    // The first file is written, the second cannot be (its name is too long for any file
    // system), so neither appears.
    let long = "x".repeat(300);
    let list = files(&[
        ("report.json", "new"),
        ("rows/report.md", "md"),
        (&long, "too long"),
    ]);
    write_outputs(&dir, &list).unwrap_err();
    assert_eq!(tree(&dir), before);
    assert_eq!(fs::read_to_string(dir.join("report.json")).unwrap(), "old");
    assert_eq!(left_beside(&dir, ".output-midway."), 0);
}

#[test]
fn the_output_directory_must_be_a_directory() {
    let dir = scratch("in-the-way");
    fs::write(dir.join("rows"), "a file").unwrap();
    let file = dir.join("rows");
    let err = write_outputs(&file, &files(&[("report.json", "{}")])).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotADirectory);
    assert_eq!(fs::read_to_string(&file).unwrap(), "a file");
}

#[test]
fn no_files_still_creates_the_directory() {
    let dir = scratch("empty").join("out");
    write_outputs(&dir, &[]).unwrap();
    assert!(dir.is_dir());
}

#[test]
fn a_symlink_to_a_directory_is_followed_and_kept() {
    let base = scratch("link");
    fs::create_dir(base.join("real")).unwrap();
    fs::write(base.join("real/report.json"), "old").unwrap();
    std::os::unix::fs::symlink("real", base.join("out")).unwrap();
    write_outputs(&base.join("out"), &files(&[("report.json", "new")])).unwrap();
    assert!(
        fs::symlink_metadata(base.join("out"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        fs::read_to_string(base.join("real/report.json")).unwrap(),
        "new"
    );
    // (`tree` walks through the link.) No temporary folder or lock is left.
    assert_eq!(
        tree(&base),
        ["out/", "out/report.json", "real/", "real/report.json"]
    );
}

#[test]
fn writers_of_one_directory_take_turns() {
    let base = scratch("turns");
    let dir = base.join("out");
    std::thread::scope(|s| {
        for i in 0..6 {
            let dir = &dir;
            s.spawn(move || {
                let body = format!("{i}");
                write_outputs(dir, &files(&[("report.json", &body), ("report.md", &body)]))
                    .unwrap();
            });
        }
    });
    let json = fs::read_to_string(dir.join("report.json")).unwrap();
    assert_eq!(fs::read_to_string(dir.join("report.md")).unwrap(), json);
    assert_eq!(tree(&base), ["out/", "out/report.json", "out/report.md"]);
}
