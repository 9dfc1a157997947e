//! Knob groups: one `--set` for several knobs, and values that multiply a knob's own.
//!
//! `--set KNOBS=VALUES`. Left of the first `=`, one or more knob paths separated by `,`
//! (a path never holds `,` or `=`); a path may hold `*`, which matches any run of
//! characters, dots included: `links.Group.*` is every knob of the Group's links,
//! `links.*.parent` the parent-side rate of every link. Right of it, one value (`run`,
//! `check`, `plan`, `compare`) or several (a sweep's axis), each a number, which every
//! knob of the group is set to, or `x` (or `×`) and a number, which multiplies each knob's
//! own value in the scenario's machine (its `overrides` applied): `x2`, `x0.5`. One
//! `--set` takes numbers or multipliers, not both.
//!
//! So `--set 'links.Group.*=x2'` doubles every Group link figure, and `--set
//! 'links.L1B.distribute.parent,links.L1B.broadcast.parent=128,256'` sweeps both rates
//! together. A path without `*` must name a knob (with the usual suggestions); a pattern
//! must match at least one. Every knob a group reaches is listed in the report's
//! overrides with the value it was given.

use crate::knobs::{KnobError, get_knob, knob_paths, set_knob};
use crate::machine::{Machine, Num};

/// What a group's value does to each of its knobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    /// Every knob is set to this.
    Value(f64),
    /// Every knob is multiplied by this (`x2`).
    Times(f64),
}

/// One `--set`: its knob patterns and its values.
#[derive(Clone, Debug, PartialEq)]
pub struct KnobGroup {
    /// The paths as written, `*` kept.
    pub patterns: Vec<String>,
    /// One value, or several for a sweep's axis; all numbers or all multipliers.
    pub amounts: Vec<Amount>,
}

/// Whether `path` matches `pattern`, whose `*` stands for any run of characters.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        // No `*`: the path itself.
        return pattern == path;
    };
    let Some(mut rest) = path.strip_prefix(first) else {
        return false;
    };
    for m in middle {
        match rest.find(m) {
            Some(at) => rest = &rest[at + m.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn syntax(whole: &str, why: &str) -> KnobError {
    KnobError::Syntax(format!("bad --set '{whole}': {why}"))
}

/// A number as a command line writes it (`128`, `1e6`, `4_096`), finite.
fn number(text: &str, whole: &str) -> Result<f64, KnobError> {
    let cleaned: String = text.trim().chars().filter(|&c| c != '_').collect();
    match cleaned.parse::<f64>() {
        Ok(v) if v.is_finite() && !cleaned.is_empty() => Ok(v),
        _ => Err(KnobError::Syntax(format!(
            "bad value '{}' in '{whole}': expected a finite number (128) or a multiplier (x2)",
            text.trim()
        ))),
    }
}

impl KnobGroup {
    /// Parses `KNOBS=VALUES`.
    pub fn parse(s: &str) -> Result<KnobGroup, KnobError> {
        let Some((left, right)) = s.split_once('=') else {
            return Err(KnobError::Syntax(format!(
                "bad assignment '{s}': expected KNOB=VALUE, e.g. links.L1B.distribute.parent=128"
            )));
        };
        let patterns: Vec<String> = left.split(',').map(|p| p.trim().to_string()).collect();
        if patterns.iter().any(String::is_empty) {
            return Err(if patterns.len() == 1 {
                KnobError::Syntax(format!(
                    "bad assignment '{s}': the knob name before '=' is empty"
                ))
            } else {
                syntax(s, "an empty knob path between ','")
            });
        }
        let mut amounts = Vec::new();
        for v in right.split(',') {
            let t = v.trim();
            let times = t
                .strip_prefix('x')
                .or_else(|| t.strip_prefix('X'))
                .or_else(|| t.strip_prefix('×'));
            amounts.push(match times {
                Some(f) => {
                    let f = number(f, s)?;
                    if f < 0.0 {
                        return Err(syntax(
                            s,
                            &format!("a multiplier of {} is negative", Num(f)),
                        ));
                    }
                    Amount::Times(f)
                }
                None => Amount::Value(number(t, s)?),
            });
        }
        let scales = amounts
            .iter()
            .filter(|a| matches!(a, Amount::Times(_)))
            .count();
        if scales != 0 && scales != amounts.len() {
            return Err(syntax(
                s,
                "give numbers or multipliers (x2), not both, in one --set",
            ));
        }
        Ok(KnobGroup { patterns, amounts })
    }

    /// The group as written left of `=`: `links.Group.*`, `a,b`.
    pub fn name(&self) -> String {
        self.patterns.join(",")
    }

    /// Whether the values multiply the knobs' own (`x2`).
    pub fn scales(&self) -> bool {
        matches!(self.amounts.first(), Some(Amount::Times(_)))
    }

    /// Whether the group is one knob set to numbers: what `--set KNOB=V` always was.
    pub fn is_single(&self) -> bool {
        self.patterns.len() == 1 && !self.patterns[0].contains('*') && !self.scales()
    }

    /// The values as numbers: the values, or the multipliers.
    pub fn numbers(&self) -> Vec<f64> {
        self.amounts
            .iter()
            .map(|a| match *a {
                Amount::Value(v) | Amount::Times(v) => v,
            })
            .collect()
    }

    /// Every knob of `m` the group reaches, in the machine's knob order (each once),
    /// with its value in `m`. A path without `*` that names no knob is
    /// [`KnobError::Unknown`] (with suggestions); a pattern that matches none is an error
    /// naming it.
    pub fn knobs(&self, m: &Machine) -> Result<Vec<(String, f64)>, KnobError> {
        let all = knob_paths(m);
        let mut out: Vec<(String, f64)> = Vec::new();
        for p in &self.patterns {
            let matched: Vec<&String> = if p.contains('*') {
                all.iter().filter(|k| glob_match(p, k)).collect()
            } else {
                get_knob(m, p)?;
                all.iter().filter(|k| *k == p).collect()
            };
            if matched.is_empty() {
                return Err(KnobError::Syntax(format!(
                    "'{p}' matches no knob of {}; `mnsim machines {} --knobs` lists them",
                    m.name, m.name
                )));
            }
            for k in matched {
                if !out.iter().any(|(x, _)| x == k) {
                    out.push((k.clone(), get_knob(m, k)?));
                }
            }
        }
        Ok(out)
    }

    /// What `amount` makes of each of `knobs` (as [`KnobGroup::knobs`] gives them): every
    /// knob set to the value, or its own value multiplied. Each setting is checked on a
    /// copy of `m` (a rate of 0, an integer knob given a fraction are errors naming the
    /// knob); `m` is unchanged.
    pub fn assignments(
        knobs: &[(String, f64)],
        amount: Amount,
        m: &Machine,
    ) -> Result<Vec<(String, f64)>, KnobError> {
        let mut check = m.clone();
        knobs
            .iter()
            .map(|(k, own)| {
                let v = match amount {
                    Amount::Value(v) => v,
                    Amount::Times(f) => own * f,
                };
                set_knob(&mut check, k, v)?;
                Ok((k.clone(), v))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_match_any_run_of_characters() {
        assert!(glob_match("links.Group.*", "links.Group.broadcast.parent"));
        assert!(glob_match("links.*.parent", "links.L1B.distribute.parent"));
        assert!(!glob_match("links.*.parent", "links.L1B.distribute.child"));
        assert!(glob_match("*", "clock_ghz"));
        assert!(glob_match("dram.bytes_per_cycle", "dram.bytes_per_cycle"));
        assert!(!glob_match("dram.bytes", "dram.bytes_per_cycle"));
        assert!(glob_match("a*b*c", "a-b-b-c"));
        assert!(!glob_match("a*b*c", "a-c"));
        assert!(!glob_match("ab*ba", "aba"));
    }

    #[test]
    fn groups_parse_one_way_only() {
        let g = KnobGroup::parse("links.Group.*=x2").unwrap();
        assert_eq!(g.patterns, ["links.Group.*"]);
        assert_eq!(g.amounts, [Amount::Times(2.0)]);
        assert!(g.scales() && !g.is_single());
        let g = KnobGroup::parse("a.b , c.d=64,1_024").unwrap();
        assert_eq!(g.patterns, ["a.b", "c.d"]);
        assert_eq!(g.numbers(), [64.0, 1024.0]);
        assert_eq!(g.name(), "a.b,c.d");
        assert!(KnobGroup::parse("a.b=4").unwrap().is_single());
        assert!(KnobGroup::parse("a.b=×0.5").unwrap().scales());
        for bad in ["a=1,x2", "a=", "=1", "a,,b=1", "a=x", "a=x-1", "a=nan", "a"] {
            assert!(KnobGroup::parse(bad).is_err(), "{bad}");
        }
        let e = KnobGroup::parse("a=1,x2").unwrap_err().to_string();
        assert!(e.contains("not both"), "{e}");
    }

    #[test]
    fn groups_reach_every_knob_they_match_once() {
        let m = crate::presets::preset("mncore2").unwrap();
        let g = KnobGroup::parse("links.Group.*,links.Group.broadcast.parent=x2").unwrap();
        let knobs = g.knobs(&m).unwrap();
        assert!(knobs.len() >= 3, "{knobs:?}");
        assert!(knobs.iter().all(|(k, _)| k.starts_with("links.Group.")));
        let parent = "links.Group.broadcast.parent";
        assert_eq!(knobs.iter().filter(|(k, _)| k == parent).count(), 1);
        let set = KnobGroup::assignments(&knobs, Amount::Times(2.0), &m).unwrap();
        for ((k, own), (k2, v)) in knobs.iter().zip(&set) {
            assert_eq!(k, k2);
            assert_eq!(*v, own * 2.0);
        }
        // A pattern that matches nothing, a misspelt path, a value a knob cannot take.
        let e = KnobGroup::parse("links.Grop.*=x2")
            .unwrap()
            .knobs(&m)
            .unwrap_err();
        assert!(e.to_string().contains("matches no knob of mncore2"), "{e}");
        let e = KnobGroup::parse("links.Grop.broadcast.parent=1")
            .unwrap()
            .knobs(&m)
            .unwrap_err();
        assert!(e.to_string().contains("did you mean"), "{e}");
        let counts = KnobGroup::parse("levels.L1B.count=x1.5").unwrap();
        let k = counts.knobs(&m).unwrap();
        assert_eq!(k, [("levels.L1B.count".to_string(), 8.0)]);
        assert!(KnobGroup::assignments(&k, Amount::Times(1.5), &m).is_ok());
        let e = KnobGroup::assignments(&k, Amount::Times(1.3), &m).unwrap_err();
        assert!(e.to_string().contains("levels.L1B.count"), "{e}");
    }
}
