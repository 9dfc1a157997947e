//! Energy coefficients of a machine (`energy.…` knobs): picojoules per FLOP of each
//! compute unit and dtype, per byte of each memory access and link direction, and the
//! static power of each level's nodes. docs/model.md (energy) says how they are used.
//!
//! Every field defaults to empty: a machine file without an `energy` section loads, and a
//! coefficient it does not give is 0 (that access costs nothing).

use crate::dtype::DType;
use crate::machine::{Machine, MachineError, Num};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The energy model's coefficients.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Energy {
    /// Picojoules per FLOP on the matrix unit, per dtype.
    pub matrix_pj_per_flop: BTreeMap<DType, f64>,
    /// Picojoules per FLOP on the vector unit, per dtype.
    pub vector_pj_per_flop: BTreeMap<DType, f64>,
    /// Picojoules per byte read from and written to the DRAM.
    pub dram: Access,
    /// Picojoules per byte read from and written to each memory, by memory name
    /// (`LM`, `L1BM`, `L2BM`, `PDM`).
    pub memories: BTreeMap<String, Access>,
    /// Picojoules per byte crossing each link level, per direction, by level name.
    pub links: BTreeMap<String, LinkEnergy>,
    /// Static power (leakage, clock) of one node of each level, in watts, by level name.
    pub static_w_per_node: BTreeMap<String, f64>,
}

/// Energy of one memory's accesses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Access {
    pub read_pj_per_byte: f64,
    pub write_pj_per_byte: f64,
}

/// Energy of a link's bytes, per direction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkEnergy {
    pub down_pj_per_byte: f64,
    pub up_pj_per_byte: f64,
}

impl Energy {
    /// No coefficient given (a machine file without an `energy` section).
    pub fn is_empty(&self) -> bool {
        *self == Energy::default()
    }

    /// Static power of the whole machine, in watts: every level's nodes.
    pub fn static_watts(&self, m: &Machine) -> f64 {
        m.levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                self.static_w_per_node.get(&l.name).copied().unwrap_or(0.0) * m.nodes_at(i) as f64
            })
            .sum()
    }

    /// The memory's access coefficients (zero when not given).
    pub fn memory(&self, name: &str) -> Access {
        self.memories.get(name).cloned().unwrap_or_default()
    }

    /// The link level's coefficients (zero when not given).
    pub fn link(&self, level: &str) -> LinkEnergy {
        self.links.get(level).cloned().unwrap_or_default()
    }

    /// Picojoules per FLOP of the matrix (`matrix == true`) or vector unit for `dtype`.
    pub fn pj_per_flop(&self, matrix: bool, dtype: DType) -> f64 {
        let map = if matrix {
            &self.matrix_pj_per_flop
        } else {
            &self.vector_pj_per_flop
        };
        map.get(&dtype).copied().unwrap_or(0.0)
    }
}

/// Whether a knob path is an energy coefficient (these take 0 to [`MAX_COEFFICIENT`]).
pub fn is_energy_knob(path: &str) -> bool {
    path.starts_with("energy.")
}

/// The largest energy coefficient: 10^12 pJ per byte or FLOP (a joule), 10^12 W per node.
/// An amount is at most 2^64 bytes or FLOP, so a resource's joules stay below 2 × 10^19
/// and a level's static power below 10^12 W × 2^24 nodes; joules, watts and joules ×
/// seconds then stay far below f64's 1.8 × 10^308. A larger coefficient could make them
/// infinite (`null` in report.json, `inf J` on the terminal), so it is refused.
pub const MAX_COEFFICIENT: f64 = 1e12;

/// Whether `v` is an energy coefficient a machine may have: 0 to [`MAX_COEFFICIENT`].
pub fn is_coefficient(v: f64) -> bool {
    (0.0..=MAX_COEFFICIENT).contains(&v)
}

fn coefficient(path: String, v: f64) -> Result<(), MachineError> {
    if is_coefficient(v) {
        Ok(())
    } else {
        Err(MachineError::at_path(
            path.clone(),
            format!(
                "{path} must be a number from 0 to 1e12, got {} (an energy coefficient: a larger one could make a run's joules or watts overflow)",
                Num(v)
            ),
        ))
    }
}

impl Machine {
    /// Checks the energy coefficients: finite, not negative, and naming memories, link
    /// levels and levels the machine has.
    pub(crate) fn validate_energy(&self) -> Result<(), MachineError> {
        let e = &self.energy;
        for (unit, map) in [
            ("matrix_pj_per_flop", &e.matrix_pj_per_flop),
            ("vector_pj_per_flop", &e.vector_pj_per_flop),
        ] {
            for (d, &v) in map {
                coefficient(format!("energy.{unit}.{d:?}"), v)?;
            }
        }
        coefficient(
            "energy.dram.read_pj_per_byte".into(),
            e.dram.read_pj_per_byte,
        )?;
        coefficient(
            "energy.dram.write_pj_per_byte".into(),
            e.dram.write_pj_per_byte,
        )?;
        let memories: Vec<&str> = self
            .levels
            .iter()
            .filter_map(|l| l.memory.as_ref().map(|m| m.name.as_str()))
            .collect();
        for (name, a) in &e.memories {
            if !memories.contains(&name.as_str()) {
                return Err(MachineError::at_path(
                    format!("energy.memories.{name}"),
                    format!(
                        "energy.memories names '{name}', not a memory of the machine (memories: {})",
                        memories.join(", ")
                    ),
                ));
            }
            coefficient(
                format!("energy.memories.{name}.read_pj_per_byte"),
                a.read_pj_per_byte,
            )?;
            coefficient(
                format!("energy.memories.{name}.write_pj_per_byte"),
                a.write_pj_per_byte,
            )?;
        }
        for (name, l) in &e.links {
            if !self.has_link(name) {
                return Err(MachineError::at_path(
                    format!("energy.links.{name}"),
                    format!(
                        "energy.links names '{name}', not a link level of the machine (links: {})",
                        (self.links.keys().chain(self.networks.keys()))
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            coefficient(
                format!("energy.links.{name}.down_pj_per_byte"),
                l.down_pj_per_byte,
            )?;
            coefficient(
                format!("energy.links.{name}.up_pj_per_byte"),
                l.up_pj_per_byte,
            )?;
        }
        for (name, &w) in &e.static_w_per_node {
            if self.level_index(name).is_none() {
                return Err(MachineError::at_path(
                    format!("energy.static_w_per_node.{name}"),
                    format!(
                        "energy.static_w_per_node names '{name}', not a level of the machine (levels: {})",
                        self.levels
                            .iter()
                            .map(|l| l.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            coefficient(format!("energy.static_w_per_node.{name}"), w)?;
        }
        Ok(())
    }
}
