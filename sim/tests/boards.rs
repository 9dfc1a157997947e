//! Many boards (docs/model.md, many boards): layouts split over boards, replicate over
//! them and cross them over the node's network, in both modes; a plan that replicates
//! over the boards costs what one board does; a network stage costs what its figures
//! say, computed here from the machine's numbers and not from the engine.

mod common;

use common::mnsim;
use mnsim_reports::{OpReport, Report, StageReport};
use mnsim_sim::scenario::{self, Mode, Source};
use std::collections::BTreeMap;
use std::path::Path;

fn scenario_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/boards_matmul.ron");
    std::fs::read_to_string(path).expect("scenarios/boards_matmul.ron")
}

/// Runs `plan` of the scenario `text` in `mode` with knobs `sets`.
fn run(text: &str, plan: &str, mode: Mode, sets: &[(&str, f64)]) -> Report {
    let sc = scenario::parse(text, "boards_matmul.ron").unwrap();
    let src = Source {
        path: "boards_matmul.ron".into(),
        text: text.to_string(),
    };
    let sets: Vec<(String, f64)> = sets.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut res = scenario::resolve(&sc, &src, Some(plan), &sets, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{plan}: {e:?}"));
    res.mode = mode;
    mnsim_sim::run::run(&res)
        .unwrap_or_else(|e| panic!("{plan} {mode:?}: {e}"))
        .report
}

fn op<'a>(r: &'a Report, name: &str, tensor: &str) -> &'a OpReport {
    r.ops
        .iter()
        .find(|o| o.op == name && o.tensor == tensor)
        .unwrap_or_else(|| panic!("no {name} of {tensor}"))
}

fn stage<'a>(o: &'a OpReport, level: &str, dir: &str) -> Option<&'a StageReport> {
    o.stages
        .iter()
        .find(|s| s.level == level && s.direction == dir)
}

const C_BYTES: u64 = 64 * 2048 * 4;

#[test]
fn every_plan_verifies_and_both_modes_agree() {
    let text = scenario_text();
    for plan in ["replicated", "split_n", "split_k"] {
        let f = run(&text, plan, Mode::Functional, &[]);
        assert_eq!(f.verified, Some(true), "{plan}");
        let t = run(&text, plan, Mode::Timing, &[]);
        assert_eq!(t.total_cycles, f.total_cycles, "{plan}");
        let cyc = |r: &Report| r.ops.iter().map(|o| o.cycles).collect::<Vec<_>>();
        assert_eq!(cyc(&t), cyc(&f), "{plan}");
    }
}

#[test]
fn replicating_over_the_boards_costs_what_one_board_does() {
    // Inputs already in the boards' DRAMs: mn3_node without its host link.
    let text = scenario_text().replace(
        "Preset(\"mn3_node\")",
        &format!("File({:?})", no_host_file()),
    );
    let node = run(&text, "replicated", Mode::Timing, &[]);
    let one = scenario_text().replace("Preset(\"mn3_node\")", "Preset(\"mncore1\")");
    let board = run(&one, "replicated", Mode::Timing, &[]);
    assert_eq!(node.total_cycles, board.total_cycles);
    for (a, b) in node.ops.iter().zip(&board.ops) {
        assert_eq!((&a.op, a.cycles), (&b.op, b.cycles), "{}", a.tensor);
        assert!(stage(a, "Node", "up").is_none() && stage(a, "Node", "down").is_none());
    }
    // Four boards, each with its own DRAM, read four times the bytes.
    let dram = |r: &Report| -> u64 {
        let o = op(r, "Load", "b");
        o.stages
            .iter()
            .filter(|s| s.level == "DRAM")
            .map(|s| s.bytes)
            .sum()
    };
    assert_eq!(dram(&node), 4 * dram(&board));
}

/// The network stage of a crossing, from the machine's figures: a switch gives each
/// board one link of `bytes_per_cycle` per direction; every board sends (and receives)
/// all of c.
fn network_cycles(bytes: u64, rate: f64) -> u64 {
    (bytes as f64 / rate).ceil() as u64
}

/// One phase of an all-reduce of `n` bytes on each of `p` children, by the α–β model:
/// (steps, bytes a step). Ring: p − 1 steps of a 1/p share; switch: one step of the
/// p − 1 shares down one link; fully connected: one step, a share on each link.
fn phase(topology: &str, n: u64, p: u64) -> (u64, u64) {
    let share = n.div_ceil(p);
    match topology {
        "Ring" => (p - 1, share),
        "Switch" => (1, (p - 1) * share),
        "FullyConnected" => (1, share),
        other => panic!("{other}"),
    }
}

/// The α–β closed form of an all-reduce: two phases of steps × (latency + bytes a step
/// ÷ rate).
fn all_reduce(topology: &str, n: u64, p: u64, rate: f64, latency: u64) -> u64 {
    let (steps, bytes) = phase(topology, n, p);
    2 * steps * (latency + network_cycles(bytes, rate))
}

#[test]
fn a_reduce_over_the_boards_is_an_all_reduce_on_the_network() {
    let text = scenario_text();
    let m = mnsim_arch::preset("mn3_node").unwrap();
    let beta = m.networks["Node"].bytes_per_cycle;
    let alpha = m.networks["Node"].latency;
    let r = run(&text, "split_k", Mode::Timing, &[]);
    let red = op(&r, "Reduce", "c");
    let up = stage(red, "Node", "up").expect("the Reduce crosses the boards");
    let down = stage(red, "Node", "down").expect("and comes back down");
    assert_eq!(
        (up.kind.as_str(), down.kind.as_str()),
        ("reduce", "broadcast")
    );
    // A switch: each board sends its 3 other quarters of c down its one link, then
    // receives the 3 other reduced quarters.
    let (steps, bytes) = phase("Switch", C_BYTES, 4);
    assert_eq!(up.cycles, steps * network_cycles(bytes, beta));
    assert_eq!(down.cycles, up.cycles);
    assert_eq!(up.latency + down.latency, 2 * steps * alpha);
    assert_eq!(up.child_bytes, 4 * 3 * (C_BYTES / 4));
    let whole = all_reduce("Switch", C_BYTES, 4, beta, alpha);
    assert_eq!(up.cycles + down.cycles + up.latency + down.latency, whole);
    // The op: the two phases one after the other (the boards' own stages are faster),
    // plus the boards' latencies up and down.
    let lat: u64 = red.stages.iter().map(|s| s.latency).sum();
    assert_eq!(red.work_cycles, up.cycles + down.cycles + lat);
    // Nothing else crosses boards: a and b are read by each board from its own DRAM.
    for o in &r.ops {
        if o.op != "Reduce" {
            assert!(stage(o, "Node", "up").is_none(), "{} {}", o.op, o.tensor);
        }
    }
    // Twice the link rate: the bandwidth term halves (rounded up), the latency stays.
    let fast = run(
        &text,
        "split_k",
        Mode::Timing,
        &[("networks.Node.bytes_per_cycle", 2.0 * beta)],
    );
    let up2 = stage(op(&fast, "Reduce", "c"), "Node", "up").unwrap();
    assert_eq!(up2.cycles, network_cycles(bytes, 2.0 * beta));
    assert!(fast.total_cycles < r.total_cycles);
    // On a ring: 3 steps of a quarter each way, each waiting a hop.
    let ring = text.replace("Preset(\"mn3_node\")", &format!("File({:?})", ring_file()));
    let rr = run(&ring, "split_k", Mode::Timing, &[]);
    let red = op(&rr, "Reduce", "c");
    let up3 = stage(red, "Node", "up").unwrap();
    let down3 = stage(red, "Node", "down").unwrap();
    assert_eq!(up3.cycles, 3 * network_cycles(C_BYTES / 4, beta));
    assert_eq!(up3.latency, 3 * alpha);
    assert_eq!(
        up3.cycles + down3.cycles + up3.latency + down3.latency,
        all_reduce("Ring", C_BYTES, 4, beta, alpha)
    );
}

/// [`common::boards::network_machine`] with 32 MiB of LM a PE.
fn network_machine(p: u64, topology: &str, rate: f64, latency: u64) -> String {
    common::boards::network_machine(p, topology, rate, latency, 33554432)
}

/// The Reduce over Board of an f32[4·rows, cols] on every board, alone, on `machine`.
fn all_reduce_run(machine: &str, rows: u64, cols: u64) -> OpReport {
    let dir = std::env::temp_dir().join(format!("mnsim-allreduce-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("boards.ron");
    std::fs::write(&file, machine).unwrap();
    let text = format!(
        r#"Scenario(
    name: "all-reduce", machine: File({file:?}), mode: Timing,
    tensors: {{"x": (dtype: F32, shape: "f32[{r4},{cols}]", init: Random(seed: 1))}},
    program: [
        Load(tensor: "x", layout: "((4_PE, {rows}:{cols}), ({cols}:1))"),
        Reduce(tensor: "x", level: "Board", op: Add),
    ],
    plans: {{"only": {{}}}},
)"#,
        r4 = 4 * rows
    );
    let r = run(&text, "only", Mode::Timing, &[]);
    op(&r, "Reduce", "x").clone()
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

const TOPOLOGIES: [&str; 3] = ["Ring", "Switch", "FullyConnected"];

/// Alone, an all-reduce over boards takes the α–β closed form exactly: random board
/// counts, topologies, sizes, link rates and latencies.
#[test]
fn an_all_reduce_alone_takes_the_closed_form() {
    let mut rng = Rng(41);
    for case in 0..40 {
        let p = 2 + rng.below(31);
        let topology = TOPOLOGIES[rng.below(3) as usize];
        let rate = [0.5, 3.0, 15.75, 42.0, 100.0][rng.below(5) as usize];
        let latency = rng.below(3000);
        let (rows, cols) = (1 + rng.below(64), 1 + rng.below(300));
        let n = 4 * rows * cols * 4;
        let red = all_reduce_run(&network_machine(p, topology, rate, latency), rows, cols);
        let want = all_reduce(topology, n, p, rate, latency);
        assert_eq!(
            red.work_cycles, want,
            "case {case}: {p} boards, {topology}, {n} bytes, {rate} B/cycle, {latency} cycles"
        );
    }
}

/// Issue 41's target: 64 MiB over 4 and 32 boards under each algorithm, at MN-3's
/// (assumed) PCIe figures.
#[test]
fn an_all_reduce_of_64_mib_over_4_and_32_boards() {
    for p in [4, 32] {
        for topology in TOPOLOGIES {
            let (rows, cols) = (4096, 1024);
            let n = 4 * rows * cols * 4;
            assert_eq!(n, 64 << 20);
            let red = all_reduce_run(&network_machine(p, topology, 15.75, 1000), rows, cols);
            assert_eq!(
                red.work_cycles,
                all_reduce(topology, n, p, 15.75, 1000),
                "{p} boards, {topology}"
            );
        }
    }
}

/// mn3_node without its host link (a program's inputs start in the boards' DRAMs), as a
/// machine file.
fn no_host_file() -> String {
    let text = mnsim_arch::preset_source("mn3_node").unwrap();
    let start = text.find("host: (").expect("mn3_node has a host link");
    let end = start + text[start..].find(')').unwrap() + 1;
    let text = format!("{}{}", &text[..start], &text[end..]);
    let dir = std::env::temp_dir().join(format!("mnsim-boards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("mn3_no_host.ron");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// A program's inputs come from the host with their first Load (docs/model.md, the
/// host): a board's part down its own PCIe link; an input every board holds a copy of
/// goes to one board, then by the network's broadcast (direct on the switch) to the
/// other 3. The figures are mn3_node's, computed here.
#[test]
fn inputs_come_from_the_host() {
    let text = scenario_text();
    let m = mnsim_arch::preset("mn3_node").unwrap();
    let net = &m.networks["Node"];
    let host = net.host.as_ref().expect("mn3_node has a host link");
    let r = run(&text, "split_n", Mode::Timing, &[]);
    // a (f32[64,256]) on every board.
    let a = stage(op(&r, "Load", "a"), "Node", "down").expect("a comes from the host");
    let a_bytes = 64 * 256 * 4;
    assert_eq!(a.kind, "broadcast");
    assert_eq!(
        a.cycles,
        network_cycles(a_bytes, host.down_bytes_per_cycle)
            + network_cycles(3 * a_bytes, net.bytes_per_cycle)
    );
    assert_eq!(a.latency, host.latency + net.latency);
    // b (f32[256,2048]) split over the 4 boards: a quarter down each board's link.
    let b = stage(op(&r, "Load", "b"), "Node", "down").expect("b comes from the host");
    let b_bytes = 256 * 2048 * 4;
    assert_eq!(b.kind, "distribute");
    assert_eq!(b.bytes, b_bytes);
    assert_eq!(
        b.cycles,
        network_cycles(b_bytes / 4, host.down_bytes_per_cycle)
    );
    assert_eq!(b.latency, host.latency);
    // Twice the host's rate: b's host stage halves (rounded up).
    let fast = run(
        &text,
        "split_n",
        Mode::Timing,
        &[(
            "networks.Node.host.down_bytes_per_cycle",
            2.0 * host.down_bytes_per_cycle,
        )],
    );
    let b2 = stage(op(&fast, "Load", "b"), "Node", "down").unwrap();
    assert_eq!(
        b2.cycles,
        network_cycles(b_bytes / 4, 2.0 * host.down_bytes_per_cycle)
    );
    // Functional mode charges the same.
    let f = run(&text, "split_n", Mode::Functional, &[]);
    assert_eq!(f.total_cycles, r.total_cycles);
    // A second Load of an input reads the boards' DRAMs: nothing from the host.
    let twice = text.replace(
        "Load(tensor: \"b\", layout: \"$b\"),",
        "Load(tensor: \"b\", layout: \"$b\"),\n        Load(tensor: \"b\", layout: \"$b\"),",
    );
    let r2 = run(&twice, "split_n", Mode::Timing, &[]);
    let loads: Vec<&OpReport> = r2
        .ops
        .iter()
        .filter(|o| o.op == "Load" && o.tensor == "b")
        .collect();
    assert_eq!(loads.len(), 2);
    assert!(stage(loads[0], "Node", "down").is_some());
    assert!(stage(loads[1], "Node", "down").is_none());
    // One board has no host link: its inputs start in DRAM, as they always did.
    for p in ["mncore1", "mncore2", "toy4"] {
        assert!(mnsim_arch::preset(p).unwrap().host().is_none(), "{p}");
    }
}

/// With the knob `networks.Node.host.inputs` at 0 the inputs start in the boards' DRAMs
/// (a server's weights, loaded before the run): no Load crosses the host's link, and the
/// run costs what the same node without a host link does, in both modes.
#[test]
fn inputs_may_start_on_the_boards() {
    let text = scenario_text();
    let resident = [("networks.Node.host.inputs", 0.0)];
    let no_host = text.replace(
        "Preset(\"mn3_node\")",
        &format!("File({:?})", no_host_file()),
    );
    for plan in ["split_n", "split_k", "replicated"] {
        let r = run(&text, plan, Mode::Timing, &resident);
        let crossing = (r.ops.iter())
            .filter(|o| o.op == "Load")
            .filter(|o| stage(o, "Node", "down").is_some())
            .count();
        assert_eq!(crossing, 0, "{plan}");
        let without = run(&no_host, plan, Mode::Timing, &[]);
        assert_eq!(r.total_cycles, without.total_cycles, "{plan}");
        let f = run(&text, plan, Mode::Functional, &resident);
        assert_eq!(f.total_cycles, r.total_cycles, "{plan}");
        // From the host (the default, 1) it costs more: the inputs cross PCIe.
        let from_host = run(&text, plan, Mode::Timing, &[]);
        assert!(from_host.total_cycles > r.total_cycles, "{plan}");
    }
}

/// mn3_node with its boards on a ring, as a machine file.
fn ring_file() -> String {
    let text = mnsim_arch::preset_source("mn3_node")
        .unwrap()
        .replace("topology: Switch", "topology: Ring");
    let dir = std::env::temp_dir().join(format!("mnsim-boards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("mn3_ring.ron");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn tensor_parallel_moves_nothing_between_boards_until_the_gather() {
    let text = scenario_text();
    let m = mnsim_arch::preset("mn3_node").unwrap();
    let beta = m.networks["Node"].bytes_per_cycle;
    let r = run(&text, "split_n", Mode::Timing, &[]);
    let mm = op(&r, "MatMul", "c");
    assert!(mm.stages.iter().all(|s| s.level != "Node"));
    // Each board computes a quarter of c: the same FLOP in all, a quarter of the time.
    let full = op(&run(&text, "replicated", Mode::Timing, &[]), "MatMul", "c").clone();
    assert_eq!(mm.flops, full.flops);
    assert_eq!(4 * mm.work_cycles, full.work_cycles);
    let g = op(&r, "Relayout", "cg");
    let up = stage(g, "Node", "up").expect("the gather crosses the boards");
    let down = stage(g, "Node", "down").unwrap();
    // An all-gather, direct on the switch (its default): each board's quarter leaves in
    // the one step of the stage down, where each board receives the 3 other quarters
    // down its one link.
    assert_eq!(up.max_child_bytes, C_BYTES / 4);
    assert_eq!((up.cycles, up.latency), (0, 0));
    assert_eq!(down.kind, "broadcast");
    assert_eq!(down.child_bytes, 4 * 3 * (C_BYTES / 4));
    assert_eq!(down.cycles, network_cycles(3 * C_BYTES / 4, beta));
    assert_eq!(down.latency, m.networks["Node"].latency);
}

#[test]
fn layouts_name_boards_and_nodes() {
    let layout = "((4_Board, 16_L2B, 8_L1B, 2:8), (16_MAB, 8:1, 4_PE))";
    let out = mnsim(&[
        "layout",
        "map",
        layout,
        "--shape",
        "1024,512",
        "--machine",
        "mn3_node",
        "--index",
        "700,5",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let pe = &v["placements"][0]["pe"];
    // Row 700 of 1024 rows split 4 × 16 × 8 × 2: board 700 / 256, then L2B, then L1B.
    let (board, rest) = (700 / 256, 700 % 256);
    assert_eq!(pe["Board"], board);
    assert_eq!(pe["L2B"], rest / 16);
    assert_eq!(pe["L1B"], (rest % 16) / 2);
    // Column 5 of 512 = 16 MAB × 8 × 4 PE.
    assert_eq!(pe["MAB"], 5 / 32);
    assert_eq!(pe["PE"], 5 % 4);
    let out = mnsim(&[
        "layout",
        "explain",
        "((32_Node, 4_Board, 2:8), (16_L2B, 8_L1B, 16_MAB, 4_PE, 8:1))",
        "--shape",
        "256,65536",
        "--machine",
        "mn3_zone",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels[0]["level"], "Node");
    assert_eq!(levels[0]["nodes_used"], 32);
    assert_eq!(levels[1]["level"], "Board");
    assert_eq!(levels[1]["nodes_used"], 128);
    assert_eq!(v["distinct_shards"], 1 << 20);
    // Replicated over the boards: every board holds all of it.
    let out = mnsim(&[
        "layout",
        "explain",
        "((64:8), (8:1)) B@[Board]",
        "--shape",
        "64,8",
        "--machine",
        "mn3_node",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["levels"][0]["level"], "Board");
    assert_eq!(v["levels"][0]["replicated"], true);
    let text = mnsim(&["machines", "mn3_zone"]);
    assert!(text.contains("Zone: switch joining 32 Node"), "{text}");
    assert!(text.contains("Node: switch joining 4 Board"), "{text}");
}

/// An all-gather over the 32 nodes of a zone, in timing mode (1,048,576 PEs): the Zone
/// network's stages at its figures, computed here.
#[test]
fn a_gather_over_the_nodes_of_a_zone_crosses_both_networks() {
    let text = r#"Scenario(
        name: "zone gather",
        machine: Preset("mn3_zone"),
        mode: Timing,
        tensors: {
            "x": (dtype: F32, shape: "f32[4096,8192]", init: Random(seed: 1)),
            "y": (dtype: F32, shape: "f32[4096,8192]"),
        },
        program: [
            Load(tensor: "x", layout: "((32_Node, 4_Board, 32:1), (16_L2B, 8_L1B, 16_MAB, 4_PE))"),
            Relayout(tensor: "x", layout: "((4_Board, 1024:1), (16_L2B, 8_L1B, 16_MAB, 4_PE); B@[Node])", out: "y"),
            Store(tensor: "y"),
        ],
        plans: {"only": {}},
    )"#;
    let m = mnsim_arch::preset("mn3_zone").unwrap();
    let zone = m.networks["Zone"].bytes_per_cycle;
    let r = run(text, "only", Mode::Timing, &[]);
    let g = op(&r, "Relayout", "y");
    // f32 without W packing: 8-byte words, so the network moves 2 × 128 MiB.
    let words = 4096u64 * 8192 * 8;
    let up = stage(g, "Zone", "up").unwrap();
    let down = stage(g, "Zone", "down").unwrap();
    // An all-gather over the 32 nodes, direct on the switch: each node receives the 31
    // other 1/32 shares down its one link, in one step.
    assert_eq!(up.max_child_bytes, words / 32);
    assert_eq!(up.cycles, 0);
    assert_eq!(down.child_bytes, 32 * 31 * (words / 32));
    assert_eq!(down.cycles, network_cycles(31 * (words / 32), zone));
    // Inside each node the boards keep their own quarter: a redistribution (no
    // collective), charged by the tree's rule.
    let node_down = stage(g, "Node", "down").unwrap();
    assert_eq!(node_down.kind, "distribute");
    assert_eq!(g.bottleneck, "Zone down broadcast");
}

/// The PEs' data is ready when the all-gather ends, after the reduce-scatter: the
/// Reduce's last ready cycle is the op's own length.
#[test]
fn an_all_reduce_is_ready_when_its_all_gather_ends() {
    let red = all_reduce_run(&network_machine(8, "Ring", 4.0, 100), 16, 64);
    let ready = red.ready_cycles.as_ref().expect("ready cycles");
    assert_eq!(red.end - red.start, red.work_cycles);
    assert_eq!(ready.max, red.end);
}

/// Reports give the run by board and by link on many boards, and nothing more on one
/// (docs/report-schema.md, `boards`).
#[test]
fn reports_show_boards_and_links_only_for_many_boards() {
    let text = scenario_text();
    let r = run(&text, "split_k", Mode::Timing, &[]);
    let b = r.boards.as_ref().expect("mn3_node has 4 boards");
    assert_eq!((b.level.as_str(), b.boards), ("Board", 4));
    assert_eq!(b.each.cycles, r.total_cycles);
    let names: Vec<&str> = b.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["Node down", "Node up"]);
    for l in &b.links {
        // Its bytes are its stages' child bytes, its busy cycles the resource's.
        let want: u64 = (r.ops.iter().flat_map(|o| &o.stages))
            .filter(|s| s.level == "Node" && s.direction == l.direction)
            .map(|s| s.child_bytes)
            .sum();
        assert_eq!(l.bytes, want, "{}", l.name);
        assert!(l.bytes > 0, "{}", l.name);
        let busy = r.resources.iter().find(|x| x.name == l.name).unwrap();
        assert_eq!(l.busy_cycles, busy.busy_cycles);
        // 40 pJ a byte each way (mn3_node's PCIe, assumed).
        assert!(
            (l.joules - l.bytes as f64 * 40e-12).abs() < 1e-12,
            "{}",
            l.name
        );
    }
    let dram: u64 = (r.ops.iter().flat_map(|o| &o.stages))
        .filter(|s| s.kind == "dram")
        .map(|s| s.bytes)
        .sum();
    assert_eq!(b.each.dram_bytes, dram / 4);
    let e = r.energy.as_ref().unwrap();
    let links: f64 = b.links.iter().map(|l| l.joules).sum();
    assert!((b.each.joules * 4.0 + links - e.total_j).abs() < 1e-9);
    let term = mnsim_reports::terminal(&r, false);
    assert!(term.contains("boards and links"), "{term}");
    assert!(mnsim_reports::html(&r).contains("Boards and links"));
    let json = mnsim_reports::to_json(&r);
    assert!(json.contains("\"boards\""));
    // One board: no such section anywhere.
    let one = scenario_text().replace("Preset(\"mn3_node\")", "Preset(\"mncore1\")");
    let r1 = run(&one, "replicated", Mode::Timing, &[]);
    assert!(r1.boards.is_none());
    assert!(!mnsim_reports::terminal(&r1, false).contains("boards and links"));
    assert!(!mnsim_reports::html(&r1).contains("Boards and links"));
    assert!(!mnsim_reports::to_json(&r1).contains("\"boards\""));
}
