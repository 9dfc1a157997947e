//! Bad graphs never panic: mutated versions of every real graph in `scenarios/workloads/graphs/`
//! (truncated, a digit changed, a number replaced by an odd value, a kind or dtype
//! swapped, a line dropped) are imported and, when they import, run under their default
//! layouts in timing mode. Each must end in a scenario, a report or an error — never a
//! panic. The same for a deterministic sample of oneDNN's corpus (`scenarios/workloads/onednn/`),
//! with mutations towards its low-precision types, quantisation kinds and `undef` layouts.

mod common;

use mnsim_sim::import::{self, Options};
use mnsim_sim::scenario::{self, Mode, Source};

/// xorshift64: deterministic mutations.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len())]
    }
}

/// Odd values a number in the file may become.
const NUMBERS: [&str; 10] = [
    "0",
    "-1",
    "1",
    "-7",
    "4294967296",
    "99999999999999999999999",
    "1e400",
    "0.5",
    "null",
    "\"3\"",
];

/// Strings a kind, dtype or layout type may become.
const WORDS: [&str; 14] = [
    "\"MatMul\"",
    "\"Add\"",
    "\"SoftMax\"",
    "\"Convolution\"",
    "\"Wildcard\"",
    "\"f16\"",
    "\"bf16\"",
    "\"s8\"",
    "\"boolean\"",
    "\"strided\"",
    "\"any\"",
    "\"opaque\"",
    "\"\"",
    "[]",
];

/// A byte range of the text.
type Span = (usize, usize);

/// The spans of `text` that look like JSON numbers and like JSON strings.
fn tokens(text: &str) -> (Vec<Span>, Vec<Span>) {
    let b = text.as_bytes();
    let (mut nums, mut strs) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            strs.push((start, (i + 1).min(b.len())));
        } else if b[i] == b'-' || b[i].is_ascii_digit() {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || b"eE.+-".contains(&b[i])) {
                i += 1;
            }
            nums.push((start, i));
            continue;
        }
        i += 1;
    }
    (nums, strs)
}

/// One mutation of `text`.
fn mutate(text: &str, rng: &mut Rng) -> String {
    let (nums, strs) = tokens(text);
    let splice = |(a, b): Span, with: &str| format!("{}{with}{}", &text[..a], &text[b..]);
    match rng.below(5) {
        0 => text[..rng.below(text.len())].to_string(),
        1 => {
            let (a, _) = nums[rng.below(nums.len())];
            let mut bytes = text.as_bytes().to_vec();
            if bytes[a].is_ascii_digit() {
                bytes[a] = b"0123456789"[rng.below(10)];
            }
            String::from_utf8(bytes).unwrap()
        }
        2 => splice(nums[rng.below(nums.len())], rng.pick(&NUMBERS)),
        3 => splice(strs[rng.below(strs.len())], rng.pick(&WORDS)),
        _ => {
            let lines: Vec<&str> = text.lines().collect();
            let drop = rng.below(lines.len());
            let kept: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != drop)
                .map(|(_, l)| *l)
                .collect();
            kept.join("\n")
        }
    }
}

/// Imports `text`; when it imports, runs plan `default` in timing mode. Returns
/// (imported, ran).
fn import_and_run(text: &str) -> (bool, bool) {
    let src = Source {
        path: "mutated.json".into(),
        text: text.to_string(),
    };
    let Ok(imp) = import::import(&src, &Options::default()) else {
        return (false, false);
    };
    // What `import -o` would write parses back to the scenario the import built.
    let sc = scenario::parse(&imp.text, "mutated.json (imported)")
        .unwrap_or_else(|e| panic!("the printed scenario does not parse: {e:?}"));
    assert_eq!(
        sc, imp.scenario,
        "the printed scenario parses to another one"
    );
    let src = Source {
        path: "mutated.json (imported)".into(),
        text: imp.text,
    };
    let Ok(mut res) = scenario::resolve(&sc, &src, Some("default"), &[], &Default::default())
    else {
        return (true, false);
    };
    res.mode = Mode::Timing;
    (true, mnsim_sim::run::run(&res).is_ok())
}

#[test]
fn mutated_graphs_import_run_or_fail_cleanly() {
    let files = common::graphs::files();
    assert!(files.len() >= 20, "only {} graphs", files.len());
    let mut rng = Rng(0x0DD_6A7A_F00D_0001);
    let (mut tried, mut imported, mut ran) = (0, 0, 0);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for _ in 0..80 {
            let t = mutate(&text, &mut rng);
            tried += 1;
            match std::panic::catch_unwind(|| import_and_run(&t)) {
                Ok((i, r)) => {
                    imported += i as u32;
                    ran += r as u32;
                }
                Err(_) => panic!("panicked on a variant of {}:\n{t}", path.display()),
            }
        }
    }
    eprintln!("of {tried} variants {imported} imported and {ran} ran");
    // The mutations must reach the import's checks and the runs, not only the JSON
    // reader's errors.
    assert!(
        imported > tried / 5 && ran > tried / 10,
        "of {tried} variants {imported} imported and {ran} ran"
    );
}

/// Strings a kind, dtype or layout type of a oneDNN corpus file may become: the
/// low-precision types, `undef`, the quantisation kinds and their neighbours.
const CORPUS_WORDS: [&str; 14] = [
    "\"u8\"",
    "\"s4\"",
    "\"u4\"",
    "\"f8_e4m3\"",
    "\"s64\"",
    "\"undef\"",
    "\"Quantize\"",
    "\"Dequantize\"",
    "\"DynamicDequantize\"",
    "\"per_channel\"",
    "\"per_group\"",
    "\"TypeCast\"",
    "\"MatMul\"",
    "-9223372036854775808",
];

/// A deterministic sample of `scenarios/workloads/onednn/`: every `step`-th file in path order.
fn corpus_sample(step: usize) -> Vec<std::path::PathBuf> {
    common::graphs::onednn_files()
        .into_iter()
        .step_by(step)
        .collect()
}

#[test]
fn mutated_onednn_corpus_files_import_run_or_fail_cleanly() {
    // Every 4th file whose original runs under its default layouts (the others stop at
    // a kind mnsim lacks before any mutation could matter), in path order.
    let files: Vec<_> = corpus_sample(1)
        .into_iter()
        .filter(|p| {
            let t = std::fs::read_to_string(p).unwrap_or_default();
            import_and_run(&t).1
        })
        .step_by(4)
        .collect();
    assert!(files.len() >= 20, "only {} corpus files run", files.len());
    let mut rng = Rng(0x0DD_C0A9_05E5_0002);
    let (mut tried, mut imported, mut ran) = (0, 0, 0);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for round in 0..8 {
            let t = if round % 2 == 0 {
                mutate(&text, &mut rng)
            } else {
                // A string or number swapped for one of the corpus's own words.
                let (nums, strs) = tokens(&text);
                let all: Vec<Span> = nums.into_iter().chain(strs).collect();
                let (a, b) = all[rng.below(all.len())];
                format!("{}{}{}", &text[..a], rng.pick(&CORPUS_WORDS), &text[b..])
            };
            tried += 1;
            match std::panic::catch_unwind(|| import_and_run(&t)) {
                Ok((i, r)) => {
                    imported += i as u32;
                    ran += r as u32;
                }
                Err(_) => panic!("panicked on a variant of {}:\n{t}", path.display()),
            }
        }
    }
    eprintln!("of {tried} corpus variants {imported} imported and {ran} ran");
    assert!(
        imported > tried / 5 && ran > tried / 10,
        "of {tried} corpus variants {imported} imported and {ran} ran"
    );
}
