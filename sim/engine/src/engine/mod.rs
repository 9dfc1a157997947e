//! The engine: tensors in DRAM and LM, the transfers (Load, Store, Relayout, Reduce)
//! in timing and functional mode, and the report of every op.
//!
//! Timing mode never touches element data: per-PE facts come from the layout's closed
//! forms. Functional mode moves real bytes between real buffers, in parallel over the
//! PEs (rayon), and counts the same facts from what it moved; both feed one cost model
//! ([`crate::net::cost`]), so both modes give the same cycles.

use crate::ids::RegionId;
use crate::net;
use crate::program::{PrimaryMap, TensorId};
use crate::timeline::{Schedule, Timeline};
use mnsim_arch::{DType, Machine, TensorLayout, XlaLayout};

pub use crate::program::{Mode, check_dram, dram_capacity};

mod alloc;
mod buffers;
mod contract;
mod conv;
mod copy;
mod dataplane;
mod error;
mod facts;
mod gather;
mod kernel;
mod memo;
mod op;
mod record;
mod reduce;
mod state;
mod streams;
#[cfg(test)]
mod tests;
mod transfers;

pub use error::{ErrorKind, LmFull, Partial, SimError};
pub use gather::row_of;
pub use memo::{PlanMemos, WalkMemos};
pub use op::OpCall;
pub use record::{Recorder, Recording};
pub use state::MachineState;
pub use streams::StreamState;

pub use buffers::zeroed;

/// A tensor in DRAM.
#[derive(Clone, Debug)]
pub struct DramTensor {
    pub layout: XlaLayout,
    /// Element bytes in the XLA layout's order (functional mode only).
    pub data: Vec<u8>,
}

/// A tensor resident in every PE's LM.
#[derive(Clone, Debug)]
pub struct Resident {
    pub layout: TensorLayout,
    /// First LM word of the tensor's region (the same on every PE).
    pub offset: u64,
    /// Words of the region: footprint × time span (every step is kept).
    pub words: u64,
    /// Addressable levels (indices) over which copies hold different partial values.
    pub partial: Vec<usize>,
    /// This allocation, for the timeline's data dependencies.
    pub region: RegionId,
}

/// What the engine keeps of an op it ran, beside its report.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Its stages, typed: its own, then those of the stream slices it needed again (its
    /// re-sends: the producers' stages scaled to the slices sent again, charged to it in
    /// cycles and bytes).
    pub stages: Vec<net::Stage>,
    /// How many of `stages` are the op's own.
    pub own: usize,
    /// Its slowest stage (an index into `stages`, one of its own).
    pub bottleneck: Option<usize>,
    /// The tensor it moved or computed.
    pub tensor: TensorId,
    /// Its own stages done again, where that differs (`net::Cost::again`): what a
    /// consumer's re-send of one of its slices replays.
    pub again: Option<Vec<net::Stage>>,
}

impl Record {
    /// The op's own stages.
    pub fn own(&self) -> &[net::Stage] {
        &self.stages[..self.own]
    }

    /// The stages of the slices it needed again.
    pub fn resent(&self) -> &[net::Stage] {
        &self.stages[self.own..]
    }
}

/// A declared tensor.
#[derive(Clone, Debug)]
pub struct TensorState {
    /// Its name, for messages and reports.
    pub name: String,
    pub dtype: DType,
    /// Shape as laid out in LM (bounded dynamic dimensions at their bound).
    pub dims: Vec<u64>,
    /// Shape of the real data (bound dynamic dimensions at their binding).
    pub runtime: Vec<u64>,
    pub dram: Option<DramTensor>,
    pub lm: Option<Resident>,
    /// A program input not loaded yet: on a machine with a host its first Load brings
    /// it over the host's links (docs/model.md, the host).
    pub from_host: bool,
}

/// The simulator for one run: the machine's state, the recorder of the ops it ran, the
/// lowering's caches and the run's options. What one op asks beside its operands comes
/// with it ([`OpSettings`]); nothing is left on the engine between ops.
pub struct Engine {
    /// The machine, its world, the tensors by id, LM and its streams.
    pub state: MachineState,
    /// The ops run: reports (or only measurements, for a planner), tasks, timeline.
    pub rec: Recorder,
    /// Walks planned and their sends, by what they depend on (kept across
    /// [`Engine::clear`]: ops that walk alike plan once).
    walks: WalkMemos,
    opts: Options,
}

/// The engine's options for the whole run.
#[derive(Clone, Copy, Debug)]
struct Options {
    /// Functional mode: evaluate every kernel element by element, matrix contractions
    /// and convolutions included (see [`Engine::set_per_element_kernels`]).
    per_element_kernels: bool,
    /// An illegal kernel's error explains the fix ([`Engine::set_explaining`]).
    explaining: bool,
    /// A transfer over a network with no algorithm of its own runs the cheapest
    /// ([`Engine::set_choosing_algorithms`]).
    choosing_algorithms: bool,
}

/// What one op of a program asks of the engine beside its operands, passed with it
/// ([`Engine::op`]).
#[derive(Clone, Debug, Default)]
pub struct OpSettings {
    /// `buffers:` of the op: how many slices of its result's stream LM holds (the
    /// default: two where two fit).
    pub buffers: Option<i64>,
    /// A kernel's legality as [`Engine::kernel_legality`] gave it for the layouts its
    /// inputs and output will have (a planner keeps what it checked): the kernel takes it
    /// instead of checking again.
    pub legality: Option<mnsim_kernels::Legality>,
    /// `algorithm:` of the op: how the collectives of its transfers over a network run
    /// (a Reduce's, a Relayout's, a kernel's tree Reduces'; docs/model.md, many boards).
    /// `None`: each network's own algorithm (or the cheapest, where the engine chooses).
    pub algorithm: Option<mnsim_arch::machine::Algorithm>,
}

impl Engine {
    pub fn new(machine: Machine, mode: Mode) -> Engine {
        Self::with_schedule(machine, mode, Schedule::Sequential)
    }

    /// A planner's engine: timing mode, its ops only measured ([`Recording::Measure`])
    /// and placed by `schedule`.
    pub fn measuring(machine: Machine, schedule: Schedule) -> Engine {
        let mut eng = Self::with_schedule(machine, Mode::Timing, schedule);
        eng.rec.kind = Recording::Measure(Box::default());
        eng
    }

    /// Forgets what LM holds and every op recorded, keeping the machine, the world and
    /// the declared tensors: the planner measures ops one at a time on one engine.
    pub fn clear(&mut self) {
        self.state.clear();
        self.rec.clear();
    }

    /// Charges `words` of LM for a tensor placed outside the allocator (the planner's
    /// measuring engine places an op's inputs so), until the engine is cleared: the
    /// slices a stream holds by default are then decided beside them, as in the run.
    pub fn charge_placed(&mut self, words: u64) {
        self.state.alloc.placed = self.state.alloc.placed.saturating_add(words);
    }

    /// [`Engine::clear`], and forgets every tensor too: the engine is as a new one to
    /// the next run (which declares its tensors), but for what it memoises.
    pub fn clear_all(&mut self) {
        self.clear();
        self.state.tensors = PrimaryMap::new();
    }

    /// An engine whose ops are placed by `schedule`.
    pub fn with_schedule(machine: Machine, mode: Mode, schedule: Schedule) -> Engine {
        let lm_words = machine.leaf_memory_bytes() / machine.word_bytes.max(1);
        Engine {
            state: MachineState::new(machine, mode),
            rec: Recorder::new(Timeline::new(schedule, lm_words)),
            walks: WalkMemos::default(),
            opts: Options {
                per_element_kernels: false,
                explaining: true,
                choosing_algorithms: false,
            },
        }
    }

    /// Functional mode computes a matrix contraction (`MatMul`, `BatchMatMul`,
    /// `GeneralMatMul`) shard by shard from its gathered rows and columns, and a
    /// convolution from its shards' listed window taps; with `true`, element by element
    /// through the kernels crate's `eval_share` as every other kernel. Both give the same
    /// bytes (tests compare them); timing mode ignores it.
    pub fn set_per_element_kernels(&mut self, on: bool) {
        self.opts.per_element_kernels = on;
    }

    /// With `false`, a kernel its layouts make illegal fails with a short message (which
    /// operand, which level) instead of the one that explains the fix: the planner tries
    /// thousands of illegal combinations and reads few of their messages, and building
    /// one costs more than the rest of its measurement.
    pub fn set_explaining(&mut self, on: bool) {
        self.opts.explaining = on;
    }

    /// With `true`, a Reduce or Relayout that runs a collective over a network and names
    /// no algorithm of its own (`OpSettings::algorithm`) runs the algorithm that charges
    /// it the fewest cycles, the network's own on a tie (the planner's choice,
    /// docs/planner.md); its report names the one it ran.
    pub fn set_choosing_algorithms(&mut self, on: bool) {
        self.opts.choosing_algorithms = on;
    }

    /// Whether the engine chooses the algorithm of a transfer that names none
    /// ([`Engine::set_choosing_algorithms`]).
    pub fn choosing_algorithms(&self) -> bool {
        self.opts.choosing_algorithms
    }

    /// `c`, a transfer charged on `route`, or where the engine chooses and the transfer
    /// names no algorithm (`own`) but ran a collective, the cheapest of it and `charge`
    /// of the same route under each algorithm (the first of equals: `c` first).
    pub(super) fn cheapest(
        &mut self,
        c: net::Cost,
        (route, own): (&net::Route, Option<mnsim_arch::machine::Algorithm>),
        mut charge: impl FnMut(&mut Engine, &net::Route) -> Option<net::Cost>,
    ) -> net::Cost {
        if !self.opts.choosing_algorithms || own.is_some() || c.collectives.is_empty() {
            return c;
        }
        let mut best = c;
        for a in mnsim_arch::machine::Algorithm::ALL {
            let r = net::Route {
                algorithm: Some(a),
                ..route.clone()
            };
            if let Some(x) = charge(self, &r)
                && x.cycles < best.cycles
            {
                best = x;
            }
        }
        best
    }
}
