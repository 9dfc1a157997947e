//! Views (docs/layout.md): a transpose or reshape whose output keeps every element in
//! its cell costs 0 cycles and is marked in every report; with any other output layout
//! it is the kernel it is. Both compute the same values (functional mode, verified).

use mnsim_sim::scenario::{self, Mode};
use std::collections::BTreeMap;

/// `x: f32[8,16]` over 2 MABs and 4 L1Bs of mncore2 (a 4×4 block on each PE),
/// transposed into `y` laid out as `$y`, reshaped into `z: [16,2,4]` laid out as `$z`.
/// Plan `views` lays them out where the elements are; plan `moved` transposes each
/// PE's block in memory (the same nodes, other words).
const TEXT: &str = r#"Scenario(
    name: "views",
    machine: Preset("mncore2"),
    mode: Functional,
    tensors: {
        "x": (dtype: F32, shape: "f32[8,16]", init: Iota),
        "y": (dtype: F32, shape: "f32[16,8]"),
        "z": (dtype: F32, shape: "f32[16,2,4]"),
    },
    program: [
        Load(tensor: "x", layout: "((2_MAB:1, 4:4), (4_L1B:1, 4:1))"),
        Transpose(input: "x", perm: [1, 0], out: "y", layout: "$y"),
        Reshape(input: "y", shape: [16, 2, 4], out: "z", layout: "$z"),
        Store(tensor: "z"),
    ],
    plans: {
        "views": {"y": "((4_L1B:1, 4:1), (2_MAB:1, 4:4))", "z": "((4_L1B:1, 4:1), (2_MAB:1), (4:4))"},
        "moved": {"y": "((4_L1B:1, 4:4), (2_MAB:1, 4:1))", "z": "((4_L1B:1, 4:1), (2_MAB:1), (4:4))"},
    },
    verify: true,
)
"#;

fn run(plan: &str, mode: Mode) -> mnsim_reports::Report {
    let sc = scenario::parse(TEXT, "views.ron").unwrap();
    let src = scenario::Source {
        path: "views.ron".into(),
        text: TEXT.into(),
    };
    let mut res = scenario::resolve(&sc, &src, Some(plan), &[], &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{plan}: {e:?}"));
    res.mode = mode;
    mnsim_sim::run::run(&res)
        .unwrap_or_else(|e| panic!("{plan}: {e}"))
        .report
}

#[test]
fn a_view_costs_nothing_and_is_marked() {
    for mode in [Mode::Timing, Mode::Functional] {
        let r = run("views", mode);
        let (t, z) = (&r.ops[1], &r.ops[2]);
        assert_eq!((t.op.as_str(), z.op.as_str()), ("Transpose", "Reshape"));
        assert!(t.view && z.view, "{:?} {:?}", t.label(), z.label());
        assert_eq!((t.cycles, z.cycles), (0, 0));
        assert_eq!(t.label(), "Transpose (view)");
        // Marked in the terminal summary, the HTML page and report.json.
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["ops"][1]["view"], true);
        assert!(mnsim_reports::html(&r).contains("Transpose (view)"));
        let moved = run("moved", mode);
        let (t2, z2) = (&moved.ops[1], &moved.ops[2]);
        assert!(!t2.view && !z2.view);
        assert!(
            t2.cycles > 0 && z2.cycles > 0,
            "{} {}",
            t2.cycles,
            z2.cycles
        );
        assert_eq!(
            serde_json::to_value(&moved).unwrap()["ops"][1].get("view"),
            None
        );
        assert!(r.total_cycles < moved.total_cycles);
        // No run beats its bound.
        assert!(r.total_cycles >= r.bound_cycles);
    }
}
