//! Shapes, layouts and the tiled linear index, through the public API.

use mnsim_arch::shape::{Tile, TileDim, linear_index_with_tile, parse, parse_index};
use mnsim_arch::{DType, Dim, Shape, ShapeError, XlaLayout};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::str::FromStr;

fn layout_of(s: &str) -> (Vec<u64>, XlaLayout) {
    let shape: Shape = s.parse().unwrap();
    (shape.dims_at_bound().unwrap(), shape.layout_or_default())
}

// ---- linear index ------------------------------------------------------------

#[test]
fn seed_formula_worked_example() {
    assert_eq!(linear_index_with_tile(&[2, 3], &[3, 5], &[2, 2]), 17);
}

#[test]
fn layout_linear_index_matches_worked_example() {
    let (dims, l) = layout_of("f32[3,5]{1,0:T(2,2)}");
    assert_eq!(l.linear_index(&dims, &[2, 3]).unwrap(), 17);
    // 2x3 tiles of 2x2: 24 elements including padding.
    assert_eq!(l.buffer_elements(&dims).unwrap(), 24);
    assert_eq!(l.tiled_shape(&dims).unwrap(), vec![2, 3, 2, 2]);
    // The seed's older notation without `T`.
    let (_, old) = layout_of("f32[3,5]{1,0:(2,2)}");
    assert_eq!(old, l);
}

#[test]
fn single_tile_layout_equals_seed_formula() {
    let (dims, l) = layout_of("f32[7,10]{1,0:T(3,4)}");
    for i in 0..7 {
        for j in 0..10 {
            assert_eq!(
                l.linear_index(&dims, &[i, j]).unwrap(),
                linear_index_with_tile(&[i, j], &[7, 10], &[3, 4])
            );
        }
    }
}

#[test]
fn repeated_tiling_4x8() {
    let (dims, l) = layout_of("f32[4,8]{1,0:T(2,4)(2,1)}");
    let row = |r: u64| -> Vec<u64> {
        (0..8)
            .map(|c| l.linear_index(&dims, &[r, c]).unwrap())
            .collect()
    };
    assert_eq!(row(0), vec![0, 2, 4, 6, 8, 10, 12, 14]);
    assert_eq!(row(1), vec![1, 3, 5, 7, 9, 11, 13, 15]);
    assert_eq!(row(2), vec![16, 18, 20, 22, 24, 26, 28, 30]);
    assert_eq!(row(3), vec![17, 19, 21, 23, 25, 27, 29, 31]);
    assert_eq!(l.buffer_elements(&dims).unwrap(), 32);
}

#[test]
fn minor_to_major_0_1_is_column_major() {
    let (dims, l) = layout_of("f32[2,3]{0,1}");
    let logical = [['a', 'b', 'c'], ['d', 'e', 'f']];
    let mut memory = [' '; 6];
    for (i, row) in logical.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            let at = l.linear_index(&dims, &[i as u64, j as u64]).unwrap();
            memory[at as usize] = v;
        }
    }
    assert_eq!(memory.iter().collect::<String>(), "adbecf");
    let (_, rm) = layout_of("f32[2,3]{1,0}");
    assert_eq!(rm, XlaLayout::default_for(2));
    assert_eq!(rm.linear_index(&dims, &[1, 0]).unwrap(), 3);
}

#[test]
fn combined_dims_equal_tiling_the_merged_array() {
    let (dims, l) = layout_of("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}");
    assert_eq!(dims, vec![2, 7, 8, 11, 10]);
    let mut n = 0;
    for a in 0..2 {
        for b in 0..7 {
            for c in 0..8 {
                for d in 0..11 {
                    for e in 0..10 {
                        let merged = [(a * 7 + b) * 8 + c, d * 10 + e];
                        assert_eq!(
                            l.linear_index(&dims, &[a, b, c, d, e]).unwrap(),
                            linear_index_with_tile(&merged, &[112, 110], &[2, 3])
                        );
                        n += 1;
                    }
                }
            }
        }
    }
    assert_eq!(n, 2 * 7 * 8 * 11 * 10);
    assert_eq!(
        l.buffer_elements(&dims).unwrap(),
        56 * 37 * 2 * 3 // ⌈112/2⌉·⌈110/3⌉ tiles of 2x3
    );
}

#[test]
fn linear_index_argument_errors() {
    let (dims, l) = layout_of("f32[3,5]{1,0:T(2,2)}");
    let e = l.linear_index(&dims, &[3, 0]).unwrap_err();
    assert!(e.message.contains("out of bounds"), "{e}");
    let e = l.linear_index(&dims, &[1]).unwrap_err();
    assert!(e.message.contains("index has 1 entries"), "{e}");
    let e = l.linear_index(&[3], &[1]).unwrap_err();
    assert!(e.message.contains("layout is for rank 2"), "{e}");
    let bad = XlaLayout {
        minor_to_major: vec![0, 0],
        tiles: vec![],
        memory_space: 0,
    };
    let e = bad.linear_index(&[3, 5], &[1, 1]).unwrap_err();
    assert!(e.message.contains("not a permutation"), "{e}");
    assert_eq!(bad.contiguous_run(&[3, 5]), 1);
    // The single-tile formula never panics on bad input.
    assert_eq!(linear_index_with_tile(&[2], &[3, 5], &[2, 2]), u64::MAX);
    assert_eq!(linear_index_with_tile(&[2, 3], &[3, 5], &[0, 2]), u64::MAX);
    assert_eq!(linear_index_with_tile(&[3, 3], &[3, 5], &[2, 2]), u64::MAX);
    assert_eq!(
        linear_index_with_tile(&[1, 1], &[u64::MAX, u64::MAX], &[1, 1]),
        u64::MAX
    );
}

#[test]
fn contiguous_run() {
    let (d, l) = layout_of("f32[1024,512]");
    assert_eq!(l.contiguous_run(&d), 512);
    let (d, l) = layout_of("f32[1024,512]{0,1}");
    assert_eq!(l.contiguous_run(&d), 1024);
    let (d, l) = layout_of("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}");
    assert_eq!(l.contiguous_run(&d), 1);
    let (d, l) = layout_of("f32[1024,512]{1,0:T(8,128)}");
    assert_eq!(l.contiguous_run(&d), 128);
    let (d, l) = layout_of("f32[]");
    assert_eq!(l.contiguous_run(&d), 1);
}

// ---- parsing and printing ----------------------------------------------------

const EXAMPLES: &[&str] = &[
    "f32[1024,512]",
    "f32[]",
    "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}",
    "f32[3,5]{1,0:T(2,2)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
    "f32[1024,512]{0,1}",
    "f32[4]{0:S(1)}",
    "f32[<=64,512]",
    "f32[?,512]",
    "f32[batch<=64,seq,?]{0,2,1}",
    "s32[4,8]{1,0:T(2,4)(2,1)}",
    "pred[]{:S(5)}",
    "u8[0,3]",
];

#[test]
fn examples_round_trip() {
    for s in EXAMPLES {
        let shape: Shape = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(shape.to_string(), *s);
        assert_eq!(parse(&shape.to_string()).unwrap(), shape);
    }
}

#[test]
fn parsed_structure() {
    let s = parse("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}").unwrap();
    assert_eq!(s.dtype, DType::BF16);
    assert_eq!(s.rank(), 4);
    assert!(s.is_static());
    let l = s.layout.unwrap();
    assert_eq!(l.minor_to_major, vec![3, 2, 0, 1]);
    assert_eq!(l.tiles, vec![Tile::new(&[8, 128]), Tile::new(&[2, 1])]);
    assert_eq!(l.memory_space, 1);

    let s = parse("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}").unwrap();
    use TileDim::{Combine as C, Size};
    assert_eq!(
        s.layout.unwrap().tiles[0].dims,
        vec![C, C, Size(2), C, Size(3)]
    );

    let s = parse("f32[]").unwrap();
    assert_eq!(s.rank(), 0);
    assert_eq!(s.elements().unwrap(), 1);
    assert_eq!(s.layout, None);
}

#[test]
fn whitespace_and_normalisation() {
    let a = parse("  bf16 [ 8 , 1,1280 ,16384 ] { 3 , 2,0,1 : T ( 8 , 128 ) (2,1) S ( 1 ) }\n")
        .unwrap();
    assert_eq!(
        a.to_string(),
        "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}"
    );
    // A default layout, written out, is the same shape as no layout.
    assert_eq!(parse("f32[4,5]{1,0}").unwrap(), parse("f32[4,5]").unwrap());
    assert_eq!(parse("f32[4,5]{1,0:S(0)}").unwrap().layout, None);
    assert_eq!(
        parse("f32[4]{0:S(1)}")
            .unwrap()
            .layout
            .unwrap()
            .memory_space,
        1
    );
    // Dimension names and aliases.
    let s = parse("f32[batch <= 64, seq ?, n]").unwrap();
    assert_eq!(s.to_string(), "f32[batch<=64,seq,n]");
    assert_eq!(parse("i32[2]").unwrap().dtype, DType::S32);
}

#[test]
fn dynamic_dims() {
    let s = parse("f32[<=64,512,?,batch<=32,seq?,len]").unwrap();
    assert_eq!(
        s.dims,
        vec![
            Dim::Bounded {
                bound: 64,
                name: None
            },
            Dim::Static(512),
            Dim::Dynamic { name: None },
            Dim::Bounded {
                bound: 32,
                name: Some("batch".into())
            },
            Dim::Dynamic {
                name: Some("seq".into())
            },
            Dim::Dynamic {
                name: Some("len".into())
            },
        ]
    );
    assert!(!s.is_static());
    assert_eq!(s.to_string(), "f32[<=64,512,?,batch<=32,seq,len]");
}

#[test]
fn stablehlo() {
    let s = parse("tensor<?x512xf32, #stablehlo.bounds<64, ?>>").unwrap();
    assert_eq!(s.dtype, DType::F32);
    assert_eq!(
        s.dims,
        vec![
            Dim::Bounded {
                bound: 64,
                name: None
            },
            Dim::Static(512)
        ]
    );
    assert_eq!(s.to_string(), "f32[<=64,512]");
    assert_eq!(s.dims_at_bound().unwrap(), vec![64, 512]);

    let s = parse("tensor<16x?xf32>").unwrap();
    assert_eq!(s.dims, vec![Dim::Static(16), Dim::Dynamic { name: None }]);
    let s = parse("tensor<f32>").unwrap();
    assert_eq!(s.rank(), 0);
    assert_eq!(s, parse("f32[]").unwrap());
    let s = parse("tensor<?x?xbf16, #stablehlo.bounds<16, ?>>").unwrap();
    assert_eq!(s.to_string(), "bf16[<=16,?]");
    assert_eq!(parse("tensor<4xi1>").unwrap().dtype, DType::Pred);
    assert_eq!(parse("tensor<4xui8>").unwrap().dtype, DType::U8);
    assert_eq!(
        parse("tensor<f32, #stablehlo.bounds<>>").unwrap(),
        parse("f32[]").unwrap()
    );
}

// ---- errors ------------------------------------------------------------------

#[track_caller]
fn err(input: &str, needle: &str, offset: usize, len: usize) -> ShapeError {
    let e = Shape::from_str(input).expect_err(input);
    assert!(
        e.message.contains(needle),
        "{input}: `{}` lacks `{needle}`",
        e.message
    );
    assert_eq!((e.offset, e.len), (offset, len), "{input}: {e}");
    e
}

#[test]
fn errors_with_offsets() {
    let e = err("f8[4]", "unknown dtype `f8`", 0, 2);
    assert!(e.message.contains("did you mean"));
    assert_eq!(e.to_string(), format!("{} at byte 0", e.message));
    err("  qqqqqq[4]", "unknown dtype", 2, 6);
    err("tensor<4xf33>", "unknown dtype `f33`", 9, 3);

    err("f32[12a,4]", "malformed number `12a`", 4, 3);
    err("f32[-3]", "malformed number", 4, 2);
    err("f32[1.5]", "malformed number", 4, 3);
    err("f32[3,5]{1,0:T(2,0x2)}", "malformed number", 17, 3);

    err("f32[3,5]{1,1}", "not a permutation", 11, 1);
    err("f32[3,5]{0,2}", "not a permutation", 11, 1);
    err("f32[3,5]{0}", "not a permutation", 8, 3);
    err("f32[3,5]{:T(2,2)}", "not a permutation", 8, 9);

    err(
        "f32[4]{0:T(2,2)}",
        "tile (2,2) has 2 dimensions but the shape it tiles has rank 1",
        10,
        5,
    );
    err("f32[3,5]{1,0:T(2,2)(1,1,1,1,1)}", "has rank 4", 19, 11);
    err("f32[3,5]{1,0:T(2,0)}", "tile size 0", 17, 1);
    err(
        "f32[3,5]{1,0:T(2,*)}",
        "`*` cannot be the last tile entry",
        17,
        1,
    );
    err("f32[3,5]{1,0:T()}", "empty tile", 14, 2);

    err(
        "tensor<?x512xf32, #stablehlo.bounds<64>>",
        "has 1 entries but the tensor has rank 2",
        18,
        21,
    );
    err(
        "tensor<?x512xf32, #stablehlo.bounds<64, 8>>",
        "bound on static dimension 1",
        40,
        1,
    );

    err("f32[18446744073709551616]", "overflow", 4, 20);
    err("f32[4294967296,4294967296]", "overflow", 15, 10);
    err("s8[9223372036854775807,1]{1,0:T(2,2)}", "overflow", 31, 5);
    err("f32[4]{0:S(18446744073709551616)}", "overflow", 11, 20);

    err("f32[4] x", "unexpected `x` after the shape", 7, 1);
    err("f32[4]{0:Q(1)}", "unknown layout component `Q`", 9, 1);
    err("f32[4]{0:S(1)S(2)}", "duplicate memory space", 13, 1);
    err("f32[4", "expected `,` or `]`, found end of input", 5, 0);
    err("f32[4é]", "found `é`", 5, 2);
    err("", "expected an element type", 0, 0);
    err("tensor<*xf32>", "unranked", 7, 1);
    err("tensor<4xf32, #foo>", "unsupported tensor encoding", 14, 1);
}

#[test]
fn caret_display() {
    let input = "f32[3,5]{1,0:T(2,0)}";
    let e = parse(input).unwrap_err();
    assert_eq!(e.caret(input), format!("{input}\n{}^", " ".repeat(17)));
}

// ---- semantics ---------------------------------------------------------------

#[test]
fn bind_and_bounds() {
    let s = parse("f32[batch<=64,seq,512,?]").unwrap();
    let e = s.dims_at_bound().unwrap_err();
    assert!(e.message.contains("dimension 1 (`seq`)"), "{e}");
    assert!(s.elements().is_err());

    let mut b = BTreeMap::new();
    b.insert("batch".to_string(), 48);
    b.insert("seq".to_string(), 100);
    b.insert("unused".to_string(), 7);
    let bound = s.bind(&b).unwrap();
    assert_eq!(bound.to_string(), "f32[48,100,512,?]");
    let e = bound.dims_at_bound().unwrap_err();
    assert!(e.message.contains("dimension 3"), "{e}");

    b.insert("batch".to_string(), 65);
    let e = s.bind(&b).unwrap_err();
    assert!(e.message.contains("exceeds the bound 64"), "{e}");

    let s = parse("f32[batch<=64,512]{0,1}").unwrap();
    assert_eq!(s.elements().unwrap(), 64 * 512);
    assert_eq!(s.buffer_bytes().unwrap(), 64 * 512 * 4);
    let b = BTreeMap::from([("batch".to_string(), 48)]);
    let t = s.bind(&b).unwrap();
    assert!(t.is_static());
    assert_eq!(t.elements().unwrap(), 48 * 512);
    assert_eq!(t.layout, s.layout);
}

#[test]
fn elements_overflow_is_an_error() {
    let s = Shape::from_sizes(DType::F32, &[u64::MAX, 2]);
    assert!(s.elements().unwrap_err().message.contains("overflows"));
    let s = Shape::from_sizes(DType::F32, &[u64::MAX / 2]);
    assert!(s.buffer_bytes().is_err());
}

#[test]
fn with_layout_validates_and_normalises() {
    let s = Shape::from_sizes(DType::F32, &[3, 5]);
    assert_eq!(
        s.clone()
            .with_layout(XlaLayout::default_for(2))
            .unwrap()
            .layout,
        None
    );
    let bad = XlaLayout {
        minor_to_major: vec![1, 0],
        tiles: vec![Tile {
            dims: vec![TileDim::Size(2), TileDim::Combine],
        }],
        memory_space: 0,
    };
    assert!(s.with_layout(bad).is_err());
}

#[test]
fn serde_uses_the_text_form() {
    let s = parse("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}").unwrap();
    let j = serde_json::to_string(&s).unwrap();
    assert_eq!(j, "\"bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}\"");
    assert_eq!(serde_json::from_str::<Shape>(&j).unwrap(), s);
    assert!(serde_json::from_str::<Shape>("\"f32[3,5]{1,1}\"").is_err());
}

#[test]
fn index_strings() {
    assert_eq!(parse_index("2,3").unwrap(), vec![2, 3]);
    assert_eq!(parse_index(" 2 , 3 ").unwrap(), vec![2, 3]);
    assert_eq!(parse_index("(2,3)").unwrap(), vec![2, 3]);
    assert_eq!(parse_index("[ 7 ]").unwrap(), vec![7]);
    assert_eq!(parse_index("").unwrap(), Vec::<u64>::new());
    assert!(parse_index("2,x").unwrap_err().contains("`x`"));
    assert!(parse_index("2,,3").is_err());
    assert!(parse_index("-1").is_err());
}

// ---- properties --------------------------------------------------------------

/// Raw tile entries (`true` = `*`) fitted to the rank they apply to.
fn build_layout(rank: usize, mtm: Vec<usize>, raw: Vec<Vec<(bool, u64)>>, space: u64) -> XlaLayout {
    let mut cur = rank;
    let mut tiles = Vec::new();
    for entries in raw {
        let k = entries.len().min(cur);
        let mut dims: Vec<TileDim> = entries[..k]
            .iter()
            .map(|&(c, t)| {
                if c {
                    TileDim::Combine
                } else {
                    TileDim::Size(t)
                }
            })
            .collect();
        if let Some(last) = dims.last_mut()
            && *last == TileDim::Combine
        {
            *last = TileDim::Size(entries[k - 1].1);
        }
        let c = dims.iter().filter(|d| **d == TileDim::Combine).count();
        cur = cur - k + 2 * (k - c);
        tiles.push(Tile { dims });
    }
    XlaLayout {
        minor_to_major: mtm,
        tiles,
        memory_space: space,
    }
}

fn arb_layout_case() -> impl Strategy<Value = (Vec<u64>, XlaLayout)> {
    (1usize..=4).prop_flat_map(|r| {
        (
            prop::collection::vec(1u64..=6, r),
            Just((0..r).collect::<Vec<usize>>()).prop_shuffle(),
            prop::collection::vec(
                prop::collection::vec((prop::bool::weighted(0.25), 1u64..=4), 1..=4),
                0..=2,
            ),
            0u64..3,
        )
            .prop_map(move |(dims, mtm, raw, space)| (dims, build_layout(r, mtm, raw, space)))
    })
}

fn arb_dim() -> impl Strategy<Value = Dim> {
    let name = prop::option::of("[a-z_][a-z0-9_]{0,5}");
    prop_oneof![
        4 => (0u64..4000).prop_map(Dim::Static),
        1 => (0u64..1000, name.clone()).prop_map(|(bound, name)| Dim::Bounded { bound, name }),
        1 => name.prop_map(|name| Dim::Dynamic { name }),
    ]
}

fn all_indices(dims: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![vec![]];
    for &d in dims {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..d).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    out
}

proptest! {
    #[test]
    fn prop_round_trip((sizes, layout) in arb_layout_case(), dims in prop::collection::vec(arb_dim(), 4), d in 0usize..13) {
        let dtype = DType::ALL[d];
        // Static sizes.
        let shape = Shape::from_sizes(dtype, &sizes).with_layout(layout.clone()).unwrap();
        let text = shape.to_string();
        prop_assert_eq!(parse(&text).unwrap(), shape.clone(), "{}", text);
        // Mixed dimension kinds with the same layout.
        let mixed = Shape::new(dtype, dims[..sizes.len()].to_vec()).with_layout(layout).unwrap();
        let text = mixed.to_string();
        prop_assert_eq!(parse(&text).unwrap(), mixed, "{}", text);
    }

    #[test]
    fn prop_linear_index_injective_and_in_buffer((dims, layout) in arb_layout_case()) {
        let n = layout.buffer_elements(&dims).unwrap();
        let mut seen = HashSet::new();
        for ix in all_indices(&dims) {
            let li = layout.linear_index(&dims, &ix).unwrap();
            prop_assert!(li < n, "{:?} -> {} >= {} for {}", ix, li, n, layout);
            prop_assert!(seen.insert(li), "{:?} collides at {} for {}", ix, li, layout);
        }
        let logical: u64 = dims.iter().product();
        prop_assert_eq!(seen.len() as u64, logical);
        prop_assert!(layout.contiguous_run(&dims) >= 1);
    }
}

// ---- robustness --------------------------------------------------------------

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const ALPHABET: &[char] = &[
    '[',
    ']',
    '{',
    '}',
    '(',
    ')',
    '<',
    '>',
    ',',
    ':',
    '*',
    '?',
    '=',
    '#',
    '.',
    '-',
    '+',
    ' ',
    '\t',
    '\n',
    'x',
    'T',
    'S',
    'f',
    'b',
    's',
    'u',
    'a',
    'z',
    '_',
    '0',
    '1',
    '2',
    '3',
    '8',
    '9',
    'é',
    '日',
    '\u{0}',
    '\u{10FFFF}',
    '\u{2028}',
    'ß',
];

fn mutate(rng: &mut XorShift, base: &str) -> String {
    let mut cs: Vec<char> = base.chars().collect();
    for _ in 0..=rng.below(4) {
        let at = rng.below(cs.len() + 1);
        match rng.below(5) {
            0 => cs.insert(at, ALPHABET[rng.below(ALPHABET.len())]),
            1 if at < cs.len() => {
                cs.remove(at);
            }
            2 if at < cs.len() => cs[at] = ALPHABET[rng.below(ALPHABET.len())],
            3 => {
                // Insert a long digit run (overflow candidates).
                for _ in 0..rng.below(25) {
                    cs.insert(at, char::from(b'0' + rng.below(10) as u8));
                }
            }
            _ => {
                let from = rng.below(cs.len() + 1);
                let to = (from + rng.below(8)).min(cs.len());
                let piece: Vec<char> = cs[from..to].to_vec();
                cs.splice(at..at, piece);
            }
        }
    }
    cs.into_iter().collect()
}

#[test]
fn never_panics_on_random_and_mutated_input() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let bases: Vec<&str> = EXAMPLES
        .iter()
        .copied()
        .chain([
            "tensor<?x512xf32, #stablehlo.bounds<64, ?>>",
            "tensor<16x?xf32>",
            "tensor<f32>",
            "f32[batch<=64,seq?,n]{2,1,0:T(*,2)(1,1,1)S(3)}",
        ])
        .collect();
    let mut accepted = 0;
    for i in 0..100_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(30))
                .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                .collect()
        } else {
            let base = bases[rng.below(bases.len())];
            mutate(&mut rng, base)
        };
        let result = std::panic::catch_unwind(|| Shape::from_str(&input));
        let Ok(result) = result else {
            panic!("parser panicked on {input:?}");
        };
        match result {
            Ok(shape) => {
                accepted += 1;
                let text = shape.to_string();
                assert_eq!(parse(&text).as_ref(), Ok(&shape), "{input:?} -> {text}");
                if let Ok(dims) = shape.dims_at_bound() {
                    let l = shape.layout_or_default();
                    let _ = l.buffer_elements(&dims);
                    let _ = l.contiguous_run(&dims);
                    let zero = vec![0; dims.len()];
                    let _ = l.linear_index(&dims, &zero);
                }
            }
            Err(e) => {
                assert!(e.offset + e.len <= input.len(), "{input:?}: {e:?}");
                assert!(input.is_char_boundary(e.offset), "{input:?}: {e:?}");
                assert!(input.is_char_boundary(e.offset + e.len), "{input:?}: {e:?}");
                let _ = e.caret(&input);
            }
        }
    }
    assert!(accepted > 1000, "only {accepted} mutated inputs parsed");
}
