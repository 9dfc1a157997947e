//! Ctrl-C and SIGTERM: remove every temporary file and folder mnsim is writing (and its
//! lock files), then exit with status 130, so an interrupt never leaves anything
//! half-written (`mnsim_reports::atomic`). A sweep's `points.jsonl` is not temporary: it
//! stays, and the sweep resumes from it.

/// Installs the handler (once, from `main`). Without it (an error installing it) the
/// signals keep their default action.
pub fn install() {
    let _ = ctrlc::set_handler(|| mnsim_reports::atomic::interrupted());
}
