//! The program round-trips: lowered from a resolved scenario, printed to RON, parsed and
//! lowered again, it is the same program, on every shipped scenario (every plan) and on
//! every imported graph of `scenarios/workloads/graphs` and `scenarios/workloads/stablehlo`.

use mnsim_sim::program::{OpKind, Program};
use mnsim_sim::scenario::{self, Op, Scenario, Source, pretty};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    out.retain(|p| p.extension().is_some_and(|e| e == ext));
    out.sort();
    out
}

fn parse_ops(text: &str) -> Result<Vec<Op>, String> {
    let opts =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    opts.from_str(text).map_err(|e| e.to_string())
}

/// Spans point into the file the program came from; the printed text has its own.
fn without_spans(mut p: Program) -> Program {
    for k in p.ops.keys().collect::<Vec<_>>() {
        p.ops[k].span = None;
    }
    p
}

/// Every plan of `sc`: lowered, printed, parsed, lowered again — the same program. The
/// number of ops checked.
fn round_trip(name: &str, sc: &Scenario, src: &Source, binds: &BTreeMap<String, u64>) -> usize {
    let mut ops = 0;
    for plan in scenario::plans_to_run(sc) {
        let at = format!("{name} plan {plan:?}");
        let res = scenario::resolve(sc, src, plan.as_deref(), &[], binds)
            .unwrap_or_else(|e| panic!("{at}: {e:?}"));
        let (p, m) = (res.program, res.machine);
        let text = pretty::program(&p, &m);
        let parsed = parse_ops(&text).unwrap_or_else(|e| panic!("{at}: {e}\n{text}"));
        let mut again = sc.clone();
        again.program = parsed;
        let res2 = scenario::resolve(&again, src, plan.as_deref(), &[], binds)
            .unwrap_or_else(|e| panic!("{at}: printed program does not resolve: {e:?}\n{text}"));
        // Printing is a function of the program: the reprint is the same text.
        assert_eq!(pretty::program(&res2.program, &m), text, "{at}");
        assert_eq!(
            without_spans(res2.program),
            without_spans(p.clone()),
            "{at}\n{text}"
        );
        ops += p.ops.len();
    }
    ops
}

#[test]
fn every_shipped_scenario_prints_parses_and_lowers_to_the_same_program() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut ops = 0;
    let list = files(&dir, "ron");
    assert!(
        list.len() >= 10,
        "{}: {} scenarios",
        dir.display(),
        list.len()
    );
    for path in &list {
        let (sc, src) = scenario::load(path).unwrap_or_else(|e| panic!("{path:?}: {e:?}"));
        ops += round_trip(&path.display().to_string(), &sc, &src, &BTreeMap::new());
    }
    assert!(ops > 100, "{ops} ops");
}

#[test]
fn every_imported_graph_prints_parses_and_lowers_to_the_same_program() {
    // The repository's real workloads (`scenarios/workloads/`).
    let workloads = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/workloads");
    let mut list = files(&workloads.join("graphs"), "json");
    list.extend(files(&workloads.join("stablehlo"), "mlir"));
    assert!(
        list.len() >= 20,
        "{} graphs under {workloads:?}",
        list.len()
    );
    // The StableHLO exports' symbolic dimensions (`b`, `t`).
    let binds: BTreeMap<String, u64> = [("b".to_string(), 4), ("t".to_string(), 4)].into();
    let mut kernels = 0;
    let mut graphs = 0;
    for path in &list {
        // A graph the importer refuses (e.g. non-dense strides) is `import.rs`'s to test.
        let Ok((sc, src)) = mnsim_sim::load::load_with(path, &binds) else {
            continue;
        };
        graphs += 1;
        // The import wrote the bindings into the scenario (`bind:`).
        let none = BTreeMap::new();
        round_trip(&path.display().to_string(), &sc, &src, &none);
        let res = scenario::resolve(&sc, &src, Some("default"), &[], &none).unwrap();
        kernels += (res.program.ops)
            .values()
            .filter(|o| matches!(o.kind, OpKind::Kernel { .. }))
            .count();
    }
    assert!(
        graphs >= 30 && kernels > 50,
        "{graphs} graphs, {kernels} kernel ops"
    );
}

/// An op's own collective algorithm (`algorithm: "tree"`, docs/scenarios.md) is lowered
/// into the program, printed back and parsed to the same program, on a Relayout, a
/// Broadcast and a Reduce over boards.
#[test]
fn an_op_s_collective_algorithm_round_trips() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/boards_matmul.ron");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text
        .replace(
            r#"Relayout(tensor: "c", layout: "$cg", out: "cg"),"#,
            r#"Reduce(tensor: "c", level: "Board", algorithm: "ring"),
        Relayout(tensor: "c", layout: "$cg", out: "cg", algorithm: "tree"),
        Broadcast(tensor: "cg", layout: "$cg", algorithm: "direct"),"#,
        )
        .replace("auto_reduce: true,", "");
    let sc = scenario::parse(&text, "algorithms.ron").unwrap();
    let src = Source {
        path: "algorithms.ron".into(),
        text: text.clone(),
    };
    assert!(round_trip("algorithms.ron", &sc, &src, &BTreeMap::new()) > 0);
    let res = scenario::resolve(&sc, &src, Some("split_k"), &[], &BTreeMap::new()).unwrap();
    let named: Vec<(&str, Option<&str>)> = (res.program.ops.values())
        .map(|o| (o.name, o.algorithm.map(|a| a.name())))
        .collect();
    assert_eq!(
        named,
        [
            ("Load", None),
            ("Load", None),
            ("MatMul", None),
            ("Reduce", Some("ring")),
            ("Relayout", Some("tree")),
            ("Broadcast", Some("direct")),
            ("Store", None),
        ]
    );
}
