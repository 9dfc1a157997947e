//! A hand-built report of a small MLP block on mncore2, shared by the tests.
#![allow(dead_code)]

use mnsim_reports::{
    Bottleneck, LevelTotal, OpReport, Percentiles, Report, ResourceTotal, SCHEMA, StageReport,
    StreamReport, WaitedOn,
};

/// A stage with the usual derived fields filled in.
pub fn stage(
    level: &str,
    direction: &str,
    kind: &str,
    bytes: u64,
    cycles: u64,
    chunks: u64,
) -> StageReport {
    StageReport {
        level: level.into(),
        direction: direction.into(),
        kind: kind.into(),
        bytes,
        child_bytes: if kind == "broadcast" {
            bytes * 8
        } else {
            bytes
        },
        max_port_bytes: bytes / 8,
        max_child_bytes: bytes / 64,
        ports: 8,
        cycles,
        latency: 12,
        chunks,
    }
}

/// An op starting at `start`, taking `cycles`.
#[allow(clippy::too_many_arguments)]
pub fn op(
    index: usize,
    name: &str,
    tensor: &str,
    start: u64,
    cycles: u64,
    bottleneck: &str,
    stages: Vec<StageReport>,
    ready: bool,
) -> OpReport {
    let end = start + cycles;
    OpReport {
        index,
        inserted_after: None,
        op: name.into(),
        tensor: tensor.into(),
        layout: Some("((8_L2B, 8_L1B, 1:64), (16_MAB, 4:16, 4_PE))".into()),
        start,
        end,
        cycles,
        exposed_cycles: cycles,
        work_cycles: cycles,
        bottleneck: bottleneck.into(),
        algorithm: None,
        stages,
        ready_cycles: ready.then(|| Percentiles {
            p50: end - cycles / 10,
            p90: end - cycles / 50,
            p99: end - cycles / 500,
            max: end,
            min: start + cycles / 2,
            count: 4096,
        }),
        flops: None,
        utilisation: 1.0,
        padding_elems: 0,
        padded_elems: 65536,
        bound_cycles: 0,
        bound_resource: String::new(),
        waited_on: None,
        energy_j: 0.0,
        view: false,
        layer: None,
        part: None,
    }
}

/// Per-level totals summed from the ops, levels in order of first appearance.
pub fn level_totals(ops: &[OpReport]) -> Vec<LevelTotal> {
    let mut levels: Vec<LevelTotal> = Vec::new();
    for op in ops {
        let bottleneck = op.bottleneck_stage();
        for (i, s) in op.stages.iter().enumerate() {
            let l = match levels.iter().position(|l| l.level == s.level) {
                Some(p) => &mut levels[p],
                None => {
                    levels.push(LevelTotal {
                        level: s.level.clone(),
                        busy_cycles: 0,
                        bytes: 0,
                        bottleneck_ops: 0,
                    });
                    levels.last_mut().unwrap()
                }
            };
            l.busy_cycles += s.cycles;
            l.bytes += s.bytes;
            l.bottleneck_ops += u64::from(bottleneck == Some(i));
        }
    }
    levels
}

/// `x` (f16[64,1024]) broadcast over the L1Bs, `w1` (f16[1024,4096]) distributed, a matmul,
/// and `h` (f16[64,4096]) stored back.
pub fn sample() -> Report {
    let mut ops = vec![
        op(
            0,
            "Load",
            "x",
            0,
            16_420,
            "L1B down broadcast",
            vec![
                stage("DRAM", "down", "dram", 131_072, 768, 1),
                stage("L2B", "down", "distribute", 131_072, 2_048, 1),
                stage("L1B", "down", "broadcast", 131_072, 16_384, 4),
            ],
            true,
        ),
        op(
            1,
            "Load",
            "w1",
            16_420,
            49_200,
            "DRAM",
            vec![
                stage("DRAM", "down", "dram", 8_388_608, 49_152, 1),
                stage("L2B", "down", "distribute", 8_388_608, 16_384, 16),
                stage("L1B", "down", "distribute", 8_388_608, 2_048, 64),
            ],
            true,
        ),
        op(
            2,
            "MatMul",
            "h",
            65_620,
            1_088,
            "compute",
            vec![stage("MAB", "local", "compute", 0, 1_024, 1)],
            true,
        ),
        op(
            3,
            "Store",
            "h",
            66_708,
            3_120,
            "DRAM",
            vec![
                stage("L1B", "up", "gather", 524_288, 512, 4),
                stage("L2B", "up", "gather", 524_288, 1_024, 1),
                stage("DRAM", "up", "dram", 524_288, 3_072, 1),
            ],
            false,
        ),
    ];
    ops[2].flops = Some(2 * 64 * 1024 * 4096);
    ops[2].utilisation = 0.875;
    ops[2].padding_elems = 8_192;
    ops[2].layout = Some("((8_L2B, 8_L1B, 16_MAB), (4:64, 4_PE, 64:1))".into());
    ops[3].layout = None;
    ops[2].bound_cycles = 2_048;
    ops[2].bound_resource = "MAB compute".into();
    ops[2].waited_on = Some(WaitedOn {
        reason: "stream".into(),
        op: Some(1),
        resource: Some("L1B down".into()),
        cycles: 1_200,
    });
    let levels = level_totals(&ops);
    Report {
        schema: SCHEMA.into(),
        scenario: "mlp block".into(),
        plan: Some("rows".into()),
        machine: "mncore2".into(),
        mode: "functional".into(),
        schedule: "sequential".into(),
        total_cycles: 69_828,
        clock_ghz: 0.75,
        ops,
        program_ops: 4,
        free_ops: 0,
        levels,
        resources: vec![
            ResourceTotal {
                name: "L1B down".into(),
                kind: "port".into(),
                busy_cycles: 34_914,
                utilisation: 0.5,
            },
            ResourceTotal {
                name: "MAB compute".into(),
                kind: "matrix".into(),
                busy_cycles: 6_983,
                utilisation: 0.1,
            },
        ],
        streams: vec![
            StreamReport {
                tensor: "w1".into(),
                producer: 1,
                consumer: Some(2),
                slices: 8,
                slice_bytes: 2_048,
                buffers: 2,
                requested: None,
                double_buffered: true,
                fallback: None,
                sends: 16,
                resent_slices: 8,
                resend_cycles: 4_096,
            },
            StreamReport {
                tensor: "x".into(),
                producer: 0,
                consumer: Some(2),
                slices: 4,
                slice_bytes: 8_192,
                buffers: 1,
                requested: None,
                double_buffered: false,
                fallback: Some("LM full: two slices need 2048 words, 1500 of 4096 free".into()),
                sends: 4,
                resent_slices: 0,
                resend_cycles: 0,
            },
        ],
        peak_flops_per_cycle: Some(524_288.0),
        verified: Some(true),
        lm_peak_bytes: 12_288,
        lm_bytes: 32_768,
        overrides: vec![("links.L1B.distribute.parent".into(), 1024.0)],
        bind: vec![("batch".into(), 64)],
        warnings: vec![
            "binding `seq` is not used by any tensor".into(),
            "plan `rows` pads h along axis 1 from 4096 to 4608 positions: 11.1% of the matrix \
             unit's work is padding; a layout with 8 MABs per row would avoid it"
                .into(),
        ],
        bound_cycles: 41_000,
        bound_resource: "Group down".into(),
        bottleneck: Some(Bottleneck {
            resource: "L1B down".into(),
            critical_cycles: 30_000,
            busy_cycles: 34_914,
            share: 0.5,
        }),
        above_bound: None,
        energy: None,
        places: Vec::new(),
        boards: None,
    }
}

/// The sample under another plan name and total.
pub fn plan(name: &str, total_cycles: u64) -> Report {
    let mut r = sample();
    r.plan = Some(name.into());
    r.total_cycles = total_cycles;
    r
}

/// The sample with energy: ops' joules summing to the total, two resources, two levels and
/// a power profile over its 69,828 cycles.
pub fn with_energy() -> Report {
    use mnsim_reports::energy::{EnergyLevel, EnergyReport, EnergyResource, PowerWindow};
    let mut r = sample();
    let resource =
        |name: &str, kind: &str, level: &str, amount: u64, unit: &str, pj: f64| EnergyResource {
            name: name.into(),
            kind: kind.into(),
            level: level.into(),
            amount,
            unit: unit.into(),
            pj_per_unit: pj,
            joules: amount as f64 * pj * 1e-12,
        };
    let resources = vec![
        resource("DRAM read", "dram", "Group", 8_388_608, "bytes", 160.0),
        resource("MAB matrix F16", "matrix", "MAB", 50_331_648, "flop", 0.763),
    ];
    let dynamic_j: f64 = resources.iter().map(|x| x.joules).sum();
    let secs = 69_828.0 / 0.75e9;
    let static_j = 68.0 * secs;
    let total_j = dynamic_j + static_j;
    let n = r.ops.len() as f64;
    for o in &mut r.ops {
        o.energy_j = total_j / n;
    }
    r.ops[2].flops = Some(50_331_648);
    r.energy = Some(EnergyReport {
        total_j,
        dynamic_j,
        static_j,
        static_w: 68.0,
        average_w: total_j / secs,
        peak_w: 240.0,
        flop_per_j: Some(50_331_648.0 / total_j),
        resources,
        levels: vec![
            EnergyLevel {
                level: "Group".into(),
                nodes: 4,
                dynamic_j: 8_388_608.0 * 160e-12,
                static_j: 8.0 * secs,
            },
            EnergyLevel {
                level: "MAB".into(),
                nodes: 1024,
                dynamic_j: 50_331_648.0 * 0.763e-12,
                static_j: 60.0 * secs,
            },
        ],
        power: vec![
            PowerWindow {
                start: 0,
                end: 34_914,
                watts: 120.0,
            },
            PowerWindow {
                start: 34_914,
                end: 69_828,
                watts: 240.0,
            },
        ],
        uncosted: vec![mnsim_reports::energy::Uncosted {
            resource: "PE vector S8".into(),
            knob: "energy.vector_pj_per_flop.S8".into(),
            flop: 4_096,
        }],
    });
    r
}
