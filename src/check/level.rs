//! Where the explorer keeps states between levels: packed into one byte arena when the model packs
//! (`Model::PACKED`), cloned into a vector otherwise. `M::PACKED` is a constant, so each model's explorer is
//! compiled with only its own branch.

use super::fingerprint::{hashed_fingerprint, packed_fingerprint};
use super::model::Model;

/// A successor waiting for the visited set's verdict: its fingerprint, how it was reached, and where it lies
/// (a byte span of the unit's arena, or `(index, index)` into its states).
#[derive(Clone, Copy)]
pub(crate) struct Candidate {
    pub fingerprint: u64,
    pub parent: u32,
    pub action_index: u16,
    pub span: (u32, u32),
}

/// States in search order, ids consecutive from `first_id`. Two of these are reused level after level (fresh
/// buffers per level cost page faults).
pub(crate) struct Level<M: Model> {
    bytes: Vec<u8>,
    spans: Vec<(u32, u32)>,
    states: Vec<M::State>,
    pub first_id: u32,
}

impl<M: Model> Default for Level<M> {
    fn default() -> Self {
        Level {
            bytes: Vec::new(),
            spans: Vec::new(),
            states: Vec::new(),
            first_id: 0,
        }
    }
}

impl<M: Model> Level<M> {
    pub fn len(&self) -> usize {
        if M::PACKED {
            self.spans.len()
        } else {
            self.states.len()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copy state `index` into `state` (reusing its buffers).
    pub fn load(&self, model: &M, index: usize, state: &mut M::State) {
        if M::PACKED {
            let (start, end) = self.spans[index];
            model.unpack_into(&self.bytes[start as usize..end as usize], state);
        } else {
            state.clone_from(&self.states[index]);
        }
    }

    pub fn clear(&mut self, first_id: u32) {
        self.bytes.clear();
        self.spans.clear();
        self.states.clear();
        self.first_id = first_id;
    }

    /// Append one state (the initial one).
    pub fn push(&mut self, model: &M, state: &M::State) {
        if M::PACKED {
            let start = self.bytes.len() as u32;
            model.pack(state, &mut self.bytes);
            self.spans.push((start, self.bytes.len() as u32));
        } else {
            self.states.push(state.clone());
        }
    }

    /// Append a unit's kept successors, in order.
    pub fn append(&mut self, successors: &mut Successors<M>) {
        if M::PACKED {
            let offset = self.bytes.len() as u32;
            self.bytes.extend_from_slice(&successors.bytes);
            self.spans.extend(
                successors
                    .candidates
                    .iter()
                    .map(|candidate| (offset + candidate.span.0, offset + candidate.span.1)),
            );
        } else {
            self.states.append(&mut successors.states);
        }
    }

    pub fn held_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.spans.capacity() * size_of::<(u32, u32)>()
            + self.states.capacity() * size_of::<M::State>()
    }
}

/// A unit's successors, in search order. Kept from round to round so its buffers are reused.
pub(crate) struct Successors<M: Model> {
    bytes: Vec<u8>,
    states: Vec<M::State>,
    pub candidates: Vec<Candidate>,
}

impl<M: Model> Default for Successors<M> {
    fn default() -> Self {
        Successors {
            bytes: Vec::new(),
            states: Vec::new(),
            candidates: Vec::new(),
        }
    }
}

impl<M: Model> Successors<M> {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.states.clear();
        self.candidates.clear();
    }

    /// Record a successor; returns its fingerprint.
    #[inline]
    pub fn push(&mut self, model: &M, state: &M::State, parent: u32, action_index: u16) -> u64 {
        let (fingerprint, span) = if M::PACKED {
            let start = self.bytes.len();
            model.pack(state, &mut self.bytes);
            (
                packed_fingerprint(&self.bytes[start..]),
                (start as u32, self.bytes.len() as u32),
            )
        } else {
            let index = self.states.len() as u32;
            self.states.push(state.clone());
            (hashed_fingerprint(state), (index, index))
        };
        self.candidates.push(Candidate {
            fingerprint,
            parent,
            action_index,
            span,
        });
        fingerprint
    }

    /// Keep the candidates `keep` says, in order, and their states, moved to the front so the level appends
    /// the whole unit with one copy.
    pub fn retain(&mut self, keep: impl Fn(usize) -> bool) {
        let mut kept = 0;
        let mut written = 0u32;
        for index in 0..self.candidates.len() {
            if !keep(index) {
                continue;
            }
            let mut candidate = self.candidates[index];
            let (start, end) = candidate.span;
            if M::PACKED {
                self.bytes
                    .copy_within(start as usize..end as usize, written as usize);
                candidate.span = (written, written + end - start);
                written += end - start;
            } else {
                self.states.swap(kept, start as usize);
                candidate.span = (kept as u32, kept as u32);
            }
            self.candidates[kept] = candidate;
            kept += 1;
        }
        self.candidates.truncate(kept);
        if M::PACKED {
            self.bytes.truncate(written as usize);
        } else {
            self.states.truncate(kept);
        }
    }

    pub fn held_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.states.capacity() * size_of::<M::State>()
            + self.candidates.capacity() * size_of::<Candidate>()
    }
}
