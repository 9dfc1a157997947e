//! Convolutions in functional mode (the three passes): the shard-by-shard path (window
//! taps listed once per output position, `engine/conv.rs`) gives the bytes of the
//! per-element evaluation (`Engine::set_per_element_kernels`) on every PE, partial sums
//! included, and the same reports and cycles — on random shapes (1 to 3 spatial axes,
//! strides, dilations, padding, groups up to depthwise, channels first or last, every
//! weights format) and random legal layouts (split by batch, output or input channels
//! into partial sums, by output positions of a pointwise convolution; replicated
//! levels). `f64` outputs make a change in the order of summation visible.

mod common;

use common::kernels::{Rng, Tagged, layouts, out_bytes, small};
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};
use mnsim_kernels::{Conv, ConvPass, Kernel, WeightsFormat};
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;

/// A data tensor's axes in `c`'s order: batch, channels, spatial.
fn data<T: Clone>(c: &Conv, n: T, ch: T, sp: &[T]) -> Vec<T> {
    let mut v = vec![n];
    if !c.channels_last {
        v.push(ch.clone());
    }
    v.extend_from_slice(sp);
    if c.channels_last {
        v.push(ch);
    }
    v
}

/// The weights' axes in `c`'s order: `O`, `I`, window.
fn weights<T: Clone>(c: &Conv, o: T, i: T, k: &[T]) -> Vec<T> {
    let (mut v, x) = (Vec::new(), k.to_vec());
    match c.weights {
        WeightsFormat::OIX => v.extend([o, i].into_iter().chain(x)),
        WeightsFormat::IOX => v.extend([i, o].into_iter().chain(x)),
        WeightsFormat::XIO => v.extend(x.into_iter().chain([i, o])),
        WeightsFormat::XOI => v.extend(x.into_iter().chain([o, i])),
    }
    v
}

/// One case: the kernel, its inputs' and output's dims, layouts and dtypes.
struct Case {
    kernel: Kernel,
    dims: [Vec<u64>; 3],
    layouts: Vec<String>,
    dtypes: [DType; 3],
}

fn random_case(rng: &mut Rng, n: u64) -> Case {
    const DTYPES: [[DType; 3]; 5] = [
        [DType::F64, DType::F64, DType::F64],
        [DType::F32, DType::F32, DType::F32],
        [DType::F64, DType::F64, DType::F64],
        [DType::F16, DType::F16, DType::F16],
        [DType::BF16, DType::BF16, DType::BF16],
    ];
    let d = [1, 2, 2, 3][rng.below(4) as usize];
    let pass = [
        ConvPass::Forward,
        ConvPass::BackwardData,
        ConvPass::BackwardWeights,
    ][rng.below(3) as usize];
    let (cg, og, groups) = match rng.below(4) {
        // Depthwise.
        0 => (1, 1 + rng.below(2), [2, 4][rng.below(2) as usize]),
        1 => (
            [1, 2, 4][rng.below(3) as usize],
            [2, 4][rng.below(2) as usize],
            2,
        ),
        _ => (
            [1, 2, 4, 8][rng.below(4) as usize],
            [2, 4][rng.below(2) as usize],
            1,
        ),
    };
    let mut c = Conv {
        pass,
        strides: (0..d).map(|_| 1 + rng.below(3)).collect(),
        dilations: (0..d).map(|_| 1 + rng.below(2)).collect(),
        pads_begin: (0..d).map(|_| rng.below(3)).collect(),
        pads_end: (0..d).map(|_| rng.below(2)).collect(),
        groups,
        channels_last: rng.below(2) == 0,
        weights: [
            WeightsFormat::OIX,
            WeightsFormat::XIO,
            WeightsFormat::IOX,
            WeightsFormat::XOI,
        ][rng.below(4) as usize],
        shape: Vec::new(),
    };
    let window: Vec<u64> = if rng.below(5) == 0 {
        // Pointwise: its spatial axes may split.
        (c.strides, c.pads_begin, c.pads_end) = (vec![1; d], vec![0; d], vec![0; d]);
        vec![1; d]
    } else {
        (0..d).map(|_| 1 + rng.below(3)).collect()
    };
    let pointwise = window.iter().all(|&k| k == 1) && c.pads_begin.iter().all(|&p| p == 0);
    let sp: Vec<u64> = (0..d)
        .map(|i| (window[i] - 1) * c.dilations[i] + 1 + rng.below(if d == 3 { 3 } else { 6 }))
        .collect();
    let batch = [1, 2, 4][rng.below(3) as usize];
    let xs = data(&c, batch, cg * groups, &sp);
    let ws = weights(&c, og * groups, cg, &window);
    let fwd = Kernel::Conv(Conv {
        pass: ConvPass::Forward,
        ..c.clone()
    });
    let ys = mnsim_kernels::output_shape(&fwd, &[&xs, &ws]).expect("a forward geometry");
    let grouped = groups > 1;
    let ch = if grouped { 'X' } else { 'C' };
    let oc = if grouped && pass == ConvPass::BackwardData {
        'X'
    } else {
        'O'
    };
    let sp_tags = |t: char| -> Vec<char> {
        (0..d)
            .map(|i| if i == 0 && pointwise { t } else { 'X' })
            .collect()
    };
    let x_t = |s| Tagged {
        dims: xs.clone(),
        tags: data(&c, 'N', ch, &sp_tags(s)),
    };
    let y_t = |o, s| Tagged {
        dims: ys.clone(),
        tags: data(&c, 'N', o, &sp_tags(s)),
    };
    let w_t = |o, k: char| Tagged {
        dims: ws.clone(),
        tags: weights(
            &c,
            o,
            ch,
            &(0..d)
                .map(|i| if i == 0 { k } else { 'X' })
                .collect::<Vec<_>>(),
        ),
    };
    let (dims, ts, partial, shape) = match pass {
        ConvPass::Forward => (
            [xs.clone(), ws.clone(), ys.clone()],
            vec![x_t('S'), w_t('O', 'X'), y_t('O', 'S')],
            vec!['C'],
            Vec::new(),
        ),
        ConvPass::BackwardData => (
            [ys.clone(), ws.clone(), xs.clone()],
            vec![y_t(oc, 'S'), w_t(oc, 'X'), x_t('S')],
            vec!['O'],
            xs.clone(),
        ),
        ConvPass::BackwardWeights => (
            [xs.clone(), ys.clone(), ws.clone()],
            vec![x_t('X'), y_t('O', 'X'), w_t('O', 'K')],
            vec!['N'],
            ws.clone(),
        ),
    };
    c.shape = shape;
    let layouts = layouts(rng, &ts, &['N', 'O', 'C', 'S', 'K'], &partial);
    Case {
        kernel: Kernel::Conv(c),
        dims,
        layouts,
        dtypes: DTYPES[(n % DTYPES.len() as u64) as usize],
    }
}

/// Runs the case's kernel in functional mode, element by element or not; `None` when
/// the engine refuses the case.
#[allow(clippy::type_complexity)]
fn run(
    m: &Machine,
    case: &Case,
    per_element: bool,
) -> Option<(Vec<Vec<u8>>, Vec<usize>, String, u64)> {
    let mut e = Engine::new(m.clone(), Mode::Functional);
    e.set_per_element_kernels(per_element);
    let mut out = None;
    for (i, name) in ["a", "b", "out"].into_iter().enumerate() {
        let (dims, dt) = (&case.dims[i], case.dtypes[i]);
        let data = (i < 2).then(|| init_data(&Init::Random { seed: 7 + i as u64 }, dt, dims));
        let xla = XlaLayout::default_for(dims.len());
        e.state
            .declare(name, dt, dims.clone(), dims.clone(), xla, data)
            .unwrap();
        let l = TensorLayout::parse(&case.layouts[i], m, Some(dims), dt).ok()?;
        if i < 2 {
            e.load(e.state.tensor_id(name).unwrap(), l).ok()?;
        } else {
            out = Some(l);
        }
    }
    let rep = e
        .kernel(
            "K",
            &case.kernel,
            &[
                e.state.tensor_id("a").unwrap(),
                e.state.tensor_id("b").unwrap(),
            ],
            e.state.tensor_id("out").unwrap(),
            out,
        )
        .ok()?;
    let partial = e.state.tensors[e.state.tensor_id("out").unwrap()]
        .lm
        .as_ref()?
        .partial
        .clone();
    Some((
        out_bytes(&mut e),
        partial,
        format!("{rep:?}"),
        e.state.sw.clock(),
    ))
}

#[test]
fn convolutions_give_the_per_element_bytes_on_random_layouts() {
    let m = small();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut ran, mut partial, mut passes, mut dims) = (0, 0, [0usize; 3], [0usize; 3]);
    for n in 0..400u64 {
        let case = random_case(&mut rng, n);
        let Some(fast) = run(&m, &case, false) else {
            continue;
        };
        let slow = run(&m, &case, true).expect("the same case runs");
        let Kernel::Conv(c) = &case.kernel else {
            unreachable!("a convolution")
        };
        assert_eq!(
            fast.0, slow.0,
            "case {n}: {c:?} {:?} {:?} {:?}: the output bytes differ",
            case.dims, case.dtypes, case.layouts
        );
        assert_eq!(fast.1, slow.1);
        assert_eq!(fast.2, slow.2, "case {n}: the reports differ");
        assert_eq!(fast.3, slow.3);
        ran += 1;
        partial += usize::from(!fast.1.is_empty());
        passes[c.pass as usize] += 1;
        dims[c.strides.len() - 1] += 1;
    }
    eprintln!("{ran} cases: {partial} partial, {passes:?} by pass, {dims:?} by spatial axes");
    assert!(ran >= 300, "only {ran} random cases ran");
    assert!(partial >= 30 && passes.iter().all(|&p| p >= 60) && dims.iter().all(|&p| p >= 30));
}
