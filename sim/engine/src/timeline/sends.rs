//! A walk's sends of one stream (docs/model.md, streams): per send, the slice it
//! carries and the send whose buffer it takes, as the timeline reads them.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A walk's sends of one stream in order: per send, the slice it carries and the send
/// whose buffer it takes. Most walks take the buffer of the send `lag` before (every
/// step a new send, the least recently used buffer the oldest): those keep their slices
/// only (often the walk's own step vector, shared), a third of the table's memory or
/// none. A list is in the lagged form exactly when its sends are
/// ([`SendList::from_table`]), so equal lists are equal values.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SendList {
    /// Send `m` carries `slices[m]` and takes the buffer of send `m - lag` (none
    /// before send `lag`).
    Lagged { slices: Arc<[u32]>, lag: u32 },
    /// Any other order.
    Table(Arc<[(u32, Option<u32>)]>),
}

impl Default for SendList {
    fn default() -> Self {
        SendList::Table(Arc::from(Vec::new()))
    }
}

impl From<Vec<(u32, Option<u32>)>> for SendList {
    fn from(t: Vec<(u32, Option<u32>)>) -> Self {
        SendList::from_table(&t, None)
    }
}

impl SendList {
    /// The list of `table`, lagged where it is; `slices` (if given) holds the same
    /// slices as the table, in order, and is kept instead of a copy.
    pub fn from_table(table: &[(u32, Option<u32>)], slices: Option<&Arc<[u32]>>) -> SendList {
        match lag_of(table) {
            Some(lag) => {
                let same = slices.filter(|v| {
                    v.len() == table.len() && v.iter().zip(table).all(|(&a, &(b, _))| a == b)
                });
                let slices = match same {
                    Some(v) => v.clone(),
                    None => table.iter().map(|&(s, _)| s).collect(),
                };
                SendList::Lagged { slices, lag }
            }
            None => SendList::Table(Arc::from(table)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SendList::Lagged { slices, .. } => slices.len(),
            SendList::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Send `m`: its slice and the send whose buffer it takes.
    pub fn get(&self, m: usize) -> Option<(u32, Option<u32>)> {
        match self {
            SendList::Lagged { slices, lag } => {
                let s = *slices.get(m)?;
                // `m` < the slices' length, which a `u32` send index reaches.
                Some((s, u32::try_from(m).ok()?.checked_sub(*lag)))
            }
            SendList::Table(t) => t.get(m).copied(),
        }
    }

    /// The sends in order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, Option<u32>)> + '_ {
        (0..self.len()).map_while(|m| self.get(m))
    }

    /// The slices of the sends in order.
    pub fn slices(&self) -> impl Iterator<Item = u32> + '_ {
        let (lagged, table) = match self {
            SendList::Lagged { slices, .. } => (&slices[..], &[][..]),
            SendList::Table(t) => (&[][..], &t[..]),
        };
        lagged.iter().copied().chain(table.iter().map(|&(s, _)| s))
    }

    pub fn to_vec(&self) -> Vec<(u32, Option<u32>)> {
        self.iter().collect()
    }
}

/// The lag of `table` if every send `m` takes the buffer of send `m - lag` (none
/// before `lag`): the first send that takes one says which.
fn lag_of(table: &[(u32, Option<u32>)]) -> Option<u32> {
    let n = u32::try_from(table.len()).ok()?;
    let lag = (table.iter().enumerate())
        .find_map(|(m, &(_, e))| u32::try_from(m).ok()?.checked_sub(e?))
        .unwrap_or(n);
    let lagged = (0..n)
        .zip(table)
        .all(|(m, &(_, e))| e == m.checked_sub(lag));
    lagged.then_some(lag)
}

/// How many of `sends` carry a slice (of `slices`) already sent once.
pub fn resends_of(sends: impl IntoIterator<Item = u32>, slices: u32) -> u64 {
    let mut seen = vec![false; slices.max(1) as usize];
    let mut n = 0u64;
    for s in sends {
        match seen.get_mut(s as usize) {
            Some(x) if *x => n += 1,
            Some(x) => *x = true,
            None => {}
        }
    }
    n
}
