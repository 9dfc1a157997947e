//! The one mapping from the file's kernel ops to the kernels crate: every scenario op
//! that computes is one `mnsim_kernels::Kernel` with its inputs and output.

use super::Op;

impl Op {
    /// The kernel a kernel op runs, its inputs and its output (`None` for transfers):
    /// the one mapping from the file's kernel ops to the kernels crate.
    pub fn kernel(&self) -> Option<(mnsim_kernels::Kernel, Vec<&str>, &str)> {
        use mnsim_kernels::Kernel;
        Some(match self {
            Op::Unary { op, input, out, .. } => {
                (Kernel::Unary(*op), vec![input.as_str()], out.as_str())
            }
            Op::Binary { op, a, b, out, .. } => (
                Kernel::Binary(*op),
                vec![a.as_str(), b.as_str()],
                out.as_str(),
            ),
            Op::MatMul { a, b, out, .. } => {
                (Kernel::MatMul, vec![a.as_str(), b.as_str()], out.as_str())
            }
            Op::BatchMatMul { a, b, out, .. } => (
                Kernel::BatchMatMul,
                vec![a.as_str(), b.as_str()],
                out.as_str(),
            ),
            Op::ReduceAxes {
                op,
                input,
                axes,
                out,
                keep_dims,
                ..
            } => (
                Kernel::ReduceAxes {
                    op: op.kind(),
                    axes: axes.clone(),
                    keep_dims: *keep_dims,
                },
                vec![input.as_str()],
                out.as_str(),
            ),
            Op::Softmax {
                input, axis, out, ..
            } => (
                Kernel::Softmax { axis: *axis },
                vec![input.as_str()],
                out.as_str(),
            ),
            Op::LayerNorm {
                input,
                axis,
                out,
                eps,
                ..
            } => (
                Kernel::LayerNorm {
                    axis: *axis,
                    eps: *eps,
                },
                vec![input.as_str()],
                out.as_str(),
            ),
            Op::Transpose {
                input, perm, out, ..
            } => (
                Kernel::Transpose { perm: perm.clone() },
                vec![input.as_str()],
                out.as_str(),
            ),
            Op::Select {
                cond, a, b, out, ..
            } => (
                Kernel::Select,
                vec![cond.as_str(), a.as_str(), b.as_str()],
                out.as_str(),
            ),
            Op::Clamp {
                input,
                min,
                max,
                out,
                ..
            } => (
                Kernel::Clamp {
                    min: *min,
                    max: *max,
                },
                vec![input.as_str()],
                out.as_str(),
            ),
            Op::Elu {
                input, alpha, out, ..
            } => (
                Kernel::Elu { alpha: *alpha },
                vec![input.as_str()],
                out.as_str(),
            ),
            Op::BiasAdd {
                input,
                bias,
                axis,
                out,
                ..
            } => (
                Kernel::BiasAdd { axis: *axis },
                vec![input.as_str(), bias.as_str()],
                out.as_str(),
            ),
            Op::GeneralMatMul {
                a,
                b,
                out,
                transpose_a,
                transpose_b,
                ..
            } => (
                Kernel::GeneralMatMul {
                    transpose_a: *transpose_a,
                    transpose_b: *transpose_b,
                },
                vec![a.as_str(), b.as_str()],
                out.as_str(),
            ),
            Op::Reshape {
                input, shape, out, ..
            } => (
                Kernel::Reshape {
                    shape: shape.clone(),
                },
                vec![input.as_str()],
                out.as_str(),
            ),
            Op::Cast { input, out, .. } => (
                Kernel::Unary(mnsim_kernels::UnaryOp::Copy),
                vec![input.as_str()],
                out.as_str(),
            ),
            Op::Concat {
                inputs, axis, out, ..
            } => (
                Kernel::Concat {
                    axis: *axis,
                    inputs: inputs.len(),
                },
                inputs.iter().map(String::as_str).collect(),
                out.as_str(),
            ),
            Op::Kernel {
                kernel,
                inputs,
                out,
                ..
            } => (
                kernel.clone(),
                inputs.iter().map(String::as_str).collect(),
                out.as_str(),
            ),
            Op::Load { .. }
            | Op::Gather { .. }
            | Op::Store { .. }
            | Op::Relayout { .. }
            | Op::Broadcast { .. }
            | Op::Reduce { .. }
            | Op::Free { .. } => return None,
        })
    }
}
