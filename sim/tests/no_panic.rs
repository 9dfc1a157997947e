//! Bad input never panics: mutated versions of every shipped scenario that still load
//! and resolve are run (timing mode) and must end in a report or an error, never a panic.

use mnsim_sim::scenario::{self, Mode};
use std::path::Path;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

#[test]
fn mutated_scenarios_run_or_fail_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let (mut ran, mut resolved) = (0, 0);
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
    {
        let text = std::fs::read_to_string(path).unwrap();
        // Skip the 8192³ peak scenario: its variants are as large.
        if text.contains("8192") {
            continue;
        }
        let digits: Vec<usize> = text
            .char_indices()
            .filter(|(_, c)| c.is_ascii_digit())
            .map(|(i, _)| i)
            .collect();
        for _ in 0..150 {
            let mut bytes = text.clone().into_bytes();
            for _ in 0..1 + rng.below(2) {
                let at = digits[rng.below(digits.len())];
                bytes[at] = b"0123456789"[rng.below(10)];
            }
            let Ok(t) = String::from_utf8(bytes) else {
                continue;
            };
            let outcome = std::panic::catch_unwind(|| {
                let Ok(sc) = scenario::parse(&t, "mutated.ron") else {
                    return (false, false);
                };
                let src = scenario::Source {
                    path: "mutated.ron".into(),
                    text: t.clone(),
                };
                let mut r = 0;
                let mut any = false;
                for plan in scenario::plans_to_run(&sc) {
                    if let Ok(mut res) =
                        scenario::resolve(&sc, &src, plan.as_deref(), &[], &Default::default())
                    {
                        any = true;
                        res.mode = Mode::Timing;
                        if mnsim_sim::run::run(&res).is_ok() {
                            r += 1;
                        }
                    }
                }
                (any, r > 0)
            });
            match outcome {
                Ok((any, ok)) => {
                    resolved += any as u32;
                    ran += ok as u32;
                }
                Err(_) => panic!("panicked on a variant of {}:\n{t}", path.display()),
            }
        }
    }
    // The sweep must reach the running paths, not only the parse errors.
    assert!(resolved > 100 && ran > 50, "resolved {resolved}, ran {ran}");
}
