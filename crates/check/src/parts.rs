//! Successors built from their parent: an action touches a few parts of a state (one client, one process,
//! the network), so the explorer keeps one copy of the parent, applies each action to it, packs the successor
//! by copying the parent's packing around the touched parts and rewriting only those, and then puts back only
//! the touched parts. Cloning the whole parent for each action and packing every successor in full were 16%
//! and 26% of the plain search's instructions (callgrind, `check models/lease-fenced-3-clients.toml
//! --threads 1 --por off`).
//!
//! A model opts in through `Model::apply_touching`, `Model::unpack_parts`, `Model::pack_successor` and
//! `Model::restore`; the defaults touch everything, which is the full clone and the full packing.

/// The most parts a model can number: bit `i` of a touched mask is part `i`.
pub const PARTS_MAX: usize = 32;

/// A touched mask naming every part: what `Model::apply_touching` answers by default, and what the explorer
/// uses after a symmetry relabelling (it may move anything).
pub const ALL_PARTS: u32 = u32::MAX;

/// Where each part lies in a packed state: part `i` is bytes `spans[i].0..spans[i].1`. A part of a higher
/// number lies after one of a lower number; the bytes between parts belong to none (a count that never
/// changes), so they are the parent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartSpans {
    /// (start, end) of each part, by number.
    pub spans: [(u32, u32); PARTS_MAX],
}

impl Default for PartSpans {
    fn default() -> Self {
        PartSpans {
            spans: [(0, 0); PARTS_MAX],
        }
    }
}

impl PartSpans {
    /// Part `part` is bytes `start..end`.
    #[inline(always)]
    pub fn set(&mut self, part: usize, start: usize, end: usize) {
        self.spans[part] = (start as u32, end as u32);
    }
}

/// Append to `out` the packing of a successor that differs from `parent` (the parent's packing, its parts at
/// `spans`) only in the parts named by `touched`: the parent's bytes up to each touched part, then
/// `pack_part(part, out)`, and the parent's bytes after the last one. Every part `touched` names must be one
/// `spans` holds (a model's mask names only parts its state has).
#[inline]
pub fn splice_parts(
    parent: &[u8],
    spans: &PartSpans,
    touched: u32,
    out: &mut Vec<u8>,
    mut pack_part: impl FnMut(usize, &mut Vec<u8>),
) {
    let mut copied = 0usize;
    let mut rest = touched;
    while rest != 0 {
        let part = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        let (start, end) = spans.spans[part];
        debug_assert!(
            copied <= start as usize && start <= end,
            "parts in byte order"
        );
        out.extend_from_slice(&parent[copied..start as usize]);
        pack_part(part, out);
        copied = end as usize;
    }
    out.extend_from_slice(&parent[copied..]);
}

#[cfg(test)]
mod tests {
    use super::{splice_parts, PartSpans};

    /// Untouched parts and the bytes between parts come from the parent, touched ones from `pack_part`.
    #[test]
    fn splices_rewritten_parts_into_the_parent() {
        let parent = b"[ab|cd|ef]";
        let mut spans = PartSpans::default();
        spans.set(0, 1, 3);
        spans.set(1, 4, 6);
        spans.set(2, 7, 9);
        let mut out = Vec::new();
        splice_parts(parent, &spans, 0b101, &mut out, |part, out| {
            out.extend_from_slice(if part == 0 { b"X" } else { b"YYY" })
        });
        assert_eq!(out, b"[X|cd|YYY]");
        out.clear();
        splice_parts(parent, &spans, 0, &mut out, |_, _| unreachable!());
        assert_eq!(out, parent);
    }
}
