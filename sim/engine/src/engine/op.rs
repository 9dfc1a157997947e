//! One op of a program on the engine, with its settings ([`OpSettings`]): the path the
//! run and the planner's measurements take. The engine's plain methods (`load`,
//! `relayout`, ...) are this path with default settings.

use super::{Engine, OpSettings, SimError};
use crate::ids::{LevelId, RegionId};
use crate::program::TensorId;
use mnsim_arch::TensorLayout;
use mnsim_kernels::elem::Combine;
use mnsim_reports::OpReport;

/// An op about to run, with its settings.
pub struct OpCall<'a> {
    eng: &'a mut Engine,
    s: OpSettings,
}

impl Engine {
    /// The next op, run with settings `s`.
    pub fn op(&mut self, s: OpSettings) -> OpCall<'_> {
        OpCall { eng: self, s }
    }

    /// Allocates `t`'s LM region for `layout` (a stream holding `buffers` slices when
    /// given), for the op recorded next.
    pub(super) fn allocate(
        &mut self,
        t: TensorId,
        layout: &TensorLayout,
        buffers: Option<i64>,
    ) -> Result<(u64, u64, RegionId), SimError> {
        let producer = self.rec.ops.len();
        self.state.allocate(t, layout, (buffers, producer))
    }
}

impl OpCall<'_> {
    /// Load: DRAM (the tensor's XLA layout) → LM in `layout`.
    pub fn load(self, id: TensorId, layout: TensorLayout) -> Result<OpReport, SimError> {
        self.load_as("Load", id, layout)
    }

    /// A Load reported as `op` (a Broadcast of a tensor not in LM).
    pub fn load_as(
        self,
        op: &str,
        id: TensorId,
        layout: TensorLayout,
    ) -> Result<OpReport, SimError> {
        self.eng.load_as(op, (id, layout), &[], self.s.buffers)
    }

    /// Relayout (see [`Engine::relayout`]).
    pub fn relayout(
        self,
        op: &str,
        id: TensorId,
        layout: TensorLayout,
        out: Option<TensorId>,
    ) -> Result<OpReport, SimError> {
        (self.eng).relayout_op((op, id, layout, out), (self.s.buffers, self.s.algorithm))
    }

    /// Reduce (see [`Engine::reduce`]).
    pub fn reduce(
        self,
        id: TensorId,
        level: LevelId,
        op: Combine,
        out: Option<TensorId>,
    ) -> Result<OpReport, SimError> {
        (self.eng).reduce_op((id, level, op, out), (self.s.buffers, self.s.algorithm))
    }

    /// Gather (see [`Engine::gather`]).
    pub fn gather(
        self,
        table: TensorId,
        indices: TensorId,
        out: TensorId,
        layout: TensorLayout,
    ) -> Result<OpReport, SimError> {
        self.eng
            .gather_op((table, indices, out, layout), self.s.buffers)
    }

    /// A kernel (see [`Engine::kernel`]).
    pub fn kernel(
        self,
        op: &str,
        k: &mnsim_kernels::Kernel,
        inputs: &[TensorId],
        out: TensorId,
        layout: Option<TensorLayout>,
    ) -> Result<OpReport, SimError> {
        self.eng.kernel_op((op, k), (inputs, out), layout, self.s)
    }
}
