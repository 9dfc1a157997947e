//! Files through the binary: nothing half-written, nothing lost. Writes follow symlinks
//! and keep modes, a graph is never rewritten, concurrent writers serialise, an interrupt
//! or a full disk leaves no temporary behind, `--out` is checked before anything runs,
//! and inputs are read with a size cap.

mod common;

use common::tmp::{TempDir, tempdir};
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnsim"));
    c.args(args).current_dir(root());
    c
}

fn mnsim(args: &[&str]) -> Output {
    cmd(args).output().expect("runs")
}

fn spawn(args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut c = cmd(args);
    c.envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.spawn().expect("starts")
}

/// A fresh, empty folder of the system's temp dir, removed when the value is dropped.
fn scratch(name: &str) -> TempDir {
    tempdir(&format!("files-{name}"))
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", err(o));
}

/// The names in `d`, sorted.
fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn interrupt(child: &Child, signal: &str) {
    let st = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "waited for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

const PLAN: [&str; 4] = ["--plan", "auto", "--work", "3000"];

fn plan_write(file: &Path, name: &str) -> Output {
    let mut args = vec!["plan", file.to_str().unwrap()];
    args.extend(PLAN);
    args.extend(["--write", name]);
    mnsim(&args)
}

#[test]
fn plan_write_follows_symlinks_and_keeps_the_mode() {
    let dir = scratch("plan-link");
    let d = dir.path();
    fs::create_dir(d.join("real")).unwrap();
    let real = d.join("real/s.ron");
    fs::copy(root().join("scenarios/plan_layernorm.ron"), &real).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
    let link = d.join("link.ron");
    std::os::unix::fs::symlink("real/s.ron", &link).unwrap();
    ok(&plan_write(&link, "p1"));
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(fs::read_to_string(&real).unwrap().contains("\"p1\": {"));
    assert_eq!(fs::metadata(&real).unwrap().mode() & 0o777, 0o600);
    assert_eq!(
        names(&d.join("real")),
        ["s.ron"],
        "no temporary or lock left"
    );
    assert_eq!(names(d), ["link.ron", "real"]);

    // A second hard link keeps the old text, and the user is told.
    let hard = d.join("hard.ron");
    fs::hard_link(&real, &hard).unwrap();
    let o = plan_write(&real, "p2");
    ok(&o);
    assert!(err(&o).contains("1 other hard link(s)"), "{}", err(&o));
    assert!(fs::read_to_string(&real).unwrap().contains("\"p2\": {"));
    assert!(!fs::read_to_string(&hard).unwrap().contains("\"p2\""));
    dir.close().unwrap();
}

#[test]
fn plan_write_on_a_graph_writes_a_scenario_beside_it() {
    let dir = scratch("plan-graph");
    let d = dir.path();
    let g = d.join("clamp.json");
    fs::copy(common::graphs::dir().join("clamp.json"), &g).unwrap();
    let before = fs::read(&g).unwrap();
    let o = plan_write(&g, "mine");
    ok(&o);
    assert!(
        err(&o).contains("is a graph and stays as it is"),
        "{}",
        err(&o)
    );
    assert_eq!(fs::read(&g).unwrap(), before, "the graph is untouched");
    let ron = d.join("clamp.ron");
    let o = mnsim(&["check", ron.to_str().unwrap(), "--plan", "mine"]);
    ok(&o);
    // An existing scenario beside the graph is never overwritten.
    let text = fs::read(&ron).unwrap();
    let o = plan_write(&g, "other");
    assert!(!o.status.success());
    assert!(err(&o).contains("exists"), "{}", err(&o));
    assert_eq!(fs::read(&ron).unwrap(), text);
    assert_eq!(names(d), ["clamp.json", "clamp.ron"]);
    dir.close().unwrap();
}

#[test]
fn concurrent_plan_writes_both_land() {
    let dir = scratch("plan-two");
    let d = dir.path();
    let s = d.join("s.ron");
    fs::copy(root().join("scenarios/plan_layernorm.ron"), &s).unwrap();
    let children: Vec<Child> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            let mut args = vec!["plan", s.to_str().unwrap()];
            args.extend(PLAN);
            args.extend(["--write", n]);
            spawn(&args, &[])
        })
        .collect();
    for c in children {
        ok(&c.wait_with_output().unwrap());
    }
    let text = fs::read_to_string(&s).unwrap();
    for n in ["a", "b", "c"] {
        assert!(
            text.contains(&format!("\"{n}\": {{")),
            "plan {n} lost:\n{text}"
        );
    }
    ok(&mnsim(&["check", s.to_str().unwrap()]));
    assert_eq!(names(d), ["s.ron"]);
    dir.close().unwrap();
}

#[test]
fn out_is_checked_before_the_run_and_follows_a_symlink() {
    let dir = scratch("out");
    let d = dir.path();
    let notes = d.join("notes");
    fs::create_dir(&notes).unwrap();
    fs::write(notes.join("todo.txt"), "mine").unwrap();
    // The plan does not exist: a check after the run would report that instead.
    let o = mnsim(&[
        "run",
        "scenarios/blog_12x8.ron",
        "--plan",
        "no_such_plan",
        "--out",
        notes.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("todo.txt, which mnsim did not write"),
        "{}",
        err(&o)
    );

    // A symlink to a directory is followed: the link stays, its target gets the reports.
    fs::create_dir(d.join("target")).unwrap();
    let link = d.join("link");
    std::os::unix::fs::symlink("target", &link).unwrap();
    let o = mnsim(&[
        "run",
        "scenarios/blog_12x8.ron",
        "--json",
        "--out",
        link.to_str().unwrap(),
    ]);
    ok(&o);
    let _: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("--json stdout stays pure JSON");
    assert!(
        err(&o).contains(&format!("to {}", link.display())),
        "{}",
        err(&o)
    );
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(d.join("target").join("compare.json").is_file());
    assert_eq!(names(d), ["link", "notes", "target"]);
    dir.close().unwrap();
}

#[test]
fn concurrent_out_writers_take_turns() {
    let dir = scratch("out-two");
    let d = dir.path();
    let out = d.join("out");
    let o = out.to_str().unwrap();
    let children: Vec<Child> = (0..3)
        .map(|_| spawn(&["run", "scenarios/blog_12x8.ron", "--out", o], &[]))
        .collect();
    for c in children {
        ok(&c.wait_with_output().unwrap());
    }
    assert!(out.join("compare.json").is_file());
    assert_eq!(names(d), ["out"], "no temporary folder or lock left");
    dir.close().unwrap();
}

#[test]
fn an_interrupted_write_leaves_the_old_folder_and_no_temporary() {
    let dir = scratch("out-int");
    let d = dir.path();
    let out = d.join("out");
    let o = out.to_str().unwrap();
    let args = ["run", "scenarios/blog_12x8.ron", "--out", o];
    ok(&mnsim(&args));
    let before = fs::read(out.join("compare.json")).unwrap();
    for signal in ["INT", "TERM"] {
        let mut child = spawn(&args, &[("MNSIM_TEST_PAUSE_MS", "20000")]);
        wait_for("the staging folder", || names(d).len() > 1);
        assert!(
            names(d).iter().any(|n| n.starts_with(".out.")),
            "{:?}",
            names(d)
        );
        interrupt(&child, signal);
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(130), "SIG{signal}");
        assert_eq!(
            names(d),
            ["out"],
            "SIG{signal}: the staging folder is removed"
        );
        assert_eq!(fs::read(out.join("compare.json")).unwrap(), before);
    }
    dir.close().unwrap();
}

/// A 64 KiB tmpfs, unmounted when dropped; `None` (the test says it skipped) where
/// mounting is not permitted. Under CI as root it must be: the test fails otherwise.
struct SmallDisk(TempDir);

impl SmallDisk {
    fn mount(name: &str) -> Option<SmallDisk> {
        let d = scratch(name);
        let st = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                "size=64k",
                "tmpfs",
                d.path().to_str().unwrap(),
            ])
            .stderr(Stdio::null())
            .status();
        if st.is_ok_and(|s| s.success()) {
            Some(SmallDisk(d))
        } else {
            // CI runs as root: there the test must run, not skip.
            let root = fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
            assert!(
                !(root && std::env::var_os("CI").is_some()),
                "CI as root could not mount a tmpfs for the full-disk test"
            );
            eprintln!("skipped: mounting a small tmpfs is not permitted here (run as root)");
            None
        }
    }

    /// Fills the disk but `room` bytes.
    fn fill(&self, room: usize) {
        let f = self.0.path().join("filler");
        let _ = fs::write(&f, vec![0u8; 64 << 10]);
        let len = fs::metadata(&f).map_or(0, |m| m.len() as usize);
        fs::write(&f, vec![0u8; len.saturating_sub(room)]).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // The folder itself goes with `self.0`, once unmounted.
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_leaves_nothing_half_written() {
    let Some(disk) = SmallDisk::mount("full") else {
        return;
    };
    let d = disk.0.path();
    // --out: the reports do not fit.
    let out = d.join("out");
    let o = mnsim(&[
        "run",
        "scenarios/mlp_block.ron",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(err(&o).contains("No space left"), "{}", err(&o));
    assert!(names(d).is_empty(), "{:?}", names(d));

    // import -o: the scenario does not fit.
    disk.fill(512);
    let g = common::graphs::dir().join("MHA-GPT-inf-fp32-bs1.json");
    let o = mnsim(&[
        "import",
        g.to_str().unwrap(),
        "-o",
        d.join("g.ron").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(err(&o).contains("No space left"), "{}", err(&o));
    assert_eq!(names(d), ["filler"]);

    // plan --write: the old file stays whole.
    fs::remove_file(d.join("filler")).unwrap();
    let s = d.join("s.ron");
    fs::copy(root().join("scenarios/plan_layernorm.ron"), &s).unwrap();
    let text = fs::read(&s).unwrap();
    disk.fill(64);
    let o = plan_write(&s, "p");
    assert!(!o.status.success());
    assert!(err(&o).contains("No space left"), "{}", err(&o));
    assert_eq!(fs::read(&s).unwrap(), text);
    assert_eq!(names(d), ["filler", "s.ron"]);
}

#[test]
fn import_writes_to_a_device_in_place() {
    let g = common::graphs::dir().join("clamp.json");
    let o = mnsim(&["import", g.to_str().unwrap(), "-o", "/dev/null"]);
    ok(&o);
    assert!(
        fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[test]
fn inputs_are_read_with_a_cap() {
    let o = mnsim(&["check", "/dev/zero"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("/dev/zero") && err(&o).contains("64 MiB"),
        "{}",
        err(&o)
    );
    let g = common::graphs::dir().join("clamp.json");
    let o = mnsim(&["import", g.to_str().unwrap(), "--machine", "/dev/zero"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("machine file /dev/zero") && err(&o).contains("64 MiB"),
        "{}",
        err(&o)
    );
    let dir = scratch("big");
    let d = dir.path();
    let big = d.join("big.ron");
    fs::File::create(&big)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    let o = mnsim(&["check", big.to_str().unwrap()]);
    assert!(
        err(&o).contains("67108865 bytes, more than the 64 MiB"),
        "{}",
        err(&o)
    );
    let o = mnsim(&["run", d.to_str().unwrap()]);
    assert!(err(&o).contains("is a directory"), "{}", err(&o));
    dir.close().unwrap();
}
