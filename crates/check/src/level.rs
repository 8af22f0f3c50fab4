//! Where the explorer keeps states between levels. A model that packs (`Model::PACKED`) keeps a level as
//! pieces: runs of consecutive states, each the kept successors of one unit of work cut where a unit of the next
//! level's work begins (every `UNIT_STATES` states). Once a level passes 16 MiB of packings
//! (`Bounds::compress_levels_from_bytes`), the next level's pieces are compressed with LZ4: neighbouring packings
//! share most of their bytes (the 4 x 3 x 2 lease world's 151-byte packings take 43), and past that size a level
//! is most of what a search holds. Each unit of work decompresses only its own pieces, and a round frees the pieces it has
//! expanded, so the level being read shrinks while the next one grows. A model that does not pack keeps its
//! states cloned in a vector. `M::PACKED` is a constant, so each model's explorer is compiled with only its own
//! branch.

use super::fingerprint::{hashed_fingerprint, packed_fingerprint};
use super::model::Model;
use super::parts::PartSpans;
use super::varint::{push_varint, read_varint, varint_len};

/// Frontier states per unit of parallel work: small enough to balance two to eight cores on a level of a few
/// thousand states, large enough that a unit's bookkeeping is noise. Units start at multiples of it, and no
/// piece of a level crosses one of them.
pub(crate) const UNIT_STATES: usize = 256;

/// A successor waiting for the visited set's verdict: its fingerprint, how it was reached, and where it lies
/// (a byte span of the unit's arena, or `(index, index)` into its states).
#[derive(Clone, Copy)]
pub(crate) struct Candidate {
    pub fingerprint: u64,
    pub parent: u32,
    pub action_index: u16,
    pub span: (u32, u32),
}

/// Consecutive states of a level, each a varint length and its packing, compressed together or stored as they
/// are.
#[derive(Clone, Copy)]
struct Piece {
    /// The level index of its first state.
    first: usize,
    count: u32,
    chunk: u32,
    /// Where its bytes lie in the chunk.
    offset: u32,
    /// Its length in the chunk: compressed, or `raw_len` when the piece is stored as it is.
    stored_len: u32,
    raw_len: u32,
    compressed: bool,
}

/// States in search order, ids consecutive from `first_id`.
pub(crate) struct Level<M: Model> {
    /// The pieces of packed states, in order; each chunk holds the pieces of one unit's successors.
    pieces: Vec<Piece>,
    chunks: Vec<Vec<u8>>,
    /// The level index each chunk's states end at, and the chunks freed so far (the first `freed`).
    chunk_ends: Vec<usize>,
    freed: usize,
    chunk_bytes: usize,
    /// The pieces' bytes before compression.
    raw_bytes: usize,
    /// The states of a model that does not pack.
    states: Vec<M::State>,
    pub first_id: u32,
}

impl<M: Model> Default for Level<M> {
    fn default() -> Self {
        Level {
            pieces: Vec::new(),
            chunks: Vec::new(),
            chunk_ends: Vec::new(),
            freed: 0,
            chunk_bytes: 0,
            raw_bytes: 0,
            states: Vec::new(),
            first_id: 0,
        }
    }
}

/// Where the states of one unit of work lie: in a chunk of the level (pieces stored as they are), or
/// decompressed into the unit's own buffer, reused from unit to unit.
#[derive(Default)]
pub(crate) struct UnitStates {
    raw: Vec<u8>,
    /// Per state: its chunk (`IN_RAW`: the buffer) and its byte span there.
    spans: Vec<(u32, u32, u32)>,
    first: usize,
}

/// The chunk number of a state decompressed into `UnitStates::raw`.
const IN_RAW: u32 = u32::MAX;

impl<M: Model> Level<M> {
    pub fn len(&self) -> usize {
        if M::PACKED {
            self.pieces
                .last()
                .map_or(0, |piece| piece.first + piece.count as usize)
        } else {
            self.states.len()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Decompress the states `range` (one unit: it starts at a multiple of `UNIT_STATES`) into `unit`.
    pub fn read_unit(&self, range: std::ops::Range<usize>, unit: &mut UnitStates) {
        unit.raw.clear();
        unit.spans.clear();
        unit.first = range.start;
        if !M::PACKED {
            return;
        }
        let from = self
            .pieces
            .partition_point(|piece| piece.first < range.start);
        for piece in self.pieces[from..]
            .iter()
            .take_while(|piece| piece.first < range.end)
        {
            let chunk = &self.chunks[piece.chunk as usize];
            let stored = &chunk[piece.offset as usize..][..piece.stored_len as usize];
            let (source, bytes, mut cursor) = if piece.compressed {
                let at = unit.raw.len();
                unit.raw.resize(at + piece.raw_len as usize, 0);
                let written = lz4_flex::block::decompress_into(stored, &mut unit.raw[at..])
                    .expect("a piece this level compressed");
                debug_assert_eq!(written, piece.raw_len as usize);
                (IN_RAW, &unit.raw[..], at)
            } else {
                (piece.chunk, &chunk[..], piece.offset as usize)
            };
            for _ in 0..piece.count {
                let len = read_varint(bytes, &mut cursor) as usize;
                unit.spans
                    .push((source, cursor as u32, (cursor + len) as u32));
                cursor += len;
            }
        }
        debug_assert_eq!(unit.spans.len(), range.len());
    }

    /// The packing of state `index`, of the unit read into `unit`.
    #[inline]
    fn packing<'a>(&'a self, unit: &'a UnitStates, index: usize) -> &'a [u8] {
        let (source, start, end) = unit.spans[index - unit.first];
        let bytes = if source == IN_RAW {
            &unit.raw
        } else {
            &self.chunks[source as usize]
        };
        &bytes[start as usize..end as usize]
    }

    /// Copy state `index` (of the unit read into `unit`) into `state`, reusing its buffers.
    pub fn load(&self, model: &M, unit: &UnitStates, index: usize, state: &mut M::State) {
        if M::PACKED {
            model.unpack_into(self.packing(unit, index), state);
        } else {
            state.clone_from(&self.states[index]);
        }
    }

    /// `load`, noting where the parts of the state lie (`Model::unpack_parts`); the state's packing (empty
    /// when the model does not pack).
    #[inline]
    pub fn load_parts<'a>(
        &'a self,
        model: &M,
        unit: &'a UnitStates,
        index: usize,
        state: &mut M::State,
        spans: &mut PartSpans,
    ) -> &'a [u8] {
        if M::PACKED {
            let bytes = self.packing(unit, index);
            model.unpack_parts(bytes, state, spans);
            bytes
        } else {
            state.clone_from(&self.states[index]);
            &[]
        }
    }

    /// Empty the level for the states numbered from `first_id`, keeping the vectors' capacity.
    pub fn clear(&mut self, first_id: u32) {
        self.pieces.clear();
        self.chunks.clear();
        self.chunk_ends.clear();
        self.freed = 0;
        self.chunk_bytes = 0;
        self.raw_bytes = 0;
        self.states.clear();
        self.first_id = first_id;
    }

    /// Append one state (the initial one).
    pub fn push(&mut self, model: &M, state: &M::State) {
        let mut successors = Successors::<M>::default();
        if M::PACKED {
            model.pack(state, &mut successors.bytes);
        } else {
            successors.states.push(state.clone());
        }
        let span = (0, successors.bytes.len() as u32);
        successors.candidates.push(Candidate {
            fingerprint: 0,
            parent: 0,
            action_index: 0,
            span,
        });
        successors.seal(self.len(), false);
        self.append_round(&mut [&mut successors]);
    }

    /// Append a round's sealed successors (`Successors::seal`), unit after unit: each unit's sealed bytes become
    /// a chunk of the level as they are, without a copy.
    pub fn append_round(&mut self, round: &mut [&mut Successors<M>]) {
        for successors in round.iter_mut() {
            if !M::PACKED {
                self.states.append(&mut successors.states);
                continue;
            }
            let chunk = self.chunks.len() as u32;
            self.pieces.extend(
                successors
                    .pieces
                    .iter()
                    .map(|piece| Piece { chunk, ..*piece }),
            );
            self.raw_bytes += successors
                .pieces
                .iter()
                .map(|piece| piece.raw_len as usize)
                .sum::<usize>();
            let bytes = std::mem::take(&mut successors.chunk);
            self.chunk_bytes += bytes.capacity();
            self.chunks.push(bytes);
            self.chunk_ends.push(self.len());
        }
    }

    /// Free the chunks whose states all lie before `index` (a round has expanded them).
    pub fn free_before(&mut self, index: usize) {
        while self.freed < self.chunks.len() && self.chunk_ends[self.freed] <= index {
            self.chunk_bytes -= self.chunks[self.freed].capacity();
            self.chunks[self.freed] = Vec::new();
            self.freed += 1;
        }
    }

    /// Whether the level after this one is to be compressed: when this one's packings reach `from_bytes`
    /// (`Bounds::compress_levels_from_bytes`). Compressing and decompressing take about a quarter of a small
    /// search's time (0.26 of 1.03 microseconds a state on the 3-client lease world), while a small level is a
    /// small part of what the search holds; past 16 MiB a level is most of it.
    pub fn next_compressed(&self, from_bytes: u64) -> bool {
        self.raw_bytes as u64 >= from_bytes
    }

    pub fn held_bytes(&self) -> usize {
        self.chunk_bytes
            + self.pieces.capacity() * size_of::<Piece>()
            + self.chunks.capacity() * size_of::<Vec<u8>>()
            + self.chunk_ends.capacity() * size_of::<usize>()
            + self.states.capacity() * size_of::<M::State>()
    }
}

impl UnitStates {
    pub fn held_bytes(&self) -> usize {
        self.raw.capacity() + self.spans.capacity() * size_of::<(u32, u32, u32)>()
    }
}

/// A unit's successors, in search order. Kept from round to round so its buffers are reused.
pub(crate) struct Successors<M: Model> {
    bytes: Vec<u8>,
    states: Vec<M::State>,
    pub candidates: Vec<Candidate>,
    /// The kept packings as the level keeps them (`seal`): pieces, and their compressed bytes.
    pieces: Vec<Piece>,
    sealed: Vec<u8>,
    /// A copy of `sealed` in a buffer of its own size, for the level to take.
    chunk: Vec<u8>,
    /// One piece's varint lengths and packings, before compression.
    raw: Vec<u8>,
}

impl<M: Model> Default for Successors<M> {
    fn default() -> Self {
        Successors {
            bytes: Vec::new(),
            states: Vec::new(),
            candidates: Vec::new(),
            pieces: Vec::new(),
            sealed: Vec::new(),
            chunk: Vec::new(),
            raw: Vec::new(),
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

    /// Keep the candidates `keep` says, in order, and their states.
    pub fn retain(&mut self, keep: impl Fn(usize) -> bool) {
        let mut kept = 0;
        for index in 0..self.candidates.len() {
            if !keep(index) {
                continue;
            }
            let candidate = self.candidates[index];
            if !M::PACKED {
                self.states.swap(kept, candidate.span.0 as usize);
            }
            self.candidates[kept] = candidate;
            kept += 1;
        }
        self.candidates.truncate(kept);
        if !M::PACKED {
            self.states.truncate(kept);
        }
    }

    /// Cut the kept packings into pieces, the first of them at level index `first`, compressed if `compress`:
    /// a new piece at every multiple of `UNIT_STATES`, so that each unit of the next level's work reads only its
    /// own.
    pub fn seal(&mut self, first: usize, compress: bool) {
        self.pieces.clear();
        if !M::PACKED {
            return;
        }
        if compress {
            self.sealed.clear();
        } else {
            // Written once, into a buffer of its final size.
            let len: usize = self
                .candidates
                .iter()
                .map(|candidate| {
                    let len = candidate.span.1 - candidate.span.0;
                    varint_len(u64::from(len)) + len as usize
                })
                .sum();
            self.chunk = Vec::with_capacity(len);
        }
        let mut done = 0;
        while done < self.candidates.len() {
            let index = first + done;
            let count = (UNIT_STATES - index % UNIT_STATES).min(self.candidates.len() - done);
            // A compressed piece is written to `raw` first; a stored one straight into the chunk.
            let target = if compress {
                self.raw.clear();
                &mut self.raw
            } else {
                &mut self.chunk
            };
            let start = target.len();
            for candidate in &self.candidates[done..done + count] {
                let (from, to) = candidate.span;
                push_varint(target, u64::from(to - from));
                target.extend_from_slice(&self.bytes[from as usize..to as usize]);
            }
            let raw_len = target.len() - start;
            let (offset, stored_len) = if compress {
                self.compress_raw()
            } else {
                (start, raw_len)
            };
            self.pieces.push(Piece {
                first: index,
                count: count as u32,
                chunk: 0,
                offset: offset as u32,
                stored_len: stored_len as u32,
                raw_len: raw_len as u32,
                compressed: compress,
            });
            done += count;
        }
        if compress {
            self.chunk = self.sealed.clone();
        }
        debug_assert_eq!(self.chunk.len(), self.chunk.capacity());
    }

    /// Compress `raw` onto the end of `sealed`: where it starts there, and its length.
    fn compress_raw(&mut self) -> (usize, usize) {
        let offset = self.sealed.len();
        let room = lz4_flex::block::get_maximum_output_size(self.raw.len());
        self.sealed.resize(offset + room, 0);
        let len = lz4_flex::block::compress_into(&self.raw, &mut self.sealed[offset..])
            .expect("room for the worst case");
        self.sealed.truncate(offset + len);
        (offset, len)
    }

    pub fn held_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.states.capacity() * size_of::<M::State>()
            + self.candidates.capacity() * size_of::<Candidate>()
            + self.pieces.capacity() * size_of::<Piece>()
            + self.sealed.capacity()
            + self.raw.capacity()
    }
}
