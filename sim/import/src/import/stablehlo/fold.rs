//! Constants evaluated at import: splats, small dense literals, iotas, dimension sizes
//! and everything computed from them alone (shape tensors, masks). Values are `f64`;
//! integer and boolean results are rounded as their type holds them.

use mnsim_arch::DType;
use std::rc::Rc;

/// The most elements a folded constant may hold.
pub const FOLD_LIMIT: u64 = 1 << 22;

/// A constant tensor: one value for a splat, else one per element (row-major).
#[derive(Clone, Debug, PartialEq)]
pub struct Konst {
    pub dtype: DType,
    pub dims: Vec<u64>,
    pub data: Rc<Vec<f64>>,
}

pub fn numel(dims: &[u64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
}

/// Row-major strides.
pub fn strides(dims: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; dims.len()];
    for a in (0..dims.len().saturating_sub(1)).rev() {
        s[a] = s[a + 1].saturating_mul(dims[a + 1]);
    }
    s
}

/// A value as `dtype` holds it: integers truncate toward zero (saturating), booleans
/// are 0 or 1.
pub fn cast(v: f64, dtype: DType) -> f64 {
    if dtype == DType::Pred {
        return if v != 0.0 { 1.0 } else { 0.0 };
    }
    if dtype.is_float() {
        return v;
    }
    let (lo, hi) = dtype.range();
    if v.is_nan() {
        0.0
    } else {
        v.trunc().clamp(lo, hi)
    }
}

/// The value `v`, computed from integer constants, as `dtype` holds it: truncated
/// toward zero (StableHLO's integer division), or an error when `dtype` cannot hold it
/// (an overflow, a division by zero); other dtypes as [`cast`] gives them.
pub fn exact(v: f64, dtype: DType) -> Result<f64, String> {
    if dtype == DType::Pred || dtype.is_float() {
        return Ok(cast(v, dtype));
    }
    let (lo, hi) = dtype.range();
    let t = v.trunc();
    if t.is_finite() && t >= lo && t <= hi {
        Ok(t)
    } else {
        Err(format!(
            "the result {v} is not a value of {dtype} (an integer overflow or a division by zero)"
        ))
    }
}

/// A constant's identity for sharing equal constants: its dtype, dims and values' bits.
pub type KonstKey = (&'static str, Vec<u64>, Vec<u64>);

impl Konst {
    /// Its [`KonstKey`].
    pub fn key(&self) -> KonstKey {
        (
            self.dtype.name(),
            self.dims.clone(),
            self.data.iter().map(|v| v.to_bits()).collect(),
        )
    }

    pub fn splat(dtype: DType, dims: Vec<u64>, v: f64) -> Konst {
        Konst {
            dtype,
            dims,
            data: Rc::new(vec![cast(v, dtype)]),
        }
    }

    pub fn is_splat(&self) -> bool {
        self.data.len() == 1
    }

    pub fn get(&self, i: usize) -> f64 {
        if self.is_splat() {
            self.data[0]
        } else {
            self.data[i]
        }
    }

    /// Every element, materialised (at most [`FOLD_LIMIT`]).
    pub fn values(&self) -> Result<Vec<f64>, String> {
        let n = self.count()?;
        Ok(if self.is_splat() {
            vec![self.data[0]; n]
        } else {
            self.data.to_vec()
        })
    }

    pub fn count(&self) -> Result<usize, String> {
        match numel(&self.dims) {
            Some(n) if n <= FOLD_LIMIT => Ok(n as usize),
            _ => Err(format!(
                "a constant of shape {:?} is too large to evaluate at import (at most {FOLD_LIMIT} elements)",
                self.dims
            )),
        }
    }

    fn from_fn(dtype: DType, dims: Vec<u64>, f: impl Fn(usize) -> f64) -> Result<Konst, String> {
        let k = Konst::splat(dtype, dims, 0.0);
        let n = k.count()?;
        let data = (0..n).map(|i| cast(f(i), dtype)).collect();
        Ok(Konst {
            data: Rc::new(data),
            ..k
        })
    }

    /// Elementwise arithmetic over constants of equal shape, each result a value of
    /// `dtype` or an error ([`exact`]): what the elementwise ops fold to.
    pub fn compute(
        ks: &[&Konst],
        dtype: DType,
        f: impl Fn(&[f64]) -> f64,
    ) -> Result<Konst, String> {
        let dims = ks[0].dims.clone();
        let n = if ks.iter().all(|k| k.is_splat()) {
            1
        } else {
            Konst::splat(dtype, dims.clone(), 0.0).count()?
        };
        let mut data = Vec::with_capacity(n);
        let mut xs = vec![0.0; ks.len()];
        for i in 0..n {
            for (x, k) in xs.iter_mut().zip(ks) {
                *x = k.get(i);
            }
            data.push(exact(f(&xs), dtype)?);
        }
        Ok(Konst {
            dtype,
            dims,
            data: Rc::new(data),
        })
    }

    /// Elementwise over constants of equal shape (splats stay splats).
    pub fn map(ks: &[&Konst], dtype: DType, f: impl Fn(&[f64]) -> f64) -> Result<Konst, String> {
        let dims = ks[0].dims.clone();
        if ks.iter().all(|k| k.is_splat()) {
            let xs: Vec<f64> = ks.iter().map(|k| k.data[0]).collect();
            return Ok(Konst::splat(dtype, dims, f(&xs)));
        }
        Konst::from_fn(dtype, dims, |i| {
            let xs: Vec<f64> = ks.iter().map(|k| k.get(i)).collect();
            f(&xs)
        })
    }

    pub fn iota(dtype: DType, dims: Vec<u64>, axis: usize) -> Result<Konst, String> {
        let st = strides(&dims);
        let (s, d) = (st[axis], dims[axis].max(1));
        Konst::from_fn(dtype, dims, |i| ((i as u64 / s) % d) as f64)
    }

    /// The same elements in a new shape.
    pub fn reshape(&self, dims: Vec<u64>) -> Konst {
        Konst {
            dims,
            ..self.clone()
        }
    }

    /// Input axis `j` goes to output axis `map[j]` of `out` (sizes equal or 1).
    pub fn broadcast(&self, map: &[usize], out: Vec<u64>) -> Result<Konst, String> {
        if self.is_splat() {
            return Ok(Konst::splat(self.dtype, out, self.data[0]));
        }
        let ist = strides(&self.dims);
        let ost = strides(&out);
        let dims = self.dims.clone();
        let map = map.to_vec();
        let data = self.data.clone();
        let out2 = out.clone();
        Konst::from_fn(self.dtype, out, move |i| {
            let mut src = 0u64;
            for (j, &a) in map.iter().enumerate() {
                let x = (i as u64 / ost[a]) % out2[a];
                let x = if dims[j] == 1 { 0 } else { x };
                src += x * ist[j];
            }
            data[src as usize]
        })
    }

    pub fn transpose(&self, perm: &[usize]) -> Result<Konst, String> {
        let out: Vec<u64> = perm.iter().map(|&p| self.dims[p]).collect();
        if self.is_splat() {
            return Ok(Konst::splat(self.dtype, out, self.data[0]));
        }
        let ist = strides(&self.dims);
        let ost = strides(&out);
        let perm = perm.to_vec();
        let data = self.data.clone();
        let o2 = out.clone();
        Konst::from_fn(self.dtype, out, move |i| {
            let mut src = 0u64;
            for (a, &p) in perm.iter().enumerate() {
                src += ((i as u64 / ost[a]) % o2[a]) * ist[p];
            }
            data[src as usize]
        })
    }

    /// `[start:limit:stride]` on every axis.
    pub fn slice(&self, start: &[u64], stride: &[u64], out: Vec<u64>) -> Result<Konst, String> {
        if self.is_splat() {
            return Ok(Konst::splat(self.dtype, out, self.data[0]));
        }
        let ist = strides(&self.dims);
        let ost = strides(&out);
        let (start, stride) = (start.to_vec(), stride.to_vec());
        let data = self.data.clone();
        let o2 = out.clone();
        Konst::from_fn(self.dtype, out, move |i| {
            let mut src = 0u64;
            for a in 0..o2.len() {
                let x = (i as u64 / ost[a]) % o2[a];
                src += (start[a] + x * stride[a]) * ist[a];
            }
            data[src as usize]
        })
    }

    pub fn concat(ks: &[&Konst], axis: usize, out: Vec<u64>) -> Result<Konst, String> {
        let ost = strides(&out);
        let mut offs = Vec::new();
        let mut o = 0u64;
        for k in ks {
            offs.push(o);
            o += k.dims[axis];
        }
        let o2 = out.clone();
        Konst::from_fn(ks[0].dtype, out, |i| {
            let x = (i as u64 / ost[axis]) % o2[axis];
            let j = offs.iter().rposition(|&s| s <= x).unwrap_or(0);
            let k = ks[j];
            let ist = strides(&k.dims);
            let mut src = 0u64;
            for a in 0..o2.len() {
                let mut y = (i as u64 / ost[a]) % o2[a];
                if a == axis {
                    y -= offs[j];
                }
                src += y * ist[a];
            }
            k.get(src as usize)
        })
    }

    /// `pad`: `low[a]` and `high[a]` elements of `value` at the ends of axis `a`
    /// (negative: that many removed), `interior[a]` between neighbours; `out` the
    /// result's dims.
    pub fn pad(
        &self,
        value: f64,
        (low, interior): (&[i128], &[i128]),
        out: Vec<u64>,
    ) -> Result<Konst, String> {
        let ost = strides(&out);
        let ist = strides(&self.dims);
        let (low, interior) = (low.to_vec(), interior.to_vec());
        let dims = self.dims.clone();
        let o2 = out.clone();
        Konst::from_fn(self.dtype, out, |i| {
            let mut src = 0u64;
            for a in 0..o2.len() {
                // Position along axis a in the operand dilated by `interior`.
                let y = ((i as u64 / ost[a]) % o2[a]) as i128 - low[a];
                let step = interior[a] + 1;
                if y < 0 || y % step != 0 || y / step >= dims[a] as i128 {
                    return value;
                }
                src += (y / step) as u64 * ist[a];
            }
            self.get(src as usize)
        })
    }

    /// The smallest shape that numpy-broadcasts to `dims` with the same values: axes
    /// along which nothing changes become 1, leading 1s are dropped (a splat is `[1]`).
    pub fn essential(&self) -> Result<Konst, String> {
        if self.is_splat() {
            return Ok(Konst::splat(self.dtype, vec![1], self.data[0]));
        }
        let st = strides(&self.dims);
        let mut keep = vec![true; self.dims.len()];
        for a in 0..self.dims.len() {
            let (s, d) = (st[a] as usize, self.dims[a] as usize);
            if d <= 1 {
                keep[a] = false;
                continue;
            }
            // Constant along axis a: element i equals element i with x_a = 0.
            keep[a] = (0..self.data.len()).any(|i| {
                let x = (i / s) % d;
                self.data[i] != self.data[i - x * s]
            });
        }
        let sel: Vec<usize> = (0..self.dims.len()).collect();
        let zero: Vec<u64> = vec![0; self.dims.len()];
        let one: Vec<u64> = vec![1; self.dims.len()];
        let out: Vec<u64> = sel
            .iter()
            .map(|&a| if keep[a] { self.dims[a] } else { 1 })
            .collect();
        let small = self.slice(&zero, &one, out)?;
        let first = small
            .dims
            .iter()
            .position(|&d| d != 1)
            .unwrap_or(small.dims.len());
        let dims = if first == small.dims.len() {
            vec![1]
        } else {
            small.dims[first..].to_vec()
        };
        Ok(small.reshape(dims))
    }
}

/// One element of a dense literal: `1.5`, `-3`, `0xFF800000` (raw bits), `true`,
/// `false`, a value of `dtype` (an integer in range and whole: a literal is never
/// rounded or saturated).
fn element(s: &str, dtype: DType) -> Result<f64, String> {
    let s = s.trim();
    let v = match s {
        "true" => 1.0,
        "false" => 0.0,
        _ => {
            if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                let bits = u64::from_str_radix(h, 16)
                    .map_err(|_| format!("`{s}` is not a hexadecimal literal"))?;
                match dtype {
                    DType::F32 => f32::from_bits(bits as u32) as f64,
                    DType::F64 => f64::from_bits(bits),
                    DType::F16 | DType::BF16 => {
                        mnsim_kernels::elem::read(dtype, &(bits as u16).to_le_bytes())
                    }
                    _ => bits as f64,
                }
            } else {
                s.parse::<f64>()
                    .map_err(|_| format!("`{s}` is not a number, `true` or `false`"))?
            }
        }
    };
    if dtype == DType::Pred || dtype.is_float() {
        return Ok(cast(v, dtype));
    }
    match dtype.check_value(v) {
        None => Ok(v),
        Some(why) => Err(format!("`{s}` is not a value of {dtype}: {why}")),
    }
}

/// The elements of a nested literal (`[[1, 2], [3, 4]]`), row-major, each list as long
/// as its axis of `dims` and nested exactly as deep as `dims` has axes.
fn nested(t: &str, dtype: DType, dims: &[u64]) -> Result<Vec<f64>, String> {
    let b = t.as_bytes();
    let mut out = Vec::new();
    // Per depth: how many items the list open at that depth has so far.
    let mut counts: Vec<u64> = Vec::new();
    let mut i = 0;
    let mut item_start: Option<usize> = None;
    let wrong = |what: String| {
        format!(
            "the literal does not nest as its type {dims:?}: {what} (a `dense` literal nests one list per axis, each as long as its axis)"
        )
    };
    let close_item = |start: &mut Option<usize>,
                      end: usize,
                      counts: &mut Vec<u64>,
                      out: &mut Vec<f64>|
     -> Result<(), String> {
        if let Some(s) = start.take() {
            let text = t[s..end].trim();
            if text.is_empty() {
                return Ok(());
            }
            if counts.len() != dims.len() {
                return Err(wrong(format!(
                    "the value `{text}` is at depth {} where {} lists nest",
                    counts.len(),
                    dims.len()
                )));
            }
            out.push(element(text, dtype)?);
            if let Some(c) = counts.last_mut() {
                *c += 1;
            }
        }
        Ok(())
    };
    while i < b.len() {
        match b[i] {
            b'[' => {
                close_item(&mut item_start, i, &mut counts, &mut out)?;
                if counts.len() >= dims.len() {
                    return Err(wrong(format!("a list nests {} deep", counts.len() + 1)));
                }
                counts.push(0);
            }
            b']' => {
                close_item(&mut item_start, i, &mut counts, &mut out)?;
                let depth = counts.len();
                let Some(n) = counts.pop() else {
                    return Err(wrong("a `]` closes no list".into()));
                };
                if n != dims[depth - 1] {
                    return Err(wrong(format!(
                        "a list at depth {depth} holds {n} items where axis {} has {}",
                        depth - 1,
                        dims[depth - 1]
                    )));
                }
                if let Some(c) = counts.last_mut() {
                    *c += 1;
                }
            }
            b',' => close_item(&mut item_start, i, &mut counts, &mut out)?,
            c if c.is_ascii_whitespace() => {}
            _ => {
                if item_start.is_none() {
                    if counts.is_empty() {
                        return Err(wrong("a value outside every list".into()));
                    }
                    item_start = Some(i);
                }
            }
        }
        i += 1;
    }
    close_item(&mut item_start, b.len(), &mut counts, &mut out)?;
    if !counts.is_empty() {
        return Err(wrong("a list is not closed".into()));
    }
    Ok(out)
}

/// A dense literal (the inside of `dense<...>`) of a tensor of `dtype` and `dims`: a
/// splat (`1.0`, `0xFF800000`, `true`) or lists nested as the type's axes.
pub fn dense(text: &str, dtype: DType, dims: Vec<u64>) -> Result<Konst, String> {
    let t = text.trim();
    if t.starts_with('"') {
        return Err("hexadecimal blob constants (`dense<\"0x...\">`) are not supported".into());
    }
    if !t.starts_with('[') {
        let v = element(t, dtype)?;
        return Ok(Konst::splat(dtype, dims, v));
    }
    let k = Konst::splat(dtype, dims.clone(), 0.0);
    k.count()?;
    let data = nested(t, dtype, &dims)?;
    Ok(Konst {
        data: Rc::new(data),
        ..k
    })
}
