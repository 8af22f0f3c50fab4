//! Where the explorer keeps states between levels: packed into one byte arena when the model packs
//! (`Model::PACKED`), cloned into a vector otherwise. `M::PACKED` is a constant, so each model's explorer is
//! compiled with only its own branch.

use super::fingerprint::{hashed_fingerprint, packed_fingerprint};
use super::model::Model;
use super::parts::PartSpans;
use rayon::prelude::*;

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
    /// Where each state's packing ends in `bytes` (it starts where the previous one ends): 64-bit, as a level
    /// can pass 4 GiB.
    ends: Vec<u64>,
    states: Vec<M::State>,
    pub first_id: u32,
    /// The most bytes the level's vectors have held (levels before this one included): the pages that many
    /// bytes touched stay resident, while the capacity past them, never written, does not.
    touched_bytes: usize,
}

impl<M: Model> Default for Level<M> {
    fn default() -> Self {
        Level {
            bytes: Vec::new(),
            ends: Vec::new(),
            states: Vec::new(),
            first_id: 0,
            touched_bytes: 0,
        }
    }
}

impl<M: Model> Level<M> {
    pub fn len(&self) -> usize {
        if M::PACKED {
            self.ends.len()
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
            let start = if index == 0 { 0 } else { self.ends[index - 1] };
            let end = self.ends[index];
            model.unpack_into(&self.bytes[start as usize..end as usize], state);
        } else {
            state.clone_from(&self.states[index]);
        }
    }

    /// `load`, noting where the parts of the state lie (`Model::unpack_parts`); the state's packing (empty
    /// when the model does not pack).
    #[inline]
    pub fn load_parts(
        &self,
        model: &M,
        index: usize,
        state: &mut M::State,
        spans: &mut PartSpans,
    ) -> &[u8] {
        if M::PACKED {
            let start = if index == 0 { 0 } else { self.ends[index - 1] };
            let bytes = &self.bytes[start as usize..self.ends[index] as usize];
            model.unpack_parts(bytes, state, spans);
            bytes
        } else {
            state.clone_from(&self.states[index]);
            &[]
        }
    }

    pub fn clear(&mut self, first_id: u32) {
        self.touched_bytes = self.held_bytes();
        self.bytes.clear();
        self.ends.clear();
        self.states.clear();
        self.first_id = first_id;
    }

    /// Append one state (the initial one).
    pub fn push(&mut self, model: &M, state: &M::State) {
        if M::PACKED {
            model.pack(state, &mut self.bytes);
            self.ends.push(self.bytes.len() as u64);
        } else {
            self.states.push(state.clone());
        }
    }

    /// Append a round's kept successors, unit after unit: packed levels copy each unit's bytes and ends into
    /// its own part of the level in parallel (the copy was the larger part of a round's sequential merge).
    pub fn append_round(&mut self, round: &mut [&mut Successors<M>]) {
        if !M::PACKED {
            for successors in round.iter_mut() {
                self.states.append(&mut successors.states);
            }
            return;
        }
        let (bytes_at, ends_at) = (self.bytes.len(), self.ends.len());
        let byte_lens: Vec<usize> = round.iter().map(|s| s.bytes.len()).collect();
        let counts: Vec<usize> = round.iter().map(|s| s.candidates.len()).collect();
        self.bytes
            .resize(bytes_at + byte_lens.iter().sum::<usize>(), 0);
        self.ends.resize(ends_at + counts.iter().sum::<usize>(), 0);
        let byte_parts = split_into(&mut self.bytes[bytes_at..], &byte_lens);
        let end_parts = split_into(&mut self.ends[ends_at..], &counts);
        let offsets = byte_lens.iter().scan(bytes_at as u64, |offset, len| {
            let start = *offset;
            *offset += *len as u64;
            Some(start)
        });
        let parts: Vec<_> = byte_parts
            .into_iter()
            .zip(end_parts)
            .zip(offsets)
            .zip(round.iter())
            .collect();
        parts
            .into_par_iter()
            .for_each(|(((bytes, ends), offset), successors)| {
                // `retain` left the kept packings back to back, in order: each ends where its span does.
                debug_assert!(successors
                    .candidates
                    .windows(2)
                    .all(|pair| pair[0].span.1 == pair[1].span.0));
                bytes.copy_from_slice(&successors.bytes);
                for (end, candidate) in ends.iter_mut().zip(&successors.candidates) {
                    *end = offset + u64::from(candidate.span.1);
                }
            });
    }

    pub fn held_bytes(&self) -> usize {
        let now = self.bytes.len()
            + self.ends.len() * size_of::<u64>()
            + self.states.len() * size_of::<M::State>();
        now.max(self.touched_bytes)
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

    /// Record a successor; returns its fingerprint. A packed one is written from `from`, its parent's packing
    /// and where the parent's parts lie, around the parts the action `touched` (`Model::pack_successor`).
    #[inline]
    pub fn push(
        &mut self,
        model: &M,
        next: &M::State,
        from: (&[u8], &PartSpans, u32),
        parent: u32,
        action_index: u16,
    ) -> u64 {
        let (fingerprint, span) = if M::PACKED {
            let (parent_bytes, spans, touched) = from;
            let start = self.bytes.len();
            model.pack_successor(next, touched, parent_bytes, spans, &mut self.bytes);
            (
                packed_fingerprint(&self.bytes[start..]),
                (start as u32, self.bytes.len() as u32),
            )
        } else {
            let index = self.states.len() as u32;
            self.states.push(next.clone());
            (hashed_fingerprint(next), (index, index))
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

/// `slice` cut into consecutive parts of the given lengths.
pub(crate) fn split_into<'a, T>(mut slice: &'a mut [T], lens: &[usize]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(lens.len());
    for &len in lens {
        let (part, rest) = slice.split_at_mut(len);
        parts.push(part);
        slice = rest;
    }
    parts
}
