//! The walk against the algorithm it replaced (`reference`: per index a key, sorted and
//! deduplicated, then the steps pushed one by one), and the sends.

use super::*;
use crate::timeline::SendList;
use mnsim_arch::DType;
use mnsim_kernels::shape::AxisSource::{Broadcast, Out, Reduced};
use proptest::prelude::*;
use reference::{contribution, distinct, gcd, time_period};

mod reference;

fn bind(text: &str, dims: &[u64]) -> TensorLayout {
    let m = mnsim_arch::preset("mncore2").unwrap();
    TensorLayout::parse(text, &m, Some(dims), DType::F16).unwrap()
}

#[test]
fn a_matmul_walks_output_steps_outer_and_the_contraction_inner() {
    // a[512,64] over K in 4 steps; b[64,64] over K in 2; c[512,64] over N in 2.
    let a = bind(
        "((8_L2B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L1B])",
        &[512, 64],
    );
    let b = bind("((2_Time, 32), (8_L1B, 2, 4_W); B@[L2B,MAB,PE])", &[64, 64]);
    let c = bind("((8_L2B, 16_MAB, 4_PE), (8_L1B, 2_Time, 4_W))", &[512, 64]);
    let p = walk(
        Some(&c),
        &[512, 64],
        &[(&a, &[Out(0), Reduced(0)]), (&b, &[Reduced(0), Out(1)])],
        &[64],
    )
    .unwrap();
    // Per output step, K's 4 distinct (a, b) pairs: a 0..3 with b 0,0,1,1.
    assert_eq!(p.steps, 8);
    assert_eq!(*p.out, [0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(*p.inputs[0], [0, 1, 2, 3, 0, 1, 2, 3]);
    assert_eq!(*p.inputs[1], [0, 0, 1, 1, 0, 0, 1, 1]);
    // An elementwise op on a stream walks its steps once.
    let p = walk(Some(&c), &[512, 64], &[(&c, &[Out(0), Out(1)])], &[]).unwrap();
    assert_eq!((&*p.out, &*p.inputs[0]), (&[0, 1][..], &[0, 1][..]));
}

#[test]
fn reading_one_index_per_period_finds_every_distinct_contribution() {
    // `Time` sub-axes outermost, innermost, in the middle, two of them, none.
    let cases = [
        ("((8_Time, 64), (64))", [512, 64]),
        ("((64, 8_Time), (64))", [512, 64]),
        ("((4, 4_Time, 32), (2_Time, 32))", [512, 64]),
        ("((2_Time, 4, 4_Time, 16), (64))", [512, 64]),
        (
            "((8_L2B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L1B])",
            [512, 64],
        ),
        ("((8_L2B, 64), (64))", [512, 64]),
    ];
    for (text, dims) in cases {
        let l = bind(text, &dims);
        for (g, &e) in dims.iter().enumerate() {
            let key = |x| contribution(&l, g, x);
            let all = distinct(e, 1, key);
            assert_eq!(distinct(e, time_period(&l, g), key), all, "{text} axis {g}");
        }
    }
    // Two layouts of one axis: the gcd of their periods.
    let (a, b) = (bind(cases[0].0, &[512, 64]), bind(cases[2].0, &[512, 64]));
    let key = |x| (contribution(&a, 0, x), contribution(&b, 0, x));
    let q = gcd(time_period(&a, 0), time_period(&b, 0));
    assert_eq!(distinct(512, q, key), distinct(512, 1, key));
}

#[test]
fn layouts_of_one_walk_key_walk_alike() {
    // The first two differ in their levels only, not in their `Time` sub-axes.
    let texts = [
        "((8_L2B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L1B])",
        "((8_L1B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L2B])",
        "((8_L2B, 16_MAB, 4_PE), (2_Time, 8, 4_W); B@[L1B])",
        "((2_Time, 4_L2B, 16_MAB, 4_PE), (16, 4_W); B@[L1B])",
        "((8_L2B, 16_MAB, 4_PE), (16, 4_W); B@[L1B])",
    ];
    let b = bind("((2_Time, 32), (8_L1B, 2, 4_W); B@[L2B,MAB,PE])", &[64, 64]);
    let c = bind("((8_L2B, 16_MAB, 4_PE), (8_L1B, 2_Time, 4_W))", &[512, 64]);
    let map: [&[AxisSource]; 2] = [&[Out(0), Reduced(0)], &[Reduced(0), Out(1)]];
    let of = |a: &TensorLayout| {
        let ins = [(a, map[0]), (&b, map[1])];
        let key = WalkKey::of(Some(&c), &[512, 64], &ins, &[64]);
        (key, walk(Some(&c), &[512, 64], &ins, &[64]))
    };
    let walks: Vec<_> = texts.iter().map(|t| of(&bind(t, &[512, 64]))).collect();
    let mut shared = 0;
    for (i, (ki, wi)) in walks.iter().enumerate() {
        for (kj, wj) in &walks[..i] {
            if ki == kj {
                shared += 1;
                assert_eq!(wi, wj, "{}", texts[i]);
            }
        }
    }
    assert_eq!(shared, 1, "only the first two share a key");
}

#[test]
fn memoised_sends_are_the_sends() {
    let mut memo = SendsMemo::default();
    let needs: Vec<Arc<[u32]>> = vec![
        Arc::from(vec![0, 1, 2, 3, 0, 1, 2, 3]),
        Arc::from(vec![0, 0, 1, 1, 2, 2, 0, 1]),
    ];
    for need in &needs {
        for b in 1..4 {
            let (steps, s) = sends(need, b);
            let m = memo.sends(need, b, 4);
            assert_eq!((&*m.per_step, m.sends.to_vec()), (&steps[..], s.clone()));
            assert_eq!(
                m.resent,
                crate::timeline::resends_of(s.iter().map(|x| x.0), 4)
            );
            // Asked again, the same vectors.
            let again = memo.sends(need, b, 4);
            assert!(Arc::ptr_eq(&again.per_step, &m.per_step));
            assert!(match (&again.sends, &m.sends) {
                (SendList::Lagged { slices: a, .. }, SendList::Lagged { slices: b, .. }) => {
                    Arc::ptr_eq(a, b)
                }
                (SendList::Table(a), SendList::Table(b)) => Arc::ptr_eq(a, b),
                _ => false,
            });
        }
    }
}

#[test]
fn a_slice_needed_again_after_it_left_is_sent_again() {
    // Two output steps each reading slices 0..3 of a 4-step operand.
    let need = [0, 1, 2, 3, 0, 1, 2, 3];
    let (steps, s) = sends(&need, 2);
    assert_eq!(s.len(), 8);
    assert_eq!(steps, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(s[2], (2, Some(0)));
    // Held whole, nothing is sent twice.
    let (_, s) = sends(&need, 4);
    assert_eq!(s.len(), 4);
    // A slice read on consecutive steps is sent once.
    let (steps, s) = sends(&[0, 0, 1, 1], 1);
    assert_eq!((steps, s.len()), (vec![0, 0, 1, 1], 2));
}

/// A drawn layout: per axis its sub-axes (size, whether `Time`), innermost last; per
/// `Time` sub-axis (in order of appearance) a rank and a gap giving its stride when the
/// strides are written (`Time` sub-axes nested by rank, each `gap` times its compact
/// stride); per axis the padding its logical length leaves.
#[derive(Clone, Debug)]
struct Drawn {
    axes: Vec<Vec<(u64, bool)>>,
    ranks: Vec<u32>,
    gaps: Vec<u64>,
    strides: bool,
    pads: Vec<u64>,
}

/// A layout of rank in `rank`: up to 3 sub-axes an axis, of sizes 1 to 4.
fn drawn(rank: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Drawn> {
    let axis = proptest::collection::vec((1u64..=4, any::<bool>()), 1..=3);
    (
        proptest::collection::vec(axis, rank),
        proptest::collection::vec(any::<u32>(), 9),
        proptest::collection::vec(1u64..=2, 9),
        any::<bool>(),
        proptest::collection::vec(0u64..=2, 3),
    )
        .prop_map(|(axes, ranks, gaps, strides, pads)| Drawn {
            axes,
            ranks,
            gaps,
            strides,
            pads,
        })
}

impl Drawn {
    /// Its text, with a pad prefix (`(5,7)/((2_Time:3, 3), (4, 2_Time:1))`).
    fn text(&self) -> String {
        // The sizes of the `Time` sub-axes, in order of appearance.
        let times: Vec<u64> = (self.axes.iter().flatten())
            .filter(|s| s.1)
            .map(|s| s.0)
            .collect();
        // Strides by rank, the lowest rank innermost.
        let mut order: Vec<usize> = (0..times.len()).collect();
        order.sort_by_key(|&t| (self.ranks[t], t));
        let mut stride = vec![0u64; times.len()];
        let mut next = 1u64;
        for &t in &order {
            stride[t] = next * self.gaps[t];
            next = stride[t] * times[t];
        }
        let mut t = 0;
        let mut groups = Vec::new();
        let mut dims = Vec::new();
        for (a, subs) in self.axes.iter().enumerate() {
            let mut g = Vec::new();
            for &(size, time) in subs {
                g.push(match (time, self.strides) {
                    (true, true) => format!("{size}_Time:{}", stride[t]),
                    (true, false) => format!("{size}_Time"),
                    (false, _) => format!("{size}"),
                });
                t += usize::from(time);
            }
            groups.push(format!("({})", g.join(", ")));
            let whole: u64 = subs.iter().map(|s| s.0).product();
            dims.push(whole.saturating_sub(self.pads[a]).max(1).to_string());
        }
        format!("({})/({})", dims.join(","), groups.join(", "))
    }

    /// Bound on mncore2 with a PE memory that holds any drawn layout.
    fn layout(&self) -> TensorLayout {
        let mut m = mnsim_arch::preset("mncore2").unwrap();
        if let Some(lm) = m.levels.last_mut().and_then(|l| l.memory.as_mut()) {
            lm.bytes = 1 << 30;
        }
        let text = self.text();
        TensorLayout::parse(&text, &m, None, DType::F32).unwrap_or_else(|e| panic!("{text}: {e}"))
    }
}

/// An input's index sources: per axis a draw picking one of the output axes, the
/// reduced variables or a broadcast.
fn sources(draws: &[usize], rank: usize, out_rank: usize, reduced: usize) -> Vec<AxisSource> {
    let choices: Vec<AxisSource> = (0..out_rank)
        .map(Out)
        .chain((0..reduced).map(Reduced))
        .chain([Broadcast])
        .collect();
    (0..rank)
        .map(|a| choices[draws[a] % choices.len()])
        .collect()
}

proptest::proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// The walk equals the reference, whatever the layouts of the output and inputs,
    /// their `Time` sub-axes (anywhere in a group, strides compact or with gaps), the
    /// inputs' index sources and the reduced variables' lengths (0 included).
    #[test]
    fn the_walk_is_the_reference_walk(
        out in proptest::option::weighted(0.8, drawn(1..=3)),
        free_dims in proptest::collection::vec(0u64..=9, 1..=3),
        inputs in proptest::collection::vec(
            (drawn(1..=3), proptest::collection::vec(0usize..12, 3)),
            0..=3,
        ),
        reduced in proptest::collection::vec(0u64..=12, 0..=2),
    ) {
        let out = out.map(|d| d.layout());
        let dims = out.as_ref().map_or(free_dims, |l| l.logical_shape().to_vec());
        let layouts: Vec<TensorLayout> = inputs.iter().map(|(d, _)| d.layout()).collect();
        let maps: Vec<Vec<AxisSource>> = (inputs.iter().zip(&layouts))
            .map(|((_, draws), l)| sources(draws, l.logical_shape().len(), dims.len(), reduced.len()))
            .collect();
        let ins: Vec<(&TensorLayout, &[AxisSource])> =
            layouts.iter().zip(&maps).map(|(l, m)| (l, m.as_slice())).collect();
        let want = reference::walk(out.as_ref(), &dims, &ins, &reduced);
        prop_assert_eq!(walk(out.as_ref(), &dims, &ins, &reduced), want);
    }

    /// The sends, into vectors or shared ones, are the reference's, whatever the slices
    /// read and the buffers (as many as the slices, or more, included).
    #[test]
    fn the_sends_are_the_reference_sends(
        need in proptest::collection::vec(0u32..8, 0..80),
        buffers in 0u32..10,
    ) {
        let want = reference::sends(&need, buffers);
        prop_assert_eq!(&sends(&need, buffers), &want);
        let shared: Arc<[u32]> = Arc::from(&need[..]);
        let m = SendsMemo::default().sends(&shared, buffers, 8);
        prop_assert_eq!((&*m.per_step, m.sends.to_vec()), (&want.0[..], want.1.clone()));
        // In the one form of its table, however the memo found it.
        prop_assert_eq!(&m.sends, &SendList::from_table(&want.1, None));
        let slices = want.1.iter().map(|s| s.0);
        prop_assert_eq!(m.resent, crate::timeline::resends_of(slices, 8));
    }

    /// A send list is the table it is made of, in the lagged form exactly when every
    /// send takes the buffer of the send a fixed number before it.
    #[test]
    fn a_send_list_is_its_table(
        slices in proptest::collection::vec(0u32..8, 0..40),
        lag in 0u32..5,
        moved in proptest::option::of((0usize..40, 0u32..40)),
    ) {
        let mut table: Vec<(u32, Option<u32>)> = (0u32..)
            .zip(&slices)
            .map(|(m, &s)| (s, m.checked_sub(lag)))
            .collect();
        if let Some((at, to)) = moved
            && let Some(t) = table.get_mut(at)
        {
            t.1 = Some(to);
        }
        let lagged = (0..=table.len() as u32)
            .any(|l| (0u32..).zip(&table).all(|(m, t)| t.1 == m.checked_sub(l)));
        let list = SendList::from_table(&table, None);
        prop_assert_eq!(list.to_vec(), table.clone());
        prop_assert_eq!(list.len(), table.len());
        prop_assert_eq!(matches!(list, SendList::Lagged { .. }), lagged);
        let all: Vec<u32> = list.slices().collect();
        prop_assert_eq!(all, table.iter().map(|t| t.0).collect::<Vec<_>>());
    }
}

#[test]
fn long_walks_are_the_reference_walks() {
    let check = |out: Option<&TensorLayout>,
                 dims: &[u64],
                 ins: &[(&TensorLayout, &[AxisSource])],
                 reduced: &[u64]| {
        let got = walk(out, dims, ins, reduced);
        assert_eq!(
            got,
            reference::walk(out, dims, ins, reduced),
            "{dims:?} {reduced:?}"
        );
        got.map(|p| p.steps)
    };
    let mm: [&[AxisSource]; 2] = [&[Out(0), Reduced(0)], &[Reduced(0), Out(1)]];
    // The gated MLP's MatMul: an output over `14_Time`, inputs over `8_Time`.
    let y = bind("((1), (14_Time, 1024))", &[1, 14336]);
    let x = bind("((1), (8_Time, 512))", &[1, 4096]);
    let w = bind(
        "((8_Time, 8_L2B, 64), (14_Time, 8_L1B, 16_MAB, 4_PE, 2))",
        &[4096, 14336],
    );
    let ins = [(&x, mm[0]), (&w, mm[1])];
    assert_eq!(check(Some(&y), &[1, 14336], &ins, &[4096]), Some(112));
    // A weight streamed in 28,672 slices, its Load and its MatMul.
    let w = bind("((4096_Time:7, 1), (7_Time:1, 2048))", &[4096, 14336]);
    let (x, y) = (
        bind("((1), (2_Time, 2048))", &[1, 4096]),
        bind("((1), (7_Time, 2048))", &[1, 14336]),
    );
    assert_eq!(check(Some(&w), &[4096, 14336], &[], &[]), Some(28_672));
    let ins = [(&x, mm[0]), (&w, mm[1])];
    assert_eq!(check(Some(&y), &[1, 14336], &ins, &[4096]), Some(28_672));
    // Past `MAX_WALK`: in one output axis, or in an output step times a reduced variable.
    let long = bind("((70000_Time))", &[70000]);
    assert_eq!(check(None, &[70000], &[(&long, &[Out(0)])], &[]), None);
    assert_eq!(
        check(Some(&y), &[1, 14336], &[(&long, &[Reduced(0)])], &[70000]),
        None
    );
}
