//! The machine a scenario names: a preset or a machine file beside the scenario, loaded
//! and validated, its errors pointing into the scenario or the machine file.

use super::ctx::Ctx;
use crate::scenario::{Scenario, Source, located, spans};
use miette::Report;
use mnsim_arch::Machine;
use std::path::Path;

/// The machine a scenario names (before its `overrides`), loaded and validated.
pub fn machine(sc: &Scenario, src: &Source) -> Result<Machine, Report> {
    let cx = Ctx {
        src,
        root: spans::scan(&src.text),
    };
    load_machine(sc, &cx)
}

/// The machine a scenario names, loaded and validated.
pub(super) fn load_machine(sc: &Scenario, cx: &Ctx) -> Result<Machine, Report> {
    let at = || {
        cx.field("machine")
            .and_then(|m| m.item(0))
            .or(cx.field("machine"))
    };
    let span = || at().map(|n| n.span.clone());
    match &sc.machine {
        crate::scenario::MachineRef::Preset(name) => {
            mnsim_arch::preset(name).map_err(|e| cx.err(span(), &e.to_string(), "unknown machine"))
        }
        crate::scenario::MachineRef::File(file) => {
            let base = Path::new(&cx.src.path)
                .parent()
                .unwrap_or_else(|| Path::new(""));
            let path = base.join(file);
            let shown = path.display().to_string();
            let text = crate::input::read_text(&path).map_err(|e| {
                cx.err(
                    span(),
                    &format!("cannot read machine file {shown}: {e}"),
                    "this file",
                )
            })?;
            mnsim_arch::from_ron(&text).map_err(|e| match (e.line, e.column) {
                (Some(l), c) => {
                    let off = crate::scenario::offset_of(&text, l, c.unwrap_or(1));
                    let msrc = Source {
                        path: shown.clone(),
                        text: text.clone(),
                    };
                    located(&msrc, Some(off..off), &e.message, "here")
                }
                (None, _) => cx.err(
                    span(),
                    &format!("machine file {shown}: {}", e.message),
                    "this machine",
                ),
            })
        }
    }
}
