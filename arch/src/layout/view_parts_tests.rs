//! Slices, concatenations and broadcasts against the element walk: a view's layout puts
//! every element where its source put it (random layouts on random trees), and worked
//! examples.

use super::tests::{all_indices, arb_layout};
use crate::dtype::DType;
use crate::layout::{Class, Placement, TensorLayout, Window};
use crate::machine::Machine;
use proptest::prelude::*;

fn bind(text: &str, m: &Machine, shape: &[u64], dtype: DType) -> TensorLayout {
    TensorLayout::parse(text, m, Some(shape), dtype).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// `b` is `a` read from window `w`: the same nodes and slot, `w` words and steps on.
fn in_window(a: &Placement, b: &Placement, w: Window) -> bool {
    a.pos == b.pos
        && a.w == b.w
        && Some(a.addr) == b.addr.checked_add(w.words)
        && Some(a.t) == b.t.checked_add(w.steps)
}

/// A slice of `shape` from `seed`: per axis a start, a length and a step (some whole
/// axes, some a sub-axis's part, some arbitrary).
fn slice_of(shape: &[u64], mut seed: u64) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let mut take = |n: u64| {
        let v = seed % n.max(1);
        seed = seed / n.max(1) + 0x9e37;
        v
    };
    let (mut start, mut limit, mut stride) = (Vec::new(), Vec::new(), Vec::new());
    for &d in shape {
        let s = take(d);
        let k = 1 + take(3) * take(2);
        let l = s + 1 + take(d - s);
        start.push(s);
        limit.push(l.min(d));
        stride.push(k);
    }
    (start, limit, stride)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_sliced_layout_reads_every_element_in_its_cell(
        (m, text, shape) in arb_layout(),
        seed in any::<u64>(),
        which in any::<usize>(),
    ) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        let r = shape.len();
        let full = |v: u64| vec![v; r];
        if l.logical_shape() != l.padded_shape() {
            prop_assert!(l.sliced(&full(0), &shape, &full(1), &m).is_none());
            return Ok(());
        }
        // The whole tensor is a view of itself.
        let (whole, w) = l.sliced_at(&full(0), &shape, &full(1), &m).unwrap();
        prop_assert!(whole.same_cells(&l), "{}", text);
        prop_assert_eq!(w, Window::default());
        // One part of an axis's outermost sub-axis, when that is memory or `Time`: a view.
        let axis = which % r;
        let outer = l.groups()[axis][0];
        if outer.size > 1 && matches!(outer.class, Class::Mem | Class::Time) {
            let part = shape[axis] / outer.size;
            let p = (seed % outer.size) as usize as u64;
            let (mut s, mut e) = (full(0), shape.clone());
            s[axis] = p * part;
            e[axis] = (p + 1) * part;
            prop_assert!(l.sliced(&s, &e, &full(1), &m).is_some(), "{} part {} of axis {}", text, p, axis);
        }
        let (start, limit, stride) = slice_of(&shape, seed);
        let Some((v, w)) = l.sliced_at(&start, &limit, &stride, &m) else {
            return Ok(());
        };
        for out in all_indices(v.logical_shape()) {
            let idx: Vec<u64> = (0..r).map(|a| start[a] + stride[a] * out[a]).collect();
            let (a, b) = (l.place(&idx).unwrap(), v.place(&out).unwrap());
            prop_assert!(in_window(&a, &b, w), "{} {:?}:{:?}:{:?} at {:?}: {:?} {:?} {:?}", text, start, limit, stride, out, a, b, w);
        }
    }

    #[test]
    fn each_input_of_a_concatenated_layout_is_a_window_of_it(
        (m, text, shape) in arb_layout(),
        which in any::<usize>(),
        parts in 2u64..=3,
    ) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        if l.logical_shape() != l.padded_shape() {
            return Ok(());
        }
        let axis = which % shape.len();
        let len = shape[axis];
        // The test trees' PEs hold 1 MiB: the parts always fit.
        let o = l.concatenated(axis, len * parts, &m);
        prop_assert!(o.is_some(), "{} along {}", text, axis);
        let o = o.unwrap();
        let r = shape.len();
        for j in 0..parts {
            let (mut s, mut e) = (vec![0; r], shape.clone());
            s[axis] = j * len;
            e[axis] = (j + 1) * len;
            let (v, w) = o.sliced_at(&s, &e, &vec![1; r], &m).unwrap();
            prop_assert!(v.same_cells(&l), "{} part {}: {}", text, j, v.canonical());
            prop_assert_eq!(w.words, j * l.footprint_words());
            for idx in all_indices(&shape) {
                let mut at = idx.clone();
                at[axis] += j * len;
                let (a, b) = (o.place(&at).unwrap(), l.place(&idx).unwrap());
                prop_assert!(in_window(&a, &b, w), "{} part {} at {:?}", text, j, idx);
            }
        }
    }

    #[test]
    fn a_broadcast_layout_holds_each_copy_where_the_source_is(
        (m, text, shape) in arb_layout(),
        seed in any::<u64>(),
        from_one in any::<bool>(),
    ) {
        let l = TensorLayout::parse(&text, &m, Some(&shape), DType::U8).unwrap();
        if l.logical_shape() != l.padded_shape() {
            return Ok(());
        }
        // The new axis's length: a product of some of the levels the source is copied
        // over (so a view exists), or any small length.
        let reps: Vec<u64> = l.levels().iter().filter(|v| v.replicated).map(|v| v.fanout).collect();
        let n = if reps.is_empty() || seed % 4 == 0 {
            2 + seed % 5
        } else {
            (0..reps.len()).filter(|b| (seed >> 2) >> b & 1 == 1).map(|b| reps[b]).product::<u64>().max(reps[0])
        };
        // From a new leading axis, or from a leading axis of length 1.
        let src = if from_one {
            let mut d = vec![1];
            d.extend(&shape);
            l.reshaped(&d, &m).unwrap()
        } else {
            l.clone()
        };
        let mut dims = vec![n];
        dims.extend(&shape);
        let Some(v) = src.broadcast_to(&dims, &m) else {
            prop_assert!(reps.is_empty() || seed % 4 == 0, "{} to {:?}", text, dims);
            return Ok(());
        };
        prop_assert!(v.unbroadcast(src.logical_shape(), &m).unwrap().same_cells(&src), "{}", v.canonical());
        for idx in all_indices(&shape) {
            let a = l.place(&idx).unwrap();
            for i in 0..n {
                let mut out = vec![i];
                out.extend(&idx);
                let b = v.place(&out).unwrap();
                prop_assert_eq!((a.addr, a.w, a.t), (b.addr, b.w, b.t));
                for (k, lv) in l.levels().iter().enumerate() {
                    // A level the source is on keeps its position; one it is copied
                    // over holds a copy wherever the output puts the element.
                    if !lv.replicated {
                        prop_assert_eq!(a.pos[k], b.pos[k], "{} level {}", text, k);
                    }
                }
            }
        }
    }
}

#[test]
fn unbroadcast_refuses_copies_that_need_words() {
    let m = crate::presets::preset("toy4").unwrap();
    let x = bind("((8:1); B@[PE])", &m, &[8], DType::F32);
    // The new axis over the 4 PEs: each PE holds the copy it reads.
    let on_pes = bind("((4_PE:1), (8:1))", &m, &[4, 8], DType::F32);
    assert!(on_pes.unbroadcast(&[8], &m).unwrap().same_cells(&x));
    // The new axis in memory: 4 copies on every PE, 3 of them written.
    let in_mem = bind("((4:8), (8:1); B@[PE])", &m, &[4, 8], DType::F32);
    assert!(in_mem.unbroadcast(&[8], &m).is_none());
    // The PE also splits the kept axis: a PE's copy is not the element it is given.
    let both = bind("((2_PE:2), (2_PE:1, 4:1))", &m, &[2, 8], DType::F32);
    assert!(both.unbroadcast(&[8], &m).is_none());
}

#[test]
fn worked_slices_of_a_fused_qkv_on_mncore2() {
    let m = crate::presets::preset("mncore2").unwrap();
    let full = [0, 0];
    let one = [1, 1];
    // qkv [128, 2304], a row on each PE (the rows over L2B × MAB), the three parts
    // outermost in its memory: q, k and v are its thirds, each 384 words after the last.
    let qkv = bind(
        "((8_L2B, 16_MAB), (3:384, 384:1, 2_W:1))",
        &m,
        &[128, 2304],
        DType::F32,
    );
    let (k, w) = qkv.sliced_at(&[0, 768], &[128, 1536], &one, &m).unwrap();
    assert_eq!(
        k.canonical(),
        "((8_L2B:1, 16_MAB:1), (384:1, 2_W:1); B@[L1B,PE])"
    );
    assert_eq!(
        w,
        Window {
            words: 384,
            steps: 0
        }
    );
    // The parts as `Time` steps: k is step 1 of the stream.
    let steps = bind(
        "((8_L2B, 16_MAB), (3_Time:1, 384:1, 2_W:1))",
        &m,
        &[128, 2304],
        DType::F32,
    );
    let (k, w) = steps.sliced_at(&[0, 768], &[128, 1536], &one, &m).unwrap();
    assert_eq!(
        k.canonical(),
        "((8_L2B:1, 16_MAB:1), (384:1, 2_W:1); B@[L1B,PE])"
    );
    assert_eq!(w, Window { words: 0, steps: 1 });
    // The 2304 over the 8 L1Bs: a third is 2⅔ L1Bs, no view.
    let spread = bind(
        "((8_L2B, 16_MAB), (8_L1B, 144:1, 2_W:1))",
        &m,
        &[128, 2304],
        DType::F32,
    );
    assert!(spread.sliced(&full, &[128, 768], &one, &m).is_none());
    // The first quarter is the first 2 L1Bs: a view from position 0 on; the second
    // quarter would start at L1B 2, where no layout starts.
    let q = spread.sliced(&full, &[128, 576], &one, &m).unwrap();
    assert_eq!(
        q.canonical(),
        "((8_L2B:1, 16_MAB:1), (2_L1B:1, 144:1, 2_W:1); B@[PE])"
    );
    assert!(spread.sliced(&[0, 576], &[128, 1152], &one, &m).is_none());
    // And back: q, k and v, each laid out compact, concatenated as qkv.
    let part = bind(
        "((8_L2B, 16_MAB), (384:1, 2_W:1))",
        &m,
        &[128, 768],
        DType::F32,
    );
    let joined = part.concatenated(1, 2304, &m).unwrap();
    assert_eq!(
        joined.canonical(),
        "((8_L2B:1, 16_MAB:1), (3:384, 384:1, 2_W:1); B@[L1B,PE])"
    );
}

#[test]
fn worked_broadcast_of_a_bias_on_mncore2() {
    let m = crate::presets::preset("mncore2").unwrap();
    // A bias b [768] on every PE, broadcast over 128 rows: 128 = 8 L2Bs × 16 MABs.
    let b = bind(
        "((384:1, 2_W:1); B@[L2B,L1B,MAB,PE])",
        &m,
        &[768],
        DType::F32,
    );
    let rows = b.broadcast_to(&[128, 768], &m).unwrap();
    assert_eq!(
        rows.canonical(),
        "((8_L2B:1, 16_MAB:1), (384:1, 2_W:1); B@[L1B,PE])"
    );
    assert!(rows.unbroadcast(&[768], &m).unwrap().same_cells(&b));
    // 3 rows: no levels multiply to 3.
    assert!(b.broadcast_to(&[3, 768], &m).is_none());
}
