//! The terminal summary: what a run prints.

use crate::critical::{self, MOST_EXPOSED};
use crate::model::Report;
use crate::rows::{self, LEVEL_NOTE, LEVEL_TITLES};
use crate::text::{
    Cell, Col, MAX_WIDTH, Nums, Style, Table, bar, paint, share, thousands, truncate,
    verified_mark, wrap,
};

/// Columns of the per-level bars.
const BAR_CELLS: usize = 24;

/// The terminal summary of a run. Counts carry `,` thousands separators and names are
/// never cut; the op table's ready-cycle columns appear only when some op's PEs became
/// ready at different cycles.
///
/// - a header: scenario, plan, machine, mode, the op count (as `mnsim check` gives it), total
///   cycles and µs at the machine clock,
///   verification (`✓` passed, `✗` failed, `–` not run), LM peak against LM size, knob
///   overrides and bindings;
/// - the ops on the critical path, most exposed first (at most ten): exposed cycles, their
///   share of the run and what each waited on;
/// - `ops`: one row per op (index, op, tensor, cycles, share of the run, bottleneck,
///   useful work, ready-cycle p50/p90/p99/max when they differ) and, under each op that moves data, its stages
///   (level, direction, kind, bytes, cycles, chunks), the bottleneck stage marked
///   `◀ bottleneck`; under each op that computes, its FLOP, FLOP per cycle and FLOP/s;
///   under an op much longer than its bottleneck stage, why (`↳`);
/// - `where the cycles went`: per level, busy cycles, share of the run, bytes, the number of
///   ops it bounded, and a bar of the share;
/// - `warnings`, if any.
///
/// With `color`, headers are bold and bottlenecks yellow (ANSI escapes); without, the text is
/// plain.
pub fn terminal(r: &Report, color: bool) -> String {
    let mut out = Vec::new();
    header(r, color, &mut out);
    exposed(r, color, &mut out);
    places(r, color, &mut out);
    if let Some(b) = &r.boards {
        out.push(String::new());
        out.push(if color {
            "\x1b[1mboards and links\x1b[0m".to_string()
        } else {
            "boards and links".to_string()
        });
        out.extend(crate::boards::lines(b));
    }
    out.push(String::new());
    ops(r, color, &mut out);
    if !r.levels.is_empty() {
        out.push(String::new());
        levels(r, color, &mut out);
    }
    if !r.warnings.is_empty() {
        out.push(String::new());
        out.push(paint("warnings", Style::Bold, color));
        for w in &r.warnings {
            for (i, line) in wrap(w, "  ! ", "    ", MAX_WIDTH).into_iter().enumerate() {
                out.push(if i == 0 {
                    format!("  {}{}", paint("!", Style::Yellow, color), &line[3..])
                } else {
                    line
                });
            }
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

fn header(r: &Report, color: bool, out: &mut Vec<String>) {
    let title = format!("mnsim report · {}", r.scenario);
    out.push(paint(&title, Style::Bold, color));
    out.push(format!(
        "plan {} · machine {} · {} mode · {}",
        rows::plan_name(r),
        r.machine,
        r.mode,
        critical::report_op_count(r)
    ));
    out.push(truncate(
        &format!(
            "total {} cycles = {} at {}",
            thousands(r.total_cycles),
            rows::duration(r),
            rows::clock(r)
        ),
        MAX_WIDTH,
    ));
    let style = match r.verified {
        Some(true) => Style::Green,
        Some(false) => Style::Red,
        None => Style::Plain,
    };
    for line in [
        rows::bound(r),
        rows::bottleneck(r),
        rows::overlap(r),
        rows::run_compute(r),
    ]
    .into_iter()
    .flatten()
    {
        out.push(truncate(&line, MAX_WIDTH));
    }
    // The energy line whole: it may name FLOP that no coefficient prices.
    if let Some(line) = crate::energy::summary_line(r) {
        let body = line.trim_start_matches("energy: ");
        out.extend(wrap(body, "energy: ", "  ", MAX_WIDTH));
    }
    if let Some(line) = rows::above_bound(r) {
        let body = line.trim_start_matches("above the bound: ");
        out.extend(wrap(body, "above the bound: ", "  ", MAX_WIDTH));
    }
    if let Some(line) = rows::streams(r) {
        let body = line.trim_start_matches("streams: ");
        out.extend(wrap(body, "streams ", "  ", MAX_WIDTH));
    }
    out.push(format!(
        "verified {} · LM peak {} per PE",
        paint(verified_mark(r.verified), style, color),
        rows::lm_use(r)
    ));
    for (name, items) in [
        ("overrides", rows::overrides(r)),
        ("bind", rows::bindings(r)),
    ] {
        if !items.is_empty() {
            out.extend(wrap(&items.join(" "), &format!("{name} "), "  ", MAX_WIDTH));
        }
    }
}

/// The first screen's list of the ops most exposed on the critical path, each with what
/// it waited on (nothing when no op is on it).
fn exposed(r: &Report, color: bool, out: &mut Vec<String>) {
    let top = critical::most_exposed(r, MOST_EXPOSED);
    if top.is_empty() {
        return;
    }
    out.push(String::new());
    out.push(paint(
        &critical::exposed_title(r, top.len()),
        Style::Bold,
        color,
    ));
    let mut table = Table::new(
        vec![
            Col::right("#"),
            Col::left("op"),
            Col::left("tensor"),
            Col::right("exposed"),
            Col::right("share"),
            Col::left("waited on"),
        ],
        2,
        2,
    );
    for &i in &top {
        let op = &r.ops[i];
        table.push(vec![
            op.index.to_string().into(),
            op.label().into(),
            op.tensor.clone().into(),
            thousands(op.exposed_cycles).into(),
            share(op.exposed_cycles, r.total_cycles).into(),
            critical::waited(r, op).into(),
        ]);
    }
    let w = table.widths();
    out.push(table.header(&w, color));
    out.extend((0..top.len()).map(|i| table.row(i, &w, color)));
}

/// A whole model's cycles by part and by layer (`crate::places`), where ops have places.
fn places(r: &Report, color: bool, out: &mut Vec<String>) {
    use crate::places::{TITLES, rows};
    for (by, title) in [("part", "by part"), ("layer", "by layer")] {
        let rows = rows(r, by);
        if rows.is_empty() {
            continue;
        }
        out.push(String::new());
        out.push(paint(title, Style::Bold, color));
        let cols = (TITLES.iter().enumerate())
            .map(|(i, t)| if i == 0 { Col::left(t) } else { Col::right(t) })
            .collect();
        let mut table = Table::new(cols, 2, 2);
        for row in &rows {
            table.push(row.iter().map(|c| c.clone().into()).collect());
        }
        let w = table.widths();
        out.push(table.header(&w, color));
        out.extend((0..rows.len()).map(|i| table.row(i, &w, color)));
    }
}

fn ops(r: &Report, color: bool, out: &mut Vec<String>) {
    out.push(paint("ops", Style::Bold, color));
    if r.ops.is_empty() {
        out.push("  (no ops)".to_string());
        return;
    }
    // Counts keep their separators and names are never cut: a table wider than the
    // terminal is better than a number or a name that cannot be read back.
    let (op_table, stage_table) = tables(r, Nums::Grouped);
    let ow = op_table.widths();
    let sw = stage_table.widths();
    out.push(op_table.header(&ow, color));
    let mut stage_row = 0;
    for (i, op) in r.ops.iter().enumerate() {
        out.push(op_table.row(i, &ow, color));
        if let Some([flops, per_cycle, rate]) = rows::compute(r, op) {
            let line = format!("{:6}{flops} · {per_cycle} · {rate}", "");
            out.push(truncate(&line, MAX_WIDTH));
        }
        if let Some(why) = critical::outlasts(r, i) {
            out.extend(wrap(&why, "      ↳ ", "        ", MAX_WIDTH));
        }
        if rows::shows_stages(op) {
            for _ in &op.stages {
                out.push(stage_table.row(stage_row, &sw, color));
                stage_row += 1;
            }
        }
    }
}

/// The op table and the table of all listed stages (rendered under their ops).
fn tables(r: &Report, nums: Nums) -> (Table, Table) {
    let cols = rows::op_titles(r)
        .iter()
        .map(|&t| match t {
            "op" | "tensor" | "bottleneck" => Col::left(t),
            _ => Col::right(t),
        })
        .collect();
    let mut op_table = Table::new(cols, 2, 2);
    let stage_cols = vec![
        Col::left(""),
        Col::left("level"),
        Col::left("dir"),
        Col::left("kind"),
        Col::right("bytes"),
        Col::right("cycles"),
        Col::right("chunks"),
        Col::left(""),
    ];
    let mut stage_table = Table::new(stage_cols, 6, 2);
    for op in &r.ops {
        let bottleneck_style = if op.bottleneck.is_empty() {
            Style::Plain
        } else {
            Style::Yellow
        };
        op_table.push(
            rows::op_cells(r, op, nums)
                .into_iter()
                .enumerate()
                .map(|(i, text)| {
                    if i == 5 {
                        Cell::styled(text, bottleneck_style)
                    } else {
                        text.into()
                    }
                })
                .collect(),
        );
        if !rows::shows_stages(op) {
            continue;
        }
        let marked = op.bottleneck_stage();
        for (i, s) in op.stages.iter().enumerate() {
            let last = i + 1 == op.stages.len();
            let mut cells: Vec<Cell> = vec![if last { "└" } else { "├" }.into()];
            cells.extend(rows::stage_cells(s, nums).map(Cell::from));
            cells.push(if marked == Some(i) {
                Cell::styled("◀ bottleneck", Style::Yellow)
            } else {
                Cell::default()
            });
            stage_table.push(cells);
        }
    }
    (op_table, stage_table)
}

fn levels(r: &Report, color: bool, out: &mut Vec<String>) {
    out.push(paint("where the cycles went", Style::Bold, color));
    let mut cols: Vec<Col> = LEVEL_TITLES
        .iter()
        .map(|&t| {
            if t == "level" {
                Col::left(t)
            } else {
                Col::right(t)
            }
        })
        .collect();
    cols.push(Col::left(""));
    let mut table = Table::new(cols, 2, 2);
    let most = r.levels.iter().map(|l| l.bottleneck_ops).max().unwrap_or(0);
    for l in &r.levels {
        let mut cells: Vec<Cell> = rows::level_cells(r, l).map(Cell::from).into();
        if most > 0 && l.bottleneck_ops == most {
            cells[4].style = Style::Yellow;
        }
        cells.push(bar(rows::level_fraction(r, l), BAR_CELLS).into());
        table.push(cells);
    }
    let w = table.widths();
    out.push(table.header(&w, color));
    out.extend((0..r.levels.len()).map(|i| table.row(i, &w, color)));
    out.push(paint(
        &truncate(&format!("  {LEVEL_NOTE}"), MAX_WIDTH),
        Style::Dim,
        color,
    ));
}
