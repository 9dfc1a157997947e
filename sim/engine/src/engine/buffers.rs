//! Host buffers of the functional data plane: allocated zeroed by the system (untouched
//! until a move fills them, huge pages on Linux for large ones) and kept once grown.
//!
//! Invariant: only functional mode allocates element data (timing mode's LMs stay empty).

use crate::world::Lm;
use rayon::prelude::*;

/// A buffer of `n` zero bytes, asked of the allocator zeroed: a large one is mapped
/// pages the kernel zeroes on first touch, so nothing passes over its bytes here and the
/// move that fills it touches each page once, on whichever core copies into it. On Linux
/// a buffer of 4 MiB or more asks for transparent huge pages (`MADV_HUGEPAGE`): 512 times
/// fewer page faults when it is filled, and moves that read or write it with strides of
/// a few KiB (one DRAM row per run) do not miss the TLB at every run.
pub fn zeroed(n: usize) -> Vec<u8> {
    let v = vec![0u8; n];
    #[cfg(target_os = "linux")]
    if n >= 4 << 20 {
        const PAGE: usize = 4096;
        let start = (v.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (v.as_ptr() as usize + n) / PAGE * PAGE;
        if end > start {
            // SAFETY: `[start, end)` lies within the vector's allocation, page-aligned;
            // the advice only changes how the kernel backs the pages (they stay zero, and
            // the vector still owns them). Its result is ignored: it is advice.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    v
}

/// Grows every PE's LM to `need` bytes (the allocator's high-water mark), keeping its
/// bytes. An empty LM is allocated with [`zeroed`] (the fresh part is not touched before
/// a move writes it); a non-empty one is reallocated, which for a large buffer remaps its
/// pages rather than copying them (a stream's region holds all its `Time` steps: every
/// PE's LM can reach megabytes, and copying them all touched each page again).
pub(super) fn grow_lms(world: &mut bevy_ecs::world::World, need: usize) {
    let mut q = world.query::<&mut Lm>();
    let mut lms: Vec<&mut Lm> = q.iter_mut(world).map(|m| m.into_inner()).collect();
    lms.par_iter_mut().for_each(|lm| {
        let len = lm.data.len();
        if len >= need {
            return;
        }
        if len == 0 && lm.data.capacity() < need {
            lm.data = zeroed(need);
        } else {
            lm.data.reserve_exact(need - len);
            lm.data.resize(need, 0);
        }
    });
}
