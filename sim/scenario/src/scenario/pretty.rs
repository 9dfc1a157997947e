//! The program printed back to RON, as a scenario's `program:` writes it: each op by
//! its named shorthand where one exists (`MatMul(a: .., b: .., out: ..)`, `Cast(..)`),
//! the generic `Kernel(kernel: .., inputs: .., out: ..)` otherwise; fields left at their
//! default (`None`) are not written. Parsing the text and lowering it again gives the
//! same program (`scenario/tests.rs`).

use super::{Buffers, KernelOp, Op, Shorthand};
use crate::program::{OpKind, Program, ProgramOp, TensorId};
use mnsim_arch::Machine;
use mnsim_kernels::Kernel;

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
    let algorithm = o.algorithm.map(super::AlgorithmName);
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
            algorithm,
        },
        OpKind::Broadcast { tensor, out } => Op::Broadcast {
            tensor: name(tensor),
            layout: layout.unwrap_or_default(),
            out: opt(out),
            buffers,
            algorithm,
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
            algorithm,
        },
        OpKind::Free { tensor } => Op::Free {
            tensor: name(tensor),
        },
        OpKind::Kernel {
            kernel,
            inputs,
            out,
        } => {
            let mut k = kernel_op(
                kernel,
                inputs.iter().map(name).collect(),
                name(out),
                o.name,
                layout,
                buffers,
            );
            k.set_algorithm(o.algorithm);
            k
        }
    }
}

/// A kernel op written, as the file will print it, in the shorthand named `name` (reports
/// show the op's name: `"Cast"` for a conversion) when one is and fits its kernel and
/// operands, else in the generic `Kernel(...)`.
pub fn kernel_op(
    kernel: &Kernel,
    ins: Vec<String>,
    out: String,
    name: &str,
    layout: Option<String>,
    buffers: Option<Buffers>,
) -> Op {
    let mut k = KernelOp {
        kernel: kernel.clone(),
        inputs: ins,
        out,
        layout,
        buffers,
        algorithm: None,
        written: Shorthand::named(name),
    };
    if !k.fits_shorthand() {
        k.written = None;
    }
    Op::Kernel(k)
}
