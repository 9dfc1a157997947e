//! The planner's candidate generation (`candidates::generate`, which builds each
//! layout's parsed form directly and skips what an earlier tier bound) against a
//! reference that takes the text path it replaced: every layout written as text, the
//! texts an earlier tier tried skipped, each parsed, bound and named by its canonical
//! text, duplicates by that text dropped. Same candidates, same order, same texts,
//! layouts and core flags, for the shipped machines and machines whose level names a
//! sub-axis suffix reads otherwise (`W`, `Time`, a name twice).

use super::{Candidate, Space, generate};
use mnsim_arch::{DType, Machine, preset};
use proptest::prelude::*;

/// The text path, as `candidates::generate` was before it built layouts directly (with
/// the helpers both share, which the change left as they were).
mod reference {
    use super::super::{
        Candidate, Space, permutations,
        stream::time_steps,
        tiers::{assign, level_choices, next_pick},
    };
    use mnsim_arch::layout::{NO_BCAST, layout_text};
    use mnsim_arch::machine::AddrLevel;
    use mnsim_arch::{DType, LayoutExpr, Machine, TensorLayout};
    use std::collections::HashSet;

    /// What every tier reads, and the texts tried and kept so far.
    struct Gen<'a> {
        m: &'a Machine,
        levels: Vec<AddrLevel>,
        dims: &'a [u64],
        dtype: DType,
        implicit_pad: bool,
        tried: HashSet<String>,
        seen: HashSet<String>,
        out: Vec<Candidate>,
    }

    pub fn generate(
        m: &Machine,
        dims: &[u64],
        dtype: DType,
        implicit_pad: bool,
        space: Space,
    ) -> Vec<Candidate> {
        let mut g = Gen {
            m,
            levels: m.addressable_levels(),
            dims,
            dtype,
            implicit_pad,
            tried: HashSet::new(),
            seen: HashSet::new(),
            out: Vec::new(),
        };
        let core = Space {
            partial_fanout: false,
            level_orders: false,
            max: usize::MAX,
            ..space
        };
        let mut tiers = vec![core];
        if space.partial_fanout {
            tiers.push(Space {
                level_orders: false,
                ..space
            });
        }
        if space.level_orders {
            tiers.push(space);
        }
        for tier in tiers {
            g.tier(tier);
            if g.out.len() >= space.max {
                break;
            }
        }
        let mut out = g.out;
        out.sort_by_key(|c| !c.core);
        out
    }

    /// The memory part in an axis's order.
    const MEM: usize = usize::MAX;

    impl Gen<'_> {
        fn tier(&mut self, space: Space) {
            let rank = self.dims.len();
            if rank == 0 || self.dims.contains(&0) {
                return;
            }
            let choices = level_choices(&self.levels, rank, space);
            let mut pick = vec![0usize; self.levels.len()];
            let mut groups: Vec<Vec<(usize, u64)>> = vec![Vec::new(); rank];
            let mut rest = self.dims.to_vec();
            while self.out.len() < space.max {
                if assign(&pick, &choices, self.dims, (&mut groups, &mut rest)) {
                    self.emit(&groups, &rest, space);
                }
                if !next_pick(&mut pick, &choices) {
                    break;
                }
            }
        }

        fn emit(&mut self, groups: &[Vec<(usize, u64)>], rest: &[u64], space: Space) {
            let rank = self.dims.len();
            let slots = (self.m.word_bytes / self.dtype.bytes().max(1)).max(1);
            let lm_words = self.m.leaf_memory_bytes() / self.m.word_bytes.max(1);
            let orders: Vec<Vec<Vec<(usize, u64)>>> = (groups.iter())
                .map(|g| {
                    let mut items = g.clone();
                    items.push((MEM, 0));
                    match space.level_orders {
                        true => permutations(&items),
                        false => vec![items],
                    }
                })
                .collect();
            let total: usize = orders.iter().map(Vec::len).product();
            for code in 0..total {
                let core = code == 0
                    && (groups.iter().flatten()).all(|&(li, p)| p == self.levels[li].fanout);
                let mut c = code;
                let chosen: Vec<&Vec<(usize, u64)>> = (orders.iter())
                    .map(|o| {
                        let x = &o[c % o.len()];
                        c /= o.len();
                        x
                    })
                    .collect();
                for packed in [false, true] {
                    if packed
                        && (!space.packing || slots == 1 || !rest[rank - 1].is_multiple_of(slots))
                    {
                        continue;
                    }
                    let mut mem = rest.to_vec();
                    if packed {
                        mem[rank - 1] /= slots;
                    }
                    let Some(words) = mem.iter().try_fold(1u64, |a, &b| a.checked_mul(b)) else {
                        continue;
                    };
                    let mut time = vec![1u64; rank];
                    if words > lm_words {
                        let Some(steps) = time_steps(&mem, words.div_ceil(lm_words.max(1))) else {
                            continue;
                        };
                        for a in 0..rank {
                            mem[a] /= steps[a];
                        }
                        time = steps;
                    }
                    let word = packed.then_some(slots);
                    let Some(body) = self.body_text(&chosen, (&time, &mem), word) else {
                        continue;
                    };
                    self.bind(layout_text(None, &body, NO_BCAST), core);
                }
            }
        }

        fn body_text(
            &self,
            chosen: &[&Vec<(usize, u64)>],
            (time, mem): (&[u64], &[u64]),
            slots: Option<u64>,
        ) -> Option<Vec<Vec<String>>> {
            let rank = chosen.len();
            let mut body = Vec::with_capacity(rank);
            for a in 0..rank {
                let mut subs: Vec<String> = Vec::new();
                if time[a] > 1 {
                    subs.push(format!("{}_Time", time[a]));
                }
                for &(li, p) in chosen[a] {
                    if li == MEM {
                        if mem[a] > 1 {
                            subs.push(mem[a].to_string());
                        } else if chosen[a].last() != Some(&(MEM, 0)) {
                            return None;
                        }
                    } else {
                        subs.push(format!("{p}_{}", self.levels[li].name));
                    }
                }
                match slots.filter(|_| a == rank - 1) {
                    Some(w) => subs.push(format!("{w}_W")),
                    None if subs.is_empty() => subs.push("1".to_string()),
                    None => {}
                }
                body.push(subs);
            }
            Some(body)
        }

        fn bind(&mut self, text: String, core: bool) {
            if !self.tried.insert(text.clone()) {
                return;
            }
            let Ok(expr) = LayoutExpr::parse(&text) else {
                return;
            };
            let (m, dims) = (self.m, Some(self.dims));
            if let Ok(layout) = TensorLayout::bind(&expr, m, dims, self.dtype, self.implicit_pad) {
                let canon = layout.canonical();
                if self.seen.insert(canon.clone()) {
                    self.out.push(Candidate { layout, core });
                }
            }
        }
    }
}

/// A machine by name: a preset, or a preset with level names a suffix reads otherwise
/// (`mncore1/W`: its second addressable level named `W`; `/Time` likewise; `/twice`:
/// its second named as its first).
fn machine(name: &str) -> Machine {
    let (base, rename) = name.split_once('/').unwrap_or((name, ""));
    let mut m = preset(base).unwrap();
    if !rename.is_empty() {
        let addressable: Vec<usize> = (0..m.levels.len())
            .filter(|&i| m.levels[i].addressable)
            .collect();
        let to = match rename {
            "twice" => m.levels[addressable[0]].name.clone(),
            other => other.to_string(),
        };
        m.levels[addressable[1]].name = to;
    }
    m
}

/// The two generators' candidates, compared one by one.
fn same(machine_name: &str, dims: &[u64], dtype: DType, implicit_pad: bool, space: Space) {
    let m = machine(machine_name);
    let fast = generate(&m, dims, dtype, implicit_pad, space, false);
    let slow = reference::generate(&m, dims, dtype, implicit_pad, space);
    let at = format!("{machine_name} {dims:?} {dtype} pad {implicit_pad} {space:?}");
    let text = |c: &[Candidate], i: usize| c.get(i).map(Candidate::text);
    for i in 0..fast.len().max(slow.len()) {
        let (f, s) = (text(&fast, i), text(&slow, i));
        assert_eq!(
            f,
            s,
            "{at}: candidate {i} of {} (reference: {})",
            fast.len(),
            slow.len()
        );
        assert!(
            fast[i].layout == slow[i].layout,
            "{at}: {f:?} binds otherwise"
        );
        assert_eq!(fast[i].core, slow[i].core, "{at}: {f:?} core");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn the_generator_makes_what_the_text_path_made(
        machine in prop::sample::select(vec![
            "mncore2", "mncore1", "toy4", "mncore1/W", "mncore2/Time", "mncore1/twice",
        ]),
        dims in prop::collection::vec(
            prop::sample::select(vec![1u64, 2, 3, 5, 6, 8, 12, 16, 24, 48, 64, 100, 128, 384, 1000, 4096]),
            1..=4,
        ),
        dtype in prop::sample::select(vec![DType::F32, DType::F16, DType::S8, DType::S4, DType::F64]),
        implicit_pad in any::<bool>(),
        partial_fanout in any::<bool>(),
        level_orders in any::<bool>(),
        packing in any::<bool>(),
        max in prop::sample::select(vec![0usize, 1, 5, 40, 300, 4_000]),
    ) {
        let space = Space { partial_fanout, level_orders, packing, max };
        same(machine, &dims, dtype, implicit_pad, space);
    }
}

#[test]
fn the_gated_mlp_shapes_are_generated_as_by_the_text_path() {
    for dims in [[1, 4096], [1, 14336], [4096, 14336], [14336, 4096]] {
        same("mncore2", &dims, DType::F32, false, Space::default());
    }
}

#[test]
fn odd_lengths_are_also_tried_padded_by_at_most_a_32nd() {
    use super::padded_dims;
    assert_eq!(
        padded_dims(&[3000, 500, 50257, 768, 128, 3]),
        Some(vec![3072, 512, 51200, 768, 128, 3])
    );
    // Lengths with factors of two enough keep their exact candidates alone.
    assert_eq!(padded_dims(&[768, 3072, 12, 1]), None);
    // 3000 rows split over every L2B and MAB only padded (3000 = 8 x 375): such a
    // layout is a candidate, with its pad prefix, and no unpadded one splits them so.
    let m = preset("mncore2").unwrap();
    let c = generate(&m, &[3000, 1000], DType::F32, false, Space::default(), true);
    let unpadded = generate(
        &m,
        &[3000, 1000],
        DType::F32,
        false,
        Space::default(),
        false,
    );
    assert!(unpadded.iter().all(|c| !c.text().contains('/')));
    let rows_over_all = |c: &Candidate| {
        let t = c.text();
        let body = t.split_once('/').map_or(t.as_str(), |(_, b)| b).to_string();
        let rows = body.split("), (").next().unwrap_or("").to_string();
        rows.contains("16_MAB") && rows.contains("8_L2B")
    };
    let (padded, exact): (Vec<&Candidate>, Vec<&Candidate>) =
        c.iter().partition(|c| c.text().starts_with("(3000,1000)/"));
    assert!(
        padded.iter().any(|c| rows_over_all(c)),
        "{} padded",
        padded.len()
    );
    assert!(!exact.iter().any(|c| rows_over_all(c)));
}
