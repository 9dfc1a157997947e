//! The binary's allocator: mimalloc (its 2.x line).
//!
//! The planner allocates many small, short-lived values (layouts, tasks, keys), which
//! mimalloc serves faster than the system allocator (docs/planner.md, speed). A value
//! aligned to at most 8 bytes takes mimalloc's plain path (every block it hands out is
//! aligned to 8), which costs about half the instructions of its aligned path; others
//! take the aligned path.

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// The alignment of every block `mi_malloc` returns (its word).
const PLAIN: usize = 8;

pub struct MiMalloc;

// SAFETY: each call forwards to mimalloc with the layout's size, and with its
// alignment where that is above what mimalloc's plain calls give; memory is freed by
// `mi_free`, which takes blocks of either path.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= PLAIN {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= PLAIN {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: see the impl.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= PLAIN {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    /// Blocks of every size and alignment come back aligned, keep what is written to
    /// them through a reallocation, and are zeroed where asked.
    #[test]
    fn blocks_are_aligned_and_keep_their_bytes() {
        let a = super::MiMalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1usize, 3, 8, 24, 100, 1000, 5000, 70_000, 3 << 20] {
                let l = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; each block is freed with its layout.
                unsafe {
                    let p = a.alloc(l);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{size} {align}"
                    );
                    std::ptr::write_bytes(p, 7, size);
                    let q = a.realloc(p, l, size * 2);
                    assert!(
                        !q.is_null() && (q as usize).is_multiple_of(align),
                        "{size} {align}"
                    );
                    assert!((0..size).all(|k| *q.add(k) == 7));
                    a.dealloc(q, Layout::from_size_align(size * 2, align).unwrap());
                    let z = a.alloc_zeroed(l);
                    assert!(
                        (z as usize).is_multiple_of(align) && (0..size).all(|k| *z.add(k) == 0)
                    );
                    a.dealloc(z, l);
                }
            }
        }
    }
}
