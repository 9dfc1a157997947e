//! The pictures of `mnsim layout explain`: which position of each split level holds
//! each element.

use mnsim_arch::TensorLayout;
use std::fmt::Write as _;

const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The picture's mark for a padding cell (no position is this large).
const PAD: u64 = u64::MAX;

/// Pictures: for each split level, which position holds each element: the top-left
/// corner element by element, and (for larger tensors) a coarse map of blocks.
pub(super) fn explain_pictures(s: &mut String, l: &TensorLayout) {
    let shape = l.padded_shape();
    let logical = l.logical_shape();
    let padded = l.padding_elems() > 0;
    let (rows, cols) = match shape.len() {
        0 => (1, 1),
        1 => (1, shape[0]),
        n => (shape[..n - 1].iter().product::<u64>(), shape[n - 1]),
    };
    let (wr, wc) = (rows.min(16), cols.min(64));
    let (br, bc) = (rows.div_ceil(16), cols.div_ceil(64));
    let coarse = br > 1 || bc > 1;
    for (i, lv) in l.levels().iter().enumerate() {
        if lv.replicated {
            continue;
        }
        // A padding cell shows as PAD.
        let pos_of = |r: u64, c: u64| {
            let idx = grid_index(shape, r, c);
            if idx.iter().zip(logical).any(|(&k, &n)| k >= n) {
                return PAD;
            }
            l.place_padded(&idx).pos[i].unwrap_or(0)
        };
        let _ = writeln!(s);
        let what = match (shape.len() > 2, padded) {
            (true, false) => "rows = leading axes flattened",
            (false, false) => "rows = axis 0",
            (true, true) => "rows = leading axes flattened, padded shape, `.` = padding",
            (false, true) => "rows = axis 0, padded shape, `.` = padding",
        };
        if coarse {
            let _ = writeln!(
                s,
                "{} position, top-left {wr}×{wc} elements ({what}):",
                lv.name
            );
        } else {
            let _ = writeln!(s, "{} position of each element ({what}):", lv.name);
        }
        for r in 0..wr {
            s.push_str("  ");
            s.extend((0..wc).map(|c| symbol(pos_of(r, c))));
            s.push('\n');
        }
        if coarse {
            explain_blocks(s, &lv.name, (rows, cols), (br, bc), &pos_of);
        }
        if lv.fanout > DIGITS.len() as u64 {
            let _ = writeln!(s, "  (`+` = position ≥ {})", DIGITS.len());
        }
    }
}

/// The coarse picture of one level: its position per block of `br`×`bc` elements, `·`
/// where the block is shared by several positions.
fn explain_blocks(
    s: &mut String,
    name: &str,
    (rows, cols): (u64, u64),
    (br, bc): (u64, u64),
    pos_of: &impl Fn(u64, u64) -> u64,
) {
    let _ = writeln!(
        s,
        "{name} position by blocks of {br}×{bc} elements (`·` = block shared by several positions):"
    );
    for r0 in (0..rows).step_by(br as usize) {
        s.push_str("  ");
        for c0 in (0..cols).step_by(bc as usize) {
            let (hr, hc) = ((rows - r0).min(br), (cols - c0).min(bc));
            let first = pos_of(r0, c0);
            let uniform = probe(r0, hr)
                .iter()
                .all(|&r| probe(c0, hc).iter().all(|&c| pos_of(r, c) == first));
            s.push(if uniform { symbol(first) } else { '·' });
        }
        s.push('\n');
    }
}

/// Up to 8 evenly spread points of `base..base + len`, both ends included (a block's
/// rows or columns to look at).
fn probe(base: u64, len: u64) -> Vec<u64> {
    let n = len.min(8);
    (0..n)
        .map(|k| base + if n > 1 { k * (len - 1) / (n - 1) } else { 0 })
        .collect()
}

/// The index of the picture's cell (`r`, `c`): `r` counts the leading axes of `shape`
/// flattened, `c` the last axis.
fn grid_index(shape: &[u64], r: u64, c: u64) -> Vec<u64> {
    let mut idx = vec![0u64; shape.len()];
    if let Some(last) = idx.last_mut() {
        *last = c;
    }
    let mut r = r;
    for d in (0..shape.len().saturating_sub(1)).rev() {
        idx[d] = r % shape[d];
        r /= shape[d];
    }
    idx
}

/// The picture's mark for a position: a digit or letter, `+` past them, `.` for padding.
fn symbol(pos: u64) -> char {
    if pos == PAD {
        return '.';
    }
    DIGITS.get(pos as usize).map_or('+', |&b| b as char)
}
