//! Checks of a report's energy that several tests make.

use mnsim_reports::Report;

/// The most power windows a report gives.
const WINDOWS: u64 = 200;

/// Whether a report's power windows are cut as docs/report-schema.md says — they tile
/// the run from cycle 0, every one ⌈total ÷ 200⌉ cycles long but the last, which is as
/// long or shorter — and integrate to the run's joules: Σ watts × window seconds =
/// `total_j`, within floating rounding.
#[allow(dead_code)]
pub fn power_windows(r: &Report) -> Result<(), String> {
    let e = r.energy.as_ref().ok_or("no energy")?;
    let p = &e.power;
    let total = r.total_cycles;
    if total == 0 {
        return match p.is_empty() {
            true => Ok(()),
            false => Err(format!("{} windows over 0 cycles", p.len())),
        };
    }
    let (first, last) = match (p.first(), p.last()) {
        (Some(f), Some(l)) => (f, l),
        _ => return Err(format!("no power windows over {total} cycles")),
    };
    let len = total.div_ceil(WINDOWS);
    if first.start != 0 || last.end != total {
        return Err(format!(
            "the windows span {}..{}, the run 0..{total}",
            first.start, last.end
        ));
    }
    for (i, w) in p.iter().enumerate() {
        let n = w
            .end
            .checked_sub(w.start)
            .ok_or("a window ends before it starts")?;
        let ok = if i + 1 == p.len() {
            (1..=len).contains(&n)
        } else {
            n == len && p[i + 1].start == w.end
        };
        if !ok {
            return Err(format!(
                "window {i} of {} is {}..{} ({n} cycles); each is {len} cycles (the last at most)",
                p.len(),
                w.start,
                w.end
            ));
        }
    }
    let hz = r.clock_ghz * 1e9;
    let integral: f64 = p
        .iter()
        .map(|w| w.watts * (w.end - w.start) as f64 / hz)
        .sum();
    if (integral - e.total_j).abs() > 1e-9 * e.total_j.abs() {
        return Err(format!(
            "the windows integrate to {integral} J, the run costs {} J ({:+.4}%)",
            e.total_j,
            (integral / e.total_j - 1.0) * 100.0
        ));
    }
    Ok(())
}
