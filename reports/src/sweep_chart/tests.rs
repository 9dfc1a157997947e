//! Tests of the sweep chart: its axes, labels and series as SVG.

use super::*;
use crate::sweep::{RowResult, SWEEP_SCHEMA, SweepRow};

fn sweep() -> Sweep {
    let axes = vec![
        SweepAxis::new(
            "dram.bytes_per_cycle",
            AxisKind::Knob,
            vec![64.0, 128.0, 256.0],
        ),
        SweepAxis::new(
            "levels.PE.memory.bytes",
            AxisKind::Knob,
            vec![1024.0, 2048.0],
        ),
    ];
    let rows = (0..6)
        .map(|p| {
            let v = point_values(&axes, p);
            SweepRow {
                point: p,
                plan: None,
                // Memory size does not change cycles: the two series are equal.
                result: Some(RowResult {
                    total_cycles: (1e6 / v[0]) as u64,
                    time_us: 1.0,
                    levels: vec![],
                    bottleneck: "DRAM".into(),
                    bound_cycles: 0,
                    energy: None,
                }),
                error: None,
            }
        })
        .collect();
    Sweep {
        schema: SWEEP_SCHEMA.into(),
        scenario: "s".into(),
        plans: vec![None],
        axes,
        shard: None,
        rows,
        ..Sweep::default()
    }
}

#[test]
fn equal_series_are_drawn_once_and_labelled_together() {
    let svg = sweep_svg(&sweep(), 0);
    assert_eq!(svg.matches("<polyline").count(), 1);
    assert!(svg.contains("levels.PE.memory.bytes=1024 = levels.PE.memory.bytes=2048"));
    assert!(svg.contains("dram.bytes_per_cycle (bytes/cycle), log₂ scale"));
}

#[test]
fn legend_lines_carry_the_series_dashes() {
    let mut s = sweep();
    for r in &mut s.rows {
        if let Some(x) = &mut r.result {
            x.total_cycles += r.point as u64 % 2 * 1000;
        }
    }
    let svg = sweep_svg(&s, 0);
    assert_eq!(svg.matches("<polyline").count(), 2);
    // Each dash pattern appears once on the line and once in the legend.
    assert_eq!(svg.matches("stroke-dasharray=\"8 4\"").count(), 2);
    assert_eq!(svg.matches("stroke-dasharray=\"none\"").count(), 2);
}
