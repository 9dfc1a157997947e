//! Window kernels on the vector unit (docs/kernels.md, Pooling and Interpolate):
//! max and average pooling, nearest and (multi)linear interpolation, and their
//! gradients. Data tensors are `[N, C, X..]` or `[N, X.., C]` (`channels_last`); every
//! output element reads a window of the spatial axes, so those must be whole on the PE
//! (the batch and channel axes split freely).

use crate::conv::WindowMap;
use crate::kernel::Kernel;
use crate::kernel::{ErrorKind, KernelError, fmt_dims};
use crate::legality::{bcast_with, group_text};
use crate::shape::{AxisSource, InputMap};
use mnsim_arch::layout::{Class, TensorLayout};

mod interp;
mod pool;

pub use interp::{CoordMode, Interp, InterpMode};
pub use pool::{Pool, PoolKind};

pub(crate) fn err(msg: String) -> KernelError {
    KernelError::new(ErrorKind::Layout, msg)
}

pub(crate) fn rank_err(name: &str, what: &str, s: &[u64], d: usize) -> KernelError {
    KernelError::new(
        ErrorKind::Rank,
        format!(
            "{name}: `{what}` {} must have rank {} (batch, channels and {d} spatial axes)",
            fmt_dims(s),
            d + 2
        ),
    )
}

/// `(batch axis, channel axis, first spatial axis)`.
pub(crate) fn axes(channels_last: bool, rank: usize) -> (usize, usize, usize) {
    if channels_last {
        (0, rank - 1, 1)
    } else {
        (0, 1, 2)
    }
}

/// The spatial sizes of a data tensor.
pub(crate) fn spatial(channels_last: bool, s: &[u64]) -> &[u64] {
    let (_, _, f) = axes(channels_last, s.len());
    &s[f..f + s.len() - 2]
}

pub(crate) fn with_spatial(channels_last: bool, s: &[u64], sp: &[u64]) -> Vec<u64> {
    let mut v = s.to_vec();
    let (_, _, f) = axes(channels_last, s.len());
    v[f..f + sp.len()].copy_from_slice(sp);
    v
}

/// The map of a window kernel: batch and channels follow the output, spatial axes are
/// whole and each output spatial axis reads a halo of every input.
pub(crate) fn window_map(channels_last: bool, rank: usize, inputs: usize) -> WindowMap {
    let (b, c, f) = axes(channels_last, rank);
    let mut m = vec![AxisSource::Broadcast; rank];
    m[b] = AxisSource::Out(b);
    m[c] = AxisSource::Out(c);
    WindowMap {
        maps: vec![InputMap { axes: m }; inputs],
        halo: (f..f + rank - 2)
            .flat_map(|a| (0..inputs).map(move |j| (a, j)))
            .collect(),
        whole_on: "PE",
        split_note: "",
    }
}

/// The legality map of a window kernel (Conv, Pool, Interp); `None` for the kernels
/// with a per-axis index map or none at all.
pub fn map_of(k: &Kernel, in_shapes: &[&[u64]]) -> Result<Option<WindowMap>, KernelError> {
    k.with_family(|f| f.window_map(in_shapes))
}

/// Whether `l` splits its axis `a` over addressable level `x`.
fn splits(l: &TensorLayout, a: usize, x: usize) -> bool {
    l.groups()[a]
        .iter()
        .any(|s| s.class == Class::Level(x) && s.size > 1)
}

/// The window rule, at every level down to the unit's: an axis an output element reads
/// through a window (or a channel group) must be whole on the unit wherever the input
/// is not replicated, and an output axis reading a halo may be split only where that
/// input is replicated.
pub(crate) fn check_whole(
    k: &Kernel,
    w: &WindowMap,
    inputs: &[&TensorLayout],
    out: &TensorLayout,
    names: &[String],
    unit_level: usize,
) -> Result<(), KernelError> {
    let illegal =
        |operand, level, msg| KernelError::new(ErrorKind::Illegal { operand, level }, msg);
    let (on, why) = (w.whole_on, w.split_note);
    let levels = out.levels().len();
    for x in 0..=unit_level.min(levels.saturating_sub(1)) {
        let lv = &out.levels()[x].name;
        for (j, l) in inputs.iter().enumerate() {
            if l.levels()[x].replicated {
                continue;
            }
            for (a, src) in w.maps[j].axes.iter().enumerate() {
                if *src == AxisSource::Broadcast && splits(l, a, x) {
                    return Err(illegal(
                        j,
                        x,
                        format!(
                            "{k}: input `{}` is split over {lv} along its axis {a} = {}, which every output element reads \
                             across (a window's halo, or a channel group), so each {on} needs the whole axis{why}. \
                             Relayout `{}` so axis {a} has no {lv} sub-axis (keep it in memory, W or Time), or \
                             replicate it over {lv} ({})",
                            names[j],
                            group_text(l, a),
                            names[j],
                            bcast_with(l, x)
                        ),
                    ));
                }
            }
        }
        if out.levels()[x].replicated {
            continue;
        }
        for &(h, j) in &w.halo {
            if !inputs[j].levels()[x].replicated && splits(out, h, x) {
                let no = &names[inputs.len()];
                return Err(illegal(
                    inputs.len(),
                    x,
                    format!(
                        "{k}: the output `{no}` is split over {lv} along its axis {h} = {}, but each of its \
                         elements reads a window of input `{}` across that split (a halo) and `{}` is not \
                         replicated over {lv}{why}. Relayout `{no}` so axis {h} has no {lv} sub-axis, or replicate \
                         `{}` over {lv} ({})",
                        group_text(out, h),
                        names[j],
                        names[j],
                        names[j],
                        bcast_with(inputs[j], x)
                    ),
                ));
            }
        }
    }
    Ok(())
}
