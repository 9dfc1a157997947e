//! Running one kernel through the engine against the host reference (shared by the
//! kernel tests).
#![allow(dead_code)]

use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout, preset, set_knob};
use mnsim_kernels::{Kernel, elem};
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::run::init_data;
use mnsim_sim::scenario::Init;

/// A small MN-Core 2: 2 L2B x 2 L1B x 2 MAB x 4 PE.
pub fn small() -> Machine {
    let mut m = preset("mncore2").unwrap();
    set_knob(&mut m, "levels.Group.count", 1.0).unwrap();
    set_knob(&mut m, "levels.L1B.count", 2.0).unwrap();
    set_knob(&mut m, "levels.MAB.count", 2.0).unwrap();
    m
}

pub struct Input<'a> {
    pub name: &'a str,
    pub dims: &'a [u64],
    pub layout: &'a str,
    pub seed: u64,
}

/// Runs `k` on inputs loaded in their layouts, output in `out_layout` (None: derived),
/// in `mode`; returns the engine and the output's row-major values after a Store.
pub fn run(
    m: &Machine,
    mode: Mode,
    dtype: DType,
    k: &Kernel,
    ins: &[Input],
    out_dims: &[u64],
    out_layout: Option<&str>,
) -> (Engine, Option<Vec<f64>>, u64) {
    let mut e = Engine::new(m.clone(), mode);
    let mut ids = Vec::new();
    for i in ins {
        let data = (mode == Mode::Functional)
            .then(|| init_data(&Init::Random { seed: i.seed }, dtype, i.dims));
        let id = e
            .state
            .declare(
                i.name,
                dtype,
                i.dims.to_vec(),
                i.dims.to_vec(),
                XlaLayout::default_for(i.dims.len()),
                data,
            )
            .unwrap();
        if mode == Mode::Timing {
            e.state
                .set_in_dram(id, XlaLayout::default_for(i.dims.len()));
        }
        let l = TensorLayout::parse(i.layout, m, Some(i.dims), dtype)
            .unwrap_or_else(|err| panic!("{}: {err}", i.layout));
        e.load(id, l).unwrap();
        ids.push(id);
    }
    let out = e
        .state
        .declare(
            "out",
            dtype,
            out_dims.to_vec(),
            out_dims.to_vec(),
            XlaLayout::default_for(out_dims.len()),
            None,
        )
        .unwrap();
    let ol = out_layout.map(|t| {
        TensorLayout::parse(t, m, Some(out_dims), dtype).unwrap_or_else(|err| panic!("{t}: {err}"))
    });
    let rep = e
        .kernel("K", k, &ids, out, ol)
        .unwrap_or_else(|err| panic!("{k:?}: {err}"));
    // Complete partial sums, then store.
    for lv in e.partial_levels(out) {
        e.reduce(out, lv, elem::Combine::Add, None).unwrap();
    }
    e.store(out, XlaLayout::default_for(out_dims.len()))
        .unwrap();
    let vals = e.state.dram_row_major(out).map(|b| {
        b.chunks_exact(dtype.bytes() as usize)
            .map(|c| elem::read(dtype, c))
            .collect()
    });
    (e, vals, rep.cycles)
}

pub fn check(
    m: &Machine,
    dtype: DType,
    k: &Kernel,
    ins: &[Input],
    out_dims: &[u64],
    out_layout: Option<&str>,
) {
    let (f, got, fc) = run(m, Mode::Functional, dtype, k, ins, out_dims, out_layout);
    let (t, _, tc) = run(m, Mode::Timing, dtype, k, ins, out_dims, out_layout);
    assert_eq!(fc, tc, "{k:?}: timing and functional cycles differ");
    assert_eq!(f.state.sw.clock(), t.state.sw.clock());
    let inputs: Vec<Vec<f64>> = ins
        .iter()
        .map(|i| {
            init_data(&Init::Random { seed: i.seed }, dtype, i.dims)
                .chunks_exact(dtype.bytes() as usize)
                .map(|c| elem::read(dtype, c))
                .collect()
        })
        .collect();
    let args: Vec<(&[u64], &[f64])> = ins
        .iter()
        .zip(&inputs)
        .map(|(i, v)| (i.dims, v.as_slice()))
        .collect();
    let want = mnsim_kernels::reference(k, &args, out_dims);
    let shapes: Vec<&[u64]> = ins.iter().map(|i| i.dims).collect();
    let n = mnsim_kernels::reduced_extents(k, &shapes)
        .unwrap()
        .iter()
        .product::<u64>()
        .max(1);
    let tol = mnsim_kernels::tolerance(dtype, k, n);
    let got = got.expect("stored");
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            mnsim_kernels::within(*g, *w, tol),
            "{k:?} {dtype}: element {i}: got {g}, want {w} (tolerance {tol:?})"
        );
    }
}

/// A random layout of a 2-D tensor on `small()` (fan-outs L2B 2, L1B 2, MAB 2, PE 4):
/// every level is split along a random axis (when the axis still divides) or replicated;
/// the rest of each axis is memory, sometimes `Time`, sometimes `4_W` (f16); a pad
/// prefix trims the logical shape by one sometimes.
pub fn random_layout(rng: &mut u64, dims: [u64; 2], f16: bool) -> (String, [u64; 2]) {
    let mut next = |n: u64| {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng % n
    };
    let mut rest = dims;
    let mut groups: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut bcast = Vec::new();
    for (name, fan) in [("L2B", 2u64), ("L1B", 2), ("MAB", 2), ("PE", 4)] {
        let g = next(3) as usize;
        if g < 2 && rest[g].is_multiple_of(fan) {
            groups[g].push(format!("{fan}_{name}"));
            rest[g] /= fan;
        } else {
            bcast.push(name);
        }
    }
    for g in 0..2 {
        let mut r = rest[g];
        if g == 1 && f16 && r.is_multiple_of(4) && next(2) == 0 {
            r /= 4;
            groups[g].push("4_W".into());
            if r > 1 {
                groups[g].insert(groups[g].len() - 1, format!("{r}"));
            }
            continue;
        }
        if g == 0 && r.is_multiple_of(2) && next(3) == 0 {
            groups[g].push("2_Time".into());
            r /= 2;
        }
        if r > 1 || groups[g].is_empty() {
            groups[g].push(format!("{r}"));
        }
    }
    let logical = [
        dims[0] - next(2),
        dims[1] - next(2) * (!dims[1].is_multiple_of(4)) as u64,
    ];
    let pad = if logical != dims {
        format!("({},{})/", logical[0], logical[1])
    } else {
        String::new()
    };
    let b = if bcast.is_empty() {
        String::new()
    } else {
        format!("; B@[{}]", bcast.join(","))
    };
    (
        format!(
            "{pad}(({}), ({}){b})",
            groups[0].join(", "),
            groups[1].join(", ")
        ),
        logical,
    )
}

/// A xorshift generator: the random cases of the kernel tests.
pub struct Rng(pub u64);
impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The levels of [`small`] and their fan-outs.
pub const LEVELS: [(&str, u64); 4] = [("L2B", 2), ("L1B", 2), ("MAB", 2), ("PE", 4)];

/// A tensor for the layout generator: its dims and a tag per axis (`'X'` never
/// splits). Splitting tag `t` over a level splits every axis tagged `t` there; a tensor
/// without it is replicated there.
pub struct Tagged {
    pub dims: Vec<u64>,
    pub tags: Vec<char>,
}

/// Layouts for every tensor: each level splits one tag of `choices` (the tags that
/// divide what is left; `partial` tags only above the PE level) or nothing.
pub fn layouts(rng: &mut Rng, ts: &[Tagged], choices: &[char], partial: &[char]) -> Vec<String> {
    let mut rest: Vec<Vec<u64>> = ts.iter().map(|t| t.dims.clone()).collect();
    let mut subs: Vec<Vec<Vec<String>>> =
        ts.iter().map(|t| vec![Vec::new(); t.dims.len()]).collect();
    let mut bcast: Vec<Vec<&str>> = vec![Vec::new(); ts.len()];
    for (name, fan) in LEVELS {
        let ok: Vec<char> = choices
            .iter()
            .copied()
            .filter(|c| name != "PE" || !partial.contains(c))
            .filter(|&c| {
                ts.iter().enumerate().all(|(i, t)| {
                    t.tags
                        .iter()
                        .enumerate()
                        .all(|(a, &g)| g != c || rest[i][a].is_multiple_of(fan))
                })
            })
            .collect();
        let pick = rng.below(ok.len() as u64 + 1) as usize;
        let tag = ok.get(pick).copied();
        for (i, t) in ts.iter().enumerate() {
            match t.tags.iter().position(|&g| Some(g) == tag) {
                Some(a) => {
                    subs[i][a].push(format!("{fan}_{name}"));
                    rest[i][a] /= fan;
                }
                None => bcast[i].push(name),
            }
        }
    }
    ts.iter()
        .enumerate()
        .map(|(i, t)| {
            let groups: Vec<String> = (0..t.dims.len())
                .map(|a| {
                    let mut g = subs[i][a].clone();
                    if rest[i][a] > 1 || g.is_empty() {
                        g.push(rest[i][a].to_string());
                    }
                    format!("({})", g.join(", "))
                })
                .collect();
            let b = if bcast[i].is_empty() {
                String::new()
            } else {
                format!("; B@[{}]", bcast[i].join(","))
            };
            format!("({}{b})", groups.join(", "))
        })
        .collect()
}

/// Every PE's bytes of `out`'s LM region, in PE order.
pub fn out_bytes(e: &mut Engine) -> Vec<Vec<u8>> {
    let r = e.state.tensors[e.state.tensor_id("out").unwrap()]
        .lm
        .clone()
        .expect("in LM");
    let wb = e.state.machine.word_bytes as usize;
    let (lo, hi) = (r.offset as usize * wb, (r.offset + r.words) as usize * wb);
    let mut q = e
        .state
        .sw
        .world
        .query::<(&mnsim_sim::world::Pe, &mnsim_sim::world::Lm)>();
    let mut v: Vec<(u64, Vec<u8>)> = q
        .iter(&e.state.sw.world)
        .map(|(p, l)| (p.global, l.data[lo..hi].to_vec()))
        .collect();
    v.sort_unstable_by_key(|x| x.0);
    v.into_iter().map(|x| x.1).collect()
}
