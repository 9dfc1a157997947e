//! The output shapes of the elementwise kernels (with their shape errors) and where
//! each input axis takes its index.

use super::Eltwise;
use crate::kernel::{ErrorKind, KernelError, fmt_dims};
use crate::shape::{AxisSource, InputMap, broadcast};

fn err(kind: ErrorKind, msg: impl Into<String>) -> KernelError {
    KernelError::new(kind, msg)
}

impl Eltwise {
    /// The output shape on inputs of shapes `s` (`s.len()` is the arity).
    pub fn output_shape(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let x = s[0];
        match self {
            Eltwise::Act(_) => Ok(x.to_vec()),
            Eltwise::Backward { .. } | Eltwise::PReluSlope | Eltwise::Mix { .. } => {
                self.check_same(s, 1)?;
                Ok(x.to_vec())
            }
            Eltwise::Compare(_) => self.broadcast_against(x, s[1], 1),
            Eltwise::PRelu | Eltwise::PReluBackward => self.prelu_shape(s),
            Eltwise::GenIndex { axis } => self.gen_index_shape(x, *axis),
            Eltwise::Dropout => self.dropout_shape(s),
            Eltwise::Normalize { stats, params, .. } => self.normalize_shape(s, stats, params),
            Eltwise::BatchNormBackward { axis, .. } => self.batch_norm_backward_shape(s, *axis),
        }
    }

    /// An error unless input `j` has the shape of `x` (`s[0]`).
    fn check_same(&self, s: &[&[u64]], j: usize) -> Result<(), KernelError> {
        let l = self.label();
        let x = s[0];
        if s[j] != x {
            return Err(err(
                ErrorKind::Broadcast,
                format!(
                    "{l}: `{}` {} must have the shape of `{}` {}",
                    self.operand(j),
                    fmt_dims(s[j]),
                    self.operand(0),
                    fmt_dims(x)
                ),
            ));
        }
        Ok(())
    }

    /// The numpy broadcast of input 0's shape `a` and input `j`'s shape `b`.
    fn broadcast_against(&self, a: &[u64], b: &[u64], j: usize) -> Result<Vec<u64>, KernelError> {
        let l = self.label();
        broadcast(a, b).ok_or_else(|| {
            err(
                ErrorKind::Broadcast,
                format!(
                    "{l}: `{}` {} does not broadcast against `{}` {} (aligned to the trailing axes, each pair of sizes must be equal or one of them 1)",
                    self.operand(j),
                    fmt_dims(b),
                    self.operand(0),
                    fmt_dims(a)
                ),
            )
        })
    }

    /// PRelu's and PReluBackward's output shape: `x`'s, the slope broadcasting to it
    /// (it may not enlarge it), and PReluBackward's `dy` of the same shape.
    fn prelu_shape(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let l = self.label();
        let x = s[0];
        let o = self.broadcast_against(x, s[1], 1)?;
        if o != x {
            return Err(err(
                ErrorKind::Broadcast,
                format!(
                    "{l}: the slope {} does not broadcast to `x` {} without enlarging it",
                    fmt_dims(s[1]),
                    fmt_dims(x)
                ),
            ));
        }
        if let Eltwise::PReluBackward = self {
            self.check_same(s, 2)?;
        }
        Ok(o)
    }

    /// GenIndex's output shape: `x`'s, which must have the axis `axis`.
    fn gen_index_shape(&self, x: &[u64], axis: usize) -> Result<Vec<u64>, KernelError> {
        let l = self.label();
        if axis >= x.len() {
            return Err(err(
                ErrorKind::Axis,
                format!(
                    "{l}: axis {axis} is out of range for shape {} (axes 0..{})",
                    fmt_dims(x),
                    x.len()
                ),
            ));
        }
        Ok(x.to_vec())
    }

    /// Dropout's output shape: `x`'s, every other input holding one element.
    fn dropout_shape(&self, s: &[&[u64]]) -> Result<Vec<u64>, KernelError> {
        let l = self.label();
        for (j, t) in s.iter().enumerate().skip(1) {
            if crate::shape::checked_numel(t) != Some(1) {
                return Err(err(
                    ErrorKind::Broadcast,
                    format!(
                        "{l}: `{}` must hold one element, got shape {}",
                        self.operand(j),
                        fmt_dims(t)
                    ),
                ));
            }
        }
        Ok(s[0].to_vec())
    }

    /// Normalize's output shape: `x`'s, the statistics of `x`'s shape along `stats` and
    /// gamma and beta along `params`.
    fn normalize_shape(
        &self,
        s: &[&[u64]],
        stats: &[usize],
        params: &[usize],
    ) -> Result<Vec<u64>, KernelError> {
        let l = self.label();
        let x = s[0];
        let along = |axes: &[usize]| -> Result<Vec<u64>, KernelError> {
            let ok = axes.windows(2).all(|w| w[0] < w[1]) && axes.iter().all(|&a| a < x.len());
            if !ok {
                return Err(err(
                    ErrorKind::Axis,
                    format!(
                        "{l}: the axes {axes:?} must be ascending, distinct axes of `x` {} (axes 0..{})",
                        fmt_dims(x),
                        x.len()
                    ),
                ));
            }
            Ok(axes.iter().map(|&a| x[a]).collect())
        };
        let want = [along(stats)?, along(params)?];
        for (j, t) in s.iter().enumerate().skip(1) {
            let w = &want[(j - 1) / 2];
            if *t != w.as_slice() {
                return Err(err(
                    ErrorKind::Broadcast,
                    format!(
                        "{l}: `{}` must have shape {} (`x` {} along axes {:?}), got {}",
                        self.operand(j),
                        fmt_dims(w),
                        fmt_dims(x),
                        if j < 3 { stats } else { params },
                        fmt_dims(t)
                    ),
                ));
            }
        }
        Ok(x.to_vec())
    }

    /// BatchNormBackward's output shape: `x`'s, `dy` of the same shape and every other
    /// input a vector along the channel axis `axis`.
    fn batch_norm_backward_shape(
        &self,
        s: &[&[u64]],
        axis: usize,
    ) -> Result<Vec<u64>, KernelError> {
        let l = self.label();
        let x = s[0];
        if axis >= x.len() {
            return Err(err(
                ErrorKind::Axis,
                format!(
                    "{l}: the channel axis {axis} is out of range for `x` {} (axes 0..{})",
                    fmt_dims(x),
                    x.len()
                ),
            ));
        }
        self.check_same(s, 1)?;
        for (j, t) in s.iter().enumerate().skip(2) {
            if t.len() != 1 || t[0] != x[axis] {
                return Err(err(
                    ErrorKind::Broadcast,
                    format!(
                        "{l}: `{}` must be a vector along the channel axis {axis} of `x` {} ({} elements), got shape {}",
                        self.operand(j),
                        fmt_dims(x),
                        x[axis],
                        fmt_dims(t)
                    ),
                ));
            }
        }
        Ok(x.to_vec())
    }

    /// Per input, where each axis takes its index (`out` is the output shape).
    pub fn index_map(&self, s: &[&[u64]], out: &[u64]) -> Vec<InputMap> {
        let r = out.len();
        let numpy = |sh: &[u64]| InputMap {
            axes: sh
                .iter()
                .enumerate()
                .map(|(a, &d)| {
                    let h = r - sh.len() + a;
                    if d == 1 && out[h] != 1 {
                        AxisSource::Broadcast
                    } else {
                        AxisSource::Out(h)
                    }
                })
                .collect(),
        };
        match self {
            Eltwise::Normalize { stats, params, .. } => {
                let mut m = vec![numpy(s[0])];
                for j in 1..s.len() {
                    let axes = if j < 3 { stats } else { params };
                    m.push(InputMap {
                        axes: axes.iter().map(|&a| AxisSource::Out(a)).collect(),
                    });
                }
                m
            }
            Eltwise::BatchNormBackward { axis, .. } => {
                let mut m = vec![numpy(s[0]), numpy(s[1])];
                for _ in 2..s.len() {
                    m.push(InputMap {
                        axes: vec![AxisSource::Out(*axis)],
                    });
                }
                m
            }
            _ => s.iter().map(|sh| numpy(sh)).collect(),
        }
    }
}
