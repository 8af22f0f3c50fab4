//! The visited set, split into shards by fingerprint so that inserting a round's candidates runs in parallel
//! (one task per shard) and stays deterministic: within a shard, candidates are inserted in the search order,
//! so the first candidate in that order wins, exactly as in a sequential search.

use super::fingerprint_table::FingerprintTable;
use rayon::prelude::*;

/// Shards of the visited set. A power of two, fixed (not the thread count): enough to keep two to eight cores
/// busy, few enough that each shard's table stays large.
pub const SHARDS: usize = 16;

/// Tables per shard.
const TABLES_PER_SHARD: usize = 16;

/// The table of a fingerprint: bits 48..56 (its shard: bits 52..56). A table places a fingerprint by its low 32
/// bits, so the choice is independent of that.
#[inline]
fn table_of(fingerprint: u64) -> usize {
    ((fingerprint >> 48) as usize) & (SHARDS * TABLES_PER_SHARD - 1)
}

#[inline]
pub fn shard_of(fingerprint: u64) -> usize {
    table_of(fingerprint) / TABLES_PER_SHARD
}

/// The tables of one shard.
pub struct Shard<'a>(&'a mut [FingerprintTable]);

impl Shard<'_> {
    /// Insert; whether it was new.
    #[inline]
    pub fn insert(&mut self, fingerprint: u64) -> bool {
        self.0[table_of(fingerprint) % TABLES_PER_SHARD].insert(fingerprint)
    }

    /// Read the slot an insert of `fingerprint` will probe first, so that its cache miss overlaps with the
    /// inserts before it (`black_box`: the read is the point, not its value).
    #[inline]
    pub fn touch(&self, fingerprint: u64) {
        std::hint::black_box(
            self.0[table_of(fingerprint) % TABLES_PER_SHARD].first_slot(fingerprint),
        );
    }
}

pub struct Visited {
    tables: Vec<FingerprintTable>,
}

impl Visited {
    pub fn new() -> Self {
        Visited {
            tables: (0..SHARDS * TABLES_PER_SHARD)
                .map(|_| FingerprintTable::default())
                .collect(),
        }
    }

    #[inline]
    pub fn contains(&self, fingerprint: u64) -> bool {
        self.tables[table_of(fingerprint)].contains(fingerprint)
    }

    /// Sequential insert (the initial state).
    pub fn insert(&mut self, fingerprint: u64) -> bool {
        self.tables[table_of(fingerprint)].insert(fingerprint)
    }

    /// Run `insert_shard(shard, tables)` for every shard in parallel.
    pub fn insert_by_shard(&mut self, insert_shard: impl Fn(usize, Shard) + Sync) {
        self.tables
            .par_chunks_mut(TABLES_PER_SHARD)
            .enumerate()
            .for_each(|(shard, tables)| insert_shard(shard, Shard(tables)));
    }

    /// Bytes held by the tables: 8 a slot.
    pub fn bytes(&self) -> u64 {
        self.tables
            .iter()
            .map(|table| table.slot_count() as u64 * 8)
            .sum()
    }
}
