//! The transfers, checked against what they must do: Load then Store returns every
//! tensor bit-exactly, timing and functional mode charge the same cycles, a Relayout
//! there and back is the identity, a Reduce computes what a hand computation says, and
//! the per-stage byte counts conserve the data.
//!
//! Random layouts come from a seeded generator (the seed is the proptest input), over
//! `toy4` and two small what-if machines built with knobs.

use mnsim_arch::layout::Placement;
use mnsim_arch::shape::Tile;
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};
use mnsim_kernels::elem::{self, Combine};
use mnsim_reports::{OpReport, Report};
use mnsim_sim::engine::{Engine, Mode};
use mnsim_sim::ids::LevelId;
use mnsim_sim::run::{SplitMix, init_data};
use mnsim_sim::scenario::{self, Init, Source};
use mnsim_sim::world::{Lm, Pe, PortStats};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

// ---------------------------------------------------------------------------
// Machines
// ---------------------------------------------------------------------------

fn preset(name: &str, knobs: &[(&str, f64)]) -> Machine {
    let mut m = mnsim_arch::preset(name).expect("preset");
    for (k, v) in knobs {
        mnsim_arch::set_knob(&mut m, k, *v).unwrap_or_else(|e| panic!("{k}: {e}"));
    }
    m
}

fn toy4() -> Machine {
    preset("toy4", &[])
}

/// mncore2 with 2 L1B per L2B and 2 MAB per L1B: 4 Group × 2 L2B × 2 × 2 × 4 = 128 PE,
/// one DRAM per Group (four).
fn mncore2_small() -> Machine {
    preset(
        "mncore2",
        &[("levels.L1B.count", 2.0), ("levels.MAB.count", 2.0)],
    )
}

/// mncore1 with 2 L2B, 2 L1B per L2B, 2 MAB per L1B: 32 PE, one DRAM.
fn mncore1_small() -> Machine {
    preset(
        "mncore1",
        &[
            ("levels.L2B.count", 2.0),
            ("levels.L1B.count", 2.0),
            ("levels.MAB.count", 2.0),
        ],
    )
}

fn machine(i: usize) -> Machine {
    match i % 3 {
        0 => toy4(),
        1 => mncore2_small(),
        _ => mncore1_small(),
    }
}

/// The memory levels a transfer passes, root first (the stage names), and for each
/// stage the addressable levels on its child side (`chain[k]` → `chain[k+1]`).
fn stage_levels(m: &Machine) -> (Vec<&'static str>, Vec<Vec<&'static str>>) {
    match m.name.as_str() {
        "toy4" => (vec!["Board"], vec![vec!["PE"]]),
        "mncore2" => (
            vec!["Group", "L2B", "L1B"],
            vec![vec!["L2B"], vec!["L1B"], vec!["MAB", "PE"]],
        ),
        "mncore1" => (
            vec!["Board", "L2B", "L1B"],
            vec![vec!["L2B"], vec!["L1B"], vec!["MAB", "PE"]],
        ),
        other => panic!("no stage table for {other}"),
    }
}

/// The memory level where data crossing addressable level `level` meets: the deepest
/// memory above it (MAB has none). mncore2's L2B positions span the four Groups, and
/// nothing above a Group has a memory or a link: they meet at the Group memories,
/// the root of the chain.
fn meet_of(m: &Machine, level: &str) -> &'static str {
    match (m.name.as_str(), level) {
        ("toy4", "PE") => "Board",
        ("mncore2", "L2B") => "Group",
        ("mncore1", "L2B") => "Board",
        (_, "L1B") => "L2B",
        (_, "MAB" | "PE") => "L1B",
        other => panic!("no meet for {other:?}"),
    }
}

/// DRAM nodes (one per Group on mncore2, else one).
fn dram_nodes(m: &Machine) -> u64 {
    if m.name == "mncore2" { 4 } else { 1 }
}

// ---------------------------------------------------------------------------
// Random layouts
// ---------------------------------------------------------------------------

struct Rng(SplitMix);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(SplitMix(seed))
    }
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, k: usize, n: usize) -> bool {
        self.below(n) < k
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// The class of a sub-axis: memory, an addressable level (index), `W`, `Time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum C {
    Mem,
    Lv(usize),
    W,
    Time,
}

#[derive(Clone, Debug)]
struct Sub {
    size: u64,
    class: C,
    stride: Option<u64>,
}

/// A layout as parts, so that a test can change one part and keep the rest.
#[derive(Clone, Debug)]
struct Spec {
    logical: Vec<u64>,
    groups: Vec<Vec<Sub>>,
    /// Replicated levels named in `B@`.
    bcast: Vec<usize>,
    /// `B@` inside the outer parentheses (`; B@[..]`) or after them.
    bcast_inside: bool,
}

impl Spec {
    fn text(&self, m: &Machine) -> String {
        let names: Vec<String> = m.addressable_levels().into_iter().map(|l| l.name).collect();
        let padded: Vec<u64> = self
            .groups
            .iter()
            .map(|g| g.iter().map(|s| s.size).product())
            .collect();
        let pad = if padded != self.logical {
            let l: Vec<String> = self.logical.iter().map(u64::to_string).collect();
            format!("({})/", l.join(","))
        } else {
            String::new()
        };
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                let subs: Vec<String> = g
                    .iter()
                    .map(|s| {
                        let name = match s.class {
                            C::Mem => String::new(),
                            C::Lv(i) => format!("_{}", names[i]),
                            C::W => "_W".into(),
                            C::Time => "_Time".into(),
                        };
                        let stride = s.stride.map(|x| format!(":{x}")).unwrap_or_default();
                        format!("{}{name}{stride}", s.size)
                    })
                    .collect();
                format!("({})", subs.join(", "))
            })
            .collect();
        let b = if self.bcast.is_empty() {
            String::new()
        } else {
            let n: Vec<&str> = self.bcast.iter().map(|&i| names[i].as_str()).collect();
            format!("B@[{}]", n.join(","))
        };
        match (b.is_empty(), self.bcast_inside) {
            (true, _) => format!("{pad}({})", groups.join(", ")),
            (false, true) => format!("{pad}({}; {b})", groups.join(", ")),
            (false, false) => format!("{pad}({}) {b}", groups.join(", ")),
        }
    }

    fn bind(&self, m: &Machine, dtype: DType) -> Result<TensorLayout, String> {
        let text = self.text(m);
        TensorLayout::parse(&text, m, Some(&self.logical), dtype)
            .map_err(|e| format!("{text}: {e}"))
    }

    fn ids(&self, c: C) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (g, subs) in self.groups.iter().enumerate() {
            for (j, s) in subs.iter().enumerate() {
                if s.class == c {
                    out.push((g, j));
                }
            }
        }
        out
    }

    /// Gives class `c` strides: omitted (compact, in order of appearance) or explicit in
    /// a random nesting order, with gaps where the positions stay below `limit`.
    fn restride(&mut self, c: C, rng: &mut Rng, limit: u64, explicit: bool) {
        let ids = self.ids(c);
        if !explicit {
            for &(g, j) in &ids {
                self.groups[g][j].stride = None;
            }
            return;
        }
        let mut order = ids;
        rng.shuffle(&mut order);
        for gaps in [true, false] {
            let (mut acc, mut max) = (1u64, 0u64);
            for &(g, j) in &order {
                let s = &mut self.groups[g][j];
                s.stride = Some(acc);
                max += (s.size - 1) * acc;
                let gap = if gaps && rng.chance(1, 3) { 2 } else { 1 };
                acc *= s.size * gap;
            }
            if max < limit {
                return;
            }
        }
    }
}

fn factors(mut n: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut p = 2;
    while n > 1 {
        while n.is_multiple_of(p) {
            out.push(p);
            n /= p;
        }
        p += 1;
    }
    out
}

/// A random layout of `logical` on `m`: padding, levels split with strides (some
/// positions idle, `1_L` sometimes), replicated levels (named in `B@` or not), `W`
/// packing, `Time` steps.
fn gen_spec(rng: &mut Rng, m: &Machine, dtype: DType, logical: &[u64]) -> Spec {
    let fan: Vec<u64> = m.addressable_levels().iter().map(|a| a.fanout).collect();
    let slots = m.word_bytes / dtype.bytes();
    let mut budget = fan.clone();
    let mut w_budget = slots;
    let mut times = 0;
    let mut groups = Vec::new();
    for &n in logical {
        let padded = if rng.chance(1, 4) {
            n + 1 + rng.below(3) as u64
        } else {
            n
        };
        let mut f = factors(padded);
        rng.shuffle(&mut f);
        let mut sizes: Vec<u64> = Vec::new();
        for x in f {
            match sizes.last_mut() {
                Some(l) if rng.chance(1, 3) => *l *= x,
                _ => sizes.push(x),
            }
        }
        if sizes.is_empty() {
            sizes.push(1);
        }
        let mut g = Vec::new();
        for s in sizes {
            let levels: Vec<usize> = (0..fan.len())
                .filter(|&i| budget[i].is_multiple_of(s))
                .collect();
            let class = if !levels.is_empty() && rng.chance(3, 5) {
                let i = levels[rng.below(levels.len())];
                budget[i] /= s;
                C::Lv(i)
            } else if s > 1 && w_budget.is_multiple_of(s) && rng.chance(1, 2) {
                w_budget /= s;
                C::W
            } else if s <= 3 && times < 2 && rng.chance(1, 4) {
                times += 1;
                C::Time
            } else {
                C::Mem
            };
            g.push(Sub {
                size: s,
                class,
                stride: None,
            });
        }
        groups.push(g);
    }
    // `1_L`: a level named with one position; the others idle.
    for (i, &b) in budget.iter().enumerate() {
        if b == fan[i] && rng.chance(1, 4) {
            let g = rng.below(groups.len());
            let at = rng.below(groups[g].len() + 1);
            groups[g].insert(
                at,
                Sub {
                    size: 1,
                    class: C::Lv(i),
                    stride: None,
                },
            );
        }
    }
    let mut spec = Spec {
        logical: logical.to_vec(),
        groups,
        bcast: Vec::new(),
        bcast_inside: rng.chance(1, 2),
    };
    for (i, &f) in fan.iter().enumerate() {
        let e = rng.chance(1, 2);
        spec.restride(C::Lv(i), rng, f, e);
    }
    for (c, limit) in [(C::W, slots), (C::Mem, u64::MAX), (C::Time, u64::MAX)] {
        let e = rng.chance(1, 2);
        spec.restride(c, rng, limit, e);
    }
    if rng.chance(1, 2) {
        spec.bcast = (0..fan.len())
            .filter(|&i| spec.ids(C::Lv(i)).is_empty() && rng.chance(2, 3))
            .collect();
    }
    spec
}

fn lm_words(m: &Machine) -> u64 {
    m.leaf_memory_bytes() / m.word_bytes
}

/// A random layout that binds and takes at most `room` LM words per PE.
fn gen_layout(
    rng: &mut Rng,
    m: &Machine,
    dtype: DType,
    logical: &[u64],
    room: u64,
) -> (Spec, TensorLayout) {
    let mut last = String::new();
    for _ in 0..50 {
        let spec = gen_spec(rng, m, dtype, logical);
        match spec.bind(m, dtype) {
            Ok(l) if l.footprint_words() <= room => return (spec, l),
            Ok(l) => last = format!("{l}: {} words", l.footprint_words()),
            Err(e) => last = e,
        }
    }
    panic!("no valid layout of {logical:?} on {}; last: {last}", m.name)
}

const DTYPES: [DType; 6] = [
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::F64,
    DType::S32,
    DType::U8,
];

fn gen_dtype(rng: &mut Rng, m: &Machine) -> DType {
    loop {
        let d = DTYPES[rng.below(DTYPES.len())];
        if d.bytes() <= m.word_bytes {
            return d;
        }
    }
}

fn gen_dims(rng: &mut Rng) -> Vec<u64> {
    const SIZES: [u64; 10] = [1, 2, 3, 4, 5, 6, 8, 12, 16, 32];
    let rank = 1 + rng.below(3);
    loop {
        let d: Vec<u64> = (0..rank).map(|_| SIZES[rng.below(SIZES.len())]).collect();
        if d.iter().product::<u64>() <= 512 {
            return d;
        }
    }
}

/// A random DRAM layout: any dimension order, sometimes tiled `T(2,2)` (`T(2)` for rank 1).
fn gen_xla(rng: &mut Rng, rank: usize) -> XlaLayout {
    let mut m2m: Vec<usize> = (0..rank).collect();
    rng.shuffle(&mut m2m);
    let tiles = if rng.chance(1, 3) {
        vec![Tile::new(&[2, 2][..rank.min(2)])]
    } else {
        Vec::new()
    };
    XlaLayout {
        minor_to_major: m2m,
        tiles,
        memory_space: 0,
    }
}

/// One random case: a machine, a tensor, its layout in LM and its layout in DRAM.
struct Case {
    m: Machine,
    dtype: DType,
    dims: Vec<u64>,
    spec: Spec,
    layout: TensorLayout,
    xla: XlaLayout,
    data: Vec<u8>,
}

impl Case {
    fn new(seed: u64, m: Machine) -> (Case, Rng) {
        let mut rng = Rng::new(seed);
        let dtype = gen_dtype(&mut rng, &m);
        let dims = gen_dims(&mut rng);
        // Half of LM: a second layout of the tensor fits beside it.
        let (spec, layout) = gen_layout(&mut rng, &m, dtype, &dims, lm_words(&m) / 2);
        let xla = gen_xla(&mut rng, dims.len());
        let data = init_data(&Init::Random { seed }, dtype, &dims);
        (
            Case {
                m,
                dtype,
                dims,
                spec,
                layout,
                xla,
                data,
            },
            rng,
        )
    }

    /// LM words left beside the tensor.
    fn room(&self) -> u64 {
        lm_words(&self.m) - self.layout.footprint_words()
    }

    fn describe(&self) -> String {
        format!(
            "{} {}{:?}{} in {}",
            self.m.name,
            self.dtype,
            self.dims,
            self.xla,
            self.spec.text(&self.m)
        )
    }

    /// An engine with the tensor `x` declared (and its data in DRAM in functional mode).
    fn engine(&self, mode: Mode) -> Engine {
        let mut e = Engine::new(self.m.clone(), mode);
        let data = (mode == Mode::Functional).then(|| self.data.clone());
        e.state
            .declare(
                "x",
                self.dtype,
                self.dims.clone(),
                self.dims.clone(),
                self.xla.clone(),
                data,
            )
            .expect("declare");
        if mode == Mode::Timing {
            e.state
                .set_in_dram(e.state.tensor_id("x").unwrap(), self.xla.clone());
        }
        e
    }
}

/// `cases` random cases (or `PROPTEST_CASES`); a failure prints its seed (the
/// generator's only input).
fn config(cases: u32) -> ProptestConfig {
    let env = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig {
        cases: env.unwrap_or(cases),
        max_global_rejects: 1 << 20,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn all_indices(shape: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|p| (0..n).map(move |i| [p.clone(), vec![i]].concat()))
            .collect();
    }
    out
}

// ---------------------------------------------------------------------------
// Looking into LM
// ---------------------------------------------------------------------------

fn matches(p: &Placement, pos: &[u64]) -> bool {
    p.pos
        .iter()
        .zip(pos)
        .all(|(a, b)| a.is_none_or(|a| a == *b))
}

/// Checks that every PE the layout of `name` places an element on holds that element's
/// bytes of `want` (row-major), and that every element has as many copies as the
/// layout has replicas.
fn check_lm(eng: &Engine, name: &str, want: &[u8]) -> Result<(), String> {
    let t = &eng.state.tensors[eng.state.tensor_id(name).unwrap()];
    let r = t.lm.as_ref().ok_or(format!("`{name}` is not in LM"))?;
    let (eb, wb) = (
        t.dtype.bytes() as usize,
        eng.state.machine.word_bytes as usize,
    );
    let fp = r.layout.footprint_words() as usize;
    let idxs = all_indices(&t.dims);
    let places: Vec<Placement> = idxs
        .iter()
        .map(|i| r.layout.place(i).expect("in range"))
        .collect();
    let mut copies = vec![0u64; idxs.len()];
    for e in eng.state.sw.pes() {
        let pe = eng.state.sw.world.get::<Pe>(e).expect("pe");
        let lm = eng.state.sw.world.get::<Lm>(e).expect("lm");
        for (k, p) in places.iter().enumerate() {
            if !matches(p, &pe.pos) {
                continue;
            }
            let at =
                (r.offset as usize + p.t as usize * fp + p.addr as usize) * wb + p.w as usize * eb;
            let got = lm.data.get(at..at + eb);
            let exp = &want[k * eb..(k + 1) * eb];
            if got != Some(exp) {
                return Err(format!(
                    "element {:?} on PE {} {:?}: got {got:?}, want {exp:?}",
                    idxs[k], pe.global, pe.pos
                ));
            }
            copies[k] += 1;
        }
    }
    let reps = r.layout.replicas();
    if let Some(k) = copies.iter().position(|&c| c != reps) {
        return Err(format!(
            "element {:?} is on {} PEs, want {reps}",
            idxs[k], copies[k]
        ));
    }
    Ok(())
}

/// Every PE's bytes of the LM region of `name`.
fn region(eng: &Engine, name: &str) -> Vec<Vec<u8>> {
    let r = eng.state.tensors[eng.state.tensor_id(name).unwrap()]
        .lm
        .as_ref()
        .expect("resident");
    let wb = eng.state.machine.word_bytes as usize;
    let (a, b) = (r.offset as usize * wb, (r.offset + r.words) as usize * wb);
    eng.state
        .sw
        .pes()
        .map(|e| eng.state.sw.world.get::<Lm>(e).expect("lm").data[a..b].to_vec())
        .collect()
}

// ---------------------------------------------------------------------------
// 1. Load then Store returns every tensor bit-exactly
// ---------------------------------------------------------------------------

fn load_store_round_trip(c: &Case, rng: &mut Rng) -> Result<(), TestCaseError> {
    let what = c.describe();
    let mut e = c.engine(Mode::Functional);
    e.load(e.state.tensor_id("x").unwrap(), c.layout.clone())
        .map_err(|err| TestCaseError::fail(format!("{what}: {err}")))?;
    check_lm(&e, "x", &c.data).map_err(|err| TestCaseError::fail(format!("{what}: {err}")))?;
    // Store into another DRAM layout: the content, not the byte order, must survive.
    let out = gen_xla(rng, c.dims.len());
    e.store(e.state.tensor_id("x").unwrap(), out.clone())
        .map_err(|err| TestCaseError::fail(format!("{what}: {err}")))?;
    let got = e
        .state
        .dram_row_major(e.state.tensor_id("x").unwrap())
        .expect("stored");
    prop_assert!(got == c.data, "{what}, stored in {out}: the data changed");
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn load_then_store_returns_every_tensor(seed in any::<u64>(), mi in 0usize..3) {
        let (c, mut rng) = Case::new(seed, machine(mi));
        load_store_round_trip(&c, &mut rng)?;
    }
}

#[test]
fn every_dtype_round_trips_packed_padded_and_tiled() {
    let m = mncore2_small();
    for (k, dtype) in DTYPES.into_iter().enumerate() {
        let slots = m.word_bytes / dtype.bytes();
        let text = format!(
            "(30,{})/((8_L2B, 2_L1B, 2), (4_PE, 2_Time, {slots}_W); B@[MAB])",
            8 * slots - 1
        );
        let dims = vec![30, 8 * slots - 1];
        let layout = TensorLayout::parse(&text, &m, Some(&dims), dtype)
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        for xla in [
            XlaLayout::default_for(2),
            XlaLayout {
                minor_to_major: vec![0, 1],
                tiles: vec![Tile::new(&[2, 2])],
                memory_space: 0,
            },
        ] {
            let data = init_data(&Init::Random { seed: k as u64 }, dtype, &dims);
            let mut e = Engine::new(m.clone(), Mode::Functional);
            e.state
                .declare(
                    "x",
                    dtype,
                    dims.clone(),
                    dims.clone(),
                    xla.clone(),
                    Some(data.clone()),
                )
                .unwrap();
            e.load(e.state.tensor_id("x").unwrap(), layout.clone())
                .unwrap();
            check_lm(&e, "x", &data).unwrap_or_else(|err| panic!("{dtype} {text}: {err}"));
            e.store(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2))
                .unwrap();
            assert!(
                e.state
                    .dram_row_major(e.state.tensor_id("x").unwrap())
                    .unwrap()
                    == data,
                "{dtype} {text} from {xla}"
            );
        }
    }
}

#[test]
fn toy4_worked_examples_round_trip() {
    let m = toy4();
    for (text, dims) in [
        ("((4_PE, 3:8), (8:1))", vec![12, 8]),
        ("((3:8, 4_PE), (8:1))", vec![12, 8]),
        ("((2_PE:2, 6:4), (2_PE:1, 4:1))", vec![12, 8]),
        ("(10,7)/((3:7, 4_PE), (7:1))", vec![10, 7]),
        ("((12:8), (8:1); B@[PE])", vec![12, 8]),
        ("((1_PE, 12), (8))", vec![12, 8]),
        ("((2_PE:2, 6), (8))", vec![12, 8]),
    ] {
        for xla in ["{1,0}", "{0,1}", "{0,1:T(2,2)}", "{1,0:T(2,2)}"] {
            let shape = format!("f32[{},{}]{xla}", dims[0], dims[1]);
            let xl = mnsim_arch::shape::parse(&shape)
                .unwrap()
                .layout_or_default();
            let data = init_data(&Init::Iota, DType::F32, &dims);
            let mut e = Engine::new(m.clone(), Mode::Functional);
            e.state
                .declare(
                    "x",
                    DType::F32,
                    dims.clone(),
                    dims.clone(),
                    xl.clone(),
                    Some(data.clone()),
                )
                .unwrap();
            let l = TensorLayout::parse(text, &m, Some(&dims), DType::F32).unwrap();
            e.load(e.state.tensor_id("x").unwrap(), l).unwrap();
            check_lm(&e, "x", &data).unwrap_or_else(|err| panic!("{text} {shape}: {err}"));
            e.store(e.state.tensor_id("x").unwrap(), xl).unwrap();
            assert!(
                e.state
                    .dram_row_major(e.state.tensor_id("x").unwrap())
                    .unwrap()
                    == data,
                "{text} {shape}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 2. Timing and functional mode give identical reports
// ---------------------------------------------------------------------------

/// Load A, Relayout to B, Reduce (Max) over a level B replicates (if any), Store.
fn program(
    c: &Case,
    mode: Mode,
    b: &TensorLayout,
    reduce: Option<&str>,
    out: &XlaLayout,
) -> Result<Engine, String> {
    let mut e = c.engine(mode);
    e.load(e.state.tensor_id("x").unwrap(), c.layout.clone())
        .map_err(|x| x.to_string())?;
    e.relayout("Relayout", e.state.tensor_id("x").unwrap(), b.clone(), None)
        .map_err(|x| x.to_string())?;
    if let Some(l) = reduce {
        let l = e.state.level_id(l).ok_or("no such level")?;
        e.reduce(e.state.tensor_id("x").unwrap(), l, Combine::Max, None)
            .map_err(|x| x.to_string())?;
    }
    e.store(e.state.tensor_id("x").unwrap(), out.clone())
        .map_err(|x| x.to_string())?;
    Ok(e)
}

fn same_op(t: &OpReport, f: &OpReport) -> Result<(), String> {
    let mut diffs = Vec::new();
    if t.cycles != f.cycles {
        diffs.push(format!("cycles {} vs {}", t.cycles, f.cycles));
    }
    if t.stages != f.stages {
        diffs.push(format!("stages {:#?} vs {:#?}", t.stages, f.stages));
    }
    if t.ready_cycles != f.ready_cycles {
        diffs.push(format!(
            "ready {:?} vs {:?}",
            t.ready_cycles, f.ready_cycles
        ));
    }
    if t.bottleneck != f.bottleneck {
        diffs.push(format!("bottleneck {} vs {}", t.bottleneck, f.bottleneck));
    }
    if diffs.is_empty() && t != f {
        diffs.push(format!("{t:#?} vs {f:#?}"));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(format!("op {} ({}): {}", t.index, t.op, diffs.join("; ")))
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn timing_and_functional_charge_the_same(seed in any::<u64>(), mi in 0usize..3) {
        let (c, mut rng) = Case::new(seed, machine(mi));
        let (bspec, b) = gen_layout(&mut rng, &c.m, c.dtype, &c.dims, c.room());
        let rep: Vec<&str> = b.levels().iter().filter(|l| l.replicated).map(|l| l.name.as_str()).collect();
        let reduce = (!rep.is_empty()).then(|| rep[rng.below(rep.len())]);
        let out = gen_xla(&mut rng, c.dims.len());
        let what = format!("{} -> {} (reduce {reduce:?})", c.describe(), bspec.text(&c.m));
        let t = program(&c, Mode::Timing, &b, reduce, &out).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
        let f = program(&c, Mode::Functional, &b, reduce, &out).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
        prop_assert_eq!(t.rec.ops.len(), f.rec.ops.len());
        for (a, b) in t.rec.ops.iter().zip(&f.rec.ops) {
            same_op(a, b).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
        }
        prop_assert_eq!(t.state.sw.clock(), f.state.sw.clock());
        prop_assert_eq!(t.state.lm_peak_bytes, f.state.lm_peak_bytes);
        // Max over copies keeps the values.
        prop_assert!(f.state.dram_row_major(f.state.tensor_id("x").unwrap()).expect("stored") == c.data, "{}: data changed", what);
    }
}

fn scenario_files() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    files
}

/// Runs every plan of a scenario in both modes; returns the functional reports.
fn both_modes(sc: &scenario::Scenario, src: &Source) -> Vec<Report> {
    let mut out = Vec::new();
    for plan in scenario::plans_to_run(sc) {
        let res = scenario::resolve(sc, src, plan.as_deref(), &[], &BTreeMap::new())
            .unwrap_or_else(|e| panic!("{} {plan:?}: {e:?}", src.path));
        let mut reps = Vec::new();
        for mode in [Mode::Timing, Mode::Functional] {
            let mut r = res.clone();
            r.mode = mode;
            let o = mnsim_sim::run::run(&r)
                .unwrap_or_else(|e| panic!("{} {plan:?} {mode:?}: {e}", src.path));
            reps.push(o.report);
        }
        let f = reps.pop().expect("functional");
        let mut t = reps.pop().expect("timing");
        assert_eq!((t.mode.as_str(), f.mode.as_str()), ("timing", "functional"));
        if res.verify {
            assert_eq!(
                f.verified,
                Some(true),
                "{} {plan:?}: {:?}",
                src.path,
                f.warnings
            );
        }
        assert_eq!(t.ops.len(), f.ops.len());
        for (a, b) in t.ops.iter().zip(&f.ops) {
            same_op(a, b).unwrap_or_else(|e| panic!("{} {plan:?}: {e}", src.path));
        }
        // Everything else too, but the mode, the verification and its warning.
        t.mode = f.mode.clone();
        t.verified = f.verified;
        t.warnings
            .retain(|w| !w.contains("verify needs functional mode"));
        assert_eq!(t, f, "{} {plan:?}", src.path);
        out.push(f);
    }
    out
}

#[test]
fn shipped_scenarios_give_the_same_report_in_both_modes() {
    let files = scenario_files();
    assert!(!files.is_empty());
    for path in files {
        let (sc, src) =
            scenario::load(&path).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        // Scenarios written for timing mode (the rate table, the 8192³ peak matmul) are
        // sized for counting, not for computing every value on the host: they run in
        // timing mode in `sim/tests/scenarios.rs`.
        if sc.mode != Mode::Functional {
            continue;
        }
        let reps = both_modes(&sc, &src);
        assert_eq!(reps.len(), scenario::plans_to_run(&sc).len());
    }
}

/// Every transfer op, and their host reference, through the scenario runner.
const TOY4_TRANSFERS: &str = r#"Scenario(
    name: "toy4 transfers",
    machine: Preset("toy4"),
    mode: Functional,
    tensors: {
        "x": (dtype: F32, shape: "f32[12,8]{0,1:T(2,2)}", init: Random(seed: 5)),
        "y": (dtype: F32, shape: "f32[12,8]"),
        "r": (dtype: F32, shape: "f32[12,8]"),
        "v": (dtype: S32, shape: "s32[10]", init: Random(seed: 6)),
    },
    program: [
        Load(tensor: "x", layout: "$x"),
        Relayout(tensor: "x", layout: "((3:8, 4_PE), (8:1))", out: "y"),
        Broadcast(tensor: "y", layout: "((12:8), (8:1); B@[PE])", out: "r"),
        Reduce(tensor: "r", level: "PE", op: Add),
        Relayout(tensor: "x", layout: "((2_PE:2, 6:4), (2_PE:1, 4:1))"),
        Store(tensor: "x"),
        Store(tensor: "y"),
        Store(tensor: "r"),
        Broadcast(tensor: "v", layout: "(10)/((2_Time, 6)) B@[PE]"),
        Reduce(tensor: "v", level: "PE", op: Max),
        Store(tensor: "v"),
    ],
    plans: {
        "rows": {"x": "((4_PE, 3:8), (8:1))"},
        "padded": {"x": "(12,8)/((4_PE, 3), (3, 3))"},
    },
    verify: true,
)"#;

#[test]
fn transfer_ops_give_the_same_report_in_both_modes_and_verify() {
    let src = Source {
        path: "toy4_transfers.ron".into(),
        text: TOY4_TRANSFERS.into(),
    };
    let sc = scenario::parse(&src.text, &src.path).unwrap_or_else(|e| panic!("{e:?}"));
    let reps = both_modes(&sc, &src);
    assert_eq!(reps.len(), 2);
    for r in &reps {
        assert_eq!(r.verified, Some(true), "{:?}", r.warnings);
        let kinds: Vec<&str> = r.ops.iter().map(|o| o.op.as_str()).collect();
        assert_eq!(kinds[..4], ["Load", "Relayout", "Broadcast", "Reduce"]);
    }
}

// ---------------------------------------------------------------------------
// 3. Relayout A → B → A is the identity
// ---------------------------------------------------------------------------

/// The (level, direction) of every stage a relayout from `a` to `b` takes: up to the
/// memory above the root-most level where some element must move, and down again; one
/// local copy when no element must move. Worked out from the placements alone.
fn expected_route(m: &Machine, a: &TensorLayout, b: &TensorLayout) -> Vec<(String, String)> {
    let mut cross: Option<usize> = None;
    for idx in all_indices(a.logical_shape()) {
        let (pa, pb) = (a.place(&idx).expect("a"), b.place(&idx).expect("b"));
        // A replicated source level has the element everywhere; a split one only at
        // its position, which `b` must keep.
        if let Some(i) = (0..pa.pos.len()).find(|&i| pa.pos[i].is_some() && pa.pos[i] != pb.pos[i])
        {
            cross = Some(cross.map_or(i, |c| c.min(i)));
        }
    }
    let Some(i) = cross else {
        return vec![("PE".into(), "local".into())];
    };
    let (chain, _) = stage_levels(m);
    let meet = meet_of(m, &a.levels()[i].name);
    let from = chain
        .iter()
        .position(|&l| l == meet)
        .expect("meet on the chain");
    let mut out: Vec<(String, String)> = chain[from..]
        .iter()
        .rev()
        .map(|l| (l.to_string(), "up".to_string()))
        .collect();
    out.extend(
        chain[from..]
            .iter()
            .map(|l| (l.to_string(), "down".to_string())),
    );
    out
}

fn route(op: &OpReport) -> Vec<(String, String)> {
    op.stages
        .iter()
        .map(|s| (s.level.clone(), s.direction.clone()))
        .collect()
}

fn relayout_round_trip(c: &Case, b: &TensorLayout, bt: &str) -> Result<(), TestCaseError> {
    let what = format!("{} <-> {bt}", c.describe());
    let fail = |e: String| TestCaseError::fail(format!("{what}: {e}"));
    let mut e = c.engine(Mode::Functional);
    e.load(e.state.tensor_id("x").unwrap(), c.layout.clone())
        .map_err(|x| fail(x.to_string()))?;
    let before = region(&e, "x");
    let there = e
        .relayout("Relayout", e.state.tensor_id("x").unwrap(), b.clone(), None)
        .map_err(|x| fail(x.to_string()))?;
    check_lm(&e, "x", &c.data).map_err(|x| fail(format!("after A -> B: {x}")))?;
    let back = e
        .relayout(
            "Relayout",
            e.state.tensor_id("x").unwrap(),
            c.layout.clone(),
            None,
        )
        .map_err(|x| fail(x.to_string()))?;
    let after = region(&e, "x");
    prop_assert!(before == after, "{}: the LM bytes of A changed", what);
    // The relayout's own stages come first; a source with `Time` steps read in another
    // order adds the stages of its slices sent again (docs/model.md, streams).
    for (op, from, to, dir) in [
        (&there, &c.layout, b, "A -> B"),
        (&back, b, &c.layout, "B -> A"),
    ] {
        let want = expected_route(&c.m, from, to);
        let got = route(op);
        prop_assert!(
            got.len() == want.len() || from.time_span() > 1,
            "{}: {:?}",
            what,
            got
        );
        prop_assert_eq!(
            &got[..want.len().min(got.len())],
            &want[..],
            "{} ({})",
            what,
            dir
        );
    }
    let own = [
        expected_route(&c.m, &c.layout, b).len(),
        expected_route(&c.m, b, &c.layout).len(),
    ];
    for (op, n) in [&there, &back].into_iter().zip(own) {
        for s in op.stages.iter().take(n) {
            let kinds: &[&str] = match s.direction.as_str() {
                "up" => &["gather"],
                "down" => &["distribute", "broadcast"],
                _ => &["copy"],
            };
            prop_assert!(kinds.contains(&s.kind.as_str()), "{}: stage {:?}", what, s);
        }
        if op.stages.first().is_some_and(|s| s.direction == "local") {
            prop_assert_eq!(&op.bottleneck, "PE local copy");
        }
    }
    e.store(e.state.tensor_id("x").unwrap(), c.xla.clone())
        .map_err(|x| fail(x.to_string()))?;
    prop_assert!(
        e.state
            .dram_row_major(e.state.tensor_id("x").unwrap())
            .expect("stored")
            == c.data,
        "{}: Store after the round trip",
        what
    );
    Ok(())
}

/// `spec` with the sub-axes of class `a` and class `b` swapped where their sizes match
/// (both classes get compact strides again). `None` when no sizes match.
fn swap_classes(spec: &Spec, a: C, b: C, rng: &mut Rng) -> Option<Spec> {
    let xs = spec.ids(a);
    let ys = spec.ids(b);
    let mut pairs = Vec::new();
    for &x in &xs {
        for &y in &ys {
            if spec.groups[x.0][x.1].size == spec.groups[y.0][y.1].size
                && spec.groups[x.0][x.1].size > 1
            {
                pairs.push((x, y));
            }
        }
    }
    if pairs.is_empty() {
        return None;
    }
    let (x, y) = pairs[rng.below(pairs.len())];
    let mut s = spec.clone();
    s.groups[x.0][x.1].class = b;
    s.groups[y.0][y.1].class = a;
    s.restride(a, rng, 0, false);
    s.restride(b, rng, 0, false);
    Some(s)
}

/// `spec` changed at level `pe` only: a PE sub-axis trades places with a memory one of
/// the same size, or the PE strides change, or (PE replicated) a memory sub-axis
/// becomes a PE one.
fn pe_variant(spec: &Spec, pe: usize, fan: u64, rng: &mut Rng) -> Option<Spec> {
    if rng.chance(2, 3)
        && let Some(s) = swap_classes(spec, C::Lv(pe), C::Mem, rng)
    {
        return Some(s);
    }
    let mut s = spec.clone();
    if !s.ids(C::Lv(pe)).is_empty() {
        s.restride(C::Lv(pe), rng, fan, true);
        return Some(s);
    }
    let mems: Vec<(usize, usize)> = s
        .ids(C::Mem)
        .into_iter()
        .filter(|&(g, j)| s.groups[g][j].size > 1 && fan.is_multiple_of(s.groups[g][j].size))
        .collect();
    let &(g, j) = mems.get(rng.below(mems.len()))?;
    s.groups[g][j].class = C::Lv(pe);
    s.bcast.retain(|&i| i != pe);
    s.restride(C::Lv(pe), rng, 0, false);
    s.restride(C::Mem, rng, 0, false);
    Some(s)
}

proptest! {
    #![proptest_config(config(64))]

    /// Any two layouts of the same shape.
    #[test]
    fn relayout_there_and_back_is_the_identity(seed in any::<u64>(), mi in 0usize..3) {
        let (c, mut rng) = Case::new(seed, machine(mi));
        let (bspec, b) = gen_layout(&mut rng, &c.m, c.dtype, &c.dims, c.room());
        relayout_round_trip(&c, &b, &bspec.text(&c.m))?;
    }

    /// Layouts that differ only in memory order: a copy inside every LM.
    #[test]
    fn relayout_in_memory_order_only_is_a_local_copy(seed in any::<u64>(), mi in 0usize..3) {
        let (c, mut rng) = Case::new(seed, machine(mi));
        let mut bspec = c.spec.clone();
        bspec.restride(C::Mem, &mut rng, u64::MAX, true);
        if !bspec.bind(&c.m, c.dtype).is_ok_and(|b| b.footprint_words() <= c.room()) {
            // Gaps beyond LM: the same order without gaps fits, as A does.
            bspec.restride(C::Mem, &mut rng, 0, true);
        }
        let b = bspec.bind(&c.m, c.dtype).map_err(TestCaseError::fail)?;
        relayout_round_trip(&c, &b, &bspec.text(&c.m))?;
        let mut e = c.engine(Mode::Timing);
        e.load(e.state.tensor_id("x").unwrap(), c.layout.clone()).expect("load");
        let op = e.relayout("Relayout", e.state.tensor_id("x").unwrap(), b, None).expect("relayout");
        prop_assert_eq!(op.stages.len(), 1);
        prop_assert_eq!((op.stages[0].direction.as_str(), op.stages[0].kind.as_str()), ("local", "copy"));
    }

    /// Layouts that differ at PE only (a PE sub-axis trades places with a memory one):
    /// the data goes no higher than the memory above the PEs.
    #[test]
    fn relayout_at_pe_only_stays_below_the_pes_parent(seed in any::<u64>(), mi in 0usize..3) {
        let m = machine(mi);
        let pe = m.addressable_levels().len() - 1;
        let (c, mut rng) = Case::new(seed, m);
        let fan = c.m.addressable_levels()[pe].fanout;
        let bspec = pe_variant(&c.spec, pe, fan, &mut rng);
        prop_assume!(bspec.is_some());
        let bspec = bspec.expect("some");
        let b = bspec.bind(&c.m, c.dtype).map_err(TestCaseError::fail)?;
        relayout_round_trip(&c, &b, &bspec.text(&c.m))?;
        let r = expected_route(&c.m, &c.layout, &b);
        let above = meet_of(&c.m, "PE");
        prop_assert!(r.iter().all(|(l, _)| l == above || l == "PE"), "{:?}", r);
    }
}

#[test]
fn relayout_across_l2b_meets_at_the_group() {
    let m = mncore2_small();
    let dims = vec![32u64, 16];
    let data = init_data(&Init::Random { seed: 9 }, DType::F32, &dims);
    let pairs = [
        // L2B positions change: rows move between Groups' L2Bs.
        (
            "((8_L2B, 2_L1B, 2), (2_MAB, 4_PE, 2_W))",
            "((2, 8_L2B, 2_L1B), (2_MAB, 4_PE, 2_W))",
        ),
        // Split over L2B → replicated over L2B.
        (
            "((8_L2B, 4), (4_PE, 2_W, 2); B@[L1B,MAB])",
            "((32), (4_PE, 2_W, 2); B@[L2B,L1B,MAB])",
        ),
        // Split over L2B and L1B differently.
        (
            "((4_L2B:2, 2_L1B, 4), (4_PE, 4))",
            "((2_L1B, 4_L2B:1, 4), (4, 4_PE))",
        ),
    ];
    for (a, b) in pairs {
        let la = TensorLayout::parse(a, &m, Some(&dims), DType::F32)
            .unwrap_or_else(|e| panic!("{a}: {e}"));
        let lb = TensorLayout::parse(b, &m, Some(&dims), DType::F32)
            .unwrap_or_else(|e| panic!("{b}: {e}"));
        let spec = Spec {
            logical: dims.clone(),
            groups: Vec::new(),
            bcast: Vec::new(),
            bcast_inside: false,
        };
        let c = Case {
            m: m.clone(),
            dtype: DType::F32,
            dims: dims.clone(),
            spec,
            layout: la.clone(),
            xla: XlaLayout::default_for(2),
            data: data.clone(),
        };
        relayout_round_trip(&c, &lb, b).unwrap_or_else(|e| panic!("{a} <-> {b}: {e}"));
        let mut e = c.engine(Mode::Timing);
        e.load(e.state.tensor_id("x").unwrap(), la).unwrap();
        let op = e
            .relayout("Relayout", e.state.tensor_id("x").unwrap(), lb, None)
            .unwrap();
        let levels: Vec<(&str, &str)> = op
            .stages
            .iter()
            .map(|s| (s.level.as_str(), s.direction.as_str()))
            .collect();
        assert_eq!(
            levels,
            [
                ("L1B", "up"),
                ("L2B", "up"),
                ("Group", "up"),
                ("Group", "down"),
                ("L2B", "down"),
                ("L1B", "down")
            ],
            "{a} -> {b}"
        );
    }
}

#[test]
fn relayout_in_memory_order_on_toy4_is_one_local_copy() {
    let m = toy4();
    let dims = vec![12u64, 8];
    let data = init_data(&Init::Random { seed: 1 }, DType::F32, &dims);
    let a = TensorLayout::parse("((4_PE, 3:8), (8:1))", &m, Some(&dims), DType::F32).unwrap();
    let b = TensorLayout::parse("((4_PE, 3:1), (8:3))", &m, Some(&dims), DType::F32).unwrap();
    let mut e = Engine::new(m, Mode::Functional);
    e.state
        .declare(
            "x",
            DType::F32,
            dims.clone(),
            dims.clone(),
            XlaLayout::default_for(2),
            Some(data.clone()),
        )
        .unwrap();
    e.load(e.state.tensor_id("x").unwrap(), a).unwrap();
    let op = e
        .relayout("Relayout", e.state.tensor_id("x").unwrap(), b, None)
        .unwrap();
    assert_eq!(op.stages.len(), 1, "{:?}", op.stages);
    let s = &op.stages[0];
    assert_eq!(
        (s.level.as_str(), s.direction.as_str(), s.kind.as_str()),
        ("PE", "local", "copy")
    );
    // Each PE copies its 24 words (4 bytes each) at 8 bytes per cycle.
    assert_eq!(
        (s.bytes, s.max_port_bytes, s.cycles),
        (4 * 24 * 4, 24 * 4, 12)
    );
    assert_eq!(op.bottleneck, "PE local copy");
    check_lm(&e, "x", &data).unwrap();
}

// ---------------------------------------------------------------------------
// 4. Reduce
// ---------------------------------------------------------------------------

/// `v` combined with itself `n` times in `dtype`, left to right (a hand computation:
/// floats round to the dtype after every step, integers wrap).
fn folded(dtype: DType, op: Combine, v: &[u8], n: u64) -> Vec<u8> {
    let eb = dtype.bytes() as usize;
    let mut out = v.to_vec();
    for (o, x) in out.chunks_exact_mut(eb).zip(v.chunks_exact(eb)) {
        match (dtype, op) {
            (DType::F32, Combine::Add) => {
                let x = f32::from_le_bytes(x.try_into().unwrap());
                let mut acc = x;
                for _ in 1..n {
                    acc += x;
                }
                o.copy_from_slice(&acc.to_le_bytes());
            }
            (DType::S32, Combine::Add) => {
                let x = i32::from_le_bytes(x.try_into().unwrap());
                let mut acc = x;
                for _ in 1..n {
                    acc = acc.wrapping_add(x);
                }
                o.copy_from_slice(&acc.to_le_bytes());
            }
            (_, Combine::Add) => {
                // f16/bf16: the exact sum of two values rounds once to the dtype.
                let x = elem::read(dtype, x);
                let mut acc = x;
                for _ in 1..n {
                    elem::write(dtype, acc + x, o);
                    acc = elem::read(dtype, o);
                }
                elem::write(dtype, acc, o);
            }
            (_, Combine::Max | Combine::Min) => {}
        }
    }
    out
}

fn reduce_case(
    m: &Machine,
    text: &str,
    dims: &[u64],
    dtype: DType,
    level: &str,
    op: Combine,
    fan: u64,
) {
    let layout =
        TensorLayout::parse(text, m, Some(dims), dtype).unwrap_or_else(|e| panic!("{text}: {e}"));
    let data = init_data(&Init::Random { seed: 11 }, dtype, dims);
    let want = folded(dtype, op, &data, fan);
    if op == Combine::Add && dtype.is_float() {
        assert!(want != data, "the sum must differ from the value");
    }
    let mut reports = Vec::new();
    for mode in [Mode::Timing, Mode::Functional] {
        let mut e = Engine::new(m.clone(), mode);
        let d = (mode == Mode::Functional).then(|| data.clone());
        e.state
            .declare(
                "x",
                dtype,
                dims.to_vec(),
                dims.to_vec(),
                XlaLayout::default_for(dims.len()),
                d,
            )
            .unwrap();
        e.state.set_in_dram(
            e.state.tensor_id("x").unwrap(),
            XlaLayout::default_for(dims.len()),
        );
        e.load(e.state.tensor_id("x").unwrap(), layout.clone())
            .unwrap();
        let lv = e.state.level_id(level).unwrap();
        let r = e
            .reduce(e.state.tensor_id("x").unwrap(), lv, op, None)
            .unwrap_or_else(|err| panic!("{text}: {err}"));
        let (chain, _) = stage_levels(m);
        let meet = meet_of(m, level);
        let from = chain.iter().position(|&l| l == meet).unwrap();
        let mut expect: Vec<(String, String)> = chain[from..]
            .iter()
            .rev()
            .map(|l| (l.to_string(), "up".into()))
            .collect();
        expect.extend(chain[from..].iter().map(|l| (l.to_string(), "down".into())));
        assert_eq!(route(&r), expect, "{text}");
        // Copies combine where they meet; below, partials are gathered.
        for s in r.stages.iter().filter(|s| s.direction == "up") {
            let kind = if s.level == meet { "reduce" } else { "gather" };
            assert_eq!(s.kind, kind, "{text}: {s:?}");
        }
        e.store(
            e.state.tensor_id("x").unwrap(),
            XlaLayout::default_for(dims.len()),
        )
        .unwrap();
        if mode == Mode::Functional {
            check_lm(&e, "x", &want).unwrap_or_else(|err| panic!("{text} {op:?}: {err}"));
            assert!(
                e.state
                    .dram_row_major(e.state.tensor_id("x").unwrap())
                    .unwrap()
                    == want,
                "{text} {op:?}"
            );
        }
        reports.push(e.rec.ops.clone());
    }
    assert_eq!(reports[0], reports[1], "{text}: timing vs functional");
}

#[test]
fn reduce_over_a_replicated_level_combines_every_copy() {
    let toy = toy4();
    let small = mncore2_small();
    for op in [Combine::Add, Combine::Max] {
        reduce_case(
            &toy,
            "((12:8), (8:1); B@[PE])",
            &[12, 8],
            DType::F32,
            "PE",
            op,
            4,
        );
        reduce_case(
            &toy,
            "((12), (4_W)) B@[PE]",
            &[12, 4],
            DType::U8,
            "PE",
            op,
            4,
        );
        reduce_case(
            &small,
            "((8_L2B, 2_L1B, 2), (4_PE, 4)) B@[MAB]",
            &[32, 16],
            DType::F32,
            "MAB",
            op,
            2,
        );
        reduce_case(
            &small,
            "((8_L2B, 2_MAB, 2), (4_PE, 3, 2_W))",
            &[32, 24],
            DType::S32,
            "L1B",
            op,
            2,
        );
        reduce_case(
            &small,
            "((2_L1B, 2_MAB, 3), (2_PE, 4_W))",
            &[12, 8],
            DType::F16,
            "L2B",
            op,
            8,
        );
        reduce_case(
            &small,
            "((8_L2B, 2_L1B, 2_MAB, 3), (4_W)) B@[PE]",
            &[96, 4],
            DType::BF16,
            "PE",
            op,
            4,
        );
    }
}

#[test]
fn reduce_errors_and_partial_tensors() {
    let m = toy4();
    let dims = vec![12u64, 8];
    let data = init_data(&Init::Random { seed: 2 }, DType::F32, &dims);
    let mut e = Engine::new(m.clone(), Mode::Functional);
    e.state
        .declare(
            "x",
            DType::F32,
            dims.clone(),
            dims.clone(),
            XlaLayout::default_for(2),
            Some(data.clone()),
        )
        .unwrap();
    e.load(
        e.state.tensor_id("x").unwrap(),
        TensorLayout::parse("((4_PE, 3:8), (8:1))", &m, Some(&dims), DType::F32).unwrap(),
    )
    .unwrap();
    let err = e.reduce(pe_x(&e), pe(&e), Combine::Add, None).unwrap_err();
    assert!(err.to_string().contains("split over"), "{err}");
    assert!(err.to_string().contains("`x`"), "{err}");
    // A level id the machine does not have (toy4 has no L1B to name).
    assert_eq!(e.state.level_id("L1B"), None);
    let err = e
        .reduce(pe_x(&e), LevelId(7), Combine::Add, None)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("is not an addressable level of toy4"),
        "{err}"
    );
    // The failed ops changed nothing.
    assert_eq!(e.rec.ops.len(), 1);
    check_lm(&e, "x", &data).unwrap();

    // No op makes a partial tensor yet (a matmul split over its contraction axis will);
    // mark one through the public state.
    e.load(
        e.state.tensor_id("x").unwrap(),
        TensorLayout::parse("((12:8), (8:1); B@[PE])", &m, Some(&dims), DType::F32).unwrap(),
    )
    .unwrap();
    e.state
        .tensors
        .get_mut(e.state.tensor_id("x").unwrap())
        .unwrap()
        .lm
        .as_mut()
        .unwrap()
        .partial = vec![0];
    let err = e
        .store(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2))
        .unwrap_err();
    assert!(err.to_string().contains("partial results over PE"), "{err}");
    let b = TensorLayout::parse("((4_PE, 3:8), (8:1))", &m, Some(&dims), DType::F32).unwrap();
    let err = e
        .relayout("Relayout", e.state.tensor_id("x").unwrap(), b, None)
        .unwrap_err();
    assert!(err.to_string().contains("partial results over PE"), "{err}");
    // Reducing the partial level completes it: the four copies add up.
    e.reduce(pe_x(&e), pe(&e), Combine::Add, None).unwrap();
    assert!(
        e.state.tensors[e.state.tensor_id("x").unwrap()]
            .lm
            .as_ref()
            .unwrap()
            .partial
            .is_empty()
    );
    e.store(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2))
        .unwrap();
    assert!(
        e.state
            .dram_row_major(e.state.tensor_id("x").unwrap())
            .unwrap()
            == folded(DType::F32, Combine::Add, &data, 4)
    );
}

// ---------------------------------------------------------------------------
// 5. Bytes are conserved
// ---------------------------------------------------------------------------

fn check_bytes(c: &Case) -> Result<(), String> {
    let l = &c.layout;
    let (chain, children) = stage_levels(&c.m);
    let wb = c.m.word_bytes;
    let real = c.dims.iter().product::<u64>() * c.dtype.bytes();
    let shard = l.words_per_pe() * wb;
    let replicated = |name: &str| l.levels().iter().any(|x| x.name == name && x.replicated);
    let mut e = c.engine(Mode::Timing);
    let load = e
        .load(e.state.tensor_id("x").unwrap(), l.clone())
        .map_err(|x| x.to_string())?;
    let store = e
        .store(e.state.tensor_id("x").unwrap(), c.xla.clone())
        .map_err(|x| x.to_string())?;

    // Load: DRAM, then the chain root first.
    let s = &load.stages;
    if s.len() != chain.len() + 1 || s[0].level != "DRAM" {
        return Err(format!("load stages {s:?}"));
    }
    let nodes = if replicated("L2B") {
        dram_nodes(&c.m)
    } else {
        1
    };
    if s[0].bytes != real * nodes {
        return Err(format!(
            "DRAM down bytes {} != {real} × {nodes}",
            s[0].bytes
        ));
    }
    let last = s.last().expect("stages");
    if last.child_bytes != l.pes_used() * shard {
        return Err(format!(
            "every PE receives its shard: {} != {} × {shard}",
            last.child_bytes,
            l.pes_used()
        ));
    }
    for k in 0..chain.len() {
        let st = &s[k + 1];
        if st.level != chain[k] || st.direction != "down" {
            return Err(format!("load stage {k}: {st:?}"));
        }
        if k + 1 < chain.len() {
            let next = &s[k + 2];
            // What the children of level k receive is what level k+1 sends.
            if st.child_bytes != next.bytes {
                return Err(format!(
                    "{}: child bytes {} != next stage's bytes {}",
                    st.level, st.child_bytes, next.bytes
                ));
            }
        }
        // Distinct bytes of a node = the sum over its children when they hold disjoint
        // data (no replicated level on the children's side), fewer when they share.
        let overlap = children[k].iter().any(|n| replicated(n));
        let ok = if overlap {
            st.bytes < st.child_bytes
        } else {
            st.bytes == st.child_bytes
        };
        if !ok {
            return Err(format!(
                "{} (overlap {overlap}): bytes {} vs child bytes {}",
                st.level, st.bytes, st.child_bytes
            ));
        }
        if !overlap && st.kind != "distribute" {
            return Err(format!("{}: {} without replication", st.level, st.kind));
        }
    }

    // Store: one replica of every shard goes up, then DRAM.
    let s = &store.stages;
    if s.len() != chain.len() + 1 || s.last().expect("stages").level != "DRAM" {
        return Err(format!("store stages {s:?}"));
    }
    let up = l.distinct_shards() * shard;
    for (k, st) in s[..chain.len()].iter().enumerate() {
        if st.level != chain[chain.len() - 1 - k] || st.direction != "up" || st.kind != "gather" {
            return Err(format!("store stage {k}: {st:?}"));
        }
        if st.bytes != up || st.child_bytes != up {
            return Err(format!(
                "{} up: bytes {} / {} != {up}",
                st.level, st.bytes, st.child_bytes
            ));
        }
    }
    let d = s.last().expect("dram");
    if d.bytes != real {
        return Err(format!("DRAM up bytes {} != {real}", d.bytes));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn bytes_are_conserved(seed in any::<u64>(), mi in 0usize..3) {
        let (c, _) = Case::new(seed, machine(mi));
        check_bytes(&c).map_err(|e| TestCaseError::fail(format!("{}: {e}", c.describe())))?;
    }
}

#[test]
fn spec_public_table_distribute_and_broadcast_from_one_l1bm() {
    // docs/model.md: with mncore2's rates, distributing N LW from one L1BM to its 64 PEs takes
    // N/64 cycles at that stage; broadcasting them takes N cycles.
    let m = preset("mncore2", &[]);
    let n = 64 * 64u64;
    // 64 f64 (one LW each) per PE on the 64 PEs of L1B 0 of L2B 0.
    let dist = TensorLayout::parse(
        "((1_L2B, 1_L1B, 16_MAB, 4_PE, 64))",
        &m,
        Some(&[n]),
        DType::F64,
    )
    .unwrap();
    let bcast = TensorLayout::parse(
        "((1_L2B, 1_L1B, 4096)) B@[MAB,PE]",
        &m,
        Some(&[n]),
        DType::F64,
    )
    .unwrap();
    let mut e = Engine::new(m, Mode::Timing);
    e.state
        .declare(
            "x",
            DType::F64,
            vec![n],
            vec![n],
            XlaLayout::default_for(1),
            None,
        )
        .unwrap();
    e.state
        .set_in_dram(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(1));
    let d = e.load(e.state.tensor_id("x").unwrap(), dist).unwrap();
    let l1b = d.stages.iter().find(|s| s.level == "L1B").unwrap();
    assert_eq!((l1b.kind.as_str(), l1b.cycles), ("distribute", n / 64));
    e.state.free(e.state.tensor_id("x").unwrap()).unwrap();
    let b = e.load(e.state.tensor_id("x").unwrap(), bcast).unwrap();
    let l1b = b.stages.iter().find(|s| s.level == "L1B").unwrap();
    assert_eq!(
        (l1b.kind.as_str(), l1b.cycles, l1b.bytes),
        ("broadcast", n, n * 8)
    );
}

#[test]
fn port_statistics_add_up_the_stages() {
    let cases: [(Machine, Vec<u64>, [&str; 3], &str); 2] = [
        (
            toy4(),
            vec![12, 8],
            [
                "((4_PE, 3:8), (8:1))",
                "((2_PE:2, 6:4), (2_PE:1, 4:1))",
                "((12:8), (8:1); B@[PE])",
            ],
            "PE",
        ),
        (
            mncore2_small(),
            vec![32, 16],
            [
                "((8_L2B, 2_L1B, 2), (2_MAB, 4_PE, 2_W))",
                "((2, 8_L2B, 2_L1B), (2_MAB, 4_PE, 2_W))",
                "((32), (4_PE, 2_W, 2); B@[L2B,L1B,MAB])",
            ],
            "MAB",
        ),
    ];
    for (m, dims, [a, b, c], level) in cases {
        let parse = |t: &str| TensorLayout::parse(t, &m, Some(&dims), DType::F32).unwrap();
        let mut e = Engine::new(m.clone(), Mode::Timing);
        e.state
            .declare(
                "x",
                DType::F32,
                dims.clone(),
                dims.clone(),
                XlaLayout::default_for(2),
                None,
            )
            .unwrap();
        e.state
            .set_in_dram(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2));
        e.load(e.state.tensor_id("x").unwrap(), parse(a)).unwrap();
        e.relayout("Relayout", e.state.tensor_id("x").unwrap(), parse(b), None)
            .unwrap();
        e.relayout("Broadcast", e.state.tensor_id("x").unwrap(), parse(c), None)
            .unwrap();
        let lv = e.state.level_id(level).unwrap();
        e.reduce(e.state.tensor_id("x").unwrap(), lv, Combine::Max, None)
            .unwrap();
        e.store(e.state.tensor_id("x").unwrap(), XlaLayout::default_for(2))
            .unwrap();
        let (chain, _) = stage_levels(&m);
        for name in chain {
            let k = m.level_index(name).unwrap();
            let (mut down, mut up, mut busy) = (0u64, 0u64, 0u64);
            for (_, n) in e.state.sw.nodes(k) {
                let ps = e.state.sw.world.get::<PortStats>(n).expect("port stats");
                down += ps.bytes_down;
                up += ps.bytes_up;
                busy += ps.busy_cycles;
            }
            let stages = || {
                e.rec
                    .ops
                    .iter()
                    .flat_map(|o| &o.stages)
                    .filter(|s| s.level == name)
            };
            let sum = |dir: &str| {
                stages()
                    .filter(|s| s.direction == dir)
                    .map(|s| s.bytes)
                    .sum::<u64>()
            };
            assert_eq!((down, up), (sum("down"), sum("up")), "{} {name}", m.name);
            assert!(up > 0 && down > 0, "{} {name}", m.name);
            if m.nodes_at(k) == 1 {
                assert_eq!(busy, stages().map(|s| s.cycles).sum::<u64>(), "{name}");
            }
        }
    }
}

/// Tensor `x` of `e`.
fn pe_x(e: &Engine) -> mnsim_sim::program::TensorId {
    e.state.tensor_id("x").unwrap()
}

/// Level `PE` of `e`'s machine.
fn pe(e: &Engine) -> LevelId {
    e.state.level_id("PE").unwrap()
}
