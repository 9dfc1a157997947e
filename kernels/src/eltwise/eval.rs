//! One output element of an elementwise kernel.

use super::{Eltwise, dropout, scalar_index};

impl Eltwise {
    /// One output element at `idx` (`in_shapes` the inputs' shapes).
    pub fn eval(
        &self,
        idx: &[u64],
        fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
        in_shapes: &[&[u64]],
    ) -> f64 {
        let r = idx.len();
        let at = |j: usize, f: &mut dyn FnMut(usize, &[u64]) -> f64| -> f64 {
            let s = in_shapes[j];
            let off = r - s.len();
            let i: Vec<u64> = s
                .iter()
                .enumerate()
                .map(|(a, &d)| if d == 1 { 0 } else { idx[off + a] })
                .collect();
            f(j, &i)
        };
        match self {
            Eltwise::Act(a) => a.apply(fetch(0, idx)),
            Eltwise::Backward { act, use_dst } => {
                let v = fetch(0, idx);
                fetch(1, idx) * act.grad(v, *use_dst)
            }
            Eltwise::PRelu => {
                let x = fetch(0, idx);
                if x >= 0.0 { x } else { at(1, fetch) * x }
            }
            Eltwise::PReluBackward => {
                let (x, dy) = (fetch(0, idx), fetch(2, idx));
                if x > 0.0 { dy } else { at(1, fetch) * dy }
            }
            Eltwise::PReluSlope => {
                let x = fetch(0, idx);
                if x > 0.0 { 0.0 } else { x * fetch(1, idx) }
            }
            Eltwise::Compare(c) => {
                let a = at(0, fetch);
                c.apply(a, at(1, fetch))
            }
            Eltwise::GenIndex { axis } => idx[*axis] as f64,
            Eltwise::Dropout => {
                let x = fetch(0, idx);
                let one = |j: usize| scalar_index(in_shapes[j]);
                let (seed, offset, p) = (fetch(1, &one(1)), fetch(2, &one(2)), fetch(3, &one(3)));
                let mut l = 0u64;
                for (i, d) in idx.iter().zip(in_shapes[0]) {
                    l = l.wrapping_mul(*d).wrapping_add(*i);
                }
                dropout(x, seed, offset, p, l)
            }
            Eltwise::Normalize {
                stats,
                params,
                eps,
                affine,
            } => {
                let st: Vec<u64> = stats.iter().map(|&a| idx[a]).collect();
                let x = fetch(0, idx);
                let (mean, var) = (fetch(1, &st), fetch(2, &st));
                let n = (x - mean) / (var + eps).sqrt();
                if *affine {
                    let p: Vec<u64> = params.iter().map(|&a| idx[a]).collect();
                    n * fetch(3, &p) + fetch(4, &p)
                } else {
                    n
                }
            }
            Eltwise::BatchNormBackward { axis, eps, affine } => {
                let c = [idx[*axis]];
                let count = in_shapes[0]
                    .iter()
                    .enumerate()
                    .filter(|(a, _)| a != axis)
                    .fold(1u64, |p, (_, &d)| p.saturating_mul(d))
                    .max(1) as f64;
                let (x, dy) = (fetch(0, idx), fetch(1, idx));
                let (mean, var) = (fetch(2, &c), fetch(3, &c));
                let (a, b) = (fetch(4, &c), fetch(5, &c));
                let r = 1.0 / (var + eps).sqrt();
                let g = if *affine { fetch(6, &c) } else { 1.0 };
                let xhat = (x - mean) * r;
                g * r * (dy - a / count - xhat * b / count)
            }
            Eltwise::Mix { w } => w * fetch(0, idx) + (1.0 - w) * fetch(1, idx),
        }
    }
}
