//! A scenario's `places:`: where ops sit in a whole model (`program::Place`), as runs
//! of consecutive ops; resolution checks the runs and gives each op its place, which the
//! typed program keeps (`ProgramOp::place`).

use crate::program::{Part, Place};
use serde::{Deserialize, Serialize};

/// The ops `first..=last` of the program (positions from 0) in one place: an entry of
/// a scenario's `places`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placed {
    /// The first op of the run.
    pub first: usize,
    /// The last op of the run (at least `first`).
    pub last: usize,
    /// The layer, from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<u32>,
    /// The part of the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<Part>,
}

impl Placed {
    /// The place its ops are in.
    pub fn place(&self) -> Place {
        Place {
            layer: self.layer,
            part: self.part,
        }
    }
}

/// Each op's place (`n` ops) from the runs of `places`, or why the runs do not fit: a
/// run past the program's end, runs out of order or overlapping, a run with `last`
/// before `first` (the index of the run at fault, and the reason).
pub fn places_of(places: &[Placed], n: usize) -> Result<Vec<Place>, (usize, String)> {
    let mut out = vec![Place::default(); n];
    let mut next = 0usize;
    for (i, p) in places.iter().enumerate() {
        if p.last < p.first {
            return Err((
                i,
                format!("ends at op {} before it starts at op {}", p.last, p.first),
            ));
        }
        if p.first < next {
            return Err((
                i,
                format!(
                    "starts at op {}, inside or before the run before it (runs are in program order, apart)",
                    p.first
                ),
            ));
        }
        if p.last >= n {
            return Err((
                i,
                format!(
                    "ends at op {}, past the program's last op ({})",
                    p.last,
                    n.saturating_sub(1)
                ),
            ));
        }
        for o in &mut out[p.first..=p.last] {
            *o = p.place();
        }
        next = p.last + 1;
    }
    Ok(out)
}

/// The runs of equal places of `each` (one per op), the unknown ones left out.
pub fn runs_of(each: &[Place]) -> Vec<Placed> {
    let mut out: Vec<Placed> = Vec::new();
    for (i, p) in each.iter().enumerate() {
        if p.is_unknown() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.last + 1 == i && last.place() == *p => last.last = i,
            _ => out.push(Placed {
                first: i,
                last: i,
                layer: p.layer,
                part: p.part,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_places_round_trip() {
        let a = Place {
            layer: Some(0),
            part: Some(Part::Attention),
        };
        let m = Place {
            layer: Some(0),
            part: Some(Part::Mlp),
        };
        let each = vec![Place::default(), a, a, m, Place::default(), m];
        let runs = runs_of(&each);
        assert_eq!(runs.len(), 3);
        assert_eq!(places_of(&runs, each.len()).unwrap(), each);
        let bad = [Placed {
            first: 2,
            last: 1,
            layer: None,
            part: None,
        }];
        assert!(
            places_of(&bad, 4)
                .unwrap_err()
                .1
                .contains("before it starts")
        );
        let past = [Placed {
            first: 2,
            last: 9,
            layer: Some(1),
            part: None,
        }];
        assert!(
            places_of(&past, 4)
                .unwrap_err()
                .1
                .contains("past the program")
        );
    }
}
