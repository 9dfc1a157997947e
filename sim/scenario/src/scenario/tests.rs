//! Printing kernel ops, spans and the knob and binding parsers.

use super::pretty;
use crate::program::{EntityRef as _, OpId, OpKind};
use crate::scenario::{self, Op, Source};
use std::collections::BTreeMap;

#[test]
fn kernel_ops_print_as_their_shorthands_and_the_generic_kernel_op_otherwise() {
    let text = r#"(name: "k", machine: Preset("toy4"),
        tensors: {"x": (dtype: F32, shape: "f32[16,8]", init: Ones),
                  "y": (dtype: F32, shape: "f32[16,8]"), "c": (dtype: F16, shape: "f16[16,8]"),
                  "z": (dtype: F32, shape: "f32[16,8]")},
        program: [Load(tensor: "x", layout: "((4_PE, 4:8), (8:1))"),
                  Kernel(kernel: Unary(Relu), inputs: ["x"], out: "y"),
                  Cast(input: "x", out: "c"), Unary(op: Copy, input: "x", out: "z")])"#;
    let sc = scenario::parse(text, "k.ron").unwrap();
    let src = Source {
        path: "k.ron".into(),
        text: text.into(),
    };
    let res = scenario::resolve(&sc, &src, None, &[], &BTreeMap::new()).unwrap();
    let (p, m) = (res.program, res.machine);
    let printed = pretty::program(&p, &m);
    // The generic form names its kernel's name ("Unary"): its shorthand has that name.
    assert_eq!(
        printed,
        "[\n    Load(tensor: \"x\", layout: \"((4_PE, 4:8), (8:1))\"),\n    \
         Unary(op: Relu, input: \"x\", out: \"y\"),\n    Cast(input: \"x\", out: \"c\"),\n    \
         Unary(op: Copy, input: \"x\", out: \"z\"),\n]"
    );
    assert_eq!(p.describe(OpId::new(2)), "Cast -> `c`");
    // A kernel whose operands fit no shorthand prints as the generic op.
    let mut odd = p.clone();
    let x = odd.tensor_id("x").unwrap();
    let y = odd.tensor_id("y").unwrap();
    odd.ops[OpId::new(1)].kind = OpKind::Kernel {
        kernel: mnsim_kernels::Kernel::Concat { axis: 0, inputs: 3 },
        inputs: vec![x],
        out: y,
    };
    let op = pretty::op(&odd, &m, &odd.ops[OpId::new(1)]);
    assert_eq!(
        pretty::op_text(&op),
        "Kernel(kernel: Concat(axis: 0, inputs: 3), inputs: [\"x\"], out: \"y\")"
    );
}

#[test]
fn none_fields_are_dropped_outside_strings_only() {
    assert_eq!(
        pretty::op_text(&Op::Relayout {
            tensor: "a: None, b".into(),
            layout: "L".into(),
            out: None,
            buffers: None,
            algorithm: None,
        }),
        "Relayout(tensor: \"a: None, b\", layout: \"L\")"
    );
}

use super::{closest, line_col, offset_of, parse_binds, parse_sets};

#[test]
fn positions_round_trip() {
    let t = "ab\nçd\n\nx";
    for off in [0, 1, 3, 5, 6, 7, 8] {
        let (l, c) = line_col(t, off);
        assert_eq!(offset_of(t, l, c), off, "{off}");
    }
    assert_eq!(offset_of(t, 99, 1), t.len());
    assert_eq!(offset_of(t, 1, 99), 2);
}

#[test]
fn binds_and_sets() {
    let b = parse_binds(&["batch=48".into(), " seq = 4_096".into()]).unwrap();
    assert_eq!(b["batch"], 48);
    assert_eq!(b["seq"], 4096);
    for bad in ["batch", "=3", "b=-1", "b=1.5", "1x=2", "b="] {
        assert!(parse_binds(&[bad.into()]).is_err(), "{bad}");
    }
    assert_eq!(
        parse_sets(&["a.b=2".into()]).unwrap(),
        vec![("a.b".into(), 2.0)]
    );
    assert!(parse_sets(&["a.b".into()]).is_err());
}

#[test]
fn suggestions() {
    assert_eq!(closest("tensorz", &["tensors", "program"]), Some("tensors"));
    assert_eq!(closest("zzz", &["tensors", "program"]), None);
}
