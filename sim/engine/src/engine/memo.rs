//! What the engine memoises: the lowering's walks (every run) and the charges a
//! planner's measurements repeat (a measuring recorder's, [`super::Recording::Measure`]).

use crate::lowering::{self, walk::WalkPlan};
use crate::net;
use mnsim_arch::machine::Algorithm;
use mnsim_arch::{TensorLayout, XlaLayout};
use std::collections::HashMap;

/// A hash map with a fixed, fast hasher: the engine looks its keys up for every op.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// The lowering's caches, kept for the engine's life: walks planned, by what they
/// depend on, and the sends of the memoised walks' inputs, by buffers.
#[derive(Default)]
pub struct WalkMemos {
    pub(super) walk: super::streams::WalkMemo,
    pub(super) sends: lowering::walk::SendsMemo,
}

/// The charges a planner's measurements repeat, by what each depends on; kept across
/// [`super::Engine::clear`] and [`super::Engine::clear_all`] (the planner measures
/// many ops alike, and loads a stream before each of its readers).
#[derive(Default)]
pub struct PlanMemos {
    /// Timing mode: a Load's charge and walk by the tensor's DRAM layout and run-time
    /// dims, then its LM layout (which holds its dtype).
    pub(super) load: HashMap<(XlaLayout, Vec<u64>), LoadMemo>,
    /// A Reduce's charge, and whether the closed form gave it ([`ReduceKey`]).
    pub(super) reduce: FastMap<ReduceKey, (net::Cost, bool)>,
}

/// A tensor's Loads by layout.
pub(super) type LoadMemo = FastMap<TensorLayout, LoadCharge>;

/// What a Reduce's charge depends on: the layout, the levels its partial sums are over
/// before it, the level it reduces over and the runtime dims; then its own algorithm and
/// whether the engine chose one ([`super::Engine::set_choosing_algorithms`]).
pub(super) type ReduceKey = (
    (TensorLayout, Vec<usize>, usize, Vec<u64>),
    Option<Algorithm>,
    bool,
);

/// What a Load of one tensor in one layout is charged, and how it walks its steps.
pub(super) type LoadCharge = (net::Cost, Option<(WalkPlan, bool)>);
