//! `mnsim import G.json|M.mlir|M.onnx [-o S.ron] [--machine M] [--bind N=V]`: a oneDNN
//! Graph, StableHLO MLIR or an ONNX model as a scenario.

use clap::{Args, ValueEnum};
use miette::{Report, miette};
use mnsim_sim::import::{self, Options, Strides};
use mnsim_sim::scenario::{self, Source};
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum)]
pub enum StridesArg {
    /// The file's strides give the DRAM layouts; strides that are not dense are an error.
    File,
    /// Every graph input and output is row-major in DRAM, whatever the file says.
    RowMajor,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The oneDNN Graph JSON file, StableHLO MLIR text (`.mlir`) or an ONNX model (`.onnx`).
    pub graph: PathBuf,
    /// Write the scenario here (default: print it).
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// The machine: a preset name or a machine RON file.
    #[arg(long, default_value = "mncore2")]
    pub machine: String,
    /// Where the DRAM layouts of graph inputs and outputs come from.
    #[arg(long, value_enum, default_value = "file")]
    pub strides: StridesArg,
    /// Bind a symbolic dimension of a StableHLO file (a named dynamic dimension of an
    /// ONNX model), e.g. --bind b=8.
    #[arg(long = "bind")]
    pub binds: Vec<String>,
}

pub fn run(a: ImportArgs) -> Result<(), Report> {
    let path = a.graph.display().to_string();
    let opts = Options {
        machine: a.machine.clone(),
        strides: match a.strides {
            StridesArg::File => Strides::File,
            StridesArg::RowMajor => Strides::RowMajor,
        },
    };
    if import::onnx::is_onnx(&a.graph) {
        let bytes = mnsim_sim::input::read_bytes(&a.graph)
            .map_err(|e| miette!("error: cannot read model {path}: {e}"))?;
        let binds = scenario::parse_binds(&a.binds)?;
        let (imp, src) = import::import_onnx(&path, &bytes, &opts, &binds)?;
        return finish(&a, &src, &imp);
    }
    let text = mnsim_sim::input::read_text(&a.graph)
        .map_err(|e| miette!("error: cannot read graph {path}: {e}"))?;
    let src = Source { path, text };
    let imp = if import::stablehlo::is_mlir(&a.graph, &src.text) {
        let binds = scenario::parse_binds(&a.binds)?;
        import::import_mlir(&src, &opts, &binds)?
    } else {
        import::import(&src, &opts)?
    };
    finish(&a, &src, &imp)
}

/// Writes the imported scenario (`-o`) or prints it.
fn finish(a: &ImportArgs, src: &Source, imp: &import::Imported) -> Result<(), Report> {
    match &a.out {
        Some(o) => {
            let w = mnsim_reports::atomic::write_file(o, imp.text.as_bytes())
                .map_err(|e| miette!("error: writing {}: {e}", o.display()))?;
            if w.other_links > 0 {
                eprintln!(
                    "note: {} had {} other hard link(s): they keep the old text",
                    w.path.display(),
                    w.other_links
                );
            }
            eprintln!(
                "imported {}: {} ops ({}) as {} kernels; wrote {}",
                src.path,
                imp.graph_ops,
                imp.kinds.join(", "),
                imp.kernels,
                o.display()
            );
            Ok(())
        }
        None => super::emit(&imp.text),
    }
}
