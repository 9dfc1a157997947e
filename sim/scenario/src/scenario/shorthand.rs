//! The one table of the file's kernel shorthands: each names a kernel of the kernels
//! crate, the fields that hold its parameters (the kernel's own, by the same names) and
//! its operands. From it come the [`Shorthand`] enum, reading a shorthand into a
//! [`KernelOp`] and writing a kernel op back in its shorthand. Three shorthands do not
//! fit the table's pattern and are written out below it: `ReduceAxes` (the file names
//! its reduction with the tree Reduce's `ReduceOp`), `Concat` (a list of inputs, whose
//! length is the kernel's) and `Cast` (a `Copy` into another dtype).

use super::op::{KernelOp, Op};
use super::text::OpText;
use super::{AlgorithmName, Buffers};
use crate::program::ReduceOp;
use mnsim_kernels::{Kernel, ReduceKind, UnaryOp};

/// The table: `Name { params } [operands] <=> (kernel)`, where `kernel` is the kernels
/// crate's variant written with the params (read as a pattern and as an expression);
/// then the shorthands written out by hand, with their operands' fields, and the arms
/// that read every other form of the file.
macro_rules! shorthands {
    ($($name:ident { $($param:ident),* } [$($operand:ident),+] <=> $kernel:tt;)+
     @by_hand: $($special:ident [$($soperand:literal),+],)+
     @read_the_others: { $($other:tt)* }) => {
        /// A named shorthand of a kernel op, as the file writes it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Shorthand {
            $($name,)+
            $($special,)+
        }

        impl Shorthand {
            /// Its name in the file (and the op's name in reports).
            pub fn name(self) -> &'static str {
                match self {
                    $(Shorthand::$name => stringify!($name),)+
                    $(Shorthand::$special => stringify!($special),)+
                }
            }

            /// The field that names operand `k` (the last field for any later one).
            pub fn operand(self, k: usize) -> &'static str {
                let fields: &[&'static str] = match self {
                    $(Shorthand::$name => &[$(stringify!($operand)),+],)+
                    $(Shorthand::$special => &[$($soperand),+],)+
                };
                fields.get(k).or(fields.last()).copied().unwrap_or("inputs")
            }

            /// The shorthand named `name`.
            pub fn named(name: &str) -> Option<Shorthand> {
                match name {
                    $(stringify!($name) => Some(Shorthand::$name),)+
                    $(stringify!($special) => Some(Shorthand::$special),)+
                    _ => None,
                }
            }
        }

        impl From<OpText> for Op {
            /// An op as the file writes it, read.
            #[allow(unused_parens)]
            fn from(t: OpText) -> Op {
                match t {
                    $(OpText::$name {
                        $($param,)* $($operand,)+ out, layout, buffers, algorithm
                    } => {
                        Op::Kernel(KernelOp {
                            kernel: $kernel,
                            inputs: vec![$($operand),+],
                            out,
                            layout,
                            buffers,
                            algorithm,
                            written: Some(Shorthand::$name),
                        })
                    })+
                    $($other)*
                }
            }
        }

        /// Kernel op `k` in table shorthand `s`, if `s` is one and its kernel and
        /// operands fit it.
        #[allow(unused_parens)]
        fn write_table(s: Shorthand, k: &KernelOp) -> Option<OpText> {
            match (s, &k.kernel, k.inputs.as_slice()) {
                $((Shorthand::$name, $kernel, [$($operand),+]) => Some(OpText::$name {
                    $($param: $param.clone(),)*
                    $($operand: $operand.clone(),)+
                    out: k.out.clone(),
                    layout: k.layout.clone(),
                    buffers: k.buffers.clone(),
                    algorithm: k.algorithm,
                }),)+
                _ => None,
            }
        }
    };
}

shorthands! {
    Unary { op } [input] <=> (Kernel::Unary(op));
    Binary { op } [a, b] <=> (Kernel::Binary(op));
    MatMul {} [a, b] <=> (Kernel::MatMul);
    BatchMatMul {} [a, b] <=> (Kernel::BatchMatMul);
    Softmax { axis } [input] <=> (Kernel::Softmax { axis });
    LayerNorm { axis, eps } [input] <=> (Kernel::LayerNorm { axis, eps });
    Transpose { perm } [input] <=> (Kernel::Transpose { perm });
    Select {} [cond, a, b] <=> (Kernel::Select);
    Clamp { min, max } [input] <=> (Kernel::Clamp { min, max });
    Elu { alpha } [input] <=> (Kernel::Elu { alpha });
    BiasAdd { axis } [input, bias] <=> (Kernel::BiasAdd { axis });
    GeneralMatMul { transpose_a, transpose_b } [a, b]
        <=> (Kernel::GeneralMatMul { transpose_a, transpose_b });
    Reshape { shape } [input] <=> (Kernel::Reshape { shape });
    @by_hand:
    ReduceAxes ["input"],
    Concat ["inputs"],
    Cast ["input"],
    @read_the_others: {
        OpText::ReduceAxes {
            op,
            input,
            axes,
            keep_dims,
            out,
            layout,
            buffers,
            algorithm,
        } => by_hand(
            Kernel::ReduceAxes {
                op: op.kind(),
                axes,
                keep_dims,
            },
            (vec![input], out, layout, buffers, algorithm),
            Shorthand::ReduceAxes,
        ),
        OpText::Concat {
            inputs,
            axis,
            out,
            layout,
            buffers,
            algorithm,
        } => by_hand(
            Kernel::Concat {
                axis,
                inputs: inputs.len(),
            },
            (inputs, out, layout, buffers, algorithm),
            Shorthand::Concat,
        ),
        OpText::Cast {
            input,
            out,
            layout,
            buffers,
            algorithm,
        } => by_hand(
            Kernel::Unary(UnaryOp::Copy),
            (vec![input], out, layout, buffers, algorithm),
            Shorthand::Cast,
        ),
        OpText::Kernel {
            kernel,
            inputs,
            out,
            layout,
            buffers,
            algorithm,
        } => Op::Kernel(KernelOp {
            kernel,
            inputs,
            out,
            layout,
            buffers,
            algorithm,
            written: None,
        }),
        OpText::Load {
            tensor,
            layout,
            buffers,
        } => Op::Load {
            tensor,
            layout,
            buffers,
        },
        OpText::Gather {
            table,
            indices,
            out,
            layout,
            buffers,
        } => Op::Gather {
            table,
            indices,
            out,
            layout,
            buffers,
        },
        OpText::Store { tensor } => Op::Store { tensor },
        OpText::Relayout {
            tensor,
            layout,
            out,
            buffers,
            algorithm,
        } => Op::Relayout {
            tensor,
            layout,
            out,
            buffers,
            algorithm,
        },
        OpText::Broadcast {
            tensor,
            layout,
            out,
            buffers,
            algorithm,
        } => Op::Broadcast {
            tensor,
            layout,
            out,
            buffers,
            algorithm,
        },
        OpText::Reduce {
            tensor,
            level,
            op,
            layout,
            buffers,
            out,
            algorithm,
        } => Op::Reduce {
            tensor,
            level,
            op,
            layout,
            buffers,
            out,
            algorithm,
        },
        OpText::Free { tensor } => Op::Free { tensor },
    }
}

/// What a kernel op's text holds beside its kernel: inputs, out, layout, buffers and
/// algorithm.
type KernelFields = (
    Vec<String>,
    String,
    Option<String>,
    Option<Buffers>,
    Option<AlgorithmName>,
);

/// The kernel op of a shorthand written by hand.
fn by_hand(
    kernel: Kernel,
    (inputs, out, layout, buffers, algorithm): KernelFields,
    s: Shorthand,
) -> Op {
    Op::Kernel(KernelOp {
        kernel,
        inputs,
        out,
        layout,
        buffers,
        algorithm,
        written: Some(s),
    })
}

impl From<Op> for OpText {
    fn from(op: Op) -> OpText {
        match op {
            Op::Load {
                tensor,
                layout,
                buffers,
            } => OpText::Load {
                tensor,
                layout,
                buffers,
            },
            Op::Gather {
                table,
                indices,
                out,
                layout,
                buffers,
            } => OpText::Gather {
                table,
                indices,
                out,
                layout,
                buffers,
            },
            Op::Store { tensor } => OpText::Store { tensor },
            Op::Relayout {
                tensor,
                layout,
                out,
                buffers,
                algorithm,
            } => OpText::Relayout {
                tensor,
                layout,
                out,
                buffers,
                algorithm,
            },
            Op::Broadcast {
                tensor,
                layout,
                out,
                buffers,
                algorithm,
            } => OpText::Broadcast {
                tensor,
                layout,
                out,
                buffers,
                algorithm,
            },
            Op::Reduce {
                tensor,
                level,
                op,
                layout,
                buffers,
                out,
                algorithm,
            } => OpText::Reduce {
                tensor,
                level,
                op,
                layout,
                buffers,
                out,
                algorithm,
            },
            Op::Free { tensor } => OpText::Free { tensor },
            Op::Kernel(k) => written(k),
        }
    }
}

/// Kernel op `k` in the shorthand it is written as, when its kernel and operands fit
/// it; else in the generic `Kernel(...)` form.
fn written(k: KernelOp) -> OpText {
    in_shorthand(&k).unwrap_or_else(|| generic(k))
}

impl KernelOp {
    /// Whether the op's kernel and operands fit the shorthand it is written as (one
    /// that does not is printed in the generic form).
    pub fn fits_shorthand(&self) -> bool {
        in_shorthand(self).is_some()
    }
}

/// Kernel op `k` in the shorthand it is written as, if it is and its kernel and
/// operands fit it.
fn in_shorthand(k: &KernelOp) -> Option<OpText> {
    let s = k.written?;
    if let Some(t) = write_table(s, k) {
        return Some(t);
    }
    let one = || match k.inputs.as_slice() {
        [x] => Some(x.clone()),
        _ => None,
    };
    match (s, &k.kernel) {
        (
            Shorthand::ReduceAxes,
            Kernel::ReduceAxes {
                op,
                axes,
                keep_dims,
            },
        ) => Some(OpText::ReduceAxes {
            op: reduce_op(*op),
            input: one()?,
            axes: axes.clone(),
            keep_dims: *keep_dims,
            out: k.out.clone(),
            layout: k.layout.clone(),
            buffers: k.buffers.clone(),
            algorithm: k.algorithm,
        }),
        (Shorthand::Concat, Kernel::Concat { axis, inputs }) if *inputs == k.inputs.len() => {
            Some(OpText::Concat {
                inputs: k.inputs.clone(),
                axis: *axis,
                out: k.out.clone(),
                layout: k.layout.clone(),
                buffers: k.buffers.clone(),
                algorithm: k.algorithm,
            })
        }
        (Shorthand::Cast, Kernel::Unary(UnaryOp::Copy)) => Some(OpText::Cast {
            input: one()?,
            out: k.out.clone(),
            layout: k.layout.clone(),
            buffers: k.buffers.clone(),
            algorithm: k.algorithm,
        }),
        _ => None,
    }
}

/// Kernel op `k` in the generic `Kernel(...)` form.
fn generic(k: KernelOp) -> OpText {
    OpText::Kernel {
        kernel: k.kernel,
        inputs: k.inputs,
        out: k.out,
        layout: k.layout,
        buffers: k.buffers,
        algorithm: k.algorithm,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// One op of every form the file has, as the printer writes it.
    const FORMS: &[&str] = &[
        r#"Unary(op: Relu, input: "x", out: "y")"#,
        r#"Binary(op: Add, a: "x", b: "w", out: "y")"#,
        r#"MatMul(a: "x", b: "w", out: "y")"#,
        r#"BatchMatMul(a: "x", b: "w", out: "y", layout: "$l")"#,
        r#"Softmax(input: "x", axis: 1, out: "y")"#,
        r#"LayerNorm(input: "x", axis: 1, out: "y", eps: 0.001)"#,
        r#"Transpose(input: "x", perm: [1, 0], out: "y")"#,
        r#"Select(cond: "c", a: "x", b: "w", out: "y")"#,
        r#"Clamp(input: "x", min: 0.0, max: 6.0, out: "y")"#,
        r#"Elu(input: "x", alpha: 0.5, out: "y")"#,
        r#"BiasAdd(input: "x", bias: "b", axis: 1, out: "y", buffers: 2)"#,
        r#"GeneralMatMul(a: "x", b: "w", out: "y", transpose_a: false, transpose_b: true)"#,
        r#"Reshape(input: "x", shape: [4, 2], out: "y")"#,
        r#"ReduceAxes(op: Max, input: "x", axes: [1], keep_dims: true, out: "y")"#,
        r#"Concat(inputs: ["x", "w", "v"], axis: 0, out: "y")"#,
        r#"Cast(input: "x", out: "y")"#,
        r#"MatMul(a: "x", b: "w", out: "y", algorithm: "tree")"#,
        r#"Concat(inputs: ["x", "w"], axis: 0, out: "y", algorithm: "ring")"#,
        r#"Kernel(kernel: Softmax(axis: 0), inputs: ["x"], out: "y")"#,
        r#"Load(tensor: "x", layout: "((4_PE, 4:8), (8:1))")"#,
        r#"Reduce(tensor: "x", level: "PE", op: Max)"#,
        r#"Reduce(tensor: "x", level: "Board", op: Add, out: "y", algorithm: "tree")"#,
        r#"Relayout(tensor: "x", layout: "$l", algorithm: "ring")"#,
        r#"Broadcast(tensor: "x", layout: "$l", out: "y", algorithm: "direct")"#,
    ];

    #[test]
    fn every_form_reads_into_one_kernel_op_and_prints_back_the_same() {
        let opts = ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
        let mut seen = Vec::new();
        for text in FORMS {
            let op: Op = opts
                .from_str(text)
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(crate::scenario::print::one_line(&op), *text);
            if let Op::Kernel(k) = &op {
                let name = text.split('(').next().unwrap_or("");
                assert_eq!(
                    k.written.map(Shorthand::name),
                    Shorthand::named(name).map(Shorthand::name),
                    "{text}"
                );
                assert_eq!(k.inputs.len(), k.kernel.arity(), "{text}");
                assert!(k.written.is_none() || k.fits_shorthand(), "{text}");
                seen.extend(k.written);
            }
        }
        // Every shorthand of the table has a form above.
        for s in seen.clone() {
            assert_eq!(Shorthand::named(s.name()), Some(s));
        }
        assert_eq!(seen.len(), 18);
    }

    #[test]
    fn a_kernel_op_that_does_not_fit_its_shorthand_prints_generic() {
        let mut k = KernelOp::generic(Kernel::MatMul, vec!["x".into()], "y".into());
        k.written = Some(Shorthand::MatMul);
        assert!(!k.fits_shorthand());
        let text = crate::scenario::print::one_line(&Op::Kernel(k));
        assert_eq!(text, r#"Kernel(kernel: MatMul, inputs: ["x"], out: "y")"#);
        let mut c = KernelOp::generic(Kernel::Unary(UnaryOp::Relu), vec!["x".into()], "y".into());
        c.written = Some(Shorthand::Cast);
        assert!(!c.fits_shorthand());
    }
}
