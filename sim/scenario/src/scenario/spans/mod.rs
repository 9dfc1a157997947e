//! Where things are in a scenario file.
//!
//! `ron` gives positions for syntax and type errors only. Errors found later (an
//! unknown plan variable, a layout that does not fit) must point into the file too,
//! so the text is scanned a second time into a light tree of values with their byte
//! spans. The scanner accepts what `ron` accepts (it runs after a successful parse)
//! and gives up quietly (`None`) on anything else: spans are a courtesy, never a
//! reason to fail or panic.

use std::ops::Range;

mod scan;
pub use scan::scan;

/// A value of the file and the bytes it covers.
#[derive(Clone, Debug)]
pub struct Node {
    /// Byte range of the whole value in the file.
    pub span: Range<usize>,
    /// What the value is.
    pub kind: Kind,
}

/// The shape of a value.
#[derive(Clone, Debug)]
pub enum Kind {
    /// A string: its decoded text and, for every byte of it plus one past the end,
    /// the byte offset in the file it came from.
    Str { value: String, map: Vec<usize> },
    /// A bare identifier: a unit variant, `true`, `None`, ...
    Ident(String),
    /// A number, character or byte string.
    Other,
    /// `Name(field: value, ...)` or `(field: value, ...)`: fields with the spans of
    /// their names (the struct's name is not kept).
    Fields(Vec<(String, Range<usize>, Node)>),
    /// `Name(value, ...)` or `(value, ...)`.
    Tuple {
        name: Option<String>,
        items: Vec<Node>,
    },
    /// `[value, ...]`.
    List(Vec<Node>),
    /// `{key: value, ...}`.
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// Looks through `Some(x)` to `x`.
    fn unwrapped(&self) -> &Node {
        match &self.kind {
            Kind::Tuple {
                name: Some(n),
                items,
            } if n == "Some" && items.len() == 1 => items[0].unwrapped(),
            _ => self,
        }
    }

    /// The value of field `name` of a struct-like value.
    pub fn field(&self, name: &str) -> Option<&Node> {
        match &self.unwrapped().kind {
            Kind::Fields(fields) => fields
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, _, v)| v.unwrapped()),
            _ => None,
        }
    }

    /// The span of the name of field `name` of a struct-like value.
    pub fn field_name_span(&self, name: &str) -> Option<Range<usize>> {
        match &self.unwrapped().kind {
            Kind::Fields(fields) => fields
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, s, _)| s.clone()),
            _ => None,
        }
    }

    /// The key node and value node of entry `key` of a map with string keys (the
    /// last one, as a map keeps the last duplicate).
    pub fn entry(&self, key: &str) -> Option<(&Node, &Node)> {
        match &self.unwrapped().kind {
            Kind::Map(entries) => entries
                .iter()
                .rev()
                .find(|(k, _)| k.str_value() == Some(key))
                .map(|(k, v)| (k, v.unwrapped())),
            _ => None,
        }
    }

    /// The entries of a map, in the file's order (duplicates included).
    pub fn entries(&self) -> &[(Node, Node)] {
        match &self.unwrapped().kind {
            Kind::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The value of entry `key` of a map with string keys.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// Item `i` of a list or tuple.
    pub fn item(&self, i: usize) -> Option<&Node> {
        match &self.unwrapped().kind {
            Kind::List(items) | Kind::Tuple { items, .. } => items.get(i).map(Node::unwrapped),
            _ => None,
        }
    }

    /// The decoded text of a string value.
    pub fn str_value(&self) -> Option<&str> {
        match &self.unwrapped().kind {
            Kind::Str { value, .. } => Some(value),
            _ => None,
        }
    }

    /// The text of a bare identifier.
    pub fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ident(s) => Some(s),
            _ => None,
        }
    }

    /// The file bytes that `range` of a string's decoded text came from; the whole
    /// value for anything but a string.
    pub fn inner_span(&self, range: Range<usize>) -> Range<usize> {
        match &self.unwrapped().kind {
            Kind::Str { map, .. } if !map.is_empty() => {
                let last = map.len() - 1;
                let start = map[range.start.min(last)];
                let end = map[range.end.min(last)].max(start);
                start..end
            }
            _ => self.span.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fields_entries_and_inner_spans() {
        let text = r##"#![enable(implicit_some)]
// comment
Scenario(
    name: "a\"b", /* block /* nested */ */
    tensors: {"x": (dtype: F32, shape: "f32[12,8]", init: Random(seed: 1))},
    program: [Load(tensor: "x", layout: r#"((4_PE))"#), Store(tensor: "x")],
    plans: {"p": {"v": Any, "w": "((1))"}},
    overrides: {"a.b": -1.5e-3},
)"##;
        let root = scan(text).expect("scans");
        let name = root.field("name").unwrap();
        assert_eq!(name.str_value(), Some("a\"b"));
        let shape = root
            .field("tensors")
            .and_then(|t| t.get("x"))
            .and_then(|x| x.field("shape"))
            .unwrap();
        let s = shape.inner_span(4..6);
        assert_eq!(&text[s], "12");
        let layout = root
            .field("program")
            .and_then(|p| p.item(0))
            .and_then(|o| o.field("layout"))
            .unwrap();
        assert_eq!(layout.str_value(), Some("((4_PE))"));
        assert_eq!(&text[layout.inner_span(2..6)], "4_PE");
        let any = root
            .field("plans")
            .and_then(|p| p.get("p"))
            .and_then(|p| p.get("v"))
            .unwrap();
        assert_eq!(any.ident(), Some("Any"));
        let (k, _) = root.field("overrides").unwrap().entry("a.b").unwrap();
        assert_eq!(&text[k.span.clone()], "\"a.b\"");
    }

    #[test]
    fn gives_up_quietly() {
        for t in [
            "(",
            "(a: ",
            "\"abc",
            "[1,,]",
            "(a: 1 b: 2)",
            "/* x",
            "r#\"x\"",
            "\\",
        ] {
            assert!(scan(t).is_none(), "{t}");
        }
    }
}
