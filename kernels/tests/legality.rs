//! Legality (docs/kernels.md) on toy4 and a small what-if machine (`mini`: L1B 2 → MAB 2 →
//! PE 2, the matrix unit at MAB).

mod common;

use common::*;
use mnsim_arch::{DType, Machine, TensorLayout};
use mnsim_kernels::*;

const F32: DType = DType::F32;

/// Legal by `check`, and the quiet `is_legal` (the planner's) agrees.
fn ok(k: &Kernel, ins: &[&TensorLayout], out: &TensorLayout, m: &Machine) -> Legality {
    let l = check(k, ins, out, m, &[]).unwrap_or_else(|e| panic!("{k}: {e}"));
    assert!(
        is_legal(k, ins, out, m),
        "{k}: check says legal, is_legal not"
    );
    l
}

fn illegal(
    k: &Kernel,
    ins: &[&TensorLayout],
    out: &TensorLayout,
    m: &Machine,
    names: &[&str],
) -> KernelError {
    let e = check(k, ins, out, m, names).expect_err("should be illegal");
    assert!(
        !is_legal(k, ins, out, m),
        "{k}: check says illegal, is_legal not"
    );
    assert!(matches!(e.kind, ErrorKind::Illegal { .. }), "{e:?}");
    e
}

fn pe_legal() -> Legality {
    Legality {
        partial: vec![],
        unit: Unit::Pe,
        unit_level: 0,
    }
}

#[test]
fn binary_same_layouts_and_replicated_operands_are_legal() {
    let m = machine("toy4");
    let add = Kernel::Binary(BinaryOp::Add);
    let a = lay("((4_PE, 2), (8))", &m, &[8, 8], F32);
    assert_eq!(ok(&add, &[&a, &a], &a, &m), pe_legal());
    // A replicated operand is on every PE.
    let b = lay("((8), (8); B@[PE])", &m, &[8, 8], F32);
    assert_eq!(ok(&add, &[&a, &b], &a, &m), pe_legal());
    assert_eq!(ok(&add, &[&b, &a], &a, &m), pe_legal());
    // A broadcast row, replicated.
    let row = lay("((8); B@[PE])", &m, &[8], F32);
    assert_eq!(ok(&add, &[&a, &row], &a, &m), pe_legal());
    // A column [8,1] split like the rows of `a` is where it is needed.
    let col = lay("((4_PE, 2), (1))", &m, &[8, 1], F32);
    assert_eq!(ok(&add, &[&a, &col], &a, &m), pe_legal());
    // Every tensor replicated.
    assert_eq!(ok(&add, &[&b, &b], &b, &m), pe_legal());
    // Different strides, same positions: (2:2, 2:1) over PE is one digit of 4.
    let a2 = lay("((2_PE:2, 2_PE:1, 2), (8))", &m, &[8, 8], F32);
    assert_eq!(ok(&add, &[&a2, &a], &a, &m), pe_legal());
}

#[test]
fn positions_are_compared_on_the_logical_extent() {
    let m = machine("toy4");
    let add = Kernel::Binary(BinaryOp::Add);
    // 6 rows: two per PE on PEs 0..2; the output pads to 8 rows on 4 PEs. Rows 0..5
    // sit on the same PEs in both, so the kernel is legal.
    let a = lay("((3_PE, 2), (8))", &m, &[6, 8], F32);
    let out = lay("(6,8)/((4_PE, 2), (8))", &m, &[6, 8], F32);
    assert_eq!(ok(&add, &[&a, &a], &out, &m), pe_legal());
    // Three rows per PE instead: row 2 is on PE 0 in `a`, PE 1 in the output.
    let a3 = lay("(6,8)/((2_PE, 3), (8))", &m, &[6, 8], F32);
    let e = illegal(&add, &[&a3, &a], &out, &m, &[]);
    assert!(e.message.contains("input `a` splits its axis 0"), "{e}");
}

#[test]
fn mismatched_splits_name_the_relayout() {
    let m = machine("toy4");
    let add = Kernel::Binary(BinaryOp::Add);
    let a = lay("((4_PE, 2), (8))", &m, &[8, 8], F32);
    let b = lay("((8), (4_PE, 2))", &m, &[8, 8], F32);
    let e = illegal(&add, &[&a, &b], &a, &m, &["a", "b", "c"]);
    assert_eq!(
        e.kind,
        ErrorKind::Illegal {
            operand: 1,
            level: 0
        }
    );
    assert_eq!(
        e.message,
        "Binary Add: the output `c` is split over PE along its axis 0 = (4_PE:1, 2:8) but input \
         `b`'s axis 0 = (8:2) is not; Relayout `b` to split its axis 0 over PE like the output's \
         axis 0, or to replicate over PE (drop its PE sub-axes and add PE to B@: B@[PE])"
    );
    // Split on the same axis, differently.
    let a2 = lay("((2, 4_PE), (8))", &m, &[8, 8], F32);
    let e = illegal(&add, &[&a2, &a], &a, &m, &["a", "b", "c"]);
    assert_eq!(
        e.message,
        "Binary Add: input `a` splits its axis 0 = (2:8, 4_PE:1) over PE differently from the \
         output `c`'s axis 0 = (4_PE:1, 2:8); Relayout `a` to split its axis 0 over PE like the \
         output's axis 0, or to replicate over PE (drop its PE sub-axes and add PE to B@: B@[PE])"
    );
    // An input split where the output is not.
    let out = lay("((1_PE, 8), (8))", &m, &[8, 8], F32);
    let e = illegal(&add, &[&b, &b], &out, &m, &["a", "b", "c"]);
    assert!(
        e.message.starts_with(
            "Binary Add: input `a` is split over PE along its axis 1 = (4_PE:1, 2:1) but the output `c`'s axis 1 = (8:1) is not"
        ),
        "{e}"
    );
    // A broadcast operand that sits on one PE only.
    let col = lay("((1_PE), (8))", &m, &[1, 8], F32);
    let e = illegal(&add, &[&a, &col], &a, &m, &["a", "b", "c"]);
    assert_eq!(
        e.message,
        "Binary Add: the output `c` is split over PE along its axis 0 = (4_PE:1, 2:8), which input \
         `b` broadcasts, so every PE position needs all of `b`; Relayout `b` to replicate over PE \
         (drop its PE sub-axes and add PE to B@: B@[PE])"
    );
    // A replicated output needs replicated inputs.
    let rep = lay("((8), (8); B@[PE])", &m, &[8, 8], F32);
    let e = illegal(&add, &[&a, &rep], &rep, &m, &["a", "b", "c"]);
    assert_eq!(
        e.message,
        "Binary Add: the output `c` is replicated over PE but input `a` is split over PE along its \
         axis 0 = (4_PE:1, 2:8) (output axis 0); Relayout `a` to replicate over PE (drop its PE \
         sub-axes and add PE to B@: B@[PE]), or split the output's axis 0 over PE the same way"
    );
    // Default names: a, b, out.
    let e = illegal(&add, &[&a, &b], &a, &m, &[]);
    assert!(
        e.message.contains("the output `out`") && e.message.contains("input `b`"),
        "{e}"
    );
}

#[test]
fn matmul_row_split_a_with_replicated_b_is_legal_on_the_mab() {
    let m = mini();
    let a = lay("((2_L1B, 2_MAB, 2_PE), (4))", &m, &[8, 4], F32);
    let b = lay("((4), (6); B@[L1B,MAB,PE])", &m, &[4, 6], F32);
    let c = lay("((2_L1B, 2_MAB, 2_PE), (6))", &m, &[8, 6], F32);
    let want = Legality {
        partial: vec![],
        unit: Unit::Mab,
        unit_level: 1,
    };
    assert_eq!(ok(&Kernel::MatMul, &[&a, &b], &c, &m), want);
    // Among the PEs of a MAB anything goes: `a` splits the contraction over PE, the
    // output splits rows. The matrix unit gathers its operands from its 4 PEs.
    let a_k = lay("((2_L1B, 2_MAB, 2), (2_PE, 2))", &m, &[8, 4], F32);
    assert_eq!(ok(&Kernel::MatMul, &[&a_k, &b], &c, &m), want);
    // Without a matrix rate (f64 on mini) the vector unit runs it: the PE is the unit.
    let f64_ = |t: &str, s: &[u64]| lay(t, &m, s, DType::F64);
    let (a64, b64, c64) = (
        f64_("((2_L1B, 2_MAB, 2), (2_PE, 2))", &[8, 4]),
        f64_("((4), (6); B@[L1B,MAB,PE])", &[4, 6]),
        f64_("((2_L1B, 2_MAB, 2_PE), (6))", &[8, 6]),
    );
    let e = illegal(&Kernel::MatMul, &[&a64, &b64], &c64, &m, &["a", "b", "c"]);
    // The contraction is split over PE in `a` only: the output would need to be partial.
    assert_eq!(
        e.kind,
        ErrorKind::Illegal {
            operand: 2,
            level: 2
        }
    );
    assert!(e.message.contains("is split over PE"), "{e}");
    let c64b = f64_("((2_L1B, 2_MAB, 2), (6); B@[PE])", &[8, 6]);
    let a64b = f64_("((2_L1B, 2_MAB, 2), (4); B@[PE])", &[8, 4]);
    assert_eq!(
        ok(&Kernel::MatMul, &[&a64b, &b64], &c64b, &m),
        Legality {
            partial: vec![],
            unit: Unit::Pe,
            unit_level: 2
        }
    );
}

#[test]
fn contraction_split_identically_leaves_partial_sums() {
    let m = mini();
    let mm = Kernel::MatMul;
    // K split over L1B in both operands; the output replicated over L1B holds partials.
    let a = lay("((2_MAB, 4), (2_L1B, 2))", &m, &[8, 4], F32);
    let b = lay("((2_L1B, 2), (6))", &m, &[4, 6], F32);
    let c = lay("((2_MAB, 4), (6); B@[L1B])", &m, &[8, 6], F32);
    let l = ok(&mm, &[&a, &b], &c, &m);
    assert_eq!(l.partial, vec![0]);
    assert_eq!(l.unit, Unit::Mab);
    // Over the MAB itself.
    let a = lay("((2_L1B, 4), (2_MAB, 2))", &m, &[8, 4], F32);
    let b = lay("((2_MAB, 2), (6); B@[L1B])", &m, &[4, 6], F32);
    let c = lay("((2_L1B, 4), (6); B@[MAB])", &m, &[8, 6], F32);
    assert_eq!(ok(&mm, &[&a, &b], &c, &m).partial, vec![1]);
    // Over both levels at once.
    let a = lay("((8), (2_L1B, 2_MAB))", &m, &[8, 4], F32);
    let b = lay("((2_L1B, 2_MAB), (6))", &m, &[4, 6], F32);
    let c = lay("((8), (6); B@[L1B,MAB,PE])", &m, &[8, 6], F32);
    assert_eq!(ok(&mm, &[&a, &b], &c, &m).partial, vec![0, 1]);
    // A replicated `b` has every k: `a` alone decides the split.
    let b_rep = lay("((4), (6); B@[L1B,MAB,PE])", &m, &[4, 6], F32);
    assert_eq!(ok(&mm, &[&a, &b_rep], &c, &m).partial, vec![0, 1]);
    // BatchMatMul and ReduceAxes Add do the same.
    let a3 = lay("((2), (8), (2_L1B, 2))", &m, &[2, 8, 4], F32);
    let b3 = lay("((2), (2_L1B, 2), (6))", &m, &[2, 4, 6], F32);
    let c3 = lay("((2), (8), (6); B@[L1B])", &m, &[2, 8, 6], F32);
    assert_eq!(
        ok(&Kernel::BatchMatMul, &[&a3, &b3], &c3, &m).partial,
        vec![0]
    );
    let red = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes: vec![0],
        keep_dims: false,
    };
    let t = machine("toy4");
    let x = lay("((4_PE, 2), (4))", &t, &[8, 4], F32);
    let y = lay("((4); B@[PE])", &t, &[4], F32);
    assert_eq!(ok(&red, &[&x], &y, &t).partial, vec![0]);
}

#[test]
fn contraction_split_on_one_operand_names_the_relayout() {
    let m = mini();
    let a = lay("((2_L1B, 4), (4))", &m, &[8, 4], F32);
    let b = lay("((2_L1B, 2), (6))", &m, &[4, 6], F32);
    let c = lay("((2_L1B, 4), (6))", &m, &[8, 6], F32);
    let e = illegal(&Kernel::MatMul, &[&a, &b], &c, &m, &["a", "b", "c"]);
    assert_eq!(
        e.kind,
        ErrorKind::Illegal {
            operand: 1,
            level: 0
        }
    );
    assert_eq!(
        e.message,
        "MatMul: input `b` is split over L1B along its axis 0 (the contraction) but `a` is not; \
         Relayout `b` to replicate over L1B (drop its L1B sub-axes and add L1B to B@: \
         B@[L1B,MAB,PE]) or split `a`'s axis 1 over L1B the same way (as `b`'s axis 0 = (2_L1B:1, 2:6))"
    );
    // Split differently in the two operands.
    let a = lay("((8), (2, 2_L1B))", &m, &[8, 4], F32);
    let b = lay("((2_L1B, 2), (6))", &m, &[4, 6], F32);
    let c = lay("((8), (6); B@[L1B])", &m, &[8, 6], F32);
    let e = illegal(&Kernel::MatMul, &[&a, &b], &c, &m, &["a", "b", "c"]);
    assert_eq!(
        e.message,
        "MatMul: inputs `a` and `b` split the contraction over L1B differently (`a` axis 1 = (2:1, \
         2_L1B:1), `b` axis 0 = (2_L1B:1, 2:6)); Relayout `b` to split its axis 0 over L1B like \
         `a`'s axis 1, or replicate both over L1B"
    );
    // Split identically, but the output is not replicated: it cannot hold the partials.
    let a = lay("((8), (2_L1B, 2))", &m, &[8, 4], F32);
    let c = lay("((2_L1B, 4), (6))", &m, &[8, 6], F32);
    let e = illegal(&Kernel::MatMul, &[&a, &b], &c, &m, &["a", "b", "c"]);
    assert_eq!(
        e.kind,
        ErrorKind::Illegal {
            operand: 2,
            level: 0
        }
    );
    assert_eq!(
        e.message,
        "MatMul: the contraction (axis 1 of `a`, axis 0 of `b`) is split over L1B, so the output \
         would hold partial sums over L1B, but the output `c` is not replicated over L1B; Relayout \
         `c` to replicate over L1B (drop its L1B sub-axes and add L1B to B@: B@[L1B,MAB,PE]) and \
         Reduce it over L1B afterwards, or relayout the inputs so the contraction is not split over L1B"
    );
}

#[test]
fn reductions_partial_only_for_add() {
    let m = machine("toy4");
    let x = lay("((4_PE, 2), (4))", &m, &[8, 4], F32);
    let y = lay("((4); B@[PE])", &m, &[4], F32);
    let max = Kernel::ReduceAxes {
        op: ReduceKind::Max,
        axes: vec![0],
        keep_dims: false,
    };
    let e = illegal(&max, &[&x], &y, &m, &["x", "y"]);
    assert_eq!(
        e.message,
        "ReduceAxes Max: input `x` is split over PE along its axis 0 = (4_PE:1, 2:4), a reduced \
         axis; only Add and Mean reductions may leave partial results. Relayout `x` so axis 0 has no PE \
         sub-axis, or replicate it over PE (drop its PE sub-axes and add PE to B@: B@[PE])"
    );
    // Add, but the output split: no room for partials.
    let add = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes: vec![0],
        keep_dims: false,
    };
    let y_split = lay("((4_PE))", &m, &[4], F32);
    let e = illegal(&add, &[&x], &y_split, &m, &["x", "y"]);
    assert!(
        e.message.starts_with(
            "ReduceAxes Add: a reduced axis (axis 0 of `x`) is split over PE, so the output would hold partial results over PE"
        ),
        "{e}"
    );
    assert!(
        e.message
            .ends_with("or relayout `x` so its axis 0 has no PE sub-axis"),
        "{e}"
    );
    // Reducing an unsplit axis with the kept axis split is plain local work.
    let x = lay("((8), (4_PE))", &m, &[8, 4], F32);
    assert_eq!(ok(&max, &[&x], &y_split, &m), pe_legal());
}

#[test]
fn softmax_and_layernorm_need_the_whole_axis() {
    let m = machine("toy4");
    let x = lay("((4_PE), (8))", &m, &[4, 8], F32);
    let sm1 = Kernel::Softmax { axis: 1 };
    assert_eq!(ok(&sm1, &[&x], &x, &m), pe_legal());
    let sm0 = Kernel::Softmax { axis: 0 };
    let e = illegal(&sm0, &[&x], &x, &m, &["x", "y"]);
    assert_eq!(
        e.kind,
        ErrorKind::Illegal {
            operand: 0,
            level: 0
        }
    );
    assert_eq!(
        e.message,
        "Softmax: input `x` is split over PE along its axis 0 = (4_PE:1), the normalised axis; \
         every output element needs the whole axis on its PE. Relayout `x` so axis 0 has no PE \
         sub-axis (keep it in memory, W or Time), or replicate it over PE (drop its PE sub-axes \
         and add PE to B@: B@[PE])"
    );
    let ln = Kernel::LayerNorm { axis: 0, eps: 1e-5 };
    let e = illegal(&ln, &[&x], &x, &m, &["x", "y"]);
    assert!(
        e.message
            .starts_with("LayerNorm: input `x` is split over PE"),
        "{e}"
    );
    // The output split along the normalised axis while the input sits on one PE.
    let x1 = lay("((1_PE, 4), (8))", &m, &[4, 8], F32);
    let y = lay("((4), (4_PE, 2))", &m, &[4, 8], F32);
    let e = illegal(&sm1, &[&x1], &y, &m, &["x", "y"]);
    assert_eq!(
        e.kind,
        ErrorKind::Illegal {
            operand: 1,
            level: 0
        }
    );
    assert!(
        e.message.starts_with("Softmax: the output `y` is split over PE along its axis 1 = (4_PE:1, 2:1), the normalised axis"),
        "{e}"
    );
    // A replicated input has every row everywhere: the output may split anything.
    let xr = lay("((4), (8); B@[PE])", &m, &[4, 8], F32);
    assert_eq!(ok(&sm1, &[&xr], &y, &m), pe_legal());
}

#[test]
fn transpose_is_legal_when_local() {
    let m = machine("toy4");
    let t = Kernel::Transpose { perm: vec![1, 0] };
    let x = lay("((4_PE, 2), (4))", &m, &[8, 4], F32);
    let y = lay("((4), (4_PE, 2))", &m, &[4, 8], F32);
    assert_eq!(ok(&t, &[&x], &y, &m), pe_legal());
    let y2 = lay("((4_PE), (8))", &m, &[4, 8], F32);
    let e = illegal(&t, &[&x], &y2, &m, &["x", "y"]);
    assert!(e.message.starts_with("Transpose: "), "{e}");
    assert!(e.message.contains("Relayout `x`"), "{e}");
}

#[test]
fn layouts_that_do_not_fit_the_kernel() {
    let m = machine("toy4");
    let a = lay("((4_PE, 2), (8))", &m, &[8, 8], F32);
    let c = lay("((4_PE), (8))", &m, &[4, 8], F32);
    let e = check(
        &Kernel::Binary(BinaryOp::Add),
        &[&a, &a],
        &c,
        &m,
        &["a", "b", "c"],
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Layout);
    assert_eq!(
        e.message,
        "Binary Add: the output `c` has shape [4,8], but the inputs give [8,8]"
    );
    let e = check(&Kernel::MatMul, &[&a, &c], &a, &m, &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Contraction);
    // Bound to another machine.
    let other = mini();
    let x = lay("((2_L1B, 4), (8))", &other, &[8, 8], F32);
    let e = check(
        &Kernel::Binary(BinaryOp::Add),
        &[&a, &x],
        &a,
        &m,
        &["a", "b", "c"],
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Layout);
    assert!(
        e.message
            .contains("`b` is laid out for another machine than toy4"),
        "{e}"
    );
}

/// A scan over layouts of one input, the other operands fixed, answers as `is_legal`
/// does, alone and over a set of layouts (each level decided once per class of layouts
/// alike there): on random layouts of every operand of several kernels (a Reshape among
/// them, which the scan checks whole), each input in turn the one that varies.
#[test]
fn a_scan_over_one_input_agrees_with_is_legal() {
    let m = mini();
    let add = Kernel::Binary(BinaryOp::Add);
    let sum = Kernel::ReduceAxes {
        op: ReduceKind::Add,
        axes: vec![0],
        keep_dims: false,
    };
    // Kernel, input shapes, output shape.
    let cases: Vec<(Kernel, Vec<Vec<u64>>, Vec<u64>)> = vec![
        (add.clone(), vec![vec![4, 4], vec![4, 4]], vec![4, 4]),
        (add, vec![vec![4, 4], vec![1, 4]], vec![4, 4]),
        (Kernel::MatMul, vec![vec![4, 4], vec![4, 2]], vec![4, 2]),
        (sum, vec![vec![4, 4]], vec![4]),
        (Kernel::Softmax { axis: 1 }, vec![vec![4, 4]], vec![4, 4]),
        (
            Kernel::Transpose { perm: vec![1, 0] },
            vec![vec![4, 2]],
            vec![2, 4],
        ),
        (
            Kernel::Reshape { shape: vec![16] },
            vec![vec![4, 4]],
            vec![16],
        ),
    ];
    let (mut legal, mut illegal) = (0, 0);
    let mut rng = Rng(7);
    let layout = |rng: &mut Rng, s: &[u64]| loop {
        let text = random_layout(rng, s, s);
        if let Ok(l) = TensorLayout::parse(&text, &m, Some(s), F32) {
            return l;
        }
    };
    for (k, shapes, out_shape) in &cases {
        for _ in 0..60 {
            let ins: Vec<TensorLayout> = shapes.iter().map(|s| layout(&mut rng, s)).collect();
            let out = layout(&mut rng, out_shape);
            let refs: Vec<&TensorLayout> = ins.iter().collect();
            for hole in 0..ins.len() {
                let scan = Scan::new(k, &refs, hole, &out, &m);
                // Layouts of the hole as a planner scans them: a set, each level decided
                // once per class of layouts alike there.
                // Some twice: a kind of layouts is decided once.
                let mut cands: Vec<TensorLayout> =
                    (0..20).map(|_| layout(&mut rng, &shapes[hole])).collect();
                let again: Vec<TensorLayout> = cands.iter().step_by(3).cloned().collect();
                cands.extend(again);
                let set = ScanSet::new(&cands, &m);
                let mut memo = scan.memo(&set);
                for (i, c) in cands.iter().enumerate() {
                    let mut with = refs.clone();
                    with[hole] = c;
                    let want = is_legal(k, &with, &out, &m);
                    let what = || {
                        format!(
                            "{k:?}, input {hole} {} of {:?} -> {}",
                            c.canonical(),
                            refs.iter().map(|l| l.canonical()).collect::<Vec<_>>(),
                            out.canonical()
                        )
                    };
                    assert_eq!(scan.is_legal(c), want, "{}", what());
                    assert_eq!(
                        scan.is_legal_in(c, (&set, i), &mut memo),
                        want,
                        "{}",
                        what()
                    );
                    if want { legal += 1 } else { illegal += 1 }
                }
            }
        }
    }
    assert!(
        legal >= 300 && illegal >= 300,
        "{legal} legal, {illegal} illegal"
    );
}
