//! The canonical text of a bound layout (explicit strides, every replicated level
//! listed), which is also its `Display` form.

use crate::layout::{Class, TensorLayout};
use std::fmt::Write as _;

impl TensorLayout {
    /// The canonical text: explicit strides everywhere, `; B@[...]` listing every
    /// replicated level (root-most first), the pad prefix only when padding exists.
    pub fn canonical(&self) -> String {
        let mut s = String::new();
        if self.logical != self.padded {
            let p: Vec<String> = self.logical.iter().map(u64::to_string).collect();
            let _ = write!(s, "({})/", p.join(","));
        }
        s.push('(');
        for (gi, g) in self.groups.iter().enumerate() {
            if gi > 0 {
                s.push_str(", ");
            }
            s.push('(');
            for (k, a) in g.iter().enumerate() {
                if k > 0 {
                    s.push_str(", ");
                }
                let _ = write!(s, "{}", a.size);
                match a.class {
                    Class::Mem => {}
                    Class::W => s.push_str("_W"),
                    Class::Time => s.push_str("_Time"),
                    Class::Level(i) => {
                        let _ = write!(s, "_{}", self.levels[i].name);
                    }
                }
                let _ = write!(s, ":{}", a.stride);
            }
            s.push(')');
        }
        let rep: Vec<&str> = self
            .levels
            .iter()
            .filter(|l| l.replicated)
            .map(|l| l.name.as_str())
            .collect();
        if !rep.is_empty() {
            let _ = write!(s, "; B@[{}]", rep.join(","));
        }
        s.push(')');
        s
    }
}

impl std::fmt::Display for TensorLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical())
    }
}
