//! Matrix contractions in functional mode (`MatMul`, `BatchMatMul`, `GeneralMatMul`):
//! the shard-by-shard path (rows and columns gathered once, `engine/contract.rs`) gives
//! the bytes of the per-element evaluation (`Engine::set_per_element_kernels`) on every
//! PE, partial sums included, and the same facts and cycles — on random shapes and
//! random legal layouts: levels split along the batch, row, column or contraction axis
//! (split contraction: partial outputs), replicated or idle, `Time` steps, `W` packing,
//! padding, run-time extents below the logical ones, every dtype the matrix kernels take.

mod common;

use common::kernels::{out_bytes, small};
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};
use mnsim_kernels::Kernel;
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;

struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A logical axis of the contraction: a batch axis, the rows, the columns, the
/// contraction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ax {
    Batch(usize),
    M,
    N,
    K,
}

/// What one level does: splits an axis (operands without it are replicated there),
/// holds copies of everything, or is left idle (named by no layout).
#[derive(Clone, Copy, Debug)]
enum Role {
    Split(Ax),
    Replicated,
    Idle,
}

const LEVELS: [(&str, u64); 4] = [("L2B", 2), ("L1B", 2), ("MAB", 2), ("PE", 4)];

/// One case: the kernel, the operands' axes (`None`: a broadcast batch axis of size 1),
/// the padded extent, logical and run-time length of every axis, the roles.
struct Case {
    kernel: Kernel,
    a: Vec<Option<Ax>>,
    b: Vec<Option<Ax>>,
    c: Vec<Ax>,
    roles: [Role; 4],
    /// Per axis: (extent in memory per PE, with `Time` 2 steps of it or not).
    mem: Vec<(Ax, u64, bool)>,
    /// Per axis: padding (logical = padded − pad) and run-time shortfall.
    pad: Vec<(Ax, u64, u64)>,
    dtypes: [DType; 3],
    /// Per axis (in `axes` order): the seed of its sub-axes' order.
    order: Vec<u64>,
    axes: Vec<Ax>,
}

impl Case {
    fn axis_no(&self, x: Ax) -> usize {
        self.axes
            .iter()
            .position(|&y| y == x)
            .expect("an axis of the case")
    }
    fn fan(&self, x: Ax) -> u64 {
        self.roles
            .iter()
            .zip(LEVELS)
            .filter(|(r, _)| matches!(r, Role::Split(y) if *y == x))
            .map(|(_, (_, f))| f)
            .product()
    }
    fn mem(&self, x: Ax) -> (u64, bool) {
        self.mem
            .iter()
            .find(|m| m.0 == x)
            .map_or((1, false), |m| (m.1, m.2))
    }
    fn padded(&self, x: Ax) -> u64 {
        let (m, t) = self.mem(x);
        self.fan(x) * m * if t { 2 } else { 1 }
    }
    fn logical(&self, x: Ax) -> u64 {
        self.padded(x) - self.pad.iter().find(|p| p.0 == x).map_or(0, |p| p.1)
    }
    fn runtime(&self, x: Ax) -> u64 {
        self.logical(x) - self.pad.iter().find(|p| p.0 == x).map_or(0, |p| p.2)
    }

    /// The layout of an operand with these axes and dtype.
    fn layout(&self, axes: &[Option<Ax>], dtype: DType, rng: &mut Rng) -> String {
        let mut groups: Vec<Vec<String>> = Vec::new();
        let mut bcast = Vec::new();
        for (i, x) in axes.iter().enumerate() {
            let Some(x) = *x else {
                groups.push(vec!["1".into()]);
                continue;
            };
            let mut g: Vec<String> = Vec::new();
            for (r, (name, f)) in self.roles.iter().zip(LEVELS) {
                if matches!(r, Role::Split(y) if *y == x) {
                    g.push(format!("{f}_{name}"));
                }
            }
            let (m, t) = self.mem(x);
            if t {
                g.push("2_Time".into());
            }
            g.push(m.to_string());
            // The same order of the sub-axes of an axis in every operand (a split must
            // be the same function of the index everywhere).
            let mut order = Rng(self.order[self.axis_no(x)]);
            for j in (1..g.len()).rev() {
                let k = order.next(j as u64 + 1) as usize;
                g.swap(j, k);
            }
            // W packing of the last axis when its memory part is innermost and allows it.
            let per_word = 8 / dtype.bytes().max(1);
            if i + 1 == axes.len()
                && g.last() == Some(&m.to_string())
                && per_word > 1
                && m % per_word == 0
                && rng.next(2) == 0
            {
                g.pop();
                if m > per_word {
                    g.push((m / per_word).to_string());
                }
                g.push(format!("{per_word}_W"));
            }
            if g.len() > 1 {
                g.retain(|x| x != "1");
            }
            groups.push(g);
        }
        for (r, (name, _)) in self.roles.iter().zip(LEVELS) {
            let named = match r {
                Role::Split(y) => axes.contains(&Some(*y)),
                Role::Replicated => false,
                Role::Idle => true,
            };
            if !named {
                bcast.push(name);
            }
        }
        let logical: Vec<u64> = axes
            .iter()
            .map(|x| x.map_or(1, |x| self.logical(x)))
            .collect();
        let padded: Vec<u64> = axes
            .iter()
            .map(|x| x.map_or(1, |x| self.padded(x)))
            .collect();
        let pad = (logical != padded).then_some(logical.as_slice());
        mnsim_arch::layout::layout_text(pad, &groups, &bcast)
    }
}

fn random_case(rng: &mut Rng, n: u64) -> Case {
    // Dtypes (a, b, out) the matrix kernels take, mixed ones included.
    const DTYPES: [[DType; 3]; 9] = [
        [DType::F32, DType::F32, DType::F32],
        [DType::F16, DType::F16, DType::F16],
        [DType::BF16, DType::BF16, DType::BF16],
        [DType::F64, DType::F64, DType::F64],
        [DType::BF16, DType::BF16, DType::F32],
        [DType::F16, DType::F32, DType::F32],
        [DType::S8, DType::S8, DType::S32],
        [DType::U8, DType::S8, DType::S32],
        [DType::F8E4M3, DType::F8E5M2, DType::F16],
    ];
    let dtypes = DTYPES[(n % DTYPES.len() as u64) as usize];
    let (kernel, nb) = match rng.next(3) {
        0 => (Kernel::MatMul, 0),
        1 => (Kernel::BatchMatMul, 1 + rng.next(2) as usize),
        _ => (
            Kernel::GeneralMatMul {
                transpose_a: rng.next(2) == 0,
                transpose_b: rng.next(2) == 0,
            },
            rng.next(3) as usize,
        ),
    };
    let batch: Vec<Ax> = (0..nb).map(Ax::Batch).collect();
    let mut c = batch.clone();
    c.extend([Ax::M, Ax::N]);
    let (mut a, mut b): (Vec<Option<Ax>>, Vec<Option<Ax>>) = (
        batch.iter().map(|&x| Some(x)).collect(),
        batch.iter().map(|&x| Some(x)).collect(),
    );
    let (ta, tb) = match kernel {
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => {
            // b broadcasts over the batch: fewer axes, or axes of size 1.
            match rng.next(3) {
                0 => b.clear(),
                1 => {
                    for x in b.iter_mut() {
                        if rng.next(2) == 0 {
                            *x = None;
                        }
                    }
                }
                _ => {}
            }
            (transpose_a, transpose_b)
        }
        _ => (false, false),
    };
    a.extend(if ta {
        [Some(Ax::K), Some(Ax::M)]
    } else {
        [Some(Ax::M), Some(Ax::K)]
    });
    b.extend(if tb {
        [Some(Ax::N), Some(Ax::K)]
    } else {
        [Some(Ax::K), Some(Ax::N)]
    });
    let axes: Vec<Ax> = c.iter().copied().chain([Ax::K]).collect();
    let mut roles = [Role::Replicated; 4];
    for r in roles.iter_mut() {
        *r = match rng.next(6) {
            0 => Role::Replicated,
            1 => Role::Idle,
            _ => Role::Split(axes[rng.next(axes.len() as u64) as usize]),
        };
    }
    let mem = axes
        .iter()
        .map(|&x| {
            (
                x,
                1 + rng.next(if x == Ax::K { 6 } else { 4 }),
                rng.next(4) == 0,
            )
        })
        .collect();
    let mut case = Case {
        kernel,
        a,
        b,
        c,
        roles,
        mem,
        pad: Vec::new(),
        dtypes,
        order: axes.iter().map(|_| 1 + rng.next(1 << 40)).collect(),
        axes: axes.clone(),
    };
    // Padding and run-time shortfalls only where they leave at least two elements.
    let pads: Vec<(Ax, u64, u64)> = axes
        .iter()
        .map(|&x| {
            let e = case.padded(x);
            let pad = u64::from(e > 2 && rng.next(3) == 0);
            let rt = u64::from(e - pad > 2 && rng.next(3) == 0);
            (x, pad, rt)
        })
        .collect();
    case.pad = pads;
    case
}

/// Runs the case's kernel in functional mode, element by element or not; `None` when
/// the engine refuses the case (a layout that does not fit, an illegal combination).
#[allow(clippy::type_complexity)]
fn run(
    m: &Machine,
    case: &Case,
    layouts: &[String; 3],
    per_element: bool,
) -> Option<(Vec<Vec<u8>>, Vec<usize>, String, u64)> {
    let mut e = Engine::new(m.clone(), Mode::Functional);
    e.set_per_element_kernels(per_element);
    let dims = |axes: &[Option<Ax>], f: &dyn Fn(Ax) -> u64| -> Vec<u64> {
        axes.iter().map(|x| x.map_or(1, f)).collect()
    };
    let c: Vec<Option<Ax>> = case.c.iter().map(|&x| Some(x)).collect();
    for (i, (name, axes)) in [("a", &case.a), ("b", &case.b), ("out", &c)]
        .into_iter()
        .enumerate()
    {
        let logical = dims(axes, &|x| case.logical(x));
        let rt = dims(axes, &|x| case.runtime(x));
        let dt = case.dtypes[i];
        let data = (i < 2).then(|| init_data(&Init::Random { seed: 7 + i as u64 }, dt, &rt));
        e.state
            .declare(
                name,
                dt,
                logical.clone(),
                rt.clone(),
                XlaLayout::default_for(rt.len()),
                data,
            )
            .unwrap();
        let l = TensorLayout::parse(&layouts[i], m, Some(&logical), dt).ok()?;
        if i < 2 {
            e.load(e.state.tensor_id(name).unwrap(), l).ok()?;
        }
    }
    let l = TensorLayout::parse(
        &layouts[2],
        m,
        Some(&dims(&c, &|x| case.logical(x))),
        case.dtypes[2],
    )
    .ok()?;
    let rep = e
        .kernel(
            "K",
            &case.kernel,
            &[
                e.state.tensor_id("a").unwrap(),
                e.state.tensor_id("b").unwrap(),
            ],
            e.state.tensor_id("out").unwrap(),
            Some(l),
        )
        .ok()?;
    let partial = e.state.tensors[e.state.tensor_id("out").unwrap()]
        .lm
        .as_ref()
        .unwrap()
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
fn contractions_give_the_per_element_bytes_on_random_layouts() {
    let m = small();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (mut ran, mut partial, mut time, mut idle) = (0, 0, 0, 0);
    let mut kinds = [0usize; 3];
    for n in 0..1000u64 {
        let case = random_case(&mut rng, n);
        let c: Vec<Option<Ax>> = case.c.iter().map(|&x| Some(x)).collect();
        let layouts = [
            case.layout(&case.a, case.dtypes[0], &mut rng),
            case.layout(&case.b, case.dtypes[1], &mut rng),
            case.layout(&c, case.dtypes[2], &mut rng),
        ];
        let Some(fast) = run(&m, &case, &layouts, false) else {
            continue;
        };
        let slow = run(&m, &case, &layouts, true).expect("the same case runs");
        assert_eq!(
            fast.0, slow.0,
            "case {n}: {:?} {:?} {layouts:?}: the output bytes differ",
            case.kernel, case.dtypes
        );
        assert_eq!(fast.1, slow.1);
        assert_eq!(fast.2, slow.2, "case {n}: the reports differ");
        assert_eq!(fast.3, slow.3);
        ran += 1;
        partial += usize::from(!fast.1.is_empty());
        time += usize::from(case.mem.iter().any(|m| m.2));
        idle += usize::from(case.roles.iter().any(|r| matches!(r, Role::Idle)));
        kinds[match case.kernel {
            Kernel::MatMul => 0,
            Kernel::BatchMatMul => 1,
            _ => 2,
        }] += 1;
    }
    eprintln!(
        "{ran} cases: {partial} partial, {time} with Time, {idle} with an idle level, {kinds:?} by kernel"
    );
    assert!(ran >= 800, "only {ran} random cases ran");
    assert!(partial >= 100 && time >= 100 && idle >= 100 && kinds.iter().all(|&k| k >= 100));
}
