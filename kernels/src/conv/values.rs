//! A convolution's values: the per-element gather (`eval`) and the host reference
//! (a scatter over every tuple).

use super::{Conv, ConvPass};

/// Calls `f` with every combination of one value from each list (the last fastest).
pub(crate) fn each_combo(lists: &[Vec<u64>], f: &mut dyn FnMut(&[u64])) {
    if lists.iter().any(Vec::is_empty) {
        return;
    }
    let mut at = vec![0usize; lists.len()];
    let mut v: Vec<u64> = lists.iter().map(|l| l[0]).collect();
    loop {
        f(&v);
        let mut j = lists.len();
        loop {
            if j == 0 {
                return;
            }
            j -= 1;
            at[j] += 1;
            if at[j] < lists[j].len() {
                v[j] = lists[j][at[j]];
                break;
            }
            at[j] = 0;
            v[j] = lists[j][0];
        }
    }
}

/// Input position `p·s + k·d − pb` on spatial axis `i`, if inside `0..len`.
fn tap(c: &Conv, i: usize, p: u64, k: u64, len: u64) -> Option<u64> {
    let v = p as i128 * c.strides[i] as i128 + k as i128 * c.dilations[i] as i128
        - c.pads_begin[i] as i128;
    (0..len as i128).contains(&v).then_some(v as u64)
}

/// One output element, gathering over the reduced variables' values `lists` (see
/// [`Conv::reduced_extents`]). `fetch(input, index)` reads an input element.
pub fn eval(
    c: &Conv,
    out_idx: &[u64],
    fetch: &mut dyn FnMut(usize, &[u64]) -> f64,
    lists: &[Vec<u64>],
    in_shapes: &[&[u64]],
) -> f64 {
    let Ok(g) = c.geometry(in_shapes) else {
        return f64::NAN;
    };
    let d = c.strides.len();
    let r = d + 2;
    let (db, dc, ds) = c.data_axes(r);
    let (wo, wi, ws) = c.weight_axes(r);
    let (cg, og) = (g.c / c.groups, g.o / c.groups);
    let mut xi = vec![0u64; r];
    let mut wv = vec![0u64; r];
    let mut yi = vec![0u64; r];
    let mut acc = 0.0;
    match c.pass {
        ConvPass::Forward => {
            let (n, o) = (out_idx[db], out_idx[dc]);
            let grp = o / og;
            (xi[db], wv[wo]) = (n, o);
            each_combo(lists, &mut |t| {
                for i in 0..d {
                    match tap(c, i, out_idx[ds + i], t[1 + i], g.input[i]) {
                        Some(v) => xi[ds + i] = v,
                        None => return,
                    }
                    wv[ws + i] = t[1 + i];
                }
                xi[dc] = grp * cg + t[0];
                wv[wi] = t[0];
                acc += fetch(0, &xi) * fetch(1, &wv);
            });
        }
        ConvPass::BackwardData => {
            let (n, ch) = (out_idx[db], out_idx[dc]);
            let grp = ch / cg;
            (yi[db], wv[wi]) = (n, ch % cg);
            each_combo(lists, &mut |t| {
                for i in 0..d {
                    // dx position q is read by output position p where p·s = q + pb − k·d.
                    let num = out_idx[ds + i] as i128 + c.pads_begin[i] as i128
                        - t[1 + i] as i128 * c.dilations[i] as i128;
                    let s = c.strides[i] as i128;
                    if num < 0 || num % s != 0 || num / s >= g.output[i] as i128 {
                        return;
                    }
                    yi[ds + i] = (num / s) as u64;
                    wv[ws + i] = t[1 + i];
                }
                let o = grp * og + t[0];
                yi[dc] = o;
                wv[wo] = o;
                acc += fetch(0, &yi) * fetch(1, &wv);
            });
        }
        ConvPass::BackwardWeights => {
            let (o, ci) = (out_idx[wo], out_idx[wi]);
            let grp = o / og;
            (xi[dc], yi[dc]) = (grp * cg + ci, o);
            each_combo(lists, &mut |t| {
                for i in 0..d {
                    match tap(c, i, t[1 + i], out_idx[ws + i], g.input[i]) {
                        Some(v) => xi[ds + i] = v,
                        None => return,
                    }
                    yi[ds + i] = t[1 + i];
                }
                (xi[db], yi[db]) = (t[0], t[0]);
                acc += fetch(0, &xi) * fetch(1, &yi);
            });
        }
    }
    acc
}

/// Row-major strides of `shape`.
fn strides(shape: &[u64]) -> Vec<usize> {
    let mut v = vec![1usize; shape.len()];
    for a in (0..shape.len().saturating_sub(1)).rev() {
        v[a] = v[a + 1] * shape[a + 1] as usize;
    }
    v
}

/// The host reference: every `(n, o, c, output position, window position)` tuple whose
/// input position is inside the input, in that order (the last fastest), scattered
/// into the output (an independent order from [`eval`], which gathers). Per spatial axis
/// and output position, the window taps inside the input are listed once.
pub fn reference(c: &Conv, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
    let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
    let g = c.geometry(&shapes).expect("reference: shapes do not fit");
    let d = c.strides.len();
    let r = d + 2;
    let (db, dc, ds) = c.data_axes(r);
    let (wo, wi, ws) = c.weight_axes(r);
    let (cg, og) = (g.c / c.groups, g.o / c.groups);
    let xs = strides(&c.data_shape(g.n, g.c, &g.input));
    let ys = strides(&c.data_shape(g.n, g.o, &g.output));
    let wst = strides(&c.weight_shape(g.o, cg, &g.window));
    let mut out = vec![0.0; out_shape.iter().product::<u64>() as usize];
    // Per spatial axis and output position: the (x, w) offsets of the taps inside.
    let taps: Vec<Vec<Vec<(usize, usize)>>> = (0..d)
        .map(|i| {
            (0..g.output[i])
                .map(|p| {
                    (0..g.window[i])
                        .filter_map(|k| {
                            let v = tap(c, i, p, k, g.input[i])?;
                            Some((v as usize * xs[ds + i], k as usize * wst[ws + i]))
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let positions: Vec<Vec<u64>> = g.output.iter().map(|&v| (0..v).collect()).collect();
    let (a, b) = (inputs[0].1, inputs[1].1);
    let (mut flat, mut next) = (Vec::new(), Vec::new());
    for n in 0..g.n as usize {
        for o in 0..g.o as usize {
            for ci in 0..cg as usize {
                let bx = n * xs[db] + ((o / og as usize) * cg as usize + ci) * xs[dc];
                let bw = o * wst[wo] + ci * wst[wi];
                let by = n * ys[db] + o * ys[dc];
                each_combo(&positions, &mut |p| {
                    let mut y = by;
                    flat.clear();
                    flat.push((bx, bw));
                    for i in 0..d {
                        y += p[i] as usize * ys[ds + i];
                        next.clear();
                        for &(fx, fw) in &flat {
                            let list = &taps[i][p[i] as usize];
                            next.extend(list.iter().map(|&(x, w)| (fx + x, fw + w)));
                        }
                        std::mem::swap(&mut flat, &mut next);
                    }
                    for &(x, w) in &flat {
                        match c.pass {
                            ConvPass::Forward => out[y] += a[x] * b[w],
                            ConvPass::BackwardData => out[x] += a[y] * b[w],
                            ConvPass::BackwardWeights => out[w] += a[x] * b[y],
                        }
                    }
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::WeightsFormat;

    fn linear(shape: &[u64], idx: &[u64]) -> usize {
        idx.iter().zip(shape).fold(0u64, |l, (i, d)| l * d + i) as usize
    }

    /// The reference as one loop over every tuple (the order [`reference`] keeps).
    fn by_tuple(c: &Conv, inputs: &[(&[u64], &[f64])], out_shape: &[u64]) -> Vec<f64> {
        let shapes: Vec<&[u64]> = inputs.iter().map(|(s, _)| *s).collect();
        let g = c.geometry(&shapes).expect("shapes fit");
        let d = c.strides.len();
        let r = d + 2;
        let (db, dc, ds) = c.data_axes(r);
        let (wo, wi, ws) = c.weight_axes(r);
        let (cg, og) = (g.c / c.groups, g.o / c.groups);
        let xshape = c.data_shape(g.n, g.c, &g.input);
        let yshape = c.data_shape(g.n, g.o, &g.output);
        let wshape = c.weight_shape(g.o, cg, &g.window);
        let mut out = vec![0.0; out_shape.iter().product::<u64>() as usize];
        let all = |n: u64| (0..n).collect::<Vec<u64>>();
        let mut lists = vec![all(g.n), all(g.o), all(cg)];
        lists.extend(g.output.iter().map(|&v| all(v)));
        lists.extend(g.window.iter().map(|&v| all(v)));
        let (mut xi, mut yi, mut wv) = (vec![0u64; r], vec![0u64; r], vec![0u64; r]);
        each_combo(&lists, &mut |t| {
            let (n, o, ci) = (t[0], t[1], t[2]);
            for i in 0..d {
                let (p, k) = (t[3 + i], t[3 + d + i]);
                match tap(c, i, p, k, g.input[i]) {
                    Some(v) => xi[ds + i] = v,
                    None => return,
                }
                yi[ds + i] = p;
                wv[ws + i] = k;
            }
            (xi[db], xi[dc]) = (n, (o / og) * cg + ci);
            (yi[db], yi[dc]) = (n, o);
            (wv[wo], wv[wi]) = (o, ci);
            let (x, y, w) = (
                linear(&xshape, &xi),
                linear(&yshape, &yi),
                linear(&wshape, &wv),
            );
            match c.pass {
                ConvPass::Forward => out[y] += inputs[0].1[x] * inputs[1].1[w],
                ConvPass::BackwardData => out[x] += inputs[0].1[y] * inputs[1].1[w],
                ConvPass::BackwardWeights => out[w] += inputs[0].1[x] * inputs[1].1[y],
            }
        });
        out
    }

    #[test]
    fn the_reference_adds_in_the_order_of_every_tuple() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..300 {
            let d = 1 + next(3) as usize;
            let groups = [1, 2, 3][next(3) as usize];
            let mut c = Conv {
                pass: ConvPass::Forward,
                strides: (0..d).map(|_| 1 + next(3)).collect(),
                dilations: (0..d).map(|_| 1 + next(2)).collect(),
                pads_begin: (0..d).map(|_| next(3)).collect(),
                pads_end: (0..d).map(|_| next(2)).collect(),
                groups,
                channels_last: next(2) == 0,
                weights: [
                    WeightsFormat::OIX,
                    WeightsFormat::XIO,
                    WeightsFormat::IOX,
                    WeightsFormat::XOI,
                ][next(4) as usize],
                shape: Vec::new(),
            };
            let window: Vec<u64> = (0..d).map(|_| 1 + next(3)).collect();
            let sp: Vec<u64> = (0..d)
                .map(|i| (window[i] - 1) * c.dilations[i] + 1 + next(5))
                .collect();
            let (n, cg, og) = (1 + next(3), 1 + next(3), 1 + next(3));
            let x = c.data_shape(n, cg * groups, &sp);
            let w = c.weight_shape(og * groups, cg, &window);
            let y = c.output_shape(&[&x, &w]).expect("a forward geometry");
            c.pass = [
                ConvPass::Forward,
                ConvPass::BackwardData,
                ConvPass::BackwardWeights,
            ][next(3) as usize];
            let (ins, out): ([&Vec<u64>; 2], &Vec<u64>) = match c.pass {
                ConvPass::Forward => ([&x, &w], &y),
                ConvPass::BackwardData => ([&y, &w], &x),
                ConvPass::BackwardWeights => ([&x, &y], &w),
            };
            if c.pass != ConvPass::Forward {
                c.shape = out.clone();
            }
            let vals: Vec<Vec<f64>> = ins
                .iter()
                .map(|s| {
                    (0..s.iter().product::<u64>())
                        .map(|_| next(1 << 20) as f64 / 3.0 - 1e5)
                        .collect()
                })
                .collect();
            let inputs = [(&ins[0][..], &vals[0][..]), (&ins[1][..], &vals[1][..])];
            let (fast, slow) = (reference(&c, &inputs, out), by_tuple(&c, &inputs, out));
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&slow), "{c:?} {ins:?}");
        }
    }
}
