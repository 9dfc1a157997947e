//! docs/tutorial.md and the first example of docs/scenarios.md, run as written, so the
//! pages cannot drift from what mnsim does:
//!
//! - every `mnsim ...` line of a `sh` block runs (the built binary, from the repository's
//!   root); a `text` block right after it quotes its output: each line of the quote
//!   (`...` lines skipped) must appear in the output, in order, whitespace and the
//!   diagnostics' `│` gutters aside (so a message wrapped over several lines still
//!   matches); the command must fail when the quote holds `error:`, and succeed
//!   otherwise;
//! - every figure of the prose written with a thousands separator (`16,608`) must
//!   appear in some command's output, unless it stands in a calculation written as
//!   code (`16,608 / 8 = 2,076`), and every such calculation must hold;
//! - every `ron` block is an excerpt of a file of docs/tutorial/, and every file there
//!   is run by some command.

mod common;

use common::study::{mnsim, root};
use common::tmp::{TempDir, tempdir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fenced block of a markdown page and the line it starts on.
struct Block {
    lang: String,
    text: String,
    line: usize,
}

/// The fenced blocks of a page, and its prose (everything outside them).
fn split(md: &str) -> (Vec<Block>, String) {
    let mut blocks = Vec::new();
    let mut prose = String::new();
    let mut open: Option<Block> = None;
    for (i, l) in md.lines().enumerate() {
        match (&mut open, l.trim_start().strip_prefix("```")) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_string(),
                    text: String::new(),
                    line: i + 1,
                })
            }
            (Some(_), Some(_)) => blocks.push(open.take().unwrap()),
            (Some(b), None) => {
                b.text += l;
                b.text.push('\n');
            }
            (None, None) => {
                prose += l;
                prose.push('\n');
            }
        }
    }
    assert!(open.is_none(), "a fenced block is not closed");
    (blocks, prose)
}

/// Shell words: whitespace-separated, `"..."` and `'...'` quoted.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    assert!(quote.is_none(), "unclosed quote in `{line}`");
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Output as the quotes are compared with it: the diagnostics' gutter gone, every run
/// of whitespace (line breaks included) one space.
fn normalise(s: &str) -> String {
    common::one_line(s)
}

/// One command of a page, run; its combined output and whether it succeeded.
fn run(args: &[String], scratch: &Path) -> (String, bool) {
    // `--out DIR` writes into a scratch folder, never into the repository.
    let mut args = args.to_vec();
    if let Some(i) = args.iter().position(|a| a == "--out") {
        args[i + 1] = scratch.join("out").display().to_string();
    }
    let out = Command::new(mnsim())
        .args(&args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (text, out.status.success())
}

/// Each line of `quote` is in `output`, in order.
fn check_quote(page: &str, line: usize, cmd: &str, quote: &str, output: &str) {
    let hay = normalise(output);
    let mut from = 0;
    for q in quote.lines().map(normalise).filter(|q| !q.is_empty()) {
        if q == "..." {
            continue;
        }
        match hay[from..].find(&q) {
            Some(at) => from += at + q.len(),
            None => panic!(
                "{page}:{line}: `{cmd}`: the quoted line\n  {q}\nis not in the output \
                 (after the previous quoted line); the output is:\n{output}"
            ),
        }
    }
}

/// The numbers of a text: each run of digits and commas both joined (`16,608` gives
/// `16608`) and cut at its commas (a CSV line's `0,16608` gives `0` and `16608` too).
fn numbers(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in s.split(|c: char| !(c.is_ascii_digit() || c == ',')) {
        let pieces: Vec<&str> = run.split(',').filter(|p| !p.is_empty()).collect();
        if pieces.len() > 1 {
            out.push(pieces.concat());
        }
        out.extend(pieces.into_iter().map(String::from));
    }
    out
}

/// The figures of the prose written with thousands separators (`1,024`), commas dropped.
fn figures(prose: &str) -> Vec<String> {
    let b: Vec<char> = prose.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !(b[i - 1].is_ascii_digit() || b[i - 1] == '.')) {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || (b[i] == ',' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())))
            {
                i += 1;
            }
            let s: String = b[start..i].iter().collect();
            if s.contains(',') {
                out.push(s.replace(',', ""));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// A calculation in an inline code span: numbers (with thousands separators), `+ - − × *
/// /`, parentheses, and `=` between equal sides.
fn calculations(prose: &str) -> Vec<String> {
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| {
            c.contains('=')
                && c.chars().any(|ch| ch.is_ascii_digit())
                && c.chars()
                    .all(|ch| ch.is_ascii_digit() || " ,.+-−×*/()=".contains(ch))
        })
        .map(String::from)
        .collect()
}

/// Evaluates `+ - × /` with parentheses (exact for the page's whole-number figures).
fn eval(expr: &str) -> f64 {
    let toks: Vec<char> = expr
        .replace(',', "")
        .replace('−', "-")
        .replace('×', "*")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let mut pos = 0;
    let v = sum(&toks, &mut pos);
    assert_eq!(pos, toks.len(), "cannot read `{expr}`");
    v
}

fn sum(t: &[char], p: &mut usize) -> f64 {
    let mut v = product(t, p);
    while let Some(&op) = t.get(*p).filter(|c| "+-".contains(**c)) {
        *p += 1;
        let r = product(t, p);
        v = if op == '+' { v + r } else { v - r };
    }
    v
}

fn product(t: &[char], p: &mut usize) -> f64 {
    let mut v = atom(t, p);
    while let Some(&op) = t.get(*p).filter(|c| "*/".contains(**c)) {
        *p += 1;
        let r = atom(t, p);
        v = if op == '*' { v * r } else { v / r };
    }
    v
}

fn atom(t: &[char], p: &mut usize) -> f64 {
    if t.get(*p) == Some(&'(') {
        *p += 1;
        let v = sum(t, p);
        assert_eq!(t.get(*p), Some(&')'), "unbalanced parentheses");
        *p += 1;
        return v;
    }
    let start = *p;
    while t.get(*p).is_some_and(|c| c.is_ascii_digit() || *c == '.') {
        *p += 1;
    }
    t[start..*p]
        .iter()
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("a number expected at {start}"))
}

/// Every calculation of the prose holds; returns the figures they contain.
fn check_calculations(page: &str, prose: &str) -> Vec<String> {
    let mut backed = Vec::new();
    for c in calculations(prose) {
        let sides: Vec<f64> = c.split('=').map(eval).collect();
        assert!(
            sides.windows(2).all(|w| w[0] == w[1]),
            "{page}: `{c}` does not hold: {sides:?}"
        );
        backed.extend(numbers(&c));
    }
    backed
}

/// Every figure of the prose is in an output or in a calculation.
fn check_figures(page: &str, prose: &str, outputs: &str, backed: &[String]) {
    let seen: std::collections::HashSet<String> = numbers(outputs).into_iter().collect();
    for f in figures(prose) {
        assert!(
            seen.contains(&f) || backed.contains(&f),
            "{page}: the figure {f} of the text is in no command's output"
        );
    }
}

/// A fresh, empty folder of the system's temp dir, removed when the value is dropped.
fn scratch(name: &str) -> TempDir {
    tempdir(&format!("tutorial-{name}"))
}

#[test]
fn every_command_of_the_tutorial_gives_what_the_page_quotes() {
    let page = "docs/tutorial.md";
    let md = std::fs::read_to_string(root().join(page)).unwrap();
    let (blocks, prose) = split(&md);
    let tmp = scratch("page");
    let dir = tmp.path();
    let mut outputs = String::new();
    let mut commands = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        if b.lang != "sh" {
            continue;
        }
        let lines: Vec<&str> = b
            .text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("mnsim "))
            .collect();
        assert!(
            !lines.is_empty(),
            "{page}:{}: a sh block with no mnsim command",
            b.line
        );
        let quote = blocks.get(i + 1).filter(|n| n.lang == "text");
        for (k, cmd) in lines.iter().enumerate() {
            let args = words(cmd);
            let (out, ok) = run(&args[1..], dir);
            let quoted = quote.filter(|_| k + 1 == lines.len());
            let fails = quoted.is_some_and(|q| q.text.contains("error:"));
            assert_eq!(
                ok,
                !fails,
                "{page}:{}: `{cmd}` {} but the page says otherwise; output:\n{out}",
                b.line,
                if ok { "succeeded" } else { "failed" }
            );
            if let Some(q) = quoted {
                check_quote(page, q.line, cmd, &q.text, &out);
            }
            outputs += &out;
            commands.push(cmd.to_string());
        }
    }
    let backed = check_calculations(page, &prose);
    check_figures(page, &prose, &outputs, &backed);

    // The examples: every file of docs/tutorial/ is run, every ron block is an excerpt.
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("docs/tutorial"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let texts: Vec<String> = files
        .iter()
        .map(|f| normalise(&std::fs::read_to_string(f).unwrap()))
        .collect();
    for f in &files {
        let rel = format!("docs/tutorial/{}", f.file_name().unwrap().to_string_lossy());
        assert!(
            commands
                .iter()
                .any(|c| c.starts_with("mnsim run ") && c.contains(&rel)),
            "{rel} is run by no command of {page}"
        );
    }
    for b in blocks.iter().filter(|b| b.lang == "ron") {
        let excerpt = normalise(&b.text);
        assert!(
            texts.iter().any(|t| t.contains(&excerpt)),
            "{page}:{}: this ron block is in no file of docs/tutorial/",
            b.line
        );
    }
}

#[test]
fn the_first_example_of_the_scenario_format_runs_as_quoted() {
    let page = "docs/scenarios.md";
    let md = std::fs::read_to_string(root().join(page)).unwrap();
    let (blocks, _) = split(&md);
    let example = blocks
        .iter()
        .find(|b| b.lang == "ron")
        .expect("an example scenario");
    let tmp = scratch("scenarios");
    let dir = tmp.path();
    let file = dir.join("example.ron");
    std::fs::write(&file, &example.text).unwrap();
    let (out, ok) = run(&["run".to_string(), file.display().to_string()], dir);
    assert!(
        ok,
        "{page}:{}: the example does not run:\n{out}",
        example.line
    );
    assert!(
        !out.contains("skipped"),
        "{page}: a plan of the example does not run:\n{out}"
    );
    // Both plans ran and verified.
    for plan in ["rows", "cols"] {
        assert!(out.contains(&format!("plan {plan} ·")), "{out}");
    }
    assert_eq!(out.matches("verified ✓").count(), 2, "{out}");
    // The paragraph right after the example quotes the run's figures.
    let after = md
        .split_once(example.text.as_str())
        .map(|(_, rest)| rest)
        .unwrap()
        .trim_start_matches("```")
        .trim_start();
    let paragraph = after.split("\n\n").next().unwrap();
    assert!(
        !figures(paragraph).is_empty(),
        "{page}: the paragraph after the example quotes no figure"
    );
    check_figures(page, paragraph, &out, &[]);
    assert!(
        mnsim_check_ok(&file),
        "{page}: `mnsim check` refuses the example"
    );
}

fn mnsim_check_ok(file: &Path) -> bool {
    Command::new(mnsim())
        .arg("check")
        .arg(file)
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn the_calculations_and_figures_are_read_as_written() {
    // The helpers themselves: a figure, a calculation, a wrong one.
    assert_eq!(figures("x takes 16,608 cycles, 24 steps, 1.5"), ["16608"]);
    assert_eq!(
        numbers("0,16608 and 16,608."),
        ["016608", "0", "16608", "16608", "16", "608"]
    );
    let calcs = calculations("a `16,608 / 8 = 2,076` b `y = relu(x)` c `8 × (2 + 1) = 24`");
    assert_eq!(calcs, ["16,608 / 8 = 2,076", "8 × (2 + 1) = 24"]);
    assert_eq!(eval("2,076 + 7 × 2,076 + 2,048"), 18656.0);
    assert_eq!(eval("16,608 + 32,992 − 224"), 49376.0);
    let wrong = std::panic::catch_unwind(|| check_calculations("p", "`2 × 3 = 7`"));
    assert!(wrong.is_err());
    assert_eq!(
        words(r#"mnsim layout explain "((4_PE, 3:8), (8:1))" --shape 12,8"#),
        [
            "mnsim",
            "layout",
            "explain",
            "((4_PE, 3:8), (8:1))",
            "--shape",
            "12,8"
        ]
    );
    assert_eq!(normalise("a\n  │ b   c"), "a b c");
}

/// The tutorial's "reading the report" explains every line of the summary a run prints
/// (bound, × bound, above the bound, energy, verified, ...): each line's opening words
/// stand at the start of a code span in that section.
#[test]
fn the_tutorial_explains_every_line_of_the_summary() {
    let md = std::fs::read_to_string(root().join("docs/tutorial.md")).unwrap();
    let section = &md[md.find("## 5. Reading the report").expect("section 5")..];
    let scratch = tempdir("tutorial-lines");
    let args: Vec<String> = ["run", "docs/tutorial/stream.ron", "--plan", "two_buffers"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (out, ok) = run(&args, scratch.path());
    assert!(ok, "{out}");
    // The header: after the title and plan lines, up to the first blank line; wrapped
    // lines (indented) continue the one before.
    let keys: Vec<String> = out
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with(' '))
        .map(|l| match l.split_whitespace().next().unwrap() {
            "above" => "above the bound:".to_string(),
            w => w.to_string(),
        })
        .collect();
    for k in ["bound", "energy:", "above the bound:", "verified"] {
        assert!(
            keys.iter().any(|x| x == k),
            "the run prints no `{k}` line:\n{out}"
        );
    }
    for k in &keys {
        assert!(
            section.contains(&format!("`{k}")),
            "docs/tutorial.md section 5 does not explain the `{k}` line"
        );
    }
    // And the two modes, and what `–` means.
    for words in ["× bound", "timing mode", "Functional mode", "`verified –`"] {
        assert!(section.contains(words), "section 5 does not say `{words}`");
    }
}
