//! The `buffers:` field of an op: a count of LM slices or a plan variable naming one,
//! read from RON with the project's own messages for a count out of range or not whole.

use serde::{Deserialize, Serialize};

/// `buffers:` of an op: a count, or `"$name"`, a plan variable whose value is the count
/// (as text: `"wb": "1"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Buffers {
    Count(i64),
    Var(String),
}

impl<'de> Deserialize<'de> for Buffers {
    /// An integer or a string; a number out of range or not whole is refused in the
    /// project's words (the resolver checks that a count is at least 1).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Buffers;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a count of slices (an integer ≥ 1) or a plan variable `\"$name\"`")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Buffers, E> {
                Ok(Buffers::Count(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Buffers, E> {
                i64::try_from(v)
                    .map(Buffers::Count)
                    .map_err(|_| too_large(v))
            }
            fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Buffers, E> {
                i64::try_from(v)
                    .map(Buffers::Count)
                    .map_err(|_| too_large(v))
            }
            fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Buffers, E> {
                i64::try_from(v)
                    .map(Buffers::Count)
                    .map_err(|_| too_large(v))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Buffers, E> {
                Err(E::custom(format!(
                    "`buffers: {v}`: a count of slices is a whole number (an integer ≥ 1)"
                )))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Buffers, E> {
                Ok(Buffers::Var(v.to_string()))
            }
        }
        fn too_large<E: serde::de::Error>(v: impl std::fmt::Display) -> E {
            E::custom(format!(
                "`buffers: {v}` is out of range: a count of slices is an integer from 1 to {} \
                 (LM holds at most every slice of a stream; a larger count changes nothing)",
                i64::MAX
            ))
        }
        d.deserialize_any(V)
    }
}
