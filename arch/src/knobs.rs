//! What-if knobs: every number in a [`Machine`] addressed by a dotted path.
//!
//! Paths follow the machine's structure: `levels.<LEVEL>.count`,
//! `levels.<LEVEL>.memory.bytes`, `links.<LEVEL>.<kind>.parent|child|latency`,
//! `networks.<LEVEL>.bytes_per_cycle|latency` (the links between boards or nodes),
//! `networks.<LEVEL>.algorithm` (its collectives: `ring`, `tree`, `direct` or `default`,
//! also written 1, 2, 3, 0), `networks.<LEVEL>.host.down_bytes_per_cycle|up_bytes_per_cycle|latency`
//! (the host's link) and `networks.<LEVEL>.host.inputs` (1: the program's inputs start on
//! the host; 0: in the boards' DRAMs),
//! `dram.bytes|bytes_per_cycle|burst_bytes`, `clock_ghz`, `word_bytes`,
//! `compute.vector.<DTYPE>`, `compute.matrix.flops.<DTYPE>`,
//! `compute.matrix.tile.<DTYPE>.m|n|k`, and the energy coefficients `energy.…`
//! (`energy.dram.read_pj_per_byte`, `energy.links.<LEVEL>.down_pj_per_byte`, ...; these
//! take 0 too, and exist only where the machine gives them). Elements of `levels` are addressed by name
//! (case-sensitive). Integer fields take non-negative whole numbers; float fields (rates
//! and the clock) take positive finite numbers. A change that leaves the machine invalid
//! is refused (see [`Machine::validate`](crate::Machine::validate): counts and sizes of
//! at least 1, memories of at least one word, bounded latencies and PE counts).

use crate::machine::{Algorithm, Machine, MachineError, Num};
use serde_json::{Number, Value};

/// A knob that cannot be read, parsed or set.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum KnobError {
    /// No number lives at this path.
    #[error("{}", unknown_message(.path, .suggestions))]
    Unknown {
        path: String,
        /// Up to 3 valid paths close to the one given.
        suggestions: Vec<String>,
    },
    /// The value does not fit the field (an integer field given 1.5, a NaN, ...).
    #[error("knob '{path}' {message}")]
    BadValue { path: String, message: String },
    /// The value fits the field but the resulting machine is inconsistent.
    #[error("setting '{path}' to {} makes the machine invalid: {source}", Num(*.value))]
    Invalid {
        path: String,
        value: f64,
        source: MachineError,
    },
    /// A malformed `KNOB=VALUE` assignment.
    #[error("{0}")]
    Syntax(String),
}

fn unknown_message(path: &str, suggestions: &[String]) -> String {
    let mut s = format!("unknown knob '{path}'");
    match suggestions {
        [] => s.push_str(
            "; knobs are levels.<LEVEL>.count, levels.<LEVEL>.memory.bytes, \
             links.<LEVEL>.<kind>.parent|child|latency, networks.<LEVEL>.bytes_per_cycle|latency|algorithm, \
             dram.*, clock_ghz, word_bytes, \
             compute.vector.<DTYPE>, compute.matrix.flops.<DTYPE>, compute.matrix.tile.<DTYPE>.m|n|k",
        ),
        [one] => s.push_str(&format!("; did you mean '{one}'?")),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|p| format!("'{p}'")).collect();
            s.push_str(&format!("; did you mean {} or '{last}'?", init.join(", ")));
        }
    }
    s
}

/// Whether a knob holds an integer or a float.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
}

fn to_value(m: &Machine) -> Option<Value> {
    serde_json::to_value(m).ok()
}

/// Walks `v`, collecting every numeric leaf with its path and kind.
fn collect(v: &Value, prefix: &str, out: &mut Vec<(String, Kind)>) {
    let join = |seg: &str| {
        if prefix.is_empty() {
            seg.to_string()
        } else {
            format!("{prefix}.{seg}")
        }
    };
    match v {
        Value::Number(n) => {
            let kind = if n.is_f64() { Kind::Float } else { Kind::Int };
            out.push((prefix.to_string(), kind));
        }
        Value::Object(map) => {
            for (k, child) in map {
                collect(child, &join(k), out);
            }
        }
        Value::Array(items) => {
            for item in items {
                if let Some(name) = item.get("name").and_then(Value::as_str) {
                    collect(item, &join(name), out);
                }
            }
        }
        _ => {}
    }
}

/// The value at `path`: arrays are indexed by their elements' `name`.
fn resolve_mut<'a>(v: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut cur = v;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(map) => map.get_mut(seg)?,
            Value::Array(items) => items
                .iter_mut()
                .find(|i| i.get("name").and_then(Value::as_str) == Some(seg))?,
            _ => return None,
        };
    }
    Some(cur)
}

fn knob_list(m: &Machine) -> Vec<(String, Kind)> {
    let mut out = Vec::new();
    if let Some(v) = to_value(m) {
        collect(&v, "", &mut out);
    }
    for name in m.networks.keys() {
        out.push((format!("networks.{name}.algorithm"), Kind::Int));
    }
    out
}

/// The network named by an algorithm knob `networks.<LEVEL>.algorithm`, if `path` is one.
fn algorithm_knob<'a>(m: &Machine, path: &'a str) -> Option<&'a str> {
    let name = path.strip_prefix("networks.")?.strip_suffix(".algorithm")?;
    m.networks.contains_key(name).then_some(name)
}

/// Sets a network's collective algorithm by its knob value (0 the topology's default,
/// 1 ring, 2 tree, 3 direct).
fn set_algorithm(m: &mut Machine, path: &str, name: &str, value: f64) -> Result<(), KnobError> {
    let code = (value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value < 4.0)
        .then_some(value as u64)
        .and_then(Algorithm::from_code);
    let Some(a) = code else {
        return Err(KnobError::BadValue {
            path: path.to_string(),
            message: format!(
                "takes ring, tree, direct or default (1, 2, 3 or 0), got {}",
                Num(value)
            ),
        });
    };
    if let Some(n) = m.networks.get_mut(name) {
        n.algorithm = a;
    }
    Ok(())
}

/// Every settable path of `m`, in a stable order.
pub fn knob_paths(m: &Machine) -> Vec<String> {
    knob_list(m).into_iter().map(|(p, _)| p).collect()
}

/// Up to 3 valid paths near `path`: case-insensitive matches first, then paths that
/// extend it, then the closest by (case-insensitive) edit distance.
fn suggest(path: &str, valid: &[String]) -> Vec<String> {
    let lower = path.to_lowercase();
    let exact: Vec<String> = valid
        .iter()
        .filter(|p| p.to_lowercase() == lower)
        .cloned()
        .collect();
    if !exact.is_empty() {
        return exact.into_iter().take(3).collect();
    }
    let prefix = format!("{lower}.");
    let extends: Vec<String> = valid
        .iter()
        .filter(|p| p.to_lowercase().starts_with(&prefix))
        .take(3)
        .cloned()
        .collect();
    if !extends.is_empty() {
        return extends;
    }
    let limit = (lower.len() / 3).max(3);
    let mut scored: Vec<(usize, &String)> = valid
        .iter()
        .map(|p| (strsim::levenshtein(&lower, &p.to_lowercase()), p))
        .filter(|&(d, _)| d <= limit)
        .collect();
    scored.sort();
    // Only the closest ones: a near miss should not drown in merely similar paths.
    let best = scored.first().map_or(0, |&(d, _)| d);
    scored
        .into_iter()
        .take_while(|&(d, _)| d == best)
        .take(3)
        .map(|(_, p)| p.clone())
        .collect()
}

fn unknown(m: &Machine, path: &str) -> KnobError {
    KnobError::Unknown {
        path: path.to_string(),
        suggestions: suggest(path, &knob_paths(m)),
    }
}

/// The current value of the knob at `path`.
pub fn get_knob(m: &Machine, path: &str) -> Result<f64, KnobError> {
    if let Some(name) = algorithm_knob(m, path) {
        return Ok(m.networks[name].algorithm.map_or(0, Algorithm::code) as f64);
    }
    let mut v = to_value(m).ok_or_else(|| unknown(m, path))?;
    match resolve_mut(&mut v, path) {
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| unknown(m, path)),
        _ => Err(unknown(m, path)),
    }
}

/// Sets the knob at `path` to `value` and validates the result. On error `m` is unchanged.
pub fn set_knob(m: &mut Machine, path: &str, value: f64) -> Result<(), KnobError> {
    if let Some(name) = algorithm_knob(m, path) {
        return set_algorithm(m, path, name, value);
    }
    let mut v = to_value(m).ok_or_else(|| unknown(m, path))?;
    let leaf = match resolve_mut(&mut v, path) {
        Some(leaf @ Value::Number(_)) => leaf,
        _ => return Err(unknown(m, path)),
    };
    let is_int = matches!(leaf, Value::Number(n) if !n.is_f64());
    let bad = |message: String| KnobError::BadValue {
        path: path.to_string(),
        message,
    };
    *leaf = if is_int {
        // 2^64 as f64: the first value too large for u64.
        if !(value.is_finite()
            && value >= 0.0
            && value.fract() == 0.0
            && value < 18_446_744_073_709_551_616.0)
        {
            return Err(bad(format!(
                "takes a non-negative whole number, got {}",
                Num(value)
            )));
        }
        Value::Number(Number::from(value as u64))
    } else {
        // Every float knob is a rate or a clock (bytes or FLOP per cycle, GHz): zero,
        // negatives, NaN and infinities describe no machine. Energy coefficients may be 0.
        if crate::energy::is_energy_knob(path) {
            if !crate::energy::is_coefficient(value) {
                return Err(bad(format!(
                    "takes a number from 0 to 1e12 (an energy coefficient: a larger one could make a run's joules or watts overflow), got {}",
                    Num(value)
                )));
            }
        } else if !(value.is_finite() && value > 0.0) {
            return Err(bad(format!(
                "takes a positive finite number (a rate or a clock), got {}",
                Num(value)
            )));
        }
        Value::Number(
            Number::from_f64(value)
                .ok_or_else(|| bad(format!("takes a finite number, got {value}")))?,
        )
    };
    let new: Machine = serde_json::from_value(v).map_err(|e| bad(e.to_string()))?;
    new.validate().map_err(|source| KnobError::Invalid {
        path: path.to_string(),
        value,
        source,
    })?;
    *m = new;
    Ok(())
}

/// Parses a number as written on a command line: `128`, `1e6`, `0.75`, `4_096`.
/// A network's algorithm (a knob `….algorithm`) may be named (`ring`, `tree`, `direct`,
/// `default`): its code.
fn parse_number(s: &str, whole: &str) -> Result<f64, KnobError> {
    let t = s.trim();
    let key = whole.split_once('=').map_or("", |(k, _)| k.trim());
    if key.ends_with(".algorithm")
        && let Some(code) = Algorithm::code_of_name(t)
    {
        return Ok(code as f64);
    }
    let cleaned: String = t.chars().filter(|&c| c != '_').collect();
    match cleaned.parse::<f64>() {
        Ok(v) if v.is_finite() && !cleaned.is_empty() => Ok(v),
        _ => Err(KnobError::Syntax(format!(
            "bad value '{t}' in '{whole}': expected a finite number"
        ))),
    }
}

fn split_assignment(s: &str) -> Result<(String, &str), KnobError> {
    let Some((k, v)) = s.split_once('=') else {
        return Err(KnobError::Syntax(format!(
            "bad assignment '{s}': expected KNOB=VALUE, e.g. links.L1B.distribute.parent=128"
        )));
    };
    let k = k.trim();
    if k.is_empty() {
        return Err(KnobError::Syntax(format!(
            "bad assignment '{s}': the knob name before '=' is empty"
        )));
    }
    Ok((k.to_string(), v))
}

/// Parses `KNOB=VALUE` (one value).
pub fn parse_assignment(s: &str) -> Result<(String, f64), KnobError> {
    let (k, v) = split_assignment(s)?;
    if v.contains(',') {
        return Err(KnobError::Syntax(format!(
            "bad assignment '{s}': expected one value (several values make a sweep)"
        )));
    }
    Ok((k, parse_number(v, s)?))
}

/// Parses `KNOB=V1,V2,...` (one or more values, for sweeps).
pub fn parse_sweep(s: &str) -> Result<(String, Vec<f64>), KnobError> {
    let (k, v) = split_assignment(s)?;
    let values = v
        .split(',')
        .map(|x| parse_number(x, s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((k, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let e = KnobError::Unknown {
            path: "x".into(),
            suggestions: vec!["a".into(), "b".into(), "c".into()],
        };
        assert_eq!(
            e.to_string(),
            "unknown knob 'x'; did you mean 'a', 'b' or 'c'?"
        );
    }

    #[test]
    fn parse() {
        assert_eq!(
            parse_assignment(" a.b = 4_096 ").unwrap(),
            ("a.b".into(), 4096.0)
        );
        assert!(parse_assignment("a=1,2").is_err());
        assert!(parse_assignment("a").is_err());
        assert!(parse_assignment("=1").is_err());
        assert!(parse_assignment("a=nan").is_err());
        assert!(parse_assignment("a=").is_err());
        assert_eq!(
            parse_sweep("k=1,2,4").unwrap(),
            ("k".into(), vec![1.0, 2.0, 4.0])
        );
        assert!(parse_sweep("k=1,,4").is_err());
    }
}
