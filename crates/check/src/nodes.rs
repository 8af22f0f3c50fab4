//! The search tree, kept to rebuild paths: for every state, its parent and the index of the action that first
//! reached it, in about one byte a state.
//!
//! States are numbered level by level, and within a level in the order of their parents, so parent ids never
//! decrease along the numbering: each node stores its parent as the step from the previous node's parent (0 for
//! a sibling, 1 for the next parent's first child) with its action index, both in one byte when the step is
//! under 4 and the index under 63. Every `BLOCK_NODES` nodes a block records where its bytes start and its first
//! node's parent, so a lookup decodes at most one block. A plain vector of (u32, u16) took 8 bytes a state: on a
//! search of 14 million states, 114 MB of its 568.

use super::expand::Step;
use super::varint::{push_varint, read_varint};

/// Nodes a block covers; a lookup decodes at most this many.
const BLOCK_NODES: usize = 256;
/// The action bits of a one-byte node that mean "the step and the index follow as varints".
const ESCAPE: u8 = 0x3f;

/// Where a block of nodes starts in the byte stream, and its first node's parent.
#[derive(Clone, Copy)]
struct Block {
    offset: u64,
    first_parent: u32,
}

/// Every state's parent and action index, in id order.
#[derive(Default)]
pub(crate) struct NodeLog {
    bytes: Vec<u8>,
    blocks: Vec<Block>,
    len: usize,
    last_parent: u32,
}

impl NodeLog {
    pub fn len(&self) -> usize {
        self.len
    }

    /// The root, node 0 (its parent and action are never read).
    pub fn push_root(&mut self) {
        debug_assert_eq!(self.len, 0);
        self.push(0, 0);
    }

    /// The next node: reached from `parent` by its action `action_index`. Parents must not decrease.
    #[inline]
    pub fn push(&mut self, parent: u32, action_index: u16) {
        if self.len % BLOCK_NODES == 0 {
            self.blocks.push(Block {
                offset: self.bytes.len() as u64,
                first_parent: parent,
            });
            self.last_parent = parent;
        }
        debug_assert!(parent >= self.last_parent, "parents in id order");
        let step = parent - self.last_parent;
        self.last_parent = parent;
        self.len += 1;
        if step < 4 && action_index < u16::from(ESCAPE) {
            self.bytes.push(((step as u8) << 6) | action_index as u8);
        } else {
            self.bytes.push(ESCAPE);
            push_varint(&mut self.bytes, u64::from(step));
            push_varint(&mut self.bytes, u64::from(action_index));
        }
    }

    /// Node `node`'s parent and action index.
    fn get(&self, node: u32) -> (u32, u16) {
        let block = self.blocks[node as usize / BLOCK_NODES];
        let mut at = block.offset as usize;
        let mut parent = block.first_parent;
        let mut action_index = 0;
        for _ in 0..=node as usize % BLOCK_NODES {
            let byte = self.bytes[at];
            at += 1;
            let step = if byte & ESCAPE == ESCAPE {
                let step = read_varint(&self.bytes, &mut at) as u32;
                action_index = read_varint(&self.bytes, &mut at) as u16;
                step
            } else {
                action_index = u16::from(byte & ESCAPE);
                u32::from(byte >> 6)
            };
            parent += step;
        }
        (parent, action_index)
    }

    /// The action indices from the root to `node`.
    pub fn path_indices(&self, mut node: u32) -> Vec<u16> {
        let mut indices = Vec::new();
        while node != 0 {
            let (parent, action_index) = self.get(node);
            indices.push(action_index);
            node = parent;
        }
        indices.reverse();
        indices
    }

    /// The action indices of a path ending with `step`.
    pub fn step_indices(&self, step: Step) -> Vec<u16> {
        let mut indices = self.path_indices(step.parent);
        indices.push(step.action_index);
        indices
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        (self.bytes.len() + self.blocks.len() * size_of::<Block>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::NodeLog;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random trees in BFS numbering (parents never decrease), small and large steps and action indices, give
    /// back every node's parent and action and every path.
    #[test]
    fn gives_back_every_parent_and_action() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut log = NodeLog::default();
        let mut reference = vec![(0u32, 0u16)];
        log.push_root();
        let mut parent = 0u32;
        for id in 1..5_000u32 {
            let step = match rng.random_range(0..10) {
                0..=5 => 0,
                6..=7 => 1,
                8 => rng.random_range(2..5),
                _ => rng.random_range(5..300),
            };
            parent = (parent + step).min(id - 1);
            let action_index = if rng.random_bool(0.9) {
                rng.random_range(0..70)
            } else {
                rng.random_range(0..u16::MAX)
            };
            log.push(parent, action_index);
            reference.push((parent, action_index));
        }
        assert_eq!(log.len(), reference.len());
        for (id, expected) in reference.iter().enumerate().skip(1) {
            assert_eq!(log.get(id as u32), *expected, "node {id}");
        }
        let mut node = 4_999u32;
        let mut expected = Vec::new();
        while node != 0 {
            expected.push(reference[node as usize].1);
            node = reference[node as usize].0;
        }
        expected.reverse();
        assert_eq!(log.path_indices(4_999), expected);
        assert!(log.bytes() < 2 * reference.len() as u64, "{}", log.bytes());
    }
}
