//! Import of StableHLO MLIR text as JAX prints it (`jax.jit(f).lower(...).as_text()`,
//! `jax.export` with symbolic shapes): `lex` splits the text into tokens with spans,
//! `parse` reads the module's functions and ops, `lower` walks the public `main`
//! inlining calls, evaluating constants and shape computations (`fold`) and turning
//! the rest into the same kernel steps as the oneDNN import (`ops`, `emit`,
//! `movement`, `special`, `dot`, `conv`); the import's shared writer makes the
//! scenario. See `docs/import.md`.

pub mod control;
pub mod conv;
pub mod dot;
pub mod dynamic;
pub mod emit;
pub mod fold;
pub mod lex;
pub mod lower;
pub mod movement;
pub mod ops;
pub mod parse;
pub mod parts;
pub mod signature;
pub mod special;
pub mod types;

pub use lower::Binds;

use crate::scenario::{self, Source};
use miette::Report;

/// Whether `path`/`text` hold StableHLO MLIR: a `.mlir` extension, or text that starts
/// with `module`, `func.func` or a `#loc` alias.
pub fn is_mlir(path: &std::path::Path, text: &str) -> bool {
    let t = text.trim_start();
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("mlir"))
        || t.starts_with("module")
        || t.starts_with("func.func")
        || t.starts_with("#loc")
}

/// `src` with every lone carriage return (a line ending of CR-only text) made a line
/// feed, or `None` when it has none: every byte stays where it is, so spans are the same,
/// and lines are counted alike by the import's comments and by its messages.
pub fn normalised(src: &Source) -> Option<Source> {
    let b = src.text.as_bytes();
    let lone = |i: usize| b[i] == b'\r' && b.get(i + 1) != Some(&b'\n');
    if !(0..b.len()).any(lone) {
        return None;
    }
    let text: String = src
        .text
        .char_indices()
        .map(|(i, c)| if c == '\r' && lone(i) { '\n' } else { c })
        .collect();
    Some(Source {
        path: src.path.clone(),
        text,
    })
}

fn located(src: &Source, e: parse::At) -> Report {
    scenario::located(src, Some(e.span), &e.message, "here")
}

/// The module in `src` lowered with `binds`: its steps, the op names it uses and its
/// op count.
pub fn lower(src: &Source, binds: &Binds) -> Result<lower::Out, Report> {
    let normal = normalised(src);
    let src = normal.as_ref().unwrap_or(src);
    let toks = lex::lex(&src.text).map_err(|e| {
        scenario::located(
            src,
            Some(e.offset..e.offset),
            &format!("malformed MLIR: {}", e.message),
            "here",
        )
    })?;
    let m = parse::parse(&toks, src.text.len()).map_err(|e| located(src, e))?;
    lower::lower(&m, binds, &src.text).map_err(|e| located(src, e))
}
