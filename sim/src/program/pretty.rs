//! The program printed back to RON, as a scenario's `program:` writes it: each op by
//! its named shorthand where one exists (`MatMul(a: .., b: .., out: ..)`, `Cast(..)`),
//! the generic `Kernel(kernel: .., inputs: .., out: ..)` otherwise; fields left at their
//! default (`None`) are not written. Parsing the text and lowering it again gives the
//! same program (`program/tests.rs`).

use super::{OpKind, Program, ProgramOp, TensorId};
use crate::scenario::{Buffers, Op, ReduceOp};
use mnsim_kernels::{Kernel, ReduceKind};

/// The `program: [...]` list, one op a line, indented by four spaces.
pub fn program(p: &Program) -> String {
    let mut out = String::from("[\n");
    for o in p.ops.values() {
        out.push_str("    ");
        out.push_str(&op_text(&op(p, o)));
        out.push_str(",\n");
    }
    out.push(']');
    out
}

/// One op's RON text, on one line.
pub fn op_text(op: &Op) -> String {
    crate::scenario::print::one_line(op)
}

/// `op` as the scenario file writes it: its shorthand when one names it, else the
/// generic `Kernel(...)`.
pub fn op(p: &Program, o: &ProgramOp) -> Op {
    let name = |t: &TensorId| p.name(*t).to_string();
    let opt = |t: &Option<TensorId>| t.as_ref().map(name);
    let layout = o.layout_text.clone();
    let buffers = o.buffers.map(Buffers::Count);
    match &o.kind {
        OpKind::Load { tensor } => Op::Load {
            tensor: name(tensor),
            layout: layout.unwrap_or_default(),
            buffers,
        },
        OpKind::Store { tensor } => Op::Store {
            tensor: name(tensor),
        },
        OpKind::Relayout { tensor, out } => Op::Relayout {
            tensor: name(tensor),
            layout: layout.unwrap_or_default(),
            out: opt(out),
            buffers,
        },
        OpKind::Broadcast { tensor, out } => Op::Broadcast {
            tensor: name(tensor),
            layout: layout.unwrap_or_default(),
            out: opt(out),
            buffers,
        },
        OpKind::Reduce {
            tensor,
            level,
            op,
            out,
        } => Op::Reduce {
            tensor: name(tensor),
            level: level.clone(),
            op: *op,
            layout,
            buffers,
            out: opt(out),
        },
        OpKind::Free { tensor } => Op::Free {
            tensor: name(tensor),
        },
        OpKind::Kernel {
            kernel,
            inputs,
            out,
        } => kernel_op(
            kernel,
            inputs.iter().map(name).collect(),
            name(out),
            o.name,
            layout,
            buffers,
        ),
    }
}

/// A kernel op as the scenario file writes it: the kernel's named shorthand when one
/// fits its operands and gives the op the name `name` (reports show it: `"Cast"` for
/// a conversion), else the generic `Kernel(...)`.
pub fn kernel_op(
    kernel: &Kernel,
    ins: Vec<String>,
    out: String,
    name: &str,
    layout: Option<String>,
    buffers: Option<Buffers>,
) -> Op {
    match shorthand(kernel, &ins, &out, name, &layout, &buffers) {
        Some(s) if s.name() == name => s,
        Some(_) | None => Op::Kernel {
            kernel: kernel.clone(),
            inputs: ins,
            out,
            layout,
            buffers,
        },
    }
}

/// Where a shorthand op writes its result: the output tensor, its layout and buffers.
struct Dest {
    out: String,
    layout: Option<String>,
    buffers: Option<Buffers>,
}

/// The operand of a one-input op, if `ins` holds exactly one.
fn one(ins: &[String]) -> Option<String> {
    match ins {
        [x] => Some(x.clone()),
        _ => None,
    }
}

/// The operands of a two-input op, if `ins` holds exactly two.
fn two(ins: &[String]) -> Option<(String, String)> {
    match ins {
        [a, b] => Some((a.clone(), b.clone())),
        _ => None,
    }
}

/// The named shorthand of a kernel op, if the kernel has one and the operands fit it.
fn shorthand(
    kernel: &Kernel,
    ins: &[String],
    out: &str,
    name: &str,
    layout: &Option<String>,
    buffers: &Option<Buffers>,
) -> Option<Op> {
    let d = Dest {
        out: out.to_string(),
        layout: layout.clone(),
        buffers: buffers.clone(),
    };
    match kernel {
        Kernel::Unary(_)
        | Kernel::ReduceAxes { .. }
        | Kernel::Softmax { .. }
        | Kernel::LayerNorm { .. }
        | Kernel::Transpose { .. }
        | Kernel::Clamp { .. }
        | Kernel::Elu { .. }
        | Kernel::Reshape { .. } => one_input_shorthand(kernel, one(ins)?, name, d),
        Kernel::Binary(_)
        | Kernel::MatMul
        | Kernel::BatchMatMul
        | Kernel::BiasAdd { .. }
        | Kernel::GeneralMatMul { .. } => two_input_shorthand(kernel, two(ins)?, d),
        Kernel::Select => select_shorthand(ins, d),
        Kernel::Concat { axis, inputs } => concat_shorthand(*axis, *inputs, ins, d),
        // No shorthand: the generic `Kernel(...)` form.
        Kernel::Slice { .. }
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_)
        | Kernel::Eltwise(_)
        | Kernel::Norm(_)
        | Kernel::Quant(_) => None,
    }
}

/// The shorthand of a kernel that reads one tensor, `input`.
fn one_input_shorthand(kernel: &Kernel, input: String, name: &str, d: Dest) -> Option<Op> {
    let Dest {
        out,
        layout,
        buffers,
    } = d;
    Some(match kernel {
        Kernel::Unary(op) if name == "Cast" && *op == mnsim_kernels::UnaryOp::Copy => Op::Cast {
            input,
            out,
            layout,
            buffers,
        },
        Kernel::Unary(op) => Op::Unary {
            op: *op,
            input,
            out,
            layout,
            buffers,
        },
        Kernel::ReduceAxes {
            op,
            axes,
            keep_dims,
        } => Op::ReduceAxes {
            op: reduce_op(*op),
            input,
            axes: axes.clone(),
            out,
            layout,
            buffers,
            keep_dims: *keep_dims,
        },
        Kernel::Softmax { axis } => Op::Softmax {
            input,
            axis: *axis,
            out,
            layout,
            buffers,
        },
        Kernel::LayerNorm { axis, eps } => Op::LayerNorm {
            input,
            axis: *axis,
            out,
            layout,
            buffers,
            eps: *eps,
        },
        Kernel::Transpose { perm } => Op::Transpose {
            input,
            perm: perm.clone(),
            out,
            layout,
            buffers,
        },
        Kernel::Clamp { min, max } => Op::Clamp {
            input,
            min: *min,
            max: *max,
            out,
            layout,
            buffers,
        },
        Kernel::Elu { alpha } => Op::Elu {
            input,
            alpha: *alpha,
            out,
            layout,
            buffers,
        },
        Kernel::Reshape { shape } => Op::Reshape {
            input,
            shape: shape.clone(),
            out,
            layout,
            buffers,
        },
        // Not one-input kernels: `shorthand` does not send these here.
        Kernel::Binary(_)
        | Kernel::MatMul
        | Kernel::BatchMatMul
        | Kernel::BiasAdd { .. }
        | Kernel::GeneralMatMul { .. }
        | Kernel::Select
        | Kernel::Concat { .. }
        | Kernel::Slice { .. }
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_)
        | Kernel::Eltwise(_)
        | Kernel::Norm(_)
        | Kernel::Quant(_) => return None,
    })
}

/// The shorthand of a kernel that reads two tensors, `a` and `b`.
fn two_input_shorthand(kernel: &Kernel, (a, b): (String, String), d: Dest) -> Option<Op> {
    let Dest {
        out,
        layout,
        buffers,
    } = d;
    Some(match kernel {
        Kernel::Binary(op) => Op::Binary {
            op: *op,
            a,
            b,
            out,
            layout,
            buffers,
        },
        Kernel::MatMul => Op::MatMul {
            a,
            b,
            out,
            layout,
            buffers,
        },
        Kernel::BatchMatMul => Op::BatchMatMul {
            a,
            b,
            out,
            layout,
            buffers,
        },
        Kernel::BiasAdd { axis } => Op::BiasAdd {
            input: a,
            bias: b,
            axis: *axis,
            out,
            layout,
            buffers,
        },
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => Op::GeneralMatMul {
            a,
            b,
            out,
            transpose_a: *transpose_a,
            transpose_b: *transpose_b,
            layout,
            buffers,
        },
        // Not two-input kernels: `shorthand` does not send these here.
        Kernel::Unary(_)
        | Kernel::ReduceAxes { .. }
        | Kernel::Softmax { .. }
        | Kernel::LayerNorm { .. }
        | Kernel::Transpose { .. }
        | Kernel::Clamp { .. }
        | Kernel::Elu { .. }
        | Kernel::Reshape { .. }
        | Kernel::Select
        | Kernel::Concat { .. }
        | Kernel::Slice { .. }
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_)
        | Kernel::Eltwise(_)
        | Kernel::Norm(_)
        | Kernel::Quant(_) => return None,
    })
}

/// `Select(cond: .., a: .., b: ..)`, if `ins` holds exactly three tensors.
fn select_shorthand(ins: &[String], d: Dest) -> Option<Op> {
    let [cond, a, b] = ins else { return None };
    Some(Op::Select {
        cond: cond.clone(),
        a: a.clone(),
        b: b.clone(),
        out: d.out,
        layout: d.layout,
        buffers: d.buffers,
    })
}

/// `Concat(inputs: [..], axis: ..)`, if `ins` holds the kernel's number of inputs.
fn concat_shorthand(axis: usize, inputs: usize, ins: &[String], d: Dest) -> Option<Op> {
    if inputs != ins.len() {
        return None;
    }
    Some(Op::Concat {
        inputs: ins.to_vec(),
        axis,
        out: d.out,
        layout: d.layout,
        buffers: d.buffers,
    })
}

/// The file's name of a kernel's reduction.
fn reduce_op(k: ReduceKind) -> ReduceOp {
    match k {
        ReduceKind::Add => ReduceOp::Add,
        ReduceKind::Max => ReduceOp::Max,
        ReduceKind::Min => ReduceOp::Min,
        ReduceKind::Prod => ReduceOp::Prod,
        ReduceKind::Mean => ReduceOp::Mean,
        ReduceKind::L1 => ReduceOp::L1,
        ReduceKind::L2 => ReduceOp::L2,
    }
}
