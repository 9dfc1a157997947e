//! The `algorithm:` field of an op: the collective algorithm of its transfers over a
//! network (docs/model.md, many boards), written by name and read from RON with the
//! project's message for a name that is none.

use mnsim_arch::machine::Algorithm;
use serde::{Deserialize, Serialize};

/// `algorithm:` of an op as the file writes it: `"ring"`, `"tree"` or `"direct"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AlgorithmName(pub Algorithm);

impl Serialize for AlgorithmName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<'de> Deserialize<'de> for AlgorithmName {
    /// A name of [`Algorithm::ALL`]; anything else is refused, naming the three.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = AlgorithmName;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(&expected())
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<AlgorithmName, E> {
                Algorithm::named(v).map(AlgorithmName).ok_or_else(|| {
                    E::custom(format!(
                        "`algorithm: {v:?}` is no collective algorithm: {}",
                        expected()
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// What an op's `algorithm:` may say.
fn expected() -> String {
    let names: Vec<String> = (Algorithm::ALL.iter())
        .map(|a| format!("{:?}", a.name()))
        .collect();
    let (last, rest) = names
        .split_last()
        .map_or(("", &[][..]), |(l, r)| (l.as_str(), r));
    format!(
        "an op's collective algorithm is {} or {last}, a string (unset: the network's own)",
        rest.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<AlgorithmName, String> {
        ron::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn names_read_and_print_back() {
        for a in Algorithm::ALL {
            let text = format!("{:?}", a.name());
            assert_eq!(read(&text), Ok(AlgorithmName(a)));
            assert_eq!(ron::to_string(&AlgorithmName(a)).unwrap(), text);
        }
    }

    #[test]
    fn anything_else_is_refused_naming_the_three() {
        for bad in ["\"mesh\"", "\"Tree\"", "Tree", "2", "\"\""] {
            let e = read(bad).unwrap_err();
            assert!(e.contains(r#""ring", "tree" or "direct""#), "{bad}: {e}");
        }
    }
}
