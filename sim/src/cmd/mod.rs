//! One module per subcommand.

/// `println!` that never panics: a reader that went away ends the output quietly, any
/// other write error (a full disk) is returned from the enclosing function.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cmd::emit(&format!("{}\n", format_args!($($arg)*)))?
    };
}

pub mod check;
pub mod import;
pub mod layout;
pub mod machines;
pub mod plan;
pub mod points;
pub mod run;
pub mod shape;
pub mod sweep;
pub mod sweep_axes;

use miette::{Report, miette};
use mnsim_arch::Machine;
use std::io::Write;

thread_local! {
    /// Where `emit` writes instead of stdout while set: the Python package (`sim/python`)
    /// runs these subcommands in-process and takes what they print.
    pub static CAPTURE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Writes `text` to stdout (or to [`CAPTURE`] while it is set). A reader that went away
/// early (`mnsim ... | head`) is not an error: the output is simply cut short.
pub fn emit(text: &str) -> Result<(), Report> {
    let captured = CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some(buf) => {
            buf.push_str(text);
            true
        }
        None => false,
    });
    if captured {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(miette!("error: writing output: {e}")),
    }
}

/// Refuses an `--out` folder that writing would refuse (a file, a folder of other files),
/// before anything runs.
pub fn check_out(dir: Option<&std::path::Path>) -> Result<(), Report> {
    match dir {
        Some(d) => mnsim_reports::check_out_dir(d)
            .map_err(|e| miette!("error: --out {}: {e}", d.display())),
        None => Ok(()),
    }
}

/// The longest time limit a command accepts, in seconds (a year).
pub const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// A number of seconds given to `flag`: positive, finite and at most [`MAX_SECONDS`]
/// (a deadline further out would overflow the clock).
pub fn parse_seconds(flag: &str, secs: f64) -> Result<std::time::Duration, Report> {
    if !(secs.is_finite() && secs > 0.0 && secs <= MAX_SECONDS) {
        return Err(miette!(
            "error: {flag} must be a positive number of seconds up to {MAX_SECONDS} (a year), not {secs}"
        ));
    }
    std::time::Duration::try_from_secs_f64(secs).map_err(|e| miette!("error: {flag} {secs}: {e}"))
}

/// Whether to colour output meant for a terminal: `is_tty`, and `NO_COLOR` unset or
/// empty (no-color.org).
pub fn use_color(is_tty: bool) -> bool {
    is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A machine from a preset name or a RON file path, with `--set` knobs applied.
pub fn load_machine(name: &str, sets: &[String]) -> Result<Machine, Report> {
    let mut m = if name.ends_with(".ron") || name.contains('/') {
        let text = mnsim_sim::input::read_text(std::path::Path::new(name))
            .map_err(|e| miette!("error: cannot read machine file {name}: {e}"))?;
        mnsim_arch::from_ron(&text).map_err(|e| miette!("error: {name}: {e}"))?
    } else {
        mnsim_arch::preset(name).map_err(|e| miette!("error: {e}"))?
    };
    for s in sets {
        let (path, value) =
            mnsim_arch::knobs::parse_assignment(s).map_err(|e| miette!("error: --set {s}: {e}"))?;
        mnsim_arch::knobs::set_knob(&mut m, &path, value)
            .map_err(|e| miette!("error: --set {s}: {e}"))?;
    }
    if !sets.is_empty() {
        // The description is free text about the machine as shipped; say that it no
        // longer tells the whole story.
        let changed = sets.join(" --set ");
        m.description = if m.description.is_empty() {
            format!("changed by --set {changed}")
        } else {
            format!(
                "{} (as shipped; changed here by --set {changed})",
                m.description
            )
        };
    }
    Ok(m)
}

/// Parses `2,3` (or `(2,3)`, `[2,3]`) into an index or a shape.
pub fn parse_list(text: &str) -> Result<Vec<u64>, Report> {
    mnsim_arch::shape::parse_index(text).map_err(|e| miette!("error: in `{text}`: {e}"))
}
