//! A real Slurm: a one-node cluster on this machine's loopback (munged, slurmctld and
//! slurmd under a generated `slurm.conf`, everything in a temp dir), to which
//! `docs/cluster/sweep.slurm` is submitted as a job array and `docs/cluster/merge.slurm`
//! as the job that depends on it; the merged result must equal the unsharded study byte
//! for byte. Needs Debian's `slurm-wlm` and `munge` and root (the daemons run as root);
//! without them the test says it skipped, except under CI (`CI` set), where it fails:
//! CI installs both (`.ci/run`). Every daemon started here is stopped at the end, also
//! when the test fails.

mod common;

use common::study::{FILES, mnsim, root, same_files, study};
use common::tmp::{TempDir, tempdir};
use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The programs the cluster needs: daemons, then clients.
const PROGRAMS: [&str; 8] = [
    "munged",
    "slurmctld",
    "slurmd",
    "sbatch",
    "sinfo",
    "scontrol",
    "scancel",
    "squeue",
];

/// How long the jobs may take, queueing included (the sweep's 20 timing runs take about a
/// second on 2 cores).
const JOBS_TIMEOUT: Duration = Duration::from_secs(120);

/// `name` on PATH or in the sbin folders (where Debian puts the daemons).
fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Why the cluster cannot start here, if it cannot.
fn missing() -> Option<String> {
    let absent: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| find(p).is_none())
        .collect();
    if !absent.is_empty() {
        return Some(format!(
            "{} not found (apt-get install slurm-wlm munge)",
            absent.join(", ")
        ));
    }
    if !is_root() {
        return Some("the Slurm daemons run as root here, and this is not root".into());
    }
    None
}

/// A free TCP port on the loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// This machine's memory in MiB, as /proc/meminfo gives it.
fn real_memory_mib() -> u64 {
    let info = fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("MemTotal in /proc/meminfo");
    kib / 1024
}

/// The one-node cluster: its folder and the daemons it started, stopped on drop (the
/// folder is removed then if the test passed, and kept for its logs if not).
struct Cluster {
    tmp: TempDir,
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
    passed: bool,
}

impl Cluster {
    fn start() -> Cluster {
        let tmp = tempdir("slurm");
        let dir = tmp.path().to_path_buf();
        for sub in ["state", "spool", "logs"] {
            fs::create_dir_all(dir.join(sub)).unwrap();
        }
        // munged wants every folder above its socket searchable by all, and its key
        // readable by its owner only.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let key = dir.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .expect("random bytes for the munge key");
        fs::write(&key, &bytes).unwrap();
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
        let socket = dir.join("munge.sock");
        let conf = dir.join("slurm.conf");
        fs::write(&conf, slurm_conf(&dir, &socket)).unwrap();
        let mut cluster = Cluster {
            tmp,
            dir,
            conf,
            daemons: Vec::new(),
            passed: false,
        };
        let d = cluster.dir.clone();
        let p = |f: &str| d.join(f).display().to_string();
        cluster.spawn(
            "munged",
            &[
                "-F".into(),
                format!("--key-file={}", key.display()),
                format!("--socket={}", socket.display()),
                format!("--pid-file={}", p("munged.pid")),
                format!("--log-file={}", p("logs/munged.log")),
                format!("--seed-file={}", p("munged.seed")),
            ],
        );
        cluster.wait_for("munged's socket", Duration::from_secs(20), |_| {
            socket.exists()
        });
        let conf = cluster.conf.display().to_string();
        cluster.spawn(
            "slurmctld",
            &["-D".into(), "-c".into(), "-f".into(), conf.clone()],
        );
        cluster.spawn(
            "slurmd",
            &[
                "-D".into(),
                "-c".into(),
                "-N".into(),
                "localhost".into(),
                "-f".into(),
                conf,
            ],
        );
        cluster.wait_for("the node to be idle", Duration::from_secs(60), |c| {
            c.client("sinfo", &["-h", "-N", "-o", "%t"])
                .is_some_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        cluster
    }

    /// Starts a daemon in the foreground of a child process, its output in logs/.
    fn spawn(&mut self, name: &'static str, args: &[String]) {
        let log = fs::File::create(self.dir.join(format!("logs/{name}.out"))).unwrap();
        let child = Command::new(find(name).unwrap())
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// A Slurm client command against this cluster; `None` when it could not run or
    /// failed.
    fn client(&self, name: &str, args: &[&str]) -> Option<Output> {
        Command::new(find(name)?)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .current_dir(root())
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
    }

    /// The client command's standard output; panics with the daemons' logs on failure.
    fn run(&self, name: &str, args: &[&str]) -> String {
        let out = Command::new(find(name).unwrap())
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .current_dir(root())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        if !out.status.success() {
            panic!(
                "{name} {args:?}: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                self.logs()
            );
        }
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Polls `ready` every quarter second; panics with the logs after `limit`, or as soon
    /// as a daemon exits.
    fn wait_for(&mut self, what: &str, limit: Duration, mut ready: impl FnMut(&Cluster) -> bool) {
        let t0 = Instant::now();
        while !ready(self) {
            if t0.elapsed() > limit {
                panic!(
                    "timed out after {limit:?} waiting for {what}\n{}",
                    self.logs()
                );
            }
            let exited: Vec<String> = self
                .daemons
                .iter_mut()
                .filter_map(|(name, child)| match child.try_wait() {
                    Ok(Some(status)) => Some(format!("{name} exited ({status})")),
                    _ => None,
                })
                .collect();
            if !exited.is_empty() {
                panic!(
                    "{} while waiting for {what}\n{}",
                    exited.join(", "),
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Every log of the folder (daemons and jobs), for a failure's message.
    fn logs(&self) -> String {
        let mut s = format!("cluster folder: {}\n", self.dir.display());
        let mut files: Vec<PathBuf> = fs::read_dir(self.dir.join("logs"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        for f in files {
            let text = fs::read_to_string(&f).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            s += &format!("--- {} (last lines)\n", f.display());
            for l in tail.into_iter().rev() {
                s += l;
                s.push('\n');
            }
        }
        s
    }

    /// A job's state (`scontrol show job`: one per array task) and its reason.
    fn job_states(&self, id: &str) -> Vec<(String, String)> {
        let out = self.run("scontrol", &["show", "job", "-o", id]);
        out.lines()
            .map(|l| {
                let field = |k: &str| {
                    l.split_whitespace()
                        .find_map(|w| w.strip_prefix(k))
                        .unwrap_or("")
                        .to_string()
                };
                (field("JobState="), field("Reason="))
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first (a failed test may leave some running), then the daemons in the
        // reverse order of their start: SIGTERM, and SIGKILL after 10 s.
        if !self.passed && self.client("scancel", &["--user=root"]).is_some() {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(10)
                && self
                    .client("squeue", &["-h"])
                    .is_some_and(|o| !o.stdout.is_empty())
            {
                std::thread::sleep(Duration::from_millis(250));
            }
        }
        while let Some((name, mut child)) = self.daemons.pop() {
            if let Ok(Some(_)) = child.try_wait() {
                continue; // exited already (and reaped: its pid may be another's now)
            }
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let t0 = Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if t0.elapsed() < Duration::from_secs(10) => {
                        std::thread::sleep(Duration::from_millis(100))
                    }
                    _ => {
                        eprintln!("{name} did not stop on SIGTERM: killing it");
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
        // The folder goes when `self.tmp` is dropped, after the daemons stopped.
        self.tmp.disable_cleanup(!self.passed);
        if !self.passed {
            eprintln!("the cluster's files are kept in {}", self.dir.display());
        }
    }
}

/// The generated configuration: one node of 2 CPUs on 127.0.0.1, loopback only
/// (`NoCtldInAddrAny`, `NoInAddrAny`: the daemons bind the loopback address instead of
/// every interface), no cgroups, no accounting, every file in `dir`.
fn slurm_conf(dir: &Path, socket: &Path) -> String {
    let d = dir.display();
    let ctld_port = free_port();
    let mut slurmd_port = free_port();
    while slurmd_port == ctld_port {
        slurmd_port = free_port();
    }
    format!(
        "# Generated by sim/tests/slurm.rs: a one-node cluster on the loopback.
ClusterName=mnsimtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/logs/slurmctld.log
SlurmdLogFile={d}/logs/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
ReturnToService=2
SlurmdParameters=config_overrides
MailProg=/bin/true
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory={mem} State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
",
        socket = socket.display(),
        mem = real_memory_mib(),
    )
}

/// Waits until every task of job `id` has ended; panics unless they all completed.
fn wait_completed(cluster: &Cluster, id: &str, t0: Instant) {
    loop {
        let states = cluster.job_states(id);
        if !states.is_empty() && states.iter().all(|(s, _)| s == "COMPLETED") {
            return;
        }
        let going = |s: &str| {
            matches!(
                s,
                "PENDING" | "CONFIGURING" | "RUNNING" | "COMPLETING" | "COMPLETED"
            )
        };
        let stuck = states
            .iter()
            .any(|(s, r)| !going(s) || r == "DependencyNeverSatisfied");
        if stuck || t0.elapsed() > JOBS_TIMEOUT {
            panic!(
                "job {id}: {states:?} after {:?}\n{}",
                t0.elapsed(),
                cluster.logs()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_slurm_job_array_and_its_dependent_merge_give_the_unsharded_study() {
    if let Some(why) = missing() {
        if std::env::var_os("CI").is_some() {
            panic!("CI must run the Slurm test (.ci/run installs slurm-wlm and munge): {why}");
        }
        eprintln!("skipped: {why}");
        return;
    }
    let (_study, whole) = study("study-slurm-real");
    let mut cluster = Cluster::start();
    let out = cluster.dir.join("sweep-out");
    let logs = cluster.dir.join("logs");
    // sbatch passes its environment to the jobs: the binary under test and the folder.
    let export = format!(
        "--export=ALL,MNSIM={},MNSIM_SWEEP_OUT={}",
        mnsim().display(),
        out.display()
    );
    let chdir = format!("--chdir={}", root().display());
    let t0 = Instant::now();
    // The node has 2 CPUs: the command line overrides the script's 4 per task.
    let array = cluster.run(
        "sbatch",
        &[
            "--parsable",
            &export,
            &chdir,
            "--cpus-per-task=1",
            &format!("--output={}/sweep-%A_%a.log", logs.display()),
            "docs/cluster/sweep.slurm",
        ],
    );
    let merge = cluster.run(
        "sbatch",
        &[
            "--parsable",
            &export,
            &chdir,
            &format!("--dependency=afterok:{array}"),
            &format!("--output={}/merge-%j.log", logs.display()),
            "docs/cluster/merge.slurm",
        ],
    );
    // The array's tasks really ran as array tasks, each its own shard.
    wait_completed(&cluster, &array, t0);
    wait_completed(&cluster, &merge, t0);
    eprintln!("Slurm ran the array and the merge in {:?}", t0.elapsed());
    let shards: Vec<String> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("shard-"))
        .collect();
    assert_eq!(shards.len(), 4, "{shards:?}");
    for f in FILES {
        assert!(out.join("merged").join(f).is_file(), "no merged {f}");
    }
    same_files(&whole, &out.join("merged"));
    cluster.passed = true;
}
