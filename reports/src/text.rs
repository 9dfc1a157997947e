//! Small text helpers shared by the views: number and byte formatting, bars, ANSI styles and a
//! column-aligned table that fits a width budget.
//!
//! Widths are counted in `char`s: every glyph the views emit themselves (`µ`, `✓`, block
//! elements) is one column wide. Names from the scenario are assumed to be, too.

/// Lines of the terminal views never exceed this many columns.
pub const MAX_WIDTH: usize = 100;

/// Display width of `s` in columns (see the module note).
pub(crate) fn width(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to at most `w` columns, ending in `…` when something was cut.
pub(crate) fn truncate(s: &str, w: usize) -> String {
    if width(s) <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out
}

/// An unsigned integer with `,` between groups of three digits (`1,234,567`).
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How a table writes counts, from the most exact to the narrowest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nums {
    /// `1,234,567`.
    Grouped,
    /// Up to 99,999 bare, beyond with an SI prefix and four significant digits (`1.235M`).
    Compact,
}

/// A count written as `style` says.
pub(crate) fn num(n: u64, style: Nums) -> String {
    match style {
        Nums::Grouped => thousands(n),
        Nums::Compact if n < 100_000 => n.to_string(),
        Nums::Compact => {
            const PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
            let mut value = n as f64;
            let mut out = String::new();
            for prefix in PREFIXES {
                let decimals = if value >= 100.0 {
                    1
                } else if value >= 10.0 {
                    2
                } else {
                    3
                };
                out = format!("{value:.decimals$}{prefix}");
                // Take the first prefix under which the value, rounded, stays below 1000.
                if format!("{value:.decimals$}")
                    .parse::<f64>()
                    .is_ok_and(|v| v < 1000.0)
                {
                    break;
                }
                value /= 1000.0;
            }
            out
        }
    }
}

/// A non-negative real with `decimals` decimals and group separators in the integer part.
pub(crate) fn real(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "–".to_string();
    }
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s.as_str(), None),
    };
    let mut out = String::new();
    if x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.push('-');
    }
    out.push_str(
        &int.parse::<u64>()
            .map(thousands)
            .unwrap_or_else(|_| int.to_string()),
    );
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// Bytes in binary units: `512 B`, `16.0 KiB`, `1.5 MiB`, `2.0 GiB`, `1.0 TiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    // 1023.96 KiB would print as "1024.0 KiB": show it as the next unit instead.
    if format!("{value:.1}") == "1024.0" && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A quantity with an SI prefix and one decimal: `536.9 M`, `12.0 k`, `7.0 ` (no prefix).
pub(crate) fn si(x: f64) -> String {
    const PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    if !x.is_finite() {
        return "– ".to_string();
    }
    let mut value = x;
    let mut p = 0;
    while value.abs() >= 999.95 && p + 1 < PREFIXES.len() {
        value /= 1000.0;
        p += 1;
    }
    format!("{value:.1} {}", PREFIXES[p])
}

/// `part / whole` as a percentage with one decimal (`34.0%`), or `–` when `whole` is zero.
pub(crate) fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "–".to_string();
    }
    percent(part as f64 / whole as f64)
}

/// A fraction (0..1) as a percentage with one decimal (`87.5%`).
pub(crate) fn percent(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "–".to_string();
    }
    format!("{:.1}%", fraction * 100.0)
}

/// A horizontal bar of `fraction` (clamped to 0..1) of `cells` columns, drawn with unicode block
/// elements at 1/8-column resolution. The bar is not padded.
pub(crate) fn bar(fraction: f64, cells: usize) -> String {
    const PARTIAL: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let eighths = (f * (cells * 8) as f64).round() as usize;
    let mut out = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        out.push(PARTIAL[eighths % 8]);
    }
    // A level that was busy at all gets at least a sliver.
    if out.is_empty() && f > 0.0 {
        out.push('▏');
    }
    out
}

/// `✓`, `✗` or `–` for a verification outcome.
pub(crate) fn verified_mark(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "✓",
        Some(false) => "✗",
        None => "–",
    }
}

/// Style of a piece of terminal text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Style {
    #[default]
    Plain,
    Bold,
    Yellow,
    Green,
    Red,
    Dim,
}

/// `s` wrapped in the ANSI escapes of `style` when `color` is on; `s` unchanged otherwise.
pub(crate) fn paint(s: &str, style: Style, color: bool) -> String {
    let code = match style {
        Style::Plain => return s.to_string(),
        Style::Bold => "1",
        Style::Yellow => "33",
        Style::Green => "32",
        Style::Red => "31",
        Style::Dim => "2",
    };
    if !color || s.is_empty() {
        return s.to_string();
    }
    format!("\x1b[{code}m{s}\x1b[0m")
}

/// Words of `text` laid out in lines of at most `max` columns; the first line starts with
/// `first`, the others with `rest`. A word longer than a line is broken across lines.
pub(crate) fn wrap(text: &str, first: &str, rest: &str, max: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    let room = max.saturating_sub(width(first).max(width(rest))).max(1);
    let pieces = text.split_whitespace().flat_map(|word| {
        let chars: Vec<char> = word.chars().collect();
        chars
            .chunks(room)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
    });
    for piece in pieces {
        if !empty && width(&line) + 1 + width(&piece) > max {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(&piece);
        empty = false;
    }
    if !empty || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Horizontal alignment of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// A column of a [`Table`].
#[derive(Clone, Debug)]
pub(crate) struct Col {
    pub title: &'static str,
    pub align: Align,
}

impl Col {
    pub fn left(title: &'static str) -> Col {
        Col {
            title,
            align: Align::Left,
        }
    }
    pub fn right(title: &'static str) -> Col {
        Col {
            title,
            align: Align::Right,
        }
    }
}

/// One cell: its text and style.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cell {
    pub text: String,
    pub style: Style,
}

impl Cell {
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell {
            text: text.into(),
            style,
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell {
            text,
            style: Style::Plain,
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::from(text.to_string())
    }
}

/// A column-aligned table for the terminal. Rows are rendered one by one so callers can
/// interleave other lines (stages under their op).
#[derive(Clone, Debug)]
pub(crate) struct Table {
    pub cols: Vec<Col>,
    pub rows: Vec<Vec<Cell>>,
    /// Leading spaces of every line.
    pub indent: usize,
    /// Spaces between columns.
    pub gap: usize,
}

impl Table {
    pub fn new(cols: Vec<Col>, indent: usize, gap: usize) -> Table {
        Table {
            cols,
            rows: Vec::new(),
            indent,
            gap,
        }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.cols.len());
        self.rows.push(row);
    }

    /// Column widths: the widest cell or title of each column (nothing is ever cut).
    pub fn widths(&self) -> Vec<usize> {
        self.cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                self.rows
                    .iter()
                    .map(|r| width(&r[i].text))
                    .chain([width(c.title)])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The header line (titles, bold when `color`).
    pub fn header(&self, w: &[usize], color: bool) -> String {
        let cells: Vec<Cell> = self
            .cols
            .iter()
            .map(|c| Cell::styled(c.title, Style::Bold))
            .collect();
        self.line(&cells, w, color)
    }

    /// Row `i` as a line.
    pub fn row(&self, i: usize, w: &[usize], color: bool) -> String {
        self.line(&self.rows[i], w, color)
    }

    fn line(&self, cells: &[Cell], w: &[usize], color: bool) -> String {
        let mut out = " ".repeat(self.indent);
        for (i, (cell, col)) in cells.iter().zip(&self.cols).enumerate() {
            if i > 0 {
                out.push_str(&" ".repeat(self.gap));
            }
            let text = truncate(&cell.text, w[i]);
            let pad = " ".repeat(w[i] - width(&text));
            let text = paint(&text, cell.style, color);
            match col.align {
                Align::Left => {
                    out.push_str(&text);
                    out.push_str(&pad);
                }
                Align::Right => {
                    out.push_str(&pad);
                    out.push_str(&text);
                }
            }
        }
        out.trim_end().to_string()
    }
}

/// A step of 1, 2 or 5 × 10^k that cuts `range` into about `target` intervals (at least 1).
pub(crate) fn nice_step(range: f64, target: f64) -> f64 {
    let raw = (range / target).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(real(1646.0912, 2), "1,646.09");
        assert_eq!(real(0.5, 3), "0.500");
        assert_eq!(num(1_234_567, Nums::Compact), "1.235M");
        assert_eq!(num(99_999, Nums::Compact), "99999");
        assert_eq!(num(999_960, Nums::Compact), "1.000M");
        assert_eq!(num(123_456, Nums::Compact), "123.5k");
        assert_eq!(num(u64::MAX, Nums::Compact), "18.45E");
        assert_eq!(si(536_870_912.0), "536.9 M");
        assert_eq!(si(999.96), "1.0 k");
        assert_eq!(si(7.0), "7.0 ");
    }

    #[test]
    fn binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(16384), "16.0 KiB");
        assert_eq!(human_bytes(1536 * 1024), "1.5 MiB");
        assert_eq!(human_bytes(1024 * 1024 - 1), "1.0 MiB");
        assert_eq!(human_bytes(4 << 30), "4.0 GiB");
    }

    #[test]
    fn bars_use_eighths() {
        assert_eq!(bar(0.0, 10), "");
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(bar(2.0, 4), "████");
        assert_eq!(bar(0.5, 3), "█▌");
        assert_eq!(bar(0.0001, 10), "▏");
    }

    #[test]
    fn wraps_words() {
        let lines = wrap("aaa bbb ccc", "- ", "  ", 9);
        assert_eq!(lines, ["- aaa bbb", "  ccc"]);
        assert_eq!(wrap("", "- ", "  ", 9), ["- "]);
        assert_eq!(
            wrap("abcdefghijklm", "- ", "  ", 9),
            ["- abcdefg", "  hijklm"]
        );
    }

    #[test]
    fn tables_never_cut_cells() {
        let mut t = Table::new(vec![Col::left("name"), Col::right("n")], 0, 2);
        t.push(vec!["a-very-long-name".into(), "12".into()]);
        let w = t.widths();
        assert_eq!(w, [16, 2]);
        assert_eq!(t.row(0, &w, false), "a-very-long-name  12");
        assert!(!paint("x", Style::Bold, false).contains('\x1b'));
    }
}
