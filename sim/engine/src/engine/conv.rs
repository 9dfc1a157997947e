//! Convolutions in functional mode (`Kernel::Conv`, all three passes): each operand's
//! element is found by a sum of per-axis terms (`contract::Terms`), and each output
//! shard lists, once per output position of every spatial axis, the window taps that
//! read inside the input with both operands' terms — instead of locating both operands
//! through their layouts for every multiply-add of every output element.
//!
//! The values are those of the per-element evaluation (`mnsim_kernels::conv::eval`) bit
//! for bit: every output element is the sum of the two operands' products over this
//! shard's share of the reduced variables, in `f64`, from `0.0`, in the share's order
//! (the channel — or batch — variable slowest, then the spatial ones, the last fastest,
//! taps outside the input skipped), then rounded to the output dtype once.
//!
//! Only called from `dataplane/kernel_values.rs`'s kernel move, with its `Functional` token.

use super::Resident;
use super::contract::{OutCells, Terms};
use super::dataplane::{Functional, LmPtr};
use mnsim_arch::DType;
use mnsim_kernels::elem;
use mnsim_kernels::{Conv, ConvPass, Kernel};

/// Both operands' `(PE, byte)` terms of one variable's value.
#[derive(Clone, Copy, Default)]
struct Pair {
    pe: [usize; 2],
    off: [usize; 2],
}

impl Pair {
    #[inline]
    fn add(self, o: Pair) -> Pair {
        Pair {
            pe: [self.pe[0] + o.pe[0], self.pe[1] + o.pe[1]],
            off: [self.off[0] + o.off[0], self.off[1] + o.off[1]],
        }
    }
}

/// A convolution's operands and sizes, ready for every shard.
pub(super) struct ConvPlan {
    conv: Conv,
    ops: [Terms; 2],
    /// Spatial axes; first spatial axis of the data and of the weights; the data's batch
    /// and channel axes; the weights' `O` and `I` axes.
    d: usize,
    ds: usize,
    ws: usize,
    db: usize,
    dc: usize,
    wo: usize,
    wi: usize,
    /// Input channels and output channels per group.
    cg: u64,
    og: u64,
    /// Per spatial axis: the input's and the forward output's sizes.
    input: Vec<u64>,
    output: Vec<u64>,
}

impl ConvPlan {
    /// The plan for `k` when it is a convolution whose operands' tables fit; `None`
    /// otherwise (the kernel is evaluated element by element).
    pub(super) fn new(
        k: &Kernel,
        inputs: &[(&Resident, DType)],
        in_rt: &[&[u64]],
        wb: usize,
    ) -> Option<ConvPlan> {
        let Kernel::Conv(c) = k else {
            return None;
        };
        if inputs.len() != 2 || in_rt.len() != 2 {
            return None;
        }
        let g = c.geometry(in_rt).ok()?;
        let d = c.strides.len();
        let r = d + 2;
        if c.groups == 0 || [&c.dilations, &c.pads_begin].iter().any(|v| v.len() != d) {
            return None;
        }
        let (db, dc, ds) = c.data_axes(r);
        let (wo, wi, ws) = c.weight_axes(r);
        let a = Terms::new(inputs[0].0, inputs[0].1, wb, in_rt[0])?;
        let b = Terms::new(inputs[1].0, inputs[1].1, wb, in_rt[1])?;
        if a.pe.len() != r || b.pe.len() != r {
            return None;
        }
        Some(ConvPlan {
            conv: c.clone(),
            ops: [a, b],
            d,
            ds,
            ws,
            db,
            dc,
            wo,
            wi,
            cg: g.c / c.groups,
            og: g.o / c.groups,
            input: g.input,
            output: g.output,
        })
    }

    /// Operand `j`'s terms of axis `g` at `v`.
    #[inline]
    fn term(&self, j: usize, g: usize, v: u64) -> Option<(usize, usize)> {
        let t = &self.ops[j];
        let v = usize::try_from(v).ok()?;
        Some((*t.pe.get(g)?.get(v)?, *t.off.get(g)?.get(v)?))
    }

    /// Both operands' terms: operand 0's axis `g0` at `v0`, operand 1's `g1` at `v1`.
    #[inline]
    fn pair(&self, (g0, v0): (usize, u64), (g1, v1): (usize, u64)) -> Option<Pair> {
        let (p0, o0) = self.term(0, g0, v0)?;
        let (p1, o1) = self.term(1, g1, v1)?;
        Some(Pair {
            pe: [p0, p1],
            off: [o0, o1],
        })
    }

    /// Spatial axis `i`'s taps for the output's position `u` on it: per value `t` of
    /// the share (in order), the operands' terms where the tap reads inside, as `eval`
    /// decides.
    fn taps(&self, i: usize, u: u64, share: &[u64]) -> Option<Vec<Pair>> {
        let c = &self.conv;
        let (s, dl, pb) = (
            c.strides[i] as i128,
            c.dilations[i] as i128,
            c.pads_begin[i] as i128,
        );
        let inside = |p: u64, k: u64| -> Option<u64> {
            let v = p as i128 * s + k as i128 * dl - pb;
            (0..self.input[i] as i128).contains(&v).then_some(v as u64)
        };
        let (dsi, wsi) = (self.ds + i, self.ws + i);
        let mut out = Vec::with_capacity(share.len());
        for &t in share {
            let p = match c.pass {
                ConvPass::Forward => inside(u, t).map(|v| self.pair((dsi, v), (wsi, t))),
                ConvPass::BackwardData => {
                    let num = u as i128 + pb - t as i128 * dl;
                    (num >= 0 && s != 0 && num % s == 0 && num / s < self.output[i] as i128)
                        .then(|| self.pair((dsi, (num / s) as u64), (wsi, t)))
                }
                ConvPass::BackwardWeights => inside(t, u).map(|v| self.pair((dsi, v), (dsi, t))),
            };
            if let Some(p) = p {
                out.push(p?);
            }
        }
        Some(out)
    }

    /// The output element `idx`'s fixed terms (with the replicated levels' part at
    /// `own`) and its slowest variable's terms per value of `share0`.
    fn outer(&self, idx: &[u64], own: &[u64], share0: &[u64], out: &mut Vec<Pair>) -> Option<Pair> {
        let (cg, og) = (self.cg, self.og);
        let mut fixed = Pair {
            pe: [self.ops[0].own_pe(own), self.ops[1].own_pe(own)],
            off: [self.ops[0].base, self.ops[1].base],
        };
        out.clear();
        let at = |a: usize| idx.get(a).copied();
        match self.conv.pass {
            ConvPass::Forward => {
                let (n, o) = (at(self.db)?, at(self.dc)?);
                let grp = o.checked_div(og)?;
                fixed = fixed.add(self.pair((self.db, n), (self.wo, o))?);
                for &t in share0 {
                    out.push(self.pair((self.dc, channel(grp, cg, t)?), (self.wi, t))?);
                }
            }
            ConvPass::BackwardData => {
                let (n, ch) = (at(self.db)?, at(self.dc)?);
                let grp = ch.checked_div(cg)?;
                fixed = fixed.add(self.pair((self.db, n), (self.wi, ch % cg))?);
                for &t in share0 {
                    let o = channel(grp, og, t)?;
                    out.push(self.pair((self.dc, o), (self.wo, o))?);
                }
            }
            ConvPass::BackwardWeights => {
                let (o, ci) = (at(self.wo)?, at(self.wi)?);
                let grp = o.checked_div(og)?;
                fixed = fixed.add(self.pair((self.dc, channel(grp, cg, ci)?), (self.dc, o))?);
                for &t in share0 {
                    out.push(self.pair((self.db, t), (self.db, t))?);
                }
            }
        }
        Some(fixed)
    }

    /// Computes one output shard into `buf` (its region, zeroed): the shard's position
    /// is `own`, `share` the values of each reduced variable it sums over, in order.
    /// Returns the words the shard holds and its real elements, as the per-element walk
    /// counts them; `None` where a table does not reach (then the caller evaluates the
    /// shard element by element, which writes every real element again).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn shard(
        &self,
        _: Functional,
        lms: &[LmPtr],
        shard: &mnsim_arch::layout::Shard<'_>,
        own: &[u64],
        share: &[Vec<u64>],
        out_rt: &[u64],
        o: &OutCells,
        buf: &mut [u8],
    ) -> Option<(u64, u64)> {
        let d = self.d;
        if share.len() != d + 1 {
            return None;
        }
        // The output's first spatial axis.
        let first = match self.conv.pass {
            ConvPass::Forward | ConvPass::BackwardData => self.ds,
            ConvPass::BackwardWeights => self.ws,
        };
        // Per spatial axis, the taps of each output position (built on first use).
        let mut taps: Vec<Vec<Option<Vec<Pair>>>> = (0..d)
            .map(|i| {
                let n = out_rt.get(first + i).copied().unwrap_or(0);
                vec![None; usize::try_from(n).unwrap_or(0)]
            })
            .collect();
        let (mut words, mut valid) = (0u64, 0u64);
        let mut failed = false;
        let (mut outer, mut flat, mut next) = (Vec::new(), Vec::new(), Vec::new());
        shard.for_each(|idx, a, w, t| {
            words += (w == 0) as u64;
            if failed || !idx.iter().zip(out_rt).all(|(i, n)| i < n) {
                return;
            }
            let v = (|| {
                let fixed = self.outer(idx, own, &share[0], &mut outer)?;
                // The window's taps, every spatial axis' in order (the last fastest).
                flat.clear();
                flat.push(Pair::default());
                for i in 0..d {
                    let u = *idx.get(first + i)?;
                    let slot = taps.get_mut(i)?.get_mut(usize::try_from(u).ok()?)?;
                    if slot.is_none() {
                        *slot = Some(self.taps(i, u, &share[1 + i])?);
                    }
                    let list = slot.as_ref()?;
                    next.clear();
                    for &f in &flat {
                        next.extend(list.iter().map(|&p| f.add(p)));
                    }
                    std::mem::swap(&mut flat, &mut next);
                }
                self.sum(lms, fixed, &outer, &flat)
            })();
            match v {
                Some(v) => {
                    let dst = (t as usize * o.fp + a as usize) * o.wb + w as usize * o.eb;
                    elem::write(o.dtype, v, &mut buf[dst..dst + o.eb]);
                    valid += 1;
                }
                None => failed = true,
            }
        });
        (!failed).then_some((words, valid))
    }

    /// `Σ_outer Σ_flat a · b` from `0.0`, in order, both operands read at `fixed` plus
    /// the terms.
    fn sum(&self, lms: &[LmPtr], fixed: Pair, outer: &[Pair], flat: &[Pair]) -> Option<f64> {
        let [a, b] = &self.ops;
        match (a.dtype, b.dtype) {
            (DType::F32, DType::F32) => sum_with(lms, fixed, outer, flat, [4, 4], f32le, f32le),
            (da, db) => sum_with(
                lms,
                fixed,
                outer,
                flat,
                [a.eb, b.eb],
                |x| elem::read(da, x),
                |x| elem::read(db, x),
            ),
        }
    }
}

/// Channel `t` of group `grp`, `per` channels to a group.
#[inline]
fn channel(grp: u64, per: u64, t: u64) -> Option<u64> {
    grp.checked_mul(per)?.checked_add(t)
}

#[inline(always)]
fn f32le(b: &[u8]) -> f64 {
    f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64
}

#[inline(always)]
fn sum_with(
    lms: &[LmPtr],
    fixed: Pair,
    outer: &[Pair],
    flat: &[Pair],
    eb: [usize; 2],
    ra: impl Fn(&[u8]) -> f64,
    rb: impl Fn(&[u8]) -> f64,
) -> Option<f64> {
    let mut acc = 0.0f64;
    for &c in outer {
        let base = fixed.add(c);
        for &e in flat {
            let p = base.add(e);
            let (la, lb) = (lms.get(p.pe[0])?, lms.get(p.pe[1])?);
            // SAFETY: operands are resident regions; a kernel writes only its output's
            // region, allocated apart from every resident one.
            let (x, y) = unsafe { (la.bytes(p.off[0], eb[0]), lb.bytes(p.off[1], eb[1])) };
            acc += ra(x) * rb(y);
        }
    }
    Some(acc)
}
