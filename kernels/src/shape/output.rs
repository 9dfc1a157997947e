//! Output shapes: what each kernel gives on inputs of given shapes, or why it cannot run
//! (each family's rule, [`crate::KernelFamily::output_shape`], after the arity check).

use super::err;
use crate::kernel::{ErrorKind, Kernel, KernelError};

fn arity(k: &Kernel, n: usize) -> Result<(), KernelError> {
    if n != k.arity() {
        return Err(err(
            ErrorKind::Arity,
            format!("{k} takes {} input(s), got {n}", k.arity()),
        ));
    }
    Ok(())
}

/// The shape of the output of `k` on inputs of shapes `inputs`.
///
/// Errors: the wrong number of inputs; a MatMul operand that is not a matrix, or a
/// BatchMatMul pair of different ranks or batch axes; contraction lengths that
/// disagree; an axis out of range or repeated; a `perm` that is not a permutation;
/// Binary shapes that do not broadcast; a Slice whose bounds do not name every axis or
/// do not fit it (`start ≤ limit ≤` length, `stride ≥ 1`).
pub fn output_shape(k: &Kernel, inputs: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
    arity(k, inputs.len())?;
    if inputs.is_empty() {
        return Err(err(
            ErrorKind::Arity,
            format!("{k} needs at least one input"),
        ));
    }
    k.with_family(|f| f.output_shape(inputs))
}
