//! The program printed back to RON, as a scenario's `program:` writes it: each op by
//! its named shorthand where one exists (`MatMul(a: .., b: .., out: ..)`, `Cast(..)`),
//! the generic `Kernel(kernel: .., inputs: .., out: ..)` otherwise; fields left at their
//! default (`None`) are not written. Parsing the text and lowering it again gives the
//! same program (`scenario/tests.rs`).

use super::{Buffers, Op, ReduceOp};
use crate::program::{OpKind, Program, ProgramOp, TensorId};
use mnsim_arch::Machine;
use mnsim_kernels::{Kernel, ReduceKind};

/// The `program: [...]` list of `p` on machine `m`, one op a line, indented by four
/// spaces.
pub fn program(p: &Program, m: &Machine) -> String {
    let mut out = String::from("[\n");
    for o in p.ops.values() {
        out.push_str("    ");
        out.push_str(&op_text(&op(p, m, o)));
        out.push_str(",\n");
    }
    out.push(']');
    out
}

/// One op's RON text, on one line.
pub fn op_text(op: &Op) -> String {
    crate::scenario::print::one_line(op)
}

/// `op` as the scenario file writes it (a Reduce's level by its name on `m`): its
/// shorthand when one names it, else the generic `Kernel(...)`.
pub fn op(p: &Program, m: &Machine, o: &ProgramOp) -> Op {
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
        OpKind::Gather {
            table,
            indices,
            out,
        } => Op::Gather {
            table: name(table),
            indices: name(indices),
            out: name(out),
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
            level: (m.levels.get(level.index())).map_or_else(String::new, |l| l.name.clone()),
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

/// The named shorthand of a kernel op, if the kernel has one and the operands fit it.
fn shorthand(
    kernel: &Kernel,
    ins: &[String],
    out: &str,
    name: &str,
    layout: &Option<String>,
    buffers: &Option<Buffers>,
) -> Option<Op> {
    let out = out.to_string();
    let layout = layout.clone();
    let buffers = buffers.clone();
    let one = || match ins {
        [x] => Some(x.clone()),
        _ => None,
    };
    let two = || match ins {
        [a, b] => Some((a.clone(), b.clone())),
        _ => None,
    };
    Some(match kernel {
        Kernel::Unary(op) if name == "Cast" && *op == mnsim_kernels::UnaryOp::Copy => Op::Cast {
            input: one()?,
            out,
            layout,
            buffers,
        },
        Kernel::Unary(op) => Op::Unary {
            op: *op,
            input: one()?,
            out,
            layout,
            buffers,
        },
        Kernel::Binary(op) => {
            let (a, b) = two()?;
            Op::Binary {
                op: *op,
                a,
                b,
                out,
                layout,
                buffers,
            }
        }
        Kernel::MatMul => {
            let (a, b) = two()?;
            Op::MatMul {
                a,
                b,
                out,
                layout,
                buffers,
            }
        }
        Kernel::BatchMatMul => {
            let (a, b) = two()?;
            Op::BatchMatMul {
                a,
                b,
                out,
                layout,
                buffers,
            }
        }
        Kernel::ReduceAxes {
            op,
            axes,
            keep_dims,
        } => Op::ReduceAxes {
            op: reduce_op(*op),
            input: one()?,
            axes: axes.clone(),
            out,
            layout,
            buffers,
            keep_dims: *keep_dims,
        },
        Kernel::Softmax { axis } => Op::Softmax {
            input: one()?,
            axis: *axis,
            out,
            layout,
            buffers,
        },
        Kernel::LayerNorm { axis, eps } => Op::LayerNorm {
            input: one()?,
            axis: *axis,
            out,
            layout,
            buffers,
            eps: *eps,
        },
        Kernel::Transpose { perm } => Op::Transpose {
            input: one()?,
            perm: perm.clone(),
            out,
            layout,
            buffers,
        },
        Kernel::Select => {
            let [cond, a, b] = ins else { return None };
            Op::Select {
                cond: cond.clone(),
                a: a.clone(),
                b: b.clone(),
                out,
                layout,
                buffers,
            }
        }
        Kernel::Clamp { min, max } => Op::Clamp {
            input: one()?,
            min: *min,
            max: *max,
            out,
            layout,
            buffers,
        },
        Kernel::Elu { alpha } => Op::Elu {
            input: one()?,
            alpha: *alpha,
            out,
            layout,
            buffers,
        },
        Kernel::BiasAdd { axis } => {
            let (input, bias) = two()?;
            Op::BiasAdd {
                input,
                bias,
                axis: *axis,
                out,
                layout,
                buffers,
            }
        }
        Kernel::GeneralMatMul {
            transpose_a,
            transpose_b,
        } => {
            let (a, b) = two()?;
            Op::GeneralMatMul {
                a,
                b,
                out,
                transpose_a: *transpose_a,
                transpose_b: *transpose_b,
                layout,
                buffers,
            }
        }
        Kernel::Reshape { shape } => Op::Reshape {
            input: one()?,
            shape: shape.clone(),
            out,
            layout,
            buffers,
        },
        Kernel::Concat { axis, inputs } => {
            if *inputs != ins.len() {
                return None;
            }
            Op::Concat {
                inputs: ins.to_vec(),
                axis: *axis,
                out,
                layout,
                buffers,
            }
        }
        // No shorthand: the generic `Kernel(...)` form.
        Kernel::Slice { .. }
        | Kernel::Expand { .. }
        | Kernel::DynamicSlice { .. }
        | Kernel::DynamicUpdateSlice { .. }
        | Kernel::Conv(_)
        | Kernel::Pool(_)
        | Kernel::Interp(_)
        | Kernel::Eltwise(_)
        | Kernel::Norm(_)
        | Kernel::Quant(_) => return None,
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
