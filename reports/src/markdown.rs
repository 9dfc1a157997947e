//! `report.md`: the terminal summary as Markdown, for pasting into reviews.

use crate::critical::{self, MOST_EXPOSED};
use crate::model::Report;
use crate::rows::{self, LEVEL_NOTE, LEVEL_TITLES, USEFUL_NOTE};
use crate::text::{Nums, bar, share, thousands, verified_mark};
use std::fmt::Write;

/// Columns of the per-level bars.
const BAR_CELLS: usize = 24;

/// The terminal summary's content as Markdown (`report.md`):
///
/// - a title and a list: plan, machine and mode, the op count (as `mnsim check` gives it),
///   total cycles and µs at the clock,
///   verification, LM peak against LM size, overrides and bindings;
/// - `Critical path`: the ops most exposed on it (at most ten) and what each waited on;
/// - `Ops`: a table with a row per op (the terminal's columns), then `Stages` (the stages of the
///   ops that move data, the bottleneck stage marked) and `Compute` (FLOP, FLOP per cycle and
///   FLOP/s of the ops that compute);
/// - `Where the cycles went`: the per-level table with its bars;
/// - `Warnings`, if any.
///
/// Numeric columns are right-aligned; `|` in names is escaped.
pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_markdown(r, &mut s);
    s
}

/// Writes [`markdown`]'s text into `s`, section by section.
fn write_markdown(r: &Report, s: &mut String) -> std::fmt::Result {
    write_summary(r, s)?;
    write_exposed(r, s)?;
    write_places(r, s)?;
    write_ops(r, s)?;
    write_stages(r, s)?;
    write_compute(r, s)?;
    write_levels(r, s)?;
    write_warnings(r, s)?;
    Ok(())
}

/// Writes the title and the list under it: what ran, its cycles, bound, checks and settings.
fn write_summary(r: &Report, s: &mut String) -> std::fmt::Result {
    writeln!(s, "# mnsim report: {}\n", inline(&r.scenario))?;
    writeln!(s, "- **plan:** {}", inline(rows::plan_name(r)))?;
    writeln!(
        s,
        "- **machine:** {} ({} mode)",
        inline(&r.machine),
        inline(&r.mode)
    )?;
    writeln!(s, "- **ops:** {}", critical::report_op_count(r))?;
    writeln!(
        s,
        "- **total:** {} cycles = {} at {}",
        thousands(r.total_cycles),
        rows::duration(r),
        rows::clock(r)
    )?;
    if let Some(b) = rows::bound(r) {
        writeln!(s, "- **bound:** {}", inline(b.trim_start_matches("bound ")))?;
    }
    if let Some(b) = rows::above_bound(r) {
        writeln!(
            s,
            "- **above the bound:** {}",
            inline(b.trim_start_matches("above the bound: "))
        )?;
    }
    if let Some(b) = rows::bottleneck(r) {
        writeln!(
            s,
            "- **bottleneck:** {}",
            inline(b.trim_start_matches("bottleneck "))
        )?;
    }
    if let Some(o) = rows::overlap(r) {
        writeln!(s, "- **schedule:** {}", inline(&o))?;
    }
    if let Some(c) = rows::run_compute(r) {
        writeln!(s, "- **compute:** {}", inline(&c))?;
    }
    if let Some(e) = crate::energy::summary_line(r) {
        writeln!(
            s,
            "- **energy:** {}",
            inline(e.trim_start_matches("energy: "))
        )?;
    }
    if let Some(c) = rows::streams(r) {
        writeln!(
            s,
            "- **streams:** {}",
            inline(c.trim_start_matches("streams: "))
        )?;
    }
    writeln!(s, "- **verified:** {}", verified_mark(r.verified))?;
    writeln!(s, "- **LM peak:** {} per PE", rows::lm_use(r))?;
    for (name, items) in [
        ("overrides", rows::overrides(r)),
        ("bind", rows::bindings(r)),
    ] {
        if !items.is_empty() {
            let items: Vec<String> = items.iter().map(|i| code(i)).collect();
            writeln!(s, "- **{name}:** {}", items.join(", "))?;
        }
    }
    Ok(())
}

/// Writes `By part` and `By layer` for a whole model (`crate::places`).
fn write_places(r: &Report, s: &mut String) -> std::fmt::Result {
    use crate::places::{TITLES, rows};
    for (by, title) in [("part", "By part"), ("layer", "By layer")] {
        let rows = rows(r, by);
        if rows.is_empty() {
            continue;
        }
        writeln!(s, "\n## {title}\n")?;
        header(s, &TITLES, &[0])?;
        for r in &rows {
            row(s, r)?;
        }
    }
    Ok(())
}

/// Writes `Critical path`: the ops most exposed on it (at most ten) with what each
/// waited on; nothing when no op is on it.
fn write_exposed(r: &Report, s: &mut String) -> std::fmt::Result {
    let top = critical::most_exposed(r, MOST_EXPOSED);
    if top.is_empty() {
        return Ok(());
    }
    writeln!(s, "\n## Critical path\n")?;
    let title = critical::exposed_title(r, top.len());
    let mut chars = title.chars();
    let title: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    writeln!(s, "{}:\n", inline(&title))?;
    header(
        s,
        &["#", "op", "tensor", "exposed", "share", "waited on"],
        &[1, 2, 5],
    )?;
    for &i in &top {
        let op = &r.ops[i];
        row(
            s,
            &[
                op.index.to_string(),
                op.op.clone(),
                op.tensor.clone(),
                thousands(op.exposed_cycles),
                share(op.exposed_cycles, r.total_cycles),
                critical::waited(r, op),
            ],
        )?;
    }
    Ok(())
}

/// Writes `Ops`: a row per op (or `(no ops)`), then the note on useful work and why ops
/// outlast their bottleneck stage.
fn write_ops(r: &Report, s: &mut String) -> std::fmt::Result {
    writeln!(s, "\n## Ops\n")?;
    if r.ops.is_empty() {
        writeln!(s, "(no ops)")?;
    } else {
        header(s, rows::op_titles(r), &[1, 2, 5])?;
        for op in &r.ops {
            row(s, &rows::op_cells(r, op, Nums::Grouped))?;
        }
        writeln!(s, "\n{USEFUL_NOTE}")?;
        let long: Vec<(usize, String)> = (0..r.ops.len())
            .filter_map(|i| critical::outlasts(r, i).map(|w| (i, w)))
            .collect();
        if !long.is_empty() {
            writeln!(s, "\nOps much longer than their bottleneck stage:\n")?;
            for (i, why) in long {
                writeln!(s, "- {}: {}", code(&critical::op_label(r, i)), inline(&why))?;
            }
        }
    }
    Ok(())
}

/// Writes `Stages`: the stages of the ops that move data, the bottleneck stage marked.
fn write_stages(r: &Report, s: &mut String) -> std::fmt::Result {
    let staged: Vec<_> = r.ops.iter().filter(|op| rows::shows_stages(op)).collect();
    if !staged.is_empty() {
        writeln!(s, "\n### Stages\n")?;
        let titles = [
            "#",
            "op",
            "level",
            "dir",
            "kind",
            "bytes",
            "cycles",
            "chunks",
            "bottleneck",
        ];
        header(s, &titles, &[1, 2, 3, 4, 8])?;
        for op in staged {
            let marked = op.bottleneck_stage();
            for (i, st) in op.stages.iter().enumerate() {
                let [level, dir, kind, bytes, _, _] = rows::stage_cells(st, Nums::Grouped);
                let mark = if marked == Some(i) {
                    "**◀ bottleneck**"
                } else {
                    ""
                };
                row(
                    s,
                    &[
                        op.index.to_string(),
                        format!("{} {}", op.op, op.tensor),
                        level,
                        dir,
                        kind,
                        bytes,
                        thousands(st.cycles),
                        thousands(st.chunks),
                        mark.to_string(),
                    ],
                )?;
            }
        }
    }
    Ok(())
}

/// Writes `Compute`: FLOP, FLOP per cycle and FLOP/s of the ops that compute.
fn write_compute(r: &Report, s: &mut String) -> std::fmt::Result {
    let computing: Vec<_> = r
        .ops
        .iter()
        .filter_map(|op| rows::compute(r, op).map(|c| (op, c)))
        .collect();
    if !computing.is_empty() {
        writeln!(s, "\n### Compute\n")?;
        header(
            s,
            &["#", "op", "tensor", "FLOP", "FLOP/cycle", "FLOP/s"],
            &[1, 2],
        )?;
        for (op, [flops, per_cycle, rate]) in computing {
            let per_cycle = per_cycle.trim_end_matches(" FLOP/cycle").to_string();
            row(
                s,
                &[
                    op.index.to_string(),
                    op.op.clone(),
                    op.tensor.clone(),
                    flops,
                    per_cycle,
                    rate,
                ],
            )?;
        }
    }
    Ok(())
}

/// Writes `Where the cycles went`: the per-level table with its bars.
fn write_levels(r: &Report, s: &mut String) -> std::fmt::Result {
    if !r.levels.is_empty() {
        writeln!(s, "\n## Where the cycles went\n")?;
        let mut titles = LEVEL_TITLES.to_vec();
        titles.push("");
        header(s, &titles, &[0, 5])?;
        for l in &r.levels {
            let mut cells = rows::level_cells(r, l).to_vec();
            let b = bar(rows::level_fraction(r, l), BAR_CELLS);
            cells.push(if b.is_empty() {
                String::new()
            } else {
                code(&b)
            });
            row(s, &cells)?;
        }
        writeln!(s, "\n_{LEVEL_NOTE}_")?;
    }
    Ok(())
}

/// Writes `Warnings`, if any.
fn write_warnings(r: &Report, s: &mut String) -> std::fmt::Result {
    if !r.warnings.is_empty() {
        writeln!(s, "\n## Warnings\n")?;
        for w in &r.warnings {
            writeln!(s, "- {}", inline(w))?;
        }
    }
    Ok(())
}

/// A table header; columns whose index is in `left` are left-aligned, the others right-aligned.
fn header(s: &mut String, titles: &[&str], left: &[usize]) -> std::fmt::Result {
    row(s, &titles.iter().map(|t| t.to_string()).collect::<Vec<_>>())?;
    let rules: Vec<&str> = (0..titles.len())
        .map(|i| if left.contains(&i) { "---" } else { "--:" })
        .collect();
    writeln!(s, "|{}|", rules.join("|"))
}

fn row(s: &mut String, cells: &[String]) -> std::fmt::Result {
    let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
    writeln!(s, "| {} |", cells.join(" | "))
}

/// Text safe in a table cell: `|` escaped, line breaks as spaces.
fn cell(text: &str) -> String {
    inline(text).replace('|', "\\|")
}

/// Text on one line.
fn inline(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

/// `text` as a code span (a longer fence when it holds backticks).
fn code(text: &str) -> String {
    if text.contains('`') {
        format!("`` {} ``", inline(text))
    } else {
        format!("`{}`", inline(text))
    }
}
