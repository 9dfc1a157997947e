//! The functional data plane: real bytes moved between DRAM buffers and the PEs' LMs
//! (Load, Store, Relayout, Reduce) and the kernels' values, in parallel over the PEs
//! (rayon). Each move returns the per-PE facts it counted, which the cost model charges.
//!
//! Invariant: only functional mode calls into this module (timing mode takes its facts
//! from `facts.rs`), so timing never touches element data. The types enforce it: every
//! move takes a [`Functional`] token, which only [`Engine::functional`] makes, and only
//! in functional mode. Parallel work is per PE and
//! its results are sorted by PE index: the bytes do not depend on the thread count.
//! Load and Store copy a shard whose cells are all real elements by its loop nest in
//! closed form (`copy.rs`), other shards by runs or per cell.
//!
//! Its parts: `dram_addr.rs` (where a logical element lies in a DRAM buffer),
//! `elem_copy.rs` (copying elements and strided runs of them), `load_store.rs` (Load and
//! Store), `relayout_reduce.rs` (Relayout and Reduce, LM to LM) and `kernel_values.rs`
//! (a kernel's values). This file holds the key, the per-PE walk and the LM pointers
//! they share.

mod dram_addr;
mod elem_copy;
mod kernel_values;
mod load_store;
mod relayout_reduce;

pub(super) use dram_addr::DramAddr;
pub(super) use elem_copy::copy_strided_raw;

use super::Engine;
use crate::net::{self, Facts, PeFact};
use crate::world::{Lm, Pe};
use mnsim_arch::TensorLayout;
use rayon::prelude::*;

/// Proof that the engine runs in functional mode: the key to every move of this module.
/// Its field is private, so [`Engine::functional`] is the only way to get one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Functional(());

impl Engine {
    /// The data plane's key, in functional mode only (`None` in timing mode).
    pub(super) fn functional(&self) -> Option<Functional> {
        (self.state.mode == super::Mode::Functional).then_some(Functional(()))
    }
}

/// Raw pointer that may cross threads: PEs write disjoint DRAM elements (a layout's
/// placement map is injective, and only one replica writes).
#[derive(Clone, Copy)]
pub(super) struct SyncPtr(*mut u8);
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}

/// Runs `f` on the shard of every PE that takes part in a move (in parallel over the
/// PEs) and returns the facts of those that take part, in PE order. `f` gets the PE, its LM, the key of its
/// data and its shard, and returns the words it moved and the real elements among them.
pub(super) fn walk_shards(
    world: &mut bevy_ecs::world::World,
    layout: &TensorLayout,
    partial: &[usize],
    one_replica: bool,
    wb: u64,
    f: impl Fn(&Pe, &mut Lm, u64, mnsim_arch::layout::Shard<'_>) -> (u64, u64) + Sync,
) -> Facts {
    let used = Engine::used_table(layout);
    let mut q = world.query::<(&Pe, &mut Lm)>();
    let mut pes: Vec<(&Pe, &mut Lm)> = q
        .iter_mut(world)
        .map(|(p, l)| (p, l.into_inner()))
        .collect();
    let mut facts: Facts = pes
        .par_iter_mut()
        .filter_map(|(pe, lm)| {
            let key = Engine::key(layout, &used, partial, &pe.pos, one_replica, None);
            let shard = layout.shard(&pe.pos).filter(|_| key != net::NONE)?;
            let (words, valid) = f(pe, lm, key, shard);
            Some((
                pe.global,
                PeFact {
                    key,
                    reduced_key: key,
                    bytes: words * wb,
                    valid,
                },
            ))
        })
        .collect();
    facts.sort_unstable_by_key(|f| f.0);
    facts
}

/// Every PE's LM in PE order, as raw pointers: moves read one PE's region and write
/// another's (always a different region: a move's destination is allocated while its
/// sources are resident), in parallel, without copying the sources first.
#[derive(Clone, Copy)]
pub(super) struct LmPtr {
    ptr: SyncPtr,
    len: usize,
}

impl LmPtr {
    /// `n` bytes at `at`.
    ///
    /// # Safety
    /// No one writes those bytes while the slice lives.
    #[inline]
    pub(super) unsafe fn bytes(&self, at: usize, n: usize) -> &[u8] {
        assert!(at + n <= self.len, "LM read out of range");
        // SAFETY: in range (checked); the caller guarantees no concurrent writer.
        unsafe { std::slice::from_raw_parts(self.ptr.0.add(at), n) }
    }

    /// `n` bytes at `at`, to write.
    ///
    /// # Safety
    /// No one else reads or writes those bytes while the slice lives.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    unsafe fn bytes_mut(&self, at: usize, n: usize) -> &mut [u8] {
        assert!(at + n <= self.len, "LM write out of range");
        // SAFETY: in range (checked); the caller guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.0.add(at), n) }
    }
}

/// The LM pointers of every PE of the world, in PE order.
fn lm_ptrs(world: &mut bevy_ecs::world::World) -> Vec<LmPtr> {
    let mut q = world.query::<(&Pe, &mut Lm)>();
    let mut v: Vec<(u64, LmPtr)> = q
        .iter_mut(world)
        .map(|(p, mut l)| {
            let len = l.data.len();
            (
                p.global,
                LmPtr {
                    ptr: SyncPtr(l.data.as_mut_ptr()),
                    len,
                },
            )
        })
        .collect();
    v.sort_unstable_by_key(|x| x.0);
    v.into_iter().map(|x| x.1).collect()
}
