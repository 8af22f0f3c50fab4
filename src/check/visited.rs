//! The visited set, split into shards by fingerprint so that inserting a round's candidates runs in parallel
//! (one task per shard) and stays deterministic: within a shard, candidates are inserted in the search order,
//! so the first candidate in that order wins, exactly as in a sequential search.

use super::fingerprint::FingerprintSet;
use rayon::prelude::*;

/// Shards of the visited set. A power of two, fixed (not the thread count): enough to keep two to eight cores
/// busy, few enough that each shard's table stays large.
pub const SHARDS: usize = 16;

/// The shard of a fingerprint. Bits 52..56: the table inside a shard indexes by the low bits and keeps the
/// top seven as its tag, so the shard choice is independent of both.
#[inline]
pub fn shard_of(fingerprint: u64) -> usize {
    ((fingerprint >> 52) as usize) & (SHARDS - 1)
}

pub struct Visited {
    shards: Vec<FingerprintSet>,
}

impl Visited {
    pub fn new() -> Self {
        Visited {
            shards: (0..SHARDS).map(|_| FingerprintSet::default()).collect(),
        }
    }

    #[inline]
    pub fn contains(&self, fingerprint: u64) -> bool {
        self.shards[shard_of(fingerprint)].contains(&fingerprint)
    }

    /// Sequential insert (the initial state).
    pub fn insert(&mut self, fingerprint: u64) -> bool {
        self.shards[shard_of(fingerprint)].insert(fingerprint)
    }

    /// Run `insert_shard(shard, set)` for every shard in parallel.
    pub fn insert_by_shard(&mut self, insert_shard: impl Fn(usize, &mut FingerprintSet) + Sync) {
        self.shards
            .par_iter_mut()
            .enumerate()
            .for_each(|(shard, set)| insert_shard(shard, set));
    }

    /// Bytes held by the tables: 8 bytes of fingerprint and 1 control byte per slot; a table holds up to 7/8
    /// of its slots.
    pub fn bytes(&self) -> u64 {
        self.shards
            .iter()
            .map(|set| set.capacity() as u64 * 8 / 7 * 9)
            .sum()
    }
}
