//! Property: on random machines and random legal layouts, no kernel ever runs above the
//! machine's peak, and legality finds exactly the partial levels the layouts imply.

mod common;

use common::{Rng, lay};
use mnsim_arch::{DType, Machine, TensorLayout, from_ron};
use mnsim_kernels::*;
use proptest::prelude::*;

/// A random machine: Board → up to two middle levels → PE, the matrix unit at a random
/// addressable level with random tiles and rates (f64 sometimes without a matrix rate).
fn random_machine(rng: &mut Rng) -> Machine {
    let mids = rng.range(0, 3);
    let mut levels = String::new();
    for i in 0..mids {
        levels += &format!("(name: \"L{i}\", count: {}),\n", rng.range(1, 5));
    }
    levels += &format!(
        "(name: \"PE\", count: {}, memory: (name: \"LM\", bytes: 1048576)),\n",
        rng.range(1, 5)
    );
    let unit = rng.range(0, mids + 1);
    let unit = if unit == mids {
        "PE".to_string()
    } else {
        format!("L{unit}")
    };
    let pick = |rng: &mut Rng, xs: &[u64]| xs[rng.range(0, xs.len() as u64) as usize];
    let tile = |rng: &mut Rng| {
        format!(
            "(m: {}, n: {}, k: {})",
            rng.range(1, 5),
            rng.range(1, 5),
            rng.range(1, 5)
        )
    };
    let mut flops = format!(
        "F16: {}.0, F32: {}.0",
        pick(rng, &[4, 8, 16, 32, 64]),
        pick(rng, &[2, 4, 8, 16])
    );
    let mut tiles = format!("F16: {}, F32: {}", tile(rng), tile(rng));
    if rng.range(0, 2) == 0 {
        flops += &format!(", F64: {}.0", pick(rng, &[1, 2, 4]));
        tiles += &format!(", F64: {}", tile(rng));
    }
    let rate = "(parent: 8.0, child: 8.0, latency: 1)";
    let text = format!(
        r#"(
        name: "random", clock_ghz: 1.0, word_bytes: 8,
        levels: [(name: "Board", count: 1, addressable: false), {levels}],
        links: {{"Board": (broadcast: {rate}, distribute: {rate}, gather: {rate}, reduce: {rate})}},
        dram: (level: "Board", bytes: 1048576, bytes_per_cycle: 8.0, burst_bytes: 8),
        compute: (
            vector: {{F64: {}.0, F32: {}.0, F16: {}.0}},
            matrix: (level: "{unit}", flops: {{{flops}}}, tile: {{{tiles}}}),
        ),
    )"#,
        rng.range(1, 3),
        rng.range(1, 5),
        rng.range(1, 9),
    );
    from_ron(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The logical axes of a (batch) matmul.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ax {
    Bt,
    M,
    N,
    K,
}

/// One operand's sub-axes per logical axis (as text pieces), plus whether it used W.
#[derive(Default, Clone)]
struct Tensor {
    groups: Vec<(Ax, Vec<String>)>,
    used_w: bool,
}

impl Tensor {
    fn new(axes: &[Ax]) -> Self {
        Tensor {
            groups: axes.iter().map(|&a| (a, Vec::new())).collect(),
            used_w: false,
        }
    }
    fn push(&mut self, ax: Ax, piece: String) {
        if let Some((_, g)) = self.groups.iter_mut().find(|(a, _)| *a == ax) {
            g.push(piece);
        }
    }
    fn has(&self, ax: Ax) -> bool {
        self.groups.iter().any(|(a, _)| *a == ax)
    }
    fn text(&self) -> String {
        let gs: Vec<String> = self
            .groups
            .iter()
            .map(|(_, g)| format!("({})", g.join(", ")))
            .collect();
        format!("({})", gs.join(", "))
    }
}

struct Case {
    m: Machine,
    dtype: DType,
    kernel: Kernel,
    shapes: [Vec<u64>; 3],
    texts: [String; 3],
    partial: Vec<usize>,
}

/// Legal-by-construction (batch) matmul layouts: at and above the unit level every
/// level is replicated, or splits M (C and A alike), N (C and B), the batch (all
/// three), M and N (C only; A, B replicated), or K (A and B alike; C replicated, so
/// partial). Below the unit each operand splits what it likes.
fn random_case(rng: &mut Rng) -> Case {
    let m = random_machine(rng);
    let addr = m.addressable_levels();
    let dtype = [DType::F16, DType::F32, DType::F64][rng.range(0, 3) as usize];
    let li = m.level_index(&m.compute.matrix.level).unwrap();
    let leaf = addr.len() - 1;
    let unit = if m.compute.matrix.flops.contains_key(&dtype) {
        addr.iter().position(|a| a.folded.contains(&li)).unwrap()
    } else {
        leaf
    };
    let batch = rng.range(0, 2) == 1;
    let axes_of = |x: [Ax; 2]| -> Vec<Ax> {
        let mut v = if batch { vec![Ax::Bt] } else { vec![] };
        v.extend(x);
        v
    };
    let mut t = [
        Tensor::new(&axes_of([Ax::M, Ax::K])),
        Tensor::new(&axes_of([Ax::K, Ax::N])),
        Tensor::new(&axes_of([Ax::M, Ax::N])),
    ];
    let all = [Ax::Bt, Ax::M, Ax::N, Ax::K];
    let mut above = [1u64; 4]; // per Ax: product of the shared splits
    let idx = |a: Ax| all.iter().position(|&x| x == a).unwrap();
    let mut partial = Vec::new();
    for (i, lv) in addr.iter().enumerate().take(unit + 1) {
        let f = lv.fanout;
        let s = rng.range(1, f + 1);
        let name = &lv.name;
        match rng.range(0, 6) {
            1 => {
                t[0].push(Ax::M, format!("{s}_{name}"));
                t[2].push(Ax::M, format!("{s}_{name}"));
                above[idx(Ax::M)] *= s;
            }
            2 => {
                t[1].push(Ax::N, format!("{s}_{name}"));
                t[2].push(Ax::N, format!("{s}_{name}"));
                above[idx(Ax::N)] *= s;
            }
            3 if f >= 2 => {
                let s = rng.range(2, f + 1);
                t[0].push(Ax::K, format!("{s}_{name}"));
                t[1].push(Ax::K, format!("{s}_{name}"));
                above[idx(Ax::K)] *= s;
                partial.push(i);
            }
            4 if f >= 4 => {
                let s1 = rng.range(1, f / 2 + 1);
                let s2 = rng.range(1, f / s1 + 1);
                t[2].push(Ax::M, format!("{s1}_{name}"));
                t[2].push(Ax::N, format!("{s2}_{name}"));
                // A and B are replicated here but hold all of M and N: the factor sits
                // in memory at the same place, so the digits around it keep their radix.
                t[0].push(Ax::M, format!("{s1}"));
                t[1].push(Ax::N, format!("{s2}"));
                above[idx(Ax::M)] *= s1;
                above[idx(Ax::N)] *= s2;
            }
            5 if batch => {
                for x in t.iter_mut() {
                    x.push(Ax::Bt, format!("{s}_{name}"));
                }
                above[idx(Ax::Bt)] *= s;
            }
            _ => {}
        }
    }
    // Below the unit: each operand independently splits one of its axes by 2.
    let lower: Vec<usize> = (unit + 1..addr.len())
        .filter(|&i| addr[i].fanout >= 2)
        .collect();
    let mut below_splits: Vec<Vec<(usize, Ax)>> = vec![Vec::new(); 3];
    for &i in &lower {
        for (o, bs) in below_splits.iter_mut().enumerate() {
            if rng.range(0, 2) == 0 {
                let axes: Vec<Ax> = t[o].groups.iter().map(|(a, _)| *a).collect();
                bs.push((i, axes[rng.range(0, axes.len() as u64) as usize]));
            }
        }
    }
    let slots = m.word_bytes / dtype.bytes();
    let mut total = [0u64; 4];
    for a in all {
        let below = (1u64 << lower.len()) * rng.range(1, 4);
        total[idx(a)] = above[idx(a)] * below;
        for o in 0..3 {
            if !t[o].has(a) {
                continue;
            }
            let mine: Vec<usize> = below_splits[o]
                .iter()
                .filter(|(_, x)| *x == a)
                .map(|(i, _)| *i)
                .collect();
            for &i in &mine {
                t[o].push(a, format!("2_{}", addr[i].name));
            }
            let mut mem = below >> mine.len();
            if mem.is_multiple_of(2) && rng.range(0, 2) == 0 {
                t[o].push(a, "2_Time".into());
                mem /= 2;
            }
            let w = mem.is_multiple_of(2) && slots >= 2 && !t[o].used_w && rng.range(0, 2) == 0;
            if w {
                mem /= 2;
            }
            t[o].push(a, format!("{mem}"));
            if w {
                t[o].push(a, "2_W".into());
                t[o].used_w = true;
            }
        }
    }
    let dims =
        |ts: &Tensor| -> Vec<u64> { ts.groups.iter().map(|(a, _)| total[idx(*a)]).collect() };
    Case {
        dtype,
        kernel: if batch {
            Kernel::BatchMatMul
        } else {
            Kernel::MatMul
        },
        shapes: [dims(&t[0]), dims(&t[1]), dims(&t[2])],
        texts: [t[0].text(), t[1].text(), t[2].text()],
        partial,
        m,
    }
}

fn bind(c: &Case) -> [TensorLayout; 3] {
    [0, 1, 2].map(|o| lay(&c.texts[o], &c.m, &c.shapes[o], c.dtype))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn matmul_never_exceeds_peak(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let c = random_case(&mut rng);
        let [a, b, o] = bind(&c);
        let ctx = format!("{} on {:?}: {:?} {:?}", c.kernel, c.m.levels.iter().map(|l| (&l.name, l.count)).collect::<Vec<_>>(), c.texts, c.shapes);
        let l = check(&c.kernel, &[&a, &b], &o, &c.m, &[])
            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
        prop_assert_eq!(&l.partial, &c.partial, "{}", ctx);
        let cost = cost(&c.kernel, &[&a, &b], &o, &l, &c.m, c.dtype, None).unwrap();
        let useful: u64 = 2 * c.shapes[2].iter().product::<u64>() * c.shapes[0].last().unwrap();
        prop_assert_eq!(cost.flops, useful);
        prop_assert!(cost.cycles > 0);
        prop_assert!(
            cost.flops_per_cycle() <= cost.peak_flops_per_cycle * (1.0 + 1e-12),
            "{}: {} FLOP/cycle above the peak {} ({} cycles, {})", ctx,
            cost.flops_per_cycle(), cost.peak_flops_per_cycle, cost.cycles, cost.unit
        );
    }

    #[test]
    fn vector_kernels_never_exceed_peak(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let c = random_case(&mut rng);
        let [_, _, o] = bind(&c);
        // Elementwise kernels on the output's own layout: always legal.
        for k in [Kernel::Unary(UnaryOp::Gelu), Kernel::Binary(BinaryOp::Div)] {
            let ins: Vec<&TensorLayout> = if k.arity() == 1 { vec![&o] } else { vec![&o, &o] };
            let l = check(&k, &ins, &o, &c.m, &[]).unwrap();
            let cost = cost(&k, &ins, &o, &l, &c.m, c.dtype, None).unwrap();
            prop_assert!(cost.flops_per_cycle() <= cost.peak_flops_per_cycle * (1.0 + 1e-12));
        }
    }
}

#[test]
fn the_generator_covers_partials_both_units_and_padding_waste() {
    let (mut partial, mut matrix, mut vector, mut batch, mut below_peak) = (0, 0, 0, 0, 0);
    for seed in 0..500u64 {
        let mut rng = Rng(seed);
        let c = random_case(&mut rng);
        let [a, b, o] = bind(&c);
        let l = check(&c.kernel, &[&a, &b], &o, &c.m, &[]).unwrap();
        let k = cost(&c.kernel, &[&a, &b], &o, &l, &c.m, c.dtype, None).unwrap();
        partial += !l.partial.is_empty() as u32;
        matrix += (k.unit == "matrix") as u32;
        vector += (k.unit == "vector") as u32;
        batch += (c.kernel == Kernel::BatchMatMul) as u32;
        below_peak += (k.utilisation() < 0.5) as u32;
    }
    println!(
        "partial {partial} matrix {matrix} vector {vector} batch {batch} below half {below_peak}"
    );
    for n in [partial, matrix, vector, batch, below_peak] {
        assert!(n >= 25, "a kind of case is rare: {n} of 500");
    }
}
