//! Collectives over boards (docs/model.md, many boards): broadcast, all-gather,
//! reduce-scatter and all-reduce, each as ring, tree or direct (the knob
//! `networks.<LEVEL>.algorithm`), on each topology. Alone, each takes the α–β closed
//! form; the closed forms are computed here from the machine's figures, not by the
//! engine's code: per step, hops × latency + ⌈bytes on the busiest link ÷ rate⌉.

mod common;

use mnsim_arch::machine::{Algorithm, Collective, Topology, collective};
use mnsim_reports::{OpReport, Report};
use mnsim_sim::scenario::{self, Source};
use std::collections::BTreeMap;

/// Hops between children `j` apart: on a ring the shorter way, else one.
fn h(topology: &str, p: u64, j: u64) -> u64 {
    if topology == "Ring" {
        j.min(p - j).max(1)
    } else {
        1
    }
}

/// Links a child has: a ring 2 (1 with two children), a switch 1, fully connected p − 1.
fn links(topology: &str, p: u64) -> u64 {
    match topology {
        "Ring" => (p - 1).min(2),
        "Switch" => 1,
        "FullyConnected" => p - 1,
        other => panic!("{other}"),
    }
}

fn up(bytes: u64, rate: f64) -> u64 {
    (bytes as f64 / rate).ceil() as u64
}

/// The α–β closed form of one all-gather (or reduce-scatter: the same steps in reverse)
/// of shares of `s` bytes over `p` children.
fn gather_form(topology: &str, algorithm: &str, s: u64, p: u64, rate: f64, alpha: u64) -> u64 {
    if p == 1 || s == 0 {
        return 0;
    }
    match algorithm {
        // p − 1 steps of a share to the next child, one hop.
        "ring" => (p - 1) * (alpha + up(s, rate)),
        // Recursive doubling: step k sends min(2^k, p − 2^k) shares 2^k children away,
        // every hop of the way on one link.
        "tree" => {
            let mut t = 0;
            let mut d = 1;
            while d < p {
                let hops = h(topology, p, d);
                t += hops * alpha + up(hops * d.min(p - d) * s, rate);
                d *= 2;
            }
            t
        }
        // One step: p − 1 shares, spread over the child's links; on a ring they travel
        // 1 + 2 + … hops, ⌊p²/4⌋ in all, the farthest ⌊p/2⌋.
        "direct" => {
            let (far, hops) = if topology == "Ring" {
                ((p / 2).max(1), p * p / 4)
            } else {
                (1, p - 1)
            };
            far * alpha + up((hops * s).div_ceil(links(topology, p)), rate)
        }
        other => panic!("{other}"),
    }
}

/// The α–β closed form of a broadcast of `n` bytes from one child.
fn broadcast_form(topology: &str, algorithm: &str, n: u64, p: u64, rate: f64, alpha: u64) -> u64 {
    if p == 1 || n == 0 {
        return 0;
    }
    match algorithm {
        // p segments pipelined down the chain: 2(p − 1) steps of one segment.
        "ring" => 2 * (p - 1) * (alpha + up(n.div_ceil(p), rate)),
        // Binomial: ⌈log2 p⌉ steps of all n, 2^k children away.
        "tree" => {
            let mut t = 0;
            let mut d = 1;
            while d < p {
                let hops = h(topology, p, d);
                t += hops * alpha + up(hops * n, rate);
                d *= 2;
            }
            t
        }
        // The root sends n to every other child at once.
        "direct" => gather_form(topology, "direct", n, p, rate, alpha),
        other => panic!("{other}"),
    }
}

/// An all-reduce of `n` bytes on each child: a reduce-scatter, then an all-gather, of
/// ⌈n/p⌉ shares.
fn all_reduce_form(topology: &str, algorithm: &str, n: u64, p: u64, rate: f64, alpha: u64) -> u64 {
    2 * gather_form(topology, algorithm, n.div_ceil(p), p, rate, alpha)
}

/// The default algorithm of each topology, as docs/model.md states it.
fn default_of(topology: &str) -> &'static str {
    match topology {
        "Ring" => "ring",
        _ => "direct",
    }
}

const TOPOLOGIES: [&str; 3] = ["Ring", "Switch", "FullyConnected"];
const ALGORITHMS: [&str; 3] = ["ring", "tree", "direct"];

fn topology(t: &str) -> Topology {
    match t {
        "Ring" => Topology::Ring,
        "Switch" => Topology::Switch,
        _ => Topology::FullyConnected,
    }
}

fn algorithm(a: &str) -> Algorithm {
    match a {
        "ring" => Algorithm::Ring,
        "tree" => Algorithm::Tree,
        _ => Algorithm::Direct,
    }
}

/// A small deterministic generator (splitmix64).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// Every collective, by every algorithm on every topology, costs its closed form:
/// random child counts, sizes, rates and latencies.
#[test]
fn every_collective_takes_its_closed_form() {
    let mut rng = Rng(7);
    for case in 0..400 {
        let p = 1 + rng.below(40);
        let t = TOPOLOGIES[rng.below(3) as usize];
        let a = ALGORITHMS[rng.below(3) as usize];
        let rate = [0.5, 3.0, 15.75, 42.0, 100.0][rng.below(5) as usize];
        let alpha = rng.below(3000);
        let bytes = rng.below(1 << 26);
        let alone = |c, b| -> u64 {
            let ph = collective(topology(t), algorithm(a), c, b, p, rate);
            ph.iter().map(|x| x.alone(alpha)).sum()
        };
        let what = format!("case {case}: {p} children, {t}, {a}, {bytes} B, {rate}, {alpha}");
        assert_eq!(
            alone(Collective::AllGather, bytes),
            gather_form(t, a, bytes, p, rate, alpha),
            "all-gather {what}"
        );
        assert_eq!(
            alone(Collective::ReduceScatter, bytes),
            gather_form(t, a, bytes, p, rate, alpha),
            "reduce-scatter {what}"
        );
        assert_eq!(
            alone(Collective::Broadcast, bytes),
            broadcast_form(t, a, bytes, p, rate, alpha),
            "broadcast {what}"
        );
        assert_eq!(
            alone(Collective::AllReduce, bytes),
            all_reduce_form(t, a, bytes, p, rate, alpha),
            "all-reduce {what}"
        );
    }
}

/// [`common::boards::network_machine`] with 64 MiB of LM a PE.
fn network_machine(p: u64, topology: &str, rate: f64, latency: u64) -> String {
    common::boards::network_machine(p, topology, rate, latency, 67108864)
}

/// Runs `program` on `machine` in timing mode, the network's algorithm set by the knob
/// (`None`: the topology's default).
fn run(machine: &str, tensors: &str, program: &str, algorithm: Option<&str>) -> Report {
    let dir = std::env::temp_dir().join(format!("mnsim-collectives-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("m{}.ron", machine.len()));
    std::fs::write(&file, machine).unwrap();
    let text = format!(
        r#"Scenario(
    name: "collective", machine: File({file:?}), mode: Timing,
    tensors: {{{tensors}}},
    program: [{program}],
    plans: {{"only": {{}}}},
)"#
    );
    let sc = scenario::parse(&text, "collective.ron").unwrap();
    let src = Source {
        path: "collective.ron".into(),
        text: text.clone(),
    };
    let sets: Vec<(String, f64)> = match algorithm {
        Some(a) => {
            let (k, v) = mnsim_arch::parse_assignment(&format!("networks.Node.algorithm={a}"))
                .expect("the knob parses");
            vec![(k, v)]
        }
        None => Vec::new(),
    };
    let res = scenario::resolve(&sc, &src, Some("only"), &sets, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{e:?}"));
    mnsim_sim::run::run(&res).unwrap().report
}

fn op<'a>(r: &'a Report, name: &str) -> &'a OpReport {
    r.ops.iter().find(|o| o.op == name).expect("the op")
}

/// The op's own `algorithm:` field, `own` when given.
fn own_field(own: Option<&str>) -> String {
    own.map(|a| format!(", algorithm: {a:?}"))
        .unwrap_or_default()
}

/// The op `name` of a run, its cycles alone and the algorithm its report names.
fn alone(r: &Report, name: &str) -> (u64, Option<String>) {
    let o = op(r, name);
    (o.work_cycles, o.algorithm.clone())
}

/// The Reduce over Board of an f32[4·rows, cols] on every board, alone, the knob at
/// `algorithm` and the op's own at `own` (each `None` when not given): its cycles and
/// the algorithm its report names.
fn all_reduce_run(
    machine: &str,
    (rows, cols): (u64, u64),
    algorithm: Option<&str>,
    own: Option<&str>,
) -> (u64, Option<String>) {
    let tensors = format!(
        r#""x": (dtype: F32, shape: "f32[{},{cols}]", init: Random(seed: 1))"#,
        4 * rows
    );
    let program = format!(
        r#"Load(tensor: "x", layout: "((4_PE, {rows}:{cols}), ({cols}:1))"),
        Reduce(tensor: "x", level: "Board", op: Add{}),"#,
        own_field(own)
    );
    alone(&run(machine, &tensors, &program, algorithm), "Reduce")
}

/// The Relayout of an f32[p·4·rows, cols] split over the p boards onto every board
/// (replicated over Board), alone: an all-gather; the knob and the op's own algorithm as
/// in [`all_reduce_run`].
fn all_gather_run(
    machine: &str,
    (p, rows, cols): (u64, u64, u64),
    algorithm: Option<&str>,
    own: Option<&str>,
) -> (u64, Option<String>) {
    let tensors = format!(
        r#""x": (dtype: F32, shape: "f32[{r},{cols}]", init: Random(seed: 1)),
        "y": (dtype: F32, shape: "f32[{r},{cols}]")"#,
        r = p * 4 * rows
    );
    let program = format!(
        r#"Load(tensor: "x", layout: "(({p}_Board, 4_PE, {rows}:{cols}), ({cols}:1))"),
        Relayout(tensor: "x", layout: "((4_PE, {pr}:{cols}), ({cols}:1))", out: "y"{own}),"#,
        pr = p * rows,
        own = own_field(own)
    );
    alone(&run(machine, &tensors, &program, algorithm), "Relayout")
}

/// Alone, a Reduce over boards (an all-reduce) and a Relayout from a `_Board` split onto
/// every board (an all-gather) take the closed form, under each algorithm the knob
/// chooses and the default, and under each algorithm the op names itself (which the knob
/// does not change): random boards, topologies, sizes, rates and latencies. The report
/// names the algorithm that ran.
#[test]
fn reduces_and_gathers_over_boards_take_the_closed_form() {
    let mut rng = Rng(41);
    let choices = [None, Some("ring"), Some("tree"), Some("direct")];
    let mut owned = [0; 3];
    for case in 0..36 {
        let p = 2 + rng.below(31);
        let t = TOPOLOGIES[rng.below(3) as usize];
        let a = choices[rng.below(4) as usize];
        let own = choices[rng.below(4) as usize];
        let rate = [0.5, 3.0, 15.75, 42.0, 100.0][rng.below(5) as usize];
        let alpha = rng.below(3000);
        let (rows, cols) = (1 + rng.below(16), 1 + rng.below(200));
        let alg = own.or(a).unwrap_or(default_of(t));
        if let Some(o) = own {
            owned[ALGORITHMS.iter().position(|x| *x == o).unwrap()] += 1;
        }
        let m = network_machine(p, t, rate, alpha);
        let what = format!(
            "case {case}: {p} boards, {t}, knob {a:?}, op {own:?}, {rows}x{cols}, {rate}, {alpha}"
        );
        let n = 4 * rows * cols * 4;
        let named = Some(alg.to_string());
        assert_eq!(
            all_reduce_run(&m, (rows, cols), a, own),
            (all_reduce_form(t, alg, n, p, rate, alpha), named.clone()),
            "all-reduce {what}"
        );
        assert_eq!(
            all_gather_run(&m, (p, rows, cols), a, own),
            (gather_form(t, alg, n, p, rate, alpha), named),
            "all-gather {what}"
        );
    }
    // Every algorithm was named by an op some time.
    assert!(owned.iter().all(|&k| k > 0), "{owned:?}");
}

/// Issue 41's target: an all-reduce of 64 MiB over 4 and 32 boards, under each
/// algorithm on each topology, at MN-3's (assumed) PCIe figures: exactly the closed form.
#[test]
fn an_all_reduce_of_64_mib_over_4_and_32_boards_under_each_algorithm() {
    let (rows, cols) = (4096, 1024);
    let n = 4 * rows * cols * 4;
    assert_eq!(n, 64 << 20);
    let mut seen = Vec::new();
    for p in [4, 32] {
        for t in TOPOLOGIES {
            let m = network_machine(p, t, 15.75, 1000);
            for a in ALGORITHMS {
                // Chosen by the knob, and named by the op itself.
                let (got, _) = all_reduce_run(&m, (rows, cols), Some(a), None);
                let form = all_reduce_form(t, a, n, p, 15.75, 1000);
                assert_eq!(got, form, "{p} boards, {t}, {a} by the knob");
                let by_op = all_reduce_run(&m, (rows, cols), None, Some(a));
                assert_eq!(by_op, (form, Some(a.to_string())), "{p} boards, {t}, {a}");
                seen.push(got);
            }
        }
    }
    // The algorithms differ: the knob reaches the engine.
    seen.sort_unstable();
    seen.dedup();
    assert!(seen.len() > 10, "{seen:?}");
}

/// The knob takes names and codes, and refuses anything else.
#[test]
fn the_algorithm_knob() {
    let mut m = mnsim_arch::preset("mn3_node").unwrap();
    assert_eq!(
        mnsim_arch::get_knob(&m, "networks.Node.algorithm").unwrap(),
        0.0
    );
    assert_eq!(m.networks["Node"].algorithm(), Algorithm::Direct);
    let (k, v) = mnsim_arch::parse_assignment("networks.Node.algorithm=tree").unwrap();
    mnsim_arch::set_knob(&mut m, &k, v).unwrap();
    assert_eq!(m.networks["Node"].algorithm(), Algorithm::Tree);
    assert_eq!(mnsim_arch::get_knob(&m, &k).unwrap(), 2.0);
    let e = mnsim_arch::set_knob(&mut m, &k, 7.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ring, tree, direct or default"), "{e}");
    assert!(mnsim_arch::parse_assignment("levels.Board.count=tree").is_err());
    assert!(mnsim_arch::knob_paths(&m).contains(&k));
    // One board: no network, no such knob.
    let one = mnsim_arch::preset("mncore1").unwrap();
    assert!(mnsim_arch::get_knob(&one, "networks.Node.algorithm").is_err());
}

/// mn3_node with a chosen topology, as a machine file.
fn mn3_node_as(topology: &str) -> String {
    let text = mnsim_arch::preset_source("mn3_node")
        .unwrap()
        .replace("topology: Switch", &format!("topology: {topology}"));
    let dir = std::env::temp_dir().join(format!("mnsim-collectives-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("mn3_{topology}.ron"));
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// Runs a plan of `scenario` (text) with knobs `sets`, in timing mode.
fn run_scenario(text: &str, plan: &str, sets: &[(String, f64)]) -> Report {
    let sc = scenario::parse(text, "s.ron").unwrap();
    let src = Source {
        path: "s.ron".into(),
        text: text.to_string(),
    };
    let mut res = scenario::resolve(&sc, &src, Some(plan), sets, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{plan}: {e:?}"));
    res.mode = scenario::Mode::Timing;
    mnsim_sim::run::run(&res).unwrap().report
}

fn assert_within_bound(r: &Report, what: &str) {
    assert!(
        r.total_cycles >= r.bound_cycles && r.bound_cycles > 0,
        "{what}: {} cycles under its bound {}",
        r.total_cycles,
        r.bound_cycles
    );
    for o in &r.ops {
        assert!(
            o.cycles >= o.bound_cycles,
            "{what}: op {} {} takes {} under its bound {}",
            o.op,
            o.tensor,
            o.cycles,
            o.bound_cycles
        );
    }
}

/// No run over boards beats its bound (SPEC §10), which counts the links between boards:
/// boards_matmul.ron's three plans on mn3_node under random topologies, algorithms,
/// link and host rates and latencies; and all-reduces and all-gathers alone on random
/// machines. The bound moves with the network: a Reduce's all-reduce bytes and an
/// input's bytes from the host set it where they are the largest work.
#[test]
fn no_run_over_boards_beats_its_bound() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/boards_matmul.ron"),
    )
    .unwrap();
    let mut rng = Rng(10);
    let mut set_by_network = 0;
    for case in 0..12 {
        let t = TOPOLOGIES[rng.below(3) as usize];
        let file = mn3_node_as(t);
        let sc = text.replace("Preset(\"mn3_node\")", &format!("File({file:?})"));
        let sets: Vec<(String, f64)> = vec![
            ("networks.Node.algorithm".into(), rng.below(4) as f64),
            (
                "networks.Node.bytes_per_cycle".into(),
                [0.5, 15.75, 200.0][rng.below(3) as usize],
            ),
            ("networks.Node.latency".into(), rng.below(5000) as f64),
            (
                "networks.Node.host.down_bytes_per_cycle".into(),
                [1.0, 15.75, 1000.0][rng.below(3) as usize],
            ),
            ("networks.Node.host.latency".into(), rng.below(5000) as f64),
        ];
        for plan in ["replicated", "split_n", "split_k"] {
            let r = run_scenario(&sc, plan, &sets);
            assert_within_bound(&r, &format!("case {case} {t} {plan} {sets:?}"));
            set_by_network += usize::from(r.bound_resource.starts_with("Node"));
        }
    }
    assert!(set_by_network > 0, "the networks never set a bound");
    for case in 0..12 {
        let p = 2 + rng.below(31);
        let t = TOPOLOGIES[rng.below(3) as usize];
        let a = [None, Some("ring"), Some("tree"), Some("direct")][rng.below(4) as usize];
        let rate = [0.5, 3.0, 15.75, 100.0][rng.below(4) as usize];
        let m = network_machine(p, t, rate, rng.below(3000));
        let (rows, cols) = (1 + rng.below(16), 1 + rng.below(200));
        let tensors = format!(
            r#""x": (dtype: F32, shape: "f32[{},{cols}]", init: Random(seed: 1))"#,
            4 * rows
        );
        let program = format!(
            r#"Load(tensor: "x", layout: "((4_PE, {rows}:{cols}), ({cols}:1))"),
            Reduce(tensor: "x", level: "Board", op: Add),"#
        );
        let r = run(&m, &tensors, &program, a);
        assert_within_bound(&r, &format!("all-reduce case {case}: {p} {t} {a:?} {rate}"));
        assert_eq!(
            op(&r, "Reduce").bound_resource,
            "Node up",
            "case {case}: the all-reduce's bytes on the network bound the Reduce"
        );
    }
}

/// `mnsim` with `args` in folder `dir`: its stdout, the run having succeeded.
fn mnsim_in(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The total cycles of `run --json` of a plan of `file` in `dir`.
fn run_cycles(dir: &std::path::Path, file: &str, plan: &str) -> u64 {
    let text = mnsim_in(dir, &["run", file, "--plan", plan, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let r = if v.is_array() { &v[0] } else { &v };
    r["total_cycles"].as_u64().unwrap()
}

/// The planner chooses each collective's algorithm (docs/planner.md, collectives): on
/// mn3_node with its boards on a ring, the split-K matmul of `boards_matmul.ron` ends in
/// an all-reduce over the 4 boards, whose default (the ring's: ring, 3 steps) loses to
/// direct (2 steps of the same bytes a link). `plan` names direct on the MatMul (whose
/// tree Reduce it is), `--write` writes it there, and the written plan runs in the
/// planned cycles, faster than the same plan forced to the default, from real runs.
#[test]
fn the_planner_chooses_a_collective_s_algorithm_and_it_runs_faster() {
    let dir = common::tmp::tempdir("collalg");
    let machine = mnsim_arch::preset_source("mn3_node")
        .unwrap()
        .replace("topology: Switch", "topology: Ring");
    std::fs::write(dir.path().join("mn3_ring.ron"), machine).unwrap();
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/boards_matmul.ron"),
    )
    .unwrap()
    .replace("Preset(\"mn3_node\")", "File(\"mn3_ring.ron\")")
    .replace("mode: Functional", "mode: Timing")
    .replace(
        "    plans: {",
        r#"    plans: {
        "auto": {
            "a":  "((16_MAB, 4:32), (4_Board, 32:1, 2_W))",
            "b":  "((4_Board, 4_PE, 16:8), (16_L2B, 8_L1B, 8:1, 2_W))",
            "c":  "((16_MAB, 4:8), (16_L2B, 8_L1B, 8:1, 2_W))",
            "cg": Any,
        },"#,
    );
    std::fs::write(dir.path().join("bm.ron"), &text).unwrap();
    let json = mnsim_in(
        dir.path(),
        &[
            "plan", "bm.ron", "--plan", "auto", "--json", "--write", "chosen",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let planned = v["best"]["total_cycles"].as_u64().unwrap();
    assert_eq!(
        v["best"]["algorithms"],
        serde_json::json!([{"op": 2, "algorithm": "direct", "networks_own": false}]),
        "{json}"
    );
    let written = std::fs::read_to_string(dir.path().join("bm.ron")).unwrap();
    assert!(
        written.contains(r#"MatMul(a: "a", b: "b", out: "c", layout: "$c", algorithm: "direct"),"#),
        "{written}"
    );
    // The written plan runs in the planned cycles; the tree Reduce ran direct.
    assert_eq!(run_cycles(dir.path(), "bm.ron", "chosen"), planned);
    // The same plan with the network's default (ring), named or not: slower.
    let forced = written.replace(r#"algorithm: "direct""#, r#"algorithm: "ring""#);
    std::fs::write(dir.path().join("ring.ron"), &forced).unwrap();
    let unnamed = written.replace(r#", algorithm: "direct""#, "");
    std::fs::write(dir.path().join("default.ron"), &unnamed).unwrap();
    let ring = run_cycles(dir.path(), "ring.ron", "chosen");
    assert_eq!(run_cycles(dir.path(), "default.ron", "chosen"), ring);
    assert!(planned < ring, "planned {planned} against ring {ring}");
    // By exactly the closed forms' difference (the Reduce is on the critical path): the
    // all-reduce of c's 512 KiB partial on each board, direct against ring over 4 boards
    // on a ring at 15.75 B/cycle, 1,000 cycles a hop.
    let n = 64 * 2048 * 4;
    let gain = all_reduce_form("Ring", "ring", n, 4, 15.75, 1000)
        - all_reduce_form("Ring", "direct", n, 4, 15.75, 1000);
    assert_eq!(ring - planned, gain);
}
