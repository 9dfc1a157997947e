//! Contractions in functional mode (`MatMul`, `BatchMatMul`, `GeneralMatMul`): an output
//! shard gathers the rows of `a` and the columns of `b` it needs once, as `f64`, then
//! computes its block of results with a tight loop — instead of reading both operands
//! through their layouts for every multiply-add of every output element.
//!
//! The values are those of the per-element evaluation (`mnsim_kernels::eval_share`) bit
//! for bit: every output element is the sum of `a · b` over this shard's share of the
//! contraction, in `f64`, from `0.0`, in the share's order, then rounded to the output
//! dtype once. The blocked loop only computes several such sums side by side (one
//! accumulator per output element; nothing is reassociated, no fused multiply-add).
//!
//! A layout places an element by a sum of one contribution per logical axis (the PE
//! position on each split level, the LM word, the slot, the step: `AxisTables`), so the
//! PE index and the LM byte of an operand element are sums of per-axis terms: a row is
//! its fixed axes' terms plus, per contraction index, the contraction axis' term.
//!
//! Only called from `dataplane/kernel_values.rs`'s kernel move, with its `Functional` token.

use super::Resident;
use super::dataplane::{Functional, LmPtr};
use mnsim_arch::DType;
use mnsim_kernels::Kernel;
use mnsim_kernels::elem;
use mnsim_kernels::shape::AxisSource;

/// `f64` values gathered per block: at most this many for the columns of `b`, and as
/// many for the rows of `a` (16 MiB per thread at most together, kept by the thread
/// from one shard to the next).
const BLOCK_VALUES: usize = 1 << 20;

thread_local! {
    /// Each thread's gathered panels of `b` and rows of `a`, reused across shards.
    static BLOCKS: std::cell::RefCell<(Vec<f64>, Vec<f64>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Output columns computed side by side (one panel of `b`).
const LANES: usize = 8;

/// Where an operand's elements lie: each axis' terms of the PE index and of the LM byte
/// per index value (a layout places an element by a sum of one contribution per axis).
pub(super) struct Terms {
    /// `pe[g][v]`, `off[g][v]`: axis `g` at index `v`.
    pub pe: Vec<Vec<usize>>,
    pub off: Vec<Vec<usize>>,
    /// The replicated levels, read at the computing PE's own position, with the weight
    /// of each in the PE index.
    replicated: Vec<(usize, usize)>,
    /// First byte of the operand's region.
    pub base: usize,
    pub dtype: DType,
    pub eb: usize,
}

impl Terms {
    /// The tables of resident `r` read as `dtype` (`wb` bytes per word), for indices
    /// below the run-time extents `rt`; `None` if a size overflows or `rt` does not fit.
    pub(super) fn new(r: &Resident, dtype: DType, wb: usize, rt: &[u64]) -> Option<Terms> {
        let l = &r.layout;
        let levels = l.levels();
        let nl = levels.len();
        // PE index: position per addressable level, mixed radix over the fan-outs.
        let mut mult = vec![0usize; nl];
        let mut m = 1usize;
        for i in (0..nl).rev() {
            mult[i] = m;
            m = m.checked_mul(usize::try_from(levels[i].fanout).ok()?)?;
        }
        let tables = l.axis_tables();
        let width = tables.width();
        let eb = dtype.bytes() as usize;
        let fp = l.footprint_words() as usize;
        let padded = l.padded_shape();
        if rt.len() != padded.len() {
            return None;
        }
        let mut scratch = vec![0u64; width];
        let mut idx = vec![0u64; padded.len()];
        let (mut pe, mut off) = (Vec::new(), Vec::new());
        for (g, &n) in padded.iter().enumerate() {
            // Indices read are below the run-time extent, which the padded one bounds.
            if rt[g] > n {
                return None;
            }
            let n = usize::try_from(n).ok()?;
            let (mut p, mut o) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for v in 0..n {
                idx[g] = v as u64;
                // Every other axis at 0 contributes nothing (its digits are all 0).
                tables.locate(&idx, &mut scratch);
                let mut pv = 0usize;
                for (i, lv) in levels.iter().enumerate() {
                    if !lv.replicated {
                        pv = pv.checked_add((scratch[i] as usize).checked_mul(mult[i])?)?;
                    }
                }
                let (a, w, t) = (
                    scratch[nl] as usize,
                    scratch[nl + 1] as usize,
                    scratch[nl + 2] as usize,
                );
                let ov = t
                    .checked_mul(fp)?
                    .checked_add(a)?
                    .checked_mul(wb)?
                    .checked_add(w.checked_mul(eb)?)?;
                p.push(pv);
                o.push(ov);
            }
            idx[g] = 0;
            pe.push(p);
            off.push(o);
        }
        let replicated = levels
            .iter()
            .enumerate()
            .filter(|(_, lv)| lv.replicated)
            .map(|(i, _)| (i, mult[i]))
            .collect();
        Some(Terms {
            pe,
            off,
            replicated,
            base: usize::try_from(r.offset).ok()?.checked_mul(wb)?,
            dtype,
            eb,
        })
    }

    /// The PE index's part from the replicated levels, read at position `own`.
    pub(super) fn own_pe(&self, own: &[u64]) -> usize {
        self.replicated
            .iter()
            .map(|&(i, m)| own[i] as usize * m)
            .sum()
    }
}

/// One operand: where each of its axes takes its index from, and its [`Terms`].
struct Operand {
    axes: Vec<AxisSource>,
    t: Terms,
    /// The operand's axis indexed by the output's row (`a`) or column (`b`), and by the
    /// contraction.
    free: usize,
    k: usize,
}

impl Operand {
    fn new(
        r: &Resident,
        dtype: DType,
        wb: usize,
        axes: Vec<AxisSource>,
        nb: usize,
        free_out: usize,
        rt: &[u64],
    ) -> Option<Operand> {
        if axes.len() != rt.len() {
            return None;
        }
        let t = Terms::new(r, dtype, wb, rt)?;
        let free = axes.iter().position(|&s| s == AxisSource::Out(free_out))?;
        let k = axes.iter().position(|&s| s == AxisSource::Reduced(0))?;
        // Every other axis is a batch axis of the output or broadcast.
        for (g, &s) in axes.iter().enumerate() {
            match s {
                _ if g == free || g == k => {}
                AxisSource::Broadcast => {}
                AxisSource::Out(o) if o < nb => {}
                _ => return None,
            }
        }
        Some(Operand { axes, t, free, k })
    }

    /// The PE index and byte of the operand's element at output batch index `batch`
    /// (values per output batch axis), free index 0 and contraction index 0, read from
    /// the PE at `own` on replicated levels.
    fn origin(&self, batch: &[u64], own: &[u64]) -> (usize, usize) {
        let mut pe = self.t.own_pe(own);
        let mut off = self.t.base;
        for (g, &s) in self.axes.iter().enumerate() {
            let v = match s {
                AxisSource::Out(o) if g != self.free => batch[o] as usize,
                _ => 0,
            };
            pe += self.t.pe[g][v];
            off += self.t.off[g][v];
        }
        (pe, off)
    }
}

/// A contraction's two operands, ready for every shard.
pub(super) struct Contraction {
    ops: [Operand; 2],
    rank: usize,
}

impl Contraction {
    /// The plan for `k` when it is a matrix contraction of two operands whose every axis
    /// is a batch axis, broadcast, the output's row or column, or the contraction;
    /// `None` otherwise (the kernel is evaluated element by element).
    pub(super) fn new(
        k: &Kernel,
        inputs: &[(&Resident, DType)],
        in_rt: &[&[u64]],
        out_rank: usize,
        wb: usize,
    ) -> Option<Contraction> {
        use AxisSource::{Broadcast, Out, Reduced};
        if inputs.len() != 2 || in_rt.len() != 2 || out_rank < 2 {
            return None;
        }
        let nb = out_rank - 2;
        // The index maps exactly as `eval_share` reads the operands.
        let (ma, mb) = match k {
            Kernel::MatMul | Kernel::BatchMatMul => {
                let mut a: Vec<AxisSource> = (0..nb).map(Out).collect();
                let mut b = a.clone();
                a.extend([Out(nb), Reduced(0)]);
                b.extend([Reduced(0), Out(nb + 1)]);
                (a, b)
            }
            Kernel::GeneralMatMul {
                transpose_a,
                transpose_b,
            } => {
                let side = |s: &[u64], t: bool, first: AxisSource, second: AxisSource| {
                    let rs = s.len();
                    let off = nb.checked_sub(rs.checked_sub(2)?)?;
                    let mut m: Vec<AxisSource> = (0..rs - 2)
                        .map(|a| if s[a] == 1 { Broadcast } else { Out(off + a) })
                        .collect();
                    if t {
                        m.extend([second, first]);
                    } else {
                        m.extend([first, second]);
                    }
                    Some(m)
                };
                (
                    side(in_rt[0], *transpose_a, Out(nb), Reduced(0))?,
                    side(in_rt[1], *transpose_b, Reduced(0), Out(nb + 1))?,
                )
            }
            _ => return None,
        };
        let a = Operand::new(inputs[0].0, inputs[0].1, wb, ma, nb, nb, in_rt[0])?;
        let b = Operand::new(inputs[1].0, inputs[1].1, wb, mb, nb, nb + 1, in_rt[1])?;
        Some(Contraction {
            ops: [a, b],
            rank: out_rank,
        })
    }
}

/// How the output shard's cells lie in its buffer.
pub(super) struct OutCells {
    /// Words per `Time` step, bytes per word and per element, the element's dtype.
    pub fp: usize,
    pub wb: usize,
    pub eb: usize,
    pub dtype: DType,
}

impl Contraction {
    /// Computes one output shard into `buf` (its region, zeroed): the shard's position
    /// is `own`, `share` the contraction indices it sums over, in order. Returns the words
    /// the shard holds and its real elements, as the per-element walk counts them;
    /// `None`, before writing anything, when the shard's real elements are not the
    /// product of one index set per output axis (then evaluate it element by element).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn shard(
        &self,
        _: Functional,
        lms: &[LmPtr],
        shard: &mnsim_arch::layout::Shard<'_>,
        own: &[u64],
        share: &[u64],
        out_rt: &[u64],
        o: &OutCells,
        buf: &mut [u8],
    ) -> Option<(u64, u64)> {
        let (words, grid) = Grid::of(shard, self.rank, out_rt, o)?;
        if grid.dense.is_empty() {
            return Some((words, 0));
        }
        let terms = self.shard_terms(share, &grid)?;
        self.multiply(lms, own, &grid, &terms, o, buf);
        Some((words, grid.dense.len() as u64))
    }

    /// Where the operands' values of one output shard lie: per contraction index of
    /// `share`, each operand's contraction-axis terms; per row of `a` and per column of
    /// `b`, their free axis' terms. `None` when an index falls outside the tables, the
    /// batch indices too, so that nothing fails once the shard's cells are written.
    fn shard_terms(&self, share: &[u64], grid: &Grid) -> Option<ShardTerms> {
        let nb = self.rank - 2;
        let [a, b] = &self.ops;
        let terms = |op: &Operand| -> Option<(Vec<usize>, Vec<usize>)> {
            let (pe, off) = (&op.t.pe[op.k], &op.t.off[op.k]);
            share
                .iter()
                .map(|&t| Some((*pe.get(t as usize)?, *off.get(t as usize)?)))
                .collect::<Option<Vec<_>>>()
                .map(|v| v.into_iter().unzip())
        };
        let free_terms = |op: &Operand, vs: &[u64]| -> Option<Vec<(usize, usize)>> {
            vs.iter()
                .map(|&v| {
                    Some((
                        *op.t.pe[op.free].get(v as usize)?,
                        *op.t.off[op.free].get(v as usize)?,
                    ))
                })
                .collect()
        };
        for op in [a, b] {
            for (g, &s) in op.axes.iter().enumerate() {
                if let AxisSource::Out(h) = s
                    && h < nb
                    && grid.vals[h]
                        .last()
                        .is_some_and(|&v| v as usize >= op.t.pe[g].len())
                {
                    return None;
                }
            }
        }
        Some(ShardTerms {
            a: terms(a)?,
            b: terms(b)?,
            rows: free_terms(a, &grid.vals[nb])?,
            cols: free_terms(b, &grid.vals[nb + 1])?,
        })
    }

    /// Computes every cell of `grid` into `buf`: per batch index, blocks of panels of
    /// `LANES` columns of `b` (K values each), then of rows of `a`, within the budget of
    /// gathered values.
    fn multiply(
        &self,
        lms: &[LmPtr],
        own: &[u64],
        grid: &Grid,
        t: &ShardTerms,
        o: &OutCells,
        buf: &mut [u8],
    ) {
        let nb = self.rank - 2;
        let (vals, dense) = (&grid.vals, &grid.dense);
        let (nr, nc, kk) = (vals[nb].len(), vals[nb + 1].len(), t.a.0.len());
        let [a, b] = &self.ops;
        let a_terms: (&[usize], &[usize]) = (&t.a.0, &t.a.1);
        let b_terms: (&[usize], &[usize]) = (&t.b.0, &t.b.1);
        let kk1 = kk.max(1);
        let panels_per_block = (BLOCK_VALUES / (kk1 * LANES)).clamp(1, nc.div_ceil(LANES));
        let block_cols = panels_per_block * LANES;
        let block_rows = (BLOCK_VALUES / kk1).clamp(1, nr);
        let mut blocks = BLOCKS.with_borrow_mut(std::mem::take);
        let (bp, ar) = (&mut blocks.0, &mut blocks.1);
        let batches = dense.len() / (nr * nc);
        let mut bpos = vec![0usize; nb];
        let mut batch = vec![0u64; nb];
        for bl in 0..batches {
            for h in 0..nb {
                batch[h] = vals[h][bpos[h]];
            }
            let (a_pe, a_off) = a.origin(&batch, own);
            let (b_pe, b_off) = b.origin(&batch, own);
            for c0 in (0..nc).step_by(block_cols) {
                let c1 = nc.min(c0 + block_cols);
                let np = (c1 - c0).div_ceil(LANES);
                bp.clear();
                bp.resize(np * kk * LANES, 0.0);
                for (j, &(pe, off)) in t.cols[c0..c1].iter().enumerate() {
                    let (p, l) = (j / LANES, j % LANES);
                    let panel = &mut bp[p * kk * LANES..(p + 1) * kk * LANES];
                    gather(lms, b_pe + pe, b_off + off, b_terms, b, panel, l, LANES);
                }
                for r0 in (0..nr).step_by(block_rows) {
                    let r1 = nr.min(r0 + block_rows);
                    ar.clear();
                    ar.resize((r1 - r0) * kk, 0.0);
                    for (i, &(pe, off)) in t.rows[r0..r1].iter().enumerate() {
                        let row = &mut ar[i * kk..(i + 1) * kk];
                        gather(lms, a_pe + pe, a_off + off, a_terms, a, row, 0, 1);
                    }
                    let mut put = |i: usize, p: usize, sums: &[f64; LANES]| {
                        let j0 = c0 + p * LANES;
                        let at = (bl * nr + i) * nc;
                        for (l, &v) in sums.iter().enumerate().take(c1 - j0) {
                            let d = dense[at + j0 + l];
                            elem::write(o.dtype, v, &mut buf[d..d + o.eb]);
                        }
                    };
                    for p in 0..np {
                        let panel = &bp[p * kk * LANES..(p + 1) * kk * LANES];
                        let row = |i: usize| &ar[(i - r0) * kk..(i - r0 + 1) * kk];
                        let mut i = r0;
                        while i + 1 < r1 {
                            let (s0, s1) = dot2(row(i), row(i + 1), panel);
                            put(i, p, &s0);
                            put(i + 1, p, &s1);
                            i += 2;
                        }
                        if i < r1 {
                            put(i, p, &dot1(row(i), panel));
                        }
                    }
                }
            }
            // The next batch index, the last axis fastest (the order of `dense`).
            for h in (0..nb).rev() {
                bpos[h] += 1;
                if bpos[h] < vals[h].len() {
                    break;
                }
                bpos[h] = 0;
            }
        }
        BLOCKS.with_borrow_mut(|b| *b = blocks);
    }
}

/// An output shard's real cells (those inside the run-time extents) as the product of
/// one set of index values per output axis (batch axes, row, column), and the byte each
/// cell is written to, in the product's order (the last axis fastest).
struct Grid {
    vals: Vec<Vec<u64>>,
    dense: Vec<usize>,
}

impl Grid {
    /// The words `shard` holds and its real cells as a grid of rank `r`; `None` when the
    /// cells are not such a product.
    fn of(
        shard: &mnsim_arch::layout::Shard<'_>,
        r: usize,
        out_rt: &[u64],
        o: &OutCells,
    ) -> Option<(u64, Grid)> {
        let mut words = 0u64;
        let mut idxs: Vec<u64> = Vec::new();
        let mut dsts: Vec<usize> = Vec::new();
        shard.for_each(|idx, a, w, t| {
            words += (w == 0) as u64;
            if idx.iter().zip(out_rt).all(|(i, n)| i < n) {
                idxs.extend_from_slice(idx);
                dsts.push((t as usize * o.fp + a as usize) * o.wb + w as usize * o.eb);
            }
        });
        let cells = dsts.len();
        // The index values per output axis; a layout's shard is their product (no cell:
        // an empty grid).
        let vals: Vec<Vec<u64>> = (0..r)
            .map(|h| {
                let mut v: Vec<u64> = idxs.iter().skip(h).step_by(r).copied().collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let product = vals
            .iter()
            .try_fold(1usize, |acc, v| acc.checked_mul(v.len()))?;
        if product != cells {
            return None;
        }
        let mut dense = vec![usize::MAX; cells];
        for (c, &d) in dsts.iter().enumerate() {
            let mut lin = 0usize;
            for (h, v) in vals.iter().enumerate() {
                lin = lin * v.len() + v.binary_search(&idxs[c * r + h]).ok()?;
            }
            dense[lin] = d;
        }
        if dense.contains(&usize::MAX) {
            return None;
        }
        Some((words, Grid { vals, dense }))
    }
}

/// A shard's operand terms (`Contraction::shard_terms`): `(pe, byte)` columns per
/// contraction index for `a` and `b`, and `(pe, byte)` per row of `a` and column of `b`.
struct ShardTerms {
    a: (Vec<usize>, Vec<usize>),
    b: (Vec<usize>, Vec<usize>),
    rows: Vec<(usize, usize)>,
    cols: Vec<(usize, usize)>,
}

/// Reads one operand's values at contraction positions `0..k` into `out[at + s·step]`:
/// position `s` lies on PE `pe + terms.0[s]` at byte `off + terms.1[s]`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn gather(
    lms: &[LmPtr],
    pe: usize,
    off: usize,
    terms: (&[usize], &[usize]),
    op: &Operand,
    out: &mut [f64],
    at: usize,
    step: usize,
) {
    #[inline(always)]
    fn each(
        lms: &[LmPtr],
        pe: usize,
        off: usize,
        (pk, ok): (&[usize], &[usize]),
        eb: usize,
        out: &mut [f64],
        at: usize,
        step: usize,
        read: impl Fn(&[u8]) -> f64,
    ) {
        for ((&p, &o), v) in pk.iter().zip(ok).zip(out.iter_mut().skip(at).step_by(step)) {
            // SAFETY: operands are resident regions; a kernel writes only its output's
            // region, allocated apart from every resident one.
            *v = read(unsafe { lms[pe + p].bytes(off + o, eb) });
        }
    }
    let eb = op.t.eb;
    match op.t.dtype {
        DType::F32 => each(lms, pe, off, terms, eb, out, at, step, |b| {
            f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64
        }),
        DType::F64 => each(lms, pe, off, terms, eb, out, at, step, |b| {
            f64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
        }),
        d => each(lms, pe, off, terms, eb, out, at, step, |b| elem::read(d, b)),
    }
}

/// The sums `Σ_s a[s] · panel[s][l]` for every lane `l`, each in order from `0.0`.
#[inline]
fn dot1(a: &[f64], panel: &[f64]) -> [f64; LANES] {
    let mut s = [0.0f64; LANES];
    for (&x, b) in a.iter().zip(panel.chunks_exact(LANES)) {
        for l in 0..LANES {
            s[l] += x * b[l];
        }
    }
    s
}

/// [`dot1`] for two rows at once (independent sums, the panel read once).
#[inline]
fn dot2(a0: &[f64], a1: &[f64], panel: &[f64]) -> ([f64; LANES], [f64; LANES]) {
    let (mut s0, mut s1) = ([0.0f64; LANES], [0.0f64; LANES]);
    for ((&x0, &x1), b) in a0.iter().zip(a1).zip(panel.chunks_exact(LANES)) {
        for l in 0..LANES {
            s0[l] += x0 * b[l];
            s1[l] += x1 * b[l];
        }
    }
    (s0, s1)
}
