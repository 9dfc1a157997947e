//! Validation of a machine description: [`Machine::validate`] and its groups of checks,
//! run in a fixed order so that the first inconsistency found is always the same one.

use super::{
    Level, Link, MAX_LATENCY, MAX_PES, MIN_RATE, Machine, MachineError, Memory, Network, Num,
    TransferKind,
};

/// Whether `s` is a name that paths and layouts can use: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An error about the field at `path` ([`MachineError::at_path`]).
fn err(path: impl Into<String>, message: impl Into<String>) -> MachineError {
    MachineError::at_path(path, message)
}

/// Whether `x` is a rate or clock a machine may have: finite and at least [`MIN_RATE`].
fn positive(x: f64) -> bool {
    x.is_finite() && x >= MIN_RATE
}

/// `Ok` if field `path` holds a [`positive`] number, else the error saying so.
fn positive_field(path: &str, x: f64) -> Result<(), MachineError> {
    if positive(x) {
        return Ok(());
    }
    Err(err(
        path,
        format!(
            "{path} must be a positive number (at least 1e-6), got {}",
            Num(x)
        ),
    ))
}

impl Machine {
    /// The level names, root first, comma-separated (for messages).
    fn level_list(&self) -> String {
        self.levels
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Checks that the machine is consistent; the error says what is wrong and where.
    pub fn validate(&self) -> Result<(), MachineError> {
        self.validate_levels()?;
        self.validate_counts()?;
        self.validate_leaf_and_folding()?;
        self.validate_word_and_clock()?;
        self.validate_dram()?;
        self.validate_links()?;
        self.validate_networks()?;
        self.validate_compute()?;
        self.validate_energy()
    }

    /// Checks that there are levels, and each level's name, count and memory.
    fn validate_levels(&self) -> Result<(), MachineError> {
        if self.levels.is_empty() {
            return Err(err("levels", "the machine has no levels"));
        }
        for (i, l) in self.levels.iter().enumerate() {
            self.validate_level(i, l)?;
        }
        Ok(())
    }

    /// Checks level `i`: a plain, unique name, a count of at least 1, a sound memory.
    fn validate_level(&self, i: usize, l: &Level) -> Result<(), MachineError> {
        if !is_identifier(&l.name) {
            return Err(err(
                "levels",
                format!(
                    "level name '{}' is not a plain name (letters, digits and '_', not starting with a digit)",
                    l.name
                ),
            ));
        }
        if let Some(j) = self.levels[..i].iter().position(|o| o.name == l.name) {
            return Err(err(
                format!("levels.{}", l.name),
                format!(
                    "duplicate level name '{}' (levels {} and {})",
                    l.name,
                    j + 1,
                    i + 1
                ),
            ));
        }
        if l.count == 0 {
            return Err(err(
                format!("levels.{}.count", l.name),
                format!(
                    "level '{}' has count 0; every level needs at least one node per parent",
                    l.name
                ),
            ));
        }
        if let Some(m) = &l.memory {
            self.validate_memory(l, m)?;
        }
        Ok(())
    }

    /// Checks the memory `m` of level `l`: size, local bandwidth and name.
    fn validate_memory(&self, l: &Level, m: &Memory) -> Result<(), MachineError> {
        if m.bytes == 0 {
            return Err(err(
                format!("levels.{}.memory.bytes", l.name),
                format!("memory '{}' of level '{}' has 0 bytes", m.name, l.name),
            ));
        }
        if m.bytes < self.word_bytes {
            return Err(err(
                format!("levels.{}.memory.bytes", l.name),
                format!(
                    "memory '{}' of level '{}' has {} byte(s), less than one {}-byte word",
                    m.name, l.name, m.bytes, self.word_bytes
                ),
            ));
        }
        if !(m.bytes_per_cycle == 0.0 || positive(m.bytes_per_cycle)) {
            return Err(err(
                format!("levels.{}.memory.bytes_per_cycle", l.name),
                format!(
                    "memory '{}' bytes_per_cycle must be at least 1e-6 bytes per cycle (or 0 for two words per cycle), got {}",
                    m.name,
                    Num(m.bytes_per_cycle)
                ),
            ));
        }
        if m.name.trim().is_empty() {
            return Err(err(
                format!("levels.{}.memory", l.name),
                format!("the memory of level '{}' has an empty name", l.name),
            ));
        }
        Ok(())
    }

    /// Checks the node counts: a root of count 1, no overflow, at most [`MAX_PES`] PEs.
    fn validate_counts(&self) -> Result<(), MachineError> {
        let root = &self.levels[0];
        if root.count != 1 {
            return Err(err(
                format!("levels.{}.count", root.name),
                format!(
                    "the root level '{}' has count {}; the root must have count 1",
                    root.name, root.count
                ),
            ));
        }
        let mut total = 1u64;
        for l in &self.levels {
            total = total.checked_mul(l.count).ok_or_else(|| {
                err(
                    format!("levels.{}.count", l.name),
                    format!(
                        "the number of '{}' nodes overflows 64 bits; level counts are too large",
                        l.name
                    ),
                )
            })?;
        }
        if total > MAX_PES {
            let l = &self.levels[self.levels.len() - 1];
            return Err(err(
                format!("levels.{}.count", l.name),
                format!("the machine has {total} PEs; mnsim simulates at most {MAX_PES} (2^24)"),
            ));
        }
        Ok(())
    }

    /// Checks that the leaf level has a memory and every unaddressable level can fold.
    fn validate_leaf_and_folding(&self) -> Result<(), MachineError> {
        let leaf = &self.levels[self.levels.len() - 1];
        if leaf.memory.is_none() {
            return Err(err(
                format!("levels.{}", leaf.name),
                format!(
                    "the leaf level '{}' has no memory; the PEs need a local memory",
                    leaf.name
                ),
            ));
        }
        for (i, l) in self.levels.iter().enumerate() {
            if !l.addressable && !self.levels[i + 1..].iter().any(|b| b.addressable) {
                return Err(err(
                    format!("levels.{}", l.name),
                    format!(
                        "level '{}' is not addressable and has no addressable level below it to fold into",
                        l.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the word size and the clock.
    fn validate_word_and_clock(&self) -> Result<(), MachineError> {
        if self.word_bytes == 0 {
            return Err(err(
                "word_bytes",
                "word_bytes is 0; a word needs at least one byte",
            ));
        }
        positive_field("clock_ghz", self.clock_ghz)
    }

    /// Checks the DRAM: a level above the leaves, a size, a bandwidth and a burst.
    fn validate_dram(&self) -> Result<(), MachineError> {
        let d = &self.dram;
        let Some(i) = self.dram_level_index() else {
            return Err(err(
                "dram.level",
                format!(
                    "dram.level '{}' is not a level of the machine (levels: {})",
                    d.level,
                    self.level_list()
                ),
            ));
        };
        if i + 1 == self.levels.len() {
            return Err(err(
                "dram.level",
                format!(
                    "dram.level '{}' is the leaf level; the DRAM must sit above the PEs",
                    d.level
                ),
            ));
        }
        if d.bytes == 0 {
            return Err(err("dram.bytes", "dram.bytes is 0"));
        }
        positive_field("dram.bytes_per_cycle", d.bytes_per_cycle)?;
        if d.burst_bytes == 0 {
            return Err(err("dram.burst_bytes", "dram.burst_bytes is 0"));
        }
        Ok(())
    }

    /// Checks every link, then that every level with something to send has a link.
    fn validate_links(&self) -> Result<(), MachineError> {
        for (name, link) in &self.links {
            self.validate_link(name, link)?;
        }
        self.validate_links_present()
    }

    /// Checks the link `name`: its level, its ends, and its latencies and rates.
    fn validate_link(&self, name: &str, link: &Link) -> Result<(), MachineError> {
        let Some(i) = self.level_index(name) else {
            return Err(err(
                format!("links.{name}"),
                format!(
                    "link '{name}' names no level of the machine (levels: {})",
                    self.level_list()
                ),
            ));
        };
        if self.levels[i].memory.is_none() && self.dram_level_index() != Some(i) {
            return Err(err(
                format!("links.{name}"),
                format!("link '{name}': level '{name}' has no memory and no DRAM to send from"),
            ));
        }
        if self.link_target(i).is_none() {
            return Err(err(
                format!("links.{name}"),
                format!("link '{name}': no memory-bearing level below '{name}' to send to"),
            ));
        }
        for kind in TransferKind::ALL {
            let r = link.rate(kind);
            if r.latency > MAX_LATENCY {
                return Err(err(
                    format!("links.{name}.{}.latency", kind.name()),
                    format!(
                        "link '{name}' {} latency {} is above the limit of {MAX_LATENCY} (2^32) cycles",
                        kind.name(),
                        r.latency
                    ),
                ));
            }
            for (side, v) in [("parent", r.parent), ("child", r.child)] {
                if !positive(v) {
                    return Err(err(
                        format!("links.{name}.{}.{side}", kind.name()),
                        format!(
                            "link '{name}' {} {side} rate must be a positive number of bytes per cycle (at least 1e-6), got {}",
                            kind.name(),
                            Num(v)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks that every level with something to send and somewhere to send it has a link.
    fn validate_links_present(&self) -> Result<(), MachineError> {
        let dram_level = self.dram_level_index();
        for (i, l) in self.levels.iter().enumerate() {
            let source = match (&l.memory, dram_level == Some(i)) {
                (Some(m), _) => format!("memory '{}'", m.name),
                (None, true) => "the DRAM".to_string(),
                (None, false) => continue,
            };
            if let Some(j) = self.link_target(i)
                && !self.links.contains_key(&l.name)
            {
                return Err(err(
                    format!("links.{}", l.name),
                    format!(
                        "level '{}' has {source} and memory-bearing level '{}' below it, but no link; add links.{}",
                        l.name, self.levels[j].name, l.name
                    ),
                ));
            }
        }
        Ok(())
    }
    /// Checks every network: on a level above the DRAM level that has no link, with a
    /// positive rate and a bounded latency.
    fn validate_networks(&self) -> Result<(), MachineError> {
        for (name, n) in &self.networks {
            self.validate_network(name, n)?;
        }
        Ok(())
    }

    fn validate_network(&self, name: &str, n: &Network) -> Result<(), MachineError> {
        let Some(i) = self.level_index(name) else {
            return Err(err(
                format!("networks.{name}"),
                format!(
                    "network '{name}' names no level of the machine (levels: {})",
                    self.level_list()
                ),
            ));
        };
        let d = self.dram_level_index().unwrap_or(0);
        if i >= d {
            return Err(err(
                format!("networks.{name}"),
                format!(
                    "network '{name}': a network joins boards or nodes, so its level must stand above the DRAM level '{}'",
                    self.dram.level
                ),
            ));
        }
        if self.links.contains_key(name) {
            return Err(err(
                format!("networks.{name}"),
                format!("level '{name}' has both a link and a network; give one"),
            ));
        }
        if n.latency > MAX_LATENCY {
            return Err(err(
                format!("networks.{name}.latency"),
                format!(
                    "network '{name}' latency {} is above the limit of {MAX_LATENCY} (2^32) cycles",
                    n.latency
                ),
            ));
        }
        positive_field(
            &format!("networks.{name}.bytes_per_cycle"),
            n.bytes_per_cycle,
        )?;
        if let Some(h) = &n.host {
            if h.latency > MAX_LATENCY {
                return Err(err(
                    format!("networks.{name}.host.latency"),
                    format!(
                        "network '{name}' host latency {} is above the limit of {MAX_LATENCY} (2^32) cycles",
                        h.latency
                    ),
                ));
            }
            if h.inputs > 1 {
                return Err(err(
                    format!("networks.{name}.host.inputs"),
                    format!(
                        "network '{name}' host inputs {} is neither 1 (the program's inputs start on the host) nor 0 (in the boards' DRAMs)",
                        h.inputs
                    ),
                ));
            }
            positive_field(
                &format!("networks.{name}.host.down_bytes_per_cycle"),
                h.down_bytes_per_cycle,
            )?;
            positive_field(
                &format!("networks.{name}.host.up_bytes_per_cycle"),
                h.up_bytes_per_cycle,
            )?;
        }
        Ok(())
    }

    /// Checks the compute rates: vector and matrix FLOP/cycle, the matrix level and tiles.
    fn validate_compute(&self) -> Result<(), MachineError> {
        for (d, &v) in &self.compute.vector {
            if !positive(v) {
                return Err(err(
                    format!("compute.vector.{d:?}"),
                    format!(
                        "compute.vector.{d:?} must be a positive FLOP/cycle figure (at least 1e-6), got {}",
                        Num(v)
                    ),
                ));
            }
        }
        let mx = &self.compute.matrix;
        if self.level_index(&mx.level).is_none() {
            return Err(err(
                "compute.matrix.level",
                format!(
                    "compute.matrix.level '{}' is not a level of the machine (levels: {})",
                    mx.level,
                    self.level_list()
                ),
            ));
        }
        for (d, &v) in &mx.flops {
            if !positive(v) {
                return Err(err(
                    format!("compute.matrix.flops.{d:?}"),
                    format!(
                        "compute.matrix.flops.{d:?} must be a positive FLOP/cycle figure (at least 1e-6), got {}",
                        Num(v)
                    ),
                ));
            }
            if !mx.tile.contains_key(d) {
                return Err(err(
                    format!("compute.matrix.tile.{d:?}"),
                    format!(
                        "compute.matrix.flops has {d:?} but compute.matrix.tile has no {d:?} tile"
                    ),
                ));
            }
        }
        for (d, t) in &mx.tile {
            if !mx.flops.contains_key(d) {
                return Err(err(
                    format!("compute.matrix.flops.{d:?}"),
                    format!(
                        "compute.matrix.tile has {d:?} but compute.matrix.flops has no {d:?} rate"
                    ),
                ));
            }
            for (f, v) in [("m", t.m), ("n", t.n), ("k", t.k)] {
                if v == 0 {
                    return Err(err(
                        format!("compute.matrix.tile.{d:?}.{f}"),
                        format!(
                            "compute.matrix.tile.{d:?}.{f} is 0; tile sides must be at least 1"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
