//! Inline StableHLO modules imported and run: the import as one line of text on error,
//! and a run under the import's default layouts in functional mode (verified against the
//! host reference, the same cycles as timing mode) that gives the arguments' and the
//! stored results' values, row-major.
#![allow(dead_code)]

use mnsim_reports::Report;
use mnsim_sim::import::{self, Imported, Options};
use mnsim_sim::scenario::{self, Mode, Source};
use std::collections::BTreeMap;

/// Imports `text` as the file `name` with `binds`; an error as one line.
pub fn import_text(
    name: &str,
    text: &str,
    binds: &BTreeMap<String, u64>,
) -> Result<Imported, String> {
    let src = Source {
        path: name.into(),
        text: text.into(),
    };
    import::import_mlir(&src, &Options::default(), binds)
        .map_err(|e| super::one_line(&format!("{e:?}")))
}

/// What a run of an inline module gave.
pub struct Ran {
    pub imp: Imported,
    pub report: Report,
    /// `arg0`, `arg1`, ... as DRAM holds them, row-major.
    pub args: Vec<Vec<f64>>,
    /// Every stored tensor, in program order, row-major.
    pub outs: Vec<Vec<f64>>,
}

impl Ran {
    /// The last stored tensor.
    pub fn out(&self) -> &[f64] {
        self.outs.last().expect("something stored")
    }
}

/// Imports `text` and runs plan `default` in timing mode, then in functional mode with
/// the given `binds` of the scenario (`--bind`): the run verifies and the two modes
/// give the same cycles.
pub fn run_inline_with(
    name: &str,
    text: &str,
    import_binds: &BTreeMap<String, u64>,
    run_binds: &BTreeMap<String, u64>,
) -> Ran {
    let imp = import_text(name, text, import_binds).unwrap_or_else(|e| panic!("{name}: {e}"));
    let src = Source {
        path: name.into(),
        text: imp.text.clone(),
    };
    let run = |mode| {
        let mut res = scenario::resolve(&imp.scenario, &src, Some("default"), &[], run_binds)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        res.mode = mode;
        mnsim_sim::run::run(&res).unwrap_or_else(|e| panic!("{name} {mode:?}: {e}\n{}", imp.text))
    };
    let timing = run(Mode::Timing).report;
    let f = run(Mode::Functional);
    assert_eq!(
        f.report.verified,
        Some(true),
        "{name}: functional verification\n{}",
        imp.text
    );
    assert_eq!(
        f.report.total_cycles, timing.total_cycles,
        "{name}: modes agree"
    );
    let values = |t: &str| -> Option<Vec<f64>> {
        let dtype = imp.scenario.tensors.get(t)?.dtype;
        let b = f
            .engine
            .state
            .dram_row_major(f.engine.state.tensor_id(t)?)?;
        Some(
            b.chunks_exact(dtype.bytes() as usize)
                .map(|c| mnsim_kernels::elem::read(dtype, c))
                .collect(),
        )
    };
    let args: Vec<Vec<f64>> = (0..).map_while(|i| values(&format!("arg{i}"))).collect();
    let outs: Vec<Vec<f64>> = imp
        .scenario
        .program
        .iter()
        .filter_map(|op| match op {
            scenario::Op::Store { tensor } => {
                Some(values(tensor).unwrap_or_else(|| panic!("{name}: `{tensor}` stored")))
            }
            _ => None,
        })
        .collect();
    assert!(!outs.is_empty(), "{name}: nothing stored");
    Ran {
        imp,
        report: f.report,
        args,
        outs,
    }
}

/// [`run_inline_with`] with no bindings.
pub fn run_inline(name: &str, text: &str) -> Ran {
    run_inline_with(name, text, &BTreeMap::new(), &BTreeMap::new())
}

/// Every value within a relative 1e-5 (absolute near zero) of the one wanted.
pub fn close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = g == w || (g - w).abs() <= 1e-5 * w.abs().max(1.0);
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// The 1-based column of the first `what` on 1-based line `line` of `text`.
pub fn col(text: &str, line: usize, what: &str) -> usize {
    text.lines().nth(line - 1).unwrap().find(what).unwrap() + 1
}
