//! Copying elements: one element of a known size, strided runs of them, and the LM bytes
//! and words of a shard's run.

/// The LM byte of a run's first cell (region at word `base`, `fp` words per time step)
/// and the bytes between its cells.
#[inline]
pub(super) fn run_bytes(
    r: &mnsim_arch::layout::Run,
    base: usize,
    fp: usize,
    wb: usize,
    eb: usize,
) -> (usize, usize) {
    let at = |t: u64, a: u64, w: u64| (t as usize * fp + a as usize) * wb + w as usize * eb;
    (
        base * wb + at(r.t, r.addr, r.w),
        at(r.step.t, r.step.addr, r.step.w),
    )
}

/// Cells of a run that start a word (slot 0): the words the run touches.
#[inline]
pub(super) fn run_words(r: &mnsim_arch::layout::Run) -> u64 {
    match (r.w, r.step.w) {
        (0, 0) => r.len,
        (0, _) => 1,
        _ => 0,
    }
}

/// Copies one element of `eb` bytes; fixed sizes compile to single moves.
#[inline(always)]
pub(super) fn copy_elem(dst: &mut [u8], src: &[u8], eb: usize) {
    match eb {
        1 => dst[0] = src[0],
        2 => dst[..2].copy_from_slice(&src[..2]),
        4 => dst[..4].copy_from_slice(&src[..4]),
        8 => dst[..8].copy_from_slice(&src[..8]),
        _ => dst[..eb].copy_from_slice(&src[..eb]),
    }
}

/// Copies `n` elements of `N` bytes, `s_step` bytes apart from `s`, to `d_step` bytes
/// apart from `d`, by fixed-size moves.
///
/// # Safety
/// Every element of both runs lies in its buffer, the buffers do not overlap, and no
/// one else touches the destination elements meanwhile.
#[inline(always)]
unsafe fn strided<const N: usize>(
    d: *mut u8,
    d_step: usize,
    s: *const u8,
    s_step: usize,
    n: usize,
) {
    for k in 0..n {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(s.add(k * s_step), d.add(k * d_step), N) }
    }
}

/// [`strided`] for an element size `eb` known at run time: one dispatch per run.
///
/// # Safety
/// As [`strided`].
#[inline]
pub(in crate::engine) unsafe fn copy_strided_raw(
    d: *mut u8,
    d_step: usize,
    s: *const u8,
    s_step: usize,
    n: usize,
    eb: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        match eb {
            1 => strided::<1>(d, d_step, s, s_step, n),
            2 => strided::<2>(d, d_step, s, s_step, n),
            4 => strided::<4>(d, d_step, s, s_step, n),
            8 => strided::<8>(d, d_step, s, s_step, n),
            _ => {
                for k in 0..n {
                    std::ptr::copy_nonoverlapping(s.add(k * s_step), d.add(k * d_step), eb)
                }
            }
        }
    }
}

/// Copies `n` elements of `eb` bytes from `src` (from byte `s.0`, `s.1` apart) to `dst`
/// (from byte `d.0`, `d.1` apart): one bounds check per run.
#[inline]
pub(super) fn copy_strided(
    dst: &mut [u8],
    d: (usize, usize),
    src: &[u8],
    s: (usize, usize),
    n: usize,
    eb: usize,
) {
    if n == 0 {
        return;
    }
    assert!(d.0 + (n - 1) * d.1 + eb <= dst.len() && s.0 + (n - 1) * s.1 + eb <= src.len());
    // SAFETY: both runs' last elements are in range (checked), steps are non-negative,
    // and `dst` is borrowed exclusively.
    unsafe {
        copy_strided_raw(
            dst.as_mut_ptr().add(d.0),
            d.1,
            src.as_ptr().add(s.0),
            s.1,
            n,
            eb,
        )
    }
}
