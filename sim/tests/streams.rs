//! Streams (docs/model.md, streams): `Time`-stepped tensors produced and consumed step by
//! step, worked by hand on `scenarios/double_buffer.ron` and small programs; buffers,
//! their LM charge and their fallback; slices sent again when a walk needs them after
//! they left LM.

use mnsim_reports::Report;
use mnsim_sim::scenario::{self, Mode, Schedule, Source};
use std::path::Path;

fn run_text(text: &str, plan: Option<&str>, schedule: Schedule) -> Result<Report, String> {
    let sc = scenario::parse(text, "test.ron").map_err(|e| e.to_string())?;
    let src = Source {
        path: "test.ron".into(),
        text: text.into(),
    };
    let mut res =
        scenario::resolve(&sc, &src, plan, &[], &Default::default()).map_err(|e| e.to_string())?;
    res.mode = Mode::Timing;
    res.schedule = schedule;
    mnsim_sim::run::run(&res)
        .map(|o| o.report)
        .map_err(|e| e.to_string())
}

fn double_buffer(plan: &str, schedule: Schedule) -> Report {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/double_buffer.ron");
    let text = std::fs::read_to_string(path).unwrap();
    run_text(&text, Some(plan), schedule).unwrap()
}

/// Per-slice transfer `t` and per-step compute `c` of the weight stream, its steps `n`,
/// and the cycle its load starts.
fn stream_figures(r: &Report) -> (u64, u64, u64, u64) {
    let s = &r.streams[0];
    assert_eq!(s.tensor, "w");
    let (load, mm) = (&r.ops[s.producer], &r.ops[s.consumer.expect("read")]);
    assert_eq!((load.op.as_str(), mm.op.as_str()), ("Load", "MatMul"));
    let n = s.slices;
    (load.work_cycles / n, mm.work_cycles / n, n, load.start)
}

#[test]
fn one_buffer_alternates_load_and_compute() {
    let r = double_buffer("single", Schedule::Overlapped);
    let (t, c, n, start) = stream_figures(&r);
    assert_eq!((n, r.streams[0].buffers), (8, 1));
    assert!(!r.streams[0].double_buffered);
    // n·(t + c) from the weight's first slice, within one cycle per step of rounding.
    let want = start + n * (t + c);
    assert!(
        r.total_cycles.abs_diff(want) <= n,
        "{} vs {want}",
        r.total_cycles
    );
}

#[test]
fn two_buffers_load_the_next_slice_during_the_current_step() {
    let r = double_buffer("double", Schedule::Overlapped);
    let (t, c, n, start) = stream_figures(&r);
    assert_eq!((n, r.streams[0].buffers), (8, 2));
    assert!(r.streams[0].double_buffered);
    let want = start + t + (n - 1) * t.max(c) + c;
    assert!(
        r.total_cycles.abs_diff(want) <= n,
        "{} vs {want}",
        r.total_cycles
    );
    // Against one buffer: (n − 1)·min(t, c) cycles less.
    let single = double_buffer("single", Schedule::Overlapped);
    let saved = single.total_cycles - r.total_cycles;
    assert!(saved.abs_diff((n - 1) * t.min(c)) <= n, "{saved}");
    // Op after op, buffers change nothing: a stream is op after op.
    let (a, b) = (
        double_buffer("single", Schedule::Sequential),
        double_buffer("double", Schedule::Sequential),
    );
    assert_eq!(a.total_cycles, b.total_cycles);
    let sum: u64 = b.ops.iter().map(|o| o.cycles).sum();
    assert_eq!(b.total_cycles, sum);
}

#[test]
fn lm_peak_counts_both_buffers_of_a_double_buffered_stream() {
    let (one, two) = (
        double_buffer("single", Schedule::Overlapped),
        double_buffer("double", Schedule::Overlapped),
    );
    let slice = two.streams[0].slice_bytes;
    assert_eq!(slice, 128 * 8, "128 words of 8 bytes");
    assert_eq!(two.lm_peak_bytes, one.lm_peak_bytes + slice);
    // x (1024 words), h (256) and two slices of w (128 each).
    assert_eq!(two.lm_peak_bytes, (1024 + 256 + 2 * 128) * 8);
}

#[test]
fn a_stream_whose_two_slices_do_not_fit_holds_one_and_says_why() {
    let r = double_buffer("no_room", Schedule::Overlapped);
    let s = &r.streams[0];
    assert_eq!(
        (s.buffers, s.requested, s.double_buffered),
        (1, None, false)
    );
    let why = s.fallback.as_deref().expect("a reason");
    assert!(why.starts_with("LM full"), "{why}");
    // The terminal summary says it, and so does the Markdown.
    let text = mnsim_reports::terminal(&r, false);
    assert!(text.contains("w one slice (LM full"), "{text}");
    assert!(mnsim_reports::markdown(&r).contains("w one slice (LM full"));
    // It behaves as one buffer: n·(t + c).
    let (t, c, n, start) = stream_figures(&r);
    let want = start + n * (t + c);
    assert!(
        r.total_cycles.abs_diff(want) <= n,
        "{} vs {want}",
        r.total_cycles
    );
    // LM: x, h and one slice of w (2048 words).
    assert_eq!(r.lm_peak_bytes, (1024 + 256 + 2048) * 8);
}

const SMALL: &str = r#"Scenario(
    name: "re-sent slices",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "a": (dtype: F16, shape: "f16[512,64]", init: Random(seed: 1)),
        "b": (dtype: F16, shape: "f16[64,64]", init: Random(seed: 2)),
        "c": (dtype: F16, shape: "f16[512,64]"),
    },
    program: [
        // a over K in 4 steps; c over N in 2: the walk reads a's 4 slices for each of c's steps.
        Load(tensor: "a", layout: "((8_L2B, 16_MAB, 4_PE), (4_Time, 4, 4_W); B@[L1B])", buffers: BUF),
        Load(tensor: "b", layout: "((64), (8_L1B, 2, 4_W); B@[L2B,MAB,PE])"),
        MatMul(a: "a", b: "b", out: "c", layout: "((8_L2B, 16_MAB, 4_PE), (8_L1B, 2_Time, 4_W))"),
    ],
)"#;

fn small(buffers: &str, schedule: Schedule) -> Result<Report, String> {
    run_text(&SMALL.replace("BUF", buffers), None, schedule)
}

#[test]
fn a_slice_needed_again_after_it_left_lm_is_sent_and_charged_again() {
    for schedule in [Schedule::Sequential, Schedule::Overlapped] {
        // Two slices held of four: every slice leaves before c's second step reads it.
        let r = small("2", schedule).unwrap();
        let a = &r.streams[0];
        assert_eq!((a.tensor.as_str(), a.slices, a.buffers), ("a", 4, 2));
        assert_eq!((a.sends, a.resent_slices), (8, 4));
        let load_a = r.ops[0].work_cycles;
        // Four re-sends at a quarter of a's load each: a's load once more.
        assert_eq!(a.resend_cycles, load_a);
        let mm = &r.ops[2];
        let compute = mm
            .stages
            .iter()
            .find(|s| s.kind == "compute")
            .unwrap()
            .cycles;
        assert_eq!(mm.work_cycles, compute + load_a);
        // All four slices held: nothing is sent twice, the matmul is its compute.
        let whole = small("4", schedule).unwrap();
        assert_eq!(
            (whole.streams[0].sends, whole.streams[0].resent_slices),
            (4, 0)
        );
        assert_eq!(whole.ops[2].work_cycles, compute);
        if schedule == Schedule::Sequential {
            assert_eq!(r.total_cycles, whole.total_cycles + load_a);
        } else {
            assert!(r.total_cycles >= whole.total_cycles);
        }
    }
}

#[test]
fn buffers_below_one_are_refused_naming_the_op() {
    for b in ["0", "-1"] {
        let e = small(b, Schedule::Overlapped).unwrap_err();
        assert!(e.contains("op 0 (Load"), "{e}");
        assert!(e.contains(&format!("buffers: {b}")), "{e}");
        assert!(e.contains("at least one slice"), "{e}");
    }
    // More buffers than slices hold every slice.
    let r = small("3000", Schedule::Overlapped).unwrap();
    assert_eq!(
        (r.streams[0].buffers, r.streams[0].requested),
        (4, Some(3000))
    );
    // Slices asked for that LM cannot hold are refused, not silently lowered.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/double_buffer.ron");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("\"wb\": \"auto\"", "\"wb\": \"2\"");
    let e = run_text(&text, Some("no_room"), Schedule::Overlapped).unwrap_err();
    assert!(e.contains("op 1 (Load"), "{e}");
    assert!(e.contains("`buffers: 2` for `w`"), "{e}");
    // A plan variable gives the count.
    let text = SMALL.replace("buffers: BUF", "buffers: \"$ab\"").replace(
        "program: [",
        "plans: { \"p\": { \"ab\": \"0\" } },\n    program: [",
    );
    let e = run_text(&text, Some("p"), Schedule::Overlapped).unwrap_err();
    assert!(e.contains("buffers: 0"), "{e}");
}

#[test]
fn a_stream_gives_back_its_second_slice_when_a_later_tensor_needs_the_room() {
    // W loads first: two of its 2048-word slices fill the empty LM; x (1024 words) then
    // needs the room, and W, not yet read, holds one slice (the default is two only when
    // they fit with everything else live).
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/double_buffer.ron");
    let text = std::fs::read_to_string(path).unwrap();
    let (lx, lw) = (
        "        Load(tensor: \"x\", layout: \"$x\"),\n",
        "        Load(tensor: \"w\", layout: \"$w\", buffers: \"$wb\"),\n",
    );
    assert!(text.contains(&format!("{lx}{lw}")));
    let text = text.replace(&format!("{lx}{lw}"), &format!("{lw}{lx}"));
    let r = run_text(&text, Some("no_room"), Schedule::Overlapped).unwrap();
    let s = &r.streams[0];
    assert_eq!(
        (s.tensor.as_str(), s.buffers, s.double_buffered),
        ("w", 1, false)
    );
    let why = s.fallback.as_deref().unwrap();
    assert!(why.starts_with("LM full") && why.contains("`x`"), "{why}");
    // The LM peak counts the one slice held: W's second slice is not charged.
    assert_eq!(r.lm_peak_bytes, (2048 + 1024 + 256) * 8);
    // With room for both (the double plan), W keeps two.
    let r = run_text(&text, Some("double"), Schedule::Overlapped).unwrap();
    assert_eq!(r.streams[0].buffers, 2);
}

/// A stream of two slices read by two ops: a ReduceAxes (its first reader, whose
/// in-place Reduce over MAB and `Reshape` view pass its slices on) and a Binary after
/// them. Held whole (two buffers), the Binary reads it slice by slice too, so the Store
/// of the result starts while the Load still sends; with one buffer the Binary waits
/// for the whole Load.
const TWO_READERS: &str = r#"Scenario(
    name: "two readers",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {
        "x": (dtype: F32, shape: "f32[128,768]", init: Random(seed: 1)),
        "s": (dtype: F32, shape: "f32[128]"),
        "r": (dtype: F32, shape: "f32[128,1]"),
        "y": (dtype: F32, shape: "f32[128,768]"),
    },
    program: [
        Load(tensor: "x", layout: "$x", buffers: "$xb"),
        ReduceAxes(op: Add, input: "x", axes: [1], keep_dims: false, out: "s", layout: "$s"),
        Reshape(input: "s", shape: [128, 1], out: "r", layout: "$r"),
        Binary(op: Sub, a: "x", b: "r", out: "y", layout: "$y"),
        Store(tensor: "y"),
    ],
    plans: {
        "whole": {
            "x": "((8_L2B, 8_L1B, 2_Time), (16_MAB, 24, 2_W))",
            "xb": "2",
            "s": "((8_L2B, 8_L1B, 2_Time); B@[MAB])",
            "r": "((8_L2B, 8_L1B, 2_Time), (1); B@[MAB])",
            "y": "((8_L2B, 8_L1B, 2_Time), (16_MAB, 24, 2_W))",
        },
        "one": {
            "x": "((8_L2B, 8_L1B, 2_Time), (16_MAB, 24, 2_W))",
            "xb": "1",
            "s": "((8_L2B, 8_L1B, 2_Time); B@[MAB])",
            "r": "((8_L2B, 8_L1B, 2_Time), (1); B@[MAB])",
            "y": "((8_L2B, 8_L1B, 2_Time), (16_MAB, 24, 2_W))",
        },
    },
)"#;

#[test]
fn a_later_reader_of_a_stream_held_whole_reads_it_slice_by_slice() {
    let whole = run_text(TWO_READERS, Some("whole"), Schedule::Overlapped).unwrap();
    let one = run_text(TWO_READERS, Some("one"), Schedule::Overlapped).unwrap();
    let at = |r: &Report, op: &str| {
        let o = r.ops.iter().find(|o| o.op == op).unwrap();
        (o.start, o.end)
    };
    for r in [&whole, &one] {
        // The Reduce writing the ReduceAxes' stream in place, and the view of it, start
        // with the ReduceAxes' first slice, not after its last.
        let (_, reduce_end) = at(r, "ReduceAxes");
        assert!(at(r, "Reduce").0 < reduce_end, "{:?}", at(r, "Reduce"));
        assert!(at(r, "Reshape").0 < reduce_end, "{:?}", at(r, "Reshape"));
    }
    let load_end = at(&whole, "Load").1;
    assert!(
        at(&whole, "Binary").0 < load_end,
        "{:?}",
        at(&whole, "Binary")
    );
    assert!(
        at(&whole, "Store").0 < load_end,
        "{:?}",
        at(&whole, "Store")
    );
    // One buffer: the later reader waits for the whole Load.
    assert!(at(&one, "Binary").0 >= at(&one, "Load").1);
    assert!(whole.total_cycles < one.total_cycles);
    // The total still covers the Load and the Store, one after the other on no shared
    // link, less what streaming hides: at least the busiest of them.
    let work = |r: &Report, op: &str| r.ops.iter().find(|o| o.op == op).unwrap().work_cycles;
    assert!(whole.total_cycles >= work(&whole, "Load").max(work(&whole, "Store")));
}

/// Row sums of a batch of rows stepped on two `Time` sub-axes (the batch and the rows),
/// reshaped to a column and subtracted from the rows (`x` held whole, so that the Sub
/// reads it slice by slice too). `rows` is the token axis's layout.
fn batch_of_rows(rows: &str) -> String {
    format!(
        r#"Scenario(
    name: "row sums through a reshape",
    machine: Preset("mncore2"),
    mode: Timing,
    tensors: {{
        "x": (dtype: F32, shape: "f32[2,128,768]", init: Random(seed: 1)),
        "s": (dtype: F32, shape: "f32[2,128]"),
        "s_r": (dtype: F32, shape: "f32[2,128,1]"),
        "y": (dtype: F32, shape: "f32[2,128,768]"),
    }},
    program: [
        Load(tensor: "x", layout: "((2_Time), ({rows}), (16_MAB, 4_PE, 6, 2_W))", buffers: 4),
        ReduceAxes(op: Add, input: "x", axes: [2], keep_dims: false, out: "s",
            layout: "((2_Time), ({rows}); B@[MAB,PE])"),
        Reshape(input: "s", shape: [2, 128, 1], out: "s_r",
            layout: "((2_Time), ({rows}), (1); B@[MAB,PE])"),
        Binary(op: Sub, a: "x", b: "s_r", out: "y",
            layout: "((2_Time), ({rows}), (16_MAB, 4_PE, 6, 2_W))"),
        Store(tensor: "y"),
    ],
)"#
    )
}

/// A `Reshape` view whose input and output have the same `Time` sub-axes (here two: the
/// batch's and the rows') passes the stream on slice by slice, as with one: the Reshape
/// and the Store start while the Load still sends, and the run is shorter than with the
/// rows held whole.
#[test]
fn a_reshape_view_passes_on_a_stream_of_several_time_sub_axes() {
    let four = run_text(
        &batch_of_rows("2_Time, 8_L2B, 8_L1B"),
        None,
        Schedule::Overlapped,
    )
    .unwrap();
    let two = run_text(
        &batch_of_rows("2, 8_L2B, 8_L1B"),
        None,
        Schedule::Overlapped,
    )
    .unwrap();
    let op = |r: &Report, name: &str| r.ops.iter().find(|o| o.op == name).unwrap().clone();
    for r in [&four, &two] {
        let (load, reshape, store) = (op(r, "Load"), op(r, "Reshape"), op(r, "Store"));
        assert!(reshape.start < load.end, "{} {}", reshape.start, load.end);
        assert!(store.start < load.end, "{} {}", store.start, load.end);
    }
    assert!(
        four.total_cycles < two.total_cycles,
        "{} {}",
        four.total_cycles,
        two.total_cycles
    );
}
