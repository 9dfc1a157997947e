//! Convolution, pooling and interpolation: the per-element evaluation against the host
//! reference on random shapes and attributes, the three convolution passes as adjoints
//! of one another, worked examples, FLOP and cycles of the implicit GEMM, and the
//! legality rule (what a layout may split).

mod common;

use common::Rng;
use common::*;
use mnsim_arch::DType;
use mnsim_kernels::*;
use proptest::prelude::*;

fn conv(pass: ConvPass, d: usize, rng: &mut Rng) -> Conv {
    Conv {
        pass,
        strides: (0..d).map(|_| rng.range(1, 3)).collect(),
        dilations: (0..d).map(|_| rng.range(1, 3)).collect(),
        pads_begin: (0..d).map(|_| rng.range(0, 2)).collect(),
        pads_end: (0..d).map(|_| rng.range(0, 2)).collect(),
        groups: [1, 1, 2, 3][rng.range(0, 4) as usize],
        channels_last: rng.range(0, 2) == 1,
        weights: [
            WeightsFormat::OIX,
            WeightsFormat::XIO,
            WeightsFormat::IOX,
            WeightsFormat::XOI,
        ][rng.range(0, 4) as usize],
        shape: Vec::new(),
    }
}

/// A random forward convolution with its shapes `(x, w, y)`.
fn random_forward(rng: &mut Rng) -> (Conv, Vec<u64>, Vec<u64>, Vec<u64>) {
    let d = rng.range(1, 4) as usize;
    let c = conv(ConvPass::Forward, d, rng);
    let (n, cg, og) = (rng.range(1, 3), rng.range(1, 3), rng.range(1, 3));
    let (ch, o) = (cg * c.groups, og * c.groups);
    let window: Vec<u64> = (0..d).map(|_| rng.range(1, 4)).collect();
    // Large enough for the dilated window.
    let sp: Vec<u64> = (0..d)
        .map(|i| (window[i] - 1) * c.dilations[i] + 1 + rng.range(0, 4))
        .collect();
    let data = |ch: u64, sp: &[u64]| {
        let mut v = vec![n];
        if !c.channels_last {
            v.push(ch);
        }
        v.extend_from_slice(sp);
        if c.channels_last {
            v.push(ch);
        }
        v
    };
    let x = data(ch, &sp);
    let w = match c.weights {
        WeightsFormat::OIX => [&[o, cg][..], &window].concat(),
        WeightsFormat::IOX => [&[cg, o][..], &window].concat(),
        WeightsFormat::XIO => [&window[..], &[cg, o]].concat(),
        WeightsFormat::XOI => [&window[..], &[o, cg]].concat(),
    };
    let y = output_shape(&Kernel::Conv(c.clone()), &[&x, &w]).unwrap();
    (c, x, w, y)
}

/// The per-element evaluation (gathering) over every output element.
fn by_eval(k: &Kernel, ins: &[(&[u64], &[f64])], out: &[u64]) -> Vec<f64> {
    let shapes: Vec<&[u64]> = ins.iter().map(|(s, _)| *s).collect();
    let ext = reduced_extents(k, &shapes).unwrap();
    indices(out)
        .iter()
        .map(|idx| {
            let mut fetch = |j: usize, at: &[u64]| ins[j].1[linear(ins[j].0, at)];
            eval(k, idx, &mut fetch, &|r| 0..ext[r], &shapes)
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Forward, backward data and backward weights: the gathering evaluation equals
    /// the scattering reference, and the three passes are adjoint:
    /// ⟨conv(x, w), dy⟩ = ⟨x, bwd_data(dy, w)⟩ = ⟨w, bwd_weights(x, dy)⟩.
    #[test]
    fn the_three_passes_are_adjoint_and_eval_matches_the_reference(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let (c, xs, ws, ys) = random_forward(&mut rng);
        let (x, w, dy) = (rng.values(numel(&xs)), rng.values(numel(&ws)), rng.values(numel(&ys)));
        let fwd = Kernel::Conv(c.clone());
        let y = reference(&fwd, &[(&xs, &x), (&ws, &w)], &ys);
        let ye = by_eval(&fwd, &[(&xs, &x), (&ws, &w)], &ys);
        for (a, b) in y.iter().zip(&ye) {
            prop_assert!(close(*a, *b), "{c:?}: forward {a} vs {b}");
        }
        let bd = Kernel::Conv(Conv { pass: ConvPass::BackwardData, shape: xs.clone(), ..c.clone() });
        prop_assert_eq!(output_shape(&bd, &[&ys, &ws]).unwrap(), xs.clone());
        let dx = reference(&bd, &[(&ys, &dy), (&ws, &w)], &xs);
        let dxe = by_eval(&bd, &[(&ys, &dy), (&ws, &w)], &xs);
        for (a, b) in dx.iter().zip(&dxe) {
            prop_assert!(close(*a, *b), "{c:?}: backward data {a} vs {b}");
        }
        let bw = Kernel::Conv(Conv { pass: ConvPass::BackwardWeights, shape: ws.clone(), ..c.clone() });
        let dw = reference(&bw, &[(&xs, &x), (&ys, &dy)], &ws);
        let dwe = by_eval(&bw, &[(&xs, &x), (&ys, &dy)], &ws);
        for (a, b) in dw.iter().zip(&dwe) {
            prop_assert!(close(*a, *b), "{c:?}: backward weights {a} vs {b}");
        }
        let (p, q, r) = (dot(&y, &dy), dot(&x, &dxe), dot(&w, &dwe));
        prop_assert!(close(p, q) && close(p, r), "{c:?}: ⟨y,dy⟩ {p}, ⟨x,dx⟩ {q}, ⟨w,dw⟩ {r}");
        // FLOP as graphs define them, for every pass.
        let (n, ch) = if c.channels_last { (xs[0], xs[xs.len() - 1]) } else { (xs[0], xs[1]) };
        let o = if c.channels_last { ys[ys.len() - 1] } else { ys[1] };
        let sp = |s: &[u64]| -> u128 {
            let d = s.len() - 2;
            let f = if c.channels_last { 1 } else { 2 };
            s[f..f + d].iter().map(|&v| v as u128).product()
        };
        let win: u128 = (ws.iter().map(|&v| v as u128).product::<u128>()) / (o as u128 * (ch / c.groups) as u128);
        let want = 2 * n as u128 * o as u128 * sp(&ys) * (ch / c.groups) as u128 * win;
        for (k, ins) in [(&fwd, [&xs[..], &ws[..]]), (&bd, [&ys[..], &ws[..]]), (&bw, [&xs[..], &ys[..]])] {
            let Kernel::Conv(cv) = k else { unreachable!() };
            prop_assert_eq!(cv.flops(&ins).unwrap(), want);
        }
    }

    /// Pooling and interpolation: eval equals the reference, average pooling and
    /// linear interpolation are adjoint to their gradients, and max pooling's gradient
    /// keeps the sum of `dy` (every window has a tap inside the input).
    #[test]
    fn pooling_and_interpolation(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let d = rng.range(1, 4) as usize;
        let cl = rng.range(0, 2) == 1;
        let kernel: Vec<u64> = (0..d).map(|_| rng.range(1, 4)).collect();
        let pads_begin: Vec<u64> = kernel.iter().map(|&k| rng.range(0, k)).collect();
        let mut pool = Pool {
            kind: PoolKind::Avg { exclude_pad: rng.range(0, 2) == 1 },
            backward: false,
            strides: (0..d).map(|_| rng.range(1, 3)).collect(),
            dilations: vec![1; d],
            pads_end: kernel.iter().map(|&k| rng.range(0, k) as i64 - i64::from(k > 2)).collect(),
            pads_begin,
            kernel,
            ceil: rng.range(0, 2) == 1,
            channels_last: cl,
            shape: Vec::new(),
        };
        let mut xs = vec![rng.range(1, 3), rng.range(1, 3)];
        xs.extend((0..d).map(|i| pool.kernel[i] + 1 + rng.range(0, 4)));
        if cl {
            let ch = xs.remove(1);
            xs.push(ch);
        }
        let x = rng.values(numel(&xs));
        let fwd = Kernel::Pool(pool.clone());
        let ys = output_shape(&fwd, &[&xs]).unwrap();
        let y = reference(&fwd, &[(&xs, &x)], &ys);
        let ye = by_eval(&fwd, &[(&xs, &x)], &ys);
        for (a, b) in y.iter().zip(&ye) {
            prop_assert!(close(*a, *b), "{pool:?}: {a} vs {b}");
        }
        let dy = rng.values(numel(&ys));
        pool.backward = true;
        pool.shape = xs.clone();
        let bwd = Kernel::Pool(pool.clone());
        let dx = by_eval(&bwd, &[(&ys, &dy)], &xs);
        let dxr = reference(&bwd, &[(&ys, &dy)], &xs);
        for (a, b) in dx.iter().zip(&dxr) {
            prop_assert!(close(*a, *b), "{pool:?}: backward {a} vs {b}");
        }
        prop_assert!(close(dot(&y, &dy), dot(&x, &dx)), "{pool:?}: not adjoint");
        // Max: forward eval = reference; the gradient lands on the maxima.
        pool.kind = PoolKind::Max;
        pool.backward = false;
        let mf = Kernel::Pool(Pool { shape: Vec::new(), ..pool.clone() });
        let my = reference(&mf, &[(&xs, &x)], &ys);
        let mye = by_eval(&mf, &[(&xs, &x)], &ys);
        prop_assert_eq!(&my, &mye);
        pool.backward = true;
        let mb = Kernel::Pool(pool.clone());
        let mdx = by_eval(&mb, &[(&xs, &x), (&ys, &dy)], &xs);
        let mdxr = reference(&mb, &[(&xs, &x), (&ys, &dy)], &xs);
        for (a, b) in mdx.iter().zip(&mdxr) {
            prop_assert!(close(*a, *b), "{pool:?}: max backward {a} vs {b}");
        }
        prop_assert!(close(mdx.iter().sum(), dy.iter().sum()));

        // Interpolate, forward and gradient.
        let sizes: Vec<u64> = (0..d).map(|_| rng.range(1, 7)).collect();
        let mut ip = Interp {
            mode: if rng.range(0, 2) == 1 { InterpMode::Linear } else { InterpMode::Nearest },
            coord: if rng.range(0, 2) == 1 { CoordMode::AlignCorners } else { CoordMode::HalfPixel },
            backward: false,
            channels_last: cl,
            sizes,
        };
        let fk = Kernel::Interp(ip.clone());
        let os = output_shape(&fk, &[&xs]).unwrap();
        let o = reference(&fk, &[(&xs, &x)], &os);
        let oe = by_eval(&fk, &[(&xs, &x)], &os);
        for (a, b) in o.iter().zip(&oe) {
            prop_assert!(close(*a, *b), "{ip:?}: {a} vs {b}");
        }
        let g = rng.values(numel(&os));
        let f = if cl { 1 } else { 2 };
        ip.sizes = xs[f..f + d].to_vec();
        ip.backward = true;
        let bk = Kernel::Interp(ip.clone());
        let gx = by_eval(&bk, &[(&os, &g)], &xs);
        let gxr = reference(&bk, &[(&os, &g)], &xs);
        for (a, b) in gx.iter().zip(&gxr) {
            prop_assert!(close(*a, *b), "{ip:?}: backward {a} vs {b}");
        }
        prop_assert!(close(dot(&o, &g), dot(&x, &gx)), "{ip:?}: not adjoint");
    }
}

fn fwd2d(stride: u64, pad: u64, groups: u64) -> Conv {
    Conv {
        pass: ConvPass::Forward,
        strides: vec![stride; 2],
        dilations: vec![1; 2],
        pads_begin: vec![pad; 2],
        pads_end: vec![pad; 2],
        groups,
        channels_last: false,
        weights: WeightsFormat::OIX,
        shape: Vec::new(),
    }
}

#[test]
fn a_worked_convolution() {
    // x = 1..16 on a 4×4 grid, a 2×2 window of ones, stride 2: the sums of the four blocks.
    let k = Kernel::Conv(fwd2d(2, 0, 1));
    let x: Vec<f64> = (1..=16).map(f64::from).collect();
    let y = reference(
        &k,
        &[(&[1, 1, 4, 4], &x), (&[1, 1, 2, 2], &[1.0; 4])],
        &[1, 1, 2, 2],
    );
    assert_eq!(y, vec![14.0, 22.0, 46.0, 54.0]);
    // Padding 1, stride 1, 3×3 of ones: the corner sees 4 elements.
    let k = Kernel::Conv(fwd2d(1, 1, 1));
    let y = reference(
        &k,
        &[(&[1, 1, 4, 4], &x), (&[1, 1, 3, 3], &[1.0; 9])],
        &[1, 1, 4, 4],
    );
    assert_eq!(y[0], 1.0 + 2.0 + 5.0 + 6.0);
    // Max pooling 2×2 stride 2 on the same grid.
    let p = Kernel::Pool(Pool {
        kind: PoolKind::Max,
        backward: false,
        kernel: vec![2, 2],
        strides: vec![2, 2],
        dilations: vec![1, 1],
        pads_begin: vec![0, 0],
        pads_end: vec![0, 0],
        ceil: false,
        channels_last: false,
        shape: Vec::new(),
    });
    assert_eq!(
        reference(&p, &[(&[1, 1, 4, 4], &x)], &[1, 1, 2, 2]),
        vec![6.0, 8.0, 14.0, 16.0]
    );
    // Bilinear, half-pixel, 2 → 4 on one axis: 1, 1.25, 1.75, 2.
    let ip = Kernel::Interp(Interp {
        mode: InterpMode::Linear,
        coord: CoordMode::HalfPixel,
        backward: false,
        channels_last: false,
        sizes: vec![4],
    });
    assert_eq!(
        reference(&ip, &[(&[1, 1, 2], &[1.0, 2.0])], &[1, 1, 4]),
        vec![1.0, 1.25, 1.75, 2.0]
    );
}

#[test]
fn output_shapes_and_attribute_errors() {
    let k = Kernel::Conv(fwd2d(2, 1, 1));
    assert_eq!(
        output_shape(&k, &[&[2, 3, 7, 7], &[8, 3, 3, 3]]).unwrap(),
        vec![2, 8, 4, 4]
    );
    let e = output_shape(&k, &[&[2, 4, 7, 7], &[8, 3, 3, 3]]).unwrap_err();
    assert!(e.message.contains("channels"), "{e}");
    let e = output_shape(&k, &[&[2, 3, 1, 1], &[8, 3, 5, 5]]).unwrap_err();
    assert!(e.message.contains("does not fit"), "{e}");
    let mut c = fwd2d(1, 0, 1);
    c.dilations = vec![1];
    let e = output_shape(&Kernel::Conv(c), &[&[2, 3, 7, 7], &[8, 3, 3, 3]]).unwrap_err();
    assert!(e.message.contains("`dilations` has 1 entries"), "{e}");
    let e = output_shape(
        &Kernel::Conv(fwd2d(0, 0, 1)),
        &[&[1, 1, 4, 4], &[1, 1, 1, 1]],
    )
    .unwrap_err();
    assert!(e.message.contains("at least 1"), "{e}");
}

#[test]
fn implicit_gemm_flops_and_cycles() {
    // mini: f32 tile 2×2×2 at 8 FLOP/cycle (2 cycles per tile), matrix unit at MAB.
    let m = mini();
    let f32 = DType::F32;
    let k = Kernel::Conv(fwd2d(1, 0, 1));
    // x [1,3,4,4], w [4,3,3,3] → y [1,4,2,2]; everything replicated.
    let b = "; B@[L1B,MAB,PE])";
    let x = lay(&format!("((1), (3), (4), (4){b}"), &m, &[1, 3, 4, 4], f32);
    let w = lay(&format!("((4), (3), (3), (3){b}"), &m, &[4, 3, 3, 3], f32);
    let y = lay(&format!("((1), (4), (2), (2){b}"), &m, &[1, 4, 2, 2], f32);
    let l = check(&k, &[&x, &w], &y, &m, &[]).unwrap();
    assert_eq!(l.unit, Unit::Mab);
    let c = cost(&k, &[&x, &w], &y, &l, &m, f32, None).unwrap();
    // FLOP = 2·N·OC·OH·OW·IC·KH·KW = 2·1·4·2·2·3·3·3.
    assert_eq!(c.flops, 2 * 4 * 4 * 27);
    // M = 4 → 2 tiles, N = 4 → 2, K = 27 → 14: 56 tiles × 2 cycles.
    assert_eq!(c.cycles, 56 * 2);
    assert_eq!(c.unit, "matrix");
    // Output channels split over L1B: weights split alike, x replicated; half the tiles.
    let w2 = lay(
        "((2_L1B, 2), (3), (3), (3); B@[MAB,PE])",
        &m,
        &[4, 3, 3, 3],
        f32,
    );
    let y2 = lay(
        "((1), (2_L1B, 2), (2), (2); B@[MAB,PE])",
        &m,
        &[1, 4, 2, 2],
        f32,
    );
    let l = check(&k, &[&x, &w2], &y2, &m, &[]).unwrap();
    assert!(l.partial.is_empty());
    assert_eq!(
        cost(&k, &[&x, &w2], &y2, &l, &m, f32, None).unwrap().cycles,
        28 * 2
    );
    // Depthwise (groups = channels): one output channel per group, K = the window.
    let dw = Kernel::Conv(fwd2d(1, 0, 3));
    let wd = lay(&format!("((3), (1), (3), (3){b}"), &m, &[3, 1, 3, 3], f32);
    let yd = lay(&format!("((1), (3), (2), (2){b}"), &m, &[1, 3, 2, 2], f32);
    let l = check(&dw, &[&x, &wd], &yd, &m, &[]).unwrap();
    let c = cost(&dw, &[&x, &wd], &yd, &l, &m, f32, None).unwrap();
    assert_eq!(c.flops, 2 * 3 * 4 * 9);
    // 3 groups × ⌈4/2⌉ × ⌈1/2⌉ × ⌈9/2⌉ tiles.
    assert_eq!(c.cycles, 3 * 2 * 5 * 2);
}

#[test]
fn what_a_layout_may_split() {
    let m = mini();
    let f32 = DType::F32;
    let k = Kernel::Conv(fwd2d(1, 1, 1));
    let names = ["x", "w", "y"];
    let shp = ([2, 4, 4, 4], [4, 4, 3, 3], [2, 4, 4, 4]);
    let go = |x: &str, w: &str, y: &str| {
        let (lx, lw, ly) = (
            lay(x, &m, &shp.0, f32),
            lay(w, &m, &shp.1, f32),
            lay(y, &m, &shp.2, f32),
        );
        check(&k, &[&lx, &lw], &ly, &m, &names)
    };
    // Batch split: x and y split alike, weights replicated.
    go(
        "((2_L1B), (4), (4), (4); B@[MAB,PE])",
        "((4), (4), (3), (3); B@[L1B,MAB,PE])",
        "((2_L1B), (4), (4), (4); B@[MAB,PE])",
    )
    .unwrap();
    // Batch split with the weights split too: the weights must be replicated.
    let e = go(
        "((2_L1B), (4), (4), (4); B@[MAB,PE])",
        "((2_L1B, 2), (4), (3), (3); B@[MAB,PE])",
        "((2_L1B), (4), (4), (4); B@[MAB,PE])",
    )
    .unwrap_err();
    assert!(e.message.contains("`w`"), "{e}");
    // Input channels split: partial sums over L1B for a Reduce.
    let l = go(
        "((2), (2_L1B, 2), (4), (4); B@[MAB,PE])",
        "((4), (2_L1B, 2), (3), (3); B@[MAB,PE])",
        "((2), (4), (4), (4); B@[L1B,MAB,PE])",
    )
    .unwrap();
    assert_eq!(l.partial, vec![0]);
    // A spatial split of x: the window's halo crosses it.
    let e = go(
        "((2), (4), (2_L1B, 2), (4); B@[MAB,PE])",
        "((4), (4), (3), (3); B@[L1B,MAB,PE])",
        "((2), (4), (2_L1B, 2), (4); B@[MAB,PE])",
    )
    .unwrap_err();
    assert!(
        e.message.contains("halo") && e.message.contains("only a window of 1"),
        "{e}"
    );
    assert!(matches!(
        e.kind,
        ErrorKind::Illegal {
            operand: 0,
            level: 0
        }
    ));
    // The output split spatially while x is replicated: legal.
    go(
        "((2), (4), (4), (4); B@[L1B,MAB,PE])",
        "((4), (4), (3), (3); B@[L1B,MAB,PE])",
        "((2), (4), (2_L1B, 2), (4); B@[MAB,PE])",
    )
    .unwrap();
    // A 1×1 window with stride 1 and no padding splits the spatial axes freely.
    let pw = Kernel::Conv(fwd2d(1, 0, 1));
    let lx = lay(
        "((2), (4), (2_L1B, 2), (4); B@[MAB,PE])",
        &m,
        &[2, 4, 4, 4],
        f32,
    );
    let lw = lay(
        "((4), (4), (1), (1); B@[L1B,MAB,PE])",
        &m,
        &[4, 4, 1, 1],
        f32,
    );
    check(&pw, &[&lx, &lw], &lx, &m, &names).unwrap();
    // Pooling keeps the spatial axes whole on the PE, channels split freely.
    let p = Kernel::Pool(Pool {
        kind: PoolKind::Max,
        backward: false,
        kernel: vec![2, 2],
        strides: vec![2, 2],
        dilations: vec![1, 1],
        pads_begin: vec![0, 0],
        pads_end: vec![0, 0],
        ceil: false,
        channels_last: false,
        shape: Vec::new(),
    });
    let px = lay(
        "((2), (2_L1B, 2_PE), (4), (4); B@[MAB])",
        &m,
        &[2, 4, 4, 4],
        f32,
    );
    let py = lay(
        "((2), (2_L1B, 2_PE), (2), (2); B@[MAB])",
        &m,
        &[2, 4, 2, 2],
        f32,
    );
    check(&p, &[&px], &py, &m, &[]).unwrap();
    let px = lay(
        "((2), (4), (2_PE, 2), (4); B@[L1B,MAB])",
        &m,
        &[2, 4, 4, 4],
        f32,
    );
    let py = lay(
        "((2), (4), (2_PE), (2); B@[L1B,MAB])",
        &m,
        &[2, 4, 2, 2],
        f32,
    );
    let e = check(&p, &[&px], &py, &m, &[]).unwrap_err();
    assert!(e.message.contains("whole axis"), "{e}");
}
