//! Moving one level of a layout to another axis, or to copies: how a plan spreads over
//! boards (`4_Board` on the tokens, or a copy on every board) while the levels below keep
//! their places (docs/planner.md, many boards).

use super::{AxisName, BcastExpr, LayoutExpr, SubAxisExpr};

impl LayoutExpr {
    /// This layout with level `level` (`fanout` positions) moved: onto axis `axis` as its
    /// first (outermost) sub-axis, or replicated over (`None`: named in `B@[...]`).
    ///
    /// The level's positions come from the axis's outermost memory sub-axis they divide,
    /// else its outermost `Time` sub-axis they divide; where the layout split an axis over
    /// the level before, that sub-axis becomes memory (outermost in the PE's memory). The
    /// memory (and `Time`) strides are laid out again, compact, in their order before.
    /// `None` when the axis has no sub-axis the fan-out divides, or `axis` is out of range.
    /// The result is unbound: binding it checks it against the machine and the shape.
    pub fn relevel(&self, level: &str, fanout: u64, axis: Option<usize>) -> Option<LayoutExpr> {
        self.relevel_to(level, fanout, axis, AxisName::Mem)
    }

    /// [`LayoutExpr::relevel`], the positions the level leaves going to `freed`: memory
    /// (`AxisName::Mem`: each PE holds that much more) or `Time` steps (`AxisName::Time`,
    /// outermost: each PE holds as much as before, a step at a time).
    pub fn relevel_to(
        &self,
        level: &str,
        fanout: u64,
        axis: Option<usize>,
        freed: AxisName,
    ) -> Option<LayoutExpr> {
        let mut e = self.clone();
        e.bcast.retain(|b| b.name != level);
        let is_level = |s: &SubAxisExpr| matches!(&s.name, AxisName::Level(n) if n == level);
        // The level's sub-axes back to memory (or Time), outermost: a stride past every
        // other.
        for g in &mut e.groups {
            for s in g.iter_mut().filter(|s| is_level(s)) {
                s.name = freed.clone();
                s.stride = s.stride.map(|_| u64::MAX);
            }
        }
        match axis {
            None => e.bcast.push(BcastExpr {
                name: level.to_string(),
                size: None,
                stride: None,
                span: 0..0,
            }),
            Some(a) => {
                let g = e.groups.get_mut(a)?;
                let take = |class: &AxisName| {
                    (g.iter()).position(|s| &s.name == class && s.size.is_multiple_of(fanout))
                };
                let k = take(&AxisName::Mem).or_else(|| take(&AxisName::Time))?;
                g[k].size /= fanout;
                // A memory sub-axis the level took whole is gone (the level is the axis's).
                if g[k].size == 1 {
                    g.remove(k);
                }
                g.insert(
                    0,
                    SubAxisExpr {
                        size: fanout,
                        name: AxisName::Level(level.to_string()),
                        stride: None,
                        span: 0..0,
                    },
                );
            }
        }
        compact(&mut e.groups, &AxisName::Mem);
        compact(&mut e.groups, &AxisName::Time);
        Some(e)
    }
}

/// The strides of the sub-axes of `class` laid out again, compact, in their order by
/// stride before (a sub-axis written without a stride leaves them all to the binder);
/// a sub-axis of one position last.
fn compact(groups: &mut [Vec<SubAxisExpr>], class: &AxisName) {
    let mut at: Vec<(u64, usize, usize)> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for (si, s) in g.iter().enumerate().filter(|(_, s)| &s.name == class) {
            match s.stride {
                Some(st) => at.push((st, gi, si)),
                None => return,
            }
        }
    }
    // Innermost first: the smallest stride, then the later sub-axis (the minor one).
    at.sort_by_key(|&(st, gi, si)| (st, std::cmp::Reverse((gi, si))));
    // A sub-axis of one position takes the stride past all the others (as canonical
    // texts write it).
    let mut next = 1u64;
    for &(_, gi, si) in &at {
        let s = &mut groups[gi][si];
        if s.size > 1 {
            s.stride = Some(next);
            next = next.saturating_mul(s.size);
        }
    }
    for &(_, gi, si) in &at {
        let s = &mut groups[gi][si];
        if s.size == 1 {
            s.stride = Some(next);
        }
    }
}

impl LayoutExpr {
    /// This layout with levels `a` and `b` exchanged: every sub-axis and `B@[...]` entry
    /// naming one names the other. Between two levels of one fan-out it is the same plan
    /// with the two levels' roles swapped (the tokens over the L1Bs and a weight's
    /// columns over the L2Bs, say, rather than the other way round). Unbound: binding
    /// checks it.
    pub fn swap_levels(&self, a: &str, b: &str) -> LayoutExpr {
        let other = |n: &str| match n {
            n if n == a => Some(b.to_string()),
            n if n == b => Some(a.to_string()),
            _ => None,
        };
        let mut e = self.clone();
        for s in e.groups.iter_mut().flatten() {
            if let AxisName::Level(n) = &s.name
                && let Some(o) = other(n)
            {
                s.name = AxisName::Level(o);
            }
        }
        for c in &mut e.bcast {
            if let Some(o) = other(&c.name) {
                c.name = o;
            }
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use crate::layout::{LayoutExpr, TensorLayout};
    use crate::{DType, Machine};

    fn node() -> Machine {
        crate::presets::preset("mn3_node").expect("a preset")
    }

    /// `text` (a layout of f32 `dims` on mn3_node) with `Board` moved to `axis`, bound
    /// and written canonically.
    fn moved(text: &str, dims: &[u64], axis: Option<usize>) -> Option<String> {
        let m = node();
        let e = LayoutExpr::parse(text)
            .expect("parses")
            .relevel("Board", 4, axis)?;
        let l = TensorLayout::bind(&e, &m, Some(dims), DType::F32, false).ok()?;
        Some(l.canonical())
    }

    #[test]
    fn board_moves_between_axes_and_copies() {
        let dims = [1, 128, 768];
        let hidden = "((1:192), (64:3, 2_W:1), (4_Board:1, 16_L2B:1, 4_PE:1, 3:1); B@[L1B,MAB])";
        // Every board a copy: the 4 positions the boards held go to memory, outermost.
        let copies = moved(hidden, &dims, None).expect("replicates");
        assert_eq!(
            copies,
            "((1:768), (64:3, 2_W:1), (4:192, 16_L2B:1, 4_PE:1, 3:1); B@[Board,L1B,MAB])"
        );
        // The tokens over the boards: 64 words of tokens become 16 on each board.
        let tokens = moved(hidden, &dims, Some(1)).expect("splits the tokens");
        assert_eq!(
            tokens,
            "((1:192), (4_Board:1, 16:3, 2_W:1), (4:48, 16_L2B:1, 4_PE:1, 3:1); B@[L1B,MAB])"
        );
        // Moving it where it is changes nothing; from copies back to the hidden axis, the
        // boards take the memory part they gave: the layout it was.
        assert_eq!(
            moved(&tokens, &dims, Some(1)).as_deref(),
            Some(tokens.as_str())
        );
        assert_eq!(
            moved(&copies, &dims, None).as_deref(),
            Some(copies.as_str())
        );
        let back = moved(&copies, &dims, Some(2)).expect("splits the hidden axis");
        assert_eq!(back, hidden);
    }

    #[test]
    fn swapping_two_levels_exchanges_their_roles() {
        let m = crate::presets::preset("mncore2").expect("a preset");
        let dims = [768, 2304];
        let w = "((4_PE:1, 192_Time:2), (8_L1B:1, 2_Time:1, 72:1, 2_W:1); B@[L2B,MAB])";
        let e = LayoutExpr::parse(w)
            .expect("parses")
            .swap_levels("L2B", "L1B");
        let l = TensorLayout::bind(&e, &m, Some(&dims), DType::F32, false).expect("binds");
        assert_eq!(
            l.canonical(),
            "((4_PE:1, 192_Time:2), (8_L2B:1, 2_Time:1, 72:1, 2_W:1); B@[L1B,MAB])"
        );
        // Twice is the layout it was; a level it does not name stays.
        let back = l.canonical();
        let again = LayoutExpr::parse(&back)
            .expect("parses")
            .swap_levels("L1B", "L2B");
        let l2 = TensorLayout::bind(&again, &m, Some(&dims), DType::F32, false).expect("binds");
        assert_eq!(
            l2.canonical(),
            TensorLayout::parse(w, &m, Some(&dims), DType::F32)
                .expect("binds")
                .canonical()
        );
        let none = LayoutExpr::parse(w)
            .expect("parses")
            .swap_levels("Board", "Node");
        assert_eq!(none, LayoutExpr::parse(w).expect("parses"));
    }

    #[test]
    fn positions_freed_to_time_keep_the_words_per_pe() {
        let m = node();
        let dims = [1, 128, 768];
        let hidden = "((1:192), (64:3, 2_W:1), (4_Board:1, 16_L2B:1, 4_PE:1, 3:1); B@[L1B,MAB])";
        let one = TensorLayout::parse(hidden, &m, Some(&dims), DType::F32).expect("binds");
        let e = LayoutExpr::parse(hidden).expect("parses");
        let r = e.relevel_to("Board", 4, None, crate::layout::AxisName::Time);
        let l = TensorLayout::bind(&r.expect("moves"), &m, Some(&dims), DType::F32, false)
            .expect("binds");
        assert_eq!(
            l.canonical(),
            "((1:192), (64:3, 2_W:1), (4_Time:1, 16_L2B:1, 4_PE:1, 3:1); B@[Board,L1B,MAB])"
        );
        // A step at a time: as many words as before on each PE.
        assert_eq!(l.words_per_step(), one.words_per_pe());
    }

    #[test]
    fn words_per_pe_fall_by_the_fanout_and_no_divisor_is_none() {
        let m = node();
        let dims = [128, 6144];
        let text = "((8:12, 16_L2B:1), (8_L1B:1, 16_MAB:1, 4_PE:1, 12:1))";
        let one = TensorLayout::parse(text, &m, Some(&dims), DType::F32).expect("binds");
        let e = LayoutExpr::parse(text).expect("parses");
        for axis in [0, 1] {
            let r = e.relevel("Board", 4, Some(axis));
            let l = TensorLayout::bind(&r.expect("moves"), &m, Some(&dims), DType::F32, false)
                .expect("binds");
            assert_eq!(l.words_per_pe() * 4, one.words_per_pe(), "axis {axis}");
        }
        // 3 does not divide by 4: no place on an axis of 3 in memory.
        let odd = LayoutExpr::parse("((3:1), (16_L2B:1))").expect("parses");
        assert!(odd.relevel("Board", 4, Some(0)).is_none());
        assert!(odd.relevel("Board", 4, Some(2)).is_none());
    }
}
