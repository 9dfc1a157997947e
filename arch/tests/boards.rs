//! Machines of many boards: the presets above the board, their networks, validation and
//! knobs (docs/model.md, many boards).

use mnsim_arch::machine::Topology;
use mnsim_arch::{Machine, TransferKind, describe, from_ron, get_knob, preset, set_knob};

/// The levels of `m` from `first` down, with everything they hold, as RON (the part of
/// a board preset that must equal the one-board preset's).
fn from_level(m: &Machine, first: &str) -> String {
    let i = m.level_index(first).unwrap();
    ron::to_string(&m.levels[i..]).unwrap()
}

/// Every figure of a board preset below its boards is the one-board preset's: the same
/// levels from the board's DRAM down, links, DRAM, compute and energy per access.
fn same_board(many: &Machine, one: &Machine, first: &str) {
    assert_eq!(
        from_level(many, first),
        from_level(one, first),
        "{}",
        many.name
    );
    assert_eq!(many.links, one.links, "{}", many.name);
    assert_eq!(many.dram, one.dram, "{}", many.name);
    assert_eq!(many.compute, one.compute, "{}", many.name);
    assert_eq!(many.clock_ghz, one.clock_ghz);
    assert_eq!(many.word_bytes, one.word_bytes);
    assert_eq!(many.energy.memories, one.energy.memories);
    assert_eq!(many.energy.dram, one.energy.dram);
    assert_eq!(
        many.energy.matrix_pj_per_flop,
        one.energy.matrix_pj_per_flop
    );
    for (k, v) in &one.energy.links {
        assert_eq!(many.energy.links.get(k), Some(v), "{} {k}", many.name);
    }
    for (k, v) in &one.energy.static_w_per_node {
        assert_eq!(many.energy.static_w_per_node.get(k), Some(v), "{k}");
    }
}

#[test]
fn board_presets_are_their_boards_many_times() {
    let one = preset("mncore1").unwrap();
    let node = preset("mn3_node").unwrap();
    same_board(&node, &one, "L2B");
    assert_eq!(node.leaf_count(), 4 * one.leaf_count());
    assert_eq!(node.matrix_units(), 4 * one.matrix_units());
    let zone = preset("mn3_zone").unwrap();
    same_board(&zone, &one, "L2B");
    assert_eq!(zone.leaf_count(), 128 * one.leaf_count());
    let two = preset("mncore2").unwrap();
    let server = preset("mncore2_server").unwrap();
    same_board(&server, &two, "Group");
    assert_eq!(server.leaf_count(), 4 * two.leaf_count());
    // Each board keeps its DRAM: one per board (mncore2: per Group).
    let drams = |m: &Machine| m.nodes_at(m.dram_level_index().unwrap());
    assert_eq!(drams(&node), 4);
    assert_eq!(drams(&zone), 128);
    assert_eq!(drams(&server), 16);
}

#[test]
fn boards_and_nodes_are_addressable() {
    let names = |m: &Machine| -> Vec<(String, u64)> {
        m.addressable_levels()
            .into_iter()
            .map(|a| (a.name, a.fanout))
            .collect()
    };
    let node = names(&preset("mn3_node").unwrap());
    assert_eq!(node[0], ("Board".to_string(), 4));
    assert_eq!(node[1], ("L2B".to_string(), 16));
    let zone = names(&preset("mn3_zone").unwrap());
    assert_eq!(zone[0], ("Node".to_string(), 32));
    assert_eq!(zone[1], ("Board".to_string(), 4));
    let server = names(&preset("mncore2_server").unwrap());
    assert_eq!(server[0], ("Board".to_string(), 4));
    // The Groups still fold into L2B: 8 positions on each board.
    assert_eq!(server[1], ("L2B".to_string(), 8));
}

#[test]
fn a_network_is_charged_as_a_derived_link() {
    let m = preset("mn3_node").unwrap();
    let n = &m.networks["Node"];
    assert_eq!(n.topology, Topology::Switch);
    let i = m.level_index("Node").unwrap();
    assert_eq!(m.link_target(i), m.level_index("Board"));
    let link = m.link_at(i).unwrap();
    for k in TransferKind::ALL {
        // A switch: one link per board, the switch non-blocking.
        assert_eq!(link.rate(k).child, n.bytes_per_cycle);
        assert_eq!(link.rate(k).parent, 4.0 * n.bytes_per_cycle);
        assert_eq!(link.rate(k).latency, n.latency);
    }
    // The boards' own links are untouched.
    let b = m.level_index("Board").unwrap();
    assert_eq!(*m.link_at(b).unwrap(), m.links["Board"]);
    // A ring of the 4 boards: two links each, two hops to the far board.
    let text = mnsim_arch::preset_source("mn3_node")
        .unwrap()
        .replace("topology: Switch", "topology: Ring");
    let ring = from_ron(&text).unwrap();
    let link = ring.link_at(i).unwrap();
    assert_eq!(link.gather.child, 2.0 * n.bytes_per_cycle);
    assert_eq!(link.gather.latency, 2 * n.latency);
    let text = text.replace("topology: Ring", "topology: FullyConnected");
    let fc = from_ron(&text).unwrap();
    assert_eq!(fc.link_at(i).unwrap().gather.child, 3.0 * n.bytes_per_cycle);
    assert!(describe(&fc).contains("fully connected joining 4 Board"));
}

#[test]
fn network_figures_are_knobs() {
    let mut m = preset("mn3_zone").unwrap();
    assert_eq!(get_knob(&m, "networks.Zone.bytes_per_cycle").unwrap(), 12.5);
    assert_eq!(get_knob(&m, "networks.Node.latency").unwrap(), 1000.0);
    set_knob(&mut m, "networks.Node.bytes_per_cycle", 50.0).unwrap();
    let i = m.level_index("Node").unwrap();
    assert_eq!(m.link_at(i).unwrap().distribute.child, 50.0);
    set_knob(&mut m, "levels.Board.count", 8.0).unwrap();
    assert_eq!(m.link_at(i).unwrap().distribute.parent, 400.0);
    assert_eq!(m.leaf_count(), 32 * 8 * 8192);
    let e = set_knob(&mut m, "networks.Node.bytes_per_cycle", 0.0).unwrap_err();
    assert!(e.to_string().contains("positive"), "{e}");
    let e = set_knob(&mut m, "networks.Node.latency", 1e12).unwrap_err();
    assert!(e.to_string().contains("above the limit"), "{e}");
    assert!(get_knob(&m, "energy.links.Zone.up_pj_per_byte").is_ok());
}

#[test]
fn a_machine_file_names_its_algorithm() {
    let base = mnsim_arch::preset_source("mn3_node").unwrap();
    let m =
        from_ron(&base.replace("topology: Switch", "topology: Switch, algorithm: Tree")).unwrap();
    assert_eq!(
        m.networks["Node"].algorithm(),
        mnsim_arch::machine::Algorithm::Tree
    );
    assert_eq!(get_knob(&m, "networks.Node.algorithm").unwrap(), 2.0);
    let h = m.networks["Node"].host.as_ref().unwrap();
    assert_eq!(
        (h.down_bytes_per_cycle, h.up_bytes_per_cycle, h.latency),
        (15.75, 15.75, 1000)
    );
    assert_eq!(get_knob(&m, "networks.Node.host.latency").unwrap(), 1000.0);
}

#[test]
fn bad_networks_are_refused_where_they_are() {
    let base = mnsim_arch::preset_source("mn3_node").unwrap();
    let cases = [
        (
            base.replace("\"Node\": (topology", "\"Nod\": (topology"),
            "network 'Nod' names no level",
        ),
        (
            base.replace(
                "\"Node\": (topology: Switch",
                "\"Board\": (topology: Switch",
            ),
            "must stand above the DRAM level 'Board'",
        ),
        (
            base.replace("bytes_per_cycle: 15.75", "bytes_per_cycle: -1.0"),
            "networks.Node.bytes_per_cycle must be a positive number",
        ),
        (base.replace("topology: Switch", "topology: Torus"), "Torus"),
        (
            base.replace("up_bytes_per_cycle: 15.75", "up_bytes_per_cycle: 0.0"),
            "networks.Node.host.up_bytes_per_cycle must be a positive number",
        ),
        (
            base.replace("latency: 1000)),", "latency: 1000, hops: 2)),"),
            "hops",
        ),
        (
            base.replace("topology: Switch", "topology: Switch, algorithm: Mesh"),
            "Mesh",
        ),
        (
            base.replace("\"Node\": (down_pj", "\"Nodes\": (down_pj"),
            "energy.links names 'Nodes'",
        ),
    ];
    for (text, want) in cases {
        let e = from_ron(&text).unwrap_err();
        assert!(e.to_string().contains(want), "{want}: {e}");
        assert!(e.line.is_some(), "{want}: no position in {e}");
    }
}
