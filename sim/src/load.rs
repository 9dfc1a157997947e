//! Loading any input file: a scenario (RON), a oneDNN Graph JSON file, StableHLO MLIR
//! or an ONNX model
//! (imported for mncore2 and loaded as its scenario). The one place that knows every
//! input format: it sits above both `scenario` and `import`.

use crate::scenario::{self, Scenario, Source};
use miette::Report;
use std::collections::BTreeMap;
use std::path::Path;

/// Reads and parses any input file.
pub fn load(path: &Path) -> Result<(Scenario, Source), Report> {
    load_with(path, &BTreeMap::new())
}

/// Reads and parses any input file; `binds` give a StableHLO file's symbolic
/// dimensions (an ONNX model's named ones) when it is imported.
pub fn load_with(path: &Path, binds: &BTreeMap<String, u64>) -> Result<(Scenario, Source), Report> {
    load_on(path, binds, None)
}

/// [`load_with`], a graph, StableHLO file or ONNX model imported for `machine` (a preset
/// name or a machine RON file; mncore2 when `None`). A scenario names its own machine:
/// giving one for it is an error.
pub fn load_on(
    path: &Path,
    binds: &BTreeMap<String, u64>,
    machine: Option<&str>,
) -> Result<(Scenario, Source), Report> {
    let opts = crate::import::Options {
        machine: machine.unwrap_or("mncore2").to_string(),
        ..Default::default()
    };
    if crate::import::onnx::is_onnx(path) {
        let bytes = crate::input::read_bytes(path)
            .map_err(|e| miette::miette!("error: cannot read model {}: {e}", path.display()))?;
        return crate::import::load_onnx(path, &bytes, binds, &opts);
    }
    let (name, text) = scenario::read(path)?;
    if crate::import::is_graph(path, &text) {
        return crate::import::load_for(path, &text, binds, &opts);
    }
    if let Some(m) = machine {
        return Err(miette::miette!(
            "error: --machine {m}: {name} is a scenario, which names its own machine (`machine:`); \
             --machine chooses the machine an imported file (oneDNN JSON, StableHLO, ONNX) is \
             imported for"
        ));
    }
    let sc = scenario::parse(&text, &name)?;
    Ok((sc, Source { path: name, text }))
}
